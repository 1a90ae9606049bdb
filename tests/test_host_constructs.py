"""Small host constructs that used to send whole functions to the fallback
(docs/libraries.md, B2 and B5): np.round, tuple comparisons in NumPy's
implementations, operator functions called as values, `v in array`,
`.strides`, a range chosen in two branches, `zip`, `np.ndenumerate`, tuples
of arrays indexed at run time, np.iinfo / np.finfo and
numba.get_num_threads(). Each is compared with numba.njit's result, and the
whole function must go through MLIR (no fallback); in prange bodies too, and
compiled for the GPU (target "compile-only": built, not run)."""
from __future__ import annotations

import collections
import copy
import operator

import numba
import numpy as np
import pytest
from numba import literal_unroll, prange

from numba_mlir_gpu.api import inspect_path, njit


def _compare(got, expected, exact: bool) -> None:
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _compare(g, e, exact)
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (got, expected)
    if exact or not np.issubdtype(e.dtype, np.floating):
        np.testing.assert_array_equal(g, e)
    else:
        np.testing.assert_allclose(g, e, rtol=1e-12)


def same(fn, *args, exact: bool = True, parallel: bool = False):
    """`fn` through ours (CPU) and through numba.njit on copies of `args`:
    equal results and arguments afterwards, and no fallback."""
    ours_args, ref_args = copy.deepcopy(args), copy.deepcopy(args)
    expected = numba.njit(parallel=parallel)(fn)(*ref_args)
    compiled = njit(target="cpu", fallback=False)(fn)
    got = compiled(*ours_args)
    _compare(got, expected, exact)
    for g, e in zip(ours_args, ref_args):
        if isinstance(e, np.ndarray):
            _compare(g, e, exact)
    path = inspect_path(compiled)
    assert path.path == "mlir", path.reason
    return got


def builds_for_gpu(fn, *args):
    """Compiled for the GPU without running it: no construct of `fn` is
    refused there (host-only calls in kernels would be)."""
    compiled = njit(target="compile-only", fallback=False)(fn)
    with pytest.raises(RuntimeError):
        compiled(*args)
    assert inspect_path(compiled).path == "mlir"


# -- np.round (Numba's _np_round_float intrinsic, its array loop over ndenumerate) ----

def round_scalar(x, d):
    return np.round(x, d), np.round(x)


def round_array(a):
    return np.round(a, 2), np.round(a), np.round(a, -1)


def round_into(a, out):
    np.round(a, 3, out)
    return out


def round_in_prange(a):
    out = np.empty_like(a)
    for i in prange(a.shape[0]):
        out[i] = np.round(a[i], 2) + np.round(a[i])
    return out


@pytest.mark.parametrize("x", [1.23456, -2.5, 2.5, 0.125, 1e300, -0.0, np.inf, np.nan, 123.456])
@pytest.mark.parametrize("d", [0, 2, -1])
def test_round_scalar(x, d):
    same(round_scalar, x, d)


def test_round_array():
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.25, 3.14159, 2.675, 1e10 / 3, np.nan, -np.inf])
    same(round_array, a)
    same(round_array, a.reshape(2, 5))
    same(round_array, a.reshape(2, 5).T)          # a Fortran-ordered view
    same(round_array, np.arange(-7, 7).reshape(2, 7))   # integers (exact)
    same(round_into, a, np.zeros(10))
    same(round_array, np.zeros((0, 3)))


def test_round_in_prange():
    a = np.linspace(-3.0, 3.0, 41) * 1.111
    same(round_in_prange, a, parallel=True)
    builds_for_gpu(round_in_prange, a)


# -- tuple comparisons (the operator on UniTuple inside NumPy's implementations) -----

def tuple_compare(a, b):
    s, t = a.shape, b.shape
    return (s == t, s != t, s < t, s <= t, s > t, s >= t,
            s == (), (1, 2.0) < (1, 3), (1, 2, 3) > (1, 2), (2, 1) <= (1, 5),
            (np.nan, 1.0) < (np.nan, 2.0), a.shape[:1] + (4,) == (a.shape[0], 4))


def tuple_contains(a, v):
    return v in a.shape, 3 in (1, 2, 3), 2.5 in (1, 2, 3)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (3, 5)), ((2, 9), (3, 1)),
                                    ((4, 4), (4, 2))])
def test_tuple_comparisons(shapes):
    a, b = (np.zeros(s) for s in shapes)
    same(tuple_compare, a, b)
    same(tuple_contains, a, 4)


# -- operator functions called as values (np.ptp) -----------------------------------

def ptp(a):
    return np.ptp(a)


