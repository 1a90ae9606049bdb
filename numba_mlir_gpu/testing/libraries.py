"""Run the test suites of open-source Numba libraries through MLIRGPUPipeline
(docs/libraries.md).

    python -m numba_mlir_gpu.testing.libraries --fetch DIR            # download (PyPI) and trim
    python -m numba_mlir_gpu.testing.libraries --from DIR [--target cpu|gpu] [--libs a,b] [--write]
    python -m numba_mlir_gpu.testing.libraries --from DIR --bench [--write]

Each library's own pytest suite (a fixed subset of its test files, LIBRARIES
below) runs twice in fresh interpreters: stock Numba (the reference) and with
`library_shim` routing every njit/jit compilation through our pipeline
(fallback on, unsupported parallel loops on Numba's CPU lowering). The
library's sources come from its sdist, trimmed to the package's Python files,
the chosen tests and the data they read, and are put on sys.path; extra
pure-Python dependencies (and pytest-timeout) come as wheels, put on sys.path
as zip files. Nothing is installed.
"""
from __future__ import annotations

import argparse
import collections
import copy
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


@dataclass
class Library:
    name: str                   # PyPI name
    version: str
    packages: list              # top-level package directories inside the sdist
    tests: list                 # test files or folders (relative to the sdist root), run in this order
    keep: list = field(default_factory=list)       # other files to keep (globs, sdist-relative)
    drop: list = field(default_factory=list)       # files to leave out (globs), data too large to carry
    deselect: list = field(default_factory=list)   # pytest node ids left out (they read dropped data)
    pytest_args: list = field(default_factory=list)
    wheels: list = field(default_factory=list)     # pure-Python dependencies: "name==version"
    modules: list = field(default_factory=list)    # module prefixes the shim routes (default: packages)
    stubs: dict = field(default_factory=dict)      # module -> source, put on sys.path where the
    #                                                module is missing (test-only imports)
    prange: str = "flags"       # the shim's NUMBA_MLIR_GPU_SHIM_PRANGE: "parallel" for a library
    #                             whose prange loops without parallel=True are known race-free
    why: str = ""
    bench: str = ""             # Python source: defines `setup()` -> args and `work(*args)`

    @property
    def root_name(self) -> str:
        return f"{self.name.replace('-', '_')}-{self.version}"


_STUB = '''
class _Missing:
    def __init__(self, *args, **kwargs):
        raise ImportError("not installed: a stub of numba_mlir_gpu.testing.libraries")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise ImportError("not installed: a stub of numba_mlir_gpu.testing.libraries")
'''

# pytest-timeout, so that one test cannot stall a run (the GPU machine lacks it)
COMMON_WHEELS = ["pytest-timeout==2.4.0"]

