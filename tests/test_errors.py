"""Unsupported constructs raise an error naming the construct and the line."""
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError


def slicing(a):
    return a[1:3]


def raising(x):
    if x > 0:
        raise ValueError("positive")
    return x


def complex_math(x):
    return x * 1j


def array_in_kernel(x):
    for i in prange(x.shape[0]):
        t = np.empty(3)
        t[0] = x[i]
        x[i] = t[0]


def calls_python(x):
    return np.sort(x)


@pytest.mark.parametrize("fn, args, construct", [
    (slicing, (np.arange(5.0),), "slice"),
    (raising, (3,), "ValueError"),
    (complex_math, (2.0,), "complex"),
    (calls_python, (np.ones(3),), "sort"),
])
def test_unsupported_construct_names_construct_and_line(fn, args, construct):
    with pytest.raises(UnsupportedConstructError) as info:
        numba_mlir_gpu.njit(target="cpu")(fn)(*args)
    message = str(info.value)
    assert construct in message
    assert "numba-mlir-gpu does not support" in message
    assert __file__.split("/")[-1] in message       # the user's file ...
    assert f"def {fn.__name__}" in message or fn.__name__ in message  # ... and source


def test_allocation_inside_gpu_kernel_is_refused_at_compile_time():
    with pytest.raises(UnsupportedConstructError, match="allocating arrays inside a GPU kernel"):
        numba_mlir_gpu.njit(target="compile-only")(array_in_kernel)(np.ones(4))


def test_forcing_the_gpu_without_a_driver_is_a_clear_error(monkeypatch):
    from numba_mlir_gpu.runtime import cuda
    if cuda.cuda_device_available():
        pytest.skip("a GPU is present")
    with pytest.raises(cuda.CUDAUnavailableError, match="NVIDIA driver|CUDA device"):
        numba_mlir_gpu.njit(target="gpu")(lambda x: x + 1)(1)
