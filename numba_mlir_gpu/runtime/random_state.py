"""The process-wide state of `np.random` in compiled code.

Two 64-bit words in host memory, allocated here once per process: the
Philox key (from `np.random.seed`, or from the OS's entropy at start-up) and
the stream counter, which every draw site advances (lowering/random_streams.py).
Compiled modules declare an external global (lowering/random_streams.py's
`STATE_SYMBOL`) and each engine resolves it to this buffer, so every
function of every engine, on either target, shares one generator
(`np.random.seed` in any of them re-keys them all). Resolved by name, never
baked in as an address, so code loaded from Numba's on-disk cache finds the
buffer of the process it runs in.
"""
from __future__ import annotations

import ctypes
import os

# [key, counter], as lowering/random_streams.py reads them
_STATE = (ctypes.c_uint64 * 2)(int.from_bytes(os.urandom(8), "little"), 0)


def register_state(engine, symbol: str) -> None:
    """Resolve the module's state global (`symbol`) to this process's buffer."""
    engine.raw_register_runtime(symbol, ctypes.cast(_STATE, ctypes.c_void_p))


def state() -> tuple[int, int]:
    """(key, counter) now: for tests and debugging."""
    return _STATE[0], _STATE[1]
