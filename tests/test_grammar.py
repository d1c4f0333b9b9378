"""The Moses rule-table format: reading, writing, and errors naming file and line."""
import gzip

import pytest

from decoder.grammar import GrammarFormatError, Rule, format_rule, parse_rule, read_rules, write_rules
from decoder.synthetic import random_grammar

MOSES_LINE = ("el [X][NN] de [X][NP] [X] ||| the [X][NP] of [X][NN] [NP] ||| 0.5 0.25 ||| 0-0 1-3 2-2 3-1 "
              "||| 4 5 2 ||| ||| {{Tree [NP [DT the] [NP] [IN of] [NN]]}}")


# Malformed rule-table lines and the message each gives (test_rule_arrays reads them too).
MALFORMED = [
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
    ("la [X] ||| the [NP] ||| 1 ||| ²-0", "not of the form i-j"),
    ("la [X] ||| the [NP] ||| nan", "not finite"),
    ("[X][A] [X][A] [X] ||| [X][A] [X][A] [NP] ||| 1 ||| 0-0 0-1", "every source slot exactly once"),
]


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


@pytest.mark.parametrize("line, message", MALFORMED)
def test_malformed_lines_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.txt"
    path.write_text("la casa [X] ||| the house [NP] ||| 1\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(GrammarFormatError, match=message) as error:
        list(read_rules(path))
    assert str(error.value).startswith(f"{path}:3: ")


def test_rule_validates_its_slots():
    with pytest.raises(ValueError):
        Rule("NP", (0, 1), (0,), ("A", "B"))


# Lines the compiled reader (decoder._ext._rule_table) reads itself, and lines it leaves to
# parse_rule: both must give what parse_rule gives.
UNUSUAL_LINES = [
    MOSES_LINE,
    "[X][NN] [X][JJ] [X] ||| [X][JJ] [X][NN] [NP] ||| 1",  # links by label
    "a [X] ||| b [NP] ||| 1 ||| 0-0 ||| 1 inf 2",  # a count that is not finite
    "a [X] ||| b [NP] ||| 1e-3 2.5E+2 7 ||| 0-0",
    "a b c [X] ||| x y [NP] ||| 1 ||| 2-1 0-0 1-0 ||| ||| ||| {{Tree [NP [A x] [B y]]}} other=1",
    "a [X] ||| b [NP] ||| 1 ||| ||| ||| ||| {{Treeless}} {{Tree\t[NP b]}}",  # first {{Tree without a space
    "a [X] ||| b [NP] ||| 1 ||| ||| ||| ||| {{Tree [NP b]",  # no closing braces
    "a [X] ||| b [NP] ||| 1 ||| ||| ||| ||| {{Tree }}",
    "a [X] ||| b [NP] ||| 1 ||| ||| ||| ||| k=v {{Tree  [NP b] }} {{Tree [NP c]}}",
    "[x a [X] ||| b] [NP] ||| 1",  # words that start or end with a bracket
    "[X][A][B] [X] ||| [X][A][B] [NP] ||| 1",  # not a nonterminal: a word
    "ĉu [X][NN] ☃ [X] ||| ñ [X][NN] [NP] ||| 0.5 ||| 1-1 0-0 2-0",
    "a [X] ||| b [NP] |||  ||| 0-0",  # no scores
    "a [X] ||| b [NP] ||| 1 ||| 0-0 0-0",  # a repeated link
]


def test_compiled_reader_reads_as_parse_rule(tmp_path):
    import gc

    rules = random_grammar(2000, seed=11)
    path = tmp_path / "rules.txt"
    write_rules(rules, path)
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(UNUSUAL_LINES) + "\n")
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    expected = [parse_rule(line, str(path), i) for i, line in enumerate(lines, start=1)]
    read = list(read_rules(path))
    assert read == expected
    assert [repr(r) for r in read] == [repr(r) for r in expected]  # 1 stays int, "1" str, 1.0 float
    assert read[:2000] == rules
    # The compiled reader keeps its rules off the cyclic collector's lists.
    assert not any(gc.is_tracked(r) for r in read[:2000])


def test_compiled_reader_falls_back_to_parse_rule_for_unusual_lines():
    from decoder._ext._rule_table import rule_fields

    assert rule_fields(MOSES_LINE) is not None
    assert rule_fields("[X][NN] [X][JJ] [X] ||| [X][JJ] [X][NN] [NP] ||| 1") is None  # links by label
    assert rule_fields("a [X] ||| b [NP] ||| 1 ||| 0-0 ||| 1 inf 2") is None  # parse_rule takes any count
    assert rule_fields("[x a [X] ||| b] [NP] ||| 1") is None  # "[x" is a word to parse_rule
    assert rule_fields("la casa [X] ||| the house [NP] ||| one") is None
