"""First-call time of a GPU function three ways, each in fresh processes:
compiled at the call (cold), loaded from Numba's on-disk cache filled by an
earlier process (warm cache), and loaded from an ahead-of-time build made
with no GPU visible (CUDA_VISIBLE_DEVICES=""). Prints one JSON line.

    source .gpu/setup.sh && python3 -m benchmarks.aot_probe [--repeat 5] [--profile]
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

from .cases import black_scholes

# the benchmark suite's Black-Scholes, in a module of its own (a `cache=True` entry
# and an ahead-of-time build are keyed by the function's module and source)
PROFILE = False
HEADER = "import math\nfrom numba import prange\nimport numba_mlir_gpu\n\n\n"


def _module(cache: bool) -> str:
    return f"{HEADER}@numba_mlir_gpu.njit(cache={cache})\n{inspect.getsource(black_scholes)}"

CALL = textwrap.dedent("""
    import json, time
    import numpy as np
    import numba_mlir_gpu
    from numba_mlir_gpu.compiler import jit
    import bs_probe
    n = 1 << 20
    rng = np.random.default_rng(0)
    s, k, t = rng.uniform(50, 150, n), rng.uniform(50, 150, n), rng.uniform(0.1, 2.0, n)
    call = np.zeros(n)
    profile = None
    if PROFILE:
        import cProfile, io, pstats
        profile = cProfile.Profile()
        profile.enable()
    start = time.perf_counter()
    bs_probe.black_scholes(s, k, t, 0.02, 0.3, call)     # host arrays: returns when done
    first = time.perf_counter() - start
    report = {"first_call_s": first, "pipeline_runs": jit.PIPELINE_RUNS}
    if profile is not None:
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(30)
        report["profile"] = text.getvalue()
    print(json.dumps(report))
""")


def _run(folder: str, script: str, **extra) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([folder, os.getcwd(),
                                                       os.environ.get("PYTHONPATH", "")]))
    env.update({"NUMBA_CACHE_DIR": os.path.join(folder, "cache"), **extra})
    done = subprocess.run([sys.executable, "-c", f"PROFILE = {PROFILE}\n{script}"], cwd=folder,
                          env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--arch", default="sm_80,sm_90,sm_100")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile each first call; the top 30 functions in each run's JSON")
    options = parser.parse_args()
    global PROFILE
    PROFILE = options.profile
    results: dict = {}
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "bs_probe.py"), "w") as f:
            f.write(_module(cache=True))
        results["cold"] = [_run(folder, CALL, NUMBA_CACHE_DIR=os.path.join(folder, f"c{i}"))
                           for i in range(options.repeat)]
        _run(folder, CALL)                               # fills the cache
        results["warm_cache"] = [_run(folder, CALL) for _ in range(options.repeat)]
        with open(os.path.join(folder, "bs_probe.py"), "w") as f:
            f.write(_module(cache=False))
        build = os.path.join(folder, "aot")
        done = subprocess.run(
            [sys.executable, "-m", "numba_mlir_gpu.aot", "bs_probe:black_scholes",
             "void(f8[::1], f8[::1], f8[::1], f8, f8, f8[::1])", "--arch", options.arch,
             "-o", build], cwd=folder, capture_output=True, text=True,
            env=dict(os.environ, CUDA_VISIBLE_DEVICES="",
                     PYTHONPATH=os.pathsep.join([folder, os.getcwd(),
                                                 os.environ.get("PYTHONPATH", "")])))
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        results["aot_build_report"] = done.stdout.strip().splitlines()
        results["aot"] = [_run(folder, CALL, NUMBA_MLIR_GPU_AOT=build)
                          for _ in range(options.repeat)]
    summary = {k: {"median_first_call_s": statistics.median(r["first_call_s"] for r in v),
                   "pipeline_runs": sorted({r["pipeline_runs"] for r in v})}
               for k, v in results.items() if k != "aot_build_report"}
    summary["aot_over_warm_cache"] = (summary["aot"]["median_first_call_s"]
                                      / summary["warm_cache"]["median_first_call_s"])
    print(json.dumps({"summary": summary, "runs": results}))


if __name__ == "__main__":
    main()
