"""The library shim (numba_mlir_gpu/testing/library_shim.py) on a tiny fake
library written here: routing, fallback, recorded paths; no download."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_mlir_gpu.testing import library_shim
from numba_mlir_gpu.testing.libraries import (LIBRARIES, Library, _env, _wanted, normalize,
                                              run_suite, summarize)

FAKE = textwrap.dedent("""
    import numpy as np
    from numba import njit, prange, vectorize

    @njit(parallel=True)
    def scale(x, a):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            out[i] = a * x[i]
        return out

    @njit(parallel=True)
    def with_list(x):
        names = ["a", "bb"]            # a list of strings: host code our lowering lacks
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            out[i] = x[i] + 1.0
        return out, len(names[1])

    @njit
    def helper(v):
        return v * 2.0

    @njit(parallel=True)
    def total(x):
        s = 0.0
        for i in prange(x.shape[0]):
            s += helper(x[i])
        return s

    @vectorize(["float64(float64)"])
    def twice(v):
        return 2.0 * v

    @njit                      # no parallel=True: stock Numba runs the prange serially,
    def distinct_per_row(x, visited):   # which the shared scratch buffer relies on
        out = np.zeros(x.shape[0], dtype=np.int64)
        for i in prange(x.shape[0]):
            for k in range(visited.shape[0]):
                visited[k] = 0
            n = 0
            for j in range(x.shape[1]):
                if visited[x[i, j]] == 0:
                    visited[x[i, j]] = 1
                    n += 1
            out[i] = n
        return out + 0         # an array expression: still a parallel loop

    @njit
    def running_sum(x):        # a value carried from iteration to iteration: serial only
        out = np.empty_like(x)
        c = 0.0
        for i in prange(x.shape[0]):
            c += x[i]
            out[i] = c
        return out
