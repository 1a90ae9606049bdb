"""Rows kept in registers across the inner loops of a prange body on the GPU
(parallel/row_access.py, targets/gpu/row_cache.py): the results of Numba's
serial loops whether the cache is used or not (rows too long for it, an
output sharing the input's memory, conditional writes), and the code that
uses it (compile-only, in CI). The cache is off by default
(schedules.ROW_CACHE_SLOTS = 0): these tests turn it on."""
import numpy as np
import pytest
from numba import prange

from benchmarks.cases import layer_norm, row_softmax
import numba_mlir_gpu
from numba_mlir_gpu import inspect_mlir
from numba_mlir_gpu.frontend.wrapper import CompileOnlyError
from numba_mlir_gpu.targets.gpu import schedules

from .support import TARGETS, check
from .test_codegen import compile_only

RNG = np.random.default_rng(29)


@pytest.fixture(autouse=True)
def row_cache_on(monkeypatch):
    monkeypatch.setattr(schedules, "ROW_CACHE_SLOTS", 16)

# 128 threads x ROW_CACHE_SLOTS (16) = 2048: 5000 is past the cache
SHAPES = [(41, 1000), (3, 2048), (7, 2049), (2, 5000), (130, 31)]


def centre_ints(x, out):
    """Integers, a row read in two loops and the output reread."""
    for i in prange(x.shape[0]):
        s = 0
        for j in range(x.shape[1]):
            s += x[i, j]
        mean = s // max(x.shape[1], 1)
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] - mean
        for j in range(x.shape[1]):
            out[i, j] = out[i, j] * 3 + (out[i, j] > 0)


def clip_then_scale(x, out, t):
    """A conditional write, then every element reread: elements not
    written come from memory."""
    for i in prange(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > t:
                out[i, j] = t
        total = 0.0
        for j in range(x.shape[1]):
            total += out[i, j]
        for j in range(2, x.shape[1]):
            out[i, j] = out[i, j] / total + x[i, j]


def shifted(x, out):
    """Reads the row at j and j + 1: only the first is cached."""
    for i in prange(x.shape[0]):
        s = 0.0
        for j in range(x.shape[1] - 1):
            s += x[i, j] * x[i, j + 1]
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * s


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", SHAPES)
def test_rows_match_the_serial_loops(target, shape):
    x = RNG.random(shape).astype(np.float32)
    check(row_softmax, x, np.zeros_like(x), target=target, rtol=1e-5)
    check(layer_norm, x, np.zeros_like(x), target=target, rtol=1e-4)
    ints = RNG.integers(-10**6, 10**6, shape)
    check(centre_ints, ints, np.zeros_like(ints), target=target)
    y = RNG.random(shape)
    check(clip_then_scale, y, y * 0.5, 0.7, target=target, rtol=1e-12)
    check(shifted, y, np.zeros_like(y), target=target, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_output_sharing_the_input_memory(target):
    """In place (out is x) and a shifted view of the same array: the host
    finds the spans meet and runs the body without the cache."""
    x = RNG.random((9, 700))
    check(row_softmax, x, x, target=target, rtol=1e-12)
    base = RNG.random((9, 701))
    check(layer_norm, base[:, :-1], base[:, 1:], target=target, rtol=1e-10)
    ints = RNG.integers(-1000, 1000, (5, 300))
    check(centre_ints, ints, ints, target=target)


def _cached_rows(text: str) -> int:
    return text.count("memref.alloca() : memref<16xi8>")    # its flags


def test_row_cache_is_off_by_default(monkeypatch):
    monkeypatch.setattr(schedules, "ROW_CACHE_SLOTS", 0)
    x = np.ones((4, 8), np.float32)
    softmax = compile_only(row_softmax, x, x)
    assert _cached_rows(inspect_mlir(softmax, softmax.signatures[0])) == 0


def test_gpu_code_keeps_rows_in_registers():
    """Compile-only: a slot array per cached array (softmax: x and out;
    layer norm: x; its out is written in one loop only); none for a row
    written outside its inner loops, or with boundscheck."""
    x = np.ones((4, 8), np.float32)
    softmax = compile_only(row_softmax, x, x)
    assert _cached_rows(inspect_mlir(softmax, softmax.signatures[0])) == 2
    norm = compile_only(layer_norm, x, x)
    assert _cached_rows(inspect_mlir(norm, norm.signatures[0])) == 1

    def written_elsewhere(x, out):
        for i in prange(x.shape[0]):
            s = 0.0
            for j in range(x.shape[1]):
                s += x[i, j]
            for j in range(x.shape[1]):
                out[i, j] = x[i, j] / s
            for j in range(x.shape[1]):
                out[i, j] += 1.0
            out[i, 0] = s
    mixed = compile_only(written_elsewhere, x, x)
    # x is still cached; out, written at [i, 0] too, is not
    assert _cached_rows(inspect_mlir(mixed, mixed.signatures[0])) == 1
    checked = numba_mlir_gpu.njit(target="compile-only", boundscheck=True)(row_softmax)
    with pytest.raises(CompileOnlyError):
        checked(x, x)
    assert _cached_rows(inspect_mlir(checked, checked.signatures[0])) == 0
