"""GPU runtime probe: call overhead, fresh-array cost, host transfers, cache.

Run on the GPU machine from a checkout (`python3 -m benchmarks.runtime_probe LABEL`);
prints one table. Not a test: numbers only (the benchmark suite in
benchmarks/ is the reference for reported results).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback

import numpy as np
from numba import prange

import numba_mlir_gpu
from benchmarks.run import cuda_time

LABEL = sys.argv[1] if len(sys.argv) > 1 else "run"
ROWS: list[tuple[str, str]] = []


def row(name: str, value: str) -> None:
    ROWS.append((name, value))
    print(f"[{LABEL}] {name}: {value}", flush=True)


def section(fn):
    try:
        fn()
    except Exception:          # keep the other sections
        row(fn.__name__, "FAILED " + traceback.format_exc().strip().splitlines()[-1])
        traceback.print_exc()
    return fn


def tiny(x, y):
    for i in prange(x.shape[0]):
        y[i] = x[i] + 1.0


def saxpy_new(a, x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]
    return out


def saxpy_into(out, a, x, y):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


def total(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i]
    return s


def events_ms(fn, reps=20):
    """(median, spread) in ms of CUDA-event timings (benchmarks.run.cuda_time)."""
    import cupy as cp
    t = cuda_time(cp, fn, reps, warmup=1)
    return t["median_s"] * 1e3, (t["max_s"] - t["min_s"]) * 1e3


def wall_us(fn, calls=3000, repeat=5):
    import cupy as cp
    for _ in range(200):
        fn()
    cp.cuda.Device().synchronize()
    best = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        cp.cuda.Device().synchronize()
        best.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(best), min(best)


@section
def call_overhead():
    import cupy as cp
    from numba import typeof
    f = numba_mlir_gpu.njit(target="gpu")(tiny)
    x = cp.arange(256, dtype=cp.float32)
    y = cp.zeros(256, dtype=cp.float32)
    f(x, y)
    assert np.array_equal(y.get(), np.arange(256, dtype=np.float32) + 1)
    med, best = wall_us(lambda: f(x, y))
    row("tiny fn on 2 CuPy arrays, us/call (median, best)", f"{med:.2f}, {best:.2f}")
    med, _ = wall_us(lambda: cp.add(x, 1.0, out=y))
    row("cupy.add(x, 1, out=y) us/call", f"{med:.2f}")
    t = time.perf_counter()
    for _ in range(10000):
        x.__cuda_array_interface__
    row("x.__cuda_array_interface__ us", f"{(time.perf_counter() - t) / 10000 * 1e6:.2f}")
    t = time.perf_counter()
    for _ in range(10000):
        typeof(x)
    row("numba.typeof(cupy array) us", f"{(time.perf_counter() - t) / 10000 * 1e6:.2f}")
    single = []
    for _ in range(300):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        f(x, y)
        single.append(time.perf_counter() - t)
    row("tiny fn, one call on an idle GPU, host us (median)", f"{statistics.median(single) * 1e6:.2f}")
    shapes = numba_mlir_gpu.njit(target="gpu")(lambda a, b: a.shape[0] + b.shape[0])
    shapes(x, y)
    t = time.perf_counter()
    for _ in range(10000):
        shapes(x, y)
    row("no-kernel fn on 2 CuPy arrays (dispatch+typeof+unbox) us", f"{(time.perf_counter() - t) / 10000 * 1e6:.2f}")
    empty = cp.RawKernel(r'extern "C" __global__ void empty(float *y) {}', "empty")
    empty((1,), (256,), (y,))
    med, _ = wall_us(lambda: empty((1,), (256,), (y,)))
    row("cupy RawKernel empty launch us/call", f"{med:.2f}")
    host = numba_mlir_gpu.njit(target="gpu")(lambda a: a + 1)
    host(1)
    t = time.perf_counter()
    for _ in range(10000):
        host(1)
    row("scalar-only fn (no kernel) us/call", f"{(time.perf_counter() - t) / 10000 * 1e6:.2f}")


@section
def fresh_arrays():
    import cupy as cp
    n = 1 << 26
    f = numba_mlir_gpu.njit(target="gpu")(saxpy_new)
    g = numba_mlir_gpu.njit(target="gpu")(saxpy_into)
    rng = np.random.default_rng(0)
    xh = rng.random(n, dtype=np.float32)
    yh = rng.random(n, dtype=np.float32)
    x, y = cp.asarray(xh), cp.asarray(yh)
    out = f(np.float32(2), x, y)
    got = out.get() if hasattr(out, "get") else np.asarray(out)
    ref = 2 * xh.astype(np.float64) + yh
    row("saxpy internal alloc: result type", type(out).__module__ + "." + type(out).__name__)
    row("saxpy internal alloc: rel err", f"{np.linalg.norm(got - ref) / np.linalg.norm(ref):.2e}")
    del out
    med, spread = events_ms(lambda: f(np.float32(2), x, y))
    row("saxpy 2^26 f32 CuPy in, output allocated inside, ms (median, spread)",
        f"{med:.3f}, {spread:.3f} = {3 * 4 * n / med / 1e6:.0f} GB/s")
    o = cp.empty_like(x)
    med, spread = events_ms(lambda: g(o, np.float32(2), x, y))
    row("saxpy 2^26 f32 CuPy in, output preallocated, ms", f"{med:.3f}, {spread:.3f} = "
        f"{3 * 4 * n / med / 1e6:.0f} GB/s")
    med, _ = events_ms(lambda: cp.copyto(o, x))
    row("device-to-device copy 2^26 f32, ms", f"{med:.3f} = {2 * 4 * n / med / 1e6:.0f} GB/s")
    # host inputs, fresh output read back on the host
    t0 = time.perf_counter()
    out = f(np.float32(2), xh, yh)
    s = float(out[-1]) + float(out[0])
    row("saxpy 2^26 f32 NumPy in, fresh out, first read on host, s",
        f"{time.perf_counter() - t0:.3f} (check {s == float(2 * xh[-1] + yh[-1]) + float(2 * xh[0] + yh[0])})")


@section
def host_transfers():
    import cupy as cp
    n = 1 << 26
    xh = np.random.default_rng(1).random(n, dtype=np.float32)
    f = numba_mlir_gpu.njit(target="gpu")(total)
    expected = float(xh.astype(np.float64).sum())
    got = f(xh)
    row("sum of NumPy 2^26 f32: rel err", f"{abs(got - expected) / expected:.2e}")
    times = []
    for _ in range(5):
        t = time.perf_counter()
        f(xh)
        times.append(time.perf_counter() - t)
    ours = min(times)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        d = cp.asarray(xh)
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
        del d
    theirs = min(times)
    row("H2D: our call reading a NumPy array (256 MiB), GB/s",
        f"{xh.nbytes / ours / 1e9:.2f} (whole call {ours * 1e3:.1f} ms)")
    row("H2D: cupy.asarray of the same array, GB/s", f"{xh.nbytes / theirs / 1e9:.2f}")
    g = numba_mlir_gpu.njit(target="gpu")(saxpy_into)
    out = np.empty_like(xh)
    g(out, np.float32(2), xh, xh)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        g(out, np.float32(2), xh, xh)
        times.append(time.perf_counter() - t)
    row("saxpy_into all NumPy (x in, y in, out written): ms", f"{min(times) * 1e3:.1f}")


CACHED = textwrap.dedent("""
    import numpy as np
    from numba import prange
    import numba_mlir_gpu

    @numba_mlir_gpu.njit(target="gpu", cache={cache})
    def saxpy_sum(a, x, y):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            out[i] = a * x[i] + y[i]
        return out.sum()
