"""`cky bench` on the binarization strategies: the two goals' verdicts on hand-made sweeps (Xiao et al.
2009: ICR's edges against left-heavy's; Zhang et al. 2006: synchronous against monolingual BLEU), how
--pair and --data find a build of `cky train`'s layout, and the command end to end on such a build
made of the fixture system."""
import argparse
import json
import os
import shutil

import pytest

from decoder import experiment
from decoder.benchmark import goals
from decoder.errors import UsageError
from installed_fixtures import installed_layout, run_installed


def point(bleu, edges, model_score=-100.0, failed=0):
    """One pop limit's summary, as experiments.summarize_decoding gives it."""
    return {"bleu": bleu, "edges_per_sentence": edges, "model_cost": -model_score, "failed": failed}


# left and icr at pop limits 10 and 50: at 10 ICR has 700 / 1000 = 0.70 of left's edges at BLEU 30 >= 29
# (met); at 50 it has 1800 / 2000 = 0.90 at BLEU 30 < 31 (missed by 0.15 in the ratio and 1 BLEU).
SWEEP = {"left": {10: point(29.0, 1000.0, -50.0), 50: point(31.0, 2000.0, -40.0)},
         "icr": {10: point(30.0, 700.0, -49.0), 50: point(30.0, 1800.0, -41.5)}}


def test_icr_against_left_at_equal_pop_limit_and_at_equal_bleu():
    result = goals.icr_against_left(SWEEP)
    at_10, at_50 = result["at_equal_pop_limit"]
    assert at_10["edge_ratio"] == pytest.approx(0.7) and at_10["met"] and at_10["ratio_over"] == 0.0
    assert at_50["edge_ratio"] == pytest.approx(0.9) and not at_50["met"]
    assert at_50["ratio_over"] == pytest.approx(0.15) and at_50["bleu_under"] == pytest.approx(1.0)
    assert result["met_at_pop_limits"] == [10] and not result["met"]
    # left at 10 (BLEU 29): both ICR points reach 29, the one of fewest edges is at 10 (700 edges)
    # left at 50 (BLEU 31): no ICR point reaches it
    first, second = result["at_equal_bleu"]
    assert (first["icr_pop_limit"], first["edge_ratio"], first["met"]) == (10, pytest.approx(0.7), True)
    assert second["icr"] is None and not second["met"]


def test_icr_lines_say_the_ratio_the_bleus_and_by_how_much_the_goal_is_missed():
    lines = goals.icr_lines(goals.icr_against_left(SWEEP), grammar_cost_ratio=0.25)
    assert lines[0] == ("- pop limit 10: ICR edges / left edges = 0.700 (700 / 1,000) at BLEU 30.00 vs 29.00: "
                        "goal met (ratio 0.050 under 0.75); model score icr - left +1.00")
    assert lines[1] == ("- pop limit 50: ICR edges / left edges = 0.900 (1,800 / 2,000) at BLEU 30.00 vs 31.00: "
                        "goal not met by 0.150 in the ratio (goal 0.75) and 1.00 BLEU; model score icr - left -1.50")
    assert "no ICR point reaches its BLEU: goal not met" in lines[4]
    assert lines[-1] == ("- goal (ratio at most 0.75 at equal or better BLEU): at equal pop limit met at 10 of 2 "
                         "pop limits; at equal BLEU met for left's points at 10 of 2; Q(G') icr / left = 0.250.")


