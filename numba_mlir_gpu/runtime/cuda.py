"""The CUDA driver, found without importing any GPU library (the toolkit: compiler/toolkit.py)."""
from __future__ import annotations

import ctypes
import functools
from typing import Optional


class CUDAUnavailableError(RuntimeError):
    """The GPU target was requested but no usable CUDA driver or device exists."""


@functools.lru_cache(maxsize=None)
def _driver() -> Optional[ctypes.CDLL]:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    if lib.cuInit(0) != 0:
        return None
    return lib


def cuda_device_available() -> bool:
    lib = _driver()
    if lib is None:
        return False
    count = ctypes.c_int(0)
    return lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


def require_device() -> ctypes.CDLL:
    lib = _driver()
    if lib is None:
        raise CUDAUnavailableError(
            "numba-mlir-gpu: the GPU target needs the NVIDIA driver (libcuda.so.1), "
            "which could not be loaded or initialised; use NUMBA_MLIR_GPU_TARGET=cpu")
    if not cuda_device_available():
        raise CUDAUnavailableError("numba-mlir-gpu: no CUDA device is visible")
    return lib


@functools.lru_cache(maxsize=None)
def fp64_rate_ratio(device: int = 0) -> int:
    """How many times the float32 rate float64 runs at (2 on an H100, 64 on
    most consumer GPUs)."""
    lib = require_device()
    ratio = ctypes.c_int()
    lib.cuDeviceGetAttribute(ctypes.byref(ratio), 87, device)   # ..._SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO
    return ratio.value


@functools.lru_cache(maxsize=None)
def compute_capability(device: int = 0) -> tuple[int, int]:
    lib = require_device()
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device)   # ..._COMPUTE_CAPABILITY_MAJOR
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)   # ..._COMPUTE_CAPABILITY_MINOR
    return major.value, minor.value


@functools.lru_cache(maxsize=None)
def device_count() -> int:
    """Visible CUDA devices (0 without a driver)."""
    lib = _driver()
    if lib is None:
        return 0
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def current_device() -> Optional[int]:
    """The device of this thread's current context (CuPy's and the CUDA
    runtime's current device), or None where no context is current."""
    lib = require_device()
    context = ctypes.c_void_p()
    if lib.cuCtxGetCurrent(ctypes.byref(context)) != 0 or not context.value:
        return None
    device = ctypes.c_int(-1)
    if lib.cuCtxGetDevice(ctypes.byref(device)) != 0:
        return None
    return device.value


_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


def pointer_device(pointer: int) -> Optional[int]:
    """The device a device (or managed) pointer belongs to; None for memory
    CUDA does not know (host memory)."""
    lib = require_device()
    device = ctypes.c_int(-1)
    status = lib.cuPointerGetAttribute(ctypes.byref(device), _POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                       ctypes.c_uint64(pointer))
    return device.value if status == 0 and device.value >= 0 else None


@functools.lru_cache(maxsize=None)
def primary_context(device: int) -> int:
    """The primary context of `device`, retained once for the process (the
    one CuPy, PyTorch and numba.cuda use there)."""
    lib = require_device()
    context = ctypes.c_void_p()
    status = lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
    if status != 0:
        raise CUDAUnavailableError(f"numba-mlir-gpu: device {device}'s primary context could "
                                   f"not be retained (CUDA error {status})")
    return context.value


def swap_context(context: Optional[int]) -> Optional[int]:
    """Make `context` current on this thread; returns the one it replaces."""
    lib = require_device()
    previous = ctypes.c_void_p()
    lib.cuCtxGetCurrent(ctypes.byref(previous))
    lib.cuCtxSetCurrent(ctypes.c_void_p(context))
    return previous.value


_LIMIT_MALLOC_HEAP_SIZE = 0x02
_HEAP_CONTEXTS: set = set()


def reserve_device_heap(nbytes: int, exact: bool = False) -> None:
    """At least `nbytes` of device heap (`malloc` in kernels), exactly
    `nbytes` with `exact`, in the current context (device 0's primary
    context when none is current), before the first launch of a kernel that
    allocates there: CUDA refuses to change the limit afterwards (then it
    stays as it was). Once per context."""
    lib = require_device()
    context = ctypes.c_void_p()
    lib.cuCtxGetCurrent(ctypes.byref(context))
    swapped, previous = not context.value, None
    if swapped:
        context = ctypes.c_void_p(primary_context(0))
        previous = swap_context(context.value)
    try:
        if context.value in _HEAP_CONTEXTS:
            return
        _HEAP_CONTEXTS.add(context.value)
        size = ctypes.c_size_t(0)
        if lib.cuCtxGetLimit(ctypes.byref(size), _LIMIT_MALLOC_HEAP_SIZE) == 0 \
                and (size.value == nbytes or (size.value > nbytes and not exact)):
            return
        lib.cuCtxSetLimit(_LIMIT_MALLOC_HEAP_SIZE, ctypes.c_size_t(nbytes))
    finally:
        if swapped:
            swap_context(previous)
