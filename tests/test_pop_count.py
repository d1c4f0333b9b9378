"""What cube pruning's pop limit counts (SearchSettings.pop_count): "all" pops in one cube per cell, or
"real" (Moses' meaning: pops of complete rule applications) with the binarization's virtual items in a
cube of their own (virtual_pop_limit). Checked against the exported chart (every pop adds one edge, so
the edges into a cell's items of each kind are its pops of that kind), against exhaustive search with
no limit, and against the exhaustive k-best for pruned searches, for every binarization."""
import numpy as np
import pytest

from decoder.errors import SettingsError
from decoder.lm import LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.model import Weights
from decoder.settings import SearchSettings

from search_fixtures import (FEATURES, STRATEGIES, WEIGHTS_HEAVIER_LM as WEIGHTS, random_sentence,
                             write_random_store)
from search_fixtures import lm  # noqa: F401 (the fixture)


@pytest.fixture(scope="module", params=STRATEGIES)
def store(request, tmp_path_factory):
    return write_random_store(tmp_path_factory.mktemp("store"), 23, request.param, FEATURES, n_rules=60, max_arity=4)[1]


def pops_per_cell(chart, driver) -> tuple[dict, dict]:
    """{cell: pops} on real and on virtual items (GOAL items apart), from the exported chart: one
    edge per pop (max_unary_depth 0: one round per cell)."""
    heads = chart["edge_head"]
    symbols = chart["item_symbol"][heads]
    cells = chart["item_cell"][heads]
    goal = driver.grammar.goal_symbol
    real = driver.grammar.arrays["symbol_is_real"][symbols].astype(bool)
    out_real, out_virtual = {}, {}
    for cell, symbol, is_real in zip(cells.tolist(), symbols.tolist(), real.tolist()):
        if symbol == goal:
            continue
        target = out_real if is_real else out_virtual
        target[cell] = target.get(cell, 0) + 1
    return out_real, out_virtual


def test_real_pops_are_counted_apart_from_virtual_pops(store, lm):
    weights = Weights(FEATURES, WEIGHTS)
    virtual_pops = 0
    for seed in range(4):
        words = random_sentence(seed, 9)
        for pop_limit, virtual_limit in ((3, 2), (2, 5), (1, 1)):
            driver = ChartSearchDriver(store, lm, weights, max_unary_depth=0, pop_limit=pop_limit,
                                       pop_count="real", virtual_pop_limit=virtual_limit)
            real, virtual = pops_per_cell(driver.run(words).chart, driver)
            assert max(real.values(), default=0) <= pop_limit
            assert max(virtual.values(), default=0) <= virtual_limit
            virtual_pops += sum(virtual.values())
            shared = ChartSearchDriver(store, lm, weights, max_unary_depth=0, pop_limit=pop_limit)
            real_all, virtual_all = pops_per_cell(shared.run(words).chart, shared)
            for cell in set(real_all) | set(virtual_all):
                assert real_all.get(cell, 0) + virtual_all.get(cell, 0) <= pop_limit
    if store.n_nonterminals > store.n_real_nonterminals:  # the binarization made virtual symbols
        assert virtual_pops > 0


@pytest.mark.parametrize("seed", range(5))
def test_unlimited_real_pops_equal_exhaustive_search(store, lm, seed):
    """With no limit on either kind of pop, pop_count = "real" finds every derivation: the same k best
    scores as exhaustive search (and as pop_count = "all" with no limit)."""
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 6)
    results = []
    for options in ({"exhaustive": True}, {"pop_limit": 0, "pop_count": "real", "virtual_pop_limit": 0},
                    {"pop_limit": 0}):
        chart = ChartSearchDriver(store, lm, weights, **options)
        result = chart.run(words)
        results.append([(round(h.score, 4), h.text) for h in chart.kbest(result, words, 8, unique=False)])
    for other in results[1:]:
        assert [score for score, _ in other] == pytest.approx([score for score, _ in results[0]], abs=1e-4)
    if results[0]:
        assert results[1][0][1] == results[0][0][1] or results[1][0][0] == pytest.approx(results[0][0][0], abs=1e-4)


@pytest.mark.parametrize("seed", range(4))
def test_a_pruned_search_counting_real_pops_scores_its_derivations_exactly(store, lm, seed):
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 7)
    pruned = ChartSearchDriver(store, lm, weights, pop_limit=2, pop_count="real", virtual_pop_limit=3)
    exact = ChartSearchDriver(store, lm, weights, exhaustive=True)
    every = {round(h.score, 4) for h in exact.kbest(exact.run(words), words, 10000, unique=False)}
    for hypothesis in pruned.kbest(pruned.run(words), words, 3, unique=False):
        assert round(hypothesis.score, 4) in every


def test_the_rules_of_a_key_come_real_first_when_real_pops_are_counted(store, lm):
    """The search splits a group where its rules turn virtual (bisection): the sorted rule arrays must
    hold each key's real-lhs rules first, each part in the rule order of pop_count = "all"."""
    weights = Weights(FEATURES, WEIGHTS)
    shared = ChartSearchDriver(store, lm, weights).grammar
    split = ChartSearchDriver(store, lm, weights, pop_count="real").grammar
    is_real = split.arrays["symbol_is_real"]
    lhs = split.arrays["rule_lhs"]
    offsets = split.arrays["pair_offsets"]
    assert np.array_equal(offsets, shared.arrays["pair_offsets"])
    for k in range(len(offsets) - 1):
        a = shared.arrays["pair_rules_sorted"][offsets[k]:offsets[k + 1]].tolist()
        b = split.arrays["pair_rules_sorted"][offsets[k]:offsets[k + 1]].tolist()
        kinds = [int(is_real[lhs[r]]) for r in b]
        assert kinds == sorted(kinds, reverse=True)
        assert b == [r for r in a if is_real[lhs[r]]] + [r for r in a if not is_real[lhs[r]]]


def test_pop_count_settings_are_checked():
    assert SearchSettings().pop_count == "all"
    assert SearchSettings(pop_count="real", virtual_pop_limit=0).virtual_pop_limit == 0
    for bad in ("virtual", "", None, 1):
        with pytest.raises(SettingsError, match="pop_count"):
            SearchSettings(pop_count=bad)
    for bad in (-1, 2.5, "100", True):
        with pytest.raises(SettingsError, match="virtual_pop_limit"):
            SearchSettings(virtual_pop_limit=bad)
    with pytest.raises(SettingsError, match="pop_count"):
        SearchSettings(pop_count="real", search="incremental")
    with pytest.raises(SettingsError, match="pop_count"):
        SearchSettings(pop_count="real").replace(search="two-pass")


def test_pop_count_from_config_and_command_line(tmp_path):
    from decoder.cli.translate import OVERRIDING_FLAGS, add_arguments
    from decoder.config import load_config
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--pop-count", "real", "--virtual-pop-limit", "250"])
    assert (args.pop_count, args.virtual_pop_limit) == ("real", 250)
    assert {"pop_count", "virtual_pop_limit"} <= set(OVERRIDING_FLAGS)
    with pytest.raises(SystemExit):
        parser.parse_args(["--pop-count", "some"])
    config = tmp_path / "config.toml"
    config.write_text('store = "s"\nlm = "l"\npop_count = "real"\nvirtual_pop_limit = 50\n')
    loaded = load_config(str(config))
    assert (loaded.settings.pop_count, loaded.settings.virtual_pop_limit) == ("real", 50)
