"""The grammar store: round trips for every strategy, look-ups against naive scans, the CLI."""
from __future__ import annotations

import argparse
import json
import random

import numpy as np
import pytest

from decoder.binarize import STRATEGIES, binarize, expand, expansion_table
from decoder.grammar import Rule, feature_names_path, read_rules, write_rules
from decoder.store import OOV_ID, GrammarStore, filter_rules, rule_runs, write_store
from decoder.cli import compile as store_cli
from decoder.cli import main as cky_main

LABELS = ["NP", "VP", "S", "PP", "NN", "DT", "JJ", "VB"]
SOURCE_WORDS = [f"w{i}" for i in range(12)]  # few words: runs repeat and overlap in sentences
TARGET_WORDS = [f"t{i}" for i in range(15)]
NON_BINARIZABLE = [(1, 3, 0, 2), (2, 0, 3, 1), (1, 3, 0, 4, 2)]


def random_rule(rng: random.Random) -> Rule:
    """A rule with 0-5 nonterminals, terminal runs between them, and a random, monotone,
    inverted or non-binarizable order on the target side."""
    arity = rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 4, 5])
    kind = rng.random()
    if arity >= 4 and kind < 0.2:
        order = list(rng.choice([p for p in NON_BINARIZABLE if len(p) == arity]))
    elif kind < 0.5:
        order = list(range(arity))
    elif kind < 0.6:
        order = list(range(arity))[::-1]
    else:
        order = rng.sample(range(arity), arity)
    source: list = []
    for slot in range(arity + 1):
        if rng.random() < 0.5 or (arity == 0 and not source):
            source.extend(rng.choice(SOURCE_WORDS) for _ in range(rng.choice([1, 1, 2, 3])))
        if slot < arity:
            source.append(slot)
    target: list = []
    for slot in order + [None]:
        if rng.random() < 0.4 or (arity == 0 and not target):
            target.extend(rng.choice(TARGET_WORDS) for _ in range(rng.choice([1, 2])))
        if slot is not None:
            target.append(slot)
    labels = tuple(rng.choice(LABELS) for _ in range(arity))
    scores = tuple(rng.choice([0.0, 1.0, round(rng.uniform(0.001, 1), 6)]) for _ in range(3))
    tree = None
    if rng.random() < 0.7:
        tree = f"[{rng.choice(LABELS)} " + " ".join(
            f"[{labels[s]}]" if isinstance(s, int) else f"[X {s}]" for s in target) + "]"
    return Rule(rng.choice(LABELS), tuple(source), tuple(target), labels, scores, tree=tree)


def random_rules(n: int, seed: int) -> list[Rule]:
    rng = random.Random(seed)
    return [random_rule(rng) for _ in range(n)]


@pytest.fixture(scope="module")
def text_grammar(tmp_path_factory):
    """A random grammar written as a Moses table and read back."""
    path = tmp_path_factory.mktemp("grammar") / "rules.txt.gz"
    write_rules(random_rules(400, seed=7), path)
    return path, list(read_rules(path))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_round_trip(strategy, text_grammar, tmp_path):
    path, rules = text_grammar
    grammar = binarize(rules, strategy=strategy, seed=3)
    compiled = write_store(grammar, tmp_path / "store", source_table=str(path))
    store = GrammarStore.open(tmp_path / "store")

    assert len(store) == len(grammar.rules)
    assert store.meta["strategy"] == strategy
    assert store.meta["report"]["binary_rules"] == len(grammar.rules)
    assert store.meta["feature_names"] == ["f0", "f1", "f2"]
    assert grammar.non_binarizable or strategy == "monolingual"
    # every source rule: found, same features (log scores), rebuilt to the same rule
    for i, rule in enumerate(rules):
        top = store.top_rule(i)
        assert top >= 0 and store.rule_origin[top] == i
        assert np.array_equal(store.features[i], np.array(rule.log_scores(), dtype=np.float32))
        assert np.array_equal(store.rule_features(top), store.features[i])
        rebuilt = store.source_rule(top)
        assert (rebuilt.lhs, rebuilt.source, rebuilt.target, rebuilt.labels, rebuilt.tree) == \
               (rule.lhs, rule.source, rule.target, rule.labels, rule.tree)
    # every binary rule: the same as the one binarize made, at the position rule_order says
    for r in range(len(store)):
        assert store.binary_rule(r) == grammar.rules[compiled.rule_order[r]]
        if store.rule_origin[r] < 0:
            assert not store.rule_features(r).any()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_symbols(strategy, tmp_path):
    grammar = binarize(random_rules(300, seed=11), strategy=strategy)
    write_store(grammar, tmp_path / "store")
    store = GrammarStore.open(tmp_path / "store")
    names = store.nonterminal_names
    n_real = store.meta["n_real_nonterminals"]
    assert all(not n.startswith("<") for n in names[:n_real])
    assert all(n.startswith("<") for n in names[n_real:])
    assert list(store.symbol_is_virtual) == [0] * n_real + [1] * (len(names) - n_real)
    table = expansion_table(grammar.rules)
    for symbol, name in enumerate(names):
        expected = len(expand(table[name], table)[1]) if name.startswith("<") else 1
        assert store.symbol_carried[symbol] == expected, name
        assert store.symbol_id(name) == symbol
        if name.startswith("<"):
            assert store.nonterminal_names[store.rule_lhs[store.symbol_rule[symbol]]] == name
    for r in range(len(store)):
        binary = store.binary_rule(r)
        assert store.rule_carries[r] == (binary.target is None)
        assert (store.rule_child1[r] == -1) == (len(binary.children) == 1)


