"""Bad rule tables and corpora given to `cky compile`, `cky binarize` and `cky extract`: one line
naming the file (and the line), exit 1, never a traceback; and where compiled features get their names."""
import gzip
import json
import os

import pathlib
import pytest

from decoder.cli import main as cky
from decoder.errors import FeatureNamesError, GrammarFormatError, InputError
from decoder.grammar import feature_names_path, format_rule, open_text, read_rules
from decoder.store import GrammarStore, build_store
from decoder.synthetic import random_grammar

NAMES = [f"feature_{i}" for i in range(8)]


@pytest.fixture
def table(tmp_path):
    """A plain table of 300 rules with 8 scores each, its names beside it."""
    path = tmp_path / "rules.txt"
    path.write_text("".join(format_rule(r) + "\n" for r in random_grammar(300, seed=5, n_features=8)))
    with open(feature_names_path(path), "w") as f:
        json.dump(NAMES, f)
    return path


def run_cky(capsys, *args):
    code = cky([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.err


def one_line_error(code, err, *fragments):
    assert code == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, err


# -- a rule with 6 scores among 8-score rules ---------------------------------------

def with_six_scores_on_line_3(path):
    lines = path.read_text().splitlines()
    fields = lines[2].split(" ||| ")
    fields[2] = " ".join(fields[2].split()[:6])
    lines[2] = " ||| ".join(fields)
    path.write_text("\n".join(lines) + "\n")


def test_compile_rejects_a_rule_with_another_score_count(table, tmp_path, capsys):
    with_six_scores_on_line_3(table)
    code, err = run_cky(capsys, "compile", table, tmp_path / "store")
    one_line_error(code, err, f"{table}:3:", "6 scores", "line 1 has 8")
    assert not (tmp_path / "store").exists()


def test_binarize_rejects_a_rule_with_another_score_count(table, tmp_path, capsys):
    with_six_scores_on_line_3(table)
    code, err = run_cky(capsys, "binarize", "--quiet", table, tmp_path / "binary.txt")
    one_line_error(code, err, f"{table}:3:", "6 scores")


def test_read_rules_checks_score_counts_only_when_asked(table):
    with_six_scores_on_line_3(table)
    assert len(list(read_rules(table))) == 300  # hand-written tables may mix counts
    with pytest.raises(GrammarFormatError) as raised:
        list(read_rules(table, uniform_scores=True))
    error = raised.value
    assert (error.path, error.line_number) == (str(table), 3)
    assert str(error) == f"{table}:3: 6 scores, but the rule on line 1 has 8"


# -- truncated gzip and bad bytes ---------------------------------------------------

def truncate_gzip(path, plain: bytes):
    data = gzip.compress(plain)
    path.write_bytes(data[:len(data) // 2])


def test_truncated_gzip_table_in_compile_and_binarize(table, tmp_path, capsys):
    broken = tmp_path / "rules.gz"
    truncate_gzip(broken, table.read_bytes())
    with open(feature_names_path(broken), "w") as f:
        json.dump(NAMES, f)
    code, err = run_cky(capsys, "compile", broken, tmp_path / "store")
    one_line_error(code, err, str(broken), "truncated or corrupt gzip")
    code, err = run_cky(capsys, "binarize", "--quiet", broken, tmp_path / "binary.txt")
    one_line_error(code, err, str(broken), "truncated or corrupt gzip")
    code, err = run_cky(capsys, "extract", "--rules", broken, "--filter-to", table, "--out", tmp_path / "f.gz")
    one_line_error(code, err, str(broken), "truncated or corrupt gzip")


def test_truncated_gzip_corpus_in_extract(tmp_path, capsys):
    tree = "(S (NP (PRP he)) (VP (VB goes)))"
    (tmp_path / "train.es").write_text("il va\n" * 3000)
    truncate_gzip(tmp_path / "train.trees.gz", (tree + "\n").encode() * 3000)
    (tmp_path / "train.align").write_text("0-0 1-1\n" * 3000)
    code, err = run_cky(capsys, "extract", "--source", tmp_path / "train.es", "--trees", tmp_path / "train.trees.gz",
                        "--alignment", tmp_path / "train.align", "--out", tmp_path / "out" / "rules.gz",
                        "--no-progress", "--jobs", "1")
    one_line_error(code, err, "train.trees.gz", "truncated or corrupt gzip")


def test_gzip_truncation_names_the_line_where_the_data_ends(tmp_path):
    path = tmp_path / "lines.gz"
    lines = [f"line {i} " + "x" * (i % 50) for i in range(20000)]
    truncate_gzip(path, "".join(line + "\n" for line in lines).encode())
    read = []
    with pytest.raises(InputError) as caught:
        with open_text(path) as f:
            read.extend(f)
    assert caught.value.path == str(path) and caught.value.line_number == len(read) + 1
    assert [line.rstrip("\n") for line in read] == lines[:len(read)]


@pytest.mark.parametrize("gzipped", [False, True])
def test_bytes_that_are_not_utf8_name_their_line(tmp_path, gzipped):
    data = b"".join(b"fine %d\n" % i for i in range(5000)) + b"caf\xe9\n" + b"after\n"
    path = tmp_path / ("text.gz" if gzipped else "text.txt")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    with pytest.raises(InputError, match=r":5001: not UTF-8"):
        with open_text(path) as f:
            list(f)


# -- names of the score columns ------------------------------------------------------

def test_compiled_features_are_named_from_the_table(table, tmp_path):
    build = build_store(table, tmp_path / "store", "left")
    assert build.meta["feature_names"] == NAMES
    assert GrammarStore.open(tmp_path / "store").feature_names == NAMES


def test_decompressed_table_finds_the_names_of_its_gz_original(table, tmp_path):
    # `gunzip rules.gz` leaves rules and rules.gz.features.json
    os.replace(feature_names_path(table), feature_names_path(str(table) + ".gz"))
    assert build_store(table, tmp_path / "store").meta["feature_names"] == NAMES


def test_table_without_names_is_an_error_not_f0_to_f7(table, tmp_path, capsys):
    os.remove(feature_names_path(table))
    with pytest.raises(FeatureNamesError, match="no names"):
        build_store(table, tmp_path / "store")
    code, err = run_cky(capsys, "compile", table, tmp_path / "store")
    one_line_error(code, err, str(table), "--features")
    assert not (tmp_path / "store").exists()
    names = ",".join(f"w{i}" for i in range(8))
    code, _ = run_cky(capsys, "compile", "--features", names, table, tmp_path / "store")
    assert code == 0 and GrammarStore.open(tmp_path / "store").feature_names == names.split(",")


@pytest.mark.parametrize("content, message", [("[\"a\", \"b\"]", "2 feature names"), ("{\"a\": 1}", "JSON list"),
                                              ("[\"a\"", "unreadable"), (json.dumps(["a"] * 8), "repeat")])
def test_bad_names_file(table, tmp_path, capsys, content, message):
    with open(feature_names_path(table), "w") as f:
        f.write(content)
    code, err = run_cky(capsys, "compile", table, tmp_path / "store")
    one_line_error(code, err, "rules.txt", message)


def test_filtered_table_keeps_the_names_of_a_decompressed_original(table, tmp_path, capsys):
    os.replace(feature_names_path(table), feature_names_path(str(table) + ".gz"))
    test = tmp_path / "test.txt"
    test.write_text(" ".join(w for r in random_grammar(5, seed=5) for w in r.source if isinstance(w, str)) + "\n")
    code, _ = run_cky(capsys, "extract", "--rules", table, "--filter-to", test, "--out", tmp_path / "f.gz")
    assert code == 0
    assert json.loads(pathlib.Path(feature_names_path(tmp_path / "f.gz")).read_text()) == NAMES
