"""np.square, np.sign, np.var/np.std, .astype(), np.clip, np.any/np.all,
np.ascontiguousarray: differential tests against Numba, with strided inputs."""
import numpy as np
import pytest

import numba
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu import inspect_mlir
from numba_mlir_gpu.parallel.scan import SCAN_CHUNKS
from numba_mlir_gpu.runtime.device_arrays import DeviceArrayType

from .support import TARGETS, check, ours
from .test_codegen import compile_only


def square(a):
    return np.square(a)


def sign(a):
    return np.sign(a)


def variance(a):
    return np.var(a)


def std_method(a):
    return a.std()


def astype_int32(a):
    return a.astype(np.int32)


def astype_float32(a):
    return a.astype(np.float32)


def clip_scalars(a):
    return np.clip(a, 0.2, 0.7)


def clip_low_only(a):
    return np.clip(a, 0.5, None)


def clip_array_bound(a, b):
    return np.clip(a, b, 0.8)


def any_function(a):
    return np.any(a)


def all_method(a):
    return a.all()


def contiguous(a):
    return np.ascontiguousarray(a)


RNG = np.random.default_rng(0)
A = RNG.normal(size=(5, 6))
WITH_NAN = A.copy()
WITH_NAN[1, 2] = np.nan
SPECIALS = np.array([-0.0, 0.0, np.nan, -2, 3, np.inf])


