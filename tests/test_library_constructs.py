"""Constructs of the libraries of docs/libraries.md that failed through our
pipeline and not with stock Numba, each reduced to a few lines and compared
with numba.njit (the library run that found it is named in each test)."""
from __future__ import annotations

import heapq
import warnings

import numba
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import FallbackWarning
from numba_mlir_gpu.api import inspect_path, njit


def ours(fn):
    return njit(target="cpu", fallback=True, unsupported_loops="cpu")(fn)


# -- A2: Numba's array analysis merged n + 1 and n - 1 (frontend/numba_fixes.py) ----------

def _linspace_into_slice(n):
    out = np.zeros(n - 1)
    out[:] = np.linspace(0.0, 1.0, n + 1)[1:-1]
    return out


def _linspace_rows(lo, hi, n):
    # pyts' MultipleCoefficientBinning / KBinsDiscretizer (prange without parallel=True)
    out = np.zeros((lo.shape[0], n - 1))
    for i in prange(lo.shape[0]):
        out[i] = np.linspace(lo[i], hi[i], n + 1)[1:-1]
    return out


def _offsets(n):
    m = n + 1
    d = m - 1                      # d == n: merges the names at equal offsets from n
    out = np.zeros(n - 1)
    out[:] = np.ones(m)[1:-1]      # n - 1 elements, not n + 1
    return out.sum() + d


def test_linspace_slice_assigned():
    for n in (2, 5, 9):
        # np.linspace as Numba's parfor version computes it: within an ulp of the serial one
        np.testing.assert_allclose(ours(_linspace_into_slice)(n),
                                   numba.njit(_linspace_into_slice)(n), rtol=1e-15)


def test_linspace_slice_assigned_in_prange_rows():
    lo, hi = np.array([0.0, -1.0, 2.0]), np.array([1.0, 1.0, 5.0])
    for n in (3, 6):
        got = ours(_linspace_rows)(lo, hi, n)
        np.testing.assert_allclose(got, numba.njit(_linspace_rows)(lo, hi, n), rtol=1e-15)


def test_sizes_at_opposite_offsets_stay_apart():
    compiled = ours(_offsets)
    for n in (3, 7):
        assert compiled(n) == numba.njit(_offsets)(n)
    assert inspect_path(compiled).path == "mlir"


def test_stock_numba_keeps_its_own_array_analysis():
    """The correction is scoped to our pipelines: numba.njit(parallel=True) in the
    same process is Numba as shipped (when this fails, Numba has fixed its bug and
    numba_fixes.py can go)."""
    with pytest.raises(AssertionError, match="do not match"):
        numba.njit(parallel=True)(_linspace_into_slice)(5)


# -- Numba issue 10132: copy cycles in the reduction analysis (frontend/numba_fixes.py) -----

# The reproducer and the k-means shape fail in stock Numba on Python 3.12 (the GPU
# machine's); on 3.11 the CPU campaign's seed 1009553 does (tests/test_generated_programs.py).

def _count_nibbles_over_5(arr):          # the reproducer
    s = 0
    for j in prange(len(arr)):
        count_ = 0
        number = arr[j]
        for i in range(60, -4, -4):
            value = (number >> np.uint64(i)) & np.uint64(0xf)
            if value > 5:
                count_ += 1
        s += count_
    return s


def _nearest_total(points, centroids, labels):
    """A k-means assignment with a running best value and its index, and a
    reduction over the outer loop (the shape issue 15 names)."""
    total = 0.0
    for i in prange(points.shape[0]):
        best = np.inf
        best_c = -1
        for c in range(centroids.shape[0]):
            d = 0.0
            for t in range(points.shape[1]):
                diff = points[i, t] - centroids[c, t]
                d += diff * diff
            if d < best:
                best = d
                best_c = c
        labels[i] = best_c
        total += best
    return total


def _continue_then_max(A, x):            # generated-program seed 1009553, reduced
    s = 0.0
    for i in prange(A.shape[0]):
        c = 0.0
        for j in range(A.shape[1]):
            if A[i, j] < 0.5:
                continue
            c = max(c, A[i, j] / (1.0 + abs(x[j])))
        s -= c
    return s


