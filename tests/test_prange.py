"""prange loops become parallel loops (scf.parallel), reductions included."""
import numpy as np
import pytest
from numba import prange

from .support import TARGETS, check, ours


def saxpy(a, x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]
    return out


def saxpy_inplace(a, x, y):
    for i in prange(x.shape[0]):
        y[i] = a * x[i] + y[i]


def branchy(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        v = x[i]
        if v > 0.5:
            out[i] = v * 2
        elif v < 0.1:
            out[i] = -v
        else:
            acc = 0.0
            for k in range(3):
                acc += v * k
            out[i] = acc
    return out


def sum_reduction(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i] * x[i]
    return s


def int_reductions(x):
    s = 0
    p = 1
    for i in prange(x.shape[0]):
        s += x[i]
        p *= (x[i] % 3) + 1
    return s, p


def min_max_reductions(x):
    lo = np.inf
    hi = -np.inf
    for i in prange(x.shape[0]):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    return lo, hi


def reduction_with_initial(x, s):
    for i in prange(x.shape[0]):
        s += x[i]
    return s


def prange_2d(a):
    out = np.empty_like(a)
    for i in prange(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] * i + j
    return out


def math_in_prange(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = np.sqrt(x[i]) + np.sin(x[i]) * np.exp(-x[i])
    return out


def saxpy_norm(a, x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]
    return np.sqrt(np.sum(out * out))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64],
                         ids=lambda d: d.__name__)
def test_saxpy(dtype, target):
    x = np.arange(1000).astype(dtype)
    y = np.ones(1000, dtype)
    check(saxpy, dtype(3), x, y, target=target)
    check(saxpy_inplace, dtype(3), x, y, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_branches_and_inner_loops_in_prange(target):
    check(branchy, np.random.default_rng(0).random(1000), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_float_sum_reduction(target):
    x = np.random.default_rng(1).random(100_000)
    check(sum_reduction, x, target=target, rtol=1e-12)
    check(sum_reduction, x.astype(np.float32), target=target, rtol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_integer_reductions_are_exact(target):
    x = np.arange(1, 40, dtype=np.int64)
    check(int_reductions, x, target=target)
    check(int_reductions, np.arange(100_000, dtype=np.int64), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_min_max_reductions(target):
    check(min_max_reductions, np.random.default_rng(2).normal(size=10_000), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_reduction_starts_from_the_initial_value(target):
    check(reduction_with_initial, np.arange(100, dtype=np.int64), 1000, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_prange_2d(target):
    check(prange_2d, np.arange(35.0).reshape(5, 7), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_math_in_prange(target):
    check(math_in_prange, np.linspace(0, 5, 1000), target=target)
    check(math_in_prange, np.linspace(0, 5, 1000).astype(np.float32), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_saxpy_norm(target):
    x = np.random.default_rng(3).random(10_000).astype(np.float32)
    y = np.random.default_rng(4).random(10_000).astype(np.float32)
    check(saxpy_norm, np.float32(2.0), x, y, target=target, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_empty_iteration_space(target):
    check(sum_reduction, np.empty(0), target=target)
    check(saxpy, 2.0, np.empty(0), np.empty(0), target=target)


def test_parfors_become_parallel_loops():
    from numba_mlir_gpu import inspect_mlir
    fn = ours(saxpy_norm, "cpu")
    fn(np.float32(2), np.ones(8, np.float32), np.ones(8, np.float32))
    text = inspect_mlir(fn)
    assert text.count("scf.parallel") >= 1 and "scf.reduce" in text


def test_cpu_parallel_loops_go_to_the_async_runtime():
    """On the CPU target, parallel loops (reductions too) are split into
    tasks of MLIR's async runtime thread pool (NUMBA_NUM_THREADS workers)."""
    from numba_mlir_gpu import inspect_mlir
    for fn, args in [(saxpy, (2.0, np.ones(8), np.ones(8))), (sum_reduction, (np.ones(8),))]:
        dispatcher = ours(fn, "cpu")
        dispatcher(*args)
        assert "mlirAsyncRuntime" in inspect_mlir(dispatcher, stage="lowered")


def test_cpu_reductions_are_deterministic():
    x = np.random.default_rng(5).random(1_000_003)
    fn = ours(sum_reduction, "cpu")
    first = fn(x)
    assert all(fn(x) == first for _ in range(5))