def naive_runs(store, words):
    runs = {store.run_words_of(store.n_nonterminals + k): store.n_nonterminals + k for k in range(store.n_runs)}
    return sorted((i, j, runs[tuple(words[i:j])]) for i in range(len(words))
                  for j in range(i + 1, len(words) + 1) if tuple(words[i:j]) in runs)


@pytest.mark.parametrize("seed", range(4))
def test_lookups_agree_with_naive_scan(seed, tmp_path):
    rng = random.Random(seed)
    strategy = STRATEGIES[seed % len(STRATEGIES)]
    grammar = binarize(random_rules(250, seed=100 + seed), strategy=strategy, seed=seed)
    write_store(grammar, tmp_path / "store")
    store = GrammarStore.open(tmp_path / "store")
    child0, child1 = store.rule_child0, store.rule_child1

    for _ in range(20):
        words = [rng.choice(SOURCE_WORDS + ["oov1", "oov2"]) for _ in range(rng.randint(0, 15))]
        view = store.sentence_view(words)
        assert [store.source_vocab[i] if i != OOV_ID else None for i in view.word_ids] == \
               [w if w in store.source_word_index else None for w in words]
        assert store.match_runs(view.word_ids) == naive_runs(store, words)
        assert [tuple(row) for row in view.runs.tolist()] == naive_runs(store, words)

    symbols = sorted(set(child0.tolist()) | set(child1[child1 >= 0].tolist()))
    probes = rng.sample(symbols, min(60, len(symbols))) + [rng.randrange(store.n_symbols) for _ in range(10)]
    for a in probes:
        assert sorted(store.rules_for_single(a).tolist()) == \
               np.flatnonzero((child0 == a) & (child1 == -1)).tolist()
        lo, hi = store.pair_keys_with_left(a)
        assert sorted(int(k) - a * store.n_symbols for k in store.pair_keys[lo:hi]) == \
               sorted(set(child1[(child0 == a) & (child1 >= 0)].tolist()))
        rights = rng.sample(probes, 5) + [int(x) for x in child1[child0 == a] if x >= 0]
        for b in rights:
            assert sorted(store.rules_for_pair(a, b).tolist()) == np.flatnonzero((child0 == a) & (child1 == b)).tolist()
        # the batch form agrees with the one-pair form
        los, his = store.pair_ranges([a] * len(rights), rights)
        assert list(zip(los.tolist(), his.tolist())) == [store.pair_range(a, b) for b in rights]
    los, his = store.single_ranges(probes)
    assert list(zip(los.tolist(), his.tolist())) == [store.single_range(a) for a in probes]


def test_rules_are_grouped_by_key(tmp_path):
    grammar = binarize(random_rules(200, seed=5), strategy="icr")
    write_store(grammar, tmp_path / "store")
    store = GrammarStore.open(tmp_path / "store")
    assert np.all(np.diff(store.pair_keys) > 0) and np.all(np.diff(store.single_keys) > 0)
    for keys, offsets, rules, key_of in (
            (store.pair_keys, store.pair_offsets, store.pair_rules,
             lambda r: store.rule_child0[r] * store.n_symbols + store.rule_child1[r]),
            (store.single_keys, store.single_offsets, store.single_rules, lambda r: store.rule_child0[r])):
        assert offsets[-1] == len(rules)
        for i, key in enumerate(keys):
            assert all(key_of(r) == key for r in rules[offsets[i]:offsets[i + 1]])
    assert len(store.pair_rules) + len(store.single_rules) == len(store)