def test_synchronous_against_monolingual_up_to_pop_limit_1000():
    sweep = {"monolingual": {"10": point(20.0, 500.0, -60.0), "100": point(25.0, 900.0, -55.0),
                             "2000": point(30.0, 9000.0, -50.0)},
             "left": {"10": point(21.0, 800.0, -58.0), "100": point(24.0, 1500.0, -53.0),
                      "2000": point(29.0, 15000.0, -49.0)},
             "icr": {"10": point(20.5, 700.0), "100": point(26.0, 1400.0)}}  # str keys: as read from JSON
    result = goals.synchronous_against_monolingual(sweep)
    assert [r["pop_limit"] for r in result["by_pop_limit"]] == [10, 100]  # 2000 is above the goal's range
    assert [r["difference"] for r in result["by_pop_limit"]] == [pytest.approx(1.0), pytest.approx(-1.0)]
    assert result["by_pop_limit"][1]["others"] == {"icr": pytest.approx(1.0)}
    assert not result["met"] and result["behind_at"] == [100] and result["shortfall"] == pytest.approx(1.0)
    lines = goals.synchronous_lines(result)
    assert lines[0] == "- sync (left) - mono BLEU at each pop limit: 10: +1.00, 100: -1.00"
    assert lines[1] == "- icr - mono BLEU: 10: +0.50, 100: +1.00"
    assert lines[2].startswith("- goal (synchronous ahead at every pop limit up to 1000): not met: behind or "
                               "level at pop limit 100, by up to 1.00 BLEU; model score left - mono there: 100: +2.00 "
                               "(positive: left's search found translations the model scores higher)")
    ahead = {"monolingual": {10: point(20.0, 1.0)}, "left": {10: point(20.5, 1.0)}}
    assert goals.synchronous_lines(goals.synchronous_against_monolingual(ahead))[-1].endswith(": met")
    level = {"monolingual": {10: point(20.0, 1.0)}, "left": {10: point(20.0, 1.0)}}
    assert not goals.synchronous_against_monolingual(level)["met"]  # level is not ahead


def test_a_sweep_without_the_strategies_has_no_verdict():
    assert goals.goals({"left": SWEEP["left"]}) == {"icr_against_left": None, "synchronous_against_monolingual": None}
    assert "not measured" in goals.icr_lines(None)[0] and "not measured" in goals.synchronous_lines(None)[0]


# ---- builds of `cky train`'s layout -------------------------------------------------------------------

def trained_build(directory, fixture: dict, weights: dict | None = None, sentences: int | None = None):
    """A directory in `cky train`'s layout made of the fixture system's files (the first `sentences` dev
    and test sentences)."""
    (directory / "corpus").mkdir(parents=True)
    for source, target in ((fixture["rules"], "rules.gz"), (fixture["rules"] + ".features.json",
                                                            "rules.gz.features.json"),
                           (fixture["lm"], "lm.bin"), (fixture["glue"], "glue.gz")):
        shutil.copyfile(source, directory / target)
    for split in ("dev", "test"):
        for language, side in (("es", "src"), ("en", "tgt")):
            with open(fixture[f"{split}_{language}"], encoding="utf-8") as f:
                lines = f.readlines()
            (directory / "corpus" / f"{split}.tok.{side}").write_text(
                "".join(lines[:sentences] if sentences else lines), encoding="utf-8")
    if weights is not None:
        text = "# written by cky train: weights tuned with MERT\nstore = \"store\"\n\n[weights]\n" + "".join(
            f"{name} = {value}\n" for name, value in weights.items())
        (directory / "config.toml").write_text(text, encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def fixture_files(tmp_path_factory):
    from decoder.fixture import build_fixture

    return build_fixture(str(tmp_path_factory.mktemp("fixture")))


def test_build_name_follows_cky_data(tmp_path):
    assert experiment.build_name(str(tmp_path / "bible-zh-en" / "build")) == "bible-zh-en"
    assert experiment.build_name(str(tmp_path / "bible-zh-en" / "build" / "small")) == "bible-zh-en-small"
    assert experiment.build_name(str(tmp_path / "bible-zh-en" / "small")) == "bible-zh-en-small"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "manifest.json").write_text('{"name": "given"}')
    assert experiment.build_name(str(tmp_path / "mine")) == "given"


def test_build_weights_are_the_configs(tmp_path, fixture_files):
    build = trained_build(tmp_path / "b", fixture_files, weights={"lm": 0.5, "glue": -1.0})
    weights, source = experiment.build_weights(str(build))
    assert weights == {"lm": 0.5, "glue": -1.0}
    assert source == f"{build / 'config.toml'} (written by cky train: weights tuned with MERT)"
    (build / "config.toml").write_text("store = \"store\"\n")
    assert experiment.build_weights(str(build)) == (None, f"the decoder's defaults ({build / 'config.toml'} has no weights)")


