"""`search = "two-pass"` through the Decoder API, configs and `cky translate`, on test_decoder's
hand-written grammar: unbounded, the two-pass 1-best has the exhaustive cube search's score (both
are the exact optimum); bounded, it may differ from cube pruning only by scoring no better than
that optimum; either way its score is the weights times its features, and its LM feature KenLM's
score of the output."""
import json
import math

import pytest

from decoder.config import load_config
from decoder.decoder import Decoder
from decoder.errors import ConfigError
from decoder.search.driver import ChartSearchDriver
from decoder.search.two_pass import TwoPassSearchDriver

from test_decoder import check_scores, model, run_cli  # noqa: F401 (model: the module's fixture)

SENTENCES = ["la casa verde es pequeña", "el perro es pequeña", "un perro verde", "la casa es pequeña",
             "el perro verde es pequeña", "la casa pequeña es verde"]
UNBOUNDED_SECOND_PASS = "two_pass_beam = inf\nagenda_limit = 0\nmax_pops = -1\n"


def write_config(model, name, search_lines):
    """test_decoder's config.toml with these lines in its [search] table."""
    text = (model / "config.toml").read_text().replace("[search]\n", "[search]\n" + search_lines)
    path = model / name
    path.write_text(text)
    return path


def test_two_pass_config_decodes_and_unbounded_equals_the_exhaustive_optimum(model):
    path = write_config(model, "two-pass-unbounded.toml",
                        'search = "two-pass"\nexhaustive = true\n' + UNBOUNDED_SECOND_PASS)
    assert load_config(path).settings.two_pass_beam == math.inf
    two_pass = Decoder.from_config(path)
    assert isinstance(two_pass.chart, TwoPassSearchDriver) and two_pass.settings["search"] == "two-pass"
    exhaustive_cube = Decoder.from_config(model / "config.toml", exhaustive=True)
    assert isinstance(exhaustive_cube.chart, ChartSearchDriver)
    assert not isinstance(exhaustive_cube.chart, TwoPassSearchDriver)
    for sentence in SENTENCES:
        found, optimum = two_pass.translate(sentence), exhaustive_cube.translate(sentence)
        assert found.score == pytest.approx(optimum.score, abs=1e-4), sentence
        check_scores(two_pass, found)
        assert found.stats["agenda_pops"] >= 1 and found.stats["unwindings"] >= found.stats["agenda_pops"]
        for key in ("edges_proposed", "edges_kept", "lm_queries", "lm_queries_novel", "items_per_cell",
                    "seconds", "cpu_seconds"):
            assert key in found.stats, key
    assert two_pass.translate("la casa verde es pequeña").text == "the green house is small"


def test_bounded_two_pass_differs_from_cube_only_by_scoring_no_better_than_the_optimum(tmp_path):
    """Random grammars (search_fixtures) through Decoder(..., search=...): tightly bounded, two-pass
    and cube pruning reach different scores on some sentences, never above the exhaustive optimum."""
    from decoder.lm import LanguageModel

    from search_fixtures import random_sentence, write_arpa, write_random_store

    lm = LanguageModel(write_arpa(tmp_path))
    weights = {"p1": 0.7, "p2": 0.3, "lm": 1.0, "word_count": 0.4, "oov": -3.0, "glue": -0.6}
    below_optimum = {"two-pass": 0, "cube": 0}
    for seed in range(12):
        _, store = write_random_store(tmp_path, seed, "icr", ["p1", "p2"], n_rules=16, max_arity=3)
        words = random_sentence(seed, 6)
        optimum = Decoder(store, lm, weights, exhaustive=True, max_unary_depth=2).translate(words).score
        for search, bounds in (("two-pass", dict(two_pass_beam=0.5, agenda_limit=2, max_pops=2)), ("cube", {})):
            decoder = Decoder(store, lm, weights, search=search, pop_limit=1, beam_size=1, max_unary_depth=2,
                              **bounds)
            found = decoder.translate(words)
            assert found.score <= optimum + 1e-4
            below_optimum[search] += found.score < optimum - 1e-4
            check_scores(decoder, found)
    assert below_optimum["two-pass"] > 0 and below_optimum["cube"] > 0  # the bounds do prune here


def test_two_pass_kbest_is_sorted_and_scored(model):
    decoder = Decoder.from_config(write_config(model, "two-pass-kbest.toml",
                                               'search = "two-pass"\nkbest_per_class = 3\n'))
    found = decoder.kbest("la casa verde es pequeña", 4)
    assert len(found) >= 2 and len({t.text for t in found}) == len(found)
    assert [t.score for t in found] == sorted((t.score for t in found), reverse=True)
    for translation in found:
        check_scores(decoder, translation)


def test_reconfigure_switches_the_search_algorithm(model):
    decoder = Decoder.from_config(model / "config.toml", exhaustive=True)
    cube_score = decoder.translate(SENTENCES[0]).score
    decoder.reconfigure(search="two-pass", two_pass_beam=math.inf, agenda_limit=0, max_pops=-1)
    assert isinstance(decoder.chart, TwoPassSearchDriver) and decoder.settings["search"] == "two-pass"
    assert decoder.chart.engine.agenda_limit == 0 and decoder.chart.engine.max_pops == -1
    assert decoder.translate(SENTENCES[0]).score == pytest.approx(cube_score, abs=1e-4)
    decoder.reconfigure(search="cube")
    assert not isinstance(decoder.chart, TwoPassSearchDriver)


def test_cky_translate_search_flag(model, tmp_path, monkeypatch, capsys):
    stats = tmp_path / "stats.jsonl"
    config = write_config(model, "two-pass-cli.toml", "exhaustive = true\n" + UNBOUNDED_SECOND_PASS)
    out = run_cli(["--config", str(config), "--search", "two-pass", "--stats-out", str(stats), "--quiet"],
                  monkeypatch, capsys, "\n".join(SENTENCES) + "\n")
    expected = Decoder.from_config(config, search="two-pass")
    assert out.split("\n")[:-1] == [expected.translate(s).text for s in SENTENCES]
    records = [json.loads(line) for line in stats.read_text().splitlines()]
    assert len(records) == len(SENTENCES) and all(r["agenda_pops"] >= 1 for r in records)
    cube_out = run_cli(["--config", str(config), "--search", "cube", "--stats-out", str(stats), "--quiet"],
                       monkeypatch, capsys, "\n".join(SENTENCES) + "\n")
    assert cube_out == out  # both exact here
    assert "agenda_pops" not in json.loads(stats.read_text().splitlines()[0])


@pytest.mark.parametrize("line, key", [('search = "beam"\n', "search"), ("two_pass_beam = -1.0\n", "two_pass_beam"),
                                       ("agenda_limit = -1\n", "agenda_limit"), ("max_pops = -2\n", "max_pops"),
                                       ("edge_limit = 1.5\n", "edge_limit"), ("kbest_per_class = 0\n",
                                                                              "kbest_per_class")])
def test_two_pass_config_mistakes_name_the_key(model, line, key):
    path = write_config(model, "bad-two-pass.toml", line)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: ") and f"`{key}" in str(caught.value)
