"""Scalar reductions: prange loops and the parfors NumPy's reductions become.

On the GPU they are tree reductions (per-thread grid-stride folds, warp
shuffles and shared memory per block, a second kernel over the block
partials), so the same input gives the same bits on every call.
"""
import numba
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import inspect_mlir
from numba_mlir_gpu.targets.gpu.reduce import BARRIER_MARKER

from .support import TARGETS, check, ours
from .test_codegen import all_ptx, compile_only, entries

SIZES = [0, 1, 255, 257, 10**6 + 3]
DTYPES = [np.float32, np.float64, np.int32, np.int64]


def _floating(dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


def prange_reduction(op: str, dtype):
    """A prange loop reducing with `op`, its accumulator typed from `dtype`."""
    start = {"+": dtype(0), "*": dtype(1),
             "min": dtype(np.inf) if _floating(dtype) else dtype(np.iinfo(dtype).max),
             "max": dtype(-np.inf) if _floating(dtype) else dtype(np.iinfo(dtype).min)}[op]
    if op == "+":
        def f(x):
            s = start
            for i in prange(x.shape[0]):
                s += x[i]
            return s
    elif op == "*":
        def f(x):
            s = start
            for i in prange(x.shape[0]):
                s *= x[i]
            return s
    elif op == "min":
        def f(x):
            s = start
            for i in prange(x.shape[0]):
                s = min(s, x[i])
            return s
    else:
        def f(x):
            s = start
            for i in prange(x.shape[0]):
                s = max(s, x[i])
            return s
    return f


NUMPY_REDUCTIONS = {"+": lambda x: np.sum(x), "*": lambda x: np.prod(x),
                    "min": lambda x: np.min(x), "max": lambda x: np.max(x)}


def data(op: str, dtype, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if op == "*":       # products that neither overflow (floats) nor vanish
        # Factors spread over [e^-0.05, e^0.05]: a tree of f32 products of
        # factors within 1e-3 of 1 drifts from the serial order by ~2e-3
        # (rounding of partial products near 1 is biased), this spread by ~1e-4.
        if np.issubdtype(dtype, np.floating):
            return np.exp((rng.random(n) - 0.5) * 0.1).astype(dtype)
        return rng.choice(np.array([1, 2, 3, -1], dtype), n)
    if np.issubdtype(dtype, np.floating):
        return rng.normal(size=n).astype(dtype)
    return rng.integers(-1000, 1000, n).astype(dtype)


def rtol_for(dtype):
    return {np.float32: 1e-3, np.float64: 1e-9}.get(dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["+", "*", "min", "max"])
def test_prange_reductions_of_odd_sizes(op, dtype, target):
    fn = prange_reduction(op, dtype)
    for n in SIZES:
        check(fn, data(op, dtype, n), target=target, rtol=rtol_for(dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["+", "*", "min", "max"])
def test_numpy_reductions_of_odd_sizes(op, dtype, target):
    fn = NUMPY_REDUCTIONS[op]
    for n in SIZES:
        x = data(op, dtype, n)
        if n == 0 and op in ("min", "max"):     # zero-size array: ValueError in both
            with pytest.raises(ValueError):
                numba.njit(fn)(x)
            with pytest.raises(ValueError):
                ours(fn, target)(x)
            continue
        check(fn, x, target=target, rtol=rtol_for(dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["min", "max"])
def test_narrow_integer_accumulators(op, target):
    """int8 min/max keep an int8 accumulator: shuffled as a widened i32."""
    for n in SIZES:
        check(prange_reduction(op, np.int8), data("+", np.int16, n).astype(np.int8),
              target=target)


def several_reductions(x):
    s = 0.0
    p = 1
    lo = np.inf
    hi = -np.inf
    for i in prange(x.shape[0]):
        s += x[i]
        p *= 1 + (i % 2)
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    return s, p, lo, hi


@pytest.mark.parametrize("target", TARGETS)
def test_several_reductions_in_one_loop(target):
    for n in SIZES:
        check(several_reductions, data("+", np.float64, n, seed=3), target=target, rtol=1e-9)


def divided_down(x, start):
    s = start
    for i in prange(x.shape[0]):
        s /= x[i]
    return s


@pytest.mark.parametrize("target", TARGETS)
def test_division_reductions(target):
    """`s /= x[i]`: as Numba's parallel=True, each private copy starts at 1
    and divides, the copies multiply into s; the serial quotient within
    rounding (an integer start becomes a float)."""
    for n in SIZES:
        x = np.random.default_rng(n).uniform(0.9, 1.1, n)
        check(divided_down, x, 10.0, target=target, rtol=1e-12)
        check(divided_down, x.astype(np.float32), np.float32(3), target=target, rtol=1e-4)
    check(divided_down, np.full(10, 2), 10, target=target)


def sum_2d(a):
    s = 0
    for i in prange(a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i, j] * (i + 1)
    return s


@pytest.mark.parametrize("target", TARGETS)
def test_reduction_over_2d_array(target):
    check(sum_2d, np.arange(257 * 3, dtype=np.int64).reshape(257, 3), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [lambda x: np.mean(x), lambda x: x.sum(), lambda x: x.max()])
def test_mean_and_array_methods(fn, target):
    check(fn, data("+", np.float64, 10**5 + 7, seed=4), target=target, rtol=1e-9)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prange_min_max_with_nan_match_numba(dtype, target):
    x = data("+", dtype, 1000, seed=5)
    x[[0, 17, 999]] = np.nan
    check(prange_reduction("min", dtype), x, target=target)
    check(prange_reduction("max", dtype), x, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("where", [[0], [17], [999], [5, 600]])
@pytest.mark.parametrize("fn", [lambda x: np.min(x), lambda x: np.max(x), lambda x: x.max()])
def test_numpy_min_max_with_nan_as_numpy(fn, where, target):
    """A NaN anywhere is the result of np.min/np.max, as in NumPy and Numba's
    serial compilation (Numba's parallel=True turns them into a loop over the
    builtin min/max, which keeps a NaN only in first position)."""
    for dtype in (np.float32, np.float64):
        x = data("+", dtype, 1000, seed=7)
        x[where] = np.nan
        assert np.isnan(numba.njit(fn)(x))
        assert np.isnan(ours(fn, target)(x))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["+", "*", "min", "max"])
def test_gpu_reductions_are_deterministic(op, dtype):
    x = data(op, dtype, 10**6 + 3, seed=6)
    fn = ours(prange_reduction(op, dtype), "gpu")
    check(prange_reduction(op, dtype), x, target="gpu", rtol=rtol_for(dtype))
    first = np.asarray(fn(x))
    for _ in range(5):
        assert np.asarray(fn(x)).tobytes() == first.tobytes()


def test_reduction_kernels_use_shuffles_and_shared_memory():
    ptx = all_ptx(compile_only(prange_reduction("+", np.float32), np.ones(16, np.float32)))
    assert len(entries(ptx)) == 1            # per-block partials; the host folds them
    assert "shfl.sync.bfly" in ptx           # warp butterflies
    assert ".shared" in ptx and "barrier.sync" in ptx   # the warps' values through shared memory
    assert "atom" not in ptx                 # no atomics: same order every run


def two_reduction_loops(x, y):
    return np.sum(x), np.max(y)        # sizes not known equal: not fused


def test_functions_with_several_reduction_loops_compile():
    fn = compile_only(two_reduction_loops, np.ones(16), np.ones(8))
    assert len(entries(all_ptx(fn))) == 2     # one kernel per reduction loop
    assert BARRIER_MARKER not in inspect_mlir(fn, stage="lowered")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["+", "*", "min", "max"])
def test_every_reduction_kind_compiles_to_ptx(op, dtype):
    ptx = all_ptx(compile_only(prange_reduction(op, dtype), np.ones(16, dtype)))
    assert "shfl.sync.bfly" in ptx and "barrier.sync" in ptx
