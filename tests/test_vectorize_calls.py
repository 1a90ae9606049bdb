"""numba.vectorize functions (Numba's DUFunc) called from our compiled
code, as Numba users call their @vectorize functions from @njit code: in
array expressions, with an explicit output, on scalars, in prange bodies;
lazily compiled and with given signatures (NumPy's choice of loop). Each
against Numba's own CPU njit; compile-only GPU code."""
import numba
import numpy as np
import pytest
from numba import prange

from .support import TARGETS, check
from .test_codegen import all_ptx, compile_only


def axy(a, x, y):
    return a * x + y


lazy = numba.vectorize(axy)
typed = numba.vectorize(["float64(float64, float64, float64)",
                         "float32(float32, float32, float32)"])(axy)


def in_an_array_expression(a0, a1):
    return np.cos(lazy(a0, np.sin(a1) - 1., 1.))


def with_given_signatures(a0, a1):
    return typed(a0, a1, 2) + 1          # the int 2 takes the float loops


def with_an_output(a, b):
    out = np.empty_like(a)
    lazy(a, b, 1.0, out)
    return out


def on_scalars(a, b):
    return lazy(a, b, 1.0) + typed(a, b, 1.0)


def in_a_prange_body(a, b):
    out = np.empty_like(a)
    for i in prange(a.shape[0]):
        out[i] = lazy(a[i], b[i], 0.5)
    return out


def on_integers(a, b):
    return lazy(a, b, 3)


RNG = np.random.default_rng(3)
A, B = RNG.random(10), RNG.random(10)


@pytest.mark.parametrize("target", TARGETS)
def test_vectorize_functions_called_in_compiled_code(target):
    check(in_an_array_expression, A, B, target=target)
    check(in_an_array_expression, A.reshape(2, 5), B.reshape(2, 5), target=target)
    check(with_given_signatures, A, B, target=target)
    check(with_given_signatures, A.astype(np.float32), B.astype(np.float32), target=target)
    check(with_an_output, A, B, target=target)
    check(on_scalars, 2.0, 3.0, target=target)
    check(in_a_prange_body, A, B, target=target)
    check(on_integers, np.arange(5), np.arange(5), target=target)
    check(on_integers, np.arange(5), 2, target=target)


@pytest.mark.parametrize("fn", [in_an_array_expression, in_a_prange_body, with_an_output])
def test_vectorize_calls_compile_to_gpu_kernels(fn):
    assert ".entry" in all_ptx(compile_only(fn, A, B))