""")


def _fake_lib(tmp_path, monkeypatch, **settings):
    name = f"fake_numba_lib_{os.getpid()}_{tmp_path.name}".replace("-", "_")
    (tmp_path / f"{name}.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    shim = library_shim.Shim("ours", target="cpu", unsupported_loops="cpu", modules=[name],
                             **settings)
    shim.install()
    try:
        module = __import__(name)
        yield shim, module
    finally:
        shim.uninstall()
        sys.modules.pop(name, None)


@pytest.fixture
def fake_lib(tmp_path, monkeypatch):
    yield from _fake_lib(tmp_path, monkeypatch)


@pytest.fixture
def fake_lib_all_parallel(tmp_path, monkeypatch):
    yield from _fake_lib(tmp_path, monkeypatch, prange="parallel")


def _distinct_counts(x):
    return np.array([len(set(row)) for row in x], dtype=np.int64)


def _serial_rows_case():
    x = np.random.default_rng(0).integers(0, 50, size=(64, 40))
    return x, np.zeros(50, np.uint8)


def test_prange_without_parallel_true_stays_serial(fake_lib):
    """docs/libraries.md A7: a library's njit without parallel=True keeps
    its prange loops serial (its shared scratch buffer is then correct);
    the array expression still becomes a parallel loop through MLIR."""
    shim, lib = fake_lib
    x, visited = _serial_rows_case()
    np.testing.assert_array_equal(lib.distinct_per_row(x, visited), _distinct_counts(x))
    x = np.arange(1.0, 40.0)
    np.testing.assert_array_equal(lib.running_sum(x), np.cumsum(x))
    by_name = {c.function.rsplit(".", 1)[1]: c for c in shim.compilations}
    assert by_name["running_sum"].path == "mlir" and by_name["running_sum"].parfors == 0
    assert by_name["distinct_per_row"].parfors == 2      # np.zeros, `out + 0`; not the prange
    assert shim.report()["prange"] == "flags"


def test_prange_setting_converts_every_prange(fake_lib_all_parallel):
    shim, lib = fake_lib_all_parallel
    x = np.arange(6.0)
    np.testing.assert_allclose(lib.scale(x, 3.0), 3.0 * x)
    lib.running_sum(x)
    rec, = [c for c in shim.compilations if c.function.endswith("running_sum")]
    assert rec.path == "mlir" and rec.parfors == 1       # the prange loop, converted
    assert shim.report()["prange"] == "parallel"


def test_routes_whole_function_and_fallback(fake_lib):
    shim, lib = fake_lib
    x = np.arange(6.0)
    np.testing.assert_allclose(lib.scale(x, 3.0), 3.0 * x)
    out, n = lib.with_list(x)
    np.testing.assert_allclose(out, x + 1.0)
    assert n == 2
    assert lib.total(x) == 2.0 * x.sum()
    assert lib.helper(4.0) == 8.0          # nested-compiled overload was dropped: ours again
    np.testing.assert_allclose(lib.twice(x), 2.0 * x)     # @vectorize stays Numba's
    by_name = {c.function.rsplit(".", 1)[1]: c for c in shim.compilations}
    assert set(by_name) == {"scale", "with_list", "total", "helper"}
    assert by_name["scale"].path == "mlir" and by_name["scale"].parfors == 1
    assert by_name["scale"].loops_mlir == 1 and by_name["scale"].target == "cpu"
    fb = by_name["with_list"]
    assert fb.path == "fallback" and "build_list" in fb.reason
    assert [(loop.path, loop.reason) for loop in fb.loops] == [("mlir", None)]
    assert fb.loops_mlir == 1
    assert by_name["total"].path == "mlir" and by_name["total"].loops_mlir == 1
    assert by_name["helper"].path == "mlir" and by_name["helper"].parfors == 0
    assert all(c.error is None for c in shim.compilations)
    # the recorded path is the pipeline's own
    from numba_mlir_gpu.api import inspect_path
    assert inspect_path(lib.with_list).path == "fallback"
    assert inspect_path(lib.scale).path == "mlir"
    report = shim.report()
    assert json.loads(json.dumps(report))["compilations"][1]["loops"][0]["path"] == "mlir"


def test_unrouted_modules_stay_numba(fake_lib):
    shim, lib = fake_lib
    from numba import njit, prange

    @njit(parallel=True)
    def local(x):
        s = 0.0
        for i in prange(x.shape[0]):
            s += x[i]
        return s

    assert local(np.arange(4.0)) == 6.0
    assert shim.compilations == []
    assert "numba_mlir_gpu" not in next(iter(local.overloads.values())).metadata


def test_uninstall_restores_numba(tmp_path, monkeypatch):
    from numba.core.dispatcher import _FunctionCompiler
    before = _FunctionCompiler._compile_core
    shim = library_shim.Shim("ours", target="cpu", modules=["nothing_here"])
    shim.install()
    assert _FunctionCompiler._compile_core is not before
    shim.uninstall()
    assert _FunctionCompiler._compile_core is before


def test_pytest_plugin_records_tests(tmp_path):
    """The plugin as the runner uses it, in a fresh interpreter."""
    (tmp_path / "fake_plugin_lib.py").write_text(FAKE)
    (tmp_path / "test_fake.py").write_text(textwrap.dedent("""
        import numpy as np
        import fake_plugin_lib as f

        def test_scale():
            np.testing.assert_allclose(f.scale(np.arange(3.0), 2.0), [0.0, 2.0, 4.0])

        def test_list():
            assert f.with_list(np.arange(3.0))[1] == 2

        def test_fails():
            assert f.helper(1.0) == 3.0
    """))
    report = tmp_path / "r.json"
    env = dict(os.environ, NUMBA_MLIR_GPU_SHIM_MODULES="fake_plugin_lib",
               NUMBA_MLIR_GPU_TARGET="cpu", NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd(),
                                           os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-p", "numba_mlir_gpu.testing.library_shim",
                           "--mlir-shim-report", str(report), "-o", "addopts=",
                           "--rootdir", str(tmp_path), "test_fake.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads(report.read_text())
    assert data["outcomes"] == {"test_fake.py::test_scale": "passed",
                                "test_fake.py::test_list": "passed",
                                "test_fake.py::test_fails": "failed"}
    paths = {(c["test"].split("::")[1], c["function"].split(".")[-1]): c["path"]
             for c in data["compilations"]}
    assert paths == {("test_scale", "scale"): "mlir", ("test_list", "with_list"): "fallback",
                     ("test_fails", "helper"): "mlir"}


def test_summary_and_trimming():
    lib = LIBRARIES["stumpy"]
    assert _wanted("stumpy/core.py", lib) and _wanted("tests/test_stump.py", lib)
    assert not _wanted("tests/test_gpu_stump.py", lib) and not _wanted("docs/conf.py", lib)
    assert normalize("the expression 'build_list' (build_list(items=[Var($c.1, a.py:3)])), "
                     "line 13") == "the expression 'build_list' (build_list(items=[Var(…)]))"
    stock = {"outcomes": {"a": "passed", "b": "passed", "c": "failed"}, "messages": {},
             "seconds": 1.0, "returncode": 1}
    comp = {"function": "m.f", "signature": "(float64)", "path": "fallback", "parfors": 1,
            "loops": [{"line": 3, "path": "numba-cpu", "reason": "x"}], "loops_mlir": 0,
            "reason": "y, line 4", "error": None, "error_kind": None, "seconds": 0.5}
    ours = {"outcomes": {"a": "passed", "b": "failed"}, "messages": {"b": "AssertionError"},
            "compilations": [comp, dict(comp)], "seconds": 2.0, "returncode": 1}
    s = summarize(lib, stock, ours)
    assert (s["stock_passed"], s["ours_passed_of_stock"], s["ratio"]) == (2, 1, 0.5)
    assert s["functions"] == {"fallback": 1} and s["parfors_numba_cpu"] == 1
    assert s["fallback_reasons"][0][:2] == [1, "y"]
    assert s["lost_tests"] == {"b": "AssertionError"}


def test_resumed_run_skips_the_tests_already_run(tmp_path):
    """`--resume`: a run stopped by its budget goes on with the tests it did
    not reach, and the two records are merged."""
    lib = Library("fakeresume", "1.0", packages=["fakeresume"], tests=["tests"])
    root = tmp_path / lib.root_name
    (root / "tests").mkdir(parents=True)
    (root / "fakeresume.py").write_text("def one():\n    return 1\n")
    (root / "tests" / "test_it.py").write_text(textwrap.dedent("""
        import fakeresume

        def test_done_before():
            raise AssertionError("run again")

        def test_left():
            assert fakeresume.one() == 1
    """))
    earlier = {"outcomes": {"tests/test_it.py::test_done_before": "passed"}, "messages": {},
               "compilations": [], "seconds": 3.0}
    run = run_suite(tmp_path, lib, "stock", "cpu", 0, 1, tmp_path, earlier=earlier)
    assert run["outcomes"] == {"tests/test_it.py::test_done_before": "passed",
                               "tests/test_it.py::test_left": "passed"}, run["log"]
    assert run["seconds"] >= 3.0


def test_each_worker_gets_its_share_of_the_cores(tmp_path, monkeypatch):
    lib = Library("fakeshare", "1.0", packages=["fakeshare"], tests=["tests"])
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    env = _env(tmp_path, lib, "stock", "cpu", tmp_path / "r.json", tmp_path / "c", workers=4)
    assert env["NUMBA_NUM_THREADS"] == str(max(1, (os.cpu_count() or 1) // 4))
    assert "NUMBA_NUM_THREADS" not in _env(tmp_path, lib, "stock", "cpu", tmp_path / "r.json",
                                           tmp_path / "c", workers=1)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")      # the user's setting stays
    assert _env(tmp_path, lib, "ours", "cpu", tmp_path / "r.json", tmp_path / "c",
                workers=4)["NUMBA_NUM_THREADS"] == "3"