""")
FIRST = textwrap.dedent("""
    import time, json, numpy as np
    import numba_mlir_gpu
    t = time.perf_counter()
    import cached_fn
    r = cached_fn.saxpy_sum(np.float32(2), np.ones(1000, np.float32), np.ones(1000, np.float32))
    from numba_mlir_gpu.compiler import jit
    print(json.dumps({"s": time.perf_counter() - t, "r": float(r),
                      "runs": getattr(jit, "PIPELINE_RUNS", -1)}))
""")


@section
def cache_timings():
    for cache in (False, True):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "cached_fn.py"), "w") as f:
                f.write(CACHED.format(cache=cache))
            env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(folder, "cache"),
                       PYTHONPATH=folder + os.pathsep + os.environ.get("PYTHONPATH", ""))
            for attempt in (1, 2):
                done = subprocess.run([sys.executable, "-c", FIRST], cwd=folder, env=env,
                                      capture_output=True, text=True, timeout=120)
                if done.returncode:
                    row(f"cache={cache} process {attempt}", "FAILED " + done.stderr[-300:])
                    continue
                data = json.loads(done.stdout.strip().splitlines()[-1])
                row(f"cache={cache} process {attempt}: first call s (package already imported), result, pipeline runs",
                    f"{data['s']:.3f}, {data['r']}, {data['runs']}")


print(f"\n| {LABEL} | value |\n|---|---|")
for name, value in ROWS:
    print(f"| {name} | {value} |")
