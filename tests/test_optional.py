"""Optional scalars (`z = None` in one branch, a number in another):
variables, `is None` tests, the conversion to the number (TypeError when
None, as Numba), callee arguments and results, entry results (None or the
number), in host code and in prange bodies; compared with numba.njit."""
import numba
import numpy as np
import pytest
from numba import prange

from .support import TARGETS, check, ours


@numba.njit
def add(x, y):
    return x + y


def optional_argument(x, y):
    if y > 0:
        z = None
    else:
        z = y
    return add(x, z)          # add compiled for (array, Optional(float64))


def running_best(a, t):
    best = None
    for i in range(a.shape[0]):
        if a[i] > t:
            if best is None or a[i] < best:
                best = a[i]
    if best is None:
        return -1.0
    return best


def none_or_value(x):
    return None if x < 0 else x


@numba.njit
def first_above(a, t):
    for i in range(a.shape[0]):
        if a[i] > t:
            return i
    return None


def optional_callee_result(a, t):
    k = first_above(a, t)
    if k is None:
        return -1
    return k * 10


def optional_in_prange(a, out):
    for i in prange(a.shape[0]):
        z = None
        if a[i] > 2:
            z = a[i] * 2
        if z is not None:
            out[i] = z
    return out


def none_used_as_number(a, t):
    z = None
    if t > 0:
        z = t
    return a + z


@pytest.mark.parametrize("target", TARGETS)
def test_optional_scalars(target):
    x = np.arange(5.0)
    check(optional_argument, x, -1.2, target=target)
    for t in (2.5, 100.0):
        check(running_best, x[::-1].copy(), t, target=target)
        check(optional_callee_result, x, t, target=target)
    for v in (-1.5, 2.5, 3):
        check(none_or_value, v, target=target)
    check(optional_in_prange, np.arange(1001.0) % 5, np.zeros(1001), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_none_where_a_number_is_needed_raises_type_error(target):
    for fn, args in ((none_used_as_number, (np.arange(3.0), -2.0)),
                     (optional_argument, (np.arange(3.0), 1.5))):
        with pytest.raises(TypeError, match="expected float64, got None"):
            numba.njit(fn)(*args)
        with pytest.raises(TypeError, match="expected float64, got None"):
            ours(fn, target)(*args)
