"""datetime64 and timedelta64: each operation against Numba's own CPU
compilation (`numba.njit`), on scalars and arrays with NaT, in several
units (lowering/datetimes.py, rules/datetimes.py)."""
from __future__ import annotations


import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu import inspect_ptx

from .support import TARGETS, ours

D, M = np.timedelta64, np.datetime64
MIN = np.iinfo(np.int64).min


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def same_bits(got, expected):
    """Same dtype (unit included) and the same counts (NaT is INT64_MIN);
    floats and booleans equal, NaN where NaN."""
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"dtype {g.dtype} != {e.dtype}"
    assert g.shape == e.shape
    if e.dtype.kind in "mM":
        np.testing.assert_array_equal(g.view(np.int64), e.view(np.int64))
    else:
        np.testing.assert_array_equal(g, e)


_DISPATCHERS: dict = {}


def _compiled(pyfunc, target):
    """One dispatcher per function and target, kept for the next arguments."""
    key = (pyfunc, target)
    if key not in _DISPATCHERS:
        _DISPATCHERS[key] = numba.njit(pyfunc) if target is None else ours(pyfunc, target)
    return _DISPATCHERS[key]


def numba_accepts(pyfunc, *args) -> bool:
    try:
        _compiled(pyfunc, None)(*_copy(args))
    except Exception:
        return False
    return True


def check(pyfunc, *args, target="cpu"):
    expected = _compiled(pyfunc, None)(*_copy(args))
    got = _compiled(pyfunc, target)(*_copy(args))
    same_bits(got, expected)
    return got


# values with NaT, in several units
TD_H = np.array([1, -2, MIN, 40, 7, 0, -9], "m8[h]")
TD_H2 = np.array([3, -2, 5, -40, 0, MIN, 4], "m8[h]")
TD_M = np.array([61, -1, 5, MIN, 0, 120, -7], "m8[m]")
DT_D = np.array(["2020-01-05", "NaT", "1969-03-01", "1600-02-29", "2400-12-31",
                 "1970-01-01", "1899-12-31"], "M8[D]")
DT_D2 = np.array(["2021-01-05", "2000-01-01", "NaT", "1600-03-01", "2400-12-30",
                  "1969-12-31", "1899-12-31"], "M8[D]")


# -- scalars ---------------------------------------------------------------------

SCALAR_PAIRS = [
    (D(-7, "h"), D(3, "m")), (D(5, "D"), D(-3, "h")), (D("NaT", "h"), D(3, "m")),
    (D(3, "m"), D("NaT", "s")), (D(2, "W"), D(1, "D")), (D(14, "M"), D(2, "Y")),
    (D(-7, "m"), D(-3, "m")), (D(7, "s"), D(0, "s")),
]
BINARY = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "div": lambda x, y: x / y,
    "eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y,
    "np_floor_divide": lambda x, y: np.floor_divide(x, y),
    "np_remainder": lambda x, y: np.remainder(x, y),
}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_timedelta_binary_operators(op):
    for a, b in SCALAR_PAIRS:
        if numba_accepts(BINARY[op], a, b):    # not: Y/M with finer units
            check(BINARY[op], a, b)


@pytest.mark.parametrize("number", [3, -2, 0, 2.5, -0.75, 0.0, float("nan")])
def test_timedelta_times_and_over_numbers(number):
    for td in (D(-7, "h"), D(11, "ms"), D("NaT", "D")):
        check(lambda x, n: x * n, td, number)
        check(lambda x, n: n * x, td, number)
        check(lambda x, n: x / n, td, number)


