"""`cky bench --quick` runs on the tiny fixture system and writes JSON, markdown and plots."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_quick_on_the_fixture(tmp_path):
    out = tmp_path / "results"
    completed = subprocess.run([sys.executable, "-m", "decoder.cli", "bench", "--quick", "--out", str(out),
                                "--work", str(tmp_path / "work")],
                               cwd=REPO, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["system"]["name"] == "fixture"
    assert results["machine"]["versions"]["sacrebleu"]
    costs = results["grammar_cost"]["strategies"]
    assert set(costs) == {"monolingual", "left", "right", "random", "icr"}
    assert len(costs["random"]["cost_by_seed"]) == 5
    assert costs["icr"]["cost"] <= costs["left"]["cost"]
    assert costs["icr"]["cost_by_iteration"][0] == costs["left"]["cost"]
    assert "## 1. Grammar cost" in (out / "results.md").read_text()
    assert (out / "grammar_cost.png").stat().st_size > 1000
    if "bleu" in results:  # the decoder exists: experiments 2-6 ran
        assert set(results["bleu"]) == set(costs)
        for strategy, entry in results["bleu"].items():
            assert 0.0 <= entry["test"]["bleu"] <= 100.0
        assert results["throughput"]["exit_status"] == 0
        assert (out / "pop_limit.png").exists() and (out / "model_cost.png").exists()
    else:
        assert "decoder" in results["skipped"]["bleu"]
