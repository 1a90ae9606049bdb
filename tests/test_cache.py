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
    from numba_mlir_gpu import jit
    x = np.arange(1000, dtype=np.float64)
    out, total = cached_fn.saxpy_sum(2.0, x, np.ones(1000))
    elapsed = time.perf_counter() - start
    print(json.dumps({"pipeline_runs": jit.PIPELINE_RUNS, "total": float(total),
                      "out": out.tolist(), "seconds": elapsed,
                      "hits": sum(cached_fn.saxpy_sum.stats.cache_hits.values())}))
""")


def run_in_new_process(folder) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(folder / "cache"),
               PYTHONPATH=os.pathsep.join([str(folder), os.getcwd(),
                                           os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", RUN], cwd=folder, env=env,
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
