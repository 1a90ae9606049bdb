"""Unsupported constructs raise an error naming the construct and the line."""
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError

from .support import TARGETS, check


def two_index_arrays(a, i):
    return a[i, i]


def lists(x):
    return [x, x]


def dictionaries(x):
    d = {0: x[0]}             # typed dicts in host code
    return d[0] + 1.0


def array_in_kernel(x):
    for i in prange(x.shape[0]):
        t = np.empty(int(x[i]) + 1)       # its size depends on the data
        for j in range(t.shape[0]):
            t[j] = x[i] * j
        x[i] = t.sum()


def calls_python(x):
    return np.histogram(x, 3)[0]      # Numba's implementation iterates with np.nditer


@pytest.mark.parametrize("fn, args, construct", [
    (two_index_arrays, (np.ones((3, 3)), np.array([0, 1])), "several index arrays"),
    (lists, (3,), "build_list"),
    (dictionaries, (np.ones(3),), "build_map"),
    (calls_python, (np.ones(3),), "nditer"),
])
def test_unsupported_construct_names_construct_and_line(fn, args, construct):
    """With the fallback off; with it on, Numba lowers such host code
    (test_host_code_numba_supports_compiles_with_the_fallback)."""
    with pytest.raises(UnsupportedConstructError) as info:
        numba_mlir_gpu.njit(target="cpu", fallback=False)(fn)(*args)
    message = str(info.value)
    assert construct in message
    assert "numba-mlir-gpu does not support" in message
    assert __file__.split("/")[-1] in message       # the user's file ...
    assert f"def {fn.__name__}" in message or fn.__name__ in message  # ... and source


@pytest.mark.parametrize("fn, args", [
    (two_index_arrays, (np.arange(9.0).reshape(3, 3), np.array([0, 2]))),
    (dictionaries, (np.arange(3.0) + 2,)),
    (calls_python, (np.array([3.0, 1.0, 2.0]),)),
])
def test_host_code_numba_supports_compiles_with_the_fallback(fn, args):
    check(fn, *args, fallback=True)
    ours = numba_mlir_gpu.njit(target="cpu")(fn)
    ours(*args)
    assert numba_mlir_gpu.inspect_path(ours).path == "fallback"


def test_allocation_sized_by_the_data_inside_a_gpu_kernel_uses_the_device_heap():
    # tests/test_kernel_allocations.py has the rest
    fn = numba_mlir_gpu.njit(target="compile-only")(array_in_kernel)
    with pytest.raises(RuntimeError, match="compile-only"):
        fn(np.ones(4))
    ptx = "".join(numba_mlir_gpu.inspect_ptx(fn))
    assert "malloc" in ptx and "free" in ptx


def test_forcing_the_gpu_without_a_driver_is_a_clear_error(monkeypatch):
    from numba_mlir_gpu.runtime import cuda
    if cuda.cuda_device_available():
        pytest.skip("a GPU is present")
    with pytest.raises(cuda.CUDAUnavailableError, match="NVIDIA driver|CUDA device"):
        numba_mlir_gpu.njit(target="gpu")(lambda x: x + 1)(1)


def raising(x):
    if x > 0:
        raise ValueError("positive", x)
    return x


def raising_in_prange(a):
    for i in prange(a.shape[0]):
        if a[i] < 0:
            raise ValueError("negative element")
        a[i] = 2 * a[i]


def mismatched_shapes(a, b):
    return a + b


@pytest.mark.parametrize("target", TARGETS)
def test_raise_reaches_python_with_its_message(target):
    fn = numba_mlir_gpu.njit(target=target)(raising)
    assert fn(-2) == -2
    with pytest.raises(ValueError, match="positive"):
        fn(3)


@pytest.mark.parametrize("target", TARGETS)
def test_raise_inside_a_parallel_loop(target):
    fn = numba_mlir_gpu.njit(target=target)(raising_in_prange)
    a = np.arange(5.0)
    fn(a)
    np.testing.assert_array_equal(a, 2 * np.arange(5.0))
    with pytest.raises(ValueError, match="negative element"):
        fn(np.array([1.0, -1.0]))


@pytest.mark.parametrize("target", TARGETS)
def test_shape_mismatch_in_array_expression_raises_like_numba(target):
    fn = numba_mlir_gpu.njit(target=target)(mismatched_shapes)
    np.testing.assert_array_equal(fn(np.ones(3), np.ones(3)), 2 * np.ones(3))
    with pytest.raises(AssertionError, match="Sizes of a, b do not match"):
        fn(np.ones(3), np.ones(4))


def array_functions(a, b):
    return np.min(a), a.max(), np.copy(b), np.sqrt(a * a + b * b) * np.sin(b), (a > 0.5).sum()


@pytest.mark.parametrize("target", TARGETS)
def test_numpy_functions_through_numba_implementations(target):
    """np.min/max go through Numba's own jitted helpers (min_checker, ...)."""
    a = np.linspace(0, 1, 1000)
    check(array_functions, a, a[::-1].copy(), target=target)
    with pytest.raises(ValueError, match="zero-size array"):
        numba_mlir_gpu.njit(target=target)(array_functions)(np.empty(0), np.empty(0))
