"""Differential testing: our compilation against Numba's own CPU `njit`."""
from __future__ import annotations

import copy
import os

import numba
import numpy as np
import pytest

import numba_mlir_gpu
from numba_mlir_gpu.testing.differential import this_weeks_half  # noqa: F401  (the tests')

# Every differential test runs on the CPU target; the same test marked `gpu`
# runs on the GPU (skipped where there is none).
TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def ours(pyfunc, target: str, fallback: bool = False):
    """Our njit, by default with the host fallback off: a construct our
    lowering lacks fails the test instead of passing through Numba's own
    lowering (the fallback's own tests turn it on)."""
    return numba_mlir_gpu.njit(target=target, fallback=fallback)(pyfunc)


def assert_same(got, expected, ulps: int = 4, rtol: float | None = None, path="result"):
    """Bit-for-bit for integers and booleans; within `ulps` units in the last
    place (or `rtol`, for reductions whose order differs) for floats and for
    each part of complex numbers."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), f"{path}: {got!r}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, ulps, rtol, f"{path}[{i}]")
        return
    if expected is None:
        assert got is None, f"{path}: {got!r}"
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape, f"{path}: shape {g.shape} != {e.shape}"
    assert g.dtype == e.dtype or (g.ndim == 0 and np.result_type(g, e) == e.dtype), \
        f"{path}: dtype {g.dtype} != {e.dtype}"
    if np.issubdtype(e.dtype, np.complexfloating):     # each part as a float
        assert_same(g.real, e.real, ulps, rtol, f"{path}.real")
        assert_same(g.imag, e.imag, ulps, rtol, f"{path}.imag")
        return
    if not np.issubdtype(e.dtype, np.floating):
        np.testing.assert_array_equal(g, e, err_msg=path)
        return
    g = g.astype(e.dtype)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(e), err_msg=f"{path}: NaNs differ")
    finite = ~np.isnan(e)
    if rtol is not None:
        np.testing.assert_allclose(g[finite], e[finite], rtol=rtol, atol=0, err_msg=path)
        return
    same = g[finite] == e[finite]
    spacing = np.spacing(np.abs(e[finite]).astype(e.dtype))
    close = np.abs(g[finite] - e[finite]) <= ulps * spacing
    assert np.all(same | close), \
        f"{path}: differs by more than {ulps} ulp:\n got {g}\n expected {e}"


def assert_same_layout(got, expected, path="result"):
    """Arrays C- and Fortran-contiguous exactly where Numba's are."""
    if isinstance(expected, tuple):
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same_layout(g, e, f"{path}[{i}]")
    elif isinstance(expected, np.ndarray):
        layout = [(a.flags.c_contiguous, a.flags.f_contiguous) for a in (got, expected)]
        assert layout[0] == layout[1], f"{path}: (C, F)-contiguous {layout[0]} != {layout[1]}"


_DISPATCHERS: dict = {}


def _dispatcher(pyfunc, target: str, parallel: bool = False, fallback: bool = False):
    """One dispatcher per function, target and environment for the session:
    tests call `check` many times with one function and the same argument
    types (lists of values, hypothesis examples), which would otherwise
    compile it again each time."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("NUMBA")))
    key = (pyfunc, target, parallel, fallback, env)
    if key not in _DISPATCHERS:
        _DISPATCHERS[key] = (numba.njit(parallel=parallel)(pyfunc) if target == "numba"
                             else ours(pyfunc, target, fallback))
    return _DISPATCHERS[key]


def check(pyfunc, *args, target: str = "cpu", ulps: int = 4, rtol: float | None = None,
          layout: bool = False, parallel_reference: bool = False, fallback: bool = False):
    """Run `pyfunc` through Numba's njit (with `parallel_reference`, njit's
    parallel=True, for code only it compiles) and through ours on copies of
    the arguments; compare results (with `layout`, also their memory order)
    and the arguments afterwards (in-place writes)."""
    ref_args, our_args = copy.deepcopy(args), copy.deepcopy(args)
    expected = _dispatcher(pyfunc, "numba", parallel_reference)(*ref_args)
    got = _dispatcher(pyfunc, target, fallback=fallback)(*our_args)
    assert_same(got, expected, ulps, rtol)
    if layout:
        assert_same_layout(got, expected)
    for i, (g, e) in enumerate(zip(our_args, ref_args)):
        if isinstance(e, np.ndarray):
            assert_same(g, e, ulps, rtol, path=f"argument {i} after the call")
    return got
