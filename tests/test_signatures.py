"""Explicit signatures, differentially against `numba.njit` with the same
signature: declared return types narrower or wider than what the body
computes (integers, floats, booleans, tuples, arrays), declared argument
types other than the caller's values, and the return forms that reach the
conversion to the declared type in different ways (branches, early returns,
returns after prange loops and reductions, results of jitted calls).

Ours is compiled with `fallback=False`: a construct our lowering refused
would otherwise be hidden by Numba's lowering of the host code. Integers
must match bit for bit, floats within a few ulp; where Numba raises, we
raise the same exception. The data keep every float-to-integer conversion in
range of the declared type (out of range it is undefined, in Numba too);
integer wrapping has a test of its own."""
import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu

from .support import TARGETS, assert_same, this_weeks_half


def ours(sig, fn, target):
    return numba_mlir_gpu.njit(sig, target=target, fallback=False)(fn)


def assert_matches(sig, fn, args_list, target):
    """Compile `fn` for `sig` with Numba and with ours; every argument tuple
    gives the same result (or the same exception), of the same Python type."""
    ref = numba.njit(sig)(fn)
    got_fn = ours(sig, fn, target)
    for args in args_list:
        ref_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        our_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            expected = ref(*ref_args)
        except Exception as exc:     # noqa: BLE001  (we must raise the same)
            with pytest.raises(type(exc)):
                got_fn(*our_args)
            continue
        got = got_fn(*our_args)
        _assert_same_types(got, expected)
        assert_same(got, expected)
        for g, e in zip(our_args, ref_args):
            if isinstance(e, np.ndarray):
                assert_same(g, e, path="argument after the call")


def name(value) -> str:
    """Test ids: functions by name (their repr holds an address, which
    differs between xdist workers)."""
    return getattr(value, "__name__", None) or str(value)


def _assert_same_types(got, expected, path="result"):
    """assert_same lets a 0-d value of another dtype pass; a declared `i4`
    must come back as an int, not a float."""
    if isinstance(expected, tuple):
        for i, (g, e) in enumerate(zip(got, expected)):
            _assert_same_types(g, e, f"{path}[{i}]")
        return
    assert type(got) is type(expected), f"{path}: {type(got).__name__} != {type(expected).__name__}"


# -- return forms over one array argument --------------------------------------

def expression(x):
    return x[0] + x[1]


def if_else(x):
    if x[0] > x[1]:
        return x[0] - x[1]
    else:
        return x[1] * 2


def early_return(x):
    for i in range(x.shape[0]):
        if x[i] < 0:
            return x[i] * 3
    return x[0] + 1


def while_return(x):
    i = 0
    while i < x.shape[0]:
        if x[i] > 5:
            return x[i]
        i += 1
    return 0


def joined_types(x):
    """An int in one branch, a float in the other: the variable is float64."""
    if x[0] > 2:
        r = x[0]
    else:
        r = 1.5
    return r


def element(x):
    """An array element of another dtype than the declared result."""
    return x[2]


def comparison(x):
    return x[0] > x[1]


def constant(x):
    return 1


