"""One worker process of the suite runner: runs test ids read from stdin,
one at a time, with every compilation intercepted (see intercept.py), and
writes one JSON line per test to the protocol stream.

The protocol stream is the original stdout; the test's own output (Python's
and C's) goes to stderr, so a test that prints cannot corrupt it.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
import unittest

from .intercept import Interceptor, TestRecord, all_ours

# Outcomes
PASSED, FAILED, UNSUPPORTED, NOT_APPLICABLE, SKIPPED, REFERENCE_ONLY, COMPILED_NOTHING = (
    "passed", "failed", "unsupported", "not_applicable", "skipped", "reference_only",
    "compiled_nothing")


def _last_line(trace: str) -> str:
    """The exception line of a formatted traceback."""
    lines = [l for l in trace.strip().splitlines() if l.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"^[\w.]+(Error|Exception|Failure|Warning|Exit)\b", lines[i]) \
                or lines[i].startswith(("AssertionError", "numba.")):
            return " ".join(lines[i:i + 2]) if len(lines[i]) < 40 else lines[i]
    return lines[-1] if lines else "?"


def classify(result: unittest.TestResult, record: TestRecord) -> tuple[str, str]:
    """(outcome, reason) of one test from unittest's result and what the
    compiler was made to do."""
    if record.violations:
        return FAILED, "native lowering: " + record.violations[0]
    if record.lowering_errors:
        error = record.lowering_errors[0]
        return (UNSUPPORTED if error.kind == "unsupported" else FAILED), error.message
    problems = result.failures + result.errors
    if problems:
        return FAILED, _last_line(problems[0][1])
    if result.unexpectedSuccesses:
        return FAILED, "unexpected success of a test Numba marks as an expected failure"
    if result.expectedFailures:
        return SKIPPED, "an expected failure in Numba itself"
    if result.skipped and result.testsRun <= len(result.skipped):
        return SKIPPED, result.skipped[0][1]
    if record.ours_compiles == 0 and record.reference_compiles == 0 and record.nested_native == 0:
        return COMPILED_NOTHING, "the test compiled nothing (says nothing about any backend)"
    if record.ours_compiles == 0:
        return REFERENCE_ONLY, "no compilation went to MLIRGPUPipeline"
    return PASSED, ""


def _refuse_subprocess(icpt: Interceptor):
    def runner(self, *args, **kwargs):
        icpt._note("violations", "the test runs code in a separate interpreter that the "
                   "runner does not instrument")
        raise AssertionError("subprocess tests are not run by numba_suite")
    return runner


def _adapt_module(module, icpt: Interceptor) -> None:
    """The runner's one adaptation of Numba's test helpers (documented in
    docs/numba-suite.md): `check_scheduling` looks for Numba's gufunc
    scheduler in the LLVM IR; for a result we compiled, the equivalent fact
    is that the parfors became parallel loops in our MLIR: `scf.parallel`,
    or on the GPU target the explicit `gpu.launch` of a tree reduction; for
    a loop the fallback gave to Numba's CPU lowering, Numba's own check.
    The failure message names Numba's scheduler as the original's does, since
    some tests assert that a function has no parallel loop through it."""
    base = getattr(module, "TestParforsBase", None)
    if base is None or getattr(base, "_numba_suite_adapted", False):
        return
    original = base.check_scheduling

    def check_scheduling(self, cres, scheduler_type):
        compiled = cres.metadata.get("numba_mlir_gpu") if cres.metadata else None
        if compiled is None:
            return original(self, cres, scheduler_type)
        if any(loop in compiled.input_mlir for loop in ("scf.parallel", "gpu.launch")):
            return
        path = cres.metadata.get("numba_mlir_gpu_path")
        if path is not None and any(loop.compiled is None for loop in path.loops):
            # a loop given to Numba's CPU parfor lowering (--fallback): its scheduler
            return original(self, cres, scheduler_type)
        raise self.failureException("'@do_scheduling' not found: no scf.parallel or "
                                    "gpu.launch in the MLIR of MLIRGPUPipeline")
    base.check_scheduling = check_scheduling
    base._numba_suite_adapted = True


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    target = os.environ.get("NUMBA_MLIR_GPU_TARGET", "cpu")

    import numba_mlir_gpu  # noqa: F401  (loads MLIR)
    from numba.tests import support
    from .suite_spec import spec_of

    icpt = Interceptor(all_ours, target)
    icpt.install()
    support.TestCase.subprocess_test_runner = _refuse_subprocess(icpt)
    loader = unittest.TestLoader()
    for line in sys.stdin:
        test_id = line.strip()
        if not test_id:
            continue
        spec = spec_of(test_id)
        module = __import__(f"numba.tests.{spec.name}", fromlist=["_"])
        _adapt_module(module, icpt)
        icpt.policy = spec.policy_of(test_id)
        record = icpt.record = TestRecord()
        result = unittest.TestResult()
        start = time.monotonic()
        try:
            loader.loadTestsFromName(test_id).run(result)
        finally:
            icpt.record = None
        outcome, reason = classify(result, record)
        protocol.write(json.dumps({
            "id": test_id, "outcome": outcome, "reason": reason[:400],
            "ours_compiles": record.ours_compiles, "ours_lowered": record.ours_lowered,
            "reference_compiles": record.reference_compiles, "cpu_loops": record.cpu_loops,
            "seconds": round(time.monotonic() - start, 2)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
