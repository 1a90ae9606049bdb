"""`a.flat` (read, written, iterated, any layout) and np.searchsorted, in host
code and inside prange bodies: differential tests against Numba, and the
path each function takes (the whole function through MLIR, no fallback)."""
import numpy as np
import pytest

from numba import prange

import numba_mlir_gpu

from .support import TARGETS, check, ours


def flat_sum(a):
    s = 0.0
    for x in a.flat:
        s += x
    return s


def flat_items(a):
    return a.flat[0], a.flat[a.size - 1], a.flat[a.size // 2]


def flat_negative(a):
    return a.flat[-2]


def flat_write(a):
    for k in range(a.size):
        a.flat[k] = k * 2
    return a


def ptp(a):
    return np.ptp(a)


def flat_in_prange(a, out):
    for i in prange(out.shape[0]):
        out[i] = a.flat[i] * 2.0


def searchsorted_each(a, v):
    out = np.empty(v.shape[0], np.int64)
    for i in prange(v.shape[0]):
        out[i] = np.searchsorted(a, v[i])
    return out


def searchsorted_right_each(a, v):
    out = np.empty(v.shape[0], np.int64)
    for i in prange(v.shape[0]):
        out[i] = np.searchsorted(a, v[i], side="right")
    return out


def searchsorted_array(a, v):
    return np.searchsorted(a, v)


def _layouts():
    base = np.arange(1.0, 36.0).reshape(5, 7) * 1.5 - 20.0
    return {"C": base, "F": np.asfortranarray(base), "T": base.T,
            "strided": base[::2, 1::3], "reversed": base[::-1, ::-2]}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("layout", sorted(_layouts()))
def test_flat_reads_any_layout(layout, target):
    a = _layouts()[layout]
    check(flat_sum, a, target=target, rtol=1e-12)
    check(flat_items, a, target=target)
    check(ptp, a, target=target)
    # Numba reads before the data for a negative position; NumPy counts from the end
    assert ours(flat_negative, target)(a) == a.flat[-2]
    assert numba_mlir_gpu.inspect_path(_compiled(flat_sum, target, a)).path == "mlir"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_flat_writes_in_c_order(layout, target):
    a = _layouts()[layout]
    if target == "gpu" and layout != "C":
        pytest.skip("non-contiguous NumPy arguments are refused on the GPU target")
    check(flat_write, a.copy() if layout == "C" else a, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_flat_in_prange_body(target):
    a = np.arange(12.0).reshape(3, 4).T.copy()[::-1]
    check(flat_in_prange, a, np.zeros(a.size), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [searchsorted_each, searchsorted_right_each])
def test_searchsorted_in_prange(fn, target):
    rng = np.random.default_rng(3)
    a = np.sort(rng.integers(0, 50, 301)).astype(np.float64)   # ties on purpose
    v = np.concatenate([rng.integers(-5, 55, 997).astype(np.float64), a[::7]])
    check(fn, a, v, target=target)
    assert numba_mlir_gpu.inspect_path(_compiled(fn, target, a, v)).path == "mlir"


def _compiled(fn, target, *args):
    f = ours(fn, target)
    f(*args)
    return f


@pytest.mark.parametrize("target", TARGETS)
def test_searchsorted_of_an_array(target):
    a = np.linspace(-3.0, 3.0, 64)
    v = np.array([[-4.0, -3.0, 0.01], [2.999, 3.0, 10.0]])
    check(searchsorted_array, a, v, target=target)
    f = _compiled(searchsorted_array, target, a, v)
    assert numba_mlir_gpu.inspect_path(f).path == "mlir"
