"""The store compiled straight from the binarization kernel's arrays (`binarize(..., arrays=True)`,
what `cky compile` does) against the reference path through BinaryRule objects: byte-identical
stores (every .npy and text file; meta.json equal but for the time it was made and took)."""
import random

import numpy as np
import pytest

from decoder.binarize import STRATEGIES, BinaryGrammar, BinaryRuleArrays, binarize
from decoder.errors import FeatureNamesError, InputError
from decoder.grammar import Rule, parse_rule, write_rules
from decoder.rule_arrays import read_rule_arrays
from decoder.store import build_store, save_store
from decoder.store.compile import compile_grammar
from decoder.synthetic import random_grammar
from bench.bench_compile import store_files
from tests.test_binarize_kernel import EDGE_CASES, GRAMMARS


def _assert_identical_stores(rules, strategy, tmp_path, seed=0, policy="monolingual", expect_arrays=True):
    arrays = binarize(rules, strategy, seed=seed, non_binarizable=policy, arrays=True)
    objects = binarize(rules, strategy, seed=seed, non_binarizable=policy)
    assert isinstance(arrays, BinaryRuleArrays if expect_arrays else BinaryGrammar)
    assert isinstance(objects, BinaryGrammar)
    paths = []
    for kind, grammar in (("arrays", arrays), ("objects", objects)):
        path = tmp_path / f"{strategy}-{seed}-{policy}-{kind}"
        save_store(compile_grammar(grammar, source_table="rules.gz"), path)
        paths.append(path)
    fast, reference = (store_files(path) for path in paths)
    assert sorted(fast) == sorted(reference)
    for name in reference:
        assert fast[name] == reference[name], f"{strategy}/{policy}/seed {seed}: {name} differs"
    return objects


@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_array_path_equals_object_path_on_random_grammars(grammar, strategy, tmp_path):
    config = dict(GRAMMARS[grammar])
    rules = random_grammar(config.pop("n_rules"), **config)
    for seed in ([0, 5] if strategy == "random" else [0]):
        grammar_objects = _assert_identical_stores(rules, strategy, tmp_path, seed=seed)
        assert any(r.origin < 0 for r in grammar_objects.rules)  # virtual rules were shared, not just top rules
    _assert_identical_stores(rules, strategy, tmp_path, policy="drop")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_array_path_equals_object_path_on_names_spelled_alike(strategy, tmp_path):
    # Words with spaces, spelled like slots, labels or the separator: virtual names are told
    # apart by string, and symbols of one name (different insides) are one nonterminal.
    rules = [parse_rule(line) for line in EDGE_CASES]
    rules += [Rule("S", (0, "a b", 1), (1, "[0]", 0), ("A", "a b"), (0.5,)),
              Rule("S", (0, "a", "b", 1), (1, "[0]", 0), ("A", "B"), (0.5,)),
              Rule("S", (0, "a", 1, 2), (0, "[0]", 1, 2), ("X", "Y", "Z"), (0.5,)),
              Rule("S", (0, "a", 1, 2), ("[0]", 0, 1, 2), ("X", "Y", "Z"), (0.5,)),
              Rule("S", ("a", "[Y]", 0, 1), (0, 1), ("X", "Z"), (0.5,)),
              Rule("S", ("a", 0, 1, 2), (0, 1, 2), ("Y", "X", "Z"), (0.5,)),
              Rule("S", ("x", "||", 0, 1), (1, "||", 0), ("A", "B"), (0.5,))]
    rules = rules * 2
    for policy in ("monolingual", "drop"):
        for seed in (0, 1):
            _assert_identical_stores(rules, strategy, tmp_path, seed=seed, policy=policy)


@pytest.mark.parametrize("strategy", ["left", "icr"])
def test_a_label_spelled_like_a_virtual_name_takes_the_object_path(strategy, tmp_path):
    # "<X>" as an LHS, "<A>" as a label: the object path reads them as virtual names (one string),
    # which the arrays cannot express, so binarize(arrays=True) gives the BinaryGrammar.
    rules = [parse_rule(line) for line in EDGE_CASES]
    for odd in ([Rule("<X>", ("[0]", 0, "a b"), ("[0]", 0, "[1]"), ("A",), (0.5,))],
                [Rule("S", (0, "q"), (0, "r"), ("<A>",), (0.5,)), Rule("<A>", ("q",), ("r",), (), (0.5,))]):
        _assert_identical_stores(rules + odd, strategy, tmp_path, expect_arrays=False)


def test_arrays_hold_the_rules_of_the_object_path():
    # Row by row, the arrays spell the BinaryRule list (order, lhs, children, target, origin).
    rules = random_grammar(300, seed=11)
    objects = binarize(rules, "icr")
    arrays = binarize(rules, "icr", arrays=True)
    assert len(arrays) == len(objects.rules) == arrays.report["binary_rules"]
    assert {k: v for k, v in arrays.report.items() if k != "seconds"} == \
        {k: v for k, v in objects.report.items() if k != "seconds"}
    names = arrays.symbol_objects
    for i, rule in enumerate(objects.rules):
        lhs = int(arrays.rule_lhs[i])
        assert (arrays.lhs_labels[-1 - lhs] if lhs < 0 else names[lhs]) == rule.lhs
        children = [names[c] for c in (arrays.rule_child0[i], arrays.rule_child1[i]) if c >= 0]
        assert tuple(children) == rule.children
        row = arrays.rule_target[arrays.rule_target_offsets[i]:arrays.rule_target_offsets[i + 1]]
        target = tuple(arrays.target_words[x] if x >= 0 else -1 - int(x) for x in row)
        assert (None if arrays.rule_carries[i] else target) == rule.target
        assert arrays.rule_origin[i] == rule.origin
    assert np.array_equal(arrays.symbol_canonical[arrays.symbol_canonical],
                          arrays.symbol_canonical)  # canonical ids are their own canonical


