"""Where a ufunc call's time goes against the same loop as a prange
function: wall-clock call overhead on tiny device arrays, and CUDA-event
times on large ones (Black-Scholes, float64, CuPy arrays).

    source .gpu/setup.sh && python3 -m benchmarks.ufunc_overhead_probe
"""
from __future__ import annotations

import time

import cupy as cp
import numpy as np

import numba_mlir_gpu
from .cases import BS_SIGNATURES, black_scholes, bs_element
from .run import cuda_time


def _wall_us(call, repeat: int = 5000) -> float:
    call()
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> None:
    ufunc = numba_mlir_gpu.vectorize(BS_SIGNATURES)(bs_element)
    loop = numba_mlir_gpu.njit(black_scholes)
    for n in (16, 1 << 24):
        rng = np.random.default_rng(0)
        s, k, t = (cp.asarray(rng.uniform(lo, hi, n)) for lo, hi in ((5, 30), (1, 100), (0.25, 10)))
        out = cp.zeros(n)
        calls = {"ufunc": lambda: ufunc(s, k, t, 0.02, 0.3, out=out),
                 "prange": lambda: loop(s, k, t, 0.02, 0.3, out)}
        for name, call in calls.items():
            if n == 16:
                print(f"n={n} {name}: {_wall_us(call):.1f} us a call (wall clock)")
            else:
                events_ms = cuda_time(cp, call, 50)["median_s"] * 1e3
                print(f"n={n} {name}: {events_ms:.4f} ms (CUDA events), "
                      f"{_wall_us(call, 200) / 1000:.4f} ms (wall clock, back to back)")


if __name__ == "__main__":
    main()
