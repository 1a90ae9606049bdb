"""np.argmin/np.argmax (whole array and axis=) and np.sum(axis=): differential
tests against Numba, on C-ordered, Fortran-ordered and strided inputs."""
import numba
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import inspect_mlir

from .support import TARGETS, check, ours, this_weeks_half
from .test_codegen import compile_only


def argmin(a):
    return np.argmin(a)


def argmax_method(a):
    return a.argmax()


def argmin_axis(a, axis):
    return np.argmin(a, axis=axis)


def argmax_axis_method(a, axis):
    return a.argmax(axis=axis)


def sum_axis(a, axis):
    return np.sum(a, axis=axis)


def sum_axis_method(a):
    return a.sum(axis=1)


def sum_axis_dtype(a):
    return a.sum(axis=0, dtype=np.float32)


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.random((5, 6, 7))
    with_nans = x.copy()
    with_nans[2, 3, 1] = with_nans[4, 0, 0] = np.nan
    ints = rng.integers(-3, 5, (6, 8))
    return {
        "float3d": x, "nans": with_nans, "int2d": ints, "nans1d": with_nans.ravel(),
        "fortran": np.asfortranarray(x), "strided": x[:, ::2, 1:],
        "uint8": (ints + 3).astype(np.uint8), "bool": ints > 2,
        "all_nan": np.full((3, 3), np.nan),
        "float32_ties": np.array([[3, 1, 1], [2, 2, 0]], np.float32),
    }


INPUTS = _inputs()