def mixed_constants(x):
    """float64 constants over float32 (or integer) elements."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * 0.1 + 1e-3
    return s


def after_prange(x):
    s = 0
    for i in prange(x.shape[0]):
        s += x[i]
    return s


def prange_mixed_constants(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i] * 0.1 + 1e-3
    return s


def branch_after_prange(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i] * 0.5
    if s > 10:
        return s - 10
    return s


def element_after_prange(x):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        out[i] = x[i] * 2
    return out[1]


def array_sum(x):
    return x.sum()


@numba.njit(["i4(i8)", "f4(f8)"])
def tripled(v):
    """Declared narrower than the int64 / float64 its body computes."""
    return v * 3


@numba.njit("b1(f4)")
def positive(v):
    return v > 0


@numba.njit("UniTuple(f4, 2)(f8, f8)")
def sum_product(a, b):
    return a + b, a * b


def call_declared(x):
    return tripled(x[0]) + 1


def call_declared_in_prange(x):
    s = 0
    for i in prange(x.shape[0]):
        s += tripled(x[i])
    return s


def call_declared_bool(x):
    return positive(x[0]) and x[1] > 0


# Every declared result type over every element type for the basic forms;
# the other forms over an integer and a float32 array.
RESULT_TYPES = ["i1", "u1", "i8", "f4", "f8", "b1"]
BASIC_FORMS = [expression, if_else, element, mixed_constants, after_prange]
OTHER_FORMS = [early_return, while_return, joined_types, comparison, constant,
               prange_mixed_constants, branch_after_prange, element_after_prange, array_sum,
               call_declared, call_declared_in_prange, call_declared_bool]
ARRAY_SIGNATURES = (
    [(fn, result, element) for fn in BASIC_FORMS for result in RESULT_TYPES
     for element in ["i8", "u1", "f8", "f4"]]
    + [(fn, result, element) for fn in OTHER_FORMS for result in RESULT_TYPES
       for element in ["i8", "f4"]])
DTYPES = {"i8": np.int64, "u1": np.uint8, "f8": np.float64, "f4": np.float32}


def small_values(element: str, result: str) -> np.ndarray:
    """Values whose results fit every declared type; non-negative where the
    result is unsigned (a negative float to an unsigned integer is undefined)."""
    if element.startswith("f"):
        values = [1.25, -2.5, 3.75, 7.0, 0.1]
    else:
        values = [3, 9, -7, 12, 1]
    if result.startswith("u") or element.startswith("u"):
        values = [abs(v) for v in values]
    return np.array(values, dtype=DTYPES[element])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, result, element", this_weeks_half(ARRAY_SIGNATURES), ids=name)
def test_declared_result_of_array_function(fn, result, element, target):
    x = small_values(element, result)
    assert_matches(f"{result}({element}[:])", fn, [(x,), (x[::-1].copy(),)], target)


# -- integers that wrap ----------------------------------------------------------

LARGE = {
    "i8": np.array([2 ** 40 + 3, 2 ** 35 - 7, -(2 ** 33) + 5, 255, -129], dtype=np.int64),
    "i4": np.array([2 ** 30 + 3, 2 ** 29 - 7, -(2 ** 30), 255, -129], dtype=np.int32),
    "u8": np.array([2 ** 63 + 5, 2 ** 62, 2 ** 64 - 1, 255, 129], dtype=np.uint64),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, result, element", this_weeks_half(
    (fn, result, element) for fn in [expression, after_prange, array_sum, call_declared]
    for result in ["i1", "u1", "i2", "u4", "b1", "f4"] for element in LARGE), ids=name)
def test_narrowed_integers_wrap(fn, result, element, target):
    x = LARGE[element]
    assert_matches(f"{result}({element}[:])", fn, [(x,), (x[::-1].copy(),)], target)


# -- scalar arguments declared other than the caller's values ---------------------

def scalar_expression(a, b):
    return a * b + 0.5


def scalar_branches(a, b):
    if a > b:
        return a
    return b


def range_sum(n, f):
    s = 0
    for i in range(n):
        s += i * f
    return s


def range_early_return(n, f):
    for i in range(n):
        if i * f > 5:
            return i
    return 0


def last_index(n, f):
    i = 0
    for i in range(n):
        pass
    return i


def stepped_range(n, f):
    s = 0
    for i in range(n, 0, -1):
        s = s * 2 + i
    return s


def enumerate_range(n, f):
    s = 0
    for k, i in enumerate(range(n)):
        s += k * i
    return s


def prange_scalar(n, f):
    s = 0.0
    for i in prange(n):
        s += i * f
    return s


def while_scalar(n, f):
    while n > 0:
        n -= 1
        f = f * 1.5
    return f


def call_declared_scalar(n, f):
    return tripled(n) + tripled(f)


SCALAR_FORMS = [scalar_expression, scalar_branches, range_sum, range_early_return, last_index,
                stepped_range, enumerate_range, prange_scalar, while_scalar,
                call_declared_scalar]
SCALAR_SIGNATURES = ["f8(i4, f4)", "f4(f8, f8)", "i4(i8, f8)", "i8(i1, f8)", "u2(u4, f4)",
                     "b1(i4, f8)", "i1(u8, f8)", "f8(i2, f4)"]
# Python ints and floats, NumPy scalars of other widths, a bool
SCALAR_ARGUMENTS = [(5, 2.5), (3, 0.5), (np.int64(4), np.float32(1.25)), (True, 2.0)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, sig", this_weeks_half(
    (fn, sig) for fn in SCALAR_FORMS for sig in SCALAR_SIGNATURES), ids=name)
def test_declared_argument_types(fn, sig, target):
    assert_matches(sig, fn, SCALAR_ARGUMENTS, target)


def row_argmax(x, m, out):
    """An int32 loop index (`m` declared `i4`) in a prange body, stored and
    returned narrowed."""
    for i in prange(x.shape[0]):
        best = 0
        for j in range(m):
            if x[i, j] > x[i, best]:
                best = j
        out[i] = best
    return out[1]


def weighted_rows(x, m):
    s = 0.0
    for i in prange(x.shape[0]):
        t = 0.0
        for j in range(m):
            t += x[i, j] * j
        s += t
    return s


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, sig, args", [
    (row_argmax, "i2(f8[:, ::1], i4, i4[:])", (3, np.zeros(4, np.int32))),
    (row_argmax, "f4(f8[:, :], i2, i8[:])", (2, np.zeros(4, np.int64))),
    (weighted_rows, "f4(f8[:, :], i4)", (3,)),
    (weighted_rows, "u8(f8[:, ::1], i1)", (5,)),
], ids=name)
def test_declared_loop_bounds_in_prange_bodies(fn, sig, args, target):
    x = np.random.default_rng(3).random((4, 5))
    assert_matches(sig, fn, [(x,) + args], target)


def checked_division(a, b):
    if b == 0:
        raise ZeroDivisionError("b is zero")
    return a // b


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("sig, args", [
    ("i1(i8, i8)", [(700, 3), (7, 0)]),          # the raise beside a narrowed result
    ("f4(f8, i4)", [(7.5, 2), (7.5, 0)]),
    ("u1(i4, i4)", [(7.5, 2)]),                  # TypeError: no declared signature takes it
])
def test_raises_where_numba_raises(sig, args, target):
    """An explicit raise beside a narrowed result (and a declared signature
    that takes no such arguments)."""
    assert_matches(sig, checked_division, args, target)


def negate(a, b):
    return -a


def test_negated_narrow_unsigned_argument():
    assert_matches("i2(u1, u1)", negate, [(3, 2)], "cpu")


# -- tuples ------------------------------------------------------------------------

def tuple_items(x):
    return x[0] + x[1], x[0] * 1.5


def tuple_branches(x):
    if x[0] > 0:
        return x[0], 1.5
    return 2, x[1]


def tuple_after_prange(x):
    s = 0
    p = 1.0
    for i in prange(x.shape[0]):
        s += x[i]
        p *= 1.01
    return s, p


def tuple_from_call(x):
    return sum_product(x[0], x[1])


def tuple_from_call_unpacked(x):
    a, b = sum_product(x[0], x[1])
    return a - b, a > b


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("element", ["i8", "f4"])
@pytest.mark.parametrize("result", ["Tuple((i4, f4))", "UniTuple(f8, 2)", "UniTuple(i8, 2)",
                                    "Tuple((u1, b1))"])
@pytest.mark.parametrize("fn", [tuple_items, tuple_branches, tuple_after_prange, tuple_from_call,
                                tuple_from_call_unpacked], ids=name)
def test_declared_tuple_result(fn, result, element, target):
    x = small_values(element, "u1")
    assert_matches(f"{result}({element}[:])", fn, [(x,)], target)


# -- arrays ------------------------------------------------------------------------

def scaled_copy(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * 0.1 + 1e-3      # float64 arithmetic stored into x's dtype
    return out


def scaled(x):
    return x * 0.5


def same_array(x):
    return x


def scaled_element(x):
    x[0] = x[1] * 0.1
    return x[0]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, sig", [
    (scaled_copy, "f4[:](f4[:])"),
    (scaled_copy, "f4[::1](f4[::1])"),
    (scaled_copy, "i8[:](i8[::1])"),
    (scaled, "f8[:](f8[::1])"),
    (scaled, "f8[::1](f8[:])"),
    (same_array, "f4[:](f4[::1])"),
    (same_array, "f8[:](f8[:])"),
    (scaled_element, "f8(f4[:])"),
    (scaled_element, "i4(f8[::1])"),
], ids=name)
def test_declared_array_types(fn, sig, target):
    x = np.array([1.25, 2.5, 30.75, 7.0, 0.1])
    x = x.astype({"f4": np.float32, "f8": np.float64, "i8": np.int64}[sig.split("(")[1][:2]])
    assert_matches(sig, fn, [(x,)], target)


# -- Optional ----------------------------------------------------------------------

def maybe_element(x):
    if x[0] > 0:
        return x[0]
    return None


def maybe_add(a, b):
    if b is None:
        return a
    return a + b


OPTIONAL_CASES = [
    (maybe_element, "optional(i4)(i8[:])", [(np.array([3, 4]),), (np.array([-3, 4]),)]),
    (maybe_element, "optional(f4)(f8[:])", [(np.array([0.1, 4.0]),), (np.array([-3.0]),)]),
    (maybe_add, "f8(f8, optional(f4))", [(1.5, None), (1.5, 2.25)]),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fallback", [False, True])
@pytest.mark.parametrize("fn, sig, args", OPTIONAL_CASES, ids=name)
def test_optional_signatures(fn, sig, args, fallback, target):
    """Optional scalar arguments and results of explicit signatures (None
    or a number, narrowed to the declared type) through MLIR, as Numba."""
    ref = numba.njit(sig)(fn)
    got_fn = numba_mlir_gpu.njit(sig, target=target, fallback=fallback)(fn)
    for a in args:
        expected, got = ref(*a), got_fn(*a)
        _assert_same_types(got, expected)
        assert_same(got, expected)


# -- GPU code generation -----------------------------------------------------------

GPU_SIGNATURES = [(fn, f"{result}(f4[:])")
                  for fn in [if_else, after_prange, branch_after_prange, element_after_prange,
                             call_declared_in_prange]
                  for result in ["i1", "u8", "f4", "b1"]]
GPU_SIGNATURES += [(tuple_after_prange, f"{result}(f4[:])")
                   for result in ["Tuple((i4, f4))", "Tuple((u1, b1))"]]


@pytest.mark.parametrize("fn, sig", GPU_SIGNATURES, ids=name)
def test_gpu_code_generation(fn, sig):
    """Without a GPU too: the GPU lowering of the same signatures is valid
    MLIR and PTX (a function with explicit signatures compiles when decorated)."""
    ours(sig, fn, "compile-only")