@pytest.mark.parametrize("target", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_reduction_with_copy_cycles(target):
    rng = np.random.default_rng(3)
    arr = rng.integers(0, 1 << 60, 1000, dtype=np.uint64)
    assert njit(target=target)(_count_nibbles_over_5)(arr) == \
        numba.njit(_count_nibbles_over_5)(arr)
    points, centroids = rng.random((301, 3)), rng.random((17, 3))
    got_labels, want_labels = np.zeros(301, np.int64), np.zeros(301, np.int64)
    got = njit(target=target)(_nearest_total)(points, centroids, got_labels)
    want = numba.njit(_nearest_total)(points, centroids, want_labels)
    np.testing.assert_array_equal(got_labels, want_labels)
    assert abs(got - want) <= 1e-12 * abs(want)
    A, x = rng.random((40, 33)), rng.standard_normal(33)
    got = njit(target=target)(_continue_then_max)(A, x)
    want = numba.njit(_continue_then_max)(A, x)
    assert abs(got - want) <= 1e-12 * abs(want)


def test_a_remaining_cycle_is_a_clear_error(monkeypatch):
    """Should the analysis still meet a cycle without the copies, the function
    is refused with an error naming it (frontend/numba_fixes.py)."""
    import numba_mlir_gpu
    from numba_mlir_gpu.frontend import numba_fixes

    def still_cyclic(*args):
        raise AssertionError("unexpected cycle in lookup()")
    monkeypatch.setattr(numba_fixes, "_numba_get_reduce_nodes", still_cyclic)
    with pytest.raises(numba_mlir_gpu.UnsupportedConstructError, match="Numba issue 10132"):
        njit(target="cpu", fallback=False)(_continue_then_max)(np.ones((3, 3)), np.ones(3))


# -- A3: a loop left to Numba's CPU lowering keeps the function's `locals` (fallback.py) ----

_IDX = np.array([3, 1, 2, 0], dtype=np.int64)


def _heap_of_declared_int32(n):
    # pynndescent's sparse search_closure: `locals={"candidate": int32}`, candidates read
    # from an int64 array, pushed as (float32, int32) tuples; the empty list in the body
    # sends the loop to Numba's CPU lowering
    out = np.zeros(n, dtype=np.int32)
    for i in prange(n):
        seed = [(np.float32(np.inf), np.int32(-1)) for j in range(0)]
        for j in range(_IDX.shape[0]):
            candidate = _IDX[j]
            d = np.float32(candidate * 0.5 + i)
            heapq.heappush(seed, (d, candidate))
        dv, v = heapq.heappop(seed)
        out[i] = v + np.int32(dv)
    return out


def test_loop_on_numba_cpu_lowering_keeps_locals():
    declared = {"candidate": numba.types.int32, "d": numba.types.float32}
    compiled = njit(target="cpu", fallback=True, unsupported_loops="cpu",
                    locals=declared)(_heap_of_declared_int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        got = compiled(5)
    np.testing.assert_array_equal(got, numba.njit(locals=declared)(_heap_of_declared_int32)(5))
    path = inspect_path(compiled)
    assert path.path == "fallback" and [loop.path for loop in path.loops] == ["numba-cpu"]


# -- a variable read before assignment on some path: `v = null()` (lowering/expressions.py) --

def _assigned_on_first_iteration(x):
    # stumpy's _compute_diagonal: `cov` is computed at i == 0 and updated after
    s = 0.0
    for i in range(x.shape[0]):
        if i == 0:
            c = x[0]
        else:
            c = c + x[i]
        s += c
    return s


def _null_in_prange_body(x, flags):
    out = np.zeros(x.shape[0])
    for r in prange(x.shape[0]):
        for i in range(x.shape[1]):
            if i == 0:
                c = x[r, 0]
                n = 1
                seen = flags[r]
            else:
                c = c + x[r, i]
                n = n + 1
                seen = seen or flags[r]
        out[r] = c / n + seen
    return out


def test_variable_assigned_on_first_iteration():
    x = np.arange(1.0, 7.0)
    compiled = ours(_assigned_on_first_iteration)
    assert compiled(x) == numba.njit(_assigned_on_first_iteration)(x)
    assert inspect_path(compiled).path == "mlir"


def test_variables_assigned_on_first_iteration_in_prange_body():
    x = np.arange(12.0).reshape(3, 4)
    flags = np.array([True, False, True])
    compiled = ours(_null_in_prange_body)
    np.testing.assert_array_equal(compiled(x, flags),
                                  numba.njit(_null_in_prange_body)(x, flags))
    assert inspect_path(compiled).path == "mlir"


# -- stumpy's _compute_diagonal: `.itemsize` (rules/arrays.py) and a string argument given as a
#    literal compared with a literal (lowering/expressions.py) ----------------------------------

@numba.njit
def _shift_insert(a, idx, v, shift="right"):
    if shift == "left":
        if 0 < idx <= len(a):
            a[: idx - 1] = a[1:idx]
            a[idx - 1] = v
    else:
        if 0 <= idx < len(a):
            a[idx + 1:] = a[idx:-1]
            a[idx] = v


def _shifts(a, b, v):
    _shift_insert(a, 2, v, shift="right")
    _shift_insert(b, 2, v, shift="left")
    _shift_insert(a, 1, v)
    return a.itemsize + b[1:].itemsize


def _itemsizes_in_prange(x, y):
    out = np.zeros(x.shape[0], dtype=np.int64)
    for i in prange(x.shape[0]):
        out[i] = x.itemsize * i + y.itemsize
    return out


def test_string_literal_comparison_and_itemsize():
    for dtype in (np.float64, np.float32, np.int16):
        a, b = np.arange(6, dtype=dtype), np.arange(6, dtype=dtype)
        a2, b2 = a.copy(), b.copy()
        compiled = ours(_shifts)
        assert compiled(a, b, 9) == numba.njit(_shifts)(a2, b2, 9)
        np.testing.assert_array_equal(a, a2)
        np.testing.assert_array_equal(b, b2)
        assert inspect_path(compiled).path == "mlir"
    x, y = np.zeros(4, np.float32), np.zeros(3, np.bool_)
    compiled = ours(_itemsizes_in_prange)
    np.testing.assert_array_equal(compiled(x, y), numba.njit(_itemsizes_in_prange)(x, y))
    assert inspect_path(compiled).path == "mlir"


@numba.njit
def _rank(a, method="average"):
    # pynndescent's rankdata(a, method="average"), called with the default omitted
    if method == "ordinal":
        return a * 2
    if method != "average":
        return a * 3
    return a + 1


def _ranks(x):
    return _rank(x) + _rank(x, "ordinal") + _rank(x, method="max")


def test_omitted_string_default_compared_with_literals():
    x = np.arange(3.0)
    compiled = ours(_ranks)
    np.testing.assert_array_equal(compiled(x), numba.njit(_ranks)(x))
    assert inspect_path(compiled).path == "mlir"


# -- quantecon: omitted tuple and array defaults passed on (lowering/function._rebuild) ----

@numba.njit
def _tolerance_sum(x, options):
    return x * options[0] + options[1]


@numba.njit
def _rows_in_bounds(x, bounds):
    for k in range(bounds.shape[0]):
        x = min(max(x, bounds[k, 0]), bounds[k, 1])
    return x


def _solve(x, args=(), bounds=np.empty((0, 2)), options=(1e-6, 2.0)):
    # quantecon's root finders (`args = tuple(args)`), nelder_mead (`bounds`)
    # and linprog_simplex (`PivOptions`) with their defaults left out
    args = tuple(args)
    y = _rows_in_bounds(x + len(args), bounds)
    return _tolerance_sum(y, options)


def test_omitted_tuple_and_array_defaults_passed_to_callees():
    compiled = ours(_solve)
    assert compiled(2.5) == numba.njit(_solve)(2.5)
    assert inspect_path(compiled).path == "mlir"
    narrow = np.array([[0.0, 1.0]])
    assert compiled(2.5, (1, 2), narrow) == numba.njit(_solve)(2.5, (1, 2), narrow)
