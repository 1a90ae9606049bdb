"""prange bodies with inner loops (parallel/inner_loops.py): on the GPU a
block per iteration, the inner loops' iterations spread over its threads
and their reductions combined across the block; everywhere the results of
Numba's serial loops. Sizes are not multiples of a warp or a block."""
import numpy as np
import pytest
from numba import prange

from benchmarks.cases import layer_norm, row_softmax
from benchmarks.cases import pairwise_distances as pairwise
from numba_mlir_gpu import inspect_mlir

from .support import TARGETS, check
from .test_codegen import compile_only

RNG = np.random.default_rng(13)


def nearest(points, centroids, labels, dists):
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
        dists[i] = best


def last_nearest(points, centroids, labels):
    """<=: the last of equal distances wins, as in the serial loop."""
    for i in prange(points.shape[0]):
        best = np.inf
        best_c = -1
        for c in range(centroids.shape[0]):
            d = abs(points[i] - centroids[c])
            if d <= best:
                best = d
                best_c = c
        labels[i] = best_c


def row_argmax(x, out):
    """`best < v` (the key on the left), integers."""
    for i in prange(x.shape[0]):
        best = x[i, 0]
        where = 0
        for j in range(1, x.shape[1]):
            v = x[i, j]
            if best < v:
                best = v
                where = j
        out[i] = where * 1000 + best


def int_stats(x, out):
    for i in prange(x.shape[0]):
        s = 0
        p = 1
        lo = x[i, 0]
        hi = x[i, 0]
        for j in range(x.shape[1]):
            v = x[i, j]
            s += v
            p *= (v % 3) + 1
            lo = min(lo, v)
            hi = max(hi, v)
        out[i, 0] = s
        out[i, 1] = p
        out[i, 2] = lo
        out[i, 3] = hi


def conditional_sums(x, out):
    for i in prange(x.shape[0]):
        pos = 0.0
        neg = 0.0
        count = 0
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                pos += x[i, j]
                count += 1
            else:
                neg -= x[i, j]
        out[i] = pos - neg + count


def nan_max(x, out):
    """max(acc, v) skips NaNs (Python's max), np.maximum propagates them."""
    for i in prange(x.shape[0]):
        skip = -np.inf
        keep = -np.inf
        for j in range(x.shape[1]):
            skip = max(skip, x[i, j])
            keep = np.maximum(keep, x[i, j])
        out[i, 0] = skip
        out[i, 1] = keep


def prefix_sums(x, out):
    """Carries a value that is not a reduction: stays a loop in order."""
    for i in prange(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j]
            out[i, j] = acc


def recurrence(x):
    """Reads an element another iteration writes: stays a loop in order."""
    for i in prange(x.shape[0]):
        for j in range(1, x.shape[1]):
            x[i, j] = x[i, j - 1] * 0.5 + x[i, j]


def early_exit(x, out):
    """A break: two exits, stays a loop in order."""
    for i in prange(x.shape[0]):
        found = -1
        for j in range(x.shape[1]):
            if x[i, j] > 0.9:
                found = j
                break
        out[i] = found


def strided_range(x, out):
    for i in prange(x.shape[0]):
        s = 0.0
        for j in range(x.shape[1] - 1, -1, -3):
            s += x[i, j]
        for j in range(1, x.shape[1], 2):
            out[i, j] = s * j
        out[i, 0] = s


def with_outer_reduction(x):
    total = 0.0
    for i in prange(x.shape[0]):
        best = -np.inf
        for j in range(x.shape[1]):
            best = max(best, x[i, j])
        total += best
    return total


SHAPES = [(37, 300), (5, 1), (3, 33), (1, 1000), (64, 0)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", SHAPES)
def test_row_kernels(target, shape):
    x = RNG.random(shape).astype(np.float32) if shape[1] else np.ones(shape, np.float32)
    if shape[1]:        # (both divide by the row length)
        check(row_softmax, x, np.zeros_like(x), target=target, rtol=1e-5)
        check(layer_norm, x, np.zeros_like(x), target=target, rtol=1e-4)
    check(conditional_sums, x.astype(np.float64), np.zeros(shape[0]), target=target, rtol=1e-12)
    check(prefix_sums, x, np.zeros_like(x), target=target)
    check(recurrence, x.copy(), target=target)
    check(early_exit, x, np.zeros(shape[0], np.int64), target=target)
    check(strided_range, x.astype(np.float64), np.zeros(shape), target=target, rtol=1e-12)
    if shape[1]:
        check(with_outer_reduction, x.astype(np.float64), target=target, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_integer_reductions_are_exact(target):
    x = RNG.integers(-1000, 1000, (29, 413)).astype(np.int64)
    check(int_stats, x, np.zeros((29, 4), np.int64), target=target)
    check(row_argmax, x, np.zeros(29, np.int64), target=target)
    check(row_argmax, x.astype(np.int32), np.zeros(29, np.int64), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_best_value_and_its_index_breaks_ties_as_the_serial_loop(target):
    points = RNG.random((301, 3)).astype(np.float32)
    centroids = RNG.random((70, 3)).astype(np.float32)
    centroids[40:] = centroids[:30]             # exact ties: the first index wins
    check(nearest, points, centroids, np.zeros(301, np.int64), np.zeros(301, np.float32),
          target=target)
    values = np.repeat(np.arange(9, dtype=np.float64), 5)    # many equal distances
    check(last_nearest, values[::7].copy(), values, np.zeros(7, np.int64), target=target)
    few = RNG.random((50, 3)).astype(np.float32)
    check(nearest, few, few[:1].copy(), np.zeros(50, np.int64), np.zeros(50, np.float32),
          target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_nan_handling_follows_the_operator(target):
    x = RNG.random((17, 90))
    x[3, 5] = x[4, 0] = x[5, 89] = np.nan
    x[6, :] = np.nan
    check(nan_max, x, np.zeros((17, 2)), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_inner_map_loop_of_a_prange(target):
    x = RNG.random((211, 3)).astype(np.float32)
    check(pairwise, x, np.zeros((211, 211), np.float32), target=target, rtol=1e-6)


def test_gpu_code_spreads_inner_loops_over_a_block():
    """Compile-only: a block per row, shuffles combining the reductions; a
    body that is one inner map loop becomes one 2-d parallel loop."""
    x = np.ones((4, 8), np.float32)
    softmax = compile_only(row_softmax, x, x)
    text = inspect_mlir(softmax, softmax.signatures[0])
    assert "gpu.launch" in text and text.count("gpu.shuffle") >= 2 * 5
    distances = compile_only(pairwise, x[:, :3].copy(), x)
    text = inspect_mlir(distances, distances.signatures[0])
    assert "gpu.launch" not in text and "scf.parallel" in text
    kept = compile_only(prefix_sums, x, x)
    assert "gpu.shuffle" not in inspect_mlir(kept, kept.signatures[0])


def flat_2d(x, out, w):
    """A 2-d index space as one flat prange: k // w and k % w (the loop is
    versioned on w > 0, parallel/parfors.positive_divisors); negative w
    keeps Python's floor semantics and negative indices' wrap-around."""
    for k in prange(x.shape[0] * x.shape[1]):
        i = k // w
        j = k % w
        out[k] = x[i % x.shape[0], j] * 10 + i * 1000 + j


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("w", [7, -7, 1, -1, 3, -5])
def test_division_by_loop_invariants_keeps_python_semantics(target, w):
    x = RNG.random((5, 7))
    check(flat_2d, x, np.zeros(35), w, target=target)
