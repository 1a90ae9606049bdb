"""Scatter updates in prange bodies (parallel/scatter.py): `h[k] += v` with
`k` from the data is an atomic update of the element, so the result is the
serial loop's (exactly for integers; floats up to the order of the sums);
updates whose index proves that no two iterations share the element stay a
plain load and store. Sizes are not multiples of a warp or a block."""
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import inspect_mlir, inspect_ptx

from .support import TARGETS, check, ours
from .test_codegen import compile_only

RNG = np.random.default_rng(29)
SIZES = [1, 37, 1000, 4099]


def histogram(keys, counts):
    for i in prange(keys.shape[0]):
        counts[keys[i]] += 1


def histogram_2d(a, b, counts):
    for i in prange(a.shape[0]):
        counts[a[i], b[i]] += 1


def weighted(keys, w, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] += w[i]


def spent(keys, w, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] -= w[i]


def spelled_out(keys, w, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] = w[i] + h[keys[i]]


def product(keys, w, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] *= w[i]


def largest(keys, w, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] = max(h[keys[i]], w[i])


def smallest(keys, w, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] = min(h[keys[i]], w[i])


def np_largest(keys, w, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] = np.maximum(h[keys[i]], w[i])


def np_smallest(keys, w, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] = np.minimum(w[i], h[keys[i]])


def bits(keys, w, acc_or, acc_and, acc_xor):
    for i in prange(keys.shape[0]):
        k = keys[i]
        acc_or[k] |= w[i]
        acc_and[k] &= w[i]
        acc_xor[k] ^= w[i]


def half_steps(keys, h):
    for i in prange(keys.shape[0]):
        h[keys[i]] += 1.5           # computed as a float, stored truncated


def to_first(x, h):
    for i in prange(x.shape[0]):
        h[0] += x[i]


