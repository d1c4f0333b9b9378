"""Fuzzing the readers of rule tables and trees (hypothesis): every input either reads or raises our
error (GrammarFormatError / InputError with file:line, TreeFormatError), never another exception;
the compiled readers agree with their pure-Python references."""
import gzip
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoder._ext._rule_table import rule_fields
from decoder.errors import GrammarFormatError, InputError, TreeFormatError
from decoder.extract.trees import parse_tree, parse_tree_reference
from decoder.grammar import Rule, format_rule, parse_rule, read_rules

# FUZZ_EXAMPLES=20000 python -m pytest tests/test_fuzz_readers.py for a longer hunt
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 400)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Pieces of the rule-table syntax, near misses of it, and characters that split or end lines.
RULE_PIECES = ["[X]", "[NP]", "[X][NP]", "[X][DT]", "[X][", "][", "[", "]", "[[X]]", "[X][NP][VP]", "|||", " ||| ",
               "||", "|", "0-0", "1-1", "0-1", "1-0", "2-0", "-", "0-", "-0", "٣-0", "0.5", "1", "0", "-1", "1e309",
               "inf", "nan", "-inf", "1_0", "0x1", "{{Tree", "{{Tree [NP]}}", "}}", "{{", "el", "the", "perro", "&#124;",
               " ", " ", "  ", "\t", "\u00a0", "\u2028", "\u0085", "\x00", "\r", "\x0b", "\x1c", "é", "\ud800"]
rule_lines = st.one_of(
    st.lists(st.sampled_from(RULE_PIECES), max_size=30).map("".join),
    st.text(max_size=80),
    # a well-formed rule with one piece changed
    st.tuples(st.integers(0, 6), st.sampled_from(RULE_PIECES)).map(
        lambda change: _mutate("el [X][NN] [X] ||| the [X][NN] [NP] ||| 0.5 0.4 ||| 0-0 1-1 ||| 4 5 2 ||| ||| "
                               "{{Tree [NP [DT the] [NN]]}}", *change)),
)


def _mutate(line: str, position: int, piece: str) -> str:
    tokens = line.split(" ")
    tokens[min(position * 3, len(tokens) - 1)] = piece
    return " ".join(tokens)


@FUZZ
@given(rule_lines)
def test_parse_rule_reads_or_raises_grammar_format_error(line):
    try:
        rule = parse_rule(line, "rules.txt", 7)
    except GrammarFormatError as error:
        assert str(error).startswith("rules.txt:7: ")
        return
    assert isinstance(rule, Rule)
    # what was read is a rule that writes and reads back as itself (compared as text: a count may be nan)
    assert format_rule(parse_rule(format_rule(rule), "again.txt", 1)) == format_rule(rule)


@FUZZ
@given(rule_lines)
def test_compiled_rule_reader_agrees_with_parse_rule(line):
    try:
        fields = rule_fields(line)
    except UnicodeEncodeError:  # pragma: no cover - a lone surrogate cannot come from a file read as UTF-8
        return
    if fields is None:  # the compiled reader leaves every line it does not read the usual way to parse_rule
        return
    assert Rule(*fields) == parse_rule(line, "rules.txt", 1)


def write_rule_file(tmp_path_factory, lines, gzipped: bool, truncated: bool):
    """A rule table of these lines (text or raw bytes), gzipped and then perhaps cut in half."""
    data = b"".join((line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")) + b"\n"
                    for line in lines)
    if gzipped:
        data = gzip.compress(data)
        if truncated:
            data = data[:len(data) // 2]
    path = tmp_path_factory.mktemp("fuzz") / "rules.gz"
    path.write_bytes(data)
    return path


@FUZZ
@given(st.lists(st.one_of(rule_lines, st.binary(max_size=40)), max_size=8), st.booleans(), st.booleans())
def test_read_rules_on_arbitrary_files(tmp_path_factory, lines, gzipped, truncated):
    path = write_rule_file(tmp_path_factory, lines, gzipped, truncated)
    try:
        rules = list(read_rules(path, uniform_scores=True))
    except (GrammarFormatError, InputError) as error:
        assert error.path == str(path) and error.line_number >= 1, error
        return
    assert all(isinstance(rule, Rule) for rule in rules)
    assert len({len(rule.scores) for rule in rules}) <= 1


TREE_PIECES = ["(", ")", "( ", " )", "(S", "(NP", "(DT the)", "(NN dog)", "the", "dog", " ", "\t", "\u00a0", "\u2028",
               "\x00", "\r", "[", "]", "|", "()", "( (", ") )", "é", "-LRB-", "(-LRB- ()", "(. .)"]
tree_texts = st.one_of(st.lists(st.sampled_from(TREE_PIECES), max_size=30).map("".join), st.text(max_size=60))


@FUZZ
@given(tree_texts)
def test_parse_tree_reads_or_raises_tree_format_error(text):
    try:
        tree = parse_tree(text)
    except TreeFormatError:
        with pytest.raises(TreeFormatError):
            parse_tree_reference(text)
        return
    reference = parse_tree_reference(text)
    assert (tree.label, tree.children, tree.is_word) == (reference.label, reference.children, reference.is_word)
    assert tree.words and all(tree.label[n] for n in range(len(tree)))
    again = parse_tree(tree.bracketed())
    assert (again.label, again.children, again.is_word) == (tree.label, tree.children, tree.is_word)


ALIGNMENT_PIECES = ["0-0", "1-1", "0-1", "2-0", "-", "0-", "-0", "1--1", "٣-0", "00-0", "99999999999999999999-0", " ",
                    "\t", "\u00a0", "\r", "x", "0-0-0"]


@FUZZ
@given(st.text(max_size=20), tree_texts,
       st.one_of(st.lists(st.sampled_from(ALIGNMENT_PIECES), max_size=8).map("".join), st.text(max_size=20)))
def test_corpus_line_reads_or_is_a_bad_line(source, tree, alignment):
    """A line of the training corpus becomes an alignment graph or BadLine naming file and line."""
    from decoder.extract.corpus import BadLine, CorpusPaths, PairLines, pair_graph

    paths = CorpusPaths("train.es", "train.trees", "train.align")
    try:
        pair_graph(PairLines(3, source, tree, alignment, None), paths)
    except BadLine as error:
        assert str(error).split(":")[1] == "3", error