LIBRARIES = {lib.name: lib for lib in [
    Library(
        "stumpy", "1.14.1", ["stumpy"],
        tests=["tests/test_stump.py", "tests/test_aamp.py", "tests/test_scrump.py",
               "tests/test_stumpi.py", "tests/test_mstump.py", "tests/test_motifs.py",
               "tests/test_mpdist.py", "tests/test_ostinato.py", "tests/test_snippets.py"],
        keep=["tests/naive.py", "tests/__init__.py", "tests/conftest.py"],
        # imported at the top of test_stump/test_mstump (polars) and test_mpdist/test_ostinato
        # (dask.distributed); only a few of their tests use them, which then fail in both runs
        stubs={"polars": _STUB, "dask": "", "dask.distributed": _STUB + "Client = LocalCluster = _Missing\n"},
        why="time-series matrix profiles; its core kernels (_stump, _aamp, _mstump, "
            "_mpdist, scrump's prescrump) are njit(parallel=True) prange loops",
        bench="""
import numpy as np, stumpy
def setup():
    return (np.random.default_rng(0).standard_normal(20000), 100)
def work(T, m):
    return stumpy.stump(T, m)
"""),
    Library(
        "pynndescent", "0.7.0", ["pynndescent"],
        tests=["pynndescent/tests/test_distances.py", "pynndescent/tests/test_rank.py",
               "pynndescent/tests/test_search_graph.py", "pynndescent/tests/test_pynndescent_.py"],
        keep=["pynndescent/tests/__init__.py", "pynndescent/tests/conftest.py",
              "pynndescent/tests/test_data/cosine_near_duplicates.npy"],
        deselect=[
            "pynndescent/tests/test_pynndescent_.py::test_rp_trees_should_not_stack_overflow_with_duplicate_data",
            "pynndescent/tests/test_pynndescent_.py::test_deduplicated_data_behaves_normally",
            "pynndescent/tests/test_pynndescent_.py::test_bad_data",
        ],
        why="approximate nearest neighbours (UMAP's kNN); njit(parallel=True) graph "
            "construction, rp-trees and many distance functions",
        bench="""
import numpy as np
from pynndescent import NNDescent
def setup():
    return (np.random.default_rng(0).standard_normal((5000, 32)).astype(np.float32),)
def work(X):
    return NNDescent(X, n_neighbors=15, random_state=42, n_jobs=None).neighbor_graph
"""),
    Library(
        "tslearn", "0.10.0", ["tslearn"],
        tests=["tests/test_metrics.py"],
        keep=["tests/__init__.py", "tests/sklearn_patches.py"],
        drop=["tslearn/datasets/*.zip", "tslearn/.cached_datasets/*"],
        why="time-series ML; its metrics (soft-DTW, cycc, dtw variants) are njit with prange",
        bench="""
import numpy as np
from tslearn.metrics.soft_dtw_fast import _njit_soft_dtw_batch
def setup():
    D = np.random.default_rng(0).random((256, 128, 128))
    return (D, np.zeros((256, 130, 130)), 0.1)
def work(D, R, gamma):
    _njit_soft_dtw_batch(D, R, gamma)
    return R
"""),
    Library(
        "pyts", "0.14.1", ["pyts"],
        tests=["pyts/metrics", "pyts/decomposition", "pyts/approximation",
               "pyts/preprocessing", "pyts/image"],
        drop=["pyts/datasets/cached_datasets/UCR/PigCVP/*", "pyts/datasets/cached_datasets/UCR/Coffee/*",
              "pyts/datasets/cached_datasets/UEA/*"],
        wheels=["platformdirs==4.5.0"],
        # its prange loops (without parallel=True) write disjoint rows: known race-free
        prange="parallel",
        why="time-series classification; DTW, lower bounds and SSA are njit with prange "
            "(without parallel=True: serial in stock Numba, parallel loops in ours)",
        bench="""
import numpy as np
from pyts.metrics import lower_bound_keogh, sakoe_chiba_band
def setup():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((400, 256)), rng.standard_normal((400, 256)),
            sakoe_chiba_band(256, window_size=0.1))
def work(X, Y, region):
    return lower_bound_keogh(X, Y, region)
"""),
    Library(
        "quantecon", "0.11.4", ["quantecon"],
        tests=["quantecon/markov/tests", "quantecon/optimize/tests",
               "quantecon/game_theory/tests", "quantecon/random/tests"],
        keep=["quantecon/game_theory/tests/game_files/*"],
        why="quantitative economics; hundreds of njit functions (game theory, Markov "
            "chains, optimizers), a parallel gini_coefficient and random probvec",
        bench="""
import numpy as np
import quantecon as qe
def setup():
    return (np.random.default_rng(0).lognormal(size=20000),)
def work(y):
    return qe.gini_coefficient(y)
"""),
]}


# -- fetching -----------------------------------------------------------------------

