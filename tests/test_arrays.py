"""N-d C-contiguous arrays: shape, indexing, assignment, allocation, returns."""
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu

from .support import TARGETS, check

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float32, np.float64]


def read_write(a):
    n = a.shape[0]
    for i in range(n):
        a[i] = a[i] + a[n - 1 - i]
    a[-1] = a[0]
    return a[1], len(a), a.size, a.ndim


def sum_2d(a):
    acc = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            acc += a[i, j] * (i + 1) - a[i, -1 - j]
    return acc


def fill_3d(a):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                a[i, j, k] = i * 100 + j * 10 + k
    return a.shape


def allocations(n):
    a = np.empty(n)
    b = np.zeros((n, 3), np.int32)
    c = np.ones((2, n), dtype=np.float32)
    for i in range(n):
        a[i] = i * 0.5
        b[i, 1] = i
    d = np.empty_like(a)
    e = np.zeros_like(b)
    f = np.ones_like(c)
    g = np.full((2, 2), 7.5)
    for i in range(n):
        d[i] = a[i] * 2
    return a, b, c, d, e, f, g


def return_argument(a):
    a[0] = 42
    return a


def return_scalar_and_array(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * 2
    return a.shape[0], out, a


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.uint8],
                         ids=lambda d: d.__name__)