@pytest.mark.parametrize("target", TARGETS)
def test_square_and_sign(target):
    for a in (A, SPECIALS, np.arange(-3, 4), np.arange(5, dtype=np.uint8), A[:, ::2],
              A.astype(np.float32)):
        check(square, a, target=target)
        check(sign, a, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_var_and_std(target):
    for a in (A, A[::2, 1:], np.arange(10), A.astype(np.float32)):
        check(variance, a, target=target, rtol=1e-6)
        check(std_method, a, target=target, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_astype(target):
    for a in (A * 10, A[:, ::2] * 10):
        check(astype_int32, a, target=target)
    check(astype_float32, np.arange(6), target=target)
    check(astype_float32, A > 0, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_clip(target):
    for a in (A, WITH_NAN, A[::2], np.arange(10)):
        check(clip_scalars, a, target=target)
        check(clip_low_only, a, target=target)
    check(clip_array_bound, A, A[0], target=target)
    check(clip_array_bound, WITH_NAN, np.full(6, np.nan), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_any_all(target):
    for a in (A > 2, A > -3, np.zeros(0), np.arange(3), A[:, ::2] > 0.5, WITH_NAN,
              np.asfortranarray(A) > 0):
        check(any_function, a, target=target)
        check(all_method, a, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_ascontiguousarray(target):
    check(contiguous, np.asfortranarray(A), target=target)
    check(contiguous, A[:, ::2], target=target)


def test_compile_only():
    compile_only(clip_scalars, A)
    compile_only(any_function, A > 0)
    compile_only(astype_int32, A)
    compile_only(sign, A)


def whole_array_reductions(a):
    return np.sum(a), a.prod(), np.mean(a), np.min(a), a.max()


def count_nonzero(a):
    return np.count_nonzero(a)


def ranges(n):
    return np.arange(n) * 2.0, np.linspace(0.0, 1.0, n)


def fill(a):
    a.fill(3.0)
    return a


@pytest.mark.parametrize("target", TARGETS)
def test_whole_array_functions_through_numba_parfors(target):
    small = RNG.random((3, 4)) + 0.5
    for a in (small, np.asfortranarray(small), small[:, ::2], np.arange(1, 9)):
        check(whole_array_reductions, a, target=target, rtol=1e-12)
    check(count_nonzero, np.array([0, 1, 2, 0, 3]), target=target)
    check(count_nonzero, np.arange(12).reshape(3, 4) % 3, target=target)   # N-d: through ravel
    check(ranges, 7, target=target)
    check(fill, A.copy(), target=target)
    check(fill, A[:, ::2], target=target)


def nonzero(a):
    return np.nonzero(a)


def where_one_argument(a):
    return np.where(a)


def nonzero_method(a):
    return a.nonzero()


@pytest.mark.parametrize("target", TARGETS)
def test_nonzero_and_one_argument_where(target):
    mask = A > 0.5
    for a in (mask, A, np.zeros(3), mask[:, ::2], np.asfortranarray(A > 0.3),
              np.arange(-2, 5), RNG.random((2, 3, 4)) > 0.5, SPECIALS):
        check(nonzero, a, target=target)
        check(where_one_argument, a, target=target)
    check(nonzero_method, mask, target=target)


def test_compile_only_nonzero():
    compile_only(nonzero, A > 0)


def cumsum(a):
    return np.cumsum(a)


def cumprod_method(a):
    return a.cumprod()


def cumsum_axis(a, axis):
    return np.cumsum(a, axis=axis)


@pytest.mark.parametrize("target", TARGETS)
def test_cumsum_cumprod(target):
    cube = RNG.random((3, 4, 5))
    for a in (cube, cube[:, ::2], np.asfortranarray(cube), np.arange(1, 8),
              np.arange(6, dtype=np.int32), cube > 0.5, np.zeros(0)):
        check(cumsum, a, target=target)
        check(cumprod_method, a, target=target)
    for a in (cube, cube[:, ::2], np.asfortranarray(cube[0]), np.arange(7), cube > 0.5):
        for axis in (0, -1):
            check(cumsum_axis, a, axis, target=target)


def test_cumsum_axis_out_of_bounds():
    with pytest.raises(ValueError, match="out of bounds"):
        ours(cumsum_axis, "cpu")(np.ones((2, 2)), 2)


def test_compile_only_cumsum():
    compile_only(cumsum, A)
    compile_only(cumsum_axis, A, 1)


MANY_CHUNKS = 3 * SCAN_CHUNKS + 17      # full chunks and a short last one


@pytest.mark.parametrize("target", TARGETS)
def test_scans_over_many_chunks(target):
    check(cumsum, RNG.integers(-1000, 1000, MANY_CHUNKS), target=target)     # exact
    check(cumsum, RNG.integers(0, 3, (MANY_CHUNKS // 5, 5)).astype(np.int8), target=target)
    check(cumsum, RNG.random(MANY_CHUNKS), target=target, rtol=1e-12)
    check(cumprod_method, 1 + RNG.random(MANY_CHUNKS) * 1e-4, target=target, rtol=1e-12)
    check(nonzero, RNG.random((MANY_CHUNKS // 7, 7)) > 0.3, target=target)
    check(nonzero, np.zeros(MANY_CHUNKS), target=target)


def cumsum_in_prange(a):
    out = np.empty(a.shape[0])
    for i in prange(a.shape[0]):
        out[i] = np.cumsum(a[i])[-1]       # inside a parallel body: one scan in order
    return out


def test_scans_inside_a_parallel_body_run_in_order():
    check(cumsum_in_prange, RNG.random((50, 40)), rtol=1e-12)


def test_scans_on_the_gpu_are_kernels():
    """The passes of a scan are parallel loops (kernels), and nothing of the
    array is read by host code: a device array is accepted."""
    lowered = inspect_mlir(compile_only(cumsum, A), stage="lowered")
    assert lowered.count("gpu.launch_func") == 2
    assert inspect_mlir(compile_only(nonzero, A > 0), stage="lowered").count("gpu.launch_func") == 2
    device = DeviceArrayType(numba.float64, 1, "C")
    for fn in (cumsum, nonzero):
        numba_mlir_gpu.njit(target="compile-only")(fn).compile((device,))


def averages(a, w):
    return (np.average(a), np.average(a, weights=w), np.average(a, None, w),
            np.interp(2.5, xp=a, fp=w), np.searchsorted(a, 2.0, side="right"))


@pytest.mark.parametrize("target", TARGETS)
def test_bug_overloads_are_chosen_as_numba_typed_the_call(target):
    """Numba's @overloads are typed with the arguments the call gives (keywords
    as keywords); given the omitted ones as Omitted types, np.average took
    `axis` for given and lowered its "axis is not supported" implementation."""
    a = np.array([0.5, 1.0, 2.0, 3.5, 4.0])
    check(averages, a, a[::-1] + 1.0, target=target)
