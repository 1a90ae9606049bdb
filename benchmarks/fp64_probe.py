"""float64 kernels with and without fp64="truncate", on device-resident CuPy
arrays, in one process: the benchmark suite's Black-Scholes (float64, 2^24
options) and Mandelbrot (float64 arithmetic, 2048x2048, 1000 iterations),
median milliseconds of 20 timed calls (CUDA events) after a warm-up, and the
largest difference from the native result. Prints one JSON line.

    source .gpu/setup.sh && python3 -m benchmarks.fp64_probe
"""
from __future__ import annotations

import json
import statistics

import cupy as cp
import numpy as np

import numba_mlir_gpu
from numba_mlir_gpu.runtime.cuda import fp64_rate_ratio

from .cases import black_scholes, mandelbrot


def _time(fn, args, repeat: int = 20) -> float:
    fn(*args)
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    n = 1 << 24
    s, k = cp.asarray(rng.uniform(50, 150, n)), cp.asarray(rng.uniform(50, 150, n))
    t = cp.asarray(rng.uniform(0.1, 2.0, n))
    results = {"fp64_rate_ratio": fp64_rate_ratio()}
    outputs = {}
    for mode in ("native", "truncate"):
        call = cp.zeros(n)
        bs = numba_mlir_gpu.njit(target="gpu", fp64=mode)(black_scholes)
        results[f"black_scholes_{mode}_ms"] = _time(bs, (s, k, t, 0.02, 0.3, call))
        outputs[f"bs_{mode}"] = cp.asnumpy(call)
        out = cp.zeros((2048, 2048), np.int64)
        mb = numba_mlir_gpu.njit(target="gpu", fp64=mode)(mandelbrot)
        results[f"mandelbrot_{mode}_ms"] = _time(mb, (2048, 2048, 1000, out))
        outputs[f"mb_{mode}"] = cp.asnumpy(out)
    for case in ("black_scholes", "mandelbrot"):
        results[f"{case}_speedup"] = results[f"{case}_native_ms"] / results[f"{case}_truncate_ms"]
    native, truncated = outputs["bs_native"], outputs["bs_truncate"]
    results["black_scholes_max_rel_error"] = float(
        np.max(np.abs(truncated - native) / np.maximum(np.abs(native), 1e-3)))
    results["mandelbrot_pixels_differing"] = float(np.mean(outputs["mb_native"] != outputs["mb_truncate"]))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
