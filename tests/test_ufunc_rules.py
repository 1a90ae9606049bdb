"""np.reciprocal, np.fmax/fmin, np.logical_and/or/xor, np.gcd/lcm, np.ldexp,
np.deg2rad/rad2deg, np.divmod, np.fmod, np.logaddexp/logaddexp2, np.nextafter,
np.spacing, np.signbit and np.float_power (rules/npufuncs.py): differential tests
against Numba on arrays (array expressions, `out=`, prange bodies) and scalars,
with edge values."""
import math

import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu.lowering.errors import UnsupportedConstructError

from .support import TARGETS, check, ours
from .test_codegen import all_ptx, compile_only, entries

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # inf - inf in the ulp check

SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, np.nan, np.inf, -np.inf, 1e-310, -7.0, np.nan])
OTHER = np.array([-0.0, 0.0, np.nan, 3.0, np.nan, 1.0, np.nan, -1e-310, -7.0, 2.0])
INTEGER_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def integer_edges(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    values = [0, 1, 2, 3, 6, 7, 12, 18, 20, 100, info.max, info.max - 1, info.min]
    if info.min < 0:
        values += [-1, -6, -18, -20, info.min + 1]
    return np.array(values, dtype)


def all_pairs(values: np.ndarray):
    return np.repeat(values, len(values)), np.tile(values, len(values))


def extrema(a, b):
    # copysign shows which zero was picked
    hi, lo = np.fmax(a, b), np.fmin(a, b)
    return hi, lo, np.copysign(1.0, hi), np.copysign(1.0, lo)


def logical(a, b):
    return np.logical_and(a, b), np.logical_or(a, b), np.logical_xor(a, b)


def gcd_lcm(a, b):
    return np.gcd(a, b), np.lcm(a, b)


def reciprocal(a):
    return np.reciprocal(a)


def ldexp(x, n):
    return np.ldexp(x, n)


def angles(x):
    return np.deg2rad(x), np.rad2deg(x), np.radians(x), np.degrees(x)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fmax_fmin_ignore_nan_unless_both_are(target, dtype):
    check(extrema, SPECIAL.astype(dtype), OTHER.astype(dtype), target=target, ulps=0)
    check(extrema, *all_pairs(SPECIAL.astype(dtype)), target=target, ulps=0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.uint64, np.bool_])
def test_fmax_fmin_of_integers_and_booleans(target, dtype):
    def both(a, b):
        return np.fmax(a, b), np.fmin(a, b)
    values = integer_edges(dtype) if dtype is not np.bool_ else np.array([True, False])
    check(both, *all_pairs(values), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.int64,
                                   np.uint64, np.bool_])
