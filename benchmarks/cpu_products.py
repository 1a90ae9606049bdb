"""np.dot/@ on the CPU target against Numba's njit (both call SciPy's BLAS
here): median wall time of 5 calls after a warm-up, per size and dtype.

    python -m benchmarks.cpu_products [--sizes 1024,2048]
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import numba_mlir_gpu


def product(a, b):
    return a @ b


def _median_time(fn, *args, reps: int = 5) -> float:
    fn(*args)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,2048")
    sizes = [int(s) for s in parser.parse_args(argv).sizes.split(",")]
    ours = numba_mlir_gpu.njit(target="cpu")(product)
    theirs = numba.njit(product)
    rng = np.random.default_rng(0)
    print("| size | dtype | ours ms | Numba ms | Numba / ours |\n|---|---|---|---|---|")
    for n in sizes:
        for dtype in (np.float32, np.float64):
            a, b = rng.random((n, n)).astype(dtype), rng.random((n, n)).astype(dtype)
            np.testing.assert_allclose(ours(a, b), theirs(a, b), rtol=1e-4)
            t_ours, t_numba = _median_time(ours, a, b), _median_time(theirs, a, b)
            print(f"| {n} | {np.dtype(dtype).name} | {t_ours * 1e3:.2f} | {t_numba * 1e3:.2f} "
                  f"| {t_numba / t_ours:.2f}x |")


if __name__ == "__main__":
    main()