def fetch(dest: Path, names: list) -> None:
    """Download the sdists (and wheels) from PyPI, keep the trimmed sources."""
    dest.mkdir(parents=True, exist_ok=True)
    wheels = dest / "wheels"
    wheels.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            lib = LIBRARIES[name]
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--no-binary", ":all:", f"{lib.name}=={lib.version}", "-d", tmp],
                           check=True)
            (archive,) = [p for p in Path(tmp).glob("*.tar.gz")
                          if p.name.lower().replace("-", "_").startswith(lib.name.replace("-", "_"))]
            target = dest / lib.root_name
            shutil.rmtree(target, ignore_errors=True)
            _extract(archive, lib, target)
            archive.unlink()
            # importlib.metadata.version(name), which some packages call at import
            info = target / f"{lib.name.replace('-', '_')}-{lib.version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {lib.name}\n"
                                           f"Version: {lib.version}\n")
            for module, text in lib.stubs.items():
                # one folder per top-level module, on sys.path only where it is missing
                base = target / "_stubs" / module.split(".")[0]
                stub = base / (module.replace(".", "/") + ".py")
                if any(m.startswith(module + ".") for m in lib.stubs):
                    stub = base / module.replace(".", "/") / "__init__.py"
                stub.parent.mkdir(parents=True, exist_ok=True)
                stub.write_text(text)
            for spec in lib.wheels:
                _wheel(spec, wheels)
        for spec in COMMON_WHEELS:
            _wheel(spec, wheels)
    total = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"{dest}: {total / 2**20:.2f} MiB")


def _wheel(spec: str, wheels: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary", ":all:", spec, "-d", str(wheels)], check=True)


def _extract(archive: Path, lib: Library, target: Path) -> None:
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        top = members[0].name.split("/")[0]
        for member in members:
            if not member.isfile():
                continue
            rel = member.name[len(top) + 1:]
            if not _wanted(rel, lib):
                continue
            out = target / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)


def _wanted(rel: str, lib: Library) -> bool:
    from fnmatch import fnmatch
    if any(fnmatch(rel, pat) for pat in lib.drop) or "__pycache__" in rel:
        return False
    if any(fnmatch(rel, pat) for pat in lib.keep):
        return True
    in_tests = any(rel == t or rel.startswith(t.rstrip("/") + "/") for t in lib.tests)
    if in_tests:
        return True
    if any(rel.startswith(p + "/") for p in lib.packages):
        parts = rel.split("/")
        if "tests" in parts[:-1]:
            # tests of other subpackages: only their helpers (conftest, __init__)
            return parts[-1] in ("__init__.py", "conftest.py")
        return not rel.endswith((".pyc", ".so", ".pyd", ".c", ".pyx"))
    return False


# -- running -------------------------------------------------------------------------

def _env(source: Path, lib: Library, mode: str, target: str, report: Path, cache: Path,
         workers: int = 1) -> dict:
    env = dict(os.environ)
    if workers > 1 and "NUMBA_NUM_THREADS" not in env:
        # each worker's parallel loops get their share of the cores: 15 workers of
        # 16 threads each made stock Numba's runs crawl on the 16-core GPU machine
        env["NUMBA_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    wheels = [w for w in sorted(glob.glob(str(source / "wheels" / "*.whl")))
              if not _installed(Path(w).name.split("-")[0])]
    import importlib.util
    stubs = [str(source / lib.root_name / "_stubs" / m) for m in lib.stubs
             if "." not in m and importlib.util.find_spec(m) is None]
    paths = [str(source / lib.root_name), *wheels, str(REPO), *stubs]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env.update({
        "PYTHONPATH": os.pathsep.join(paths),
        "NUMBA_MLIR_GPU_SHIM": mode,
        "NUMBA_MLIR_GPU_TARGET": target,
        "NUMBA_MLIR_GPU_SHIM_MODULES": ",".join(lib.modules or lib.packages),
        "NUMBA_MLIR_GPU_SHIM_PRANGE": lib.prange,
        "NUMBA_MLIR_GPU_SHIM_REPORT": str(report),
        "NUMBA_CACHE_DIR": str(cache),            # never share cached machine code between runs
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    return env


def _installed(dist: str) -> bool:
    from importlib import metadata
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def _timeout_plugin() -> list:
    """`-p timeout` where it is not installed (then it comes as a wheel). The wheel's
    metadata is on the path too, so pytest finds its `pytest11` entry point `timeout`:
    `-p pytest_timeout` would register the module a second time under another name."""
    return [] if _installed("pytest_timeout") else ["-p", "timeout"]


def run_suite(source: Path, lib: Library, mode: str, target: str, timeout: int,
              workers: int, log_dir: Path, budget: int = 0, earlier: Optional[dict] = None) -> dict:
    """One pytest run of the library's tests. `earlier`: a run of the same
    mode that its budget stopped (as written to the log folder): its tests
    are not run again, and its record is merged into this one."""
    earlier = earlier or {"outcomes": {}, "messages": {}, "compilations": [], "seconds": 0}
    root = source / lib.root_name
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "numba_mlir_gpu.testing.library_shim",
               *([*_timeout_plugin(), "--timeout", str(timeout)] if timeout else []),
               "-o", "addopts=", "--rootdir", str(root),
               "-W", "ignore::DeprecationWarning", "--continue-on-collection-errors", *lib.pytest_args]
        if workers > 1:
            cmd += ["-n", str(workers)]
        else:
            cmd += ["-p", "no:xdist"]
        cmd += [f"--deselect={d}" for d in [*lib.deselect, *earlier["outcomes"]]] + lib.tests
        start = time.time()
        log = log_dir / f"{lib.name}-{mode}-{target}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, cwd=root, env=_env(source, lib, mode, target, report,
                                                            Path(tmp) / "cache", workers),
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                proc.wait(timeout=budget or None)
            except subprocess.TimeoutExpired:      # the rest of its tests: "not run"
                os.killpg(proc.pid, 9)
                proc.wait()
                out.write(f"\n[libraries.py: stopped after the budget of {budget} s]\n")
        seconds = time.time() - start
        merged = {key: copy.deepcopy(earlier[key]) for key in ("outcomes", "messages",
                                                               "compilations")}
        for part in sorted(Path(tmp).glob("report.json*")):
            if part.name.endswith(".tmp"):
                continue
            data = json.loads(part.read_text())
            merged["outcomes"].update(data["outcomes"])
            merged["messages"].update(data["messages"])
            merged["compilations"] += data["compilations"]
    if not merged["outcomes"]:
        print(f"{lib.name} {mode}: no test ran (exit {proc.returncode}); the end of {log}:\n"
              + "\n".join(log.read_text().splitlines()[-15:]), flush=True)
    merged.update(returncode=proc.returncode, seconds=round(seconds + earlier["seconds"], 1),
                  log=str(log), command=" ".join(cmd))
    return merged


