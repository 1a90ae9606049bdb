"""Benchmark cases of the kernel API (numba_mlir_gpu.kernel): the same
kernel written with @kernel and as a CuPy RawKernel.

kernel_transpose  tiled transpose through a local (shared) array, float32:
                  32 x 32 tiles (one column of padding), blocks of 32 x 8
                  threads, each moving four rows of its tile.
kernel_histogram  2**26 int64 keys into 256 bins: a grid-stride loop adding
                  into a per-block local histogram with atomics, then one
                  atomic add per bin and block into the global counts.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange

from numba_mlir_gpu.kernel import (atomic, barrier, get_global_id, get_global_size,
                                   get_group_id, get_local_id, get_local_size, kernel, local)

TILE = 32
ROWS = 8
BINS = 256
HIST_BLOCKS = 1024
HIST_THREADS = 256


def kernel_transpose(a, out):
    tile = local.array((TILE, TILE + 1), np.float32)
    tx = get_local_id(0)
    ty = get_local_id(1)
    bx = get_group_id(0) * TILE
    by = get_group_id(1) * TILE
    n, m = a.shape
    for k in range(0, TILE, ROWS):
        if by + ty + k < n and bx + tx < m:
            tile[ty + k, tx] = a[by + ty + k, bx + tx]
    barrier()
    for k in range(0, TILE, ROWS):
        if bx + ty + k < m and by + tx < n:
            out[bx + ty + k, by + tx] = tile[tx, ty + k]


def kernel_histogram(keys, counts):
    lid = get_local_id(0)
    threads = get_local_size(0)
    local_counts = local.array(BINS, np.int32)
    for b in range(lid, BINS, threads):
        local_counts[b] = 0
    barrier()
    for i in range(get_global_id(0), keys.shape[0], get_global_size(0)):
        atomic.add(local_counts, keys[i], 1)
    barrier()
    for b in range(lid, BINS, threads):
        atomic.add(counts, b, local_counts[b])


RAW_TRANSPOSE = r"""
extern "C" __global__ void kernel_transpose(const float *a, float *out, long long n,
                                            long long m) {
    __shared__ float tile[32][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    long long bx = (long long)blockIdx.x * 32, by = (long long)blockIdx.y * 32;
    for (int k = 0; k < 32; k += 8)
        if (by + ty + k < n && bx + tx < m)
            tile[ty + k][tx] = a[(by + ty + k) * m + bx + tx];
    __syncthreads();
    for (int k = 0; k < 32; k += 8)
        if (bx + ty + k < m && by + tx < n)
            out[(bx + ty + k) * n + by + tx] = tile[tx][ty + k];
}
"""

RAW_HISTOGRAM = r"""
extern "C" __global__ void kernel_histogram(const long long *keys,
                                            unsigned long long *counts, long long n) {
    __shared__ int local_counts[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local_counts[b] = 0;
    __syncthreads();
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&local_counts[keys[i]], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        atomicAdd(&counts[b], (unsigned long long)local_counts[b]);
}
"""


def transpose_sizes(shape) -> tuple:
    n, m = shape
    return ((-(-m // TILE) * TILE, -(-n // TILE) * ROWS), (TILE, ROWS))


def ours_transpose(target: str):
    k = kernel(target=target)(kernel_transpose)

    def run(a, out):
        k[transpose_sizes(a.shape)](a, out)
    return run


def ours_histogram(target: str):
    k = kernel(target=target)(kernel_histogram)

    def run(keys, counts):
        k[HIST_BLOCKS * HIST_THREADS, HIST_THREADS](keys, counts)
    return run


def cupy_transpose(cp, kernels, args):
    a, out = args
    (gx, gy), (lx, ly) = transpose_sizes(a.shape)
    kernels["kernel_transpose"]((gx // lx, gy // ly), (lx, ly),
                                (a, out, np.int64(a.shape[0]), np.int64(a.shape[1])))


def cupy_histogram(cp, kernels, args):
    keys, counts = args
    kernels["kernel_histogram"]((HIST_BLOCKS,), (HIST_THREADS,),
                                (keys, counts, np.int64(keys.shape[0])))


def cupy_raw_kernels(cp) -> dict:
    return {"kernel_transpose": cp.RawKernel(RAW_TRANSPOSE, "kernel_transpose"),
            "kernel_histogram": cp.RawKernel(RAW_HISTOGRAM, "kernel_histogram")}


def np_transpose(a, out):
    out[...] = a.T


def np_histogram(keys, counts):
    counts += np.bincount(keys, minlength=counts.shape[0])


def _numba_transpose():
    @numba.njit(parallel=True)
    def transpose(a, out):
        n, m = a.shape
        for j in prange(m):
            for i in range(n):
                out[j, i] = a[i, j]
    return transpose


def _numba_histogram():
    @numba.njit
    def histogram(keys, counts):
        for i in range(keys.shape[0]):
            counts[keys[i]] += 1
    return histogram
