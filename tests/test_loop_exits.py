"""Reductions updated in a loop that exits into a join (frontend/loop_exits.py).

Numba's parfor reduction analysis (Numba 0.68.1 with Python 3.11) lost a prange
reduction updated in a `range` loop inside an `if` of the prange body: Numba's own
parallel=True, and our pipeline, which runs that pass, returned the initial value.
SplitLoopExitEdges gives such a loop exit a block of its own before the phis are
stripped. Each shape below, and the shapes that were never wrong, must give the
serial result on every Numba and Python version, compiled (no refusal), through
the whole-function path and through both fallback paths."""
import warnings

import numba
import numpy as np
import pytest
from numba import prange
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.typed_passes import PreLowerStripPhis

from numba_mlir_gpu import inspect_path, njit
from numba_mlir_gpu.frontend.loop_exits import SplitLoopExitEdges

from .support import TARGETS

pytestmark = pytest.mark.filterwarnings("ignore")


# --- shapes whose updates Numba's parfor pass lost (Numba 0.68.1, Python 3.11) ---

def in_if(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                q += 3.0
    return q


def in_else_then_statement(a, m):
    q = 0
    for i in prange(a.shape[0]):
        if a[0] < 0.5:
            pass
        else:
            for j in range(1, m):
                q += 3
        c = 0.0  # noqa: F841
    return q


def min_in_if(a, m):
    s = np.inf
    for i in prange(a.shape[0]):
        if a[i] > 0:
            for j in range(1, m):
                s = min(s, a[i] + j)
    return s


def product_in_if(a, m):
    p = 1.0
    for i in prange(a.shape[0]):
        if i % 2 == 0:
            for j in range(m):
                p *= 1.5
    return p


def two_loops_deep_in_if(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                for k in range(m):
                    q += a[i]
    return q


def prange_in_if_in_serial_loop(a, m):
    q = 0.0
    for k in range(m):
        if k % 2 == 0:
            for i in prange(a.shape[0]):
                if a[i] > 0:
                    for j in range(m):
                        q += a[i]
    return q


# A `for` loop whose body is long enough that its `FOR_ITER` needs an `EXTENDED_ARG`
# (Python 3.11): the back edge targets the EXTENDED_ARG's block, which holds only the
# header's phis, and the loop is left from the FOR_ITER block after it, not from the
# header (found by a generated program, progen seed 1002340). `t = a[i] + ...` (28
# terms) only makes the body long; the pass missed these until it split every exit edge.

def long_inner_body(a, m):
    """The generated program, shrunk: -= of min/max, np.maximum, abs, // and %."""
    n = a.shape[0]
    s = 0.0
    for i in prange(n):
        if m % 2 == 0:
            for j in range(n):
                s -= (a[(a.shape[0] + min(max(2 * i + j, 0), n - 1)) % n]
                      + np.maximum(a[i - 1], a[(i // (abs(j) + 1)) % n] + 1.5))
                t = (a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]  # noqa: F841
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i])
    return s


def long_inner_body_plus(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                q += (a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]
                      + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]
                      + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i])
    return q


def long_inner_body_int(a, m):
    q = 7
    for i in prange(a.shape[0]):
        if a[i] > 0:
            for j in range(m):
                q -= (i * j) // 3 % 5 if j % 2 == 0 else -(j // 2)
                t = (a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]  # noqa: F841
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i])
    return q


def long_inner_body_product(a, m):
    p = 1.0
    for i in prange(a.shape[0]):
        if i % 2 == 0:
            for j in range(1, m):
                p *= 1.01 if a[i] > 0 else 0.99
                t = (a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]  # noqa: F841
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i])
    return p


def long_inner_body_min(a, m):
    s = np.inf
    for i in prange(a.shape[0]):
        if a[i] > 0:
            for j in range(m):
                s = min(s, a[(i + j) % a.shape[0]] - abs(j - 2))
                t = (a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]  # noqa: F841
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i])
    return s


def long_inner_body_break(a, m):
    q = 0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                if j > 2:
                    break
                q += max(i - j, 0)
                t = (a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]  # noqa: F841
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i]
                     + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i] + a[i])
    return q


# A loop left only by a true edge: Numba loses the reduction with or without a join;
# the pass inverts the branch so that the exit is a false edge.