# -- summarising ---------------------------------------------------------------------

def normalize(text: Optional[str]) -> str:
    """A fallback reason or error message as a construct: no line numbers,
    variable names or addresses."""
    if not text:
        return ""
    text = re.sub(r", line \d+$", "", text)
    text = re.sub(r"0x[0-9a-f]+", "0x…", text)
    text = re.sub(r"Var\([^()]*\)", "Var(…)", text)
    text = re.sub(r"\$[\w.]+", "$v", text)
    text = re.sub(r"'[\w.$]+\.\d+'", "'v'", text)
    text = re.sub(r"\(\w+\.py:\d+\)", "", text)
    text = re.sub(r"\b\d{2,}\b", "N", text)
    return text[:200]


def summarize(lib: Library, stock: dict, ours: dict) -> dict:
    so, oo = stock["outcomes"], ours["outcomes"]
    stock_passed = sorted(t for t, o in so.items() if o == "passed")
    both = [t for t in stock_passed if oo.get(t) == "passed"]
    lost = [t for t in stock_passed if oo.get(t) != "passed"]
    comps = ours["compilations"]
    functions = collections.defaultdict(set)          # path -> functions
    per_function = {}
    for c in comps:
        key = (c["function"], c["signature"])
        per_function.setdefault(key, c)
    for (fn, _), c in per_function.items():
        functions[c["path"]].add(fn)
    fallback_reasons = collections.Counter()
    fallback_examples = {}
    loop_reasons = collections.Counter()
    errors = collections.Counter()
    error_examples = {}
    parfors = loops_mlir = loops_cpu = loops_gpu = 0
    for (fn, sig), c in per_function.items():
        parfors += c["parfors"] if c["path"] == "mlir" else len(c["loops"])
        loops_mlir += c["loops_mlir"]
        loops_gpu += c["loops_mlir"] if c.get("target") == "gpu" else 0
        if c["path"] == "fallback":
            key = normalize(c["reason"])
            fallback_reasons[key] += 1
            fallback_examples.setdefault(key, f"{fn}{sig}: {c['reason']}")
            for loop in c["loops"]:
                if loop["path"] != "mlir":
                    loops_cpu += 1
                    loop_reasons[normalize(loop["reason"])] += 1
        if c["error"]:
            key = (c["error_kind"], normalize(c["error"]))
            errors[key] += 1
            error_examples.setdefault(key, f"{fn}{sig}: {c['error']}")
    lost_reasons = collections.Counter(normalize(ours["messages"].get(t, oo.get(t, "not run")))
                                       for t in lost)
    count = lambda outcomes, o: sum(v == o for v in outcomes.values())   # noqa: E731
    return {
        "version": lib.version,
        "tests": lib.tests,
        "deselected": lib.deselect,
        "stock": {o: count(so, o) for o in ("passed", "failed", "error", "skipped", "xfailed")}
                 | {"total": len(so), "seconds": stock["seconds"], "returncode": stock["returncode"]},
        "ours": {o: count(oo, o) for o in ("passed", "failed", "error", "skipped", "xfailed")}
                | {"total": len(oo), "seconds": ours["seconds"], "returncode": ours["returncode"]},
        "stock_passed": len(stock_passed),
        "ours_passed_of_stock": len(both),
        "ratio": round(len(both) / len(stock_passed), 4) if stock_passed else None,
        "lost_tests": {t: ours["messages"].get(t, oo.get(t, "not run")) for t in lost},
        "lost_reasons": lost_reasons.most_common(),
        "compilations": len(comps),
        "functions": {p: len(f) for p, f in functions.items()},
        "signatures": {p: sum(c["path"] == p for c in per_function.values())
                       for p in ("mlir", "fallback", "error", "not-ours")},
        "fallback_functions": sorted(functions.get("fallback", ())),
        "fallback_reasons": [[n, r, fallback_examples[r]] for r, n in fallback_reasons.most_common()],
        "parfors": parfors,
        "parfors_mlir": loops_mlir,
        "parfors_mlir_gpu": loops_gpu,      # of parfors_mlir, those compiled as GPU kernels
        "parfors_numba_cpu": loops_cpu,
        "loop_reasons": loop_reasons.most_common(),
        "errors": [[n, k, m, error_examples[(k, m)]] for (k, m), n in errors.most_common()],
        "internal_errors": sum(n for (k, _), n in errors.items() if k == "internal"),
        "compile_seconds": round(sum(c["seconds"] for c in comps), 1),
    }