def apply_operators(x, y):
    ops = (operator.gt, operator.lt, operator.add, operator.mul, operator.sub)
    return (ops[0](x, y), ops[1](x, y), ops[2](x, y), ops[3](x, y), ops[4](x, y),
            operator.neg(x), operator.eq(x, y))


def ptp_in_prange(a):
    out = np.zeros(a.shape[0])
    for i in prange(a.shape[0]):
        out[i] = np.ptp(a[i])
    return out


def test_ptp_and_operator_values():
    same(ptp, np.array([3.0, -1.5, 7.25, 0.0]))
    same(ptp, np.array([3, -1, 9], dtype=np.int32))
    same(ptp, np.array([1.0, np.nan, 3.0]))
    same(ptp, np.arange(12.0).reshape(3, 4)[:, ::2])
    same(apply_operators, 3, 5)
    same(apply_operators, 2.5, -1.0)
    a = np.arange(20.0).reshape(4, 5) ** 1.5
    same(ptp_in_prange, a, parallel=True)
    builds_for_gpu(ptp_in_prange, a)


def apply_inplace_operators(a, b, x, y):
    operator.iadd(a, b)
    operator.imul(a, 2.0)
    operator.itruediv(a[1:], b[:-1])
    r = operator.isub(a, 1.0)
    return r, operator.ifloordiv(x, y), operator.imod(x, y), operator.ipow(x, 2), \
        operator.ixor(x, y), operator.ilshift(x, 3)


def test_inplace_operator_functions():
    """operator.iadd(a, b) called as a function: updates and returns an
    array, as `a += b`; on scalars the plain operator (Numba's test_ufuncs
    calls them so)."""
    same(apply_inplace_operators, np.array([-1.0, 1.5, 3.0]), np.array([-5.0, 0.5, 2.5]),
         7, -3)


Pair = collections.namedtuple("Pair", ("part0", "part1"))


def named_tuples_by_keyword(a):
    t = Pair(part0=3, part1=4)
    v = Pair(part1=8, part0=1)
    for i in prange(a.shape[0]):
        a[i] += t.part0 + t.part1 + v.part0
    return a, v.part1 - v.part0


def named_tuples_mixed(x):
    u = Pair(x, part1=2.5)
    return u, u.part1 - u.part0


def test_named_tuples_built_with_keywords():
    """Numba's test_parfors namedtuple tests: keywords in any order, after
    positional fields too (host code only there: Numba's array analysis, in
    the parallel=True reference, asserts on that form)."""
    same(named_tuples_by_keyword, np.arange(10.0), parallel=True)
    builds_for_gpu(named_tuples_by_keyword, np.arange(10.0))
    same(named_tuples_mixed, 7.0)


# -- `v in array` --------------------------------------------------------------------

def contains(a, v):
    return v in a


def contains_in_prange(a, vs):
    out = np.zeros(vs.shape[0], dtype=np.bool_)
    for i in prange(vs.shape[0]):
        out[i] = vs[i] in a
    return out


@pytest.mark.parametrize("v", [3, 7, -1, 2.0, 2.5])
def test_contains(v):
    same(contains, np.array([5, 3, 9, 2]), v)
    same(contains, np.array([5.0, 3.0, 9.0, 2.0]).reshape(2, 2), v)
    same(contains, np.array([1.0, np.nan]), v)
    same(contains, np.zeros(0), v)


def test_contains_in_prange():
    a, vs = np.arange(0, 40, 3), np.arange(20)
    same(contains_in_prange, a, vs, parallel=True)
    builds_for_gpu(contains_in_prange, a, vs)


# -- .strides --------------------------------------------------------------------------

def strides(a):
    return a.strides, a.strides[0]


def test_strides():
    base = np.arange(24.0).reshape(4, 6)
    for a in (base, base[:, ::2], base[::-1], np.asfortranarray(base), base.T,
              np.arange(10, dtype=np.int32)[::3].reshape(1, 4)[:, 1:],
              np.ones((3, 2), dtype=np.bool_)):
        same(strides, a)


# -- a range object assigned in two branches ---------------------------------------

def range_in_branches(x, g):
    r = range(0, x.shape[0]) if g >= 0 else range(-g, x.shape[0])
    s = 0.0
    for i in r:
        s += x[i]
    return s


def range_reassigned(n, step):
    r = range(n)
    if step > 1:
        r = range(1, n, step)
    elif step < 0:
        r = range(n, 0, step)
    total = 0
    for i in r:
        total = total * 3 + i
    return total


