"""0-d arrays (issue 15, item 3): made, filled, indexed with `()`, `.item()`,
in array expressions and reductions, passed in and returned; np.array and
np.asarray of scalars and nested tuples; np.percentile/np.quantile (Numba's
implementations make 0-d arrays). Against numba.njit."""
import numpy as np
import pytest

import numba_mlir_gpu
from numba_mlir_gpu.frontend.wrapper import CompileOnlyError

from .support import TARGETS, check, this_weeks_half


def made_and_read(a):
    b = np.empty(())
    b[()] = a[0]
    c = np.zeros(())
    c[()] = b[()] * 3
    return b[()] + c.item() + c.sum()


def expression(a):
    b = np.full((), a[1])
    c = b * 2 + 1
    return c, np.sqrt(b).item()


def argument(z, a):
    return z[()] * a.sum() + z.item()


def returned(a):
    b = np.empty((), np.int32)
    b[()] = a.shape[0]
    return b


def from_scalars(x, k):
    return np.array(x), np.asarray(k), np.array(x).sum()


def from_tuples(x, k):
    return np.array((x, 2.0, x * x)), np.array(((k, 1), (2, k))), np.array((k, 7), np.float32)


def percentile(a):
    return np.percentile(a, 30.0), np.quantile(a, 0.75), np.percentile(a, np.array([5.0, 95.0]))


def item_of_size_one(a):
    return a[:1].item() + a.reshape(-1)[-1:].reshape((1, 1)).item()


def item_of_more(a):
    return a.item()


A = np.random.default_rng(9).random(37) * 10


CASES = [(made_and_read, (A,)), (expression, (A,)), (argument, (np.array(2.5), A)),
         (argument, (np.array(4, np.int16), A)), (from_scalars, (1.5, 7)),
         (from_tuples, (1.5, 7)), (percentile, (A,)), (percentile, (A[::-3],)),
         (item_of_size_one, (A,))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, args", this_weeks_half(CASES),
                         ids=lambda v: getattr(v, "__name__", "args"))
def test_zero_d_arrays_as_numba(fn, args, target):
    check(fn, *args, target=target, rtol=1e-12 if fn is argument else None)


@pytest.mark.parametrize("target", TARGETS)
def test_a_returned_zero_d_array(target):
    got = check(returned, A, target=target)
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.int32


@pytest.mark.parametrize("target", TARGETS)
def test_item_of_an_array_of_several_elements_raises(target):
    with pytest.raises(ValueError, match="size 1"):
        numba_mlir_gpu.njit(target=target)(item_of_more)(A)


@pytest.mark.parametrize("fn, args", this_weeks_half(
    [(made_and_read, (A,)), (argument, (np.array(2.5), A)), (percentile, (A,))]),
    ids=lambda v: getattr(v, "__name__", "args"))
def test_gpu_code(fn, args):
    with pytest.raises(CompileOnlyError):
        numba_mlir_gpu.njit(target="compile-only", fallback=False)(fn)(*args)
