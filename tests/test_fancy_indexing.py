"""Indexing with one 1-d index array (integer positions or a boolean mask),
reading and assigning, against Numba's njit."""
import numpy as np
import pytest

from .support import TARGETS, check


def gather(a, idx):
    return a[idx]


def gather_columns(m, idx):
    return m[:, idx]


def gather_rows_sum(m, idx):
    return np.sum(m[idx, 1:])


def mask_read(a, mask):
    return a[mask]


def mask_square(a, b):
    a[b] = a[b] * a[b]
    return a


def mask_assign_scalar(a, mask):
    a[mask] = -1
    return a


def mask_assign_array(a, mask, values):
    a[mask] = values
    return a


def scatter_repeated(a, idx, values):
    a[idx] = values
    return a


def in_branches(arr, flag):
    inv1 = np.arange(arr.size)
    if flag:
        ret = inv1[inv1]
    else:
        ret = inv1[inv1 - 1]
    return ret


CASES = [
    (gather, lambda: (np.arange(10.0), np.array([3, -1, 0, 3]))),
    (gather_columns, lambda: (np.arange(12.0).reshape(3, 4), np.array([2, 0]))),
    (gather_rows_sum, lambda: (np.arange(12.0).reshape(3, 4), np.array([2, 2, 0]))),
    (mask_read, lambda: (np.arange(10), np.arange(10) % 3 == 0)),
    (mask_read, lambda: (np.arange(4.0), np.zeros(4, dtype=np.bool_))),
    (mask_square, lambda: (np.arange(10), np.arange(10) > 5)),
    (mask_assign_scalar, lambda: (np.arange(6.0), np.array([1, 0, 1, 0, 0, 1], dtype=np.bool_))),
    (mask_assign_array, lambda: (np.arange(6.0), np.arange(6) < 2, np.array([7.0, 8.0]))),
    (scatter_repeated, lambda: (np.zeros(5), np.array([1, 3, 1]), np.array([1.0, 2.0, 3.0]))),
    (in_branches, lambda: (np.arange(10), True)),
    (in_branches, lambda: (np.arange(10), False)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,make_args", CASES,
                         ids=[f"{f.__name__}{i}" for i, (f, _) in enumerate(CASES)])
def test_fancy_indexing_matches_numba(fn, make_args, target):
    check(fn, *make_args(), target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 4095, 3 * 4096 + 17])
def test_masks_across_scan_chunks(n, target):
    # the positions of a mask come from np.nonzero's scan (4096 chunks)
    rng = np.random.default_rng(n)
    a, mask = rng.random(n), rng.random(n) < 0.3
    check(mask_read, a, mask, target=target)
    check(mask_assign_array, a, mask, rng.random(int(mask.sum())), target=target)
    check(mask_square, a, a > 0.5, target=target)


def test_gpu_mask_indexing_is_kernels():
    """A mask's positions (count, scan, write) and the writes through it are
    kernels, not host loops over the mask."""
    from .test_codegen import all_ptx, compile_only, entries
    ptx = all_ptx(compile_only(mask_assign_array, np.ones(8), np.ones(8) > 0, np.ones(8)))
    assert len(entries(ptx)) == 3      # count per chunk, positions per chunk, the writes


def zero_d_index(x1, x2):
    b = np.zeros((x1.shape[0],))
    for i in range(1):
        b += x1[:, x2]
    return b, x1[x2, 1:]


@pytest.mark.parametrize("target", TARGETS)
def test_zero_d_index_arrays_act_as_integers(target):
    """x1[:, np.array(4)]: a 0-d index array broadcasts to no axis (Numba's
    test_parfor_slice22); negative ones count from the end."""
    x1 = np.arange(70.0).reshape(10, 7)
    check(zero_d_index, x1, np.array(4), target=target)
    check(zero_d_index, x1, np.array(-2, dtype=np.int32), target=target)