def test_target_ids_encode_words_and_references(tmp_path):
    grammar = binarize(random_rules(100, seed=9), strategy="left")
    write_store(grammar, tmp_path / "store")
    store = GrammarStore.open(tmp_path / "store")
    for r in range(len(store)):
        target = store.binary_rule(r).target
        ids = store.target_ids(r).tolist()
        if target is None:
            assert ids == []
        else:
            assert ids == [store.target_vocab.index(x) if isinstance(x, str) else -1 - x for x in target]


def naive_filter(rules, sentences):
    def occurs(run, words):
        return any(tuple(words[i:i + len(run)]) == run for i in range(len(words)))
    return [r for r in rules if any(all(occurs(run, s) for run in rule_runs(r)) for s in sentences)]


def test_filter_agrees_with_naive_scan():
    rules = random_rules(500, seed=21)
    rng = random.Random(4)
    sentences = [[rng.choice(SOURCE_WORDS[:8] + ["x"]) for _ in range(rng.randint(0, 12))] for _ in range(6)]
    kept = filter_rules(rules, sentences)
    assert kept == naive_filter(rules, sentences)
    assert 0 < len(kept) < len(rules)
    assert filter_rules(rules, []) == []


def test_filter_bit_sets_for_many_sentences():
    rules = random_rules(200, seed=22)
    rng = random.Random(5)
    sentences = [[rng.choice(SOURCE_WORDS) for _ in range(rng.randint(1, 6))] for _ in range(300)]
    assert filter_rules(rules, sentences) == naive_filter(rules, sentences)


def test_filter_reads_test_sentences_escaped_like_the_rule_table(tmp_path):
    from decoder.store import read_sentences

    path = tmp_path / "test.txt"
    path.write_text("a [ b\nc | d\n", encoding="utf-8")
    assert read_sentences(path) == [["a", "&#91;", "b"], ["c", "&#124;", "d"]]
    bracket = Rule("X", ("&#91;", "b"), ("&#91;", "b"), ())
    pipe = Rule("X", ("&#124;",), ("&#124;",), ())
    plain = Rule("X", ("[",), ("[",), ())  # never in a table cky extract writes
    assert filter_rules([bracket, pipe, plain], read_sentences(path)) == [bracket, pipe]


def test_cli_compile(tmp_path, capsys):
    rules_path = tmp_path / "rules.txt"
    rules = random_rules(150, seed=31)
    write_rules(rules, rules_path)
    with open(feature_names_path(rules_path), "w") as f:
        json.dump(["p(e|f)", "p(f|e)", "lex"], f)
    test_path = tmp_path / "test.txt"
    test_path.write_text("w1 w2 w3 w4 w5 w6\nw7 w8 w9 w0\n")
    parser = argparse.ArgumentParser()
    store_cli.add_arguments(parser)
    args = parser.parse_args(["--strategy", "random", "--seed", "2", "--filter", str(test_path),
                              str(rules_path), str(tmp_path / "store")])
    assert store_cli.main(args) == 0
    assert "binary rules" in capsys.readouterr().out
    store = GrammarStore.open(tmp_path / "store")
    kept = filter_rules(rules, [line.split() for line in test_path.read_text().splitlines()])
    assert store.meta["n_source_rules"] == len(kept) and 0 < len(kept) < len(rules)
    assert store.meta["feature_names"] == ["p(e|f)", "p(f|e)", "lex"]
    assert store.meta["filter"].endswith("test.txt") and store.meta["strategy"] == "random"
    for i, rule in enumerate(kept):
        rebuilt = store.source_rule(store.top_rule(i))
        assert (rebuilt.source, rebuilt.target, rebuilt.labels) == (rule.source, rule.target, rule.labels)


def test_cli_reports_unreadable_table(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("not a rule\n")
    # through the one place that turns our errors into exit codes (decoder.cli.run)
    assert cky_main(["compile", str(bad), str(tmp_path / "store")]) == 1
    assert "bad.txt:1" in capsys.readouterr().err
