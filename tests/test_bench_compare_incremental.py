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
        assert len(run["sentence_seconds"]) == 8
        assert sum(run["sentence_seconds"]) / 8 == pytest.approx(run["cpu_seconds_per_sentence"], abs=2e-3)


def test_block_rows_restrict_each_row_to_a_block_of_sentences():
    rows = [{"search": "cube", "pop_limit": 10, "sentence_scores": [-1.0, -2.0, -4.0, -8.0],
             "sentence_seconds": [0.1, 0.3, 0.5, 0.7]},
            {"search": "incremental", "pop_limit": 10, "sentence_scores": [-1.5, -2.5, -3.0, -9.0],
             "sentence_seconds": [0.1, 0.1, 0.2, 0.4]}]
    first, second = compare_incremental.block_rows(rows, 0, 2), compare_incremental.block_rows(rows, 2, 4)
    assert [(r["search"], r["sentences"], r["model_score_per_sentence"], r["cpu_seconds_per_sentence"])
            for r in first + second] == [("cube", 2, -1.5, 0.2), ("incremental", 2, -2.0, 0.1),
                                         ("cube", 2, -6.0, 0.6), ("incremental", 2, -6.0, 0.3)]
    whole = compare_incremental.block_rows(rows, 0, 4)
    assert whole[1]["model_score_per_sentence"] == -4.0 and whole[1]["cpu_seconds_per_sentence"] == 0.2


def test_blocks_give_each_block_its_equal_score_table(tmp_path):
    write_toy_system(tmp_path, sentences=SENTENCES)
    out = tmp_path / "blocks.json"
    compare_incremental.main(["--config", str(tmp_path / "config.toml"), "--test", str(tmp_path / "test.es"),
                              "--sentences", "8", "--pop-limits", "1", "1000", "--blocks", "5", "--out", str(out)])
    written = json.loads(out.read_text())
    blocks = written["equal_score_blocks"]
    assert [(b["first"], b["last"]) for b in blocks] == [(1, 5), (6, 8)]
    cube_1000 = next(r for r in written["runs"] if r["search"] == "cube" and r["pop_limit"] == 1000)
    assert blocks[1]["equal_score"]["incremental"][1]["score"] == round(sum(cube_1000["sentence_scores"][5:]) / 3, 4)


def test_more_pop_limits_must_name_a_search_and_numbers(tmp_path):
    write_toy_system(tmp_path, sentences=SENTENCES)
    base = ["--config", str(tmp_path / "config.toml"), "--test", str(tmp_path / "test.es"), "--sentences", "1"]
    with pytest.raises(SystemExit, match="not in --searches: cube@x"):
        compare_incremental.main(base + ["--more-pop-limits", "cube@x=5"])
    with pytest.raises(SystemExit, match="whole numbers"):
        compare_incremental.main(base + ["--more-pop-limits", "cube=5,x"])
