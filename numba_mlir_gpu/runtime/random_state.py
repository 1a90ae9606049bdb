"""The process-wide state of `np.random` in compiled code.

Two 64-bit words in host memory, allocated here once per process: the
Philox key (from `np.random.seed`, or from the OS's entropy at start-up) and
the stream counter, which every draw site advances (lowering/random_streams.py).
Compiled modules declare the external global `nmg_random_state` and each
engine resolves it to this buffer, so every function of every engine, on
either target, shares one generator (`np.random.seed` in any of them
re-keys them all). Resolved by name, never baked in as an address, so code
loaded from Numba's on-disk cache finds the buffer of the process it runs in.
"""
from __future__ import annotations

import ctypes
import os

STATE_SYMBOL = "nmg_random_state"
KEY, COUNTER = 0, 1

_STATE = (ctypes.c_uint64 * 2)(int.from_bytes(os.urandom(8), "little"), 0)


def register_state(engine) -> None:
    """Resolve the module's `nmg_random_state` to this process's buffer."""
    engine.raw_register_runtime(STATE_SYMBOL, ctypes.cast(_STATE, ctypes.c_void_p))


def state() -> tuple[int, int]:
    """(key, counter) now: for tests and debugging."""
    return _STATE[KEY], _STATE[COUNTER]
