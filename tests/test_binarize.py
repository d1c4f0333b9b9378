"""Binarization: Zhang et al. 2006 and Xiao et al. 2009, against answers worked by hand."""
import gzip
import itertools
import json
import random
import subprocess
import sys

import numpy as np
import pytest

from decoder.binarize import STRATEGIES, binarize, read_binary_rules, unbinarize, write_binary_grammar
from decoder.binarize.icr import (NO_BUCKET, cky_binarize_reference, grammar_cost, icr_sweep,
                                  icr_sweep_reference)
from decoder.binarize.permutation import (all_binarization_trees, brute_force_binarizable, format_tree,
                                          is_binarizable, left_heavy_tree)
from decoder.binarize.rule_shape import tokenize_rule, tree_spans
from decoder.binarize.strategies import left_tree
from decoder.grammar import Rule, parse_rule
from decoder.synthetic import random_grammar

XIAO_RULE = "[X][VB] [X][NP] 会 [X][JJR] [X] ||| [X][VB] [X][NP] will be [X][JJR] [VP] ||| 1 ||| 0-0 1-1 3-4"


# --- Zhang et al. 2006 -------------------------------------------------------------

def test_2354_is_binarizable_with_exactly_two_patterns():
    assert is_binarizable((2, 3, 5, 4))
    trees = all_binarization_trees((2, 3, 5, 4))
    assert sorted(format_tree(t, (2, 3, 5, 4)) for t in trees) == sorted(
        ["[[2, 3], <5, 4>]", "[2, [3, <5, 4>]]"])


@pytest.mark.parametrize("perm", [(2, 4, 1, 3), (3, 1, 4, 2)])
def test_non_binarizable_permutations(perm):
    assert not is_binarizable(perm)
    assert left_heavy_tree(perm) is None
    assert all_binarization_trees(perm) == []


def test_shift_reduce_on_15342_gives_the_left_heavy_tree():
    # Worked by hand from Algorithm 1: shift 1, 5, 3, 4 -> reduce [3,4]; reduce <5,[3,4]>;
    # shift 2 -> reduce <<5,[3,4]>,2>; reduce [1, ...].
    values = (1, 5, 3, 4, 2)
    assert format_tree(left_heavy_tree(values), values) == "[1, <<5, [3, 4]>, 2>]"


def test_binarizability_agrees_with_brute_force_up_to_length_8():
    # The number of binarizable (separable) permutations of length n is the large
    # Schroeder number: an independent check of both tests.
    schroeder = [1, 2, 6, 22, 90, 394, 1806, 8558]
    for n in range(1, 9):
        count = 0
        for perm in itertools.permutations(range(n)):
            fast = is_binarizable(perm)
            if n <= 7 or perm[0] % 2 == 0:  # brute force on every length-8 permutation is slow in CI
                assert fast == brute_force_binarizable(perm), perm
            count += fast
        assert count == schroeder[n - 1], n


# --- Xiao et al. 2009 -------------------------------------------------------------

TABLE_1 = {"VB NP": 6619, "VB NP 会": 10, "NP 会": 874, "NP 会 JJR": 2, "会 JJR": 62, "VB NP 会 JJR": 1}
TOKENS = ["VB", "NP", "会", "JJR"]


def _static_bucket(p, q):
    key = " ".join(TOKENS[p:q + 1])
    return key if key in TABLE_1 else NO_BUCKET


def test_cky_binarizer_with_table_1_costs_picks_binarization_b():
    counts = {key: cost for key, cost in TABLE_1.items()}
    cost, spans = cky_binarize_reference(4, _static_bucket, counts)
    assert cost == 62 + 2 + 1 == 65
    assert set(spans) == {(2, 3), (1, 3), (0, 3)}  # VB (NP (会 JJR))


def test_table_1_costs_of_the_other_binarizations():
    def tree_cost(spans):
        return sum(TABLE_1[" ".join(TOKENS[p:q + 1])] for p, q in spans)

    assert tree_cost([(1, 2), (0, 2), (0, 3)]) == 885  # (VB (NP 会)) JJR, Zhang's
    assert tree_cost([(0, 1), (0, 2), (0, 3)]) == 6630  # ((VB NP) 会) JJR


def test_left_strategy_reproduces_binarization_a():
    rule = parse_rule(XIAO_RULE)
    tokens = tokenize_rule(rule)
    assert set(tree_spans(left_tree(tokens.ranks))) == {(1, 2), (0, 2), (0, 3)}
    grammar = binarize([rule], "left")
    assert grammar.bucket_keys[0] == (("[NP]", "会"), ("[VB]", "[NP]", "会"), ("[VB]", "[NP]", "会", "[JJR]"))
    virtual = [r for r in grammar.rules if r.origin < 0]
    assert virtual[0].children == ("NP", ("会",)) and virtual[0].target == (0, "will", "be")


def test_virtual_nonterminals_are_shared_across_rules():
    rules = [parse_rule(XIAO_RULE),
             parse_rule("[X][NP] 会 [X][VB] [X] ||| [X][NP] will be [X][VB] [S] ||| 1 ||| 0-0 2-3")]
    grammar = binarize(rules, "left")
    shared = "<[NP] 会 || [0] will be>"
    definitions = [r for r in grammar.rules if r.lhs == shared]
    assert len(definitions) == 1
    users = [r for r in grammar.rules if shared in r.children]
    assert len(users) == 2
    cost, sizes = grammar_cost(grammar.bucket_keys)
    assert sizes[("[NP]", "会")] == 2


