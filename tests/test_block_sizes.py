"""targets/gpu/chunks.specialize_block_size: a prange body whose inner loops
a block's threads share gets one kernel per block size of
schedules.BODY_SPECIALIZED_THREADS, the size a constant in it, besides the
general kernel (wide blocks for few long rows). Values for rows that pick
each kernel, on CPU and GPU; in the PTX only the general kernel reads the
block size. Blocks of any number of warps combine their threads' values
correctly (reduce.block_combine: 3, 5, 6, 7 and 10 warps gave wrong sums
before)."""
import numpy as np
import pytest
from numba import prange

from benchmarks.cases import layer_norm, row_softmax
from numba_mlir_gpu.api import inspect_ptx
from numba_mlir_gpu.targets.gpu import schedules

from .support import TARGETS, check
from .test_codegen import compile_only


def cooperative_kernels(fn, *args) -> list[str]:
    """The PTX of the kernels whose blocks cooperate (they have barriers)."""
    return [ptx for ptx in inspect_ptx(compile_only(fn, *args)) if "barrier.sync" in ptx]


def test_only_the_general_kernel_reads_the_block_size():
    x = np.zeros((64, 1024), np.float32)
    kernels = cooperative_kernels(row_softmax, x, np.zeros_like(x))
    assert len(kernels) == len(schedules.BODY_SPECIALIZED_THREADS) + 1
    assert sum("%ntid.x" in ptx for ptx in kernels) == 1


# (rows, row length): 32, 64 and 128 threads (1,300 rounds 82 up to 128, not
# to 96), and few long rows, which take wider blocks: the general kernel
SHAPES = [(45, 40), (45, 700), (23, 1300), (19, 3001), (3, 5000)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("target", TARGETS)
def test_row_kernels_of_every_block_size(target, shape):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    check(row_softmax, x, np.zeros_like(x), target=target)
    check(layer_norm, x, np.zeros_like(x), target=target, rtol=1e-5)


def row_stats(x, out):
    """A fold with a carried pair (sum and maximum) and an element loop."""
    for i in prange(x.shape[0]):
        s = 0
        m = x[i, 0]
        for j in range(x.shape[1]):
            s += x[i, j]
            m = max(m, x[i, j])
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * m - s


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("target", TARGETS)
def test_integer_rows_of_every_block_size_are_exact(target, shape):
    x = np.random.default_rng(sum(shape)).integers(-50, 50, shape)
    check(row_stats, x, np.zeros_like(x), target=target)


def row_sums(x):
    return np.sum(x, axis=1), np.sqrt(np.sum(x * x, axis=1))


# lines of 70, 150 and 200 elements: blocks of 3, 5 and 7 warps, whose
# partials reduce.block_combine pads to 4 and 8 lanes with the identity
@pytest.mark.parametrize("length", [70, 150, 200, 256])
@pytest.mark.parametrize("target", TARGETS)
def test_line_reductions_over_any_number_of_warps(target, length):
    x = np.random.default_rng(length).integers(-1000, 1000, (37, length))
    check(row_sums, x, target=target)
    check(row_sums, x.astype(np.float64) / 7, target=target, rtol=1e-12)
