"""The compiled reader of rule tables into integer arrays (decoder.rule_arrays.read_rule_arrays,
what `cky compile` reads) against the reference reader decoder.grammar.read_rules(uniform_scores=True):
the same rules row for row, the same errors (type, file, line, message)."""
import gzip
import math
import random
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from decoder.errors import GrammarFormatError, InputError
from decoder.grammar import read_rules, write_rules
from decoder.rule_arrays import read_rule_arrays
from decoder.synthetic import random_grammar
from tests.test_fuzz_readers import FUZZ, rule_lines, write_rule_file
from tests.test_grammar import MALFORMED as GRAMMAR_MALFORMED, MOSES_LINE

MALFORMED = GRAMMAR_MALFORMED + [("la [X] ||| the [NP] ||| 1e400", "not finite")]


def _fields(rule):
    """What a table row keeps of a Rule (not its counts and other properties)."""
    return (rule.lhs, rule.source, rule.target, rule.labels, rule.scores, rule.alignment, rule.tree or None)


def _same_rules(path):
    """Both readers on one file: the same rules in the same order (scores bit for bit)."""
    reference = list(read_rules(path, uniform_scores=True))
    table = read_rule_arrays(path)
    assert len(table) == len(reference)
    assert [_fields(table.rule(i)) for i in range(len(table))] == [_fields(r) for r in reference]
    bits = [struct.pack("<d", s) for r in reference for s in r.scores]  # -0.0 is not 0.0 here
    assert [struct.pack("<d", s) for s in table.scores.ravel().tolist()] == bits
    return table, reference


def _same_error(path):
    """Both readers on one file raise the same error (type, file, line, message)."""
    with pytest.raises((GrammarFormatError, InputError)) as expected:
        list(read_rules(path, uniform_scores=True))
    with pytest.raises(type(expected.value)) as got:
        read_rule_arrays(path)
    assert str(got.value) == str(expected.value)
    return got.value


@pytest.mark.parametrize("suffix", [".txt", ".gz"])
def test_random_tables_read_alike(tmp_path, suffix):
    rules = random_grammar(2000, seed=7, n_features=5)
    path = tmp_path / ("rules" + suffix)
    write_rules(rules, path)
    table, _ = _same_rules(path)
    assert table.n_scores == 5
    assert table.line_numbers.tolist() == list(range(1, 2001))


def test_rows_spell_the_rule(tmp_path):
    path = tmp_path / "rules.txt"
    path.write_text(MOSES_LINE + "\n", encoding="utf-8")
    table = read_rule_arrays(path)
    words, labels = table.words, table.labels
    assert labels[table.lhs[0]] == "NP"
    # el [X][NN] de [X][NP] ||| the [X][NP] of [X][NN], linked 1-3 and 3-1
    assert [words[x] if x >= 0 else -1 - x for x in table.source.tolist()] == ["el", 0, "de", 1]
    assert [words[x] if x >= 0 else -1 - x for x in table.target.tolist()] == ["the", 1, "of", 0]
    assert [labels[x] for x in table.rule_labels] == ["NN", "NP"]
    assert table.scores.tolist() == [[0.5, 0.25]]
    assert table.alignment.tolist() == [[0, 0], [2, 2]]
    assert table.trees == b"[NP [DT the] [NP] [IN of] [NN]]"


# Lines the compiled reader leaves to decoder.grammar (read there, or rejected there), among usual ones.
UNUSUAL_LINES = [
    "[X][NN] [X][JJ] [X] ||| [X][JJ] [X][NN] [NP] ||| 1 2",  # links by label
    "a [X] ||| b [NP] ||| 1 2 ||| 0-0 ||| 1 inf 2",  # parse_rule reads any count
    "[x a [X] ||| b] [NP] ||| 1 2",  # "[x" and "b]" are words to parse_rule
    "a\u00a0b [X] ||| c [NP] ||| 1 2",  # a no-break space splits words in str.split()
    "a [X] ||| b [NP] ||| 1_0 2",  # float() reads 1_0
    "a [X] ||| b [NP] ||| 1 2 ||| ||| ||| ||| {{Tree [NP b]}} ||| x",  # properties with ||| in them
    "a [X] ||| b [NP] ||| ١ 2",  # float() reads an Arabic-Indic digit
    "  \u2028  ",  # blank to str.strip()
    "a [X] ||| b [NP] ||| 1 2 ||| ||| ||| ||| {{Treex}}",  # no whitespace after {{Tree: no tree
    "a [X] ||| b [NP] ||| 1 2 ||| ||| ||| ||| {{Tree [NP b]",  # no closing }}
    "\ufeffa [X] ||| b [NP] ||| 1 2",  # a byte-order mark is part of the word
    "a\x1cb [X] ||| c [NP] ||| 1 2",  # a file separator is whitespace to str.split()
]


def test_unusual_lines_read_as_read_rules_reads_them(tmp_path):
    usual = [MOSES_LINE.replace("0.5 0.25", "0.125 3"), "la casa [X] ||| the house [NP] ||| 0.5 -0 ||| 0-0 1-1"]
    lines = [line for unusual in UNUSUAL_LINES for line in (unusual, *usual)]
    for suffix, ending in ((".txt", "\n"), (".gz", "\r\n"), ("-cr.txt", "\r")):
        path = tmp_path / ("rules" + suffix)
        data = ("".join(line + ending for line in lines) + "\n\t \n").encode("utf-8")
        path.write_bytes(gzip.compress(data) if suffix == ".gz" else data)
        table, reference = _same_rules(path)
        assert len(table) == len(lines) - 1  # the blank one
        assert table.line_numbers[-1] == len(lines)


