"""bench.bench_two_pass's report: cube pruning's CPU seconds at a two-pass run's model cost
(interpolated in log CPU between the cube runs around it), the table's ratios, and the files."""
import json
import math

import pytest

from bench import bench_two_pass

CUBE = [{"search": "cube", "pop_limit": 10, "sentences": 2, "model_cost": 110.0, "cpu_seconds": 1.0,
         "lm_queries": 100, "lm_queries_novel": 90, "bleu": 20.0},
        {"search": "cube", "pop_limit": 100, "sentences": 2, "model_cost": 100.0, "cpu_seconds": 4.0,
         "lm_queries": 400, "lm_queries_novel": 360, "bleu": 21.0}]
TWO_PASS = {"search": "two-pass", "pop_limit": 30, "beam_size": 10, "two_pass_beam": 2.0, "agenda_limit": 100,
            "max_pops": 1000, "sentences": 2, "model_cost": 105.0, "cpu_seconds": 1.0, "lm_queries": 50,
            "lm_queries_novel": 45, "bleu": 20.5}


def test_cube_cpu_at_equal_cost_interpolates_in_log_cpu():
    # halfway in cost between 1 s and 4 s: the geometric mean, 2 s
    assert bench_two_pass.cube_cpu_at_cost(CUBE, 105.0) == pytest.approx(2.0)
    assert bench_two_pass.cube_cpu_at_cost(CUBE, 100.0) == pytest.approx(4.0)
    assert bench_two_pass.cube_cpu_at_cost(CUBE, 105.0, "lm_queries_novel") == pytest.approx(180.0)
    assert bench_two_pass.cube_cpu_at_cost(CUBE, 99.0) is None  # below cube's best: no equal-cost point


def test_report_writes_json_png_and_the_ratio(tmp_path, capsys):
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(run) + "\n" for run in CUBE + [TWO_PASS]))
    assert bench_two_pass.main(["--report", str(runs), "--results-dir", str(tmp_path / "out")]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith("| two-pass"))
    assert "| 2.0 | 0.50 |" in row and "| 180 | 0.25 |" in row
    assert json.loads((tmp_path / "out" / "two_pass.json").read_text())[-1]["beam_size"] == 10
    assert (tmp_path / "out" / "two_pass.png").stat().st_size > 0


def test_grid_runs_every_setting_once_and_keys_match_records():
    runs = bench_two_pass.grid(bench_two_pass.CUBE_POP_LIMITS, bench_two_pass.TWO_PASS_RUNS)
    keys = [bench_two_pass.run_key(search, settings) for search, settings in runs]
    assert len(set(keys)) == len(runs) == len(bench_two_pass.CUBE_POP_LIMITS) + len(bench_two_pass.TWO_PASS_RUNS)
    # a record written without beam_size (the default, 0) is the same run
    assert bench_two_pass.run_key("cube", {"pop_limit": 10, "sentences": 200}) == \
        bench_two_pass.run_key("cube", {"pop_limit": 10, "beam_size": 0})
    assert not math.isnan(bench_two_pass.cube_cpu_at_cost(CUBE, 101.0))


def test_cky_bench_two_pass_quick_writes_the_files_and_resumes(tmp_path):
    """`cky bench --two-pass --quick`: the sweep on the fixture system, its JSON, PNG and table as a
    section of results.md; a second call resumes (no run twice) and replaces that section, and a
    checkpointed longer run's first verses are the same as a run of that many."""
    import subprocess
    import sys

    out, work = tmp_path / "results", tmp_path / "work"
    (out).mkdir()
    (out / "results.md").write_text("# cky bench: fixture\n\nother tables\n")
    command = [sys.executable, "-m", "decoder.cli", "bench", "--two-pass", "--quick", "--out", str(out),
               "--work", str(work), "--test-sentences", "3"]
    for _ in range(2):
        completed = subprocess.run(command, cwd=bench_two_pass.__file__.rsplit("/bench/", 1)[0],
                                   capture_output=True, text=True, timeout=600)
        assert completed.returncode == 0, completed.stderr[-3000:]
    runs = bench_two_pass.read_runs(out / "two_pass.jsonl")
    expected = len(bench_two_pass.QUICK_CUBE_POP_LIMITS) + len(bench_two_pass.QUICK_TWO_PASS_RUNS)
    assert len(runs) == expected and {r["sentences"] for r in runs} == {3}
    assert {r["search"] for r in runs} == {"cube", "two-pass"}
    assert all(r["model_cost"] > 0 and r["lm_queries_novel"] > 0 for r in runs)
    assert len(json.loads((out / "two_pass.json").read_text())) == expected
    assert (out / "two_pass.png").stat().st_size > 1000
    text = (out / "results.md").read_text()
    assert text.startswith("# cky bench: fixture\n\nother tables\n")
    assert text.count(bench_two_pass.SECTION_START) == 1 and text.count("| two-pass | pop 10") == 2
    # a 3-verse run checkpointed at 2 reports what a 2-verse run does (but CPU seconds)
    config = str(work / "two_pass" / "config.toml")
    fixture = work / "fixture"
    test = next(str(p) for p in fixture.rglob("test*") if p.name.endswith("es"))
    for n, checkpoints in ((3, ["--checkpoints", "2"]), (2, [])):
        assert bench_two_pass.main(["--config", config, "--test", test, "--sentences", str(n), "--out",
                                    str(tmp_path / "runs.jsonl"), "--runs", "two-pass pop_limit=5 two_pass_beam=2.0",
                                    *checkpoints]) == 0
    long_run, short_run = bench_two_pass.read_runs(tmp_path / "runs.jsonl")
    at_two = bench_two_pass.runs_at([long_run], 2)[0]
    for key in ("model_cost", "lm_queries", "lm_queries_novel", "edges_proposed", "agenda_pops"):
        assert at_two[key] == short_run[key], key
    assert long_run["model_cost"] > short_run["model_cost"]
