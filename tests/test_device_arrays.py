"""Arrays that already live on the GPU are used in place (GPU machine only)."""
import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError

from .support import assert_same
from .test_numpy_extras import cumsum, nonzero
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


def test_new_array_from_device_input_stays_on_the_device(cp):
    """Compute follows data: the result is a CuPy array over device memory."""
    x = cp.arange(5000, dtype=cp.float64)
    out = gpu_fn(scaled_copy)(2.0, x)
    assert isinstance(out, cp.ndarray)
    np.testing.assert_array_equal(out.get(), 2.0 * np.arange(5000))
    # CuPy work queued on the default stream sees the kernel's writes
    np.testing.assert_array_equal((out + 1).get(), 2.0 * np.arange(5000) + 1)


def test_device_results_are_freed(cp):
    fn = gpu_fn(scaled_copy)
    x = cp.ones(1 << 24, dtype=cp.float32)         # 64 MiB per result
    for _ in range(200):                          # 12.8 GiB if none were freed
        out = fn(np.float32(3), x)
        del out
    assert float(fn(np.float32(3), x)[-1]) == 3.0


def test_device_argument_returned_is_the_same_object(cp):
    def passthrough(x):
        for i in prange(x.shape[0]):
            x[i] += 1
        return x
    x = cp.zeros(10, dtype=cp.int64)
    assert gpu_fn(passthrough)(x) is x
    np.testing.assert_array_equal(x.get(), np.ones(10))


