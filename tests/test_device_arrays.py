"""Arrays that already live on the GPU are used in place (GPU machine only)."""
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError

from .test_prange import sum_reduction

pytestmark = pytest.mark.gpu


def saxpy_inplace(a, x, y):
    for i in prange(x.shape[0]):
        y[i] = a * x[i] + y[i]


def scaled_copy(a, x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = a * x[i]
    return out


def host_read(x):
    return x[0]


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def gpu_fn(fn):
    return numba_mlir_gpu.njit(target="gpu")(fn)


def test_cupy_arrays_are_used_in_place(cp):
    x = cp.arange(1 << 20, dtype=cp.float32)
    y = cp.ones(1 << 20, dtype=cp.float32)
    pointer = y.data.ptr
    gpu_fn(saxpy_inplace)(np.float32(2), x, y)
    assert y.data.ptr == pointer
    np.testing.assert_array_equal(y.get(), 2 * np.arange(1 << 20, dtype=np.float32) + 1)


def test_numba_cuda_device_arrays(cp):
    from numba import cuda
    x = cuda.to_device(np.arange(1000, dtype=np.float64))
    y = cuda.to_device(np.zeros(1000))
    gpu_fn(saxpy_inplace)(3.0, x, y)
    np.testing.assert_array_equal(y.copy_to_host(), 3.0 * np.arange(1000))


def test_torch_cuda_tensors():
    torch = pytest.importorskip("torch")
    x = torch.arange(4096, dtype=torch.float32, device="cuda")
    y = torch.zeros(4096, dtype=torch.float32, device="cuda")
    gpu_fn(saxpy_inplace)(np.float32(0.5), x, y)
    np.testing.assert_array_equal(y.cpu().numpy(), 0.5 * np.arange(4096, dtype=np.float32))


def test_new_array_from_device_input(cp):
    x = cp.arange(5000, dtype=cp.float64)
    out = gpu_fn(scaled_copy)(2.0, x)
    np.testing.assert_array_equal(np.asarray(out), 2.0 * np.arange(5000))


def test_reduction_on_device_array_is_deterministic(cp):
    x = cp.asarray(np.random.default_rng(0).random(1 << 22))
    fn = gpu_fn(sum_reduction)
    first = fn(x)
    assert all(fn(x) == first for _ in range(5))
    np.testing.assert_allclose(first, float((x * x).sum()), rtol=1e-12)   # sum of squares


def test_host_code_cannot_dereference_device_arrays(cp):
    with pytest.raises(UnsupportedConstructError, match="outside a prange loop"):
        gpu_fn(host_read)(cp.ones(4))
