"""np.sort, a.sort() and np.argsort of 1-d arrays (rules/sorting.py, a
parallel merge sort): against numba.njit, with NaNs, infinities, signed
zeros, ties, every integer width, booleans, views, sizes that are not powers
of two and past a GPU block, and inside prange bodies."""
import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.frontend.wrapper import CompileOnlyError

from .support import TARGETS, check


def sort(a):
    return np.sort(a)


def sort_in_place(a):
    a.sort()
    return a.sum()


def argsort(a):
    return np.argsort(a)


def argsort_stable(a):
    return np.argsort(a, kind="mergesort")


def argsort_method(a):
    return a.argsort()


RNG = np.random.default_rng(17)


def _floats(n):
    a = RNG.standard_normal(n)
    a[::11] = np.nan
    a[3::13] = np.inf
    a[5::17] = -np.inf
    a[7::19] = -0.0
    a[8::23] = 0.0
    return a


CASES = {
    "empty": np.zeros(0),
    "one": np.array([2.5]),
    "two": np.array([3.0, -1.0]),
    "floats_1000": _floats(1000),
    "floats_4099": _floats(4099),
    "float32": _floats(777).astype(np.float32),
    "sorted": np.arange(300.0),
    "reversed": np.arange(300.0)[::-1].copy(),
    "view": _floats(601)[::-3],
    "int8": RNG.integers(-128, 128, 999).astype(np.int8),
    "uint64": RNG.integers(0, 2**63, 513).astype(np.uint64) * np.uint64(2),
    "int64_ties": RNG.integers(0, 5, 2000),
    "bool": RNG.random(300) < 0.5,
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(CASES))
def test_sort_as_numba(case, target):
    a = CASES[case]
    check(sort, a, target=target)
    check(sort_in_place, a.copy(), target=target, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(CASES))
def test_argsort_as_numpys_stable_sort(case, target):
    """Stable: ties keep their order (Numba's default quicksort may order
    them otherwise; its mergesort agrees)."""
    a = CASES[case]
    expected = np.argsort(a, kind="stable")
    for fn in (argsort, argsort_stable, argsort_method):
        got = numba_mlir_gpu.njit(target=target)(fn)(a)
        assert got.dtype == np.intp and np.array_equal(got, expected), (fn.__name__, case)
    if a.size:
        assert np.array_equal(numba_mlir_gpu.njit(target=target)(argsort_stable)(a),
                              numba.njit(argsort_stable)(a))


def sort_rows(m):
    out = np.empty_like(m)
    for i in prange(m.shape[0]):
        out[i] = np.sort(m[i])
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_sort_inside_a_prange_body(target):
    m = _floats(37 * 201).reshape(37, 201)
    check(sort_rows, m, target=target)


def test_unsupported_sorts_are_refused():
    def sort_2d(a):
        return np.sort(a)
    with pytest.raises(numba_mlir_gpu.UnsupportedConstructError, match="1-d arrays"):
        numba_mlir_gpu.njit(target="cpu", fallback=False)(sort_2d)(np.ones((2, 3)))


def test_gpu_code():
    for fn, args in [(sort, (CASES["floats_1000"],)), (argsort, (CASES["int8"],)),
                     (sort_rows, (np.ones((3, 4)),))]:
        with pytest.raises(CompileOnlyError):
            numba_mlir_gpu.njit(target="compile-only", fallback=False)(fn)(*args)


def unique(a):
    return np.unique(a)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", ["empty", "one", "floats_1000", "float32", "view", "int8",
                                  "int64_ties", "bool", "sorted"])
def test_unique_as_numba(case, target):
    """NaNs collapse into one, as in Numba."""
    check(unique, CASES[case], target=target)
    if case == "floats_1000":
        check(unique, np.round(CASES[case] * 3), target=target)