# -- benchmark -------------------------------------------------------------------------

BENCH_DRIVER = r"""
import json, sys, time
mode = sys.argv[1]
if mode == "ours":
    from numba_mlir_gpu.testing import library_shim
    shim = library_shim.install("ours")
ns = {}
exec(compile(sys.argv[2], "<bench>", "exec"), ns)
args = ns["setup"]()
t0 = time.perf_counter(); ns["work"](*args); first = time.perf_counter() - t0
runs = []
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter(); ns["work"](*args); runs.append(time.perf_counter() - t0)
out = {"first_call_s": round(first, 4), "best_s": round(min(runs), 5),
       "median_s": round(sorted(runs)[len(runs) // 2], 5)}
if mode == "ours":
    paths = [c.path for c in shim.compilations]
    out["paths"] = {p: paths.count(p) for p in set(paths)}
    out["parfors_mlir"] = sum(c.loops_mlir for c in shim.compilations)
print("BENCH" + json.dumps(out))
"""


def bench(source: Path, lib: Library, target: str, repeat: int, log_dir: Path) -> dict:
    result = {"workload": lib.bench.strip()}
    for mode in ("stock", "ours"):
        with tempfile.TemporaryDirectory() as tmp:
            env = _env(source, lib, mode, target, Path(tmp) / "r.json", Path(tmp) / "cache")
            proc = subprocess.run([sys.executable, "-c", BENCH_DRIVER, mode, lib.bench, str(repeat)],
                                  env=env, capture_output=True, text=True, timeout=1800)
        (log_dir / f"{lib.name}-bench-{mode}-{target}.log").write_text(proc.stdout + proc.stderr)
        line = [l for l in proc.stdout.splitlines() if l.startswith("BENCH")]
        result[mode] = json.loads(line[-1][5:]) if line else {
            "error": (proc.stderr.strip().splitlines() or ["?"])[-1][:300]}
    s, o = result["stock"].get("best_s"), result["ours"].get("best_s")
    result["speedup"] = round(s / o, 2) if s and o else None
    return result