UNARY = {
    "neg": lambda x: -x, "pos": lambda x: +x, "abs": lambda x: abs(x),
    "np_abs": lambda x: np.absolute(x), "np_negative": lambda x: np.negative(x),
    "sign": lambda x: np.sign(x), "isnat": lambda x: np.isnat(x), "isnan": lambda x: np.isnan(x),
    "isfinite": lambda x: np.isfinite(x), "isinf": lambda x: np.isinf(x),
    "int": lambda x: np.int64(x),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_timedelta_unary(op):
    for td in (D(-7, "h"), D(0, "s"), D(9, "W"), D("NaT", "m")):
        check(UNARY[op], td)


def test_extrema_with_nat():
    fns = [lambda x, y: max(x, y), lambda x, y: min(x, y),
           lambda x, y: np.maximum(x, y), lambda x, y: np.minimum(x, y),
           lambda x, y: np.fmax(x, y), lambda x, y: np.fmin(x, y)]
    pairs = [(D(-7, "h"), D(3, "h")), (D(-7, "h"), D("NaT", "h")), (D("NaT", "h"), D(3, "h")),
             (M("2020-01-01", "D"), M("NaT", "D")), (M("2020-01-01", "D"), M("1970-01-02", "D"))]
    for fn in fns:
        for a, b in pairs:
            check(fn, a, b)


def plus_minus(x, y):
    return x + y, y + x, x - y


def test_datetime_arithmetic_across_units():
    """Years and months become days (or weeks) through the calendar."""
    dates = [M("2020-03-01", "D"), M("1969-07", "M"), M("1899", "Y"), M("NaT", "D"),
             M("2000-02-29T13", "h"), M("-0043", "Y")]
    deltas = [D(3, "W"), D(5, "h"), D("NaT", "m"), D(7, "M"), D(2, "Y")]
    for d in dates:
        for t in deltas:
            if numba_accepts(plus_minus, d, t):    # not: Y/M deltas with finer dates
                check(plus_minus, d, t)


def difference_and_order(x, y):
    return x - y, x == y, x != y, x < y, x <= y, x > y, x >= y


def test_datetime_differences_and_comparisons_across_units():
    dates = [M("2020-03-01", "D"), M("1969-07", "M"), M("1899", "Y"), M("NaT", "D"),
             M("2000-02-29T13", "h"), M("1972-12-31T23:59", "m")]
    for a in dates:
        for b in dates:
            check(difference_and_order, a, b)
    check(difference_and_order, M("2020", "Y"), M("2020-01-01", "D"))
    check(difference_and_order, M("1600-03", "M"), M("1600-03-01", "D"))


def test_calendar_of_years_and_months():
    """Every month of 1200 years and every year of 3000 around 1970, in days
    and weeks: the leap-year rules on both sides of the epoch."""
    months = np.arange(-7200, 7200, dtype=np.int64).astype("M8[M]")
    years = np.arange(-1500, 1500, dtype=np.int64).astype("M8[Y]")
    day0 = M("1970-01-01", "D")
    week0 = M("1970-01-01", "W")
    check(counts_since, months, day0)
    check(counts_since, years, day0)
    check(counts_since, years, week0)
    check(counts_since, months, week0)


def counts_since(x, d):
    """(Numba's array expression `x - d` gives a generic unit it cannot store.)"""
    out = np.empty(x.shape[0], np.int64)
    for i in prange(x.shape[0]):
        out[i] = np.int64(x[i] - d)
    return out


# -- constants ---------------------------------------------------------------------

ONE_DAY = np.timedelta64(1, "D")
NAT_H = np.timedelta64("NaT", "h")
EPOCH = np.datetime64("1970-01-01", "s")
ONE_HOUR = np.timedelta64(1, "h")


def test_constants():
    check(lambda x: x + ONE_DAY, D(-7, "h"))
    check(lambda x: x + NAT_H, D(-7, "h"))
    check(lambda: ONE_DAY)
    check(lambda x: x - EPOCH, M("2024-02-29T12", "h"))
    check(lambda x: x < ONE_DAY, TD_H)


def test_refused_conversion_is_clear():
    """An output unit Numba cannot convert to: our error, not a wrong value."""
    def f(x, out):
        np.add(x, x, out)
        return out
    with pytest.raises(numba_mlir_gpu.UnsupportedConstructError, match="timedelta64"):
        ours(f, "cpu")(TD_H, np.zeros(TD_H.size, "m8[D]"))


# -- arrays ---------------------------------------------------------------------------

ARRAY_CASES = {
    "add": (lambda x, y: x + y, (TD_H, TD_H2)),
    "add_units": (lambda x, y, o: np.add(x, y, o), (TD_H, TD_M, np.zeros(7, "m8[m]"))),
    "sub": (lambda x, y: x - y, (TD_H, TD_H2)),
    "scalar": (lambda x, y: x - y, (TD_H, D(3, "h"))),
    "mul": (lambda x: x * 3, (TD_H,)),
    "mulf": (lambda x: x * 1.5, (TD_H,)),
    "div": (lambda x, y: x / y, (TD_H, TD_H2)),
    "div_number": (lambda x: x / 2, (TD_H,)),
    "div_zero": (lambda x: x / 0.0, (TD_H,)),
    "floor_divide": (lambda x, y: np.floor_divide(x, y), (TD_H, TD_H2)),
    "remainder": (lambda x, y: np.remainder(x, y), (TD_H, TD_H2)),
    "lt": (lambda x, y: x < y, (TD_H, TD_H2)),
    "ne": (lambda x, y: x != y, (TD_H, TD_H2)),
    "ge_units": (lambda x, y: np.greater_equal(x, y), (TD_H, TD_M)),
    "neg": (lambda x: -x, (TD_H,)),
    "abs": (lambda x: np.abs(x), (TD_H,)),
    "sign": (lambda x: np.sign(x), (TD_H,)),
    "isnat": (lambda x: np.isnat(x), (DT_D,)),
    "isnan": (lambda x: np.isnan(x), (TD_H,)),
    "maximum": (lambda x, y: np.maximum(x, y), (TD_H, TD_H2)),
    "minimum": (lambda x, y: np.minimum(x, y), (DT_D, DT_D2)),
    "fmax": (lambda x, y: np.fmax(x, y), (DT_D, DT_D2)),
    "fmin": (lambda x, y: np.fmin(x, y), (TD_H, TD_H2)),
    "dt_plus": (lambda x, y: x + y, (DT_D, TD_H.astype("m8[D]"))),
    "dt_cmp": (lambda x, y: x <= y, (DT_D, DT_D2)),
    "dt_cmp_month": (lambda x, y: x < y, (DT_D, M("2000-01", "M"))),
    "broadcast": (lambda x: x.reshape(7, 1) + x, (TD_H,)),
    "out_unit": (lambda x, y, o: np.add(x, y, o), (TD_H, TD_H2, np.zeros(7, "m8[s]"))),
    "copy": (lambda x: x.copy(), (DT_D,)),
    "getitem": (lambda x: x[2], (TD_H,)),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(ARRAY_CASES))
def test_array_expressions(case, target):
    fn, args = ARRAY_CASES[case]
    check(fn, *args, target=target)


REDUCTIONS = {
    "sum": lambda x: np.sum(x), "sum_method": lambda x: x.sum(), "min": lambda x: np.min(x),
    "max": lambda x: np.max(x), "max_method": lambda x: x.max(), "mean": lambda x: np.mean(x),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", sorted(REDUCTIONS))
def test_reductions(fn, target):
    for array in (TD_H, TD_H2[:5], np.arange(100_000, dtype=np.int64).astype("m8[ms]")):
        check(REDUCTIONS[fn], array, target=target)
    if fn in ("min", "max", "max_method"):
        check(REDUCTIONS[fn], DT_D, target=target)
        check(REDUCTIONS[fn], DT_D2[:2], target=target)


def prange_shift(x, y, c):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] + y[i] * 2 - c
    return out


def prange_compare(x, c):
    out = np.empty(x.shape[0], np.bool_)
    for i in prange(x.shape[0]):
        out[i] = x[i] < c and not np.isnat(x[i])
    return out


def prange_dates(d, t):
    out = np.empty(d.shape[0], np.float64)
    for i in prange(d.shape[0]):
        out[i] = (d[i] - t) / ONE_HOUR
    return out


PRANGE_CASES = {
    "shift": (prange_shift, (TD_H, TD_H2, D(1, "h"))),
    "compare": (prange_compare, (TD_M, D(1, "h"))),
    "dates": (prange_dates, (DT_D, M("2000-01-01T00", "h"))),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(PRANGE_CASES))
def test_prange_bodies(case, target):
    fn, args = PRANGE_CASES[case]
    check(fn, *args, target=target)


@pytest.mark.parametrize("case", sorted(PRANGE_CASES) + ["add", "maximum", "dt_cmp", "sum"])
def test_gpu_code_generation(case):
    """The GPU pipeline builds kernels for them (compile-only: no GPU here)."""
    fn, args = PRANGE_CASES.get(case) or ARRAY_CASES.get(case) or \
        (REDUCTIONS[case], (TD_H,))
    gpu = numba_mlir_gpu.njit(target="compile-only")(fn)
    with pytest.raises(RuntimeError):
        gpu(*_copy(args))
    assert ".entry" in "".join(inspect_ptx(gpu))
