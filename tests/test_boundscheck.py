"""Numba's `boundscheck` option and NUMBA_BOUNDSCHECK: an element index
outside its array raises IndexError (host code, CPU threads and GPU
kernels alike), the access itself skipped; in-range and wrapped negative
indices give Numba's values."""
import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu

from .support import TARGETS, assert_same


def read(a, i):
    return a[i]


def read_2d(a, i, j):
    return a[i, j]


def write(a, i):
    a[i] = 7.0
    return a


def flat_read(a, k):
    return a.flat[k]


def gather(a, idx, out):
    for k in prange(idx.shape[0]):
        out[k] = a[idx[k]]


def scatter(keys, h):
    for k in prange(keys.shape[0]):
        h[keys[k]] += 1


def scatter_store(keys, out):
    for k in prange(keys.shape[0]):
        out[keys[k]] = k


def checked(fn, target):
    return numba_mlir_gpu.njit(target=target, boundscheck=True)(fn)


CASES = [
    (read, lambda: (np.arange(5.0), 5)),
    (read, lambda: (np.arange(5.0), -6)),
    (read_2d, lambda: (np.ones((3, 4)), 1, 4)),
    (read_2d, lambda: (np.ones((3, 4)), -4, 0)),
    (write, lambda: (np.zeros(4), 4)),
    (gather, lambda: (np.arange(5.0), np.array([0, 4, 5, 1]), np.zeros(4))),
    (scatter, lambda: (np.array([0, 3, 8, 1]), np.zeros(4, np.int64))),
    (scatter_store, lambda: (np.array([0, 3, -9, 1]), np.zeros(4, np.int64))),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, make_args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_out_of_bounds_raises_index_error(fn, make_args, target):
    with pytest.raises(IndexError, match="index is out of bounds"):
        numba.njit(boundscheck=True)(fn)(*make_args())
    f = checked(fn, target)
    with pytest.raises(IndexError, match=r"index is out of bounds \(array '\w+'\)"):
        f(*make_args())
    with pytest.raises(IndexError):         # and again: the process is still usable
        f(*make_args())


@pytest.mark.parametrize("target", TARGETS)
def test_flat_position_out_of_bounds(target):
    """Numba leaves `a.flat[k]` unchecked; ours checks it as any element."""
    with pytest.raises(IndexError, match="index is out of bounds"):
        checked(flat_read, target)(np.ones((2, 3)), 6)


IN_RANGE = [
    (read, (np.arange(5.0), 4)),
    (read, (np.arange(5.0), -5)),
    (read_2d, (np.arange(12.0).reshape(3, 4), -1, 3)),
    (write, (np.zeros(4), -1)),
    (flat_read, (np.arange(6.0).reshape(2, 3).T, 5)),
    (gather, (np.arange(5.0), np.array([0, 4, 3, -1]), np.zeros(4))),
    (scatter, (np.array([0, 3, 3, 1, -4]), np.zeros(4, np.int64))),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, args", IN_RANGE, ids=lambda c: getattr(c, "__name__", ""))
def test_in_range_indices_give_numbas_values(fn, args, target):
    ref_args, our_args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args], \
        [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    expected = numba.njit(boundscheck=True)(fn)(*ref_args)
    got = checked(fn, target)(*our_args)
    assert_same(got, expected)
    for g, e in zip(our_args, ref_args):
        assert_same(g, e)


@pytest.mark.parametrize("target", TARGETS)
def test_numba_boundscheck_environment_variable(target, monkeypatch):
    """NUMBA_BOUNDSCHECK (numba.config.BOUNDSCHECK) wins over the option, as
    in Numba: 1 checks without the option."""
    monkeypatch.setattr(numba.config, "BOUNDSCHECK", 1)
    f = numba_mlir_gpu.njit(target=target)(gather)
    with pytest.raises(IndexError, match="out of bounds"):
        f(np.arange(5.0), np.array([0, 7]), np.zeros(2))


def test_boundscheck_off_emits_no_check():
    from numba_mlir_gpu import inspect_mlir
    f = numba_mlir_gpu.njit(target="cpu")(read)
    g = numba_mlir_gpu.njit(target="cpu", boundscheck=True)(read)
    a = np.arange(3.0)
    assert f(a, 1) == g(a, 1) == 1.0
    assert "out of bounds" not in str(f.get_metadata(f.signatures[0]).get("numba_mlir_gpu"))
    assert inspect_mlir(g).count("scf.if") > inspect_mlir(f).count("scf.if")
