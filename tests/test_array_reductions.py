"""Array reductions in prange (`acc += arr`, `acc *= arr`), deterministic
per-chunk private copies (on the GPU: one block per chunk, its threads
sharing each iteration's element loops). Also in-place array operators,
which they are built on."""
import math

import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError

from .support import TARGETS, check, ours
from .test_codegen import all_ptx, compile_only


def add_array(n, tmp):
    acc = np.zeros(tmp.shape, np.int_)
    for i in prange(n):
        acc += tmp
    return acc


def multiply_array(n, tmp):
    acc = 2 * np.ones(tmp.shape, np.int_)
    for i in prange(n):
        acc *= tmp
    return acc


def weighted_histogram(x, w):
    h = np.zeros(w.shape[0], np.float32)
    for i in prange(x.shape[0]):
        h += w * x[i]
    return h


def shifted_sum(x, w):
    h = w.copy()
    for i in prange(x.shape[0]):
        h += x[i]          # no temporary array in the body: a GPU kernel too
    return h


def rebinding_sum(x, w):
    h = np.zeros(w.shape[0])
    for i in prange(x.shape[0]):
        h = h + w * x[i]
    return h


def inplace_in_prange_body(a, b):
    out = np.zeros(a.shape[0])
    for i in prange(a.shape[0]):
        acc = np.zeros(3)      # allocation in the body: CPU only
        acc += b
        out[i] = acc[0] + a[i]
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 3, 100, 1001])
def test_integer_array_reductions_are_exact(n, target):
    tmp = np.arange(12).reshape(3, 4)
    check(add_array, n, tmp, target=target)
    check(add_array, n, np.asfortranarray(tmp), target=target)
    check(add_array, n, tmp[:, ::2], target=target)
    check(multiply_array, min(n, 20), np.full((2, 3), 2), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_float_array_reduction(target):
    rng = np.random.default_rng(0)
    check(weighted_histogram, rng.random(10_000), rng.random(7), rtol=1e-5, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_float_array_reduction_is_deterministic(target):
    rng = np.random.default_rng(1)
    x, w = rng.random(100_003), rng.random(5)
    check(shifted_sum, x, w, rtol=1e-9, target=target)
    fn = ours(shifted_sum, target)
    first = fn(x, w)
    assert all(np.array_equal(fn(x, w), first) for _ in range(3))


def subtract_2d(x, acc0):
    acc = acc0.copy()
    for i in prange(x.shape[0]):
        acc -= x[i]
    return acc


def scale_2d(y, shape):
    acc = np.ones(shape)
    for i in prange(y.shape[0]):
        acc *= y[i]
    return acc


def multiply_ints(y, n):
    acc = np.arange(1, n + 1)
    for i in prange(y.shape[0]):
        acc *= y[i]
    return acc


def with_other_statements(x, y, out):
    acc = np.zeros(3, np.int32)
    for i in prange(x.shape[0]):
        out[i] = 2 * x[i]          # item assignments beside the reduction
        y[i] = y[i] + 1            # (a read-modify-write happens once)
        v = x[i] - 3 if x[i] % 2 == 0 else x[i] // 2      # branches in the body
        acc += v
    return acc


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 5, 4097, 50_001])
def test_array_reductions_large_and_tiny_trip_counts(n, target):
    rng = np.random.default_rng(n)
    ints = rng.integers(-100, 100, (n, 1)).reshape(n)
    check(subtract_2d, ints, np.full((3, 40), 7), target=target)                 # exact
    check(subtract_2d, rng.random(n), rng.random((2, 300)), target=target, rtol=1e-9)
    check(scale_2d, 1 + rng.random(n) * 1e-4, (3, 5), target=target, rtol=1e-9)
    check(multiply_ints, rng.integers(-3, 4, n), 9, target=target)              # wraps
    check(shifted_sum, rng.random(n).astype(np.float32), rng.random(70).astype(np.float32),
          target=target, rtol=1e-4)
    x = rng.integers(0, 50, n).astype(np.int32)
    check(with_other_statements, x, x.copy(), np.zeros(n, np.int32), target=target)