def test_pair_finds_the_full_build_before_the_small_one(tmp_path, fixture_files, monkeypatch):
    from decoder.cli import bench
    from decoder.data import build as data_build

    monkeypatch.setattr(data_build, "repository", lambda: None)  # as installed: builds under $CKY_DATA
    monkeypatch.setenv("CKY_DATA", str(tmp_path / "data"))
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    work = str(tmp_path / "work")
    systems, skipped = bench.pair_systems(parser.parse_args(["--pair", "both"]), work)
    assert systems == {} and set(skipped) == {"es-en", "zh-en"}
    assert f"{tmp_path / 'data' / 'bible-zh-en'} lacks {tmp_path / 'data' / 'bible-zh-en' / 'rules.gz'}" in skipped["zh-en"]

    small = trained_build(tmp_path / "data" / "bible-zh-en" / "small", fixture_files)
    systems, skipped = bench.pair_systems(parser.parse_args(["--pair", "both"]), work)
    assert list(systems) == ["zh-en"] and list(skipped) == ["es-en"]
    system = systems["zh-en"]
    assert (system.name, system.build) == ("bible-zh-en-small", str(small))
    assert system.rules == str(small / "rules.gz") and system.glue == str(small / "glue.gz")
    assert system.test_src == str(small / "corpus" / "test.tok.src")
    assert system.work == os.path.join(work, "bible-zh-en-small")  # one work directory per build

    full = trained_build(tmp_path / "data" / "bible-zh-en", fixture_files)
    systems, _ = bench.pair_systems(parser.parse_args(["--pair", "zh-en"]), work)
    assert systems["zh-en"].build == str(full) and systems["zh-en"].name == "bible-zh-en"
    systems, _ = bench.pair_systems(parser.parse_args(["--pair", "zh-en", "--small"]), work)
    assert systems["zh-en"].build == str(small)
    systems, _ = bench.pair_systems(parser.parse_args(["--data", str(small)]), work)
    assert list(systems) == ["bible-zh-en-small"]
    with pytest.raises(UsageError, match="lacks .*lm.bin"):
        os.remove(full / "lm.bin")
        bench.pair_systems(parser.parse_args(["--data", str(full)]), work)


def test_a_work_directory_serves_one_build(tmp_path, fixture_files):
    one = trained_build(tmp_path / "one" / "build", fixture_files)
    other = trained_build(tmp_path / "two" / "one" / "build", fixture_files, sentences=3)
    work = str(tmp_path / "work")
    assert experiment.bible_system(work, str(one)).work == os.path.join(work, "one")
    assert experiment.bible_system(work, str(one)).work == os.path.join(work, "one")  # again: the same files
    with pytest.raises(UsageError, match="source.json: this work directory was built from .*give another --work"):
        experiment.bible_system(work, str(other))  # the same name, other files


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("outside")
    env = installed_layout(tmp_path, block=("matplotlib",))
    work = tmp_path / "work"
    work.mkdir()
    return work, env


