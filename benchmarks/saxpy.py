"""prange SAXPY on 2^26 float32 device arrays: numba-mlir-gpu against a CuPy
ElementwiseKernel and a device-to-device copy, in one process (GPU machine).

    python benchmarks/saxpy.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from numba import prange

import numba_mlir_gpu

N = 1 << 26


def saxpy(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


def saxpy_new(a, x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]
    return out


def cuda_time(cp, fn, reps: int = 20) -> float:
    """Median seconds of `fn()` between CUDA events, after two warm-up calls."""
    for _ in range(2):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def main() -> dict:
    import cupy as cp
    a = np.float32(2.0)
    x = cp.random.random(N, dtype=cp.float32)
    y = cp.random.random(N, dtype=cp.float32)
    out = cp.empty_like(x)
    ours = numba_mlir_gpu.njit(target="gpu")(saxpy)
    t0 = time.perf_counter()
    ours(a, x, y, out)
    compile_s = time.perf_counter() - t0
    np.testing.assert_allclose(out.get(), (a * x + y).get(), rtol=1e-6)
    kernel = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 out",
                                  "out = a * x + y", "saxpy")
    dst = cp.empty_like(x)
    moved = 3 * N * 4
    t_ours = cuda_time(cp, lambda: ours(a, x, y, out))
    t_cupy = cuda_time(cp, lambda: kernel(a, x, y, out))
    t_copy = cuda_time(cp, lambda: cp.copyto(dst, x))
    new = numba_mlir_gpu.njit(target="gpu")(saxpy_new)
    new(a, x, y)
    t_new = cuda_time(cp, lambda: new(a, x, y), reps=5)
    result = {
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "n": N,
        "numba_mlir_gpu_s": t_ours, "numba_mlir_gpu_GBps": moved / t_ours / 1e9,
        "cupy_elementwise_s": t_cupy, "cupy_elementwise_GBps": moved / t_cupy / 1e9,
        "copy_s": t_copy, "copy_GBps": 2 * N * 4 / t_copy / 1e9,
        "fresh_output_s": t_new, "fresh_output_GBps": moved / t_new / 1e9,
        "first_call_compile_s": compile_s,
    }
    result["ours_vs_cupy"] = t_cupy / t_ours
    result["ours_fraction_of_copy_bw"] = result["numba_mlir_gpu_GBps"] / result["copy_GBps"]
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    res = main()
    for key, value in res.items():
        print(f"{key:28s} {value:.4g}" if isinstance(value, float) else f"{key:28s} {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
