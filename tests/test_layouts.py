"""Fortran-ordered results: array expressions, ufuncs, .astype(), np.asfortranarray,
the _like functions and copies of Fortran-ordered arrays. Differential tests
against Numba that also compare the result's memory order (C or Fortran)."""
import numba
import numpy as np
import pytest

from numba_mlir_gpu import inspect_mlir

from .support import TARGETS, check, ours, this_weeks_half
from .test_codegen import all_ptx, compile_only, entries

RNG = np.random.default_rng(7)
F2 = np.asfortranarray(RNG.normal(size=(5, 7)))
F3 = np.asfortranarray(RNG.normal(size=(3, 4, 5)))
C2 = RNG.normal(size=(5, 7))
# Fortran-ordered arrays of each kind: made by NumPy, or the transpose of a C array
FORTRAN_INPUTS = {"f2": F2, "f3": F3, "transposed": C2.T,
                  "int": np.asfortranarray(np.arange(35, dtype=np.int32).reshape(5, 7))}


def add(a, b):
    return a + b


def sine(a):
    return np.sin(a)


def affine(a):
    return 2.0 * a - 1          # broadcasting scalars


def fused(a, b):
    return np.sqrt(a * a + b * b) * np.cos(a)


def greater(a, b):
    return a > b


def negate(a):
    return -a


def where_clip(a, b):
    return np.where(a > b, a, 0.5), np.clip(a, -0.5, b)


def to_int32(a):
    return a.astype(np.int32)


def to_float32(a):
    return a.astype(np.float32)


def fortran(a):
    return np.asfortranarray(a)


EXPRESSIONS = [(add, 2), (sine, 1), (affine, 1), (fused, 2), (greater, 2), (negate, 1),
               (to_int32, "x10"), (to_float32, 1), (to_float32, "mask"), (where_clip, 2)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name, fn, operands", this_weeks_half(
    (name, fn, operands) for name in FORTRAN_INPUTS for fn, operands in EXPRESSIONS),
    ids=lambda v: getattr(v, "__name__", str(v)))
def test_array_expressions_on_fortran_arrays_are_fortran_ordered(target, name, fn, operands):
    a = FORTRAN_INPUTS[name]
    b = np.asfortranarray(a[::-1] * 3)
    assert a.flags.f_contiguous and not a.flags.c_contiguous
    args = {1: (a,), 2: (a, b), "x10": (a * 10,), "mask": (a > 0,)}[operands]
    check(fn, *args, target=target, layout=True)


def row_broadcast(a, b):
    return a + b[0]             # 2-d F with a 1-d row: still F in Numba


def transposed_sum(a, b):
    return a.T + b.T


@pytest.mark.parametrize("target", TARGETS)
def test_mixed_layouts_follow_numba(target):
    c3 = np.ascontiguousarray(F3)
    for args in ((F2, C2), (C2, F2), (F3, c3), (c3, F3)):
        check(add, *args, target=target, layout=True)     # C whenever one side is C
    check(row_broadcast, F2, C2, target=target, layout=True)
    check(transposed_sum, F2, F2, target=target, layout=True)   # F.T is C
    check(transposed_sum, C2, C2, target=target, layout=True)   # C.T is F


def empty_like_shape(a):
    return np.empty_like(a).shape


def likes(a):
    return np.zeros_like(a), np.ones_like(a), np.full_like(a, 3.5)


def copies(a):
    return np.copy(a), a.copy()     # np.copy keeps F; the method gives C


def transposed_result(a):
    return (a + 1).T


@pytest.mark.parametrize("target", TARGETS)
def test_asfortranarray_likes_and_copies(target):
    for a in (C2, F2, F3, C2[:, ::2], np.arange(6.0), RNG.normal(size=(2, 3, 4))):
        check(fortran, a, target=target, layout=True)
        check(likes, a, target=target, layout=True)
        check(copies, a, target=target, layout=True)
        check(transposed_result, a, target=target, layout=True)
    check(empty_like_shape, F3, target=target)


def write_through(a):
    b = np.asfortranarray(a)    # `a` itself when it is Fortran-ordered
    b[0, 0] = 100.0
    return b.sum()


def filled_then_fortran(n):
    x = np.empty((n, 3))
    x[:] = 2.0                  # the copy must see this: not a fresh np.empty any more
    return np.asfortranarray(x)


def fortran_of_empty_temporary(n):
    return np.asfortranarray(np.empty((n, 3))).shape


@pytest.mark.parametrize("target", TARGETS)
def test_asfortranarray_of_new_arrays(target):
    check(filled_then_fortran, 4, target=target, layout=True)
    check(fortran_of_empty_temporary, 4, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_asfortranarray_of_a_fortran_array_is_the_array(target):
    assert numba.njit(fortran)(F2) is F2
    assert ours(fortran, target)(F2) is F2
    check(write_through, F2, target=target)     # the argument is written, as in Numba
    check(write_through, C2, target=target)     # a copy: the argument stays


def chained(a, b):
    c = a * b + 1.0
    d = np.sqrt(np.abs(c)) - a
    return d, c.sum(), np.max(d), d.argmin()


def branches(a, b, flag):
    if flag:
        x = a + b
    else:
        x = a - b
    return x * 2.0


def in_place(a):
    b = a + 1.0
    b += a
    b[0, 1] = -1.0
    return b


def read_in_prange(a):
    b = np.sin(a)
    out = np.empty_like(a)
    for i in numba.prange(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = b[i, j] * (j + 1)
    return out


@numba.njit
def tripled(a):
    return a * 3.0


@numba.njit
def passed_through(a):
    return a


def through_callee(a):
    return tripled(a) + 1.0, tripled(a), passed_through(a) * 2.0, passed_through(a)


@pytest.mark.parametrize("target", TARGETS)
def test_fortran_results_used_in_the_same_function(target):
    for a in (F2, F3):
        check(chained, a, np.asfortranarray(a[::-1]), target=target, layout=True, rtol=1e-12)
        check(in_place, a, target=target, layout=True)
        check(through_callee, a, target=target, layout=True)
    for flag in (True, False):
        check(branches, F2, F2, flag, target=target, layout=True)
    check(read_in_prange, F2, target=target, layout=True)


def test_fortran_result_is_filled_by_the_expression_loop():
    # Numba allocates it as np.asfortranarray(np.empty(...)): no copy loop of its own
    fn = ours(fused, "cpu")
    fn(F2, F2)
    assert inspect_mlir(fn).count("scf.parallel") == 1


def temporaries_in_prange(a):
    out = np.empty(a.shape[0])
    for i in numba.prange(a.shape[0]):
        t = a[i].T * 2.0        # a Fortran-ordered array made in each iteration
        out[i] = t.sum() + t[1, 2]
    return out


def test_fortran_temporaries_in_prange_on_the_cpu():
    # the GPU target refuses allocations inside kernels
    check(temporaries_in_prange, RNG.normal(size=(4, 3, 5)), rtol=1e-12)


def test_compile_only():
    for fn, args in ((fused, (F2, F2)), (to_int32, (F3,)), (fortran, (C2,)),
                     (chained, (F3, F3)), (likes, (F2,)), (branches, (F2, F2, True)),
                     (through_callee, (F2,)), (transposed_result, (C2,))):
        assert entries(all_ptx(compile_only(fn, *args)))
