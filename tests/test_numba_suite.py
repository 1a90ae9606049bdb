"""CI check: a fixed part of Numba's own test suite (suite_spec.CI_PART)
through MLIRGPUPipeline must pass at least as many tests as the recorded
baseline (tests/numba_suite_baseline.json, written by
`python -m numba_mlir_gpu.testing.numba_suite --part ci --baseline tests/numba_suite_baseline.json`).
Runs on the CPU target in 2 worker processes; see docs/numba-suite-runner.md."""
import json
from pathlib import Path

from numba_mlir_gpu.testing import numba_suite
from numba_mlir_gpu.testing.suite_spec import CI_PART

BASELINE = Path(__file__).with_name("numba_suite_baseline.json")


def test_numba_suite_ci_part_does_not_regress():
    baseline = json.loads(BASELINE.read_text())
    assert tuple(baseline["part"]) == CI_PART, "the baseline was recorded for another part"
    doc = numba_suite.run(part=CI_PART, target="cpu", jobs=2)
    passing = set(numba_suite.passing(doc))
    lost = sorted(set(baseline["passing_tests"]) - passing)
    assert len(passing) >= baseline["passed"], (
        f"{len(passing)} tests of the CI part pass, the baseline is {baseline['passed']}; "
        f"no longer passing: " + ", ".join(
            f"{t} ({doc['tests'][t]['outcome']}: {doc['tests'][t]['reason'][:120]})"
            for t in lost[:20]))
