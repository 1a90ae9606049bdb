"""Perfectly nested pranges become one N-d parallel loop (lowering/collapse.py);
other nests keep the inner prange sequential. Differential tests against
Numba, and the loop structure of the MLIR."""
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import inspect_mlir

from .support import TARGETS, check, ours
from .test_codegen import compile_only

RNG = np.random.default_rng(11)


def stencil(x, out):
    n, m = x.shape
    for i in prange(1, n - 1):
        for j in prange(1, m - 1):
            out[i, j] = 0.25 * (x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1])


def three_deep(x, out):
    for i in prange(x.shape[0]):
        for j in prange(x.shape[1]):
            for k in prange(x.shape[2]):
                out[i, j, k] = x[i, j, k] + i * 100 + j * 10 + k


def uses_outer_index(x, out):
    for i in prange(x.shape[0]):
        scale = 2.0 * i + 1.0               # reads i: recomputed in the merged body
        for j in prange(x.shape[1]):
            out[i, j] = scale * x[i, j]


def triangular(x, out):
    for i in prange(x.shape[0]):
        for j in prange(i + 1):             # bound reads i: stays nested
            out[i, j] = x[i, j] + x[j, i]


def reads_before_writes(x):
    for i in prange(x.shape[0]):
        first = x[i, 0]                     # an array read: stays nested
        for j in prange(x.shape[1]):
            x[i, j] = first + j


def work_after_inner(x, out, rows):
    for i in prange(x.shape[0]):
        for j in prange(x.shape[1]):
            out[i, j] = x[i, j] * 3
        rows[i] = i                         # not a perfect nest


def nested_reduction(x):
    s = 0.0
    for i in prange(x.shape[0]):
        for j in prange(x.shape[1]):
            s += x[i, j]
    return s


CASES = [
    (stencil, lambda: (RNG.random((37, 41)), np.zeros((37, 41))), 2),
    (three_deep, lambda: (RNG.random((5, 6, 7)), np.zeros((5, 6, 7))), 3),
    (uses_outer_index, lambda: (RNG.random((9, 13)), np.zeros((9, 13))), 2),
    (triangular, lambda: (RNG.random((12, 12)), np.zeros((12, 12))), 1),
    (reads_before_writes, lambda: (RNG.random((8, 10)),), 1),
    (work_after_inner, lambda: (RNG.random((8, 10)), np.zeros((8, 10)), np.zeros(8)), 1),
    (nested_reduction, lambda: (RNG.random((30, 40)),), 1),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, make, dims", CASES, ids=[c[0].__name__ for c in CASES])
def test_nested_prange_values(fn, make, dims, target):
    check(fn, *make(), target=target, rtol=1e-12 if fn is nested_reduction else None)


@pytest.mark.parametrize("fn, make, dims", CASES, ids=[c[0].__name__ for c in CASES])
def test_perfect_nests_are_one_parallel_loop(fn, make, dims):
    f = ours(fn, "cpu")
    f(*make())
    loops = [line for line in inspect_mlir(f).splitlines() if "scf.parallel" in line]
    assert len(loops) == 1
    assert loops[0].split("=")[0].count("%arg") == dims


def test_a_collapsed_nest_is_one_gpu_kernel():
    lowered = inspect_mlir(compile_only(stencil, np.ones((6, 7)), np.zeros((6, 7))),
                           stage="lowered")
    assert lowered.count("gpu.launch_func") == 1
