"""Plain stores that iterations of a prange provably share with different
values are refused at compile time (parallel/races.py), naming the array
and the line; stores that are safe, or whose indices come from the data,
compile and give Numba's results."""
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import UnsupportedConstructError

from .support import TARGETS, check, ours

RNG = np.random.default_rng(11)


def constant_index(x, out):
    for i in prange(x.shape[0]):
        out[0] = x[i]


def invariant_index(x, out, k):
    for i in prange(x.shape[0]):
        out[k, 1] = x[i] * 2.0


def halved_index(x, out):
    for i in prange(x.shape[0]):
        out[i // 2] = x[i]


def wrapped_index(x, out):
    for i in prange(x.shape[0]):
        out[i % 3] = x[i] + 1.0


REFUSED = [
    (constant_index, lambda: (RNG.random(50), np.zeros(1)), "one element"),
    (invariant_index, lambda: (RNG.random(50), np.zeros((3, 2)), 1), "one element"),
    (halved_index, lambda: (RNG.random(50), np.zeros(25)), "'// 2'"),
    (wrapped_index, lambda: (RNG.random(50), np.zeros(3)), "'% 3'"),
]


@pytest.mark.parametrize("target", TARGETS + ["compile-only"])
@pytest.mark.parametrize("fn, make_args, how", REFUSED, ids=lambda c: getattr(c, "__name__", ""))
def test_colliding_stores_are_refused(fn, make_args, how, target):
    with pytest.raises(UnsupportedConstructError) as info:
        ours(fn, target)(*make_args())
    message = str(info.value)
    assert "storing into out[...]" in message and how in message
    assert "whichever thread stores last" in message and "reduction" in message
    assert "test_races.py" in message           # the user's file and line


def set_flag(x, found):
    for i in prange(x.shape[0]):
        if x[i] > 0.9:
            found[0] = 1


def permute(x, p, out):
    for i in prange(x.shape[0]):
        out[p[i]] = x[i]


def interleave(x, out):
    for i in prange(x.shape[0]):
        out[2 * i + 1] = x[i]
        out[2 * i] = -x[i]


def rows(x, out):
    for i in prange(x.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = x[i] + j


def own_temporary(x, out):
    for i in prange(x.shape[0]):
        t = np.empty(2)
        t[0] = x[i]
        t[1] = 2.0 * x[i]
        out[i] = t[0] + t[1]


SAFE = [
    (set_flag, lambda: (RNG.random(99), np.zeros(1, np.int64))),
    (permute, lambda: (RNG.random(99), RNG.permutation(99), np.zeros(99))),
    (interleave, lambda: (RNG.random(99), np.zeros(198))),
    (rows, lambda: (RNG.random(37), np.zeros((37, 5)))),
    (own_temporary, lambda: (RNG.random(37), np.zeros(37))),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, make_args", SAFE, ids=lambda c: getattr(c, "__name__", ""))
def test_safe_stores_compile_and_match_numba(fn, make_args, target):
    check(fn, *make_args(), target=target)


def value_used_inside_only(a):
    out = np.zeros_like(a)
    for i in prange(a.shape[0]):
        t = a[i] * 2
        out[i] = t + 1
    t = 5.0
    return out, t


@pytest.mark.parametrize("target", TARGETS)
def test_values_private_to_the_body_still_compile(target):
    check(value_used_inside_only, np.arange(7.0), target=target)
