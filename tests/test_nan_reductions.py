"""np.nansum, nanprod, nanmin, nanmax, nanmean, nanvar and nanstd of whole
arrays (rules/nanfunctions.py): differential tests against numba.njit, with
NaNs anywhere, arrays of NaNs only, signed zeros that tie, integers and
booleans, strided views, sizes past a GPU block, and inside prange bodies."""
import numba
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu.frontend.wrapper import CompileOnlyError
import numba_mlir_gpu

from .support import TARGETS, check


def nansum(a):
    return np.nansum(a)


def nanprod(a):
    return np.nanprod(a)


def nanmin(a):
    return np.nanmin(a)


def nanmax(a):
    return np.nanmax(a)


def nanmean(a):
    return np.nanmean(a)


def nanvar(a):
    return np.nanvar(a)


def nanvar_ddof(a, d):
    return np.nanvar(a, ddof=d)


def nanstd(a):
    return np.nanstd(a)


ALL = [nansum, nanprod, nanmin, nanmax, nanmean, nanvar, nanstd]
RNG = np.random.default_rng(41)


def _with_nans(n, dtype=np.float64, every=7):
    a = RNG.standard_normal(n).astype(dtype)
    a[::every] = np.nan
    return a


FLOATS = {
    "nans": _with_nans(1001),
    "nans_f32": _with_nans(3000, np.float32, 5),
    "first_nan": np.array([np.nan, 2.0, -1.0, 4.0]),
    "all_nan": np.full(9, np.nan),
    "one": np.array([3.5]),
    "view_2d": _with_nans(600).reshape(20, 30)[::3, ::-2],
    "fortran": np.asfortranarray(_with_nans(90).reshape(9, 10)),
    "infs": np.array([np.inf, np.nan, -np.inf, 1.0]),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(FLOATS))
@pytest.mark.parametrize("fn", ALL, ids=lambda f: f.__name__)
def test_floats_as_numba(fn, case, target):
    a = FLOATS[case]
    if fn is nanprod:       # keep products finite
        a = np.where(np.isnan(a), a, np.clip(a, -1.5, 1.5))
    check(fn, a, target=target, rtol=1e-6 if a.dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [nanmin, nanmax], ids=lambda f: f.__name__)
def test_tied_zeros_give_the_last_ones_sign(fn, target):
    """Numba keeps the last of equal elements (`if not best < v`): seen only
    in the sign of a zero."""
    for a in ([0.0, -0.0, 1.0], [-0.0, 0.0, 2.0], [np.nan, -0.0, 0.0, -0.0],
              [-0.0] * 5 + [0.0] + [3.0] * 600):
        got = numba_mlir_gpu.njit(target=target)(fn)(np.array(a))
        expected = numba.njit(fn)(np.array(a))
        assert got == expected and np.signbit(got) == np.signbit(expected), (a, got, expected)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("fn", ALL, ids=lambda f: f.__name__)
def test_integers_and_booleans(fn, dtype, target):
    if dtype is np.bool_:
        a = RNG.random(77) < 0.4
    else:
        a = RNG.integers(0, 4 if fn is nanprod else 100, 77).astype(dtype)
    check(fn, a, target=target, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_ddof(target):
    a = _with_nans(50)
    for d in (0, 1, 5, 43, 44):         # 43 values are not NaN: from there on NaN
        check(nanvar_ddof, a, d, target=target, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [nanmin, nanmax], ids=lambda f: f.__name__)
def test_empty_array_raises_value_error(fn, target):
    with pytest.raises(ValueError, match="zero-size array"):
        numba_mlir_gpu.njit(target=target)(fn)(np.zeros(0))


def nan_rows(m):
    out = np.empty((m.shape[0], 4))
    for i in prange(m.shape[0]):
        out[i, 0] = np.nansum(m[i])
        out[i, 1] = np.nanmax(m[i])
        out[i, 2] = np.nanmean(m[i])
        out[i, 3] = np.nanstd(m[i])
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_inside_a_prange_body(target):
    m = _with_nans(37 * 130).reshape(37, 130)
    m[5] = np.nan
    check(nan_rows, m, target=target, rtol=1e-12)


def test_gpu_code():
    """Compile-only (CI): each reduction, and a prange body using them, builds
    GPU kernels."""
    for fn, args in [(f, (FLOATS["nans"],)) for f in ALL] + [(nan_rows, (np.ones((3, 4)),))]:
        with pytest.raises(CompileOnlyError):
            numba_mlir_gpu.njit(target="compile-only", fallback=False)(fn)(*args)
