"""prange with a step other than 1: rewritten to a unit-step prange over the
trip count before Numba's ParforPass (lowering/rewrites.py)."""
import numba
import numpy as np
import pytest
from numba import prange

from .support import TARGETS, check, ours
from .test_codegen import compile_only


def stepped_sum(x, start, step):
    t = 0.0
    for i in prange(start, x.shape[0], step):
        t += x[i] * i
    return t


def backwards_write(x):
    out = np.zeros_like(x)
    for i in prange(x.shape[0] - 1, -1, -2):
        out[i] = x[i] + i
    return out


def attribute_prange(x):
    out = np.zeros_like(x)
    for i in numba.prange(2, x.shape[0], 2):
        out[i] = x[i] * 3
    return out


def constant_step_2d(a):
    out = np.zeros_like(a)
    for i in prange(1, a.shape[0], 3):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] * 2
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("start, step", [(1, 3), (0, 1), (16, -3), (2, 100), (20, 1), (0, -1),
                                         (-5, 2)])
def test_stepped_reduction(start, step, target):
    check(stepped_sum, np.random.default_rng(0).random(17), start, step, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_negative_and_constant_steps(target):
    check(backwards_write, np.random.default_rng(1).random(17), target=target)
    check(attribute_prange, np.random.default_rng(1).random(17), target=target)
    check(constant_step_2d, np.arange(40.0).reshape(10, 4), target=target)
    check(constant_step_2d, np.asfortranarray(np.arange(40.0).reshape(10, 4)), target=target)


def test_zero_step_raises_as_range():
    with pytest.raises(ValueError, match="must not be zero"):
        numba.njit(stepped_sum)(np.ones(4), 0, 0)
    with pytest.raises(ValueError, match="must not be zero"):
        ours(stepped_sum, "cpu")(np.ones(4), 0, 0)


def test_stepped_loop_is_a_parallel_loop():
    from numba_mlir_gpu import inspect_mlir
    fn = ours(backwards_write, "cpu")
    fn(np.ones(8))
    assert "scf.parallel" in inspect_mlir(fn)


def test_compile_only():
    compile_only(stepped_sum, np.ones(8), 1, 2)
    compile_only(backwards_write, np.ones(8))
