"""NumPy differential sweep (issue 18, item 1): every NumPy entry of docs/supported.md
through our njit on the CPU and GPU targets, against NumPy (or stock Numba where its
typing differs), over dtypes, layouts, shapes and special values. The harness and its
tables (oracles, tolerances, exclusions, known gaps and bugs) are in
numba_mlir_gpu/testing/differential.py; docs/testing.md describes it.

One test per (entry, dtype) and target; each runs every layout, shape and value set of
that entry and reports all its mismatches in one message. CI runs a fixed, seeded
sample (every entry once, dtypes rotating); NUMBA_MLIR_GPU_SWEEP=full runs the whole
grid. The `test_bug_*` tests are the mismatches it found, each a regression test now."""
import math

import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.testing import differential as D

from .support import TARGETS

pytestmark = pytest.mark.filterwarnings("ignore")

PARAMS = D.grid()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("param", PARAMS, ids=[D.param_id(p) for p in PARAMS])
def test_sweep(param, target):
    result = D.run_param(param, target)
    assert result.ok, result.report()
    assert result.cases or result.counts["n/a"] or result.counts["unsupported"], \
        f"{D.param_id(param)}: no case ran"


def test_grid_tables():
    """Every entry has a tolerance and a valid oracle; the sample covers every entry and
    every dtype; known bugs name an existing regression test."""
    names = {e.name for e in D.ENTRIES}
    for e in D.ENTRIES:
        assert e.tol in D.TOLERANCES, e.name
        for d in e.dtypes:
            assert e.oracle_for(d) in ("numpy", "numba", "either"), e.name
    sample = D.sample_grid()
    assert {p[0] for p in sample} == names
    assert {p[1] for p in sample} == set(D.DTYPES)
    assert len(D.full_grid()) > 5 * len(sample)
    for rule in D.KNOWN_BUGS:
        assert rule[5] in globals(), rule[5]


def _ours(fn, target="cpu"):
    return numba_mlir_gpu.njit(target=target, fallback=False)(fn)


# ---------------------------------------------------------------------------------------
# Regression tests for the mismatches the sweep found, each fixed in the lowering. A new
# one goes here as a strict xfail with a KNOWN_BUGS row in the harness until it is fixed.
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_bug_shift_narrow_int_arrays(target):
    def f(a, b):
        return a << b

    a = np.array([1, 2, 3], np.int16)
    b = np.array([1, 2, 3], np.int16)
    np.testing.assert_array_equal(_ours(f, target)(a, b), numba.njit(f)(a, b))


@pytest.mark.parametrize("target", TARGETS)
def test_bug_unsigned_invariant_divisor(target):
    def f(a, b):
        return a // b

    a = np.array([12, 200, 255], np.uint8)
    b = np.uint8(254)
    # Numba and NumPy: [0, 0, 1]; ours: [12, 200, 255]
    np.testing.assert_array_equal(_ours(f, target)(a, b), np.array([0, 0, 1], np.uint8))


@pytest.mark.parametrize("target", TARGETS)
def test_bug_hypot_integers(target):
    def f(a, b):
        return np.hypot(a, b)

    a = np.array([3, 5], np.uint16)
    b = np.array([4, 12], np.uint16)
    np.testing.assert_array_equal(_ours(f, target)(a, b), numba.njit(f)(a, b))


@pytest.mark.parametrize("target", TARGETS)
def test_bug_maximum_signed_zero(target):
    def f(a, b):
        return np.maximum(a, b)

    a = np.array([-0.0, 0.0])
    b = np.array([0.0, -0.0])
    expected = numba.njit(f)(a, b)            # [-0.0, 0.0]
    got = _ours(f, target)(a, b)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("target", TARGETS)
def test_bug_math_pow_integer_exponent(target):
    def f(a, b):
        return math.pow(a, b)

    a, b = np.int64(-1), np.int64(2 ** 53 + 1)
    assert _ours(f, target)(a, b) == math.pow(a, b) == numba.njit(f)(a, b) == 1.0
