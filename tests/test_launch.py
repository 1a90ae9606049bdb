"""How parallel loops are launched on the GPU: blocks x threads x several
iterations per thread (compiler/launch.py), on the default stream. The shape is
checked in PTX without a GPU; the results at sizes around the tile edges are
checked on both targets (the tail block takes the guarded path)."""
import re

import numba
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu.compiler.passes import ENV_LAUNCH

from .support import TARGETS, check
from .test_codegen import all_ptx, compile_only

# 256 threads x 4 iterations: one block covers 1024; sizes around both edges
SIZES = [1, 7, 255, 256, 257, 1023, 1024, 1025, 3 * 1024 + 5]


def axpy(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


def clipped(x, out):
    for i in prange(x.shape[0]):
        v = x[i]
        if v > 0.5:
            v = 0.5
        out[i] = v * 2.0


def powers(x, out):
    for i in prange(x.shape[0]):
        acc = 1.0
        for _ in range(3):   # an inner loop: the body is not straight-line
            acc = acc * x[i]
        out[i] = acc


@numba.njit
def ratio(a, b):
    if b == 0.0:        # the caller checks the status of the call
        raise ValueError("zero divisor")
    return a / b


def checked_call(x, y, out):
    for i in prange(x.shape[0]):
        out[i] = ratio(x[i], y[i])


def reverse_into(x, out):
    n = x.shape[0]
    for i in prange(n):
        out[n - 1 - i] = x[i] + 1.0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", SIZES)
def test_every_iteration_runs_once_at_tile_edges(n, target):
    rng = np.random.default_rng(n)
    x, y = rng.random(n), rng.random(n)
    check(axpy, 1.5, x, y, np.full(n, np.nan), target=target)
    check(clipped, x, np.full(n, np.nan), target=target)
    check(reverse_into, x, np.full(n, np.nan), target=target)
    check(powers, x, np.full(n, np.nan), target=target)
    check(checked_call, x, y + 1.0, np.full(n, np.nan), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_an_error_in_one_of_a_threads_iterations_is_raised(target):
    from numba_mlir_gpu import njit
    fn = njit(target=target)(checked_call)
    for n in (1024, 1000):      # a full block (copies interleaved) and the tail path
        y = np.ones(n)
        y[n - 3] = 0.0
        with pytest.raises(ValueError, match="zero divisor"):
            fn(np.ones(n), y, np.zeros(n))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", ["32x1", "64x3", "512x8"])
def test_other_launch_shapes_compute_the_same(shape, target, monkeypatch):
    monkeypatch.setenv(ENV_LAUNCH, shape)
    for n in (1, 100, 5000):
        x = np.arange(n, dtype=np.float32)
        check(axpy, np.float32(2), x, x[::-1].copy(), np.full(n, np.nan, np.float32),
              target=target)


def first_loads_before_first_store(ptx: str) -> int:
    """Global loads in the longest run that ends at a store, per kernel."""
    best, run = 0, 0
    for line in ptx.splitlines():
        if "ld.global" in line:
            run += 1
        elif "st.global" in line:
            best, run = max(best, run), 0
    return best


def test_straight_line_bodies_keep_several_loads_in_flight():
    x = np.ones(16, np.float32)
    ptx = all_ptx(compile_only(axpy, np.float32(2), x, x, x.copy()))
    assert ".maxntid 256, 1, 1" in ptx
    # 4 iterations per thread, 2 loads each, all issued before the first store
    assert first_loads_before_first_store(ptx) >= 8
    # the copies are 256 elements (1 KiB of float32) apart: coalesced per copy
    assert re.search(r"ld\.global\.\w+\s+%r\d+, \[%rd\d+\+3072\]", ptx)


def test_status_checks_after_calls_keep_several_loads_in_flight():
    # the status check of a call that may raise is a branch, not a loop
    x = np.ones(16)
    ptx = all_ptx(compile_only(checked_call, x, x, x.copy()))
    # one iteration per thread would give 2; LLVM may sink a load into its branch
    assert first_loads_before_first_store(ptx) >= 6
    assert not re.search(r"\bcall(\.uni)?\s", ptx)   # the callee is inlined before tiling


def test_bodies_with_loops_run_one_iteration_per_thread():
    x = np.ones(16)
    ptx = all_ptx(compile_only(powers, x, x.copy()))
    assert ptx.count("st.global") == 1


def test_launch_shape_from_the_environment(monkeypatch):
    monkeypatch.setenv(ENV_LAUNCH, "128x2")
    x = np.ones(16, np.float32)
    ptx = all_ptx(compile_only(axpy, np.float32(2), x, x, x.copy()))
    assert ".maxntid 128, 1, 1" in ptx
    monkeypatch.setenv(ENV_LAUNCH, "lots")
    with pytest.raises(Exception, match="THREADSxELEMENTS"):
        compile_only(axpy, np.float32(2), x, x, x.copy())
