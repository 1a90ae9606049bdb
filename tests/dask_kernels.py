"""Functions the Dask tests (test_dask.py on the CPU, test_dask_gpu.py on
the GPU) run on each chunk, and the chunked expressions built from them.

The Python functions are module globals, so a distributed worker imports
them by name; the dispatchers are made per target by `Kernels` and reach
the workers pickled (frontend/dispatch.py keeps their pipeline and cache).
"""
from __future__ import annotations

import numpy as np
from numba import prange

import numba_mlir_gpu


def axpy(x, y):
    """An array expression over two chunks (blockwise)."""
    return 2.0 * x + np.sqrt(np.abs(y))


def scale_rows(x):
    """A prange loop over one chunk (map_blocks)."""
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * 0.5 + i % 3
    return out


def laplacian(x):
    """A 5-point stencil on a chunk with its halo (map_overlap): the border
    keeps its input, which Dask trims."""
    out = x.copy()
    for i in prange(1, x.shape[0] - 1):
        for j in range(1, x.shape[1] - 1):
            out[i, j] = (x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1]
                         - 4.0 * x[i, j])
    return out


def sum_of_squares_chunk(x, axis, keepdims):
    """dask.array.reduction's `chunk`: always the keepdims shape (the caller
    asks for keepdims=True), since one Numba function returns one type."""
    total = 0.0
    for i in prange(x.shape[0]):
        for j in range(x.shape[1]):
            total += x[i, j] * x[i, j]
    return np.full((1, 1), total)


def sum_aggregate(x, axis, keepdims):
    """dask.array.reduction's `aggregate` (and `combine`): the partial sums."""
    return np.full((1, 1), x.sum())


class Kernels:
    """The functions above, compiled by our njit for `target`."""

    def __init__(self, target: str, **options):
        def jit(fn):
            return numba_mlir_gpu.njit(target=target, **options)(fn)
        self.axpy = jit(axpy)
        self.scale_rows = jit(scale_rows)
        self.laplacian = jit(laplacian)
        self.chunk = jit(sum_of_squares_chunk)
        self.aggregate = jit(sum_aggregate)


def sum_of_squares(da, x, kernels: Kernels):
    """The whole-array sum of squares of the dask array `x`, through
    dask.array.reduction with our chunk and aggregate (a 0-d dask array)."""
    partial = da.reduction(x, kernels.chunk, kernels.aggregate, keepdims=True,
                           dtype=np.float64, split_every=4, concatenate=True)
    return partial[0, 0]


def laplacian_reference(x: np.ndarray) -> np.ndarray:
    """What map_overlap(laplacian, depth=1, boundary="reflect") computes, in NumPy."""
    padded = np.pad(x, 1, mode="symmetric")       # Dask's "reflect" repeats the edge
    return (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
            - 4.0 * padded[1:-1, 1:-1])
