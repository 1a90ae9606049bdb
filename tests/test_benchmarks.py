"""The benchmark script runs end to end at a tiny size on the CPU target (a
smoke test: it checks that every case computes the right answer and that the
outputs are written; nothing here is timed)."""
import json
import os

from benchmarks import run


def test_benchmarks_run_on_the_cpu_target(tmp_path):
    results = run.main(["--target", "cpu", "--size", "tiny", "--reps", "1",
                        "--skip", "numba", "--out", str(tmp_path)])
    names = [r["case"] for r in results["cases"]]
    assert names == [c.name for c in run.cases()]
    for row in results["cases"]:
        assert "ours_error" not in row, row["ours_error"]
        assert row["ours_correct"], (row["case"], row["ours_rel_error"])
        assert row["ours"]["median_s"] > 0 and row["ours_first_call_s"] > 0
    assert results["call_latency"]["ours"] > 0
    with open(os.path.join(tmp_path, "results.json")) as f:
        assert len(json.load(f)["cases"]) == len(names)
    table = (tmp_path / "results.md").read_text()
    assert all(f"| {name} |" in table for name in names)
