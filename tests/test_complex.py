"""Complex numbers (complex64, complex128), differentially against numba.njit."""
import cmath
import copy
import functools
import itertools
import math

import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError
from numba_mlir_gpu.testing import differential as D

from .support import TARGETS, ours
from .test_codegen import all_ptx, compile_only, entries

COMPLEX_TYPES = [np.complex64, np.complex128]
INF, NAN = math.inf, math.nan

# Special parts: signed zeros, infinities, NaN, tiny and huge values.
SPECIAL_PARTS = [0.0, -0.0, 1.5, -2.0, INF, -INF, NAN, 1e-300, 1e300]


def special_values(dtype) -> list:
    with np.errstate(over="ignore"):      # 1e300 is inf in complex64
        return [dtype(complex(r, i)) for r, i in itertools.product(SPECIAL_PARTS, repeat=2)]


def finite_values(dtype, n=13, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 3, n) + 1j * rng.normal(0, 3, n)).astype(dtype)


def _parts(value):
    value = np.asarray(value)
    if np.iscomplexobj(value):
        return [("real", value.real), ("imag", value.imag)]
    return [("", value)]


def assert_close(got, expected, ulps: int = 4, path: str = "result", rtol=None,
                 atol=0.0) -> None:
    """Types equal; complex values part by part: NaN where Numba has NaN,
    infinities and zeros with their signs, other floats within `ulps`."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), f"{path}: {got!r}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_close(g, e, ulps, f"{path}[{i}]", rtol, atol)
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape, f"{path}: shape {g.shape} != {e.shape}"
    assert g.dtype == e.dtype or (g.ndim == 0 and type(got) is type(expected)), \
        f"{path}: type {g.dtype}/{type(got)} != {e.dtype}/{type(expected)}"
    for (name, gp), (_, ep) in zip(_parts(g), _parts(e)):
        where = f"{path}{'.' + name if name else ''}"
        if not np.issubdtype(ep.dtype, np.floating):
            np.testing.assert_array_equal(gp, ep, err_msg=where)
            continue
        np.testing.assert_array_equal(np.isnan(gp), np.isnan(ep), err_msg=f"{where}: NaNs")
        ok = ~np.isnan(ep)
        gp, ep = gp[ok], ep[ok]
        exact = (gp == ep) & (np.signbit(gp) == np.signbit(ep))
        unit = ep.dtype
        with np.errstate(invalid="ignore", over="ignore"):
            if unit == np.float64 and np.all(ep.astype(np.float32).astype(np.float64) == ep):
                unit = np.float32      # a float32 result boxed as a Python float
            close = np.isfinite(ep) & (ep != 0) & \
                (np.abs(gp - ep) <= ulps * np.spacing(np.abs(ep).astype(unit)))
            if rtol is not None or atol:
                close |= np.abs(gp - ep) <= (rtol or 0.0) * np.abs(ep) + atol
        assert np.all(exact | close), f"{where}: got {gp[~(exact | close)]}, " \
                                      f"Numba {ep[~(exact | close)]}"


@functools.lru_cache(maxsize=None)
def _compiled(pyfunc, target: str, parallel_reference: bool):
    """Numba's and our dispatcher of `pyfunc`, made once (each compiles a
    signature once, however many values a test checks)."""
    return numba.njit(parallel=parallel_reference)(pyfunc), ours(pyfunc, target)


def check(pyfunc, *args, target="cpu", ulps=4, rtol=None, atol=0.0, parallel_reference=False):
    """Numba's njit (or its parallel=True) and ours on copies of `args`;
    results and arrays afterwards compared; exceptions must match by type."""
    ref_args, our_args = copy.deepcopy(args), copy.deepcopy(args)
    ref, fn = _compiled(pyfunc, target, parallel_reference)
    try:
        expected = ref(*ref_args)
    except ZeroDivisionError:
        with pytest.raises(ZeroDivisionError):
            fn(*our_args)
        return None
    got = fn(*our_args)
    assert_close(got, expected, ulps, rtol=rtol, atol=atol)
    for i, (g, e) in enumerate(zip(our_args, ref_args)):
        if isinstance(e, np.ndarray):
            assert_close(g, e, ulps, f"argument {i} after the call", rtol, atol)
    return got


# -- scalars -----------------------------------------------------------------------

def add(a, b): return a + b
def sub(a, b): return a - b
def mul(a, b): return a * b
def truediv(a, b): return a / b
def eq(a, b): return a == b
def ne(a, b): return a != b
def power(a, b): return a ** b
def neg(a): return -a
def pos(a): return +a
def absolute(a): return abs(a)
def parts(a): return a.real, a.imag, a.conjugate()
def truth(a): return (1 if a else 0), not a


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", [add, sub, mul, truediv, eq, ne], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_binary_operators(op, dtype, target):
    values = finite_values(dtype)
    fn, ref = ours(op, target), numba.njit(op)
    for a, b in zip(values, values[::-1]):
        assert_close(fn(a, b), ref(a, b))
    assert_close(fn(values[0], values[0]), ref(values[0], values[0]))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", [add, sub, mul, truediv, eq, ne], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_binary_operators_on_special_values(op, dtype, target):
    """inf, nan and signed zeros on both sides; division by zero raises
    ZeroDivisionError as in Numba (CPython's algorithm)."""
    values = special_values(dtype)
    fn, ref = ours(op, target), numba.njit(op)
    rng = np.random.default_rng(1)
    for a, b in itertools.chain(zip(values, values[::-1]),
                                zip(rng.permutation(values), values),
                                ((v, dtype(3 - 4j)) for v in values),
                                ((dtype(3 - 4j), v) for v in values)):
        try:
            expected = ref(a, b)
        except ZeroDivisionError:
            with pytest.raises(ZeroDivisionError, match="complex division by zero"):
                fn(a, b)
            continue
        assert_close(fn(a, b), expected, path=f"{op.__name__}({a!r}, {b!r})")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", [neg, pos, absolute, parts, truth], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_unary(op, dtype, target):
    fn, ref = ours(op, target), numba.njit(op)
    for a in list(finite_values(dtype)) + special_values(dtype):
        assert_close(fn(a), ref(a), path=f"{op.__name__}({a!r})")


def mixed(z, x, k, flag):
    return z + x, x * z, z / k, k - z, z * flag, z == x, x != z, complex(x, k), complex(x), \
        z + 1j, 2 * z - 0.5


@pytest.mark.parametrize("target", TARGETS)
def test_mixed_real_and_complex(target):
    """Promotion as Numba types it: complex64 with float64 is complex128, ..."""
    for z in (np.complex64(1.5 - 2j), 1.5 - 2j):
        for x in (np.float32(2.5), 2.5, np.float32(-0.0)):
            check(mixed, z, x, 3, True, target=target)


def construct(a, b):
    return complex(a, b), complex(a), np.complex64(a), np.complex128(b)


@pytest.mark.parametrize("target", TARGETS)
def test_construction(target):
    for a, b in ((1.5, -2.0), (np.float32(0.1), 7), (-0.0, NAN), (INF, -0.0)):
        check(construct, a, b, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_power(dtype, target):
    """z ** 2 by multiplication, other exponents as CPython's _Py_c_pow."""
    values = list(finite_values(dtype, 7)) + [dtype(0), dtype(-0.0 + 0j), dtype(1j)]
    for a in values:
        for b in (2, 3, -1, 0, 0.5, dtype(2), dtype(0.5 + 1j), dtype(-1.5j), dtype(0)):
            check(power, a, b, target=target, ulps=16)


def cmath_functions(z):
    return (cmath.exp(z), cmath.log(z), cmath.sqrt(z), cmath.sin(z), cmath.cos(z),
            cmath.tan(z), cmath.sinh(z), cmath.cosh(z), cmath.tanh(z), cmath.log10(z),
            cmath.log(z, 2 + 1j), cmath.phase(z), cmath.polar(z), cmath.isnan(z),
            cmath.isinf(z), cmath.isfinite(z))


def rect(r, phi):
    return cmath.rect(r, phi)


def numpy_scalar_functions(z):
    return (np.exp(z), np.log(z), np.sqrt(z), np.abs(z), np.absolute(z), np.conj(z),
            np.conjugate(z), np.real(z), np.imag(z), np.angle(z), np.angle(z, True),
            np.power(z, 2), np.power(z, 0.5 + 0.25j), np.isnan(z), np.isfinite(z),
            np.isinf(z), np.log10(z), np.log2(z), np.square(z), np.sin(z), np.cos(z),
            np.tan(z), np.add(z, 1), np.divide(z, 2 - 1j))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_cmath(dtype, target):
    for z in finite_values(dtype, 9):
        check(cmath_functions, z, target=target)
    for r, phi in ((2.0, 0.5), (-1.0, 3.0), (0.0, INF), (INF, 1.0)):
        check(rect, r, phi, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [cmath.exp, cmath.log, cmath.sqrt, abs, cmath.sin, cmath.cos],
                         ids=lambda f: f.__name__)
def test_cmath_on_special_values(fn, target):
    def call(z):
        return fn(z)
    for z in special_values(np.complex128):
        check(call, z, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_numpy_functions_on_scalars(dtype, target):
    for z in finite_values(dtype, 7):
        check(numpy_scalar_functions, z, target=target, ulps=16)


def numpy_divide(a, b):
    return np.divide(a, b)


@pytest.mark.parametrize("target", TARGETS)
def test_numpy_divide_is_numpys_algorithm(target):
    """np.divide: Smith's algorithm of NumPy's loops, inf/nan for a zero divisor."""
    values = special_values(np.complex128)
    fn, ref = ours(numpy_divide, target), numba.njit(numpy_divide)
    for a, b in zip(values, values[::-1]):
        assert_close(fn(a, b), ref(a, b), path=f"np.divide({a!r}, {b!r})")
    assert_close(fn(1 + 2j, 0j), ref(1 + 2j, 0j))


def in_a_loop(a, b):
    total = 0j
    for i in range(3):
        total = total * a + b / (i + 1)
        if total == a:
            break
    return total


@pytest.mark.parametrize("target", TARGETS)
def test_complex_variables_in_host_loops(target):
    check(in_a_loop, 1 + 2j, 0.5 - 1j, target=target)
    check(in_a_loop, np.complex64(1 + 2j), np.complex64(0.5 - 1j), target=target)


# -- arrays: arguments, results, prange bodies -------------------------------------

def prange_body(x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        z = x[i]
        out[i] = z * y[i] - z.conjugate() / (y[i] + 2) + abs(z) + complex(z.imag, z.real)
    return out


def prange_functions(x):
    out = np.empty(x.shape[0], np.complex128)
    mag = np.empty(x.shape[0], np.float64)
    for i in prange(x.shape[0]):
        out[i] = cmath.exp(x[i]) + cmath.sqrt(x[i]) * cmath.log(x[i] + 1) + x[i] ** 3
        mag[i] = abs(x[i]) + cmath.phase(x[i]) + x[i].real
    return out, mag


def writes_in_place(x):
    for i in prange(x.shape[0]):
        x[i] = x[i] * 1j + x[i].real
    return x


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_prange_bodies(dtype, target):
    x, y = finite_values(dtype, 1003), finite_values(dtype, 1003, seed=1)
    # abs() is our hypot (rarely an ulp from libm's), and
    # sums of terms of about 10 cancel: an absolute tolerance
    atol = 1e-5 if dtype == np.complex64 else 1e-13
    check(prange_body, x, y, target=target, atol=atol)
    # exp, log, sqrt and ** are libm's (libdevice's in kernels), each a few ulp
    # from Numba's; their terms reach |x|**3 and exp(x.real) and cancel in the
    # sum: a few ulp of the largest term, absolute
    largest = max(np.abs(x.astype(np.complex128)).max() ** 3, np.exp(x.real.max()))
    atol_functions = max(atol, 16 * np.finfo(x.real.dtype).eps * largest)
    check(prange_functions, x, target=target, ulps=16, rtol=atol, atol=atol_functions)
    check(writes_in_place, x, target=target)


def prange_division(x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] / y[i]
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_prange_division_by_zero_raises(target):
    x = finite_values(np.complex128, 37)
    y = finite_values(np.complex128, 37, seed=2)
    check(prange_division, x, y, target=target)
    y[20] = 0
    check(prange_division, x, y, target=target)


def sum_reduction(x):
    s = 0j
    for i in prange(x.shape[0]):
        s += x[i]
    return s


def product_reduction(x):
    p = 1 + 0j
    for i in prange(x.shape[0]):
        p *= x[i]
    return p


def difference_reduction(x):
    s = 1j
    for i in prange(x.shape[0]):
        s -= x[i]
    return s


def mixed_reductions(x):
    s = np.complex64(0)
    t = 0.0
    for i in prange(x.shape[0]):
        s += x[i] * x[i]
        t += abs(x[i])
    return s, t


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_prange_reductions(dtype, target):
    x = finite_values(dtype, 1003)
    tol = 1e-4 if dtype == np.complex64 else 1e-12      # the order of additions differs
    check(sum_reduction, x, target=target, rtol=tol)
    check(difference_reduction, x, target=target, rtol=tol)
    check(mixed_reductions, x, target=target, rtol=tol)
    small = (1 + 0.01 * finite_values(dtype, 301)).astype(dtype)
    check(product_reduction, small, target=target, rtol=tol * 10)
    check(sum_reduction, x[:0].copy(), target=target)


def whole_array_reductions(x):
    return x.sum(), np.sum(x), x.prod(), np.prod(x), x.mean(), np.mean(x)


def axis_sum(x):
    return x.sum(axis=0), np.sum(x, axis=1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_numpy_reductions(dtype, target):
    x = finite_values(dtype, 517)
    tol = 1e-4 if dtype == np.complex64 else 1e-12
    check(whole_array_reductions, (1 + 0.01 * x).astype(dtype), target=target, rtol=tol)
    check(axis_sum, finite_values(dtype, 35).reshape(5, 7), target=target, rtol=tol)
    check(whole_array_reductions, x[:0].copy(), target=target)     # mean: nan+nanj


def array_expressions(x, y):
    return (x + y, x - y, x * y, -x, x * 2.5 + 1j, x == y, x != y, np.abs(x),
            np.exp(x), np.log(x), np.sqrt(x), np.conj(x), np.angle(x), np.power(x, 2),
            np.add(x, y), np.multiply(x, y), np.square(x), np.sin(x), np.cos(x),
            np.subtract(x, y), np.negative(x), np.equal(x, y), np.not_equal(x, y), np.tan(x),
            np.log10(x), np.isnan(x), np.isfinite(x))


def array_division(x, y):
    return x / y, np.divide(x, y), np.true_divide(x, 2 + 1j)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_array_expressions(dtype, target):
    x, y = finite_values(dtype, 257), finite_values(dtype, 257, seed=3)
    # np.log's real part is log(hypot(...)): hypot's last-bit difference
    # from libm's is an absolute error where |z| is near 1
    atol = 1e-6 if dtype == np.complex64 else 1e-15
    check(array_expressions, x, y, target=target, ulps=16, atol=atol)


@pytest.mark.parametrize("target", TARGETS)
def test_array_division_is_numpys_as_in_parallel_numba(target):
    """Numba's parfor pass makes `x / y` of complex arrays np.divide's loop
    (NumPy's algorithm; a zero divisor gives inf/nan): Numba's parallel=True
    computes the same, its serial njit CPython's division (a last-bit
    difference; ZeroDivisionError for a zero divisor)."""
    x, y = finite_values(np.complex128, 101), finite_values(np.complex128, 101, seed=4)
    y[3] = 0
    check(array_division, x, y, target=target, parallel_reference=True)


def ufuncs_into_outputs(x, y, z, out, flags):
    np.cos(z, out[0])
    np.exp(z, out[1])
    np.sqrt(x, out[2])
    np.reciprocal(x, out[3])
    np.maximum(x, y, out[4])
    np.fmin(x, y, out[5])
    np.less_equal(x, y, flags[0])
    np.greater(x, y, flags[1])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_bug_ufuncs_with_output_arrays(dtype, target):
    """np.cos(x, out) and friends: the complex function is a callee whose
    status was checked after the statement, outside the loop defining it
    (invalid MLIR, an internal error); NumPy's lexicographic order for
    np.maximum/fmin/less_equal/greater, Smith's np.reciprocal. cos and exp
    of finite values: of infinite parts the GPU's NaN signs differ
    (differential.py, _only_infinity_signs)."""
    x = np.array(special_values(dtype) + list(finite_values(dtype, 40)), dtype)
    y = np.roll(x, 7)
    y[::5] = x[::5]                       # ties
    z = finite_values(dtype, x.size, seed=5)
    out = np.zeros((6, x.size), dtype)
    flags = np.zeros((2, x.size), np.bool_)
    check(ufuncs_into_outputs, x, y, z, out, flags, target=target, ulps=8)


def hyperbolic_and_inverse(z, out):
    np.sinh(z, out[0])
    np.cosh(z, out[1])
    np.tanh(z, out[2])
    np.arcsin(z, out[3])
    np.arccos(z, out[4])
    np.arctan(z, out[5])
    np.arcsinh(z, out[6])
    np.arccosh(z, out[7])
    np.arctanh(z, out[8])
    w = z[0]
    return cmath.asin(w), cmath.acos(w), cmath.atan(w), cmath.asinh(w), cmath.atanh(w), \
        np.arctanh(w), np.tanh(w)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_hyperbolic_and_inverse_functions(dtype, target):
    """NumPy's formulas for np.sinh/cosh/tanh/arccosh, CPython's algorithms
    for the inverse functions (Numba's cmathimpl), on finite values and on
    the special ones whose parts are not subnormal (see normal_parts in
    differential.py: Numba's serial loop raises there)."""
    special = [z for z in special_values(dtype) if not 0 < abs(z.real) < 1e-200
               and not 0 < abs(z.imag) < 1e-200]
    z = np.array(list(finite_values(dtype, 30)) + special, dtype)
    if target == "gpu":
        z = z[np.isfinite(z)]         # the GPU's NaN signs (differential.py) aside
    check(hyperbolic_and_inverse, z, np.zeros((9, z.size), dtype), target=target, ulps=16,
          atol=1e-6 if dtype == np.complex64 else 1e-15)


def new_arrays(n, v):
    a = np.zeros(n, np.complex128)
    b = np.ones((n, 2), np.complex64)
    c = np.full(n, v)
    d = np.empty(n, np.complex128)
    d[:] = 1 - 1j
    a[1] = v
    a[2] += 3j
    return a, b, c, d, c.copy(), c[1:4], b.T, c.reshape(n, 1), np.cumsum(c), np.dot(c, a), \
        c.astype(np.complex64)


@pytest.mark.parametrize("target", TARGETS)
def test_new_arrays_and_views(target):
    check(new_arrays, 7, 1.5 - 2j, target=target)


def strided(x):
    out = np.empty(x.shape[0], x.dtype)
    for i in prange(x.shape[0]):
        out[i] = x[i, 1] * 2
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_strided_and_fortran_arguments(target):
    x = finite_values(np.complex128, 3 * 41).reshape(41, 3)
    check(strided, x, target=target)
    check(strided, np.asfortranarray(x), target=target)
    check(strided, x[::2], target=target)


def returns_scalar_and_array(x):
    return x[0] * 2, x + 1, x[1]


@pytest.mark.parametrize("target", TARGETS)
def test_results(target):
    for dtype in COMPLEX_TYPES:
        check(returns_scalar_and_array, finite_values(dtype, 5), target=target)


# -- what is refused ---------------------------------------------------------------

def ordering(a, b):
    for i in prange(a.shape[0]):
        a[i] = np.expm1(b[i])
    return a


def scatter(h, k, z):
    for i in prange(k.shape[0]):
        h[k[i]] += z[i]
    return h


def own_elements(h, z):
    for i in prange(h.shape[0]):
        h[i] += z[i]
        h[i] *= 2
    return h


@pytest.mark.parametrize("target", TARGETS)
def test_updates_of_own_elements(target):
    check(own_elements, finite_values(np.complex128, 101), finite_values(np.complex64, 101),
          target=target)


@pytest.mark.parametrize("fn, args, construct", [
    (scatter, (np.zeros(3, np.complex128), np.array([0, 1, 0, 2]), np.ones(4, np.complex128)),
     "updating elements of the complex array 'h'"),
    (ordering, (np.ones(3, np.complex128), np.ones(3, np.complex128)),
     "np.expm1 of complex numbers"),
])
def test_refused_with_the_construct_named(fn, args, construct):
    with pytest.raises(UnsupportedConstructError, match=construct):
        numba_mlir_gpu.njit(target="cpu", fallback=False)(fn)(*args)


# -- GPU code without a GPU --------------------------------------------------------

def test_complex_prange_kernels_compile_to_ptx():
    x = finite_values(np.complex128, 37)
    ptx = all_ptx(compile_only(prange_body, x, x.copy()))
    assert len(entries(ptx)) == 1
    assert "div.rn.f64" in ptx
    x32 = finite_values(np.complex64, 37)
    ptx = all_ptx(compile_only(prange_functions, x32))
    assert len(entries(ptx)) == 1
    # reductions: the tree reduction shuffles both parts
    ptx = all_ptx(compile_only(sum_reduction, x))
    assert len(entries(ptx)) == 1 and "shfl.sync.bfly" in ptx


# -- device arrays (GPU machine) ---------------------------------------------------

def device_saxpy(a, x, y):
    for i in prange(x.shape[0]):
        y[i] = a * x[i] + y[i]
    return y.sum()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", COMPLEX_TYPES, ids=lambda d: d.__name__)
def test_device_arrays(dtype):
    """CuPy complex arrays are used in place; the reduction folds both parts."""
    cp = pytest.importorskip("cupy")
    x, y = finite_values(dtype, 1031), finite_values(dtype, 1031, seed=5)
    a = dtype(0.5 - 2j)
    expected_total = numba.njit(device_saxpy)(a, x, y_ref := y.copy())
    dx, dy = cp.asarray(x), cp.asarray(y)
    total = numba_mlir_gpu.njit(target="gpu")(device_saxpy)(a, dx, dy)
    assert_close(dy.get(), y_ref, atol=1e-5 if dtype == np.complex64 else 1e-13)
    assert_close(total, expected_total, rtol=1e-4 if dtype == np.complex64 else 1e-12)


# -- the differential sweep's complex entries (testing/differential.py) --------------

COMPLEX_PARAMS = D.complex_grid()


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("param", COMPLEX_PARAMS, ids=[D.param_id(p) for p in COMPLEX_PARAMS])
def test_sweep(param, target):
    """Each entry of D.COMPLEX_ENTRIES over the sweep's layouts, shapes, forms and
    complex special values (pairs of float specials), against Numba."""
    if target == "gpu" and not D.compiles_kernels(param[0]):
        pytest.skip("scalar forms only")
    result = D.run_param(param, target)
    assert result.ok, result.report()
    assert result.cases, f"{D.param_id(param)}: no case ran"


def test_sweep_tolerates_only_what_is_explained():
    """The complex log's real part is log|z|: an ulp of |z| moves it by eps
    absolute (tolerated near |z| = 1, where it is small), more is not; the
    signs of infinities Numba copies from NaNs are documented for the
    functions that do so, other sign differences are not."""
    tol = D.TOLERANCES["c_log"]
    near_one = np.array([0.008713619184835732 - 0.0345j])
    one_eps = near_one + np.finfo(np.float64).eps
    assert D._compare_complex(one_eps, near_one, tol, [near_one])[0] is None
    assert D._compare_complex(one_eps, near_one, D.TOLERANCES["c_libm"], [near_one])[0]
    assert D._compare_complex(near_one + 1e-14, near_one, tol, [near_one])[0]
    signs = ("[0] ours np.complex64(inf+infj) expected np.complex64(-inf-infj); "
             "[7] ours np.complex64(inf-infj) expected np.complex64(-inf+infj)")
    values = "[0] ours np.complex64(inf+infj) expected np.complex64(1+infj)"
    cos = D._match(D.DOCUMENTED, "np.cos", "complex64", "array c1", signs)
    assert cos is not None and "NaN" in cos[4]
    assert D._match(D.DOCUMENTED, "np.cos", "complex64", "array c1", values) is None
    assert D._match(D.DOCUMENTED, "np.sqrt", "complex64", "array c1", signs) is None
