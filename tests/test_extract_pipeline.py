"""The whole `cky extract` run: table, features, glue, unknown labels, summary, bad lines, filtering."""
import gzip
import json
import math
from collections import defaultdict

import pathlib
import pytest

from decoder.cli import main as cky
from decoder.errors import InputError
from decoder.extract.corpus import CorpusPaths
from decoder.extract.filtering import TestSetFilter
from decoder.extract.glue import read_unknown_labels
from decoder.extract.pipeline import ExtractionConfig, run_extraction
from decoder.extract.rules import Limits
from decoder.extract.scoring import FEATURE_NAMES
from decoder.extract.synthetic import write_corpus
from decoder.grammar import feature_names_path, format_rule, parse_rule, read_rules

GHKM = ("il ne va pas", "(S (NP (PRP he)) (VP (AUX does) (RB not) (VB go)))", "0-0 1-2 2-3 3-2",
        "he does not go")
GOES = ("il va", "(S (NP (PRP he)) (VP (VB goes)))", "0-0 1-1", "he goes")


def write_files(tmp_path, pairs, drop_last_alignment=False):
    names = ("src", "trees", "align", "en")
    paths = {n: str(tmp_path / f"train.{n}") for n in names}
    for k, n in enumerate(names):
        lines = [p[k] for p in pairs]
        if n == "align" and drop_last_alignment:
            lines = lines[:-1]
        (tmp_path / f"train.{n}").write_text("".join(line + "\n" for line in lines))
    return paths


def extract(tmp_path, paths, **options):
    out = tmp_path / "out"
    config = ExtractionConfig(
        corpus=CorpusPaths(paths["src"], paths["trees"], paths["align"], paths.get("en")),
        out=str(out / "rules.gz"), summary=str(out / "summary.json"), glue=str(out / "glue.gz"),
        unknown_labels=str(out / "unknown-labels.txt"), progress=False, **options)
    summary = run_extraction(config)
    return summary, list(read_rules(config.out)), out


def by_name(rule):
    return dict(zip(FEATURE_NAMES, rule.scores))


def test_small_corpus_table_features_and_counts(tmp_path):
    paths = write_files(tmp_path, [GHKM, GOES])
    summary, table, out = extract(tmp_path, paths, jobs=1, limits=Limits(compose=1))
    assert summary["sentence_pairs"] == 2 and summary["skipped"] == 0
    assert summary["minimal_rules"] == 5 + 5 and summary["composed_rules"] == 0
    # S(x0:NP x1:VP), NP(x0:PRP) and PRP(he) <- il occur in both pairs
    assert summary["distinct_rules"] == len(table) == 7
    assert summary["nonterminals_per_rule"] == {"0": 3, "1": 3, "2": 1}
    assert json.loads(pathlib.Path(feature_names_path(out / "rules.gz")).read_text()) == FEATURE_NAMES

    rules = {str(r): r for r in table}
    vp = rules["VP -> < ne [VB] pas , does not [VB] >"]
    f = by_name(vp)
    # the lexical weights, worked by hand: w(not|ne) = w(not|pas) = 1, w(does|NULL) = 1,
    # w(ne|not) = w(pas|not) = 1/2
    assert f["lex_tgt_given_src"] == pytest.approx(1.0)
    assert f["lex_src_given_tgt"] == pytest.approx(0.25)
    assert f["p_tgt_given_src"] == 1 and f["p_src_given_tgt"] == 1
    assert f["p_rule_given_root"] == pytest.approx(0.5)  # two VP rules, seen once each
    assert f["singleton"] == pytest.approx(math.e)
    assert f["target_words"] == pytest.approx(math.e ** 2)
    assert f["rule_penalty"] == pytest.approx(math.e)
    assert vp.tree == "[VP [AUX does] [RB not] [VB]]"
    assert vp.alignment == ((0, 1), (2, 1))
    assert vp.counts == (1, 1, 1)

    go = by_name(rules["VB -> < va , go >"])
    assert go["p_tgt_given_src"] == pytest.approx(0.5)  # va -> go once, va -> goes once
    assert go["lex_tgt_given_src"] == pytest.approx(0.5) and go["lex_src_given_tgt"] == pytest.approx(1.0)
    s = rules["S -> < [NP] [VP] , [NP] [VP] >"]
    assert s.counts == (2, 2, 2) and by_name(s)["singleton"] == 1

    # glue and unknown-word labels in their own files
    glue = list(read_rules(out / "glue.gz"))
    assert {str(r) for r in glue} >= {"Q -> < [S] , [S] >", "Q -> < [Q] [S] , [Q] [S] >",
                                      "Q -> < [VB] , [VB] >", "Q -> < [Q] [VB] , [Q] [VB] >"}
    assert all(r.lhs == "Q" for r in glue)
    start = {r.labels[0]: r.scores[0] for r in glue if r.arity == 1}
    assert start["S"] == 1 and start["VB"] == pytest.approx(math.e)  # S is a training root label
    assert json.loads(pathlib.Path(feature_names_path(out / "glue.gz")).read_text()) == ["glue"]
    # Single-word minimal rules: PRP(he) <- il twice, VB(go) <- va, VB(goes) <- va. The source words
    # seen once (ne, pas) have no single-word rule, so all single-word rules count.
    assert read_unknown_labels(out / "unknown-labels.txt") == {"PRP": 0.5, "VB": 0.5}