def test_logical_operations_test_for_nonzero(target, dtype):
    if dtype is np.bool_:
        values = np.array([True, False])
    elif np.issubdtype(dtype, np.floating):
        values = SPECIAL.astype(dtype)
    else:
        values = integer_edges(dtype)
    check(logical, *all_pairs(values), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_logical_operations_of_mixed_types(target):
    check(logical, SPECIAL, np.arange(10) - 5, target=target)
    check(logical, np.arange(10) % 3, True, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", INTEGER_TYPES)
def test_gcd_lcm_signs_zeros_and_extremes(target, dtype):
    # lcm wraps, with Numba's int64 abs() for narrow signed types and its
    # uint64 through float64 where Numba's typing unifies `0` with uint64 as
    # float64 (it depends on the NumPy version)
    check(gcd_lcm, *all_pairs(integer_edges(dtype)), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_gcd_lcm_of_larger_values(target):
    rng = np.random.default_rng(3)
    a = rng.integers(-10**6, 10**6, 500) * rng.integers(1, 50, 500)
    b = rng.integers(-10**6, 10**6, 500) * rng.integers(1, 50, 500)
    check(gcd_lcm, a, b, target=target)
    check(gcd_lcm, np.abs(a).astype(np.uint64), np.abs(b).astype(np.uint64), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reciprocal_of_floats(target, dtype):
    check(reciprocal, SPECIAL.astype(dtype), target=target, ulps=0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", INTEGER_TYPES)
def test_reciprocal_of_integers_goes_through_float64(target, dtype):
    # 0 is left out: 1/0 converts an infinity to an integer, undefined in Numba too
    values = integer_edges(dtype)
    check(reciprocal, values[values != 0], target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("exponent_type", [np.int32, np.int64, np.int8, np.uint32])
def test_ldexp_is_correctly_rounded_through_subnormals_and_overflow(target, dtype,
                                                                      exponent_type):
    x = np.array([1.0, -1.0, 0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1.7e308, 0.75,
                  3.0, 1.5e-45, 3.4e38, 1.0000001, 2.2250738585072014e-308], dtype)
    n = np.array([0, 1, -1, 127, -126, -149, -150, 1024, -1022, -1074, -1075, -1076, 2000,
                  -2000, 5000, -5000, 2**31 - 1, -2**31, 2**32 + 3, -2**33 - 1, 100, 255])
    n = n.astype(exponent_type)        # wraps as NumPy converts: exercises truncation
    check(ldexp, *np.meshgrid(x, n), target=target, ulps=0)
    # results in and near the subnormal range, rounded once
    rng = np.random.default_rng(5)
    low = -1130 if dtype is np.float64 else -180
    x = (rng.random(400) + 0.5).astype(dtype) * np.where(rng.random(400) < 0.5, -1, 1)
    n = rng.integers(low, low + 140, 400).astype(exponent_type)
    check(ldexp, x.astype(dtype), n, target=target, ulps=0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_degrees_and_radians_multiply_by_a_constant(target, dtype):
    x = np.concatenate([SPECIAL, np.linspace(-1000, 1000, 101)]).astype(dtype)
    check(angles, x, target=target, ulps=0)


@pytest.mark.parametrize("target", TARGETS)
def test_ufuncs_with_an_output_argument(target):
    def with_out(a, b, n, out, flags, ints):
        np.fmax(a, b, out)
        np.logical_or(a, b, flags)
        np.lcm(n, 6, ints)
        return out, flags, ints
    n = np.arange(-8, 12)
    check(with_out, SPECIAL, OTHER, n, np.empty(10), np.empty(10, np.bool_), np.empty(20, np.int64),
          target=target)


def prange_body(x, y, n, out, ints):
    for i in prange(x.shape[0]):
        out[i] = np.fmin(x[i], y[i]) + np.reciprocal(x[i]) + np.ldexp(x[i], n[i]) + \
            np.deg2rad(y[i]) + np.logical_xor(x[i], y[i])
        ints[i] = np.gcd(n[i], 12) + np.lcm(n[i], -8)


@pytest.mark.parametrize("target", TARGETS)
def test_ufuncs_in_a_prange_body(target):
    n = np.arange(-5, 5)
    check(prange_body, SPECIAL, OTHER, n, np.empty(10), np.empty(10, np.int64), target=target)


def on_scalars(x, y, i, j):
    return (np.fmax(x, y), np.fmin(x, i), np.logical_and(x, i), np.logical_xor(i, j),
            np.gcd(i, j), np.lcm(i, j), np.reciprocal(x), np.reciprocal(j), np.ldexp(x, i),
            np.deg2rad(x), np.rad2deg(i), math.radians(x), math.degrees(i), math.gcd(i, j),
            math.ldexp(y, j))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("x, y, i, j", [
    (3.0, -2.0, 12, -18), (np.nan, 1.0, 0, 5), (-0.0, np.nan, -7, 1), (1e-300, np.inf, 40, -1),
])
def test_scalars(target, x, y, i, j):
    check(on_scalars, x, y, i, j, target=target, ulps=0)


@pytest.mark.parametrize("target", TARGETS)
def test_narrow_scalars(target):
    def narrow(a, b):
        return np.gcd(a, b), np.lcm(a, b), np.fmax(a, b), np.reciprocal(b)
    check(narrow, np.int8(20), np.int8(7), target=target)
    check(narrow, np.uint64(2**63 + 1), np.uint64(1), target=target)


def divmod_(a, b):
    return np.divmod(a, b)


def divmod_out(a, b, q, r):
    np.divmod(a, b, q, r)
    return q, r


def divmod_in_prange(a, b, q, r):
    for i in prange(a.shape[0]):
        q[i], r[i] = np.divmod(a[i], b[i])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_divmod_of_floats_is_floor_of_the_quotient(target, dtype):
    # Numba's np.divmod: floor(a / b), so np.divmod(1.0, 0.1) is (10.0, 0.1 - ...)
    x = np.array([1.0, np.inf, -7.5, 1.0, 7.0, -7.0, 0.0, -0.0, np.nan, 5.5, 1e300], dtype)
    y = np.array([0.1, 2.0, 0.0, -np.inf, -2.0, 2.0, 3.0, -3.0, 1.0, np.inf, 1e-300], dtype)
    check(divmod_, x, y, target=target)
    check(divmod_out, x, y, np.empty_like(x), np.empty_like(x), target=target)
    check(divmod_in_prange, x, y, np.empty_like(x), np.empty_like(x), target=target)


def floor_divide_remainder(a, b):
    q, r = np.floor_divide(a, b), np.remainder(a, b)
    # the sign of a NaN is the hardware's (x86 makes negative ones, PTX positive)
    return q, r, np.copysign(1.0, q) * (q == q), np.copysign(1.0, r) * (r == r), np.mod(a, b)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_floor_divide_and_remainder_of_floats_follow_numbas_ufunc(target, dtype):
    # floor(a / b) and fmod moved to the divisor's sign, signed zeros included
    x = np.array([1.0, np.inf, -7.5, 1.0, -4.0, 4.0, 0.0, -0.0, 7.0, np.nan], dtype)
    y = np.array([0.1, 2.0, 0.0, -np.inf, 2.0, -2.0, -3.0, 3.0, np.inf, 1.0], dtype)
    check(floor_divide_remainder, x, y, target=target, ulps=0)
    check(floor_divide_remainder, dtype(1.0), dtype(0.1), target=target, ulps=0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", INTEGER_TYPES)
def test_divmod_of_integers(target, dtype):
    a, b = all_pairs(integer_edges(dtype))
    if np.iinfo(dtype).min < 0:     # Numba's remainder traps on MIN % -1 (see below)
        keep = ~((a == np.iinfo(dtype).min) & (b == -1))
        a, b = a[keep], b[keep]
    check(divmod_, a, b, target=target)
    check(divmod_out, a, b, np.empty_like(a), np.empty_like(a), target=target)
    check(divmod_in_prange, a, b, np.empty_like(a), np.empty_like(a), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_divmod_of_scalars(target):
    for a, b in [(7.5, -2.0), (7, -2), (7, 0), (-7, 2.5), (np.int8(-128), np.int8(3))]:
        check(divmod_, a, b, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [lambda a, b: a // b, lambda a, b: a % b,
                                lambda a, b: np.floor_divide(np.array([a, a]), b),
                                lambda a, b: np.array([a, 1]) // b],
                         ids=["floordiv", "mod", "floor_divide", "array floordiv"])
def test_min_int_divided_by_minus_one_gives_zero(target, fn):
    # it overflows, and traps on x86 unless guarded; Numba gives 0
    check(fn, np.iinfo(np.int64).min, -1, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_divmod_of_min_int_by_minus_one_does_not_trap(target):
    # Numba's own remainder traps here (SIGFPE), so the expected value is
    # its floor_divide's 0 and the exact remainder 0
    q, r = ours(divmod_, target)(np.array([np.iinfo(np.int32).min, 7], np.int32), np.int32(-1))
    assert q.tolist() == [0, -7] and r.tolist() == [0, 0]


def expm1(a):
    return np.expm1(a)


def test_complex_loops_without_a_rule_stay_refused():
    with pytest.raises(UnsupportedConstructError, match="complex128"):
        ours(expm1, "cpu")(np.ones(3, np.complex128))


def test_kernels_build():
    x = np.ones(8)
    fn = compile_only(prange_body, x, x, np.ones(8, np.int64), x, np.ones(8, np.int64))
    assert entries(all_ptx(fn))
    for fn, args in [(extrema, (x, x)), (logical, (x, x)), (angles, (x.astype(np.float32),)),
                     (gcd_lcm, (np.ones(8, np.uint32), np.ones(8, np.uint32))),
                     (ldexp, (x.astype(np.float32), np.ones(8, np.int64))),
                     (divmod_in_prange, (x, x, x, x)),
                     (divmod_in_prange, (np.ones(8, np.int8),) * 4)]:
        assert entries(all_ptx(compile_only(fn, *args)))


def more_ufuncs(a, b, out):
    np.logaddexp(a, b, out[0])
    np.logaddexp2(a, b, out[1])
    np.nextafter(a, b, out[2])
    np.float_power(np.abs(a), b, out[3])
    np.spacing(a, out[4])
    return np.signbit(a), np.logaddexp(a[0], b[0]), np.nextafter(a[1], b[1])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logaddexp_nextafter_spacing_signbit_float_power(dtype, target):
    """Numba's formulas: np.logaddexp(2) as its _generate_logaddexp, C's
    nextafter bit for bit, spacing as nextafter(x, copysign(inf, x)) - x."""
    a, b = all_pairs(np.concatenate([SPECIAL, [5e-324, -5e-324, 1e308, 3.0]]).astype(dtype))
    check(more_ufuncs, a, b, np.zeros((5, a.size), dtype), target=target, ulps=8)


def fmod_of(a, b):
    return np.fmod(a, b)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", INTEGER_TYPES)
def test_integer_fmod_is_numpys(dtype, target):
    """The remainder truncated toward zero, 0 for a zero divisor (and for
    MIN by -1), as NumPy. Numba's own loop takes the unsigned remainder of
    signed operands (np.fmod(7, -3) is 7 there), so NumPy is the reference."""
    a, b = all_pairs(integer_edges(dtype))
    with np.errstate(all="ignore"):
        expected = np.fmod(a, b)
    undefined = b == 0
    if np.iinfo(dtype).min < 0:
        undefined |= (a == np.iinfo(dtype).min) & (b == -1)
    expected[undefined] = 0
    np.testing.assert_array_equal(ours(fmod_of, target)(a, b), expected)
