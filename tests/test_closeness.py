"""np.isclose and np.allclose of arrays (rules/closeness.py), with
broadcasting, NaNs, infinities, equal_nan and tolerances given: against
numba.njit where Numba is right, against NumPy where it is not (Numba's
np.isclose of two arrays of more than one dimension broadcasts its first
row's results)."""
import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.frontend.wrapper import CompileOnlyError

from .support import TARGETS, check


def isclose(a, b):
    return np.isclose(a, b)


def isclose_tolerances(a, b):
    return np.isclose(a, b, 1e-3, 1e-6, True)


def isclose_keywords(a, b):
    return np.isclose(a, b, atol=0.5, equal_nan=True)


def allclose(a, b):
    return np.allclose(a, b)


def allclose_equal_nan(a, b):
    return np.allclose(a, b, equal_nan=True)


SPECIAL = np.array([0.0, -0.0, 1.0, 1.0 + 1e-9, 1.0 + 1e-3, np.inf, -np.inf, np.nan, 1e-9,
                    -1e300, 5.0])
RNG = np.random.default_rng(3)


def _pairs():
    x = np.repeat(SPECIAL, SPECIAL.size)
    y = np.tile(SPECIAL, SPECIAL.size)
    return x, y


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [isclose, isclose_tolerances, isclose_keywords],
                         ids=lambda f: f.__name__)
def test_isclose_of_special_values_as_numba(fn, target):
    x, y = _pairs()
    check(fn, x, y, target=target)
    check(fn, x, 1.0, target=target)
    check(fn, np.inf, y, target=target)
    check(fn, x.astype(np.float32), y, target=target)
    check(fn, np.arange(20), np.arange(20)[::-1].copy(), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_isclose_broadcasts_as_numpy(target):
    a = RNG.standard_normal((7, 300))
    b = a[3] + RNG.standard_normal(300) * 1e-6
    a[2, 5] = np.nan
    got = numba_mlir_gpu.njit(target=target)(isclose)(a, b)
    assert got.dtype == np.bool_ and np.array_equal(got, np.isclose(a, b))
    got = numba_mlir_gpu.njit(target=target)(isclose_keywords)(a.T, a[:, :1].T)
    assert np.array_equal(got, np.isclose(a.T, a[:, :1].T, atol=0.5, equal_nan=True))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [allclose, allclose_equal_nan],
                         ids=lambda f: f.__name__)
def test_allclose_as_numba(fn, target):
    x, y = _pairs()
    for a, b in [(x, y), (x, x), (y[::-1], y[::-1].copy()), (np.full(3, np.nan), np.nan),
                 (RNG.random((40, 50)), None), (np.arange(9.0), np.arange(9.0) + 1e-9)]:
        b = a * (1 + 1e-7) if b is None else b
        check(fn, a, b, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_shapes_that_do_not_broadcast_raise(target):
    with pytest.raises(ValueError, match="broadcast"):
        numba_mlir_gpu.njit(target=target)(allclose)(np.ones(3), np.ones(4))


def close_rows(m, v):
    out = np.empty(m.shape[0], np.bool_)
    for i in prange(m.shape[0]):
        out[i] = np.allclose(m[i], v)
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_allclose_inside_a_prange_body(target):
    m = np.ones((30, 70))
    m[::4, 3] += 1e-3
    check(close_rows, m, np.ones(70), target=target)


def test_gpu_code():
    x, y = _pairs()
    for fn, args in [(isclose, (x, y)), (allclose, (x, y)), (close_rows, (np.ones((3, 4)), np.ones(4)))]:
        with pytest.raises(CompileOnlyError):
            numba_mlir_gpu.njit(target="compile-only", fallback=False)(fn)(*args)


def test_numbas_own_isclose_differs_in_two_dimensions():
    """Why the 2-d test compares with NumPy: Numba's result is wrong there."""
    a, b = np.array([[1.0, 2.0], [3.0, np.nan]]), np.array([1.0, 2.1])
    assert not np.array_equal(numba.njit(isclose)(a, b), np.isclose(a, b))