# -- writing ------------------------------------------------------------------------------

def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               text=True, capture_output=True).stdout.strip()
    except OSError:
        return "?"
    return (head or "?") + (" (modified)" if dirty else "")


def json_path(target: str) -> Path:
    return DOCS / ("libraries.json" if target == "cpu" else f"libraries-{target}.json")


def render(results: dict) -> str:
    lines = []
    for target in ("cpu", "gpu"):
        data = results.get(target)
        if not data:
            continue
        lines += [f"### Target `{target}`", "",
                  f"Numba {data['numba']}, Python {data['python']}, {data['date']}, "
                  f"{data.get('machine', '')}, commit {data.get('commit', '?')} (the last run; each "
                  f"library's commit is in its row). Command: `{data['command']}`", "",
                  "| library | tests run | stock passed | ours passed (of stock's) | ratio "
                  "| functions: whole MLIR / fallback / error | parfors through MLIR / all "
                  "| parfors on Numba's CPU lowering | internal errors | stock s | ours s | commit |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for name, s in data["libraries"].items():
            f = s["functions"]
            ratio = f"{100 * s['ratio']:.1f}%" if s["ratio"] is not None else "-"
            gpu = f" ({s.get('parfors_mlir_gpu', 0)} on the GPU)" if target == "gpu" else ""
            lines.append(
                f"| {name} {s['version']} | {s['stock']['total']} | {s['stock_passed']} | "
                f"{s['ours_passed_of_stock']} | {ratio} | {f.get('mlir', 0)} / "
                f"{f.get('fallback', 0)} / {f.get('error', 0)} | {s['parfors_mlir']} / "
                f"{s['parfors']}{gpu} | {s['parfors_numba_cpu']} | {s['internal_errors']} | "
                f"{s['stock']['seconds']:.0f} | {s['ours']['seconds']:.0f} | "
                f"{s.get('run', {}).get('commit', '')} |")
        lines.append("")
        for name, s in data["libraries"].items():
            if s["fallback_reasons"] or s["lost_tests"] or s["errors"]:
                lines += [f"**{name}**", ""]
            if s["fallback_reasons"]:
                lines.append("Fallback constructs (compiled signatures):")
                lines += [f"- {n} × {r}" for n, r, _ in s["fallback_reasons"][:12]]
            if s["loop_reasons"]:
                lines.append("Parallel loops left to Numba's CPU lowering:")
                lines += [f"- {n} × {r}" for r, n in s["loop_reasons"][:8]]
            if s["errors"]:
                lines.append("Errors out of compilations (kind, message):")
                lines += [f"- {n} × {k}: {m}" for n, k, m, _ in s["errors"][:12]]
            if s["lost_tests"]:
                lines.append(f"Tests passing with stock Numba, not through ours "
                             f"({len(s['lost_tests'])}):")
                lines += [f"- {n} × {r}" for r, n in s["lost_reasons"][:12]]
            if s["fallback_reasons"] or s["lost_tests"] or s["errors"]:
                lines.append("")
        if data.get("bench"):
            lines += ["Representative workload, best of the repeated calls after the first "
                      "(compilation excluded; first call shown apart):", "",
                      "| library | stock parallel=True s | ours s | stock / ours | first call "
                      "stock s | first call ours s | paths (ours) | machine, commit |",
                      "|---|---|---|---|---|---|---|---|"]
            for name, b in data["bench"].items():
                st, ou = b.get("stock", {}), b.get("ours", {})
                lines.append(f"| {name} | {st.get('best_s', st.get('error'))} | "
                             f"{ou.get('best_s', ou.get('error'))} | {b.get('speedup')} | "
                             f"{st.get('first_call_s')} | {ou.get('first_call_s')} | "
                             f"{ou.get('paths')} | {b.get('machine', '')}, {b.get('commit', '')} |")
            lines.append("")
    return "\n".join(lines)


def write_markdown() -> None:
    md = DOCS / "libraries.md"
    results = {}
    for target in ("cpu", "gpu"):
        p = json_path(target)
        if p.exists():
            results[target] = json.loads(p.read_text())
    text = md.read_text() if md.exists() else f"# Libraries\n\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    md.write_text(f"{head}{BEGIN}\n{render(results)}\n{END}{tail}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fetch", metavar="DIR", help="download and trim the libraries into DIR")
    ap.add_argument("--from", dest="source", metavar="DIR",
                    help="the libraries as --fetch left them (default: fetch into a temp dir)")
    ap.add_argument("--target", default=os.environ.get("NUMBA_MLIR_GPU_TARGET") or "cpu",
                    choices=("cpu", "gpu"))
    ap.add_argument("--libs", default=",".join(LIBRARIES), help="comma-separated")
    ap.add_argument("--timeout", type=int, default=300, help="per test, seconds (0: none)")
    ap.add_argument("--budget", type=int, default=900,
                    help="seconds per pytest run (0: none); tests left are 'not run'")
    ap.add_argument("-n", "--workers", type=int, default=1, help="pytest-xdist workers per run")
    ap.add_argument("--only", choices=("stock", "ours"), help="one run of the two (no summary)")
    ap.add_argument("--bench", action="store_true", help="time each library's workload instead")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="write docs/libraries*.json and the "
                                                         "tables of docs/libraries.md")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("--resume", metavar="DIR",
                    help="a log folder of runs that their budget stopped: run only their "
                         "tests not yet run, and merge (a run without a record there runs "
                         "whole)")
    args = ap.parse_args(argv)
    names = [n for n in args.libs.split(",") if n]
    unknown = [n for n in names if n not in LIBRARIES]
    if unknown:
        ap.error(f"unknown libraries {unknown}; known: {', '.join(LIBRARIES)}")
    if args.fetch:
        fetch(Path(args.fetch), names)
        return 0
    if args.source:
        source = Path(args.source).resolve()
    else:
        source = Path(tempfile.mkdtemp(prefix="numba-mlir-gpu-libraries-"))
        fetch(source, names)
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="libraries-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"logs in {log_dir}", flush=True)
    import numba
    path = json_path(args.target)
    data = json.loads(path.read_text()) if args.write and path.exists() else {}
    data.update(numba=numba.__version__, python=sys.version.split()[0],
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                machine=f"{os.cpu_count()} cores", commit=_commit(),
                command="python -m numba_mlir_gpu.testing.libraries " + " ".join(argv or sys.argv[1:]))
    data.setdefault("libraries", {})
    for name in names:
        lib = LIBRARIES[name]
        if args.bench:
            data.setdefault("bench", {})[name] = b = bench(source, lib, args.target, args.repeat,
                                                           log_dir)
            b.update(machine=data["machine"], commit=data["commit"])   # rows of other runs stay
            print(f"{name}: {json.dumps({k: v for k, v in b.items() if k != 'workload'})}",
                  flush=True)
            continue
        runs = {}
        for mode in ([args.only] if args.only else ["stock", "ours"]):
            record = f"{name}-{mode}-{args.target}.json"    # what --resume reads back
            earlier_path = Path(args.resume) / record if args.resume else None
            earlier = json.loads(earlier_path.read_text()) \
                if earlier_path and earlier_path.exists() else None     # else a fresh run
            runs[mode] = run_suite(source, lib, mode, args.target, args.timeout, args.workers,
                                   log_dir, args.budget, earlier)
            (log_dir / record).write_text(json.dumps(runs[mode]))
            print(f"{name} {mode}: {collections.Counter(runs[mode]['outcomes'].values())} "
                  f"in {runs[mode]['seconds']} s", flush=True)
        if args.only:
            continue
        data["libraries"][name] = s = summarize(lib, runs["stock"], runs["ours"])
        s["run"] = {k: data[k] for k in ("date", "commit", "command")}
        print(f"{name}: stock passed {s['stock_passed']}, ours {s['ours_passed_of_stock']} "
              f"({s['ratio']}), functions {s['functions']}, parfors mlir {s['parfors_mlir']}/"
              f"{s['parfors']}, internal errors {s['internal_errors']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    if args.write:
        path.write_text(json.dumps(data, indent=1))
        write_markdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