def test_bench_on_a_trained_build_reports_the_goals(tmp_path, fixture_files, monkeypatch, capsys):
    """--pair both with a zh-en build of `cky train`'s layout and no es-en build: the report has the sweep
    with model scores, Zhang et al.'s table and the goal lines, and lists es-en as skipped; the sweep's
    common weights are the build's config.toml's."""
    from decoder.cli import bench
    from decoder.data import build as data_build

    monkeypatch.setattr(data_build, "repository", lambda: None)  # as installed: builds under $CKY_DATA
    monkeypatch.setenv("CKY_DATA", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    trained_build(tmp_path / "data" / "bible-zh-en", fixture_files, weights={"lm": 0.8, "word_count": 0.3})
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    arguments = parser.parse_args(["--pair", "both", "--no-tune", "--common-weights", "build", "--strategies",
                                   "monolingual", "left", "icr", "--test-sentences", "4", "--dev-sentences", "2",
                                   "--pop-limits", "2", "20", "--pop-limit", "5", "--bootstrap-samples", "20",
                                   "--out", "out"])
    assert bench.main(arguments) == 0
    combined = json.loads((tmp_path / "out" / "results.json").read_text())
    assert list(combined["pairs"]) == ["zh-en"] and "bible-es-en" in combined["skipped"]["es-en"]
    results = combined["pairs"]["zh-en"]
    assert results["system"]["name"] == "bible-zh-en"
    assert results["common_weights"] == {"lm": 0.8, "word_count": 0.3}
    assert results["common_weights_from"].endswith("(written by cky train: weights tuned with MERT)")
    sweep = results["pop_limit_sweep"]
    for strategy in ("monolingual", "left", "icr"):
        assert [int(p) for p in sweep[strategy]] == [2, 20]
        assert sweep[strategy]["20"]["edges_per_sentence"] > sweep[strategy]["2"]["edges_per_sentence"]
    zhang = results["goals"]["synchronous_against_monolingual"]
    assert [r["difference"] for r in zhang["by_pop_limit"]] == [
        pytest.approx(sweep["left"][p]["bleu"] - sweep["monolingual"][p]["bleu"]) for p in ("2", "20")]
    icr = results["goals"]["icr_against_left"]["at_equal_pop_limit"][1]
    assert icr["edge_ratio"] == pytest.approx(sweep["icr"]["20"]["edges_per_sentence"]
                                              / sweep["left"]["20"]["edges_per_sentence"])
    text = (tmp_path / "out" / "results.md").read_text()
    assert text in capsys.readouterr().out
    assert "- es-en: skipped, no Bible es-en build" in text
    assert f"- pop limit 20: ICR edges / left edges = {icr['edge_ratio']:.3f}" in text
    assert "- sync (left) - mono BLEU at each pop limit: 2: " in text
    pair_text = (tmp_path / "out" / "zh-en" / "results.md").read_text()
    assert "## 3a. Synchronous against monolingual binarization (Zhang et al. 2006, Figure 7)" in pair_text
    assert "| strategy | pop limit | BLEU | edges/sentence | kept/sentence | model score | sentences/s |" in pair_text


@pytest.mark.parametrize("arguments, message", [
    (["--pair", "zh-en", "--decode"], "go with --binarization"),
    (["--pair", "zh-en", "--quick"], "does not go with --quick"),
    (["--pair", "zh-en", "--data", "x"], "give one of them"),
    (["--small"], "--small goes with --train, or with --pair"),
    (["--data", "no-such-dir"], "--data no-such-dir: no such directory"),
])
def test_command_errors_in_one_line(outside, arguments, message):
    work, env = outside
    completed = run_installed(["-m", "decoder.cli", "bench", *arguments], work, env)
    assert completed.returncode != 0 and message in completed.stderr
    assert "Traceback" not in completed.stderr


def test_binarization_decode_reads_a_trained_build(tmp_path, fixture_files):
    """`cky bench --binarization --decode` on BUILD/rules.gz of a `cky train` build: its test set is
    BUILD/corpus/test.tok.{src,tgt} (whatever --pair says) and its common weights the build's config.toml's."""
    from decoder.benchmark import binarization

    build = trained_build(tmp_path / "build", fixture_files, weights={"lm": 0.7})
    system, reason = binarization.decode_system("zh-en", str(build / "rules.gz"), str(tmp_path / "work"), 3)
    assert reason is None and system.build == str(build)
    with open(fixture_files["test_es"], encoding="utf-8") as f:
        first = [line.rstrip("\n") for line in f][:3]
    assert experiment.read_lines(system.test_src) == first
    assert binarization.common_weights(str(build / "rules.gz"))[0] == {"lm": 0.7}
    os.remove(build / "corpus" / "test.tok.src")  # neither layout: the reason names what is missing
    system, reason = binarization.decode_system("zh-en", str(build / "rules.gz"), str(tmp_path / "work"), 3)
    assert system is None and reason == f"no {build / 'test.zh'}, {build / 'test.en'}"