def test_gpu_array_reduction_is_one_block_per_chunk():
    """Compile-only: the chunk kernel synchronises its block's threads and
    no kernel allocates."""
    ptx = all_ptx(compile_only(with_other_statements, np.ones(8, np.int32),
                               np.ones(8, np.int32), np.ones(8, np.int32)))
    assert "barrier.sync" in ptx
    assert "malloc" not in ptx


def row_sums(x):
    acc = np.zeros(x.shape[1], x.dtype)
    for i in prange(x.shape[0]):
        acc += x[i]            # a view of a row: copied into a temporary
    return acc


def broadcast_rows(x):
    acc = np.zeros((3, x.shape[1]), x.dtype)
    for i in prange(x.shape[0]):
        acc += x[i]            # each row's copy read by other threads of the block
    return acc


def shaped_like_accumulator(x, y):
    acc = np.ones((3, 4))
    for i in prange(x.shape[0]):
        t = np.ones_like(acc) * x[i]
        acc -= t * 2 - y[i]
    return acc


def scaled_rows(x, s):
    acc = np.ones(x.shape[1])
    for i in prange(x.shape[0]):
        acc *= x[i] * s + 1
    return acc


def rows_with_ufuncs(a, v):
    acc = np.zeros(a.shape[1])
    for i in prange(a.shape[0]):
        acc += a[i] * v[i] + np.sqrt(a[i])
    return acc


def matrix_vector_rows(x, b):
    acc = np.zeros(b.shape[0])
    for i in prange(x.shape[0]):
        acc += np.dot(b, x[i])
    return acc


def strided_rows(x):
    acc = np.zeros((x.shape[1] + 1) // 2, x.dtype)
    for i in prange(x.shape[0]):
        acc += np.where(x[i, ::2] > 0, x[i, ::2], 0)
    return acc


@numba.njit
def _bump(a, i):
    a[i] += 1


@numba.njit
def _twice_first(a):
    return a[0] * 2


def calls_a_writer(x, counts):
    acc = np.zeros(3)
    for i in prange(x.shape[0]):
        _bump(counts, i)
        acc += x[i]
    return acc


def calls_a_reader(x):
    acc = np.zeros(3)
    for i in prange(x.shape[0]):
        acc += _twice_first(x[i:])
    return acc


@pytest.mark.parametrize("target", TARGETS)
def test_calls_in_array_reductions(target):
    check(calls_a_reader, np.arange(40.0), target=target)
    if target == "cpu":
        check(calls_a_writer, np.arange(40.0), np.zeros(40, np.int64))


def test_a_gpu_array_reduction_calling_a_writer_is_refused():
    """Every thread of the block runs the call: it would write once per thread."""
    with pytest.raises(UnsupportedConstructError, match="calling _bump, which may write"):
        numba_mlir_gpu.njit(target="compile-only")(calls_a_writer)(np.ones(4), np.zeros(4))


@numba.njit
def _scale_row(row, out):
    for j in range(row.shape[0]):
        out[j] = 2.0 * row[j]


def rows_through_a_writer(x, out):
    for i in prange(x.shape[0]):
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i, j]
        _scale_row(x[i], out[i])
        out[i, 0] += s


@pytest.mark.parametrize("target", TARGETS)
def test_a_gpu_body_calling_a_writer_runs_one_thread_per_iteration(target):
    """Without array accumulators the body needs no block of its own: where
    its call writes an array it is given, the loop is a plain kernel."""
    x = np.random.default_rng(2).random((7, 45))
    check(rows_through_a_writer, x, np.zeros_like(x), target=target)


def test_a_gpu_body_calling_a_writer_compiles():
    x = np.ones((7, 45))
    compile_only(rows_through_a_writer, x, np.zeros_like(x))


def windowed_dots_every_seventh(T, m, out):
    for t in prange(out.shape[0]):
        s = 0.0
        for d in range(t, T.shape[0] - m):
            if d % 7 == 0:
                s += np.dot(T[d:d + m] - T[d], T[d:d + m] - 1.0)
        out[t] = s


@pytest.mark.parametrize("target", TARGETS)
def test_a_gpu_body_retried_as_a_plain_kernel_raises_through_a_fresh_flag(target):
    """The cooperative try made the error flag of its heap checks before it
    gave up; the plain kernel used that erased flag (MLIR asserted, the
    process aborted). Now it makes its own."""
    T = np.random.default_rng(3).random(300)
    check(windowed_dots_every_seventh, T, 10, np.zeros(21), target=target, rtol=1e-12)
    ptx = all_ptx(compile_only(windowed_dots_every_seventh, T, 10, np.zeros(21)))
    assert "malloc" in ptx and "free" in ptx


