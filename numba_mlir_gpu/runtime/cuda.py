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
