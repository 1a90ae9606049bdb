"""Operators and NumPy ufuncs on arrays outside parfors (in-place operators,
explicit outputs, broadcasting) and ufuncs on scalars, against Numba's njit."""
import numpy as np
import pytest

from .support import TARGETS, check


def inplace_scalar(a):
    a += 1
    a *= 2
    return a


def inplace_array(a, b):
    a -= b
    a /= 4.0
    return a


def inplace_narrowing(a, b):
    a += b            # int32 += int64: computed as int64, stored back as int32
    return a


def broadcast_with_out(a, row, out):
    np.add(a, row, out)


def ufunc_with_out(a, b, out):
    np.add(a, b, out)
    np.multiply(out, 2, out)


def log_with_out(a, out):
    # Numba's dead-code elimination takes np.log for pure whatever its
    # arguments (frontend/numba_fixes.py): out was left unwritten
    np.log(a, out)


def divide_ints(a, b):
    return np.divide(a, b)


def scalar_ufuncs(x, y):
    return np.add(x, y), np.divide(x, y), np.floor_divide(x, y), np.negative(x), \
        np.greater(x, y), np.remainder(x, y)


def inplace_through_view(a):
    r = a[1]
    r += 10
    return a


def unary_on_array(a):
    b = -a
    b += ~np.arange(3)
    return b


CASES = [
    (inplace_scalar, lambda: (np.arange(6.0),)),
    (inplace_scalar, lambda: (np.arange(6, dtype=np.int32),)),
    (inplace_array, lambda: (np.arange(6.0), np.ones(6))),
    (inplace_narrowing, lambda: (np.arange(5, dtype=np.int32), np.arange(5) * 2**31)),
    (broadcast_with_out, lambda: (np.ones((3, 4)), np.arange(4.0), np.zeros((3, 4)))),
    (ufunc_with_out, lambda: (np.arange(5.0), np.ones(5), np.zeros(5))),
    (log_with_out, lambda: (np.arange(1.0, 6.0), np.zeros(5))),
    (divide_ints, lambda: (np.arange(6), np.array([1, 2, 0, 4, 5, 6]))),
    (scalar_ufuncs, lambda: (7, 2)),
    (scalar_ufuncs, lambda: (-7.5, 2.0)),
    (inplace_through_view, lambda: (np.zeros((3, 2)),)),
    (unary_on_array, lambda: (np.arange(3),)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,make_args", CASES,
                         ids=[f"{f.__name__}{i}" for i, (f, _) in enumerate(CASES)])
def test_elementwise_matches_numba(fn, make_args, target):
    check(fn, *make_args(), target=target)


def broadcast_mismatch(a, b):
    a += b


@pytest.mark.parametrize("target", TARGETS)
def test_shape_mismatch_raises_as_numba_parallel(target):
    """Parfor conversion always runs here, so the error is the one of
    Numba's parallel=True (its shape check), not njit's ValueError."""
    from numba import njit
    from .support import ours
    args = (np.zeros(4), np.ones(3))
    with pytest.raises(AssertionError):
        njit(parallel=True)(broadcast_mismatch)(*args)
    with pytest.raises(AssertionError):
        ours(broadcast_mismatch, target)(*args)


def subtract_row_means(x):
    m = x.sum(axis=1).reshape(x.shape[0], 1)     # (m, 1): broadcast along rows
    x -= m / x.shape[1]
    return x


def scale_columns(x):
    w = np.ones((1, x.shape[1])) * 2.0           # (1, n): broadcast along columns
    x *= w
    return x


def add_row_vector(x, v):
    x += v                                        # (n,) against (m, n)
    return x


def add_plane(x, p):
    x /= p                                        # (n, k) against (m, n, k)
    return x


def add_zero_d(x, z):
    x += z
    return x


BROADCAST_IN_PLACE = [
    (subtract_row_means, lambda: (np.arange(1.0, 13.0).reshape(3, 4),)),
    (scale_columns, lambda: (np.arange(12.0).reshape(3, 4),)),
    (add_row_vector, lambda: (np.arange(12.0).reshape(3, 4), np.arange(4.0))),
    (add_plane, lambda: (np.arange(24.0).reshape(2, 3, 4), np.arange(1.0, 13.0).reshape(3, 4))),
    (add_zero_d, lambda: (np.arange(6.0).reshape(2, 3), np.array(2.5))),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, make_args", BROADCAST_IN_PLACE,
                         ids=lambda c: getattr(c, "__name__", ""))
def test_in_place_operators_broadcast_as_numpy(fn, make_args, target):
    """`A op= B` with B broadcast (size-1 dimensions, fewer dimensions): the
    values of numba.njit. Numba's parallel=True reads B past its end for the
    first two (a wrong result) and refuses the next two."""
    check(fn, *make_args(), target=target)


def test_in_place_broadcasts_compile_for_the_gpu():
    from .test_codegen import compile_only
    for fn, make_args in BROADCAST_IN_PLACE:
        compile_only(fn, *make_args())


def tuple_runtime_index(a, i):
    t = (a[0], a[1], a[2])
    return t[i] + t[-1 - i]


def int_class_call(x):
    return np.int64(x) + np.int32(x * 2)


def ascontiguous(a):
    return np.ascontiguousarray(a[:, 1])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,args", [
    (tuple_runtime_index, (np.arange(3.0), 1)),
    (tuple_runtime_index, (np.arange(3.0), -2)),
    (int_class_call, (3.7,)),
    (ascontiguous, (np.arange(12.0).reshape(3, 4),)),
])
def test_small_gaps_match_numba(fn, args, target):
    check(fn, *args, target=target)


def dtype_type_call(a):
    return a.dtype.type(3) + a[0]


@pytest.mark.parametrize("target", TARGETS)
def test_dtype_type_matches_numba(target):
    check(dtype_type_call, np.arange(3, dtype=np.int16), target=target)


def compare_mixed_signedness(a, b):
    return np.greater(a, b), a <= b


def add_bool_arrays(a, b):
    return a + b, a * b


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,args", [
    (compare_mixed_signedness, (np.array([1, 4, 0, 2**63], dtype=np.uint64),
                                np.array([1, -3, 2, -1], dtype=np.int64))),
    (add_bool_arrays, (np.array([True, False, True, False]), np.array([True, True, False, False]))),
])
def test_numpy_loops_of_mixed_and_boolean_types_match_numba(fn, args, target):
    check(fn, *args, target=target)
