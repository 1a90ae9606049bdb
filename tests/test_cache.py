"""`cache=True`: a second process loads the compiled code from Numba's
on-disk cache and runs no MLIR pipeline."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from .support import TARGETS

MODULE = textwrap.dedent("""
    import numpy as np
    from numba import prange
    import numba_mlir_gpu

    @numba_mlir_gpu.njit(target={target!r}, cache=True)
    def saxpy_sum(a, x, y):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            out[i] = a * x[i] + y[i]
        return out, out.sum()
""")

RUN = textwrap.dedent("""
    import json, time, warnings
    import numpy as np
    warnings.filterwarnings("error", message=".*[Cc]annot cache")
    start = time.perf_counter()
    import cached_fn
    from numba_mlir_gpu.compiler import jit
    x = np.arange(1000, dtype=np.float64)
    out, total = cached_fn.saxpy_sum(2.0, x, np.ones(1000))
    elapsed = time.perf_counter() - start
    print(json.dumps({"pipeline_runs": jit.PIPELINE_RUNS, "total": float(total),
                      "out": out.tolist(), "seconds": elapsed,
                      "hits": sum(cached_fn.saxpy_sum.stats.cache_hits.values())}))
""")


def run_in_new_process(folder, script: str = RUN, **environment) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(folder / "cache"),
               PYTHONPATH=os.pathsep.join([str(folder), os.getcwd(),
                                           os.environ.get("PYTHONPATH", "")]), **environment)
    done = subprocess.run([sys.executable, "-c", script], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("target", TARGETS)
def test_second_process_loads_from_the_cache(tmp_path, target):
    (tmp_path / "cached_fn.py").write_text(MODULE.format(target=target))
    first = run_in_new_process(tmp_path)
    second = run_in_new_process(tmp_path)
    assert first["pipeline_runs"] >= 1 and first["hits"] == 0
    assert second["pipeline_runs"] == 0 and second["hits"] == 1
    expected = 2.0 * __import__("numpy").arange(1000) + 1
    assert second["out"] == first["out"] == expected.tolist()
    assert second["total"] == first["total"] == expected.sum()


# One function, compiled by Numba's own lowering and by ours for two targets:
# each finds only its own code in the cache.
SHARED = textwrap.dedent("""
    import numba, numba_mlir_gpu

    def add_one(x):
        return x + 1

    numba_plain = numba.njit(cache=True)(add_one)
    ours = numba_mlir_gpu.njit(cache=True)(add_one)      # target from the environment
""")

RUN_SHARED = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    warnings.simplefilter("ignore")
    import shared_fn
    from numba_mlir_gpu.compiler import jit
    which = getattr(shared_fn, sys.argv[1])
    try:
        result = which(np.arange(3.0)).tolist()
    except Exception as e:
        result = type(e).__name__
    print(json.dumps({"pipeline_runs": jit.PIPELINE_RUNS, "result": result,
                      "hits": sum(which.stats.cache_hits.values())}))
""")


def test_cache_entries_are_kept_apart_by_pipeline_and_target(tmp_path):
    (tmp_path / "shared_fn.py").write_text(SHARED)

    def run(which, target):
        return run_in_new_process(tmp_path, RUN_SHARED.replace("sys.argv[1]", repr(which)),
                                  NUMBA_MLIR_GPU_TARGET=target)
    assert run("numba_plain", "cpu")["result"] == [1.0, 2.0, 3.0]
    first = run("ours", "cpu")             # Numba's entry is not ours: compiled again
    assert first == {"pipeline_runs": 1, "result": [1.0, 2.0, 3.0], "hits": 0}
    other = run("ours", "compile-only")    # the CPU entry is not this target's
    assert other == {"pipeline_runs": 1, "result": "CompileOnlyError", "hits": 0}
    again = run("ours", "cpu")
    assert again == {"pipeline_runs": 0, "result": [1.0, 2.0, 3.0], "hits": 1}


# -- faults: unreadable entries, several writers ---------------------------------

def _cache_files(folder, suffix: str) -> list:
    return sorted((folder / "cache").rglob(f"*{suffix}"))


def _truncate(path) -> None:
    path.write_bytes(path.read_bytes()[:100])


@pytest.mark.parametrize("damage", ["truncated data", "truncated index", "garbage index"])
def test_an_unreadable_cache_entry_is_compiled_again(tmp_path, damage):
    """A cache file cut short (a writer killed mid-write) or overwritten:
    the next process warns, compiles again and rewrites the entry; the one
    after loads it."""
    (tmp_path / "cached_fn.py").write_text(MODULE.format(target="cpu"))
    first = run_in_new_process(tmp_path)
    if damage == "truncated data":
        [path] = _cache_files(tmp_path, ".nbc")
        _truncate(path)
    else:
        [path] = _cache_files(tmp_path, ".nbi")
        if damage == "truncated index":
            _truncate(path)
        else:
            path.write_text("garbage\n")
    warned = RUN.replace('warnings.filterwarnings("error", message=".*[Cc]annot cache")',
                         'warnings.simplefilter("always")')
    again = run_in_new_process(tmp_path, warned)
    assert again["pipeline_runs"] >= 1 and again["out"] == first["out"]
    last = run_in_new_process(tmp_path)
    assert last["pipeline_runs"] == 0 and last["hits"] == 1 and last["out"] == first["out"]


def test_processes_filling_one_cache_at_once(tmp_path):
    """Four processes compile the same function into an empty cache at the
    same time (Numba writes each file through a temporary and a rename): all
    get the right result, and a later process loads from the cache."""
    (tmp_path / "cached_fn.py").write_text(MODULE.format(target="cpu"))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd(),
                                           os.environ.get("PYTHONPATH", "")]))
    running = [subprocess.Popen([sys.executable, "-c", RUN], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(4)]
    outputs = []
    for process in running:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        outputs.append(json.loads(stdout.strip().splitlines()[-1]))
    expected = (2.0 * __import__("numpy").arange(1000) + 1).tolist()
    assert all(o["out"] == expected for o in outputs)
    later = run_in_new_process(tmp_path)
    assert later["pipeline_runs"] == 0 and later["hits"] == 1 and later["out"] == expected