def range_in_prange(x, gs):
    out = np.zeros(gs.shape[0])
    for j in prange(gs.shape[0]):
        g = gs[j]
        r = range(0, x.shape[0]) if g >= 0 else range(-g, x.shape[0])
        s = 0.0
        for i in r:
            s += x[i]
        out[j] = s
    return out


def test_range_in_branches():
    x = np.arange(1.0, 8.0) ** 2
    for g in (-3, 0, 2, -7):
        same(range_in_branches, x, g)
    for step in (-2, -1, 0, 1, 3):
        same(range_reassigned, 10, step)
    gs = np.array([-2, 0, 3, -5, -7])
    same(range_in_prange, x, gs, parallel=True)
    builds_for_gpu(range_in_prange, x, gs)


# -- zip and np.ndenumerate -------------------------------------------------------

def zip_arrays(a, b):
    s = 0.0
    for u, v in zip(a, b):
        s += u * v
    return s


def zip_mixed(a, n):
    out = np.zeros(a.shape[0], dtype=np.int64)
    for k, (i, x) in enumerate(zip(range(5, n), a)):
        out[k] = i * 10 + x
    return out


def zip_three(a, b, c):
    total = 0
    for x, y, z in zip(a, b, c):
        total += x * y - z
    return total


def zip_in_prange(a, b):
    out = np.zeros(a.shape[0])
    for i in prange(a.shape[0]):
        s = 0.0
        for u, v in zip(a[i], b[i]):
            s += u - v
        out[i] = s
    return out


def ndenumerate_sum(a):
    s = 0.0
    for idx, v in np.ndenumerate(a):
        s += v * (idx[0] + 1) + idx[-1]
    return s


def test_zip_and_ndenumerate():
    a, b = np.arange(5.0), np.arange(3.0, 10.0)
    same(zip_arrays, a, b)
    same(zip_arrays, b, a)
    same(zip_arrays, a, np.zeros(0))
    same(zip_mixed, np.arange(8), 9)
    same(zip_three, np.arange(6), np.arange(4) * 2, np.ones(5, dtype=np.int64))
    m, n = np.arange(12.0).reshape(3, 4), np.ones((3, 5))
    same(zip_in_prange, m, n, parallel=True)
    builds_for_gpu(zip_in_prange, m, n)
    same(ndenumerate_sum, m)
    same(ndenumerate_sum, m.T)
    same(ndenumerate_sum, np.zeros((0, 4)))


# -- np.ndindex, and Numba's np.partition / np.argpartition that loop over it ------

def ndindex_of_a_shape(a):
    s = 0.0
    for idx in np.ndindex(a.shape):
        s += a[idx] * (idx[0] + 1)
    return s


def ndindex_of_sizes(n, m):
    c = 0
    for i, j in np.ndindex(n, m):
        c += i * 10 + j
    return c


def ndindex_in_prange(a):
    out = np.zeros(a.shape[0])
    for i in prange(a.shape[0]):
        for j, k in np.ndindex(a.shape[1], a.shape[2]):
            out[i] += a[i, j, k] * j - k
    return out


def partitions(a, k):
    return np.partition(a, k), np.argpartition(a, k)


def test_ndindex_and_the_partitions():
    a = np.arange(24.0).reshape(2, 3, 4)
    same(ndindex_of_a_shape, a)
    same(ndindex_of_a_shape, a[:, ::2].T)
    same(ndindex_of_a_shape, np.zeros((0, 3)))
    same(ndindex_of_sizes, 3, 4)
    same(ndindex_of_sizes, 0, 4)
    same(ndindex_in_prange, a, parallel=True)
    builds_for_gpu(ndindex_in_prange, a)
    same(partitions, np.array([5.0, 1, 4, 2, 3, 0.5]), 2)
    same(partitions, np.arange(12.0)[::-1].reshape(3, 4).copy(), 1)
    same(partitions, np.array([3, 1, 2], dtype=np.int64), -1)


# -- enumerate with a start, for loops over homogeneous tuples (issue 15, item 3) ------

def enumerate_from(a, start):
    s = 0.0
    last = -100
    for i, x in enumerate(a, start):
        s += i * x
        last = i
    for i, x in enumerate(a[::-1], -3):
        s -= i * x
    return s, last


def tuple_loops(a, k):
    s = 0.0
    for w in (0.5, -2.0, 3.25):          # UniTuple(float64 x 3)
        s = s * w + a[0]
    for m in (k, k + 1, 2 * k):          # items computed at run time
        s += m * a[-1]
    for v in literal_unroll((1, 7, -4)):  # homogeneous: an ordinary loop
        s -= v
    return s


