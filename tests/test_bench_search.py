"""bench.bench_search: the sweep, workers and peak-RSS runs on test_decoder's tiny system (plumbing,
resuming, the report's files), the length exponent fit on synthetic data with a known exponent, and
the length bins."""
import json
import math
import os
import random

import pytest

from bench import bench_search

from test_decoder import write_toy_system

SENTENCES = ["la casa es pequeña", "el perro es verde", "la casa verde", "un perro", "la casa pequeña es verde",
             "el perro verde es pequeña la casa es verde"]


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bench-search")
    write_toy_system(directory, sentences=SENTENCES)
    (directory / "test.en").write_text("the house is small\nthe dog is green\nthe green house\na dog\n"
                                       "the small house is green\nthe green dog is small the house is green\n")
    return directory


def test_sweep_processes_and_report_on_the_tiny_system(system, tmp_path):
    out, results = tmp_path / "runs.jsonl", tmp_path / "results"
    argv = ["--config", str(system / "config.toml"), "--test", str(system / "test.es"), "--sentences", "5",
            "--pop-limits", "1", "100", "--workers-sentences", "6", "--out", str(out), "--results-dir", str(results)]
    assert bench_search.main(argv) == 0
    runs = [json.loads(line) for line in out.read_text().splitlines()]
    sweep = [r for r in runs if r["kind"] == "sweep"]
    assert [(r["search"], r["pop_limit"]) for r in sweep] == [("cube", 1), ("incremental", 1), ("cube", 100),
                                                              ("incremental", 100)]
    for run in sweep:
        verses = run["verses"]
        assert run["sentences"] == 5 and verses["words"] == [len(s.split()) for s in SENTENCES[:5]]
        assert run["model_cost"] == pytest.approx(-sum(verses["model_score"]), abs=1e-3)
        assert run["recombinations"] == sum(verses["recombinations"]) and 0 <= run["bleu"] <= 100
        assert "lm_state_minimized_recombinations" not in run  # the timed runs do not count them
    counted = {r["search"]: r for r in runs if r["kind"] == "minimization"}
    assert set(counted) == {"cube", "incremental"}
    for search, run in counted.items():
        timed = next(r for r in sweep if r["search"] == search and r["pop_limit"] == 100)
        assert run["pop_limit"] == 100 and run["verses"]["model_score"] == timed["verses"]["model_score"]
        assert run["verses"]["recombinations"] == timed["verses"]["recombinations"]
        assert 0 <= run["lm_state_minimized_recombinations"] <= run["recombinations"]
    # the tiny grammar's search space is small: pop limit 100 is exhaustive, both searches find the best
    best = {r["search"]: r["model_cost"] for r in sweep if r["pop_limit"] == 100}
    assert best["cube"] == pytest.approx(best["incremental"], abs=1e-3)

    peak = next(r for r in runs if r["kind"] == "peak_rss")
    assert peak["lines_out"] == 6 and 20 < peak["peak_rss_mb"] < 2000
    workers = next(r for r in runs if r["kind"] == "workers")
    assert set(workers["runs"]) == {"1", "2"}
    assert workers["runs"]["2"]["same_translations_as_1_worker"]
    one, two = workers["runs"]["1"], workers["runs"]["2"]
    assert len(one["processes"]) == 1 and one["processes"][0]["pid"] == os.getpid()
    assert 1 <= len(two["processes"]) <= 2 and all(p["pid"] != os.getpid() for p in two["processes"])
    for process in one["processes"] + two["processes"]:
        memory = process["memory"]
        assert 0 < memory["Pss"] <= memory["Rss"] + 0.1
        # the store's files are memory-mapped: every worker maps them, and they show up per file
        assert any(path.startswith(str(system / "store")) for path in process["files"])
    assert workers["speedup_2_workers"] == pytest.approx(two["sentences_per_second"] / one["sentences_per_second"],
                                                         rel=1e-2)

    summary = json.loads((results / "search.json").read_text())
    assert summary["machine"]["cpus"] >= 1 and summary["peak_rss"]["kind"] == "peak_rss"
    assert {r["search"] for r in summary["model_cost"]} == {"cube", "incremental"}
    assert summary["recombination"]["cube"]["same_model_cost_as_timed_run"]
    assert set(summary["length"]) == {"cube", "incremental"}
    text = (results / "search.md").read_text()
    for heading in ("## (a)", "## (b)", "## (c)", "## (d)", "## KenLM state minimization"):
        assert heading in text
    assert (results / "search.png").stat().st_size > 1000

    # resuming runs nothing again; a larger pop limit is added
    before = len(runs)
    assert bench_search.main(argv + ["--resume"]) == 0
    assert len(out.read_text().splitlines()) == before
    assert bench_search.main(argv[:6] + ["--pop-limits", "1", "3", "100"] + argv[9:] + ["--resume"]) == 0
    runs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(runs) == before + 2 and {r.get("pop_limit") for r in runs[before:]} == {3}
    # --report alone gives the same figures from the file
    assert bench_search.main(["--report", str(out), "--results-dir", str(tmp_path / "again")]) == 0
    assert len(json.loads((tmp_path / "again" / "search.json").read_text())["model_cost"]) == 6


