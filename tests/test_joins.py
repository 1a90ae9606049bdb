"""rules/joins.py: np.concatenate, np.stack, np.vstack and np.hstack of tuples
of arrays, against Numba's own njit: every axis (negative ones, a run-time
value), mixed dtypes, 1-d to 3-d, inside a prange body; Numba's errors for
sizes that do not match and axes out of range; GPU code compiled."""
import numba
import numpy as np
import pytest
from numba import prange

from .support import TARGETS, check, ours
from .test_codegen import compile_only


def concatenate_two(a, b):
    return np.concatenate((a, b))


def concatenate_along(a, b, axis):
    return np.concatenate((a, b, a), axis=axis)


def stack_along(a, b, axis):
    return np.stack((a, b), axis=axis)


def vstack(a, b):
    return np.vstack((a, b))


def hstack(a, b):
    return np.hstack((a, b))


def rows_joined_in_a_prange_body(a, out):
    for i in prange(a.shape[0]):
        r = np.concatenate((a[i], a[i] * 2.0))
        out[i] = r.sum() + r[-1]
    return out


RNG = np.random.default_rng(8)
A2 = RNG.random((3, 4))
B2 = RNG.integers(-5, 5, (3, 4))           # int64 joined with float64: float64
A3 = RNG.random((2, 3, 5))


@pytest.mark.parametrize("target", TARGETS)
def test_concatenate(target):
    check(concatenate_two, A2[0], B2[1], target=target)
    check(concatenate_two, A2, B2[:2], target=target)
    check(concatenate_two, A2 > 0.5, B2 > 0, target=target)
    for axis in (0, 1, -1, -2):
        check(concatenate_along, A2, B2, axis, target=target)
    for axis in (0, 1, 2, -1):
        check(concatenate_along, A3, A3 * 2, axis, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_stack_vstack_hstack(target):
    for axis in (0, 1, 2, -1, -3):
        check(stack_along, A2, B2, axis, target=target)
    check(stack_along, A3, A3, 3, target=target)
    check(vstack, A2, B2, target=target)
    check(vstack, A2[0], B2[2], target=target)
    check(hstack, A2, B2, target=target)
    check(hstack, A2[0], B2[2, :3], target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_joined_rows_in_a_prange_body(target):
    check(rows_joined_in_a_prange_body, RNG.random((37, 9)), np.zeros(37), target=target)


@pytest.mark.parametrize("fn, args, error", [
    (concatenate_along, (A2, A2[:, :2], 0), ValueError),
    (concatenate_along, (A2, A2, 2), IndexError),
    (concatenate_along, (A2, A2, -3), IndexError),
    (stack_along, (A2, A2[:2], 0), ValueError),
    (stack_along, (A2, A2, 3), IndexError),
])
def test_numbas_errors(fn, args, error):
    with pytest.raises(error) as expected:
        numba.njit(fn)(*args)
    with pytest.raises(error, match=str(expected.value).replace("(", r"\(").replace(")", r"\)")):
        ours(fn, "cpu")(*args)


def test_joins_compile_for_the_gpu():
    compile_only(concatenate_along, A2, B2, 1)
    compile_only(stack_along, A2, B2, -1)
    compile_only(rows_joined_in_a_prange_body, A2, np.zeros(3))