def size_depends_on_iteration(x):
    acc = np.zeros(3)
    for i in prange(x.shape[0]):
        t = np.ones(i % 3 + 1)
        t[0] = 2.0
        acc += t.sum() * x[i]
    return acc


def slice_depends_on_iteration(x):
    acc = np.zeros(3)
    for i in prange(x.shape[0]):
        t = x[: i % 3 + 1].copy()      # its slot: as long as x
        t[0] = 1.0
        acc += t[-1] + t[0]
    return acc


def temporary_in_inner_loop(x):
    acc = np.zeros(3)
    for i in prange(x.shape[0]):
        for j in range(2):
            acc += np.ones(3) * (x[i] + j)
    return acc


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 2, 3001])
def test_temporaries_in_array_reductions(n, target):
    rng = np.random.default_rng(n + 7)
    check(row_sums, rng.integers(-9, 9, (n, 33)), target=target)                 # exact
    check(broadcast_rows, rng.integers(-9, 9, (n, 70)), target=target)
    check(row_sums, rng.random((n, 300)).astype(np.float32), target=target, rtol=1e-4)
    check(shaped_like_accumulator, rng.random(n), rng.random(n), target=target, rtol=1e-9)
    check(scaled_rows, rng.random((n, 5)), 1e-4, target=target, rtol=1e-9)
    check(weighted_histogram, rng.random(n), rng.random(7), target=target, rtol=1e-4)
    check(rows_with_ufuncs, rng.random((n, 6)), rng.random(n), target=target, rtol=1e-9)
    check(matrix_vector_rows, rng.random((n, 4)), rng.random((3, 4)), target=target, rtol=1e-9)
    check(strided_rows, rng.integers(-5, 5, (n, 7)), target=target)               # exact


def test_gpu_temporaries_are_scratch_buffers_made_before_the_kernel():
    for fn, args in [(weighted_histogram, (np.ones(8), np.ones(3))),
                     (row_sums, (np.ones((4, 3)),)),
                     (shaped_like_accumulator, (np.ones(4), np.ones(4))),
                     (strided_rows, (np.ones((4, 5)),))]:
        ptx = all_ptx(compile_only(fn, *args))
        assert "barrier.sync" in ptx and "malloc" not in ptx


def size_depends_on_inner_loop(x):
    acc = np.zeros(3)
    for i in prange(x.shape[0]):
        for j in range(1, 3):
            t = x[:j] * 2.0
            acc += t[-1]
    return acc


def size_depends_on_the_data(x):
    acc = np.zeros(3)
    for i in prange(x.shape[0]):
        t = np.ones(int(x[i]) % 3 + 1)
        t[0] = 2.0
        acc += t.sum()
    return acc


@pytest.mark.parametrize("fn", [size_depends_on_the_data, size_depends_on_inner_loop])
def test_gpu_temporaries_sized_by_the_body_are_refused_clearly(fn):
    with pytest.raises(UnsupportedConstructError) as info:
        numba_mlir_gpu.njit(target="compile-only")(fn)(np.ones(8))
    message = str(info.value)
    assert "whose size depends on the data or on variables of the body" in message
    assert "test_array_reductions.py" in message
    check(fn, np.arange(8.0))          # the CPU target runs them


# Temporaries made in a loop inside the body (one slot, reused by each run) and
# inside element loops the block's threads share (one slot per thread).

def distances_in_inner_loop(a, c):
    out = np.empty((a.shape[0], c.shape[0]))
    for i in prange(a.shape[0]):
        for j in range(c.shape[0]):
            d = a[i, :] - c[j, :]
            out[i, j] = np.sqrt((d * d).sum())
    return out


def kmeans_distances(a, c):
    # Numba's test_kmeans: the comprehensions become nested parfors (Numba
    # compiles them with parallel=True only), the inner one an element loop of
    # the block whose body makes a temporary
    n, k = a.shape[0], c.shape[0]
    return np.array([[math.sqrt(np.sum((a[i, :] - c[j, :]) ** 2)) for j in range(k)]
                     for i in range(n)])


