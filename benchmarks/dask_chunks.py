"""Dask arrays of CuPy chunks on one GPU: a 2-d stencil (map_overlap) and a
whole-array reduction (dask.array.reduction), our functions against the
same Dask graphs with CuPy operators, and each chunked throughput as a
fraction of the same function on one CuPy array of the whole size.

    export PYTHONPATH=/tmp/dask-site && source .gpu/setup.sh && \\
        python3 -m benchmarks.dask_chunks --gib 16 --out $OUT/dask_chunks.json

(docs/contributing.md: the dask[array] wheels for the GPU machine.) Needs
about 3x the array's size of GPU memory (input, output, halos in flight):
16 GiB fits an H100's 80 GB. `--gib 0.25` is a quick check.

Throughput counts the bytes an ideal implementation moves: the stencil
reads and writes the array once (2 x size), the reduction reads it once.
Times are wall clock from submitting the graph (Dask's threaded scheduler,
`persist`) to a device synchronisation, the median of `--reps` runs after a
first one (compilation, pool growth). The stencil leaves the one-element
border of each block unwritten: map_overlap trims it (depth 1).
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import time

import numpy as np
from numba import prange

import numba_mlir_gpu


# ---------------------------------------------------------------- our functions

@numba_mlir_gpu.njit(target="gpu")
def laplacian(x):
    out = np.empty_like(x)
    four = np.float32(4.0)
    for i in prange(1, x.shape[0] - 1):
        for j in prange(1, x.shape[1] - 1):
            out[i, j] = x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1] - four * x[i, j]
    return out


@numba_mlir_gpu.njit(target="gpu")
def sum_squares_chunk(x, axis, keepdims):
    total = 0.0
    for i in prange(x.shape[0]):
        for j in range(x.shape[1]):
            v = np.float64(x[i, j])
            total += v * v
    return np.full((1, 1), total)


@numba_mlir_gpu.njit(target="gpu")
def sum_aggregate(x, axis, keepdims):
    return np.full((1, 1), x.sum())


# ---------------------------------------------------------------- CuPy operators

def cupy_laplacian(x):
    import cupy as cp
    out = cp.empty_like(x)
    out[1:-1, 1:-1] = (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]
                       - np.float32(4.0) * x[1:-1, 1:-1])
    return out


def cupy_sum_squares_chunk(x, axis, keepdims):
    import cupy as cp
    return cp.sum(cp.square(x, dtype=cp.float64)).reshape(1, 1)


def cupy_sum_aggregate(x, axis, keepdims):
    return x.sum().reshape(1, 1)


# ---------------------------------------------------------------- graphs

def make_chunk(shape, block_id=None):
    import cupy as cp
    rs = cp.random.RandomState(seed=1 + block_id[0] * 65536 + block_id[1])
    return rs.random_sample(shape, dtype=cp.float32)


def input_array(da, cp, n: int, chunk: int):
    """An n x n float32 Dask array of CuPy chunks, made on the GPU and kept there."""
    blocks = (chunk,) * (n // chunk)
    x = da.map_blocks(functools.partial(make_chunk, (chunk, chunk)), chunks=(blocks, blocks),
                      dtype=np.float32, meta=cp.empty((0, 0), dtype=cp.float32))
    return x.persist()


def stencil_graph(x, fn):
    return x.map_overlap(fn, depth=1, boundary="reflect", dtype=np.float32,
                         meta=x._meta)


def reduction_graph(da, x, chunk_fn, aggregate_fn):
    return da.reduction(x, chunk_fn, aggregate_fn, keepdims=True, dtype=np.float64,
                        split_every=8, concatenate=True)[0, 0]


# ---------------------------------------------------------------- timing

def timed(cp, run, reps: int):
    """(median seconds, last result): `run` once untimed, then `reps` times."""
    result = run()
    cp.cuda.runtime.deviceSynchronize()
    seconds = []
    for _ in range(reps):
        del result
        start = time.perf_counter()
        result = run()
        cp.cuda.runtime.deviceSynchronize()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


def chunked_figures(results: dict, da, cp, n: int, args) -> None:
    nbytes = n * n * 4
    x = input_array(da, cp, n, args.chunk)
    cp.cuda.runtime.deviceSynchronize()
    samples = {}
    for name, fn in (("ours", laplacian), ("cupy", cupy_laplacian)):
        seconds, out = timed(cp, lambda: stencil_graph(x, fn).persist(), args.reps)
        results[f"stencil_{name}_s"] = seconds
        results[f"stencil_{name}_gbps"] = gbps(2 * nbytes, seconds)
        samples[name] = cp.asnumpy(out[:256, :256].compute())[1:-1, 1:-1]
        del out
    results["stencil_max_abs_difference"] = float(np.max(np.abs(samples["ours"]
                                                                - samples["cupy"])))
    for name, (chunk_fn, aggregate_fn) in (
            ("ours", (sum_squares_chunk, sum_aggregate)),
            ("cupy", (cupy_sum_squares_chunk, cupy_sum_aggregate))):
        seconds, total = timed(cp, lambda: reduction_graph(da, x, chunk_fn, aggregate_fn)
                               .compute(), args.reps)
        results[f"reduction_{name}_s"] = seconds
        results[f"reduction_{name}_gbps"] = gbps(nbytes, seconds)
        results[f"reduction_{name}_value"] = float(total)
    seconds, _ = timed(cp, lambda: (x * x).sum(dtype=np.float64).compute(), args.reps)
    results["reduction_dask_builtin_gbps"] = gbps(nbytes, seconds)


def single_figures(results: dict, cp, n: int, args) -> None:
    """The same functions on one CuPy array of the whole size."""
    nbytes = n * n * 4
    cp.get_default_memory_pool().free_all_blocks()      # the chunks CuPy's pool kept
    whole = cp.random.RandomState(seed=1).random_sample((n, n), dtype=cp.float32)
    for name, fn in (("ours", laplacian), ("cupy", cupy_laplacian)):
        try:
            seconds, _ = timed(cp, lambda: fn(whole), args.reps)
            results[f"stencil_{name}_single_gbps"] = gbps(2 * nbytes, seconds)
        except Exception as exc:     # noqa: BLE001  (reported, the other figures stand)
            results[f"stencil_{name}_single_error"] = f"{type(exc).__name__}: {exc}"
    for name, fn in (("ours", sum_squares_chunk), ("cupy", cupy_sum_squares_chunk)):
        try:
            seconds, _ = timed(cp, lambda: fn(whole, (0, 1), True), args.reps)
            results[f"reduction_{name}_single_gbps"] = gbps(nbytes, seconds)
        except Exception as exc:     # noqa: BLE001
            results[f"reduction_{name}_single_error"] = f"{type(exc).__name__}: {exc}"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=16.0, help="array size (float32), GiB")
    parser.add_argument("--chunk", type=int, default=8192, help="chunk side (square chunks)")
    parser.add_argument("--workers", type=int, default=4, help="Dask threads")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args(argv)

    import cupy as cp
    import dask
    import dask.array as da

    side = math.isqrt(int(args.gib * 2**30) // 4)
    n = max(args.chunk, side // args.chunk * args.chunk)
    nbytes = n * n * 4
    results = {"n": n, "chunk": args.chunk, "gib": nbytes / 2**30, "workers": args.workers,
               "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "dask": dask.__version__, "cupy": cp.__version__}
    print(f"{n} x {n} float32 ({nbytes / 2**30:.2f} GiB), chunks {args.chunk}^2 "
          f"({(n // args.chunk) ** 2}), {args.workers} threads, {results['device']}",
          flush=True)

    with dask.config.set(scheduler="threads", num_workers=args.workers):
        chunked_figures(results, da, cp, n, args)
    single_figures(results, cp, n, args)      # the chunked input is freed by now
    for kind in ("stencil", "reduction"):
        for name in ("ours", "cupy"):
            single = results.get(f"{kind}_{name}_single_gbps")
            if single:
                results[f"{kind}_{name}_chunked_fraction"] = results[f"{kind}_{name}_gbps"] / single

    for key, value in results.items():
        print(f"{key:36s} {value:.4g}" if isinstance(value, float) else f"{key:36s} {value}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
