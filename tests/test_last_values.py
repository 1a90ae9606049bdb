"""Scalars a prange body assigns and code after the loop reads keep the
value of the last iteration that assigns them, as the serial loop does
(parallel/last_values.py); Numba's parallel=True leaves them to whichever
worker stores last, or to the value before the loop (test_parfors'
test_issue9256_*). Compared with Numba's serial njit of the same function."""
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import UnsupportedConstructError

from .support import TARGETS, check, ours
from .test_codegen import compile_only

RNG = np.random.default_rng(5)


def every_iteration(n):
    c = 0
    for i in prange(n):
        c = i
    return c


def some_iterations(a):
    # the carried value passes through the iterations that do not assign it
    # (Numba's parallel=True returns -1.0 here)
    last = -1.0
    for i in prange(a.shape[0]):
        if a[i] > 0.5:
            last = a[i] * 2
    return last


def undefined_before(x):
    c = x
    for _i in prange(x):
        if c:
            d = x + 4
    return c, d > 0


def descending(n):
    k = 7
    for i in prange(n - 1, -1, -1):
        k = i * 3
    return k


def with_a_sum(a):
    s = 0.0
    last = -1
    for i in prange(a.shape[0]):
        s += a[i]
        if a[i] > 0.9:
            last = i
    return s, last


def two_dimensional(a):
    v = 0.0
    for i in prange(a.shape[0]):
        for j in prange(a.shape[1]):
            if a[i, j] > 0.5:
                v = a[i, j] + i
    return v


def complex_and_bool(a):
    z = 0j
    b = False
    for i in prange(a.shape[0]):
        z = a[i] * 1j
        b = a[i] > 0.5
    return z, b


def body_makes_arrays(a):
    m = 0.0
    for i in prange(a.shape[0]):
        t = np.zeros(3)
        t[0] = a[i]
        m = t.sum()
    return m


def with_an_array_reduction(a, h):
    k = -1
    for i in prange(a.shape[0]):
        h += a[i]
        k = i
    return k


def after_an_inner_loop(a):
    best = -1
    for i in prange(a.shape[0]):
        acc = 0.0
        for j in range(a.shape[1]):
            acc += a[i, j]
        if acc > 2.5:
            best = i
    return best


CASES = [
    (every_iteration, lambda: (10,)),
    (every_iteration, lambda: (0,)),
    (some_iterations, lambda: (RNG.random(1001),)),
    (some_iterations, lambda: (RNG.random(1001) * 0.5,)),      # no iteration assigns
    (undefined_before, lambda: (4,)),
    (descending, lambda: (100,)),
    (with_a_sum, lambda: (RNG.random(1001),)),
    (two_dimensional, lambda: (RNG.random((37, 29)),)),
    (complex_and_bool, lambda: (RNG.random(515),)),
    (body_makes_arrays, lambda: (RNG.random(300),)),
    (with_an_array_reduction, lambda: (RNG.random(1001), np.zeros(1001))),
    (after_an_inner_loop, lambda: (RNG.random((300, 5)),)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, make_args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_the_last_assigning_iteration_wins(fn, make_args, target):
    check(fn, *make_args(), target=target, rtol=1e-12)


def reads_the_carried_value(a, out):
    last = 0.0
    for i in prange(a.shape[0]):
        out[i] = last
        if a[i] > 0.5:
            last = a[i]
    return last


def array_read_after(a):
    for i in prange(a.shape[0]):
        t = a[i:i + 1]
    return t


@pytest.mark.parametrize("fn, args, message", [
    (reads_the_carried_value, (np.ones(8), np.zeros(8)), "previous iteration"),
    (array_read_after, (np.ones(8),), r"reading variable 't' \(array"),
], ids=["carried read", "array"])
def test_what_needs_the_previous_iteration_is_refused(fn, args, message):
    with pytest.raises(UnsupportedConstructError, match=message):
        ours(fn, "cpu")(*args)


@pytest.mark.parametrize("fn, make_args", [CASES[2], CASES[6], CASES[9], CASES[11]],
                         ids=lambda c: getattr(c, "__name__", ""))
def test_gpu_code_is_generated(fn, make_args):
    """The GPU's tree reductions and chunks carry the value and its position
    (PTX built without a GPU)."""
    compile_only(fn, *make_args())