def test_a_line_cut_between_blocks(tmp_path, monkeypatch):
    # lines (and a "\r\n") cut anywhere by the blocks the file is read in
    import decoder.rule_arrays

    rules = random_grammar(60, seed=2)
    path = tmp_path / "rules.txt"
    write_rules(rules, path)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    for block_size in (1, 7, 64, 1000):
        monkeypatch.setattr(decoder.rule_arrays, "BLOCK_SIZE", block_size)
        _same_rules(path)


@pytest.mark.parametrize("line, message", MALFORMED)
def test_malformed_lines_raise_what_read_rules_raises(tmp_path, line, message):
    path = tmp_path / "bad.txt"
    path.write_text(MOSES_LINE + "\n\n" + line + "\n" + MOSES_LINE + "\n", encoding="utf-8")
    error = _same_error(path)
    assert isinstance(error, GrammarFormatError) and message in str(error)
    assert str(error).startswith(f"{path}:3: ")


@pytest.mark.parametrize("fast", [True, False])
def test_another_number_of_scores(tmp_path, fast):
    # the odd rule read by the compiled reader or by parse_rule (links by label)
    odd = "la [X] ||| the [NP] ||| 0.5" if fast else "[X][NN] [X][JJ] [X] ||| [X][JJ] [X][NN] [NP] ||| 1"
    path = tmp_path / "rules.txt"
    path.write_text("\n" + MOSES_LINE + "\n" + MOSES_LINE + "\n" + odd + "\n", encoding="utf-8")
    error = _same_error(path)
    assert f"{path}:4: 1 scores, but the rule on line 2 has 2" in str(error)


def test_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "rules.txt"
    path.write_bytes((MOSES_LINE + "\n").encode() * 3 + b"el \xe9 [X] ||| the [NP] ||| 1 2\n")
    error = _same_error(path)
    assert isinstance(error, InputError) and error.line_number == 4 and "not UTF-8" in str(error)


def test_truncated_gzip(tmp_path):
    path = tmp_path / "rules.gz"
    data = gzip.compress("".join(f"w{i} [X] ||| v{i} [NP] ||| 0.{i}\n" for i in range(20000)).encode())
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(InputError, match="truncated or corrupt gzip") as error:
        read_rule_arrays(path)
    assert error.value.path == str(path)


NUMBERS = ["0", "1", "-0", "+0.5", "0.781977", "2.71828", "1597", "007", "1.", ".5", "-.5", "0.000123",
           "123456789012345", "1234567890123456", "12345678901234567890", "0.1234567890123456789",
           "1e-5", "1E5", "2.5e+3", "1e-320", "4.9e-324", "1.7976931348623157e308", "9007199254740993",
           "0.30000000000000004", "3.141592653589793", "100000000000000000000000", "1" + "0" * 30 + ".5",
           "0." + "0" * 25 + "1"]


@given(st.one_of(st.sampled_from(NUMBERS),
                 st.floats(allow_nan=False, allow_infinity=False).map(repr),
                 st.tuples(st.integers(0, 10**18), st.integers(0, 25)).map(
                     lambda m: f"{m[0] // 10**m[1]}.{m[0] % 10**m[1]:0{m[1]}d}" if m[1] else str(m[0])),
                 st.decimals(allow_nan=False, allow_infinity=False, places=12).map(str),
                 st.integers(-10**20, 10**20).map(str)))
@FUZZ
def test_numbers_read_as_float_reads_them(tmp_path_factory, number):
    path = tmp_path_factory.mktemp("numbers") / "rules.txt"
    path.write_text(f"a [X] ||| b [NP] ||| {number} 1 ||| 0-0 ||| {number}\n", encoding="utf-8")
    try:
        expected = float(number)
    except ValueError:
        expected = None
    if expected is None or not math.isfinite(expected):
        _same_error(path)
        return
    table = read_rule_arrays(path)
    assert struct.pack("<d", table.scores[0, 0]) == struct.pack("<d", expected)


@FUZZ
@given(st.lists(st.one_of(rule_lines, st.binary(max_size=40)), max_size=8), st.booleans(), st.booleans())
def test_arbitrary_files_read_alike(tmp_path_factory, lines, gzipped, truncated):
    path = write_rule_file(tmp_path_factory, lines, gzipped, truncated)
    try:
        reference = list(read_rules(path, uniform_scores=True))
    except (GrammarFormatError, InputError) as error:
        # Both raise, naming the file and a line. (Which error comes first may differ: the
        # reference decodes a block of text before it parses its lines, so bad bytes in a later
        # line of the block win over a malformed earlier one; and the blocks differ.)
        with pytest.raises((GrammarFormatError, InputError)) as got:
            read_rule_arrays(path)
        assert got.value.path == str(path) and got.value.line_number >= 1
        if type(got.value) is type(error) is GrammarFormatError:
            assert str(got.value) == str(error)
        return
    table = read_rule_arrays(path)
    assert [_fields(table.rule(i)) for i in range(len(table))] == [_fields(r) for r in reference]


def test_subset_keeps_the_rows(tmp_path):
    rules = random_grammar(300, seed=4)
    path = tmp_path / "rules.gz"
    write_rules(rules, path)
    table = read_rule_arrays(path)
    rows = random.Random(1).sample(range(300), 40)
    part = table.subset(rows)
    assert [_fields(part.rule(i)) for i in range(40)] == [_fields(table.rule(r)) for r in rows]
    assert np.array_equal(part.line_numbers, np.array(rows) + 1)