def test_table_is_sorted_gzipped_and_round_trips(tmp_path):
    paths = write_corpus(str(tmp_path / "corpus"), 80, seed=3)
    paths = {"src": paths["es"], "trees": paths["trees"], "align": paths["align"], "en": paths["en"]}
    summary, table, out = extract(tmp_path, paths, jobs=1, shards=4, chunk_size=40)
    with gzip.open(out / "rules.gz", "rt") as f:
        lines = f.read().splitlines()
    assert lines == sorted(lines) and len(lines) == summary["distinct_rules"] == len(table)
    assert summary["minimal_rules"] > 0 and summary["composed_rules"] > 0
    for line, rule in zip(lines[:500], table):
        assert parse_rule(format_rule(rule)) == rule
        assert rule.tree and rule.tree.startswith(f"[{rule.lhs} ")
    assert sum(summary["nonterminals_per_rule"].values()) == len(table)
    assert all(r.arity <= summary["limits"]["max_nonterminals"] or r.counts for r in table)


def test_probabilities_sum_to_one_per_condition(tmp_path):
    paths = write_corpus(str(tmp_path / "corpus"), 100, seed=5)
    paths = {"src": paths["es"], "trees": paths["trees"], "align": paths["align"]}
    summary, table, out = extract(tmp_path, paths, jobs=1, shards=3)
    sums = {name: defaultdict(float) for name in ("p_tgt_given_src", "p_src_given_tgt", "p_rule_given_root")}
    for rule in table:
        f = by_name(rule)
        sums["p_tgt_given_src"][rule.source_string()] += f["p_tgt_given_src"]
        sums["p_src_given_tgt"][(rule.lhs, rule.target_string())] += f["p_src_given_tgt"]
        sums["p_rule_given_root"][rule.lhs] += f["p_rule_given_root"]
        assert 0 < f["lex_tgt_given_src"] <= 1 and 0 < f["lex_src_given_tgt"] <= 1
    for name, per_condition in sums.items():
        for condition, total in per_condition.items():
            assert total == pytest.approx(1.0, abs=1e-4), (name, condition)
    labels = read_unknown_labels(out / "unknown-labels.txt")
    assert sum(labels.values()) == pytest.approx(1.0, abs=1e-5)


def test_lexical_table_rows_sum_to_one():
    from collections import Counter

    from decoder.extract.scoring import LexicalTable

    counts = Counter({("a", "x"): 2, ("a", "y"): 1, ("b", "x"): 1, (None, "z"): 1, ("c", None): 1})
    table = LexicalTable(counts)
    for s in ("a", "b", "c", None):
        assert sum(p for (s2, _), p in table.t_given_s.items() if s2 == s) == pytest.approx(1)
    for t in ("x", "y", "z", None):
        assert sum(p for (_, t2), p in table.s_given_t.items() if t2 == t) == pytest.approx(1)


def test_bad_lines_are_reported_skipped_and_counted(tmp_path, capsys):
    pairs = [
        GHKM,
        ("il va", "(S (NP (PRP he)) (VP", "0-0 1-1", "he goes"),  # unparsable tree
        ("il va", "(S (NP (PRP he)) (VP (VB goes)))", "0-0 9-1", "he goes"),  # source index out of range
        ("il va", "(S (NP (PRP he)) (VP (VB goes)))", "0-0 1-1", "he goes away"),  # 2 leaves, 3 tokens
        ("il va", "(S (NP (PRP he)) (VP (VB goes)))", "0-0 1-7", "he goes"),  # target index out of range
        GOES,
    ]
    paths = write_files(tmp_path, pairs)
    summary, table, out = extract(tmp_path, paths, jobs=1, limits=Limits(compose=1))
    assert summary["sentence_pairs"] == 6
    assert summary["skipped"] == 4
    assert summary["skipped_by_reason"] == {"unparsable_tree": 2 - 1, "bad_alignment": 2, "leaves_mismatch": 1}
    errors = summary["errors"]
    assert errors[0].startswith(f"{paths['trees']}:2: unparsable tree")
    assert errors[1].startswith(f"{paths['align']}:3: ")
    assert errors[2].startswith(f"{paths['trees']}:4: the tree has 2 leaves but {paths['en']} has 3 tokens")
    assert errors[3].startswith(f"{paths['align']}:5: ")
    assert f"{paths['trees']}:2:" in capsys.readouterr().err
    # the lines after the bad ones are still read, each with its own line: "goes" comes from line 6
    assert "VB -> < va , goes >" in {str(r) for r in table}
    assert summary["minimal_rules"] == 10