def test_fit_recovers_a_known_exponent():
    rng = random.Random(4)
    lengths = [rng.randint(2, 60) for _ in range(300)]
    exact = [2e-5 * n ** 2.5 for n in lengths]
    fit = bench_search.fit_exponent(lengths, exact)
    assert fit["exponent"] == pytest.approx(2.5, abs=1e-3) and fit["coefficient"] == pytest.approx(2e-5, rel=1e-3)
    assert fit["r2"] == pytest.approx(1.0)
    noisy = [s * math.exp(rng.gauss(0, 0.3)) for s in exact]  # multiplicative noise: still unbiased in log space
    assert bench_search.fit_exponent(lengths, noisy)["exponent"] == pytest.approx(2.5, abs=0.15)
    # verses without time or words are left out; one length alone has no slope
    assert bench_search.fit_exponent([3, 0, 5], [0.0, 1.0, 1.0])["exponent"] is None


def test_length_bins_of_five_tokens():
    bins = bench_search.length_bins([1, 5, 6, 12, 14, 0], [1.0, 3.0, 2.0, 4.0, 6.0, 9.0])
    assert bins == [{"lengths": "1-5", "verses": 2, "seconds_per_verse": 2.0},
                    {"lengths": "6-10", "verses": 1, "seconds_per_verse": 2.0},
                    {"lengths": "11-15", "verses": 2, "seconds_per_verse": 5.0}]


def test_incremental_at_equal_cost_uses_cube_runs_around_it():
    cube = [{"kind": "sweep", "search": "cube", "pop_limit": p, "sentences": 2, "model_cost": c, "cpu_seconds": s,
             "lm_queries": q, "lm_queries_novel": q, "verses": {"model_score": [-c / 2, -c / 2]}}
            for p, c, s, q in ((10, 110.0, 1.0, 100), (100, 100.0, 4.0, 400))]
    incremental = {"kind": "sweep", "search": "incremental", "pop_limit": 10, "sentences": 2, "model_cost": 105.0,
                   "cpu_seconds": 1.0, "lm_queries": 50, "lm_queries_novel": 50,
                   "verses": {"model_score": [-50.0, -55.0]}}
    rows = bench_search.summarize(cube + [incremental])["model_cost"]
    row = next(r for r in rows if r["search"] == "incremental")
    assert row["cube_cpu_seconds_at_equal_cost"] == pytest.approx(2.0) and row["cpu_ratio_to_cube"] == 0.5
    assert row["novel_query_ratio_to_cube"] == pytest.approx(0.25)
    assert row["better_tied_worse_than_cube_at_same_pop_limit"] == [1, 1, 0]  # -50 > -55, -55 = -55


def test_cky_bench_searches_runs_the_search_bench_with_resume(monkeypatch, tmp_path):
    from decoder.cli import bench as cli

    seen = []
    monkeypatch.setattr(bench_search, "main", lambda argv: seen.append(argv) or 0)
    parser = __import__("argparse").ArgumentParser()
    cli.add_arguments(parser)
    assert cli.main(parser.parse_args(["--searches", "--out", str(tmp_path), "--test-sentences", "20",
                                       "--pop-limits", "10", "100"])) == 0
    assert seen == [["--resume", "--out", str(tmp_path / "search.jsonl"), "--results-dir", str(tmp_path),
                     "--sentences", "20", "--pop-limits", "10", "100"]]
    # and the arguments are ones bench_search takes
    parsed = __import__("argparse").ArgumentParser()
    bench_search.add_arguments(parsed)
    assert parsed.parse_args(seen[0]).pop_limits == [10, 100]
