"""The Decoder API and `cky translate`, on a small hand-written grammar and a tiny ARPA LM,
including bad input: empty lines, sentences longer than the maximum span, unseen words and
characters, and a sentence whose decoding fails."""
import json
import logging
import math

import pytest

from decoder.binarize import binarize
from decoder.cli import build_parser
from decoder.decoder import Decoder
from decoder.translation import Translation
from decoder.grammar import Rule
from decoder.lm import LanguageModel
from decoder.store import write_store

from conftest import write_toy_arpa

FEATURES = ["p_e_given_f", "p_f_given_e"]


def rules():
    def r(lhs, source, target, labels, scores):
        return Rule(lhs, tuple(source), tuple(target), tuple(labels), tuple(scores))

    return [
        r("DT", ["la"], ["the"], [], [0.9, 0.8]),
        r("DT", ["el"], ["the"], [], [0.9, 0.8]),
        r("DT", ["un"], ["a"], [], [0.8, 0.8]),
        r("NN", ["casa"], ["house"], [], [0.9, 0.7]),
        r("NN", ["casa"], ["home"], [], [0.3, 0.4]),
        r("NN", ["perro"], ["dog"], [], [0.9, 0.7]),
        r("JJ", ["pequeña"], ["little"], [], [0.3, 0.6]),
        r("JJ", ["verde"], ["green"], [], [0.8, 0.6]),
        r("JJ", ["pequeña"], ["small"], [], [0.7, 0.6]),
        r("VBZ", ["es"], ["is"], [], [0.9, 0.9]),
        r("NP", [0, 1], [0, 1], ["DT", "NN"], [0.6, 0.5]),
        r("NP", [0, 1, 2], [0, 2, 1], ["DT", "NN", "JJ"], [0.5, 0.5]),
        r("VP", [0, 1], [0, 1], ["VBZ", "JJ"], [0.5, 0.5]),
        r("S", [0, 1], [0, 1], ["NP", "VP"], [0.7, 0.7]),
        r("S", [0, "es", 1], [0, "is", 1], ["NP", "JJ"], [0.4, 0.3]),
        r("PU", ["&#91;"], ["&#91;"], [], [0.9, 0.9]),  # "[" and "]" as rule tables write them
        r("PU", ["&#93;"], ["&#93;"], [], [0.9, 0.9]),
    ]


def write_toy_system(directory, search: str = "", sentences=()) -> None:
    """The toy system in `directory`: lm.arpa (the "decoder" toy LM), an icr store of rules(), config.toml
    (with `search`, lines of its [search] table, if given) and, if given, the sentences as test.es."""
    write_toy_arpa("decoder", directory, "lm.arpa")
    write_store(binarize(rules(), "icr"), directory / "store", feature_names=FEATURES)
    (directory / "config.toml").write_text(
        'store = "store"\nlm = "lm.arpa"\nlm_order = 2\n\n' + (f"[search]\n{search}\n" if search else "")
        + '[weights]\nlm = 1.0\nword_count = 0.3\np_e_given_f = 0.5\n')
    if sentences:
        (directory / "test.es").write_text("".join(line + "\n" for line in sentences), encoding="utf-8")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("model")
    write_toy_system(directory, "pop_limit = 50\nmax_span = 10\n")
    return directory


@pytest.fixture(scope="module")
def decoder(model):
    return Decoder.from_config(model / "config.toml")


def check_scores(decoder, translation):
    lm = LanguageModel(decoder.lm.path)
    assert translation.features["lm"] == pytest.approx(lm.score_sentence(translation.text), abs=1e-4)
    assert decoder.weights.dot(translation.features) == pytest.approx(translation.score, abs=1e-4)


def test_translate(decoder):
    t = decoder.translate("la casa verde es pequeña")
    assert isinstance(t, Translation)
    assert t.text == "the green house is small"
    assert t.tree.startswith("[GOAL [S ")
    assert t.derivation["symbol"] == "GOAL"
    for key in ("edges_proposed", "edges_kept", "lm_queries", "lm_queries_novel", "seconds", "items_per_cell"):
        assert key in t.stats
    assert decoder.settings["pop_limit"] == 50 and decoder.weights["p_e_given_f"] == 0.5
    assert decoder.weights["p_f_given_e"] == 0.2  # documented default
    check_scores(decoder, t)