def relaxed_rows(x, steps):
    acc = np.zeros(x.shape[1])
    for i in prange(x.shape[0]):
        for s in range(steps):
            t = x[i] * (s + 1.0)
            acc += t - t.mean()
    return acc


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 3, 4099])
def test_temporaries_in_loops_inside_the_body(n, target):
    rng = np.random.default_rng(n + 11)
    a, c = rng.random((n, 10)), rng.random((3, 10))
    check(distances_in_inner_loop, a, c, target=target)
    check(kmeans_distances, a, c, target=target, parallel_reference=True)
    check(temporary_in_inner_loop, rng.random(n), target=target, rtol=1e-12)
    check(relaxed_rows, rng.random((n, 6)), 3, target=target, rtol=1e-9)


# Temporaries whose size depends on the data or the iteration: their slots are
# sized by an upper bound (a mask selects at most its length, a slice at most
# its source).

def masked_means(a, labels, k):
    out = np.empty((k, a.shape[1]))
    for i in prange(k):
        for j in range(a.shape[1]):
            out[i, j] = np.sum(a[labels == i, j]) / max(np.sum(labels == i), 1)
    return out


def nonzero_per_row(x):
    s = 0
    for i in prange(x.shape[0]):
        s += np.nonzero(x[i])[0].sum()      # written by every thread, no store after it
    return s


def bound_through_a_subtraction(x, mask):
    out = np.zeros(x.shape[0])
    for i in prange(x.shape[0]):
        t = x[mask]
        u = np.zeros(x.shape[0] - t.shape[0])    # a bound of t's size bounds nothing here
        out[i] = u.shape[0] + t.sum()
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 5, 3000])
def test_temporaries_sized_by_the_data(n, target):
    rng = np.random.default_rng(n + 13)
    check(masked_means, rng.random((n, 4)), rng.integers(0, 3, n), 3, target=target)
    check(nonzero_per_row, rng.integers(0, 2, (n, 9)), target=target)
    check(slice_depends_on_iteration, rng.random(n), target=target, rtol=1e-12)


def prefix_sums(x):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        t = x[:i + 1] * 2.0            # as long as the iteration number
        out[i] = t.sum()
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 8, 2500])
def test_temporaries_sized_by_the_iteration(n, target):
    """Their slots are as large as the largest size over the loop: a max
    reduction (a kernel) before the chunk kernel."""
    rng = np.random.default_rng(n + 17)
    check(size_depends_on_iteration, rng.random(n), target=target, rtol=1e-12)
    check(prefix_sums, rng.random(n), target=target, rtol=1e-12)


def test_gpu_temporaries_sized_through_a_subtraction_of_a_bound_use_the_device_heap():
    # no scratch slot can be sized for it: a plain kernel whose threads
    # allocate (tests/test_kernel_allocations.py)
    ptx = all_ptx(compile_only(bound_through_a_subtraction, np.ones(6), np.ones(6) > 0))
    assert "malloc" in ptx and "barrier.sync" not in ptx
    rng = np.random.default_rng(14)
    check(bound_through_a_subtraction, rng.random(9), rng.random(9) > 0.5)


def test_gpu_temporaries_in_loops_are_scratch_slots():
    a, c = np.ones((4, 3)), np.ones((2, 3))
    for fn, args in [(distances_in_inner_loop, (a, c)), (kmeans_distances, (a, c)),
                     (temporary_in_inner_loop, (np.ones(4),)),
                     (masked_means, (a, np.zeros(4, np.int64), 2)),
                     (slice_depends_on_iteration, (np.ones(4),)),
                     (prefix_sums, (np.ones(4),)),
                     (nonzero_per_row, (np.ones((4, 3)),))]:
        ptx = all_ptx(compile_only(fn, *args))
        assert "barrier.sync" in ptx and "malloc" not in ptx


@pytest.mark.gpu
def test_scratch_over_budget_runs_fewer_chunks(monkeypatch):
    from numba_mlir_gpu.targets.gpu import scratch
    monkeypatch.setattr(scratch, "SCRATCH_BYTES", 4096)     # a few rows of slots
    rng = np.random.default_rng(12)
    a, c = rng.random((5000, 10)), rng.random((3, 10))
    check(distances_in_inner_loop, a, c, target="gpu")
    check(kmeans_distances, a, c, target="gpu", parallel_reference=True)
    check(weighted_histogram, rng.random(5000), rng.random(7), target="gpu", rtol=1e-4)