def tuple_loop_in_prange(a, k):
    out = np.empty(a.shape[0])
    for i in prange(a.shape[0]):
        t = 0.0
        for j, w in enumerate((1.5, -0.5, k), 1):
            t += j * w * a[i]
        out[i] = t
    return out


def test_enumerate_start_and_tuple_loops():
    a = np.arange(1.0, 6.0)
    same(enumerate_from, a, 10)
    same(enumerate_from, a, -7)
    same(enumerate_from, np.zeros(0), 3)
    same(tuple_loops, a, 3)
    same(tuple_loops, a[::2], -5)
    same(tuple_loop_in_prange, a, 2.5, parallel=True)
    builds_for_gpu(tuple_loop_in_prange, a, 2.5)


# -- a tuple of arrays indexed at run time ----------------------------------------------

def tuple_of_arrays(a, b, k):
    t = (a, b)
    return t[k].sum() + t[-1][0]


def tuple_of_views(a, b, k):
    t = (a[::1], b[::2])
    return t[k].sum(), t[k].shape[0]


def tuple_write(a, b, k):
    t = (a, b)
    t[k][0] = 100.0
    return t[k]


def tuple_in_prange(a, k):
    t = (a, a + 1.0, np.ones(a.shape[0]))
    out = np.zeros(a.shape[0])
    for i in prange(a.shape[0]):
        out[i] = t[k][i] * 2
    return out


def test_tuple_of_arrays_at_run_time():
    a, b = np.arange(3.0), np.arange(3.0, 9.0)
    for k in (0, 1, -1, -2):
        same(tuple_of_arrays, a, b, k)
        same(tuple_of_views, a[::-1], b, k)
        same(tuple_write, a, b, k)
        same(tuple_in_prange, a, k, parallel=True)
    with pytest.raises(IndexError):
        njit(target="cpu")(tuple_of_arrays)(a, b, 2)


def tuple_in_kernel(a, b, k):
    t = (a, b)
    out = np.zeros(a.shape[0])
    for i in prange(a.shape[0]):
        out[i] = t[k][i] * 2
    return out


def test_tuple_of_arrays_builds_for_gpu():
    builds_for_gpu(tuple_in_kernel, np.arange(3.0), np.arange(3.0), 1)


# -- np.iinfo / np.finfo, numba.get_num_threads() -----------------------------------------

def machine_limits(x):
    return (np.iinfo(np.int32).max, np.iinfo(np.int16).min, np.iinfo(np.uint64).max,
            np.iinfo(np.int8).bits, np.finfo(np.float32).eps, np.finfo(np.float64).max,
            np.finfo(x.dtype).tiny, np.finfo(x.dtype).precision)


def finfo_fields(x):
    info = np.finfo(x.dtype)
    return info.resolution + info.epsneg, info.nmant, info.minexp


def limits_in_prange(a):
    out = np.zeros(a.shape[0], dtype=np.int64)
    for i in prange(a.shape[0]):
        out[i] = min(a[i], np.iinfo(np.int16).max)
    return out


def num_threads():
    return numba.get_num_threads()


def chunks_per_thread(a):
    n = numba.get_num_threads()
    out = np.zeros(n)
    for t in prange(n):
        for i in range(t, a.shape[0], n):
            out[t] += a[i]
    return out


def test_iinfo_finfo_and_num_threads():
    x = np.zeros(3)
    same(machine_limits, x)
    same(machine_limits, x.astype(np.float32))
    same(finfo_fields, x)
    a = np.array([5, 40000, -3, 2 ** 20])
    same(limits_in_prange, a, parallel=True)
    builds_for_gpu(limits_in_prange, a)
    same(num_threads)
    same(chunks_per_thread, np.arange(50.0), parallel=True, exact=False)


# -- numba.set_num_threads(n) ------------------------------------------------------------

def thread_counts_per_iteration(n):
    """Numba's TestParforReductionSetNumThreads: each iteration sets a count
    and reads it back."""
    acc = 0
    numba.set_num_threads(n)
    for i in prange(2 * n + 3):
        numba.set_num_threads(1 + i % n)
        acc += numba.get_num_threads()
    return acc


def set_then_get(n):
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    return before, numba.get_num_threads()


def test_set_num_threads():
    """Host code sets the calling thread's count in Numba's threading layer
    (numba.get_num_threads() in Python sees it, as after Numba's own code);
    an iteration reads the count it set; out-of-range counts raise Numba's
    ValueError."""
    most = numba.config.NUMBA_NUM_THREADS
    try:
        same(thread_counts_per_iteration, most, parallel=True)
        builds_for_gpu(thread_counts_per_iteration, most)
        compiled = njit(target="cpu", fallback=False)(set_then_get)
        assert compiled(1) == (most, 1) and numba.get_num_threads() == 1
        assert compiled(most) == (1, most)
        for n in (0, most + 1):
            with pytest.raises(ValueError, match=f"between 1 and {most}"):
                compiled(n)
    finally:
        numba.set_num_threads(most)