def test_read_write_1d(dtype, target):
    check(read_write, np.arange(10).astype(dtype), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_2d_and_3d(target):
    check(sum_2d, np.arange(12.0).reshape(3, 4), target=target)
    check(fill_3d, np.zeros((2, 3, 4), np.int64), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_allocations(target):
    check(allocations, 5, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_returning_an_argument_returns_the_same_array(target):
    from .support import ours
    a = np.arange(4)
    out = ours(return_argument, target)(a)
    assert out is a or (out.ctypes.data == a.ctypes.data)
    assert a[0] == 42


@pytest.mark.parametrize("target", TARGETS)
def test_tuple_of_scalar_and_arrays(target):
    check(return_scalar_and_array, np.arange(6.0), target=target)


def bool_arrays(a, b):
    out = np.empty(a.shape[0], np.bool_)
    for i in range(a.shape[0]):
        out[i] = a[i] and not b[i]
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_bool_arrays(target):
    a = np.array([True, False, True, True])
    b = np.array([False, False, True, False])
    check(bool_arrays, a, b, target=target)


def many_allocs(n):
    acc = 0.0
    for k in range(n):
        t = np.ones(1000)
        acc += t[k % 1000]
    return acc


def test_temporaries_are_freed():
    """Arrays allocated and dropped in a loop must not accumulate."""
    from .support import ours
    fn = ours(many_allocs, "cpu")
    fn(10)
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert fn(200000) == 200000.0      # 1.6 GB if nothing were freed
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert after - before < 200_000    # kilobytes


class HostBackedCudaArray:
    """Exposes `__cuda_array_interface__` (over host memory), to check how
    GPU arrays are typed and compiled without a GPU."""

    def __init__(self, array):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.array.shape, "typestr": self.array.dtype.str, "strides": None,
                "data": (self.array.ctypes.data, False), "version": 3}


def scale_in_place(a, x):
    for i in prange(x.shape[0]):
        x[i] = x[i] * a


def test_cuda_array_interface_objects_are_typed_as_device_arrays():
    import numba
    from numba_mlir_gpu import inspect_mlir
    from numba_mlir_gpu.lowering.errors import UnsupportedConstructError
    from numba_mlir_gpu.runtime.device_arrays import DeviceArrayType
    from .support import ours
    fake = HostBackedCudaArray(np.arange(8, dtype=np.float32))
    assert isinstance(numba.typeof(fake), DeviceArrayType)
    with pytest.raises(UnsupportedConstructError, match="GPU arrays .* on the CPU target"):
        ours(scale_in_place, "cpu")(np.float32(3), fake)
    fn = ours(scale_in_place, "compile-only")
    with pytest.raises(RuntimeError, match="compile-only"):
        fn(np.float32(3), fake)
    text = inspect_mlir(fn)
    assert "memref.copy" not in text and "memref.alloc(" not in text   # used in place
    with pytest.raises(RuntimeError, match="compile-only"):
        fn(np.float32(3), np.arange(8, dtype=np.float32))
    numpy_text = inspect_mlir(fn, fn.signatures[-1])
    assert "memref.copy" in numpy_text                               # a host array is copied


class _Pointer:
    def __init__(self, ptr):
        self.ptr = ptr


def _cupy_like_class():
    """A class that runtime/device_arrays.py takes for CuPy's ndarray (by name and module),
    with the attributes of CuPy's that typing and unboxing read."""
    def __init__(self, array):
        self.array, self.dtype, self.ndim = array, array.dtype, array.ndim
        self._c_contiguous = array.flags.c_contiguous
        self.data, self.shape, self.strides = _Pointer(array.ctypes.data), array.shape, array.strides

    cuda_array_interface = property(lambda self: {
        "shape": self.shape, "typestr": self.dtype.str, "strides": self.strides,
        "data": (self.data.ptr, False), "version": 3})
    return type("ndarray", (), {"__module__": "cupy", "__init__": __init__,
                                "__cuda_array_interface__": cuda_array_interface})


def rows_and_stride(x):
    return x.shape[0] * 1000 + x.strides[0]


def test_dispatcher_types_cupy_like_arrays_as_numba_typeof_does():
    """The dispatcher's fast path for CuPy arguments (runtime/device_arrays.py) answers what
    `numba.typeof` answers, layout included, so a strided view after a
    contiguous array of the same dtype and rank is a new signature."""
    import numba
    from numba_mlir_gpu.runtime.device_arrays import DeviceArrayType
    cupy_like = _cupy_like_class()
    base = np.arange(24, dtype=np.float64)
    arrays = [cupy_like(base), cupy_like(base[::3]), cupy_like(base.astype(np.int32)),
              cupy_like(base.reshape(4, 6)), cupy_like(base.reshape(4, 6)[:, ::2])]
    fn = numba.njit(rows_and_stride)
    for x in arrays + arrays:
        assert isinstance(numba.typeof(x), DeviceArrayType)
        assert fn.typeof_pyval(x) is numba.typeof(x)
        assert fn(x) == x.shape[0] * 1000 + x.strides[0]
    assert len(fn.signatures) == len(arrays)


def scaled_rows(a, x):
    return a * x.shape[0]


def test_njit_calls_compiled_code_on_cupy_like_arrays_directly(monkeypatch):
    """numba_mlir_gpu.njit's dispatcher (frontend/dispatch.py) calls the entry point of
    an exactly matching signature itself; anything else goes to Numba's."""
    from numba.core.registry import CPUDispatcher
    from numba_mlir_gpu.frontend.dispatch import DeviceArrayDispatcher
    from numba_mlir_gpu.frontend.wrapper import CompileOnlyError
    cupy_like = _cupy_like_class()
    x = cupy_like(np.arange(6.0))
    fn = numba_mlir_gpu.njit(target="compile-only")(scaled_rows)
    assert isinstance(fn, DeviceArrayDispatcher)
    for a in (2.0, np.float32(2.0)):
        with pytest.raises(CompileOnlyError):
            fn(a, x)                       # compiles through Numba's dispatcher

    def numbas_dispatcher(self, *args, **kws):
        raise LookupError("Numba's dispatcher")
    monkeypatch.setattr(CPUDispatcher, "__call__", numbas_dispatcher)
    for a in (2.0, np.float32(2.0)):
        with pytest.raises(CompileOnlyError):
            fn(a, x)                       # the compiled entry, directly
    for args, kws in [((2, x), {}), ((2.0, cupy_like(np.arange(6))), {}),
                      ((2.0, cupy_like(np.arange(6.0)[::2])), {}), ((2.0,), {"x": x})]:
        with pytest.raises(LookupError):
            fn(*args, **kws)


def test_njit_decorator_forms_give_the_shortcut_dispatcher():
    from numba_mlir_gpu.frontend.dispatch import DeviceArrayDispatcher
    assert isinstance(numba_mlir_gpu.njit(scaled_rows), DeviceArrayDispatcher)
    assert isinstance(numba_mlir_gpu.njit(cache=False)(scaled_rows), DeviceArrayDispatcher)
    fn = numba_mlir_gpu.njit(target="cpu")(scaled_rows)
    assert fn(2.0, np.ones(3)) == 6.0 and fn(np.float32(2), np.ones(4)) == 8.0


def builders_with_keywords(a, n):
    return (np.full(n, fill_value=2.5), np.full(shape=(2, n), fill_value=7),
            np.full(n, 2.5, dtype=np.int32), np.full_like(a, fill_value=3),
            np.zeros(shape=n), np.clip(a, a_min=1.5, a_max=4.0), np.round(a / 7, decimals=2))


@pytest.mark.parametrize("target", TARGETS)
def test_bug_array_builders_take_keyword_arguments(target):
    """np.full(n, fill_value=x) read a second positional argument that was
    not there (an IndexError inside the lowering): keyword arguments now
    reach the rules in parameter order."""
    check(builders_with_keywords, np.arange(6.0), 4, target=target)


def scaled_unless_too_big(a, limit):
    b = a * 2.0
    if b.size > limit:
        raise ValueError("too big")
    return b, a @ a.T


def test_returned_arrays_are_not_copied():
    """A function that can raise joins its normal and error returns; the
    arrays it returns are handed over, not cloned (one copy of each result
    per call, before deallocation.returned_arrays_selected)."""
    fn = numba_mlir_gpu.njit(target="cpu")(scaled_unless_too_big)
    a = np.arange(12.0).reshape(3, 4)
    b, c = fn(a, 100)
    np.testing.assert_array_equal(b, a * 2.0)
    np.testing.assert_allclose(c, a @ a.T)
    with pytest.raises(ValueError, match="too big"):
        fn(a, 5)
    lowered = numba_mlir_gpu.inspect_mlir(fn, stage="lowered")
    entry = lowered[lowered.index("llvm.func @scaled_unless_too_big"):]
    entry = entry[:entry.index("\n  }\n")]
    assert "memcpy" not in entry
