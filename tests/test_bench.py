"""`cky bench`: --quick and --speed work as from an installed package (outside the repository, without
bench/ and without matplotlib), its research modes say they need a clone, and its settings are built
without changing the defaults."""
import argparse
import json

import numpy as np
import pytest

from installed_fixtures import installed_layout, run_installed


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """A working directory outside the repository and an environment seeing only the decoder package,
    with matplotlib (the plot extra) not installed."""
    tmp_path = tmp_path_factory.mktemp("outside")
    env = installed_layout(tmp_path, block=("matplotlib",))
    work = tmp_path / "work"
    work.mkdir()
    return work, env


def test_the_repository_is_not_importable_there(outside):
    work, env = outside
    for module in ("bench", "models.fixtures.build_fixture", "matplotlib"):
        completed = run_installed(["-c", f"import {module}"], work, env)
        assert completed.returncode == 1 and "Error" in completed.stderr, module
    assert run_installed(["-c", "import decoder.cli.bench, decoder.demo"], work, env).returncode == 0


def test_bench_quick_outside_the_repository(outside):
    work, env = outside
    completed = run_installed(["-m", "decoder.cli", "bench", "--quick"], work, env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    out = work / "build" / "bench" / "quick"  # the default output directory, under the working directory
    results = json.loads((out / "results.json").read_text())
    assert results["system"]["name"] == "fixture"
    assert results["machine"]["versions"]["sacrebleu"]
    costs = results["grammar_cost"]["strategies"]
    assert set(costs) == {"monolingual", "left", "right", "random", "icr"}
    assert len(costs["random"]["cost_by_seed"]) == 5
    assert costs["icr"]["cost"] <= costs["left"]["cost"]
    assert costs["icr"]["cost_by_iteration"][0] == costs["left"]["cost"]
    assert "## 1. Grammar cost" in (out / "results.md").read_text()
    assert set(results["bleu"]) == set(costs)
    for strategy, entry in results["bleu"].items():
        assert 0.0 <= entry["test"]["bleu"] <= 100.0
    assert results["throughput"]["exit_status"] == 0
    # without matplotlib: everything but the plots, and one line saying how to get them
    assert results["plots"] == [] and not list(out.glob("*.png"))
    assert "no plots: plotting needs matplotlib: pip install 'cky-decoder[plot]'" in completed.stderr


def test_bench_speed_outside_the_repository(outside):
    work, env = outside
    completed = run_installed(["-m", "decoder.cli", "bench", "--speed", "--repeats", "2", "--warmup", "1",
                               "--startup", "--out", "speed"], work, env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads((work / "speed" / "speed.json").read_text())
    test_set = [line for line in (work / "build" / "bench-work" / "quick" / "fixture" / "corpus" / "test.es")
                .read_text().splitlines() if line.strip()]
    assert result["sentences"] == len(test_set) == 30
    assert result["words"] == sum(len(line.split()) for line in test_set)
    assert result["failed"] == 0 and result["repeats"] == 2
    low, high = result["words_per_second_interval"]
    assert low <= result["words_per_second"] <= high
    assert result["words_per_second"] == pytest.approx(result["words"] / result["seconds"])
    assert "words/s" in completed.stdout
    # --startup: fresh processes, each opening the decoder and translating the test set
    startup = result["startup"]
    assert startup["sentences"] == 30 and startup["runs"] == 3 and startup["first_translation"].strip()
    assert 0 < startup["open_seconds"] < startup["first_sentence_seconds"] < startup["process_seconds"]
    assert 0 < startup["open_cpu_seconds"] <= startup["first_sentence_cpu_seconds"] <= startup["cpu_seconds"]
    assert 30 < startup["peak_rss_mb"] < 2048
    assert "start-up: decoder open" in completed.stdout


@pytest.mark.parametrize("mode", [["--searches"], ["--two-pass"], ["--moses", "/bin/true"], ["--sdig", "x.toml"]])
def test_research_modes_need_a_clone(outside, mode):
    work, env = outside
    completed = run_installed(["-m", "decoder.cli", "bench", *mode], work, env)
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and "python -m bench" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_speed_interval_of_a_constant_rate_is_that_rate():
    from decoder.benchmark.speed import bootstrap_interval

    words = np.array([3.0, 5.0, 8.0, 13.0])
    low, high = bootstrap_interval(words, words / 250.0)  # every sentence at 250 words/s
    assert low == pytest.approx(250.0) and high == pytest.approx(250.0)
    low, high = bootstrap_interval(np.array([10.0, 10.0]), np.array([1.0, 0.1]))  # 10 and 100 words/s
    assert 10.0 <= low < high <= 100.0


def test_settings_from_the_command_line_leave_the_defaults_alone():
    from decoder.benchmark.experiments import QUICK, Settings
    from decoder.cli import bench

    before = Settings(**vars(QUICK))
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    settings = bench.settings_from(parser.parse_args(["--quick", "--pop-limits", "3", "7", "--no-tune",
                                                      "--non-unique-kbest", "--workers", "2"]))
    assert settings.pop_limits == (3, 7) and not settings.tune and settings.workers == 2
    assert settings.kbest == QUICK.kbest and settings.mert_iterations == QUICK.mert_iterations
    assert QUICK == before  # the defaults are not changed by a run
    full = bench.settings_from(parser.parse_args(["--kbest", "50"]))
    assert full.kbest == 50 and full.pop_limits == Settings().pop_limits and full.unique_kbest


def test_plots_are_written_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    from decoder.benchmark.plots import plot_all

    results = {"grammar_cost": {"strategies": {"left": {"cost": 100.0}, "icr": {"cost": 40.0}}}}
    written = plot_all(results, str(tmp_path))
    assert [p.rsplit("/", 1)[1] for p in written] == ["grammar_cost.png"]
    assert (tmp_path / "grammar_cost.png").stat().st_size > 1000


def test_plotting_without_matplotlib_says_how_to_install_it(monkeypatch):
    from decoder.benchmark import plots
    from decoder.errors import UsageError

    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)  # import matplotlib raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'cky-decoder\[plot\]'"):
        plots.pyplot()