def _random_rules(n, seed):
    return random_grammar(n, seed=seed, n_labels=6, source_vocab=12, target_vocab=12, mean_nonterminals=3.0,
                          monotone=0.5, inverted=0.2)


@pytest.mark.parametrize("seed", range(5))
def test_icr_never_increases_cost_and_beats_left(seed):
    rules = _random_rules(400, seed)
    left = binarize(rules, "left")
    icr = binarize(rules, "icr")
    history = icr.report["iterations"]
    assert history[0] == left.report["cost"]
    assert all(b <= a for a, b in zip(history, history[1:]))
    assert icr.report["cost"] == history[-1] <= left.report["cost"]
    assert icr.report["cost"] < left.report["cost"]  # these grammars leave room to improve


def test_compiled_icr_sweep_equals_reference():
    from decoder.binarize import _iterative_cost_reduction  # noqa: F401  (module-level helper)
    import decoder.binarize as b

    rules = _random_rules(300, 11)
    captured = {}
    original = b.icr_sweep

    def compare(tables):
        copy = type(tables)(**{k: v.copy() for k, v in vars(tables).items()})
        changed = original(tables)
        changed_ref = icr_sweep_reference(copy)
        assert changed == changed_ref
        assert np.array_equal(tables.tree_spans, copy.tree_spans)
        assert np.array_equal(tables.counts, copy.counts)
        captured["sweeps"] = captured.get("sweeps", 0) + 1
        return changed

    b.icr_sweep = compare
    try:
        binarize(rules, "icr")
    finally:
        b.icr_sweep = original
    assert captured["sweeps"] >= 2


# --- every strategy ---------------------------------------------------------------

@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("seed", range(3))
def test_round_trip(strategy, seed):
    rules = _random_rules(300, seed)
    grammar = binarize(rules, strategy, seed=seed)
    assert unbinarize(grammar) == rules
    # Every binary rule has at most two children.
    assert all(1 <= len(r.children) <= 2 for r in grammar.rules)


@pytest.mark.parametrize("strategy", ["left", "right", "random", "icr"])
def test_synchronous_strategies_have_contiguous_virtual_items(strategy):
    rules = _random_rules(300, 3)
    grammar = binarize(rules, strategy)
    flagged = set(grammar.non_binarizable)
    assert flagged == {i for i, r in enumerate(rules) if not is_binarizable(r.permutation)}
    for i, indices in enumerate(grammar.binarizations):
        monolingual = any(grammar.rules[j].lhs.startswith("<mono ") for j in indices)
        assert monolingual == (i in flagged and rules[i].arity > 2)


def test_drop_policy_drops_exactly_the_non_binarizable_rules():
    rules = _random_rules(300, 4)
    grammar = binarize(rules, "left", non_binarizable="drop")
    kept = unbinarize(grammar)
    assert kept == [r for r in rules if is_binarizable(r.permutation)]
    assert grammar.report["dropped"] == len(rules) - len(kept) > 0


def test_random_strategy_is_seeded():
    rules = _random_rules(200, 5)
    a = binarize(rules, "random", seed=1)
    b = binarize(rules, "random", seed=1)
    c = binarize(rules, "random", seed=2)
    assert a.binarizations == b.binarizations
    assert a.bucket_keys != c.bucket_keys


def test_unknown_strategy_is_an_error():
    with pytest.raises(ValueError, match="unknown binarization strategy"):
        binarize([], "upside-down")


def test_binary_grammar_text_round_trip(tmp_path):
    rules = _random_rules(100, 6)
    for strategy in STRATEGIES:
        grammar = binarize(rules, strategy)
        path = tmp_path / f"{strategy}.txt.gz"
        write_binary_grammar(grammar, path)
        header, read_back = read_binary_rules(path)
        assert header["strategy"] == strategy
        assert read_back == grammar.rules


def test_cli_writes_grammar_and_report(tmp_path):
    table = tmp_path / "rules.txt"
    table.write_text(XIAO_RULE + "\n" + "la casa [X] ||| the house [NP] ||| 0.5\n", encoding="utf-8")
    out = tmp_path / "binary.gz"
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "decoder.cli", "binarize", "--strategy", "icr", "--quiet",
                             "--report", str(report), str(table), str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    for key in ("strategy", "source_rules", "binary_rules", "virtual_nonterminals", "non_binarizable", "cost",
                "bucket_sizes", "iterations", "seconds"):
        assert key in data
    assert data["source_rules"] == 2 and data["binary_rules"] == 4 and data["virtual_nonterminals"] == 2
    assert data["cost"] == 4  # four buckets of one rule each
    with gzip.open(out, "rt", encoding="utf-8") as f:
        assert f.readline().startswith("#cky-binary-grammar")
    assert "cost Q(G')" in result.stdout


def test_cli_reports_malformed_line(tmp_path):
    table = tmp_path / "bad.txt"
    table.write_text("la casa [X] ||| the house [NP] ||| 0.5\nthis is not a rule\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "decoder.cli", "binarize", str(table), str(tmp_path / "o")],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert f"{table}:2:" in result.stderr
