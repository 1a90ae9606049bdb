"""print() in host code: the same line as numba.njit writes (str() of each
value, spaces between), on both targets; refused inside prange bodies."""
import numba
import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import UnsupportedConstructError

from .support import TARGETS, ours


def prints(a, n):
    s = a.sum()
    print("sum is", s, n, np.uint64(2 ** 63 + 5), True, np.float32(0.1), a.shape[0] > 2)
    print()
    print(1.5, "x", np.int8(-3))
    for i in range(2):
        print("row", i, a[i] * 2)
    return s


def prints_in_prange(a):
    for i in prange(a.shape[0]):
        print(i)


@pytest.mark.parametrize("target", TARGETS)
def test_print_writes_what_numba_writes(target, capsys):
    a = np.arange(4.0)
    numba.njit(prints)(a, -3)
    expected = capsys.readouterr().out
    assert ours(prints, target)(a, -3) == 6.0
    assert capsys.readouterr().out == expected
    assert expected.startswith("sum is 6.0 -3 9223372036854775813 True 0.10000000149011612 True\n")


def test_print_in_a_prange_body_is_refused():
    with pytest.raises(UnsupportedConstructError, match="print.. inside a prange body"):
        ours(prints_in_prange, "cpu")(np.arange(3.0))
