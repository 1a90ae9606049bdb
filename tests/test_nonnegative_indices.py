"""Element indices that cannot be negative skip Python's wrap-around
(compiler/nonnegative.py); indices that can still wrap."""
import re

import numpy as np
import pytest
from numba import prange

from benchmarks.cases import row_softmax
from numba_mlir_gpu.api import inspect_ptx

from .support import TARGETS, check
from .test_codegen import compile_only

RNG = np.random.default_rng(5)


def neighbours(x, out):
    n = x.shape[0]
    for i in prange(n):
        out[i] = x[i - 1] + x[-1] + x[i]      # x[-1] at i = 0: the last element


def rows_from_the_end(a, out):
    n, m = a.shape
    for i in prange(n):
        s = 0.0
        for j in range(m):
            s += a[i, m - 1 - j] * a[-1 - i, j]
        out[i] = s


@pytest.mark.parametrize("target", TARGETS)
def test_negative_indices_still_wrap(target):
    check(neighbours, RNG.random(37), np.zeros(37), target=target)
    check(rows_from_the_end, RNG.random((33, 70)), np.zeros(33), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_row_kernels_compute_the_same(target):
    check(row_softmax, RNG.random((19, 300)).astype(np.float32),
          np.zeros((19, 300), np.float32), target=target, rtol=1e-6)


def wraparounds(ptx: str) -> int:
    """x < 0 ? x + n : x as PTX: the sign bit spread by an arithmetic shift."""
    return len(re.findall(r"shr\.s64\s+%rd\d+, %rd\d+, 63;", ptx))


def test_loop_counters_index_without_wraparound():
    # a row kernel's cooperative loops start at the thread id and step by the
    # block size: the x[i, j] and out[i, j] of their unrolled bodies skip it
    # (14 before; left: the row index and two tail loops, whose starts come
    # through unsigned divisions of values not proved non-negative)
    # (in each kernel: one per block size of schedules.BODY_SPECIALIZED_THREADS
    # and the general one)
    x = np.ones((4, 64), np.float32)
    kernels = inspect_ptx(compile_only(row_softmax, x, x.copy()))
    assert max(wraparounds(ptx) for ptx in kernels) <= 3
