"""CI check: a fixed part of Numba's own test suite (suite_spec.CI_PART)
through MLIRGPUPipeline must pass at least as many tests as the recorded
baseline (tests/numba_suite_baseline.json, written by
`python -m numba_mlir_gpu.testing.numba_suite --part ci --baseline tests/numba_suite_baseline.json`).
Runs on the CPU target in 2 worker processes, this week's half of the part's
tests (differential.this_weeks_half) against the baseline's passing tests among
them; see docs/numba-suite-runner.md."""
import json
from pathlib import Path

from numba_mlir_gpu.testing import numba_suite
from numba_mlir_gpu.testing.suite_spec import CI_PART

from .support import this_weeks_half

BASELINE = Path(__file__).with_name("numba_suite_baseline.json")


def test_numba_suite_ci_part_does_not_regress():
    baseline = json.loads(BASELINE.read_text())
    assert tuple(baseline["part"]) == CI_PART, "the baseline was recorded for another part"
    ids = this_weeks_half(numba_suite.part_ids(CI_PART))
    doc = numba_suite.run(ids=ids, target="cpu", jobs=2)
    passing = set(numba_suite.passing(doc))
    expected = set(baseline["passing_tests"]) & set(ids)
    lost = sorted(expected - passing)
    assert len(passing) >= len(expected), (
        f"{len(passing)} tests of this half of the CI part pass, the baseline is "
        f"{len(expected)}; "
        f"no longer passing: " + ", ".join(
            f"{t} ({doc['tests'][t]['outcome']}: {doc['tests'][t]['reason'][:120]})"
            for t in lost[:20]))