def while_true_break(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        j = 0
        while True:
            if j >= m:
                break
            q += a[i]
            j += 1
    return q


def while_true_break_in_if(a, m):
    q = 0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            j = 0
            while True:
                if j >= m:
                    break
                q -= i + j
                j += 1
    return q


# Branches inside the inner loop (Numba's parallel=True loses these too; the split of
# the header's exit already fixed them).

def break_before_update(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                if j > 2:
                    break
                q += a[i]
    return q


def continue_before_update(a, m):
    q = 0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                if j % 2 == 0:
                    continue
                q += j
    return q


def conditional_expression_in_loop(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                q -= a[i] if j % 2 == 0 else min(a[j], 1.0)
    return q


def update_in_if_in_loop(a, m):
    q = 1.0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                if a[i] > 0.0:
                    q *= 1.01
    return q


# --- shapes that were right: they must stay compiled and right ---

def direct_in_if(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[i] >= 0.5:
            q += a[i]
    return q


def in_loop_not_in_if(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        for j in range(m):
            q += a[i]
    return q


def local_accumulator_in_if(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[i] >= 0.5:
            t = 0.0
            for j in range(m):
                t += a[i]
            q += t
    return q


def statement_after_loop_in_if(a, m):
    q = 0.0
    out = np.zeros_like(a)
    for i in prange(a.shape[0]):
        if a[i] >= 0.5:
            for j in range(m):
                q += 3.0
            out[i] = 1.0
    return q, out


def continue_then_loop(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[i] < 0.5:
            continue
        for j in range(m):
            q += a[i]
    return q


def break_in_inner_loop(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        for j in range(m):
            q += a[i]
            if j > 1:
                break
    return q


def while_in_if(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[i] >= 0.5:
            j = 0
            while j < m:
                q += 1.0
                j += 1
    return q


WERE_WRONG = [in_if, in_else_then_statement, min_in_if, product_in_if, two_loops_deep_in_if,
              prange_in_if_in_serial_loop, long_inner_body, long_inner_body_plus,
              long_inner_body_int, long_inner_body_product, long_inner_body_min,
              long_inner_body_break, while_true_break, while_true_break_in_if,
              break_before_update, continue_before_update, conditional_expression_in_loop,
              update_in_if_in_loop]
WERE_RIGHT = [direct_in_if, in_loop_not_in_if, local_accumulator_in_if,
              statement_after_loop_in_if, continue_then_loop, break_in_inner_loop, while_in_if]


def _inputs():
    a = np.linspace(-1.0, 3.0, 9)
    a[0] = 1.0      # the `a[0]` conditions hold
    return a, 4


def _check(got, expected):
    if isinstance(expected, tuple):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", WERE_WRONG + WERE_RIGHT, ids=lambda f: f.__name__)
def test_compiled_and_right(fn, target):
    a, m = _inputs()
    expected = numba.njit(fn)(a.copy(), m)
    f = njit(target=target, fallback=False)(fn)
    _check(f(a.copy(), m), expected)
    assert inspect_path(f).path == "mlir"


class _NumbaWithSplitExits(CompilerBase):
    """Numba's own nopython pipeline (parallel=True) with our pass in front of its
    PreLowerStripPhis: the root cause is in Numba's parfor pass, and the pass fixes
    Numba's own parfor lowering too (what unsupported_loops="cpu" uses)."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        index = next(i for i, p in enumerate(pm.passes) if p[0] is PreLowerStripPhis)
        pm.passes.insert(index, (SplitLoopExitEdges, "split loop exits"))
        pm.finalize()
        return [pm]


@pytest.mark.parametrize("fn", WERE_WRONG, ids=lambda f: f.__name__)
def test_numba_parallel_with_the_pass_is_right(fn):
    a, m = _inputs()
    expected = numba.njit(fn)(a.copy(), m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = numba.njit(parallel=True, pipeline_class=_NumbaWithSplitExits)(fn)(a.copy(), m)
    _check(got, expected)


def host_fallback(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        if a[0] >= 0.5:
            for j in range(m):
                q += a[i]
    return q, len("x" * m)      # len() of a string: host code our lowering refuses


def loop_on_numba_cpu(a, m):
    q = 0.0
    for i in prange(a.shape[0]):
        b = np.histogram(a, 4)[0]   # refused (np.nditer): the loop goes to Numba
        if b[0] < 2:
            for j in range(m):
                q += a[i]
    return q


@pytest.mark.parametrize("fn, options", [(host_fallback, {}),
                                         (host_fallback, {"unsupported_loops": "cpu"}),
                                         (loop_on_numba_cpu, {"unsupported_loops": "cpu"})],
                         ids=["host-fallback", "host-fallback-cpu-loops", "loop-on-numba-cpu"])
def test_fallback_paths_are_right(fn, options):
    a, m = _inputs()
    expected = numba.njit(fn)(a.copy(), m)
    f = njit(target="cpu", **options)(fn)
    _check(f(a.copy(), m), expected)
    assert inspect_path(f).path == "fallback"
