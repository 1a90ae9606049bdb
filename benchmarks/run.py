"""Side-by-side benchmarks: numba-mlir-gpu, CuPy, Numba CPU `parallel=True`
and NumPy, in one process; writes a markdown table, a JSON file and a plot.

    source .gpu/setup.sh && python3 -m benchmarks.run --out docs/benchmarks

On a GPU machine (CuPy present) our functions get CuPy arrays in place and
GPU times come from CUDA events around each call (warm-up first, the median
of several repetitions). Without a GPU the same cases run on the CPU target at
a tiny size (`--size tiny`), CuPy skipped: a smoke test, not a measurement.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import warnings
from typing import Callable, Optional

import numpy as np

import numba
import numba_mlir_gpu
import numba_mlir_gpu.compiler.passes

ENV_LAUNCH = getattr(numba_mlir_gpu.compiler.passes, "ENV_LAUNCH", "NUMBA_MLIR_GPU_LAUNCH")

from .cases import Case, cases, cupy_kernels, tiny

# ---------------------------------------------------------------- timers

def _summary(seconds: list) -> dict:
    return {"median_s": statistics.median(seconds), "min_s": min(seconds),
            "max_s": max(seconds), "reps": len(seconds)}


def host_time(fn: Callable, reps: int, warmup: int = 1, sync: Callable = lambda: None) -> dict:
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return _summary(times)


def cuda_time(cp, fn: Callable, reps: int, warmup: int = 2) -> dict:
    """CUDA events on the current (default) stream around each call."""
    for _ in range(warmup):
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
    return _summary(times)


# ---------------------------------------------------------------- helpers

class Env:
    """What this run can use, and how it times."""

    def __init__(self, args):
        self.cp = None
        if args.target == "gpu":
            import cupy
            self.cp = cupy
        self.target = args.target
        self.reps = args.reps
        self.cpu_reps = max(1, min(args.reps, 3))
        self.skip = set(args.skip)

    @property
    def gpu(self) -> bool:
        return self.cp is not None

    def to_device(self, args: tuple) -> tuple:
        if not self.gpu:
            return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        return tuple(self.cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)

    def to_host(self, value):
        if self.gpu and isinstance(value, self.cp.ndarray):
            return self.cp.asnumpy(value)
        return np.asarray(value)

    def time_ours(self, fn: Callable) -> dict:
        if self.gpu:
            return cuda_time(self.cp, fn, self.reps)
        return host_time(fn, self.reps)

    def cpu_reps_for(self, fn: Callable, args: tuple, budget_s: float = 2.0) -> int:
        """Repetitions for a CPU version, fewer when one call is slow (after
        one timed warm-up call)."""
        t0 = time.perf_counter()
        fn(*args)
        once = time.perf_counter() - t0
        return max(1, min(self.cpu_reps, int(budget_s / max(once, 1e-9))))

    def free(self) -> None:
        if self.gpu:
            self.cp.get_default_memory_pool().free_all_blocks()


def rel_error(value, ref) -> float:
    value = np.asarray(value, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if value.shape != ref.shape or not np.all(np.isfinite(value) == np.isfinite(ref)):
        return math.inf
    finite = np.isfinite(ref)
    num = np.linalg.norm((value - ref)[finite])
    den = np.linalg.norm(ref[finite])
    return float(num / den) if den else float(num)


def results_of(case: Case, args: tuple, returned) -> list:
    if case.outputs:
        return [args[i] for i in case.outputs]
    return [returned]


def reference(case: Case, host_args: tuple) -> list:
    """NumPy's answer (float64 where it matters), else Numba's CPU one."""
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in host_args)
    if case.numpy is not None:
        up = tuple(a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype == np.float32
                   else a for a in args)
        returned = case.numpy(*up)
        return results_of(case, up, returned)
    returned = numba.njit(case.fn)(*args)
    return results_of(case, args, returned)


def work_of(case: Case, host_args: tuple, ref: list) -> tuple[str, float]:
    kind, amount = case.work
    value = amount(host_args)
    if kind == "flops" and value is None:              # Mandelbrot: 8 flop per iteration
        value = 8.0 * float(np.sum(ref[0]))
    return kind, float(value)


def rate(kind: str, amount: float, seconds: Optional[float]) -> Optional[float]:
    if not seconds:
        return None
    return amount / seconds / 1e9            # GB/s or GFLOP/s


def ours_njit(fn: Callable, target: str):
    return numba_mlir_gpu.njit(target=target)(fn)


# ---------------------------------------------------------------- one case

def run_case(env: Env, case: Case, size: int, kernels: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    host_args = case.make(rng, size)
    ref = reference(case, host_args)
    kind, amount = work_of(case, host_args, ref)
    row = {"case": case.name, "size": _shape_of(host_args), "work": kind, "amount": amount,
           "notes": case.notes, "cupy_label": case.cupy_label}

    # numba-mlir-gpu: first call (compilation included), check, then time
    _guarded(row, "ours", lambda: _run_ours(env, case, host_args, ref, row))
    env.free()

    if env.gpu and kind == "bytes":
        _guarded(row, "same_size_copy", lambda: row.__setitem__(
            "same_size_copy", same_size_copy(env, amount)))
    if env.gpu and case.cupy is not None and "cupy" not in env.skip:
        _guarded(row, "cupy", lambda: _run_cupy(env, case, host_args, kernels, row))
    env.free()
    if "numba" not in env.skip:
        _guarded(row, "numba_parallel", lambda: _run_numba(env, case, host_args, row))
    if "numpy" not in env.skip and case.numpy is not None:
        nargs = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in host_args)
        _guarded(row, "numpy", lambda: row.__setitem__("numpy", host_time(
            lambda: case.numpy(*nargs), env.cpu_reps_for(case.numpy, nargs), warmup=0)))

    for impl in ("ours", "cupy", "numba_parallel", "numpy", "same_size_copy"):
        if impl in row:
            row[impl]["rate"] = rate(kind, amount, row[impl]["median_s"])
    if "cupy" in row and "ours" in row:
        row["ours_vs_cupy"] = row["cupy"]["median_s"] / row["ours"]["median_s"]
    if "cupy_to_host" in row and "ours" in row:
        row["ours_vs_cupy_to_host"] = row["cupy_to_host"]["median_s"] / row["ours"]["median_s"]
    return row


def _guarded(row: dict, impl: str, run: Callable) -> None:
    """A competitor that fails is reported in the row, not fatal to the run."""
    try:
        run()
    except Exception as exc:
        row[f"{impl}_error"] = f"{type(exc).__name__}: {_first_line(exc)}"
        print(f"{row.get('case', 'run')}: {impl} failed: {row[f'{impl}_error']}", flush=True)


def _run_cupy(env: Env, case: Case, host_args: tuple, kernels: dict, row: dict) -> None:
    cargs = env.to_device(host_args)
    case.cupy(env.cp, kernels, cargs)                 # compile (NVRTC) outside the timing
    row["cupy"] = cuda_time(env.cp, lambda: case.cupy(env.cp, kernels, cargs), env.reps)
    if case.cupy_to_host is not None:
        row["cupy_to_host"] = cuda_time(
            env.cp, lambda: case.cupy_to_host(env.cp, kernels, cargs), env.reps)


def _run_numba(env: Env, case: Case, host_args: tuple, row: dict) -> None:
    nb = case.numba() if case.numba is not None else numba.njit(parallel=True)(case.fn)
    nargs = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in host_args)
    t0 = time.perf_counter()
    nb(*nargs)
    row["numba_first_call_s"] = time.perf_counter() - t0
    row["numba_parallel"] = host_time(lambda: nb(*nargs), env.cpu_reps_for(nb, nargs), warmup=0)


def _run_ours(env: Env, case: Case, host_args: tuple, ref: list, row: dict,
              dev_args: Optional[tuple] = None) -> None:
    ours = case.ours(env.target) if case.ours is not None else ours_njit(case.fn, env.target)
    if dev_args is None:
        dev_args = env.to_device(host_args)
    t0 = time.perf_counter()
    returned = ours(*dev_args)
    if env.gpu:
        env.cp.cuda.Device().synchronize()
    row["ours_first_call_s"] = time.perf_counter() - t0
    got = [env.to_host(v) for v in results_of(case, dev_args, returned)]
    row["ours_rel_error"] = max(rel_error(g, r) for g, r in zip(got, ref))
    row["ours_correct"] = row["ours_rel_error"] <= case.tol
    row["ours"] = env.time_ours(lambda: ours(*dev_args))


def _first_line(exc: Exception) -> str:
    import re
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if "does not support" in line or "Unsupported" in line]
    return (useful or lines or [""])[0][:200]


def _shape_of(args: tuple) -> str:
    for a in args:
        if isinstance(a, np.ndarray):
            return "x".join(str(s) for s in a.shape) + f" {a.dtype}"
    return "x".join(str(a) for a in args[:2])


# ---------------------------------------------------------------- special sections

def copy_bandwidth(env: Env, size: int) -> dict:
    """Device-to-device copies (cudaMemcpy through cupy.copyto), bytes read + written."""
    out = {}
    for dtype in (np.float32, np.float64):
        src = env.cp.random.random(size, dtype=dtype)
        dst = env.cp.empty_like(src)
        t = cuda_time(env.cp, lambda: env.cp.copyto(dst, src), env.reps)
        t["rate"] = 2 * src.nbytes / t["median_s"] / 1e9
        out[np.dtype(dtype).name] = t
        del src, dst
    env.free()
    out["GBps"] = max(v["rate"] for v in out.values())
    return out


def same_size_copy(env: Env, traffic: float) -> dict:
    """A device-to-device copy moving `traffic` bytes (half read, half
    written): the bandwidth a kernel of that size can reach, fixed costs of
    a launch included (at 32 MiB an H100's copy runs at about 60% of its
    rate at 256 MiB)."""
    src = env.cp.zeros(max(1, int(traffic) // 2), dtype=np.uint8)
    dst = env.cp.empty_like(src)
    t = cuda_time(env.cp, lambda: env.cp.copyto(dst, src), env.reps)
    del src, dst
    env.free()
    return t


def call_latency(env: Env, calls: int = 200, batches: int = 15) -> dict:
    """Wall-clock seconds per call of a one-kernel function on 16-element arrays."""
    x = np.arange(16, dtype=np.float32)
    res = {}
    ours = ours_njit(tiny, env.target)
    dx, dout = env.to_device((x, np.empty_like(x)))
    sync = env.cp.cuda.Device().synchronize if env.gpu else (lambda: None)
    res["ours"] = _per_call(lambda: ours(dx, dout), calls, batches, sync)
    # the same pipeline behind Numba's own dispatcher (no frontend/dispatch.py shortcut)
    plain = numba.njit(pipeline_class=numba_mlir_gpu.api.pipeline_for(env.target))(tiny)
    res["ours_numba_dispatcher"] = _per_call(lambda: plain(dx, dout), calls, batches, sync)
    if env.gpu:
        # Numba's dispatcher alone: typing and unboxing the same two device
        # arrays for a function that does nothing with them
        no_work = numba.njit(_shapes)
        res["numba_dispatch_no_work"] = _per_call(lambda: no_work(dx, dout), calls, batches)
        ours_no_work = ours_njit(_shapes, env.target)
        res["ours_no_kernel"] = _per_call(lambda: ours_no_work(dx, dout), calls, batches)
    if env.gpu and "cupy" not in env.skip:
        kernel = env.cp.ElementwiseKernel("T x", "T out", "out = x + 1", "bench_tiny")

        def launch_and_sync():
            kernel(dx, dout)
            sync()
        res["cupy_launch_and_sync"] = _per_call(launch_and_sync, calls, batches, sync)
        res["cupy_launch"] = _per_call(lambda: kernel(dx, dout), calls, batches, sync)
    if "numba" not in env.skip:
        nb = numba.njit(parallel=True)(tiny)
        hx, hout = x.copy(), np.empty_like(x)
        res["numba_parallel"] = _per_call(lambda: nb(hx, hout), calls, batches)
    hx, hout = x.copy(), np.empty_like(x)
    res["numpy"] = _per_call(lambda: np.add(hx, 1.0, out=hout), calls, batches)
    return res


def _shapes(x, out):
    return x.shape[0] + out.shape[0]


def _per_call(fn: Callable, calls: int, batches: int, sync: Callable = lambda: None) -> float:
    for _ in range(10):
        fn()
    sync()
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        per.append((time.perf_counter() - t0) / calls)
    return statistics.median(per)


def host_arrays(env: Env, size: int) -> dict:
    """Our functions on NumPy inputs against a plain CuPy copy of the same data."""
    from .cases import array_sum, saxpy
    cp = env.cp
    rng = np.random.default_rng(1)
    x = rng.random(size).astype(np.float32)
    y = rng.random(size).astype(np.float32)
    out = np.empty_like(x)
    res = {"size": size, "nbytes": x.nbytes}
    hsum = ours_njit(array_sum, env.target)
    hsum(x)
    t = host_time(lambda: hsum(x), env.cpu_reps)
    res["ours_sum"] = {**t, "H2D_GBps": x.nbytes / t["median_s"] / 1e9}
    t = host_time(lambda: cp.asarray(x), env.cpu_reps, sync=cp.cuda.Device().synchronize)
    res["cupy_asarray"] = {**t, "H2D_GBps": x.nbytes / t["median_s"] / 1e9}
    t = host_time(lambda: cp.asnumpy(cp.asarray(x)), env.cpu_reps)
    res["cupy_roundtrip"] = {**t}
    res["cupy_asnumpy_GBps"] = x.nbytes / (t["median_s"] - res["cupy_asarray"]["median_s"]) / 1e9
    hsaxpy = ours_njit(saxpy, env.target)
    a = np.float32(2.5)
    hsaxpy(a, x, y, out)
    assert np.allclose(out, a * x + y, rtol=1e-6)
    t = host_time(lambda: hsaxpy(a, x, y, out), env.cpu_reps)
    # needed traffic: x and y to the device, out back
    res["ours_saxpy"] = {**t, "bus_GBps": 3 * x.nbytes / t["median_s"] / 1e9}
    kernel = cupy_kernels(cp)["saxpy"]

    def cupy_saxpy():
        dx, dy = cp.asarray(x), cp.asarray(y)
        kernel(a, dx, dy, cp.empty_like(dx)).get(out=out)
    t = host_time(cupy_saxpy, env.cpu_reps)
    res["cupy_saxpy"] = {**t, "bus_GBps": 3 * x.nbytes / t["median_s"] / 1e9}
    env.free()
    return res


VARIANT_CASES = ("elementwise_f32", "elementwise_f64", "fused_prange", "stencil5_2d",
                 "black_scholes")


def launch_variants(env: Env, shapes: list[str], all_cases: list[Case], copy_gbps: float) -> list:
    """The same cases compiled with other launch shapes ($NUMBA_MLIR_GPU_LAUNCH);
    inputs made once per case."""
    rows = []
    saved = os.environ.get(ENV_LAUNCH)
    try:
        for case in all_cases:
            if case.name not in VARIANT_CASES:
                continue
            host_args = case.make(np.random.default_rng(0), case.gpu_size)
            ref = reference(case, host_args)
            kind, amount = work_of(case, host_args, ref)
            dev_args = env.to_device(host_args)
            for shape in shapes:
                os.environ[ENV_LAUNCH] = shape
                row = {}
                try:
                    _run_ours(env, case, host_args, ref, row, dev_args)
                except Exception as exc:
                    print(f"variant {shape} {case.name}: {_first_line(exc)}", flush=True)
                    continue
                t = row["ours"]
                gbps = rate(kind, amount, t["median_s"])
                rows.append({"shape": shape, "case": case.name, "median_s": t["median_s"],
                             "min_s": t["min_s"], "max_s": t["max_s"], "rate": gbps,
                             "copy_fraction": gbps / copy_gbps if kind == "bytes" else None,
                             "correct": row["ours_correct"],
                             "first_call_s": row["ours_first_call_s"]})
                print(f"variant {shape:8s} {case.name:16s} {t['median_s']*1e3:9.3f} ms "
                      f"(min {t['min_s']*1e3:.3f}) {gbps:8.1f} correct={row['ours_correct']}",
                      flush=True)
            del dev_args
            env.free()
    finally:
        if saved is None:
            os.environ.pop(ENV_LAUNCH, None)
        else:
            os.environ[ENV_LAUNCH] = saved
    return rows


# ---------------------------------------------------------------- targets (issues 5, 13)

def targets(results: dict) -> list[dict]:
    rows = {r["case"]: r for r in results["cases"]}
    copy = results.get("copy", {}).get("GBps")
    out = []

    def add(name, value, ok, text):
        out.append({"target": name, "value": value, "met": bool(ok), "measured": text})
    if not results["gpu"]:
        return out
    for c in ("elementwise_f32", "elementwise_f64"):
        r = rows.get(c)
        if r and "cupy" in r and "ours" in r:
            frac = r["ours"]["rate"] / copy
            add(f"{c}: >= 90% of D2D copy bandwidth", frac, frac >= 0.9, f"{frac:.0%}")
            add(f"{c}: not slower than CuPy ElementwiseKernel", r["ours_vs_cupy"],
                r["ours_vs_cupy"] >= 1.0, f"{r['ours_vs_cupy']:.2f}x")
    for c in ("fused_expr", "fused_prange"):
        r = rows.get(c)
        if r and "ours_error" in r:
            add(f"{c}: >= 2x CuPy unfused operators", None, False, "unsupported on device arrays")
        elif r and "cupy" in r:
            add(f"{c}: >= 2x CuPy unfused operators", r["ours_vs_cupy"],
                r["ours_vs_cupy"] >= 2.0, f"{r['ours_vs_cupy']:.2f}x")
    for c in ("sum_f32", "max_f32"):
        r = rows.get(c)
        if r and "cupy" in r and "ours" in r:
            host = (f" ({r['ours_vs_cupy_to_host']:.2f}x against CuPy with `.item()`)"
                    if "ours_vs_cupy_to_host" in r else "")
            add(f"{c}: >= 90% of CuPy", r["ours_vs_cupy"], r["ours_vs_cupy"] >= 0.9,
                f"{r['ours_vs_cupy']:.2f}x{host}")
    structured_targets(rows, copy, add)
    lat = results.get("call_latency", {}).get("ours")
    if lat is not None:
        add("call overhead of a tiny function on device arrays <= 10 us", lat, lat <= 10e-6,
            f"{lat * 1e6:.1f} us")
    firsts = [r["ours_first_call_s"] for r in results["cases"] if "ours_first_call_s" in r]
    worst = max(firsts, default=math.inf)
    add("first-call compile < 2 s for each benchmark function", worst, worst < 2.0,
        f"max {worst:.2f} s")
    return out


def structured_targets(rows: dict, copy: float, add: Callable) -> None:
    """The targets of issue 13 (structured kernels)."""
    def vs_cupy(case, least):
        r = rows.get(case)
        if r and "ours_vs_cupy" in r:
            add(f"{case}: >= {least}x CuPy", r["ours_vs_cupy"], r["ours_vs_cupy"] >= least,
                f"{r['ours_vs_cupy']:.2f}x")
    for c in ("row_softmax", "layer_norm"):
        vs_cupy(c, 3.0)
        r = rows.get(c)
        if r and "ours" in r and copy:
            frac = r["ours"]["rate"] / copy
            same = r.get("same_size_copy", {}).get("rate")
            text = f"{frac:.0%}" + (f" ({r['ours']['rate'] / same:.0%} of a copy of the same "
                                    "bytes)" if same else "")
            add(f"{c}: >= 50% of D2D copy bandwidth", frac, frac >= 0.5, text)
    for c in ("row_l2_norms", "column_sums", "kmeans_assign", "stencil5_2d", "mandelbrot",
              "histogram"):
        vs_cupy(c, 1.0)
    for c in ("kernel_transpose", "kernel_histogram"):     # issue 16: the same kernel as CuPy's
        vs_cupy(c, 0.9)
    vs_cupy("pairwise_dist", 1.5)


# ---------------------------------------------------------------- output

def _ms(t: Optional[dict]) -> str:
    return f"{t['median_s'] * 1e3:.3f}" if t else "—"


def _rate(t: Optional[dict], unit: str) -> str:
    return f"{t['rate']:.0f} {unit}" if t and t.get("rate") else "—"


def markdown(results: dict) -> str:
    lines = [f"Command: `{results['command']}`", "",
             f"Device: {results['device']}; {results['host']}. "
             f"numba {results['versions']['numba']}, numpy {results['versions']['numpy']}"
             + (f", CuPy {results['versions']['cupy']}" if results["versions"].get("cupy") else "")
             + ".", ""]
    if "copy" in results:
        c = results["copy"]
        lines += [f"Device-to-device copy (cudaMemcpy, read + write): float32 "
                  f"{c['float32']['rate']:.0f} GB/s, float64 {c['float64']['rate']:.0f} GB/s; "
                  f"reference: {c['GBps']:.0f} GB/s.", ""]
    lines += ["Times are medians in milliseconds (GPU: CUDA events; CPU: wall clock). "
              "*vs CuPy* is CuPy's time over ours (above 1: ours is faster). "
              "*% copy* is our bandwidth over the copy's; *% same-size copy* over that of "
              "a copy moving the case's bytes (launch and ramp-up costs weigh on small "
              "sizes).", "",
              "| case | size | ours ms | ours rate | CuPy ms | CuPy is | vs CuPy | % copy | "
              "% same-size copy | Numba CPU parallel ms | NumPy ms | ours first call s | "
              "rel. error |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    copy = results.get("copy", {}).get("GBps")
    for r in results["cases"]:
        unit = "GB/s" if r["work"] == "bytes" else "GFLOP/s"
        if "ours" not in r:
            lines.append(f"| {r['case']} | {r['size']} | — | — | {_ms(r.get('cupy'))} | "
                         f"{r['cupy_label'] if 'cupy' in r else '—'} | — | — | — | "
                         f"{_ms(r.get('numba_parallel'))} | {_ms(r.get('numpy'))} | — | "
                         f"not supported: {r['ours_error']} |")
            continue
        frac = (f"{r['ours']['rate'] / copy:.0%}" if copy and r["work"] == "bytes" else "—")
        same = r.get("same_size_copy", {}).get("rate")
        same = f"{r['ours']['rate'] / same:.0%}" if same and r["ours"].get("rate") else "—"
        vs = f"{r['ours_vs_cupy']:.2f}x" if "ours_vs_cupy" in r else "—"
        err = f"{r['ours_rel_error']:.1e}" + ("" if r["ours_correct"] else " **WRONG**")
        lines.append(
            f"| {r['case']} | {r['size']} | {_ms(r['ours'])} | {_rate(r['ours'], unit)} | "
            f"{_ms(r.get('cupy'))} | {r['cupy_label'] if 'cupy' in r else '—'} | {vs} | {frac} | "
            f"{same} | "
            f"{_ms(r.get('numba_parallel'))} | {_ms(r.get('numpy'))} | "
            f"{r['ours_first_call_s']:.2f} | {err} |")
    to_host = [r for r in results["cases"] if "ours_vs_cupy_to_host" in r]
    if to_host:
        lines += ["", "Reductions return a host scalar; CuPy's are 0-d device arrays, so the "
                  "table times them without the copy to the host. With `.item()` (the same "
                  "result as ours, on the host):", "",
                  "| case | ours ms | CuPy + `.item()` ms | vs CuPy + `.item()` |",
                  "|---|---|---|---|"]
        lines += [f"| {r['case']} | {_ms(r['ours'])} | {_ms(r['cupy_to_host'])} | "
                  f"{r['ours_vs_cupy_to_host']:.2f}x |" for r in to_host]
    errors = [f"* {r['case']}, {key[:-6]}: {r[key]}" for r in results["cases"]
              for key in ("cupy_error", "numba_parallel_error", "numpy_error") if key in r]
    if errors:
        lines += ["", "Competitors that failed in this run:", ""] + errors
    lat = results.get("call_latency")
    if lat:
        lines += ["", "Call latency, 16-element arrays, wall clock per call (microseconds):", "",
                  "| " + " | ".join(lat) + " |", "|" + "---|" * len(lat),
                  "| " + " | ".join(f"{v * 1e6:.1f}" for v in lat.values()) + " |"]
    h = results.get("host_arrays")
    if h:
        lines += ["", f"Host (NumPy) arrays, {h['size']} float32 ({h['nbytes'] / 2**20:.0f} MiB "
                  "each), wall clock:", "",
                  "| what | ms | rate |", "|---|---|---|",
                  f"| ours `np.sum(x)` (x crosses once) | {_ms(h['ours_sum'])} | "
                  f"{h['ours_sum']['H2D_GBps']:.1f} GB/s host-to-device |",
                  f"| `cupy.asarray(x)` | {_ms(h['cupy_asarray'])} | "
                  f"{h['cupy_asarray']['H2D_GBps']:.1f} GB/s host-to-device |",
                  f"| ours saxpy(a, x, y, out) | {_ms(h['ours_saxpy'])} | "
                  f"{h['ours_saxpy']['bus_GBps']:.1f} GB/s (x, y in; out back) |",
                  f"| CuPy: asarray x, y; kernel; .get() | {_ms(h['cupy_saxpy'])} | "
                  f"{h['cupy_saxpy']['bus_GBps']:.1f} GB/s (same traffic) |"]
    v = results.get("variants")
    if v:
        lines += ["", "Launch shapes (threads per block x iterations per thread), ours only:", "",
                  "| shape | case | ms | rate | % copy | correct |", "|---|---|---|---|---|---|"]
        for r in v:
            frac = f"{r['copy_fraction']:.0%}" if r["copy_fraction"] else "—"
            lines.append(f"| {r['shape']} | {r['case']} | {r['median_s'] * 1e3:.3f} | "
                         f"{r['rate']:.0f} | {frac} | {r['correct']} |")
    t = results.get("targets")
    if t:
        lines += ["", "Targets (issues 5 and 13):", "", "| target | measured | met |", "|---|---|---|"]
        lines += [f"| {x['target']} | {x['measured']} | {'yes' if x['met'] else 'no'} |"
                  for x in t]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = results["cases"]
    names = [r["case"] for r in rows]
    impls = [("ours", "numba-mlir-gpu"), ("cupy", "CuPy"), ("numba_parallel", "Numba CPU parallel"),
             ("numpy", "NumPy")]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.2
    for k, (key, label) in enumerate(impls):
        xs, ys = [], []
        for i, r in enumerate(rows):
            if key in r:
                xs.append(i + (k - 1.5) * width)
                ys.append(r[key]["median_s"] * 1e3)
        if xs:
            ax.bar(xs, ys, width, label=label)
    ax.set_yscale("log")
    ax.set_ylabel("median time, ms (log)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_title(f"numba-mlir-gpu benchmarks on {results['device']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------- main

def parse(argv) -> argparse.Namespace:
    from numba_mlir_gpu.runtime.cuda import cuda_device_available
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="docs/benchmarks", help="folder for results.{md,json}, plot")
    p.add_argument("--target", choices=["gpu", "cpu"], default=None,
                   help="default: gpu when a CUDA device and CuPy are present")
    p.add_argument("--size", choices=["gpu", "tiny"], default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--skip", default="", help="comma list of: cupy, numba, numpy")
    p.add_argument("--cases", default="", help="comma list of case names (default: all)")
    p.add_argument("--variants", default="", help="launch shapes to compare, e.g. 256x1,256x4")
    a = p.parse_args(argv)
    if a.target is None:
        try:
            import cupy  # noqa: F401
            a.target = "gpu" if cuda_device_available() else "cpu"
        except ImportError:
            a.target = "cpu"
    a.size = a.size or ("gpu" if a.target == "gpu" else "tiny")
    a.reps = a.reps or (15 if a.size == "gpu" else 2)
    a.skip = [s for s in a.skip.split(",") if s]
    return a


def save(results: dict, folder: str) -> str:
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=float)
    table = markdown(results)
    with open(os.path.join(folder, "results.md"), "w") as f:
        f.write(table)
    return table


def main(argv=None) -> dict:
    args = parse(argv)
    env = Env(args)
    if args.target == "cpu":
        warnings.simplefilter("ignore", numba_mlir_gpu.NoGPUWarning)
    selected = [c for c in cases() if not args.cases or c.name in args.cases.split(",")]
    results = {"gpu": env.gpu, "target": args.target, "size": args.size,
               "command": "python3 -m benchmarks.run " + " ".join(
                   argv if argv is not None else sys.argv[1:]),
               "host": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
                       f"Numba threads {numba.config.NUMBA_NUM_THREADS}",
               "versions": {"numba": numba.__version__, "numpy": np.__version__,
                            "python": platform.python_version()}}
    kernels = {}
    if env.gpu:
        cp = env.cp
        props = cp.cuda.runtime.getDeviceProperties(0)
        results["device"] = props["name"].decode()
        results["versions"]["cupy"] = cp.__version__
        results["versions"]["driver"] = cp.cuda.runtime.driverGetVersion()
        results["copy"] = copy_bandwidth(env, 1 << 26)
        print(f"copy {results['copy']['GBps']:.0f} GB/s", flush=True)
        kernels = cupy_kernels(cp)
    else:
        results["device"] = "CPU only (no GPU: smoke run, not a measurement)"
    results["cases"] = []
    os.makedirs(args.out, exist_ok=True)
    for case in selected:
        t0 = time.perf_counter()
        row = run_case(env, case, case.gpu_size if args.size == "gpu" else case.tiny_size,
                       kernels)
        results["cases"].append(row)
        if "ours" in row:
            print(f"{case.name:16s} ours {row['ours']['median_s']*1e3:9.3f} ms "
                  f"{'' if row['ours_correct'] else 'WRONG '}"
                  f"vs cupy {row.get('ours_vs_cupy', float('nan')):.2f}x "
                  f"first call {row['ours_first_call_s']:.2f} s  ({time.perf_counter()-t0:.1f} s)",
                  flush=True)
        save(results, args.out)          # partial results survive a time limit
    _guarded(results, "call_latency", lambda: results.__setitem__("call_latency", call_latency(
        env, calls=200 if env.gpu else 20, batches=15 if env.gpu else 3)))
    if env.gpu:
        _guarded(results, "host_arrays",
                 lambda: results.__setitem__("host_arrays", host_arrays(env, 1 << 26)))
        save(results, args.out)
        if args.variants:
            results["variants"] = launch_variants(env, args.variants.split(","), cases(),
                                                  results["copy"]["GBps"])
    results["targets"] = targets(results)
    table = save(results, args.out)
    results["plotted"] = plot(results, os.path.join(args.out, "benchmarks.png"))
    print(table)
    return results


if __name__ == "__main__":
    main()