# -- numba.parallel_chunksize ---------------------------------------------------------------

def chunksize_block(cs, n):
    """Numba's TestParforChunksizing.test_all_iterations_reset_chunksize: every
    iteration runs, and each reads a chunk size of 0 (as Numba's workers)."""
    res = np.zeros(n)
    inner_cs = np.full(n, -13)
    with numba.parallel_chunksize(cs):
        for i in prange(n):
            inner_cs[i] = numba.get_parallel_chunksize()
            res[i] = 13
    return res, inner_cs, numba.get_parallel_chunksize()


def chunksize_around_block(x):
    cs1 = numba.get_parallel_chunksize()
    with numba.parallel_chunksize(x):
        cs2 = numba.get_parallel_chunksize()
    return cs1, cs2, numba.get_parallel_chunksize()


def set_chunksize(n):
    return numba.set_parallel_chunksize(n)


def test_parallel_chunksize():
    """The block sets the calling thread's chunk size in Numba's threading
    layer and restores it; set_parallel_chunksize returns the size before and
    raises Numba's ValueError below 0."""
    try:
        for n in (997, 1000):
            same(chunksize_block, 3, n, parallel=True)
        builds_for_gpu(chunksize_block, 3, 64)
        compiled = njit(target="cpu", fallback=False)(chunksize_around_block)
        assert compiled(8) == (0, 8, 0)
        setter = njit(target="cpu", fallback=False)(set_chunksize)
        assert setter(5) == 0 and numba.get_parallel_chunksize() == 5
        assert setter(0) == 5 and numba.get_parallel_chunksize() == 0
        with pytest.raises(ValueError, match="greater than or equal to zero"):
            setter(-1)
    finally:
        numba.set_parallel_chunksize(0)


# -- f(x, *t) --------------------------------------------------------------------------

@numba.njit
def _weighted(x, y, z):
    return x * y + z


@numba.njit
def _euclidean(x, y):
    result = 0.0
    for i in range(x.shape[0]):
        result += (x[i] - y[i]) ** 2
    return np.sqrt(result)


def spread_arguments(a, t):
    out = np.empty(a.shape[0])
    for i in prange(a.shape[0]):
        out[i] = _weighted(a[i], *t)
    return out, _weighted(a[0], *t) + len(tuple(t))


def distance_function_argument(a, dist, dist_args):
    """Numba's test_parfors test_issue5065: a jitted function passed as an
    argument, called with spread (empty) extra arguments."""
    result = np.zeros((a.shape[0], a.shape[0]), dtype=np.float32)
    for i in prange(a.shape[0]):
        for j in range(i + 1, a.shape[0]):
            d = dist(a[i], a[j], *dist_args)
            result[i, j] = d
            result[j, i] = d
    return result


def test_calls_spreading_a_tuple():
    same(spread_arguments, np.arange(5.0), (2.0, 1.0), parallel=True)
    builds_for_gpu(spread_arguments, np.arange(5.0), (2.0, 1.0))
    points = np.random.default_rng(4).random((7, 2))
    same(distance_function_argument, points, _euclidean, (), parallel=True, exact=False)
    # on the GPU the inner loop spreads over a block, where a callee that may
    # write its arrays is refused: `range(x.shape[0])` in it writes nothing
    builds_for_gpu(distance_function_argument, points, _euclidean, ())


# -- an argument a callee returns is the argument ------------------------------------------

@numba.njit
def _passes_through(arr):
    return arr


@numba.njit
def _scales_in_place(arr, k):
    arr *= k
    return arr, arr.sum()


def returned_by_callees(arr):
    """Numba's test_array_exprs test_issue_1184."""
    c = _passes_through(arr)
    d = _passes_through(arr)
    return c, d


def updated_by_a_callee(arr):
    b, total = _scales_in_place(arr, 2.0)
    return b, total


@pytest.mark.parametrize("target", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_arguments_returned_by_callees_are_the_arguments(target):
    arr = np.arange(10.0)
    c, d = njit(target=target, fallback=False)(returned_by_callees)(arr)
    assert c is arr and d is arr
    b, total = njit(target=target, fallback=False)(updated_by_a_callee)(arr)
    assert b is arr and total == 90.0 and arr[3] == 6.0
