"""The CUDA stream GPU code runs on, per thread.

Compiled host code never names a stream: the runtime (runtime/device.py)
asks `nmg_stream()` for it before each launch, allocation, copy, free and
wait, and that reads a pthread thread-specific value. The dispatcher sets
the value around each call (frontend/dispatch.py), so two threads calling
with different streams (Dask's threaded scheduler, one CuPy stream per
thread) do not see each other's. The value is the driver's stream handle:
0 is the legacy default stream (what runs when nothing is set), 2 the
per-thread default stream (CUDA accepts both as handles).

A pthread key rather than a thread-local LLVM global: the key is made here
with ctypes, its number is put into the runtime's text when that is JIT-ed,
and ORC needs no TLS support for it.
"""
from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any, Optional

# njit(stream=...): where calls run when the call names no stream.
CURRENT, DEFAULT = "current", "default"
STREAM_OPTIONS = (CURRENT, DEFAULT)
LEGACY = 0

_libc = ctypes.CDLL(None)
_libc.pthread_setspecific.argtypes = [ctypes.c_uint, ctypes.c_void_p]
_libc.pthread_setspecific.restype = ctypes.c_int
_libc.pthread_getspecific.argtypes = [ctypes.c_uint]
_libc.pthread_getspecific.restype = ctypes.c_void_p


def make_key() -> int:
    """A new pthread key, for a per-thread value of the JIT-ed runtime."""
    key = ctypes.c_uint()
    if _libc.pthread_key_create(ctypes.byref(key), None) != 0:
        raise RuntimeError("numba-mlir-gpu: pthread_key_create failed")
    return key.value


STREAM_KEY = make_key()          # pthread_key_t is an unsigned int on Linux (glibc, musl)

# What this thread's key holds, mirrored here: a call on the stream already
# set costs an attribute read instead of a ctypes call.
_mirror = threading.local()


def thread_stream() -> int:
    """The stream handle this thread's GPU calls use now."""
    return getattr(_mirror, "stream", LEGACY)


def set_thread_stream(handle: int) -> int:
    """Make `handle` this thread's stream; returns the previous one."""
    previous = getattr(_mirror, "stream", LEGACY)
    if handle != previous:
        _libc.pthread_setspecific(STREAM_KEY, handle or None)
        _mirror.stream = handle
    return previous


def library_stream(device: Optional[int] = None) -> int:
    """The caller's current stream on `device` (None: the current device):
    CuPy's when it is not the legacy default stream, else PyTorch's, else the
    legacy default. Only libraries already imported are asked (an import here
    would cost seconds, and a library not imported has no current stream)."""
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        if device is None:
            handle = cupy.cuda.get_current_stream().ptr
        else:
            try:            # CuPy's current stream is per device
                handle = cupy.cuda.get_current_stream(device).ptr
            except TypeError:       # a CuPy without the argument
                handle = cupy.cuda.get_current_stream().ptr
        if handle:
            return handle
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_stream(device).cuda_stream
    return LEGACY


def given_stream(stream: Any) -> Any:
    """Make `stream` the stream object this thread's call was given
    (`f(x, stream=s)`; None: none); returns the previous one."""
    previous = getattr(_mirror, "given", None)
    _mirror.given = stream
    return previous


def stream_object(handle: int) -> Any:
    """The stream object whose handle is `handle`: the one the running call
    was given, else the current CuPy or PyTorch stream; None for the legacy
    default stream and for a handle the caller passed as a number."""
    if handle == LEGACY:
        return None
    given = getattr(_mirror, "given", None)
    if given is not None and stream_handle(given) == handle:
        return given
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        stream = cupy.cuda.get_current_stream()
        if stream.ptr == handle:
            return stream
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        stream = torch.cuda.current_stream()
        if stream.cuda_stream == handle:
            return stream
    return None


def stream_handle(stream: Any, device: Optional[int] = None) -> int:
    """The driver handle of `stream`: "current" (library_stream), "default"
    (the legacy default stream), a CuPy stream (`.ptr`), a PyTorch stream
    (`.cuda_stream`), a numba.cuda stream or an int handle (`int()`).
    `device`: the call's device, whose current stream "current" means."""
    if stream is None or stream == CURRENT:
        return library_stream(device)
    if stream == DEFAULT:
        return LEGACY
    for attribute in ("ptr", "cuda_stream"):
        handle = getattr(stream, attribute, None)
        if handle is not None:
            return int(handle)
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise TypeError(f"stream must be 'current', 'default', a CuPy, PyTorch or numba.cuda "
                        f"stream, or a CUstream handle (int), not {stream!r}") from None


def check_option(stream: Optional[str]) -> Optional[str]:
    """njit's `stream=`: None (the caller's current stream), or one of STREAM_OPTIONS."""
    if stream not in (None,) + STREAM_OPTIONS:
        raise ValueError(f"stream must be one of {', '.join(STREAM_OPTIONS)}, not {stream!r} "
                         "(a stream object is passed at call time: f(x, stream=s))")
    return stream