def test_keyword_construction_and_exhaustive_agree(model):
    exhaustive = Decoder(model / "store", model / "lm.arpa", exhaustive=True)
    cube = Decoder(model / "store", model / "lm.arpa", pop_limit=0)
    for sentence in ("la casa verde es pequeña", "un perro es verde", "el perro"):
        a, b = exhaustive.translate(sentence), cube.translate(sentence)
        assert a.score == pytest.approx(b.score, abs=1e-6)
        check_scores(exhaustive, a)


def test_kbest(decoder):
    kbest = decoder.kbest("la casa verde es pequeña", 5)
    assert len(kbest) == 5
    assert len({t.text for t in kbest}) == 5
    assert [t.score for t in kbest] == sorted((t.score for t in kbest), reverse=True)
    assert kbest[0].text == decoder.translate("la casa verde es pequeña").text
    for t in kbest:
        check_scores(decoder, t)


def test_empty_line(decoder):
    t = decoder.translate("")
    assert t.text == "" and t.tree == ""
    assert math.isfinite(t.score)
    assert decoder.translate("   ").text == ""


def test_longer_than_max_span_still_translates(model):
    short_span = Decoder.from_config(model / "config.toml", max_span=2)
    sentence = "la casa verde es pequeña la casa es verde el perro es pequeña"
    t = short_span.translate(sentence)
    assert len(t.text.split()) >= len(sentence.split())
    assert t.features["glue"] > 0
    check_scores(short_span, t)


def test_glue_file_without_the_unknown_word_label_still_covers_every_sentence(model, tmp_path):
    # cky extract's glue file has rules for the grammar's LHS labels only; an unknown word's
    # pass-through item has label X, which it lacks. The decoder adds X's glue rules (value 1, a
    # label that was never a root), so "ñandú" is still glued in.
    from decoder.extract.glue import write_glue

    glue = tmp_path / "glue.txt"
    write_glue(str(glue), ["DT", "NN", "JJ", "VBZ", "NP", "VP", "S"], ["S"])
    with_file = Decoder(model / "store", model / "lm.arpa", glue=str(glue))
    assert with_file.glue_labels_added == ["X"]
    t = with_file.translate("la casa ñandú es pequeña")
    assert "ñandú" in t.text.split() and t.features["oov"] == 1
    # No rule spans the unknown word, so the output is glued from at least two pieces, and the
    # glue feature counts the file's values (natural logs of its scores: 1 per concatenation).
    assert t.features["glue"] >= 2
    check_scores(with_file, t)
    builtin = Decoder(model / "store", model / "lm.arpa")
    assert builtin.glue_labels_added == []


def test_rule_table_escapes_match_plain_input_and_give_plain_output(decoder):
    # cky extract writes "[", "]" and "|" as &#91; &#93; &#124; (Moses' escaping), as the PU rules
    # here are. The decoder escapes its input to match the rules, looks words up in the LM
    # (trained on plain text) unescaped, and writes plain text; the tree keeps the escaped words.
    t = decoder.translate("la [ casa ] |")
    assert t.text == "the [ house ] |"
    assert t.features["oov"] == 1  # only "|": "[" and "]" matched their rules
    assert "&#91;" in t.tree and "&#124;" in t.tree and " [ " not in t.tree
    check_scores(decoder, t)  # the LM feature is the LM's score of the plain text
    assert t.features["lm"] > LanguageModel(decoder.lm.path).score_sentence("the &#91; house &#93; |")


def test_unseen_words_and_characters_pass_through(decoder):
    t = decoder.translate("la casa ñandú es ☃ pequeña x\u200by")
    for word in ("ñandú", "☃", "x\u200by"):
        assert word in t.text.split()
    assert t.features["oov"] == 3
    check_scores(decoder, t)


def run_cli(argv, monkeypatch, capsys, stdin_text, exit_code=0):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin_text))
    args = build_parser("translate").parse_args(["translate"] + argv)
    from decoder.cli import translate as translate_cli

    assert translate_cli.main(args) == exit_code  # 1 when some lines failed
    return capsys.readouterr().out


