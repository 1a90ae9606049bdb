"""Run Numba's own test modules with every compilation routed through
MLIRGPUPipeline, and publish the pass rate.

    python -m numba_mlir_gpu.testing.numba_suite --write          # CPU target
    NUMBA_MLIR_GPU_TARGET=gpu python -m numba_mlir_gpu.testing.numba_suite --write

Each test runs in a pool of worker processes (worker.py), so a crash or a
hang costs one test, not the run. docs/numba-suite.md explains the rules.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import importlib
import json
import os
import platform
import re
import select
import signal
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path
from typing import Iterable, Optional

from .suite_spec import CI_PART, MODULES, ModuleSpec
from .worker import (COMPILED_NOTHING, FAILED, NOT_APPLICABLE, PASSED, REFERENCE_ONLY, SKIPPED,
                     UNSUPPORTED)

NOT_RUN = "not_run"
# passed tests that ran a parallel loop with Numba's CPU lowering (--fallback only)
CPU_LOOPS = "passed_with_cpu_loops"

ROOT = Path(__file__).resolve().parents[2]
NA_FILE = Path(__file__).with_name("not_applicable.txt")
OUTCOMES = (PASSED, FAILED, UNSUPPORTED, NOT_APPLICABLE, SKIPPED, REFERENCE_ONLY,
            COMPILED_NOTHING, NOT_RUN)
COMMAND = "PYTHONPATH=. python -m numba_mlir_gpu.testing.numba_suite --write"


# -- what to run --------------------------------------------------------------

def discover(specs: Iterable[ModuleSpec]) -> list[str]:
    """The test ids of the selected classes of each module, in order."""
    ids = []
    for spec in specs:
        module = importlib.import_module(f"numba.tests.{spec.name}")
        for test in _flatten(unittest.defaultTestLoader.loadTestsFromModule(module)):
            cls = type(test)
            if cls.__module__ != module.__name__:
                continue
            if spec.include is not None and cls.__name__ not in spec.include:
                continue
            if cls.__name__ in spec.exclude:
                continue
            ids.append(test.id())
    return ids


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _flatten(item)
        else:
            yield item


def not_applicable(path: Path = NA_FILE) -> dict[str, str]:
    """The one list of tests that inspect Numba's own CPU backend: test id ->
    reason. Every entry must have a reason."""
    entries = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        test_id, _, reason = line.partition("#")
        if not reason.strip():
            raise ValueError(f"{path}:{number}: an entry without a reason")
        entries[test_id.strip()] = reason.strip()
    return entries


# -- the worker pool ------------------------------------------------------------

class _Worker:
    """One worker process and the lines it has written."""

    def __init__(self, env: dict, log):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "numba_mlir_gpu.testing.worker"], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=False)
        self.buffer = b""

    def ask(self, test_id: str, timeout: float) -> Optional[dict]:
        """The worker's result line; None when it died or timed out (then it is killed)."""
        try:
            self.proc.stdin.write(test_id.encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                self.kill()
                return {"timeout": True}
            chunk = os.read(fd, 65536)
            if not chunk:
                self.proc.wait()
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def worker_env(target: str, fallback: bool = False) -> dict:
    """The workers' environment. The fallback is off unless asked for: the
    suites' figures count what MLIR alone compiles. With it, the library
    shim's settings: Numba lowers host code MLIR does not cover, and a
    parallel loop MLIR cannot take runs with Numba's CPU parfor lowering
    (each such test is counted, see summarize)."""
    env = dict(os.environ)
    env["NUMBA_MLIR_GPU_TARGET"] = target
    env["NUMBA_MLIR_GPU_FALLBACK"] = "1" if fallback else "0"
    env["NUMBA_MLIR_GPU_UNSUPPORTED_LOOPS"] = "cpu" if fallback else "error"
    env["SUBPROC_TEST"] = "1"        # enables Numba's @needs_subprocess classes
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


def run_tests(test_ids: list[str], target: str, jobs: int, timeout: float,
              log_dir: Optional[Path] = None, progress: bool = False,
              budget: Optional[float] = None, fallback: bool = False) -> dict[str, dict]:
    """Run the tests in `jobs` workers. Past `budget` seconds no test is
    started any more: the rest are recorded as not run."""
    queue = collections.deque(test_ids)
    results: dict[str, dict] = {}
    lock = threading.Lock()
    env = worker_env(target, fallback)
    start = time.monotonic()

    def slot(index: int) -> None:
        log = open(log_dir / f"worker{index}.log", "ab") if log_dir else subprocess.DEVNULL
        worker = None
        while True:
            with lock:
                if not queue:
                    break
                test_id = queue.popleft()
                if budget is not None and time.monotonic() - start > budget:
                    results[test_id] = {"id": test_id, "outcome": NOT_RUN,
                                        "reason": f"not started within the {budget:.0f} s budget"}
                    continue
            if worker is None:
                worker = _Worker(env, log)
            answer = worker.ask(test_id, timeout)
            if answer is None:
                code = worker.proc.returncode
                name = signal.Signals(-code).name if code and code < 0 else f"exit status {code}"
                answer = {"id": test_id, "outcome": FAILED, "reason": f"worker crashed ({name})"}
                worker = None
            elif answer.get("timeout"):
                answer = {"id": test_id, "outcome": FAILED,
                          "reason": f"timed out after {timeout:.0f} s"}
                worker = None
            with lock:
                results[test_id] = answer
                if progress and len(results) % 50 == 0:
                    print(f"  {len(results)}/{len(test_ids)} tests, "
                          f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
        if worker is not None:
            worker.close()

    threads = [threading.Thread(target=slot, args=(i,), daemon=True) for i in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# -- reports --------------------------------------------------------------------

def summarize(test_ids: list[str], results: dict[str, dict]) -> dict[str, dict]:
    """Per module: the count of each outcome and the pass rate, which is
    passed / (total - not applicable - skipped)."""
    summary: dict[str, dict] = {}
    for test_id in test_ids:
        module = test_id.split(".")[2]
        counts = summary.setdefault(module, dict.fromkeys(("total",) + OUTCOMES, 0))
        counts["total"] += 1
        counts[results[test_id]["outcome"]] += 1
        if results[test_id]["outcome"] == PASSED and results[test_id].get("cpu_loops"):
            counts[CPU_LOOPS] = counts.get(CPU_LOOPS, 0) + 1
    for counts in summary.values():
        counts["pass_rate"] = pass_rate(counts)
    return summary


def pass_rate(counts: dict) -> float:
    counted = (counts["total"] - counts[NOT_APPLICABLE] - counts[SKIPPED]
               - counts.get(NOT_RUN, 0) - counts.get(COMPILED_NOTHING, 0))
    return round(100.0 * counts[PASSED] / counted, 1) if counted else 0.0


def normalize_reason(reason: str) -> str:
    """A reason with its numbers and variable versions folded, for counting."""
    reason = re.sub(r"(?<![\w.-])\d+(\.\d+)?(?![\w-])", "N", reason)
    reason = re.sub(r"\$?[\w]+\.N\b", "<var>", reason)
    reason = re.sub(r"0x[0-9a-f]+", "0x…", reason)
    return reason[:160]


def top_reasons(results: dict[str, dict], test_ids: list[str], count: int = 20) -> list:
    counter = collections.Counter(
        (results[t]["outcome"], normalize_reason(results[t]["reason"])) for t in test_ids
        if results[t]["outcome"] in (FAILED, UNSUPPORTED))
    return [{"outcome": o, "reason": r, "tests": n} for (o, r), n in counter.most_common(count)]


def result_document(test_ids, results, target: str, seconds: float, na: dict,
                    fallback: bool = False) -> dict:
    import numba
    command = COMMAND if target == "cpu" else f"NUMBA_MLIR_GPU_TARGET={target} {COMMAND}"
    return {
        "numba_version": numba.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "target": target,
        "fallback": fallback,
        "command": command + (" --fallback" if fallback else ""),
        "seconds": round(seconds),
        "not_applicable_entries": len(na),
        "modules": summarize(test_ids, results),
        "top_reasons": top_reasons(results, test_ids),
        "tests": {t: results[t] for t in test_ids},
    }


def json_path(target: str, fallback: bool = False) -> Path:
    name = "numba-suite" + ("" if target == "cpu" else f"-{target}") + ("-fallback" if fallback else "")
    return ROOT / "docs" / f"{name}.json"


def _cell(reason: str) -> str:
    """A reason as a table cell: without terminal colour codes (Numba colours
    its messages when it sees a terminal) and with '|' escaped."""
    return re.sub(r"\x1b\[[0-9;]*m", "", reason).replace("|", "\\|")


def write_markdown(path: Path = ROOT / "docs" / "numba-suite.md") -> None:
    documents = [json.loads(p.read_text()) for p in
                 (json_path("cpu"), json_path("gpu"), json_path("cpu", True),
                  json_path("gpu", True)) if p.exists()]
    lines = [
        "# Numba's own tests through MLIRGPUPipeline",
        "",
        "Generated by `numba_mlir_gpu.testing.numba_suite`; do not edit the tables by hand.",
        "Regenerate (about the time noted below; add `-j N` for N workers):",
        "",
        "    " + COMMAND,
        "    NUMBA_MLIR_GPU_TARGET=gpu " + COMMAND + "    # on a machine with a GPU",
        "",
        "How tests are routed, what each outcome means and what CI checks: "
        "[numba-suite-runner.md](numba-suite-runner.md).",
        "",
    ]
    for doc in documents:
        title = f"## Target `{doc['target']}`"
        if doc.get("fallback"):
            title += (", with the host fallback (Numba lowers host code MLIR does not cover; "
                      "not what the suites' targets count)")
        lines += [title, "",
                  f"Numba {doc['numba_version']}"
                  + (f", Python {doc['python']}" if doc.get("python") else "")
                  + f", {doc['date']}, {doc['seconds']} s. "
                  f"Not-applicable list: {doc['not_applicable_entries']} entries "
                  "(`numba_mlir_gpu/testing/not_applicable.txt`).", "",
                  f"Command: `{doc['command']}`", "",
                  "| module | total | passed | failed | unsupported | not applicable | skipped "
                  "| reference only | compiled nothing | not run | pass rate |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for module, c in doc["modules"].items():
            lines.append(f"| {module} | {c['total']} | {c[PASSED]} | {c[FAILED]} | "
                         f"{c[UNSUPPORTED]} | {c[NOT_APPLICABLE]} | {c[SKIPPED]} | "
                         f"{c[REFERENCE_ONLY]} | {c.get(COMPILED_NOTHING, 0)} | "
                         f"{c.get(NOT_RUN, 0)} | {c['pass_rate']}% |")
        lines += ["", "Pass rate = passed / (total - not applicable - skipped - compiled nothing "
                  "- not run)."]
        if doc.get("fallback"):
            lines += ["", "Parallel loops MLIR cannot take ran with Numba's CPU parfor lowering "
                      "(`unsupported_loops=\"cpu\"`, the library shim's setting). Passed tests "
                      "that ran such a loop, and the pass rate without them:", ""]
            lines += [f"- {module}: {c.get(CPU_LOOPS, 0)} tests; "
                      f"{pass_rate({**c, PASSED: c[PASSED] - c.get(CPU_LOOPS, 0)})}% with "
                      "every parallel loop through MLIR" for module, c in doc["modules"].items()]
        lines += ["",
                  "Top reasons (failed and unsupported, all modules):", "",
                  "| tests | outcome | reason |", "|---|---|---|"]
        for item in doc["top_reasons"]:
            lines.append(f"| {item['tests']} | {item['outcome']} | {_cell(item['reason'])} |")
        for module in doc["modules"]:
            ids = [t for t in doc["tests"] if t.split(".")[2] == module]
            lines += ["", f"Top reasons in {module}:", "", "| tests | outcome | reason |",
                      "|---|---|---|"]
            for item in top_reasons(doc["tests"], ids, 10):
                lines.append(f"| {item['tests']} | {item['outcome']} | {_cell(item['reason'])} |")
        lines.append("")
    path.write_text("\n".join(lines))


def passing(doc: dict) -> list[str]:
    return sorted(t for t, r in doc["tests"].items() if r["outcome"] == PASSED)


def write_baseline(doc: dict, path: Path) -> None:
    path.write_text(json.dumps({
        "part": list(CI_PART), "numba_version": doc["numba_version"], "date": doc["date"],
        "target": doc["target"], "passed": len(passing(doc)), "passing_tests": passing(doc),
    }, indent=1) + "\n")


# -- command line -----------------------------------------------------------------

def select_tests(modules: Optional[list], classes: Optional[list]) -> tuple[list, list]:
    """The ids of the tests of `modules` (all if None), narrowed to `classes`
    ("Class" or "module.Class") if given."""
    specs = [s for s in MODULES if not modules or s.name in modules]
    ids = discover(specs)
    if classes:
        ids = [t for t in ids if ".".join(t.split(".")[2:4]) in classes
               or t.split(".")[3] in classes]
    return specs, ids


def part_ids(part: tuple) -> list[str]:
    """The ids of a part given as module names and module.Class names."""
    ids = discover(MODULES)
    return [t for t in ids if t.split(".")[2] in part or ".".join(t.split(".")[2:4]) in part]


def run(modules=None, classes=None, target: str = "cpu", jobs: int = 2, timeout: float = 300,
        log_dir=None, progress=False, part: Optional[tuple] = None,
        budget: Optional[float] = None, fallback: bool = False,
        ids: Optional[list] = None) -> dict:
    """Run the selected tests (`ids`, else `part`, else modules and classes);
    the result document (see result_document)."""
    if ids is None:
        ids = part_ids(part) if part else select_tests(modules, classes)[1]
    na = not_applicable()
    unknown = sorted(set(na) - set(discover(MODULES)))
    if unknown:
        raise ValueError(f"not_applicable.txt names tests that do not exist: {unknown[:5]}")
    start = time.monotonic()
    results = {t: {"id": t, "outcome": NOT_APPLICABLE, "reason": na[t]} for t in ids if t in na}
    results.update(run_tests([t for t in ids if t not in na], target, jobs, timeout,
                             log_dir, progress, budget, fallback))
    return result_document(ids, results, target, time.monotonic() - start, na, fallback)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("NUMBA_MLIR_GPU_TARGET", "cpu"),
                        choices=("cpu", "gpu"))
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--module", action="append", help="numba.tests module name (repeatable)")
    parser.add_argument("--class", dest="classes", action="append",
                        help="test class, as Class or module.Class (repeatable)")
    parser.add_argument("--part", choices=("ci",), help="run only the part CI runs")
    parser.add_argument("--baseline", type=Path,
                        help="with --part ci: record the passing tests as CI's baseline here")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per test")
    parser.add_argument("--budget", type=float,
                        help="seconds after which no test is started (the rest: not run)")
    parser.add_argument("--write", action="store_true",
                        help="write docs/numba-suite[-gpu].json and docs/numba-suite.md "
                             "(only for a full run)")
    parser.add_argument("--json", type=Path, help="write the result document here")
    parser.add_argument("--log-dir", type=Path, help="keep each worker's stderr here")
    parser.add_argument("--fallback", action="store_true",
                        help="with Numba's lowering of host code MLIR does not cover "
                             "(frontend/fallback.py) and Numba's CPU lowering of parallel "
                             "loops MLIR cannot take (counted apart); off by default")
    args = parser.parse_args(argv)
    if args.write and (args.module or args.classes or args.part):
        parser.error("--write records the full suite; leave out --module/--class")
    if args.log_dir:
        args.log_dir.mkdir(parents=True, exist_ok=True)
    doc = run(args.module, args.classes, args.target, args.jobs, args.timeout, args.log_dir,
              progress=True, part=CI_PART if args.part == "ci" else None, budget=args.budget,
              fallback=args.fallback)
    if args.baseline:
        if args.part != "ci":
            parser.error("--baseline records the CI part; add --part ci")
        write_baseline(doc, args.baseline)
    if args.write:
        json_path(args.target, args.fallback).write_text(json.dumps(doc, indent=1) + "\n")
        write_markdown()
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    for module, c in doc["modules"].items():
        print(f"{module:22} total {c['total']:4}  passed {c[PASSED]:4}  failed {c[FAILED]:4}  "
              f"unsupported {c[UNSUPPORTED]:4}  n/a {c[NOT_APPLICABLE]:3}  "
              f"skipped {c[SKIPPED]:3}  ref-only {c[REFERENCE_ONLY]:3}  "
              f"nothing {c[COMPILED_NOTHING]:4}  "
              f"not run {c[NOT_RUN]:3}  {c['pass_rate']}%")
    print(f"{doc['seconds']} s; not-applicable list: {doc['not_applicable_entries']} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