def test_a_shorter_file_is_refused_before_any_work(tmp_path):
    """A line missing in one file would pair every later line with the wrong one: refused, naming both
    files and their line counts, and nothing is written."""
    paths = write_files(tmp_path, [GHKM, GOES, GHKM], drop_last_alignment=True)
    with pytest.raises(InputError, match=f"{paths['align']}: has 2 lines but {paths['src']} has 3"):
        extract(tmp_path, paths, jobs=1, limits=Limits(compose=1))
    assert not (tmp_path / "out").exists()


def test_parallel_compiled_run_writes_the_same_table_as_a_serial_reference_run(tmp_path):
    paths = write_corpus(str(tmp_path / "corpus"), 120, seed=7)
    paths = {"src": paths["es"], "trees": paths["trees"], "align": paths["align"]}
    # the serial run also uses the pure-Python reference extraction
    serial, _, out1 = extract(tmp_path / "a", paths, jobs=1, shards=2, chunk_size=120, compiled=False)
    parallel, _, out2 = extract(tmp_path / "b", paths, jobs=2, shards=5, chunk_size=23)
    for name in ("rules.gz", "glue.gz", "unknown-labels.txt"):
        a = gzip.decompress((out1 / name).read_bytes()) if name.endswith(".gz") else (out1 / name).read_bytes()
        b = gzip.decompress((out2 / name).read_bytes()) if name.endswith(".gz") else (out2 / name).read_bytes()
        assert a == b, name
    for key in ("minimal_rules", "composed_rules", "distinct_rules", "nonterminals_per_rule"):
        assert serial[key] == parallel[key]


def test_test_set_filter():
    keep = TestSetFilter([["a", "b", "c", "d"], ["e", "f"]]).keeps
    assert keep("a [X][NP] c [X]")
    assert keep("a b [X]") and keep("[X][NP] d [X]")
    assert keep("[X][NP] [X][VP] [X]")  # no words
    assert keep("e [X][A] f [X]")  # a nonterminal may stand for an empty gap
    assert not keep("b a [X]")  # order
    assert not keep("a c [X]")  # adjacent in the rule, not in the sentence
    assert not keep("a [X][NP] f [X]")  # words from two different sentences
    assert not keep("c [X][NP] a [X]")
    assert not keep("z [X]")
    assert not keep("b [X][NP] b [X]")  # runs may not overlap


def test_cli_extracts_and_filters(tmp_path):
    paths = write_files(tmp_path, [GHKM, GOES])
    out = tmp_path / "cli"
    assert cky(["extract", "--source", paths["src"], "--trees", paths["trees"], "--alignment", paths["align"],
                "--target", paths["en"], "--out", str(out / "rules.gz"), "--summary", str(out / "s.json"),
                "--glue", str(out / "glue.gz"), "--unknown-labels", str(out / "unk.txt"),
                "--compose", "2", "--max-nonterminals", "4", "--jobs", "1", "--no-progress"]) == 0
    summary = json.loads((out / "s.json").read_text())
    for key in ("sentence_pairs", "skipped", "minimal_rules", "composed_rules", "distinct_rules",
                "nonterminals_per_rule", "seconds"):
        assert key in summary
    assert summary["limits"]["compose"] == 2 and summary["limits"]["max_nonterminals"] == 4
    test = tmp_path / "test.es"
    test.write_text("il va\n")
    assert cky(["extract", "--rules", str(out / "rules.gz"), "--filter-to", str(test),
                "--out", str(out / "filtered.gz")]) == 0
    kept = {str(r) for r in read_rules(out / "filtered.gz")}
    assert "VB -> < va , go >" in kept and "PRP -> < il , he >" in kept
    assert not any("ne" in r.split(",")[0] for r in kept)
    assert json.loads(pathlib.Path(feature_names_path(out / "filtered.gz")).read_text()) == FEATURE_NAMES
    # the same filter applied while extracting
    assert cky(["extract", "--source", paths["src"], "--trees", paths["trees"], "--alignment", paths["align"],
                "--out", str(out / "direct.gz"), "--compose", "2", "--max-nonterminals", "4",
                "--filter-to", str(test), "--jobs", "1", "--no-progress"]) == 0
    assert {str(r) for r in read_rules(out / "direct.gz")} == kept


def test_a_target_side_goes_to_the_same_shard_in_every_interpreter():
    """The Dask workers of `cky extract --cluster` are separate interpreters (each with its own string-hash
    salt): every occurrence of a target side must still reach one shard."""
    import os
    import subprocess
    import sys

    code = ("from decoder.extract.pipeline import _shard_of; "
            "print([_shard_of(t, 16) for t in ('NP(DT(the) x0:NN)', 'VP(VB(goes))', 'ü', 'x0:S')])")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shards = {subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True,
                             env=dict(os.environ, PYTHONHASHSEED=str(seed), PYTHONPATH=repo)).stdout
              for seed in (1, 2, 3)}
    assert len(shards) == 1, shards