def _axes(a):
    """First, last (as -1) and, for 3-D, the middle axis (each check compiles anew)."""
    return [0, -1] + ([1] if a.ndim == 3 else [])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_argmin_argmax_whole_array(name, target):
    check(argmin, INPUTS[name], target=target)
    check(argmax_method, INPUTS[name], target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", this_weeks_half(sorted(INPUTS)))
def test_argmin_argmax_along_an_axis(name, target):
    a = INPUTS[name]
    for axis in _axes(a):
        check(argmin_axis, a, axis, target=target)
        check(argmax_axis_method, a, axis, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", this_weeks_half(sorted(INPUTS)))
def test_sum_along_an_axis(name, target):
    a = INPUTS[name]
    for axis in _axes(a):
        check(sum_axis, a, axis, target=target)
    if a.ndim > 1:
        check(sum_axis_method, a, target=target)
        check(sum_axis_dtype, a, target=target)


def max_function(a):
    return np.max(a)


def min_method(a):
    return a.min()


def amax_amin(a):
    return np.amax(a), np.amin(a)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_max_min_whole_array_as_numpy(name, target):
    # A NaN anywhere is the result, as in NumPy and Numba without parallel=True
    # (Numba's parfor drops NaNs that are not first).
    for fn in (max_function, min_method, amax_amin):
        check(fn, INPUTS[name], target=target, ulps=0)


@pytest.mark.parametrize("target", TARGETS)
def test_max_min_of_large_arrays(target):
    big = np.random.default_rng(5).random(1_000_003)
    check(amax_amin, big, target=target, ulps=0)
    big[777_777] = np.nan
    check(amax_amin, big, target=target, ulps=0)
    check(amax_amin, np.array([-0.0, 0.0]), target=target, ulps=0)


def test_argmin_of_a_large_array_is_the_first_of_ties():
    a = np.zeros(1_000_003)
    a[[5000, 700_000, 999_999]] = -1.0
    check(argmin, a)
    check(argmax_method, -a)


@pytest.mark.parametrize("fn, args, error", [
    (argmin, (np.empty(0),), "attempt to get argmin of an empty sequence"),
    (argmax_method, (np.empty((2, 0)),), "attempt to get argmax of an empty sequence"),
    (argmin_axis, (np.ones((3, 2)), 2), "axis is out of bounds"),
    (sum_axis, (np.ones((3, 2)), -3), "out of bounds"),
    (max_function, (np.empty(0),), "zero-size array to reduction operation maximum"),
    (min_method, (np.empty((0, 2)),), "zero-size array to reduction operation minimum"),
])
def test_errors_as_numba(fn, args, error):
    with pytest.raises(ValueError, match=error):
        numba.njit(fn)(*args)
    with pytest.raises(ValueError, match=error):
        ours(fn, "cpu")(*args)


def test_argmin_along_an_empty_axis_raises():
    with pytest.raises(ValueError, match="empty sequence"):
        ours(argmin_axis, "cpu")(np.empty((3, 0)), 1)
    assert ours(argmin_axis, "cpu")(np.empty((0, 3)), 1).shape == (0,)


def test_compile_only():
    compile_only(argmin, np.ones(5))
    compile_only(argmin_axis, np.ones((3, 3)), 1)
    compile_only(sum_axis, np.ones((3, 3)), 0)


def functions_in_a_prange_body(x, v, w, m):
    out = np.empty(x.shape[0])
    for i in numba.prange(x.shape[0]):
        s = np.sum(m, axis=0)            # allocations in the body: CPU only
        out[i] = (np.dot(v, w) * x[i] + np.argmin(v) + np.argmax(w) + np.any(v > 0.5)
                  + np.sum(np.cumsum(v)) + s[1] + np.argmin(m, axis=1)[0])
    return out


def test_functions_in_a_prange_body_run_sequentially_inside_it():
    pytest.importorskip("scipy")      # np.dot
    rng = np.random.default_rng(4)
    check(functions_in_a_prange_body, rng.random(50), rng.random(7), rng.random(7),
          rng.random((3, 4)), rtol=1e-12)


# Constant axes: linalg generics (lowering/structured.py) scheduled per target;
# on the GPU a block per line when lines are contiguous and a warp long, else
# pieces of lines per thread: both shapes below.

def sum_last(a):
    return np.sum(a, axis=-1)


def sum_first(a):
    return np.sum(a, axis=0)


def argmin_last(a):
    return np.argmin(a, axis=-1)


def argmax_first(a):
    return np.argmax(a, axis=0)


def _constant_axis_inputs():
    rng = np.random.default_rng(7)
    long_rows = rng.random((9, 1000))
    long_rows[2, 17] = long_rows[5, 999] = long_rows[5, 3] = np.nan
    ties = rng.integers(0, 3, (33, 257))
    return {**INPUTS, "long_rows": long_rows, "long_f32": long_rows.astype(np.float32),
            "ties": ties, "ties_u16": ties.astype(np.uint16), "tall": rng.random((3000, 3)),
            "wide_bool": ties.T > 1}


CONSTANT_AXIS_INPUTS = _constant_axis_inputs()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(CONSTANT_AXIS_INPUTS))
def test_reductions_along_a_constant_axis(name, target):
    a = CONSTANT_AXIS_INPUTS[name]
    check(sum_last, a, target=target, rtol=1e-12 if a.dtype == np.float64 else 1e-5)
    check(sum_first, a, target=target, rtol=1e-12 if a.dtype == np.float64 else 1e-5)
    if a.size and not np.all(np.isnan(a)):
        check(argmin_last, a, target=target)
        check(argmax_first, a, target=target)


def test_constant_axes_are_linalg_generics():
    a = CONSTANT_AXIS_INPUTS["long_rows"]
    for fn in (sum_last, argmax_first):
        f = ours(fn, "cpu")
        f(a)
        assert "linalg.generic" in inspect_mlir(f, f.signatures[0])


def sum_axes_02(a):
    return np.sum(a, axis=(0, 2))


def sum_axes_neg(a):
    return a.sum(axis=(-1, 0))


def sum_all_axes(a):
    return np.sum(a, axis=(1, 0))


def sum_axes_in_prange(a):
    out = np.empty((a.shape[0], a.shape[2]))
    for i in prange(a.shape[0]):
        out[i] = np.sum(a[i], axis=(0,))
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_sum_over_a_tuple_of_axes(target):
    a = np.random.default_rng(5).random((5, 33, 7))
    for x in (a, a[:, ::-2, 1:], np.asfortranarray(a)):
        check(sum_axes_02, x, target=target, rtol=1e-12)
        check(sum_axes_neg, x, target=target, rtol=1e-12)
        check(sum_axes_in_prange, x, target=target, rtol=1e-12)
    ints = np.arange(5 * 6 * 7, dtype=np.int32).reshape(5, 6, 7)
    check(sum_axes_02, ints, target=target)
    check(sum_all_axes, ints[0], target=target)
    check(sum_all_axes, a[1], target=target, rtol=1e-12)


def test_sum_over_axes_given_at_run_time_is_refused():
    from numba_mlir_gpu import UnsupportedConstructError

    def f(a, t):
        return np.sum(a, axis=t)
    import numba_mlir_gpu
    with pytest.raises(UnsupportedConstructError, match="tuple of axes computed at run time"):
        numba_mlir_gpu.njit(target="cpu", fallback=False)(f)(np.ones((2, 3, 4)), (0, 1))