@pytest.fixture(scope="module")
def fixture_paths(tmp_path_factory):
    from models.fixtures.build_fixture import build_fixture

    return build_fixture(str(tmp_path_factory.mktemp("fixture")))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_build_store_equals_the_reference_path_on_the_fixture_grammar(fixture_paths, strategy, tmp_path):
    stores = {}
    for reference in (False, True):
        build = build_store(fixture_paths["rules"], tmp_path / f"store-{reference}", strategy, seed=3,
                            reference=reference)
        assert build.meta["n_rules"] > build.n_kept  # virtual rules
        stores[reference] = store_files(build.store_dir)
    assert stores[False] == stores[True]


# -- the compiled table reader (decoder.rule_arrays) against read_rules, through build_store ------

def _build_both(path, tmp_path, strategy, **kwargs):
    """build_store's stores from the compiled reader's rows and from Rule objects (reference)."""
    stores = {}
    for reference in (False, True):
        build = build_store(path, tmp_path / f"{strategy}-{reference}", strategy, feature_names=["p"],
                            reference=reference, **kwargs)
        stores[reference] = (build.n_read, build.n_kept, store_files(build.store_dir))
    assert stores[False] == stores[True]
    return stores[False]


@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_build_store_from_the_table_arrays_equals_the_reference(grammar, strategy, tmp_path):
    config = dict(GRAMMARS[grammar])
    rules = random_grammar(config.pop("n_rules"), n_features=1, **config)
    path = tmp_path / "rules.gz"
    write_rules(rules, path)
    n_read, _, _ = _build_both(path, tmp_path, strategy, seed=4)
    assert n_read == len(rules)
    _build_both(path, tmp_path, strategy, non_binarizable="drop")


@pytest.mark.parametrize("strategy", ["left", "icr"])
def test_filtered_table_arrays_equal_the_reference(strategy, tmp_path):
    rules = random_grammar(1500, seed=6, n_features=1)
    path = tmp_path / "rules.txt"
    write_rules(rules, path)
    words = sorted({w for r in rules for w in r.source_terminals})
    rng = random.Random(3)
    sentences = [rng.sample(words, 6) for _ in range(25)] + [[]]
    test_path = tmp_path / "test.txt"
    test_path.write_text("".join(" ".join(s) + "\n" for s in sentences))
    n_read, n_kept, _ = _build_both(path, tmp_path, strategy, filter_path=test_path)
    assert 0 < n_kept < n_read
    with pytest.raises(InputError, match="none of its 1500 rules can match"):  # a store without rules
        _build_both(path, tmp_path, strategy, sentences=[])


@pytest.mark.parametrize("strategy", ["left", "icr"])
def test_a_table_with_a_label_spelled_like_a_virtual_name(strategy, tmp_path):
    # read into arrays, binarized through Rule objects (decoder.binarize.binarize): the same store
    lines = EDGE_CASES + ["[X][<A>] q [X] ||| [X][<A>] r [S] ||| 0.5 ||| 0-0", "q [X] ||| r [<A>] ||| 0.5"]
    path = tmp_path / "rules.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert read_rule_arrays(path).labels_look_virtual()
    _build_both(path, tmp_path, strategy)


def test_binarize_takes_the_table_arrays(tmp_path):
    rules = random_grammar(400, seed=9)
    path = tmp_path / "rules.txt"
    write_rules(rules, path)
    table = read_rule_arrays(path)
    from_table = binarize(table, "icr", arrays=True)
    assert isinstance(from_table, BinaryRuleArrays) and from_table.source_rules is table
    from_rules = binarize(rules, "icr", arrays=True)
    for name in ("rule_lhs", "rule_child0", "rule_child1", "rule_target_offsets", "rule_target", "rule_carries",
                 "rule_origin", "symbol_kind", "symbol_canonical"):
        assert np.array_equal(getattr(from_table, name), getattr(from_rules, name)), name
    assert from_table.symbol_objects == from_rules.symbol_objects
    assert from_table.target_words == from_rules.target_words
    assert binarize(table, "icr").rules == binarize(rules, "icr").rules  # objects: the rows made Rules


def test_feature_names_are_required_on_both_paths(tmp_path):
    path = tmp_path / "rules.txt"
    write_rules(random_grammar(20, seed=1, n_features=3), path)
    for reference in (False, True):
        with pytest.raises(FeatureNamesError, match="3 score columns have no names"):
            build_store(path, tmp_path / "store", "left", reference=reference)
        with pytest.raises(FeatureNamesError, match="2 feature names"):
            build_store(path, tmp_path / "store", "left", feature_names=["a", "b"], reference=reference)


@pytest.mark.parametrize("strategy", ["left", "icr"])
def test_an_empty_table_on_both_paths(strategy, tmp_path):
    """A store without rules would fail every sentence: both paths refuse the table, naming it."""
    path = tmp_path / "rules.txt"
    path.write_text("\n  \n")
    for reference in (False, True):
        with pytest.raises(InputError, match=f"{path}: has no rules"):
            build_store(path, tmp_path / "store", strategy, reference=reference)
    assert not (tmp_path / "store").exists()