def test_inplace_operator_in_a_prange_body():
    check(inplace_in_prange_body, np.arange(5.0), np.ones(3))


def test_array_reductions_compile_for_the_gpu():
    from .test_codegen import entries
    fn = compile_only(shifted_sum, np.ones(8), np.ones(3))
    assert len(entries(all_ptx(fn))) >= 2       # the chunks, then the fold (and the fills)


def test_rebinding_an_array_in_prange_is_a_clear_error():
    with pytest.raises(UnsupportedConstructError, match=r"variable 'h' \(array"):
        ours(rebinding_sum, "cpu")(np.ones(4), np.ones(3))


def inplace_operators(a, b):
    a += b
    a *= 2
    a -= 1
    return a


@pytest.mark.parametrize("target", TARGETS)
def test_inplace_array_operators(target):
    a = np.random.default_rng(2).random((4, 5))
    check(inplace_operators, a.copy(), a.copy(), target=target)
    check(inplace_operators, np.asfortranarray(a), 3.0, target=target)
    check(inplace_operators, np.arange(6), np.arange(6), target=target)
    check(inplace_operators, a.astype(np.float32), np.float32(0.5), target=target)


# -- prange bodies that make arrays, without array reductions ------------------------
# On the GPU they run as the chunks of an array reduction without accumulators:
# one block per chunk, the temporaries in per-chunk scratch buffers.

def row_temporaries(x, out):
    for i in prange(x.shape[0]):
        row = x[i] * 2.0 + 1.0
        out[i] = row.sum() + row[0]


def fancy_row_gather(x, idx, out):
    for i in prange(x.shape[0]):
        out[i] = x[i][idx].sum()


def new_rows(x, out):
    for i in prange(x.shape[0]):
        t = np.empty(x.shape[1])
        for j in range(x.shape[1]):
            t[j] = x[i, j] * j
        out[i, :] = t[::-1]


@pytest.mark.parametrize("n", [0, 3, 5001])
@pytest.mark.parametrize("target", TARGETS)
def test_prange_bodies_that_make_arrays(n, target):
    rng = np.random.default_rng(8)
    x = rng.random((n, 17))
    check(row_temporaries, x, np.zeros(n), target=target, rtol=1e-12)
    check(fancy_row_gather, x, np.array([1, 4, 4, 16]), np.zeros(n), target=target, rtol=1e-12)
    check(new_rows, x, np.zeros((n, 17)), target=target)


def test_gpu_prange_bodies_that_make_arrays_are_chunk_kernels():
    for fn, args in [(row_temporaries, (np.ones((4, 3)), np.zeros(4))),
                     (new_rows, (np.ones((4, 3)), np.zeros((4, 3))))]:
        ptx = all_ptx(compile_only(fn, *args))
        assert "barrier.sync" in ptx and "malloc" not in ptx


# -- scalar reductions beside array reductions or temporaries -------------------------

def array_and_scalar_reductions(x):
    acc = np.zeros(x.shape[1])
    s = 0.0
    m = -1.0
    for i in prange(x.shape[0]):
        acc += x[i]
        s += x[i, 0]
        m = max(m, x[i, 1])
    return acc, s, m


def scalar_reduction_of_temporaries(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += (x[i] * 2.0).sum()
    return s


def integer_mixed(x):
    acc = np.zeros(x.shape[1], np.int64)
    n = 0
    for i in prange(x.shape[0]):
        acc += x[i]
        n += x[i, 0] * x[i, 1]
    return acc, n


@pytest.mark.parametrize("n", [0, 3, 5001])
@pytest.mark.parametrize("target", TARGETS)
def test_scalar_reductions_beside_array_reductions(n, target):
    rng = np.random.default_rng(9)
    check(array_and_scalar_reductions, rng.random((n, 5)), target=target, rtol=1e-12)
    check(scalar_reduction_of_temporaries, rng.random((n, 7)), target=target, rtol=1e-12)
    check(integer_mixed, rng.integers(-50, 50, (n, 4)), target=target)      # exact