def test_cli_one_line_per_input_line_and_failures_isolated(model, tmp_path, monkeypatch, capsys, caplog):
    original = Decoder.kbest

    def failing_kbest(self, sentence, k, unique=True):
        if "perro" in sentence:
            raise RuntimeError("forced failure")
        return original(self, sentence, k, unique)

    monkeypatch.setattr(Decoder, "kbest", failing_kbest)
    lines = ["la casa verde es pequeña", "", "un perro es verde", "el ☃ casa", "la casa es pequeña " * 6]
    stats, kbest, trees = tmp_path / "stats.jsonl", tmp_path / "nbest.txt", tmp_path / "trees.txt"
    with caplog.at_level(logging.ERROR):
        out = run_cli(["--config", str(model / "config.toml"), "--kbest", "3", "--kbest-out", str(kbest),
                       "--trees-out", str(trees), "--stats-out", str(stats), "--quiet"],
                      monkeypatch, capsys, "\n".join(lines) + "\n", exit_code=1)
    output = out.split("\n")[:-1]
    assert len(output) == len(lines)
    assert output[0] == "the green house is small"
    assert output[1] == ""
    assert output[2] == "un perro es verde"  # failed: source words passed through
    assert "☃" in output[3].split()
    assert len(output[4].split()) >= 24
    assert any("line 3" in record.getMessage() for record in caplog.records)
    records = [json.loads(line) for line in stats.read_text().splitlines()]
    assert len(records) == len(lines)
    for key in ("score", "features", "edges_proposed", "edges_kept", "lm_queries", "lm_queries_novel", "seconds"):
        assert key in records[0]
    assert records[2]["error"].endswith("forced failure") and records[2]["line"] == 3
    assert records[0]["features"]["lm"] == pytest.approx(
        LanguageModel(str(model / "lm.arpa")).score_sentence(output[0]), abs=1e-4)
    assert len(trees.read_text().split("\n")[:-1]) == len(lines)
    nbest = kbest.read_text().splitlines()
    assert nbest[0].startswith("0 ||| the green house is small ||| ")
    assert {line.split(" ||| ")[0] for line in nbest} >= {"0", "2", "3", "4"}


def test_cli_without_config(model, monkeypatch, capsys):
    out = run_cli(["--store", str(model / "store"), "--lm", str(model / "lm.arpa"), "--exhaustive", "--quiet"],
                  monkeypatch, capsys, "el perro es pequeña\nla casa\n")
    assert out.split("\n")[:-1] == ["the dog is small", "the house"]


def test_a_sentence_of_1000_words_translates_and_kbests(decoder):
    """Read-back and k-best walk a derivation with explicit stacks, not recursion: the glue chain
    over 996 unknown words is 1,000 levels deep (recursion failed from 248 unknown words)."""
    words = ["la", "casa", "es", "pequeña"] + [f"w{i}" for i in range(996)]
    best = decoder.translate(words)
    assert best.text.split()[4:] == words[4:]  # every unknown word passed through, in order
    assert best.features["oov"] == 996
    for unique in (True, False):
        kbest = decoder.kbest(words, 3, unique=unique)
        assert len(kbest) == 3
        assert kbest[0].text == best.text
        assert kbest[0].score == pytest.approx(best.score)
        assert [t.score for t in kbest] == sorted((t.score for t in kbest), reverse=True)
        for t in kbest:
            assert t.features["oov"] == 996
            assert decoder.weights.dot(t.features) == pytest.approx(t.score)
    assert len({t.text for t in decoder.kbest(words, 3)}) == 3


@pytest.mark.parametrize("search", ["incremental", "two-pass"])
def test_a_sentence_of_1000_words_with_the_other_searches(model, search):
    """The other search drivers read derivations back without recursion too."""
    decoder = Decoder.from_config(model / "config.toml", search=search)
    words = ["la", "casa", "es", "pequeña"] + [f"w{i}" for i in range(996)]
    best = decoder.translate(words)
    assert best.text.split()[4:] == words[4:] and best.features["oov"] == 996
    assert decoder.weights.dot(best.features) == pytest.approx(best.score, abs=1e-3)
