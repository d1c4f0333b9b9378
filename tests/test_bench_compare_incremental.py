"""bench.compare_incremental: the turn order of the searches, the equal-score interpolation (and the fitted
ratio), and that taking turns (and warming up) decodes every sentence once per search with the scores of an
uninterrupted run."""
import json
import math
import os

import pytest

from bench import compare_incremental

from test_decoder import write_toy_system

SENTENCES = ["la casa es pequeña", "el perro es verde", "la casa verde", "un perro", "la casa pequeña es verde",
             "el perro verde es pequeña la casa es verde", "la casa", "el perro"]


def test_schedule_covers_each_sentence_once_per_search_and_alternates_the_first():
    order = compare_incremental.schedule(["cube", "incremental"], 25, 10)
    assert order == [("cube", 0, 10), ("incremental", 0, 10), ("incremental", 10, 20), ("cube", 10, 20),
                     ("cube", 20, 25), ("incremental", 20, 25)]
    for names in (["a"], ["a", "b", "c"]):
        for n, chunk in ((0, 3), (1, 3), (7, 3), (9, 3), (9, 0), (9, 100)):
            order = compare_incremental.schedule(names, n, chunk)
            for name in names:
                covered = [i for who, lo, hi in order if who == name for i in range(lo, hi)]
                assert covered == list(range(n))


def test_cpu_at_score_is_log_linear_between_pop_limits():
    rows = [{"pop_limit": 10, "model_score_per_sentence": -12.0, "cpu_seconds_per_sentence": 0.01},
            {"pop_limit": 100, "model_score_per_sentence": -10.0, "cpu_seconds_per_sentence": 0.04}]
    assert compare_incremental.cpu_at_score(rows, -11.0) == pytest.approx(math.sqrt(0.01 * 0.04))
    assert compare_incremental.cpu_at_score(rows, -13.0) == 0.01
    assert compare_incremental.cpu_at_score(rows, -9.0) is None


def test_pop_limit_at_score_and_the_power_law_fit_give_the_equal_score_ratio():
    # cube: c = 0.002 * pop^0.8; incremental: c = 0.0005 * pop^0.9 (exact, so the fit must return them).
    cube = [{"search": "cube", "pop_limit": p, "model_score_per_sentence": s, "cpu_seconds_per_sentence": 0.002 * p ** 0.8}
            for p, s in ((100, -10.0), (300, -9.0), (1000, -8.5))]
    inc = [{"search": "incremental", "pop_limit": p, "model_score_per_sentence": s,
            "cpu_seconds_per_sentence": 0.0005 * p ** 0.9} for p, s in ((100, -10.5), (200, -9.5), (400, -9.0))]
    fit = compare_incremental.fitted_cpu(inc)
    assert fit(150) == pytest.approx(0.0005 * 150 ** 0.9)
    assert compare_incremental.fitted_cpu(inc[:1]) is None
    # -10.0 lies halfway (in score) between pop limits 100 and 200: log-linear, sqrt(100 * 200).
    assert compare_incremental.pop_limit_at_score(inc, -10.0) == pytest.approx(math.sqrt(100 * 200))
    assert compare_incremental.pop_limit_at_score(inc, -11.0) == 100.0
    assert compare_incremental.pop_limit_at_score(inc, -8.0) is None
    table = compare_incremental.equal_score_table(cube + inc)
    pops = math.sqrt(100 * 200)
    assert table[0]["pop_limit_ratio"] == pytest.approx(pops / 100, abs=1e-3)
    assert table[0]["ratio_fitted"] == pytest.approx(0.0005 * pops ** 0.9 / (0.002 * 100 ** 0.8), abs=1e-3)
    assert table[1]["ratio_fitted"] == pytest.approx(0.0005 * 400 ** 0.9 / (0.002 * 300 ** 0.8), abs=1e-3)
    assert table[2]["ratio_fitted"] is None and table[2]["ratio"] is None and table[2]["pop_limit_ratio"] is None


@pytest.mark.parametrize("interleave, warmup, more", [(0, 0, []), (3, 2, ["--more-pop-limits", "incremental=2,1"])])
def test_turns_and_warmup_keep_every_sentence_and_its_score(tmp_path, interleave, warmup, more):
    write_toy_system(tmp_path, sentences=SENTENCES)
    out = tmp_path / f"runs-{interleave}.json"
    compare_incremental.main(["--config", str(tmp_path / "config.toml"), "--test", str(tmp_path / "test.es"),
                              "--sentences", "8", "--pop-limits", "1", "1000", "--interleave", str(interleave),
                              "--warmup", str(warmup), "--out", str(out)] + more)
    written = json.loads(out.read_text())
    assert written["machine"]["cpus"] == os.cpu_count() and "git_commit" in written["machine"]
    runs = written["runs"]
    extra = [("incremental", 2)] if more else []
    assert [(r["search"], r["pop_limit"]) for r in runs] == [("cube", 1), ("incremental", 1)] + extra + [
        ("cube", 1000), ("incremental", 1000)]
    from decoder.decoder import Decoder

    decoder = Decoder.from_config(tmp_path / "config.toml")
    for run in runs:
        decoder.reconfigure(search=run["search"], pop_limit=run["pop_limit"])
        expected = [round(decoder.translate(s).score, 4) for s in SENTENCES]
        assert run["sentence_scores"] == expected and run["sentences"] == 8


def test_more_pop_limits_must_name_a_search_and_numbers(tmp_path):
    write_toy_system(tmp_path, sentences=SENTENCES)
    base = ["--config", str(tmp_path / "config.toml"), "--test", str(tmp_path / "test.es"), "--sentences", "1"]
    with pytest.raises(SystemExit, match="not in --searches: cube@x"):
        compare_incremental.main(base + ["--more-pop-limits", "cube@x=5"])
    with pytest.raises(SystemExit, match="whole numbers"):
        compare_incremental.main(base + ["--more-pop-limits", "cube=5,x"])
