"""cuBLAS for matrix products in GPU host code (lowering/blas.py): the
library the CUDA toolkit (or a wheel such as nvidia-cublas) installs, found
by name; no CuPy needed. Each engine that declares the gemm symbols gets
them resolved to the library's functions, and the handle symbol to a
callback returning this thread's handle for the current device (made on
first use, in that device's context), set to the calling thread's stream,
which our kernels use (runtime/streams.py, runtime/devices.py)."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading

from .cuda import current_device, device_count
from .streams import thread_stream

ENV_CUBLAS = "NUMBA_MLIR_GPU_CUBLAS"
_SONAMES = ("libcublas.so.13", "libcublas.so.12", "libcublas.so.11")


@functools.lru_cache(maxsize=None)
def library():
    """The cuBLAS library, or None where none is found."""
    names = [ctypes.util.find_library("cublas")] + list(_SONAMES)
    for name in names:
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def enabled() -> bool:
    """Do GPU matrix products call cuBLAS? Where the library loads, unless
    $NUMBA_MLIR_GPU_CUBLAS=0 (our own kernels then, as without it)."""
    if os.environ.get(ENV_CUBLAS, "").strip() in ("0", "false", "no"):
        return False
    return library() is not None


# (device, thread) -> [handle, the stream last given to cublasSetStream (0: the
# legacy default)]: a handle belongs to the context it was made in, and one per
# thread keeps one thread's cublasSetStream from moving another's gemm
_handles: dict = {}


@ctypes.CFUNCTYPE(ctypes.c_void_p)
def _get_handle():
    device = (current_device() or 0) if device_count() > 1 else 0
    key = (device, threading.get_ident())
    entry = _handles.get(key)
    if entry is None:
        handle = ctypes.c_void_p()
        if library().cublasCreate_v2(ctypes.byref(handle)) != 0:
            return None
        entry = _handles[key] = [handle, 0]
    # called before each gemm: the gemm then runs on this call's stream
    stream = thread_stream()
    if stream != entry[1]:
        library().cublasSetStream_v2(entry[0], ctypes.c_void_p(stream or None))
        entry[1] = stream
    return entry[0].value


def register_cublas(engine, handle_symbol: str, gemm_symbols: list) -> None:
    """Resolve the handle callback and the library's functions `gemm_symbols`."""
    lib = library()
    if lib is None:
        raise RuntimeError("numba-mlir-gpu: this code calls cuBLAS (libcublas.so), which "
                           "was not found; install the CUDA toolkit or nvidia-cublas, or "
                           f"compile with {ENV_CUBLAS}=0")
    engine.raw_register_runtime(handle_symbol, ctypes.cast(_get_handle, ctypes.c_void_p))
    for symbol in gemm_symbols:
        engine.raw_register_runtime(symbol, ctypes.cast(getattr(lib, symbol), ctypes.c_void_p))