def test_device_results_without_cupy_expose_the_interface(cp, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy":
            raise ImportError("hidden for the test")
        return real_import(name, *args, **kwargs)
    x = cp.arange(100, dtype=cp.float32)
    fn = gpu_fn(scaled_copy)
    fn(np.float32(2), x)                            # compiled with CuPy visible
    monkeypatch.setattr(builtins, "__import__", no_cupy)
    out = fn(np.float32(2), x)
    monkeypatch.undo()
    assert not isinstance(out, cp.ndarray)
    np.testing.assert_array_equal(cp.asarray(out).get(), 2 * np.arange(100, dtype=np.float32))


def test_kernels_are_ordered_with_cupy_work_on_the_default_stream(cp):
    """No synchronisation before or after the call: ordering comes from
    sharing CuPy's (legacy default) stream."""
    fn = gpu_fn(saxpy_inplace)
    for _ in range(20):
        x = cp.random.random(1 << 22)
        y = x * 2                        # CuPy kernel, still running maybe
        fn(1.0, x, y)                    # y = x + 2x
        z = y - 3 * x                    # CuPy reads our result
        assert float(cp.abs(z).max()) < 1e-12


@pytest.mark.gpu_exclusive
def test_out_of_gpu_memory_is_a_python_error(cp):
    """Device memory (not managed) from the pool: a failed allocation raises
    MemoryError, later kernels are skipped and the context stays usable."""
    def fill(x, n):                  # the result stays on the GPU: device memory
        a = np.empty(n)
        for i in prange(n):
            a[i] = x[0]
        return a
    fn = gpu_fn(fill)
    x = cp.full(1, 2.5)
    assert float(fn(x, 1000).sum()) == 2500.0
    free, total = cp.cuda.runtime.memGetInfo()
    with pytest.raises(MemoryError, match="out of GPU memory"):
        fn(x, 2 * total // 8)            # twice the device's memory, in float64
    assert float(fn(x, 1000).sum()) == 2500.0
    x = cp.arange(10)
    assert int(x.sum()) == 45


def test_reduction_on_device_array_is_deterministic(cp):
    x = cp.asarray(np.random.default_rng(0).random(1 << 22))
    fn = gpu_fn(sum_reduction)
    first = fn(x)
    assert all(fn(x) == first for _ in range(5))
    np.testing.assert_allclose(first, float((x * x).sum()), rtol=1e-12)   # sum of squares


def _ravel(a):
    return a.ravel()


def _contiguous(a):
    return np.ascontiguousarray(a)


def _itself(a):
    return a


@pytest.mark.parametrize("fn", [_ravel, _contiguous, _itself])
def test_a_device_argument_returned_as_it_is_stays_a_device_array(cp, fn):
    """`a.ravel()` of a contiguous CuPy array is `a` itself: it comes back as a CuPy
    array over the same memory (it was boxed as a NumPy array over device memory,
    which crashed the first host read; found by the GPU sweep)."""
    x = cp.arange(7, dtype=cp.int8)
    got = gpu_fn(fn)(x)
    assert isinstance(got, cp.ndarray)
    assert got.data.ptr == x.data.ptr
    np.testing.assert_array_equal(got.get(), np.arange(7, dtype=np.int8))


def test_host_code_cannot_dereference_device_arrays(cp):
    with pytest.raises(UnsupportedConstructError, match="outside a prange loop"):
        gpu_fn(host_read)(cp.ones(4))


def fused_expression(a, b, c, d):
    return a * b + c * d


def test_array_expression_on_cupy_arrays_returns_a_cupy_array(cp):
    rng = np.random.default_rng(3)
    host = [rng.random(1000, dtype=np.float32) for _ in range(4)]
    got = gpu_fn(fused_expression)(*(cp.asarray(h) for h in host))
    assert isinstance(got, cp.ndarray)
    assert_same(got.get(), numba.njit(fused_expression)(*host))



def test_scans_of_cupy_arrays_run_as_kernels(cp):
    rng = np.random.default_rng(4)
    ints = rng.integers(-1000, 1000, 100_003)
    got = gpu_fn(cumsum)(cp.asarray(ints))
    assert isinstance(got, cp.ndarray)
    np.testing.assert_array_equal(got.get(), np.cumsum(ints))
    mask = rng.random((301, 333)) > 0.5
    rows, cols = gpu_fn(nonzero)(cp.asarray(mask))
    expected = np.nonzero(mask)
    np.testing.assert_array_equal(rows.get(), expected[0])
    np.testing.assert_array_equal(cols.get(), expected[1])


def test_dispatcher_types_cupy_arrays_like_numba_typeof(cp):
    """The dispatcher's fast path for CuPy arguments (runtime/device_arrays.py) gives the type
    `numba.typeof` gives, for each layout, dtype and rank, on first and later calls."""
    f = gpu_fn(lambda x: x.ndim)
    arrays = [cp.ones(8, dtype=cp.float32), cp.ones(8, dtype=cp.int64), cp.ones((4, 6))[:, ::2],
              cp.ones((4, 6)), cp.ones((4, 6), order="F"), cp.ones(3)[::-1]]
    for x in arrays + arrays:
        assert f.typeof_pyval(x) is numba.typeof(x)
        assert f(x) == x.ndim
    assert {str(s[0]) for s in f.signatures} == {str(numba.typeof(x)) for x in arrays}


def test_strided_cupy_view_after_contiguous_call(cp):
    """A strided view of the dtype and rank already compiled contiguously
    is a new signature, not the contiguous code."""
    x = cp.arange(20, dtype=cp.float64)
    f = gpu_fn(scaled_copy)
    np.testing.assert_array_equal(f(2.0, x).get(), 2.0 * np.arange(20))
    np.testing.assert_array_equal(f(2.0, x[::3]).get(), 2.0 * np.arange(20)[::3])
    assert len(f.signatures) == 2


def test_calls_on_cupy_arrays_take_the_direct_path(cp):
    """The shortcut of frontend/dispatch.py runs the same compiled code: values, and
    one signature per type, whichever path a call takes."""
    f = gpu_fn(saxpy_inplace)
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.zeros(1000, dtype=cp.float32)
    for a in (np.float32(2), np.float32(3), 1.5):
        f(a, x, y)
    expected = np.zeros(1000, np.float32)
    for a in (np.float32(2), np.float32(3), np.float32(1.5)):
        expected = a * np.arange(1000, dtype=np.float32) + expected
    np.testing.assert_array_equal(y.get(), expected)
    assert len(f.signatures) == 2                       # float32 and float64 scalars
    f(np.float32(1), x[::2], y[::2])                   # a new layout compiles
    assert len(f.signatures) == 3


def test_view_of_an_aliased_argument_overlapping_in_a_kernel_raises(cp):
    """Two arguments over one device buffer: whether the view must be copied
    is known only at run time, and a kernel cannot copy it (overlap.py)."""
    from .test_views import copy_reversed_rows
    x = cp.arange(20.0).reshape(4, 5)
    with pytest.raises(NotImplementedError, match="partly overlaps"):
        gpu_fn(copy_reversed_rows)(x, x)
    x, y = cp.arange(20.0).reshape(4, 5), cp.zeros((4, 5))    # x was written in place
    gpu_fn(copy_reversed_rows)(x, y)                  # disjoint: read in place
    np.testing.assert_array_equal(y.get(), np.arange(20.0).reshape(4, 5)[:, ::-1])