def pairs(x, h):
    for i in prange(x.shape[0]):
        h[i // 2] += x[i]


def in_inner_loop(keys, counts):
    for i in prange(keys.shape[0]):
        for j in range(keys.shape[1]):
            counts[keys[i, j]] += 1


def weighted_rows(keys, w, counts):
    for i in prange(keys.shape[0]):
        scale = w[i]            # read beside the inner loop: the nest stays a nest
        for j in range(keys.shape[1]):
            counts[keys[i, j]] += scale


def column_sums(x, out):
    for i in prange(x.shape[0]):
        for j in prange(x.shape[1]):
            out[j] += x[i, j]


def private_counts(keys, out):
    for i in prange(keys.shape[0]):
        counts = np.zeros(out.shape[1], np.int64)
        for j in range(keys.shape[1]):
            counts[keys[i, j]] += 1
        for j in range(out.shape[1]):
            out[i, j] = counts[j] * (j + 1)


def with_temporaries(keys, x, h):
    for i in prange(x.shape[0]):
        row = x[i] * 2          # a GPU chunk kernel: the block's threads run this body
        h[keys[i]] += row.sum()


def with_reduction(keys, x, h):
    total = 0
    for i in prange(x.shape[0]):
        total += x[i]
        h[keys[i]] += x[i]
    return total


def through_view(keys, w, counts):
    odd, even = counts[1::2], counts[::2]
    for i in prange(keys.shape[0]):
        odd[keys[i]] += w[i]
        even[keys[i] + 1] *= 3


def own_elements(x, out):
    for i in prange(x.shape[0]):
        out[i] += x[i]


def own_elements_2d(x, out):
    for i in prange(x.shape[0]):
        for j in prange(x.shape[1]):
            out[i, j] += x[i, j]


def own_rows(keys, out):
    for i in prange(keys.shape[0]):
        out[i, keys[i]] += 1


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", SIZES)
def test_histograms_count_every_key(target, n):
    keys = RNG.integers(0, 7, n)
    check(histogram, keys, np.zeros(7, np.int64), target=target)
    check(histogram, keys.astype(np.int32), np.zeros(7, np.int32), target=target)
    check(histogram, keys.astype(np.uint8), np.zeros(7, np.uint8), target=target)    # wraps
    check(histogram_2d, keys, RNG.integers(0, 3, n), np.zeros((7, 3), np.int64),
          target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_histograms_too_large_for_private_copies(target):
    """80 KB of counts: more than a GPU block's copy may take
    (schedules.PRIVATE_SHARED_BYTES), so the loop adds in place there."""
    keys = RNG.integers(0, 10_000, 100_003)
    check(histogram, keys, np.zeros(10_000, np.int64), target=target)
    check(histogram, keys, np.zeros(10_000, np.int32), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_contended_updates_lose_nothing(target):
    """Many iterations on few elements: a plain load and store would lose
    updates (on the CPU too)."""
    n = 3_000_007
    keys = RNG.integers(0, 3, n)
    check(histogram, keys, np.zeros(3, np.int64), target=target)
    check(spent, keys, RNG.integers(-9, 9, n), np.zeros(3, np.int32), target=target)
    check(product, keys, RNG.integers(-3, 4, n) | 1, np.ones(3, np.int64), target=target)
    check(largest, keys, RNG.permutation(n).astype(np.float64), np.zeros(3), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_negative_keys_wrap_as_in_python(target):
    keys = RNG.integers(-5, 5, 999)
    check(histogram, keys, np.zeros(5, np.int64), target=target)
    check(histogram_2d, keys, -RNG.integers(1, 4, 999), np.zeros((5, 3), np.int32),
          target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", SIZES)
def test_integer_updates_are_exact(target, n):
    keys = RNG.integers(0, 5, n)
    w = RNG.integers(-(2 ** 40), 2 ** 40, n)
    for fn in (weighted, spent, spelled_out, largest, smallest, np_largest, np_smallest):
        check(fn, keys, w, RNG.integers(-100, 100, 5), target=target)
        check(fn, keys, w.astype(np.int32), RNG.integers(-100, 100, 5).astype(np.int32),
              target=target)
    for fn in (weighted, spent, spelled_out):
        # int64 sums stored in 32 bits wrap (whatever the order)
        check(fn, keys, w, RNG.integers(-100, 100, 5).astype(np.int32), target=target)
    check(largest, keys, w.astype(np.uint32), np.zeros(5, np.uint32), target=target)
    # products modulo 2**64 do not depend on the order either
    check(product, keys, RNG.integers(-3, 4, n), np.ones(5, np.int64), target=target)
    small = RNG.integers(0, 2 ** 20, n)
    check(bits, keys, small, np.zeros(5, np.int64), np.full(5, -1, np.int64),
          np.zeros(5, np.int64), target=target)
    flags = RNG.random(n) < 0.3
    check(bits, keys, flags, np.zeros(5, np.bool_), np.ones(5, np.bool_), np.zeros(5, np.bool_),
          target=target)
    check(half_steps, keys, np.zeros(5, np.int64), target=target)
    check(half_steps, keys, np.zeros(5, np.int16), target=target)
    check(product, keys, RNG.integers(-3, 4, n).astype(np.int8), np.ones(5, np.int8),
          target=target)
    check(largest, keys, flags, np.zeros(5, np.bool_), target=target)
    check(smallest, keys, flags, np.ones(5, np.bool_), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", SIZES)
def test_float_updates(target, n):
    keys = RNG.integers(0, 6, n)
    w = RNG.random(n)
    for dtype in (np.float64, np.float32):
        for fn in (weighted, spent, spelled_out):
            check(fn, keys, w.astype(dtype), np.zeros(6, dtype), target=target, rtol=1e-4)
        check(product, keys, (0.5 + w).astype(dtype), np.ones(6, dtype), target=target,
              rtol=1e-4)
    # a float32 table, float64 weights: each sum rounded to float32 on the way
    check(weighted, keys, w, np.zeros(6, np.float32), target=target, rtol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", SIZES)
def test_float_extremes_keep_numbas_nan_rules(target, n):
    keys = RNG.integers(0, 6, n)
    w = RNG.standard_normal(n)
    w[::5] = np.nan
    start = np.zeros(6)
    start[1] = np.nan
    for fn in (largest, smallest, np_largest, np_smallest):
        check(fn, keys, w, start, target=target)           # exact: no sums
        check(fn, keys, w.astype(np.float32), start.astype(np.float32), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", SIZES)
def test_shared_elements_without_data_keys(target, n):
    x = RNG.integers(-50, 50, n)
    check(to_first, x, np.zeros(3, np.int64), target=target)
    check(pairs, x, np.zeros((n + 1) // 2, np.int64), target=target)
    check(column_sums, x.reshape(1, n).repeat(3, 0), np.zeros(n, np.int64), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", [(37, 300), (3, 1000), (300, 5)])
def test_updates_in_inner_loops(target, shape):
    keys = RNG.integers(0, 11, shape)
    check(in_inner_loop, keys, np.zeros(11, np.int64), target=target)
    check(weighted_rows, keys, RNG.integers(-9, 9, shape[0]), np.zeros(11, np.int64),
          target=target)
    check(private_counts, keys, np.zeros((shape[0], 11), np.int64), target=target)
    check(own_rows, keys[:, 0] % 3, np.zeros((shape[0], 3), np.int64), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [37, 1000])
def test_updates_beside_other_parallel_work(target, n):
    keys = RNG.integers(0, 4, n)
    x = RNG.integers(-9, 9, (n, 3))
    check(with_temporaries, keys, x, np.zeros(4, np.int64), target=target)
    check(with_reduction, keys, x[:, 0].copy(), np.zeros(4, np.int64), target=target)
    check(through_view, keys, x[:, 0].copy(), np.ones((4 + 1) * 2, np.int64), target=target)
    check(through_view, keys, RNG.random(n), np.ones((4 + 1) * 2), target=target, rtol=1e-12)


# -- what the code is made of (no GPU needed) ---------------------------------

def _input(fn) -> str:
    return inspect_mlir(fn, fn.signatures[0])


def _ptx(fn) -> str:
    return "\n".join(inspect_ptx(fn, fn.signatures[0]))


def test_histogram_is_one_atomic_instruction():
    keys = np.zeros(5, np.int64)
    fn = compile_only(histogram, keys, np.zeros(3, np.int64))
    assert "memref.atomic_rmw addi" in _input(fn)
    assert "atom.global.add.u64" in _ptx(fn)
    fn = compile_only(weighted, keys, np.ones(5, np.float32), np.zeros(3, np.float32))
    assert "memref.atomic_rmw addf" in _input(fn) and "atom.global.add.f32" in _ptx(fn)
    fn = compile_only(largest, keys, keys, keys.copy())
    assert "memref.atomic_rmw maxs" in _input(fn) and "atom.global.max.s64" in _ptx(fn)


def test_additions_into_a_small_array_go_through_shared_memory():
    """A histogram: each block adds into its own copy in shared memory, then
    into the array (targets/gpu/privatize.py); the plain kernel is kept for
    copies too large for shared memory."""
    keys = np.zeros(5, np.int64)
    fn = compile_only(histogram, keys, np.zeros(3, np.int64))
    ptx = _ptx(fn)
    assert "atom.shared.add.u64" in ptx and "atom.global.add.u64" in ptx
    assert "gpu.dynamic_shared_memory" in _input(fn)
    fn = compile_only(weighted, keys, np.ones(5, np.float32), np.zeros(3, np.float32))
    assert "atom.shared.add.f32" in _ptx(fn)
    fn = compile_only(largest, keys, keys, keys.copy())     # not an addition: in place
    assert "atom.shared" not in _ptx(fn)


def test_other_updates_are_compare_and_swap_loops():
    keys = np.zeros(5, np.int64)
    flags = np.zeros(5, np.bool_)
    for fn, w, h in [(product, keys, keys.copy()), (largest, np.ones(5), np.ones(3)),
                     (np_smallest, np.ones(5, np.float32), np.ones(3, np.float32)),
                     (half_steps, None, keys.copy()), (largest, flags, flags.copy()),
                     (product, keys.astype(np.int8), keys.astype(np.int8))]:
        fn = compile_only(fn, *([keys, w, h] if w is not None else [keys, h]))
        text = _input(fn)
        assert "_numba_mlir_gpu_compare_exchange" in text and "memref.atomic_rmw" not in text
        assert "scf.while" in text
        assert "atom.relaxed.sys.cas.b" in _ptx(fn)


def test_elements_of_their_own_iteration_stay_plain():
    x = np.ones((4, 6))
    for fn, args in [(own_elements, (x[0], x[1].copy())), (own_elements_2d, (x, x.copy())),
                     (own_rows, (np.zeros(4, np.int64), x.copy()))]:
        fn = compile_only(fn, *args)
        text = _input(fn)
        assert "atomic_rmw" not in text and "compare_exchange" not in text
        assert "atom." not in _ptx(fn)
    # each iteration's own array, updated by one thread or, spread over a
    # block, atomically
    fn = compile_only(private_counts, np.zeros((4, 6), np.int64), np.zeros((4, 3), np.int64))
    assert "memref.atomic_rmw addi" in _input(fn)


def test_shared_elements_get_atomics():
    x = np.ones((4, 6), np.int64)
    for fn, args in [(to_first, (x[0], x[1].copy())), (pairs, (x[0], x[1].copy())),
                     (column_sums, (x, x[0].copy()))]:
        fn = compile_only(fn, *args)
        assert "memref.atomic_rmw addi" in _input(fn)


def test_gpu_spreads_an_inner_histogram_loop_over_a_block():
    keys = np.zeros((4, 6), np.int64)
    fn = compile_only(weighted_rows, keys, keys[:, 0].copy(), np.zeros(3, np.int64))
    text = _input(fn)
    assert "gpu.launch" in text and "memref.atomic_rmw addi" in text
    # alone in the body, the inner loop merges with the prange: one thread per (i, j)
    fn = compile_only(in_inner_loop, keys, np.zeros(3, np.int64))
    text = _input(fn)
    assert "cf.cond_br" not in text and "memref.atomic_rmw addi" in text


def test_gpu_updates_beside_other_work():
    """In a chunk kernel one thread of the block updates; with a scalar
    reduction the update rides in the tree reduction's kernel."""
    keys = np.zeros(5, np.int64)
    fn = compile_only(with_temporaries, keys, np.ones((5, 3), np.int64), np.zeros(3, np.int64))
    text = _input(fn)
    assert "gpu.launch" in text and "memref.atomic_rmw addi" in text
    assert "atom.global.add.u64" in _ptx(fn)
    fn = compile_only(with_reduction, keys, keys.copy(), np.zeros(3, np.int64))
    assert "memref.atomic_rmw addi" in _input(fn) and "atom.global.add.u64" in _ptx(fn)


def accumulate_into_own_row(y):
    n = len(y)
    acc = np.zeros(n)
    for i in prange(n):
        for j in range(n):
            acc[i] += abs(y[i] - y[j])
    return acc


@pytest.mark.parametrize("target", TARGETS)
def test_inner_loop_accumulating_into_the_outer_element(target):
    """The nest stays nested (not one 2-d loop updating acc[i] from every
    (i, j) at once); on the CPU the update needs no atomic at all."""
    y = np.random.default_rng(4).random(300)
    check(accumulate_into_own_row, y, target=target, rtol=1e-12)
    if target == "cpu":
        f = ours(accumulate_into_own_row, "cpu")
        f(y)
        assert "atomic_rmw" not in inspect_mlir(f)
