"""The Moses rule-table format: reading, writing, and errors naming file and line."""
import gzip

import pytest

from decoder.grammar import GrammarFormatError, Rule, format_rule, parse_rule, read_rules, write_rules
from decoder.synthetic import random_grammar

MOSES_LINE = ("el [X][NN] de [X][NP] [X] ||| the [X][NP] of [X][NN] [NP] ||| 0.5 0.25 ||| 0-0 1-3 2-2 3-1 "
              "||| 4 5 2 ||| ||| {{Tree [NP [DT the] [NP] [IN of] [NN]]}}")


def test_parse_moses_syntax_rule():
    rule = parse_rule(MOSES_LINE)
    assert rule.lhs == "NP"
    assert rule.source == ("el", 0, "de", 1)
    assert rule.target == ("the", 1, "of", 0)
    assert rule.labels == ("NN", "NP")
    assert rule.permutation == (1, 0)
    assert rule.scores == (0.5, 0.25)
    assert rule.alignment == ((0, 0), (2, 2))  # terminal links only; nonterminal links are the slot map
    assert rule.counts == (4, 5, 2)
    assert rule.tree == "[NP [DT the] [NP] [IN of] [NN]]"


def test_format_then_parse_is_identity_on_a_handwritten_rule():
    rule = parse_rule(MOSES_LINE)
    assert parse_rule(format_rule(rule)) == rule
    assert format_rule(rule).startswith("el [X][NN] de [X][NP] [X] ||| the [X][NP] of [X][NN] [NP] ||| 0.5 0.25")


def test_missing_nonterminal_links_are_inferred_from_distinct_labels():
    rule = parse_rule("[X][NN] [X][JJ] [X] ||| [X][JJ] [X][NN] [NP] ||| 1")
    assert rule.target == (1, 0)


@pytest.mark.parametrize("suffix", [".txt", ".gz"])
def test_write_read_round_trip(tmp_path, suffix):
    rules = random_grammar(500, seed=3)
    path = tmp_path / ("rules" + suffix)
    assert write_rules(rules, path) == 500
    assert list(read_rules(path)) == rules
    if suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            assert "|||" in f.readline()


@pytest.mark.parametrize("line, message", [
    ("la casa [X] ||| the house [NP]", "at least 3 fields"),
    ("la casa ||| the house [NP] ||| 1", "source side must end with its LHS"),
    ("la casa [X] ||| the house ||| 1", "target side must end with its LHS"),
    ("la casa [X] ||| the house [NP] ||| one", "scores must be numbers"),
    ("la [X][NN] [X] ||| the [NP] ||| 1", "nonterminals on the source side"),
    ("la [X][NN] [X] ||| the [X][NN] [NP] ||| 1 ||| 0-9", "outside the rule"),
    ("la [X][NN] [X] ||| the [X][NN] [NP] ||| 1 ||| 1-0", "nonterminal to a terminal"),
    ("[X][NN] [X][NN] [X] ||| [X][NN] [X][NN] [NP] ||| 1", "ambiguous"),
    ("[X][NN] [X] ||| [X][JJ] [NP] ||| 1 ||| 0-0", "disagree on their label"),
    ("la [X] ||| the [NP] ||| 1 ||| 0_0", "not of the form i-j"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.txt"
    path.write_text("la casa [X] ||| the house [NP] ||| 1\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(GrammarFormatError, match=message) as error:
        list(read_rules(path))
    assert str(error.value).startswith(f"{path}:3: ")


def test_rule_validates_its_slots():
    with pytest.raises(ValueError):
        Rule("NP", (0, 1), (0,), ("A", "B"))
