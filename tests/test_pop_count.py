"""What the pop limit counts (SearchSettings.pop_count): "all" pops in one cube (one queue of partial edges,
for incremental search) per cell, or "real" (Moses' meaning: pops of complete rule applications) with the
binarization's virtual items in a cube (queue) of their own (virtual_pop_limit). Checked for cube pruning
and incremental search alike against the exported chart (every pop adds one edge, so the edges into a
cell's items of each kind are its pops of that kind), against exhaustive search with no limit, against
the exhaustive k-best for pruned searches, and against a search with another virtual budget (the real
pops of a cell whose cells below are the same are the same), for every binarization."""
import numpy as np
import pytest

from decoder.errors import SettingsError
from decoder.lm import LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.drivers import search_driver
from decoder.search.model import Weights
from decoder.settings import ExperimentalSettings, SearchSettings

from search_fixtures import (FEATURES, STRATEGIES, WEIGHTS_HEAVIER_LM as WEIGHTS, random_sentence,
                             write_random_store)
from search_fixtures import lm  # noqa: F401 (the fixture)


SEARCHES = ("cube", "incremental")  # the searches that take pop_count = "real" (decoder.settings)


def driver_of(search, store, lm, weights, **settings):
    return search_driver(search)(store, lm, weights, search=search, **settings)


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


@pytest.mark.parametrize("search", SEARCHES)
def test_real_pops_are_counted_apart_from_virtual_pops(store, lm, search):
    weights = Weights(FEATURES, WEIGHTS)
    virtual_pops = 0
    for seed in range(4):
        words = random_sentence(seed, 9)
        for pop_limit, virtual_limit in ((3, 2), (2, 5), (1, 1)):
            driver = driver_of(search, store, lm, weights, max_unary_depth=0, pop_limit=pop_limit,
                               pop_count="real", virtual_pop_limit=virtual_limit)
            real, virtual = pops_per_cell(driver.run(words).chart, driver)
            assert max(real.values(), default=0) <= pop_limit
            assert max(virtual.values(), default=0) <= virtual_limit
            virtual_pops += sum(virtual.values())
            shared = driver_of(search, store, lm, weights, max_unary_depth=0, pop_limit=pop_limit)
            real_all, virtual_all = pops_per_cell(shared.run(words).chart, shared)
            for cell in set(real_all) | set(virtual_all):
                assert real_all.get(cell, 0) + virtual_all.get(cell, 0) <= pop_limit
    if store.n_nonterminals > store.n_real_nonterminals:  # the binarization made virtual symbols
        assert virtual_pops > 0


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("seed", range(5))
def test_unlimited_real_pops_equal_exhaustive_search(store, lm, seed, search):
    """With no limit on either kind of pop, pop_count = "real" finds every derivation: the same k best
    scores as exhaustive search (and as pop_count = "all" with no limit)."""
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 6)
    results = []
    for options in ({"exhaustive": True}, {"pop_limit": 0, "pop_count": "real", "virtual_pop_limit": 0},
                    {"pop_limit": 0}):
        chart = driver_of(search if "pop_limit" in options else "cube", store, lm, weights, **options)
        result = chart.run(words)
        results.append([(round(h.score, 4), h.text) for h in chart.kbest(result, words, 8, unique=False)])
    for other in results[1:]:
        assert [score for score, _ in other] == pytest.approx([score for score, _ in results[0]], abs=1e-4)
    if results[0]:
        assert results[1][0][1] == results[0][0][1] or results[1][0][0] == pytest.approx(results[0][0][0], abs=1e-4)


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("seed", range(4))
def test_a_pruned_search_counting_real_pops_scores_its_derivations_exactly(store, lm, seed, search):
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 7)
    pruned = driver_of(search, store, lm, weights, pop_limit=2, pop_count="real", virtual_pop_limit=3)
    exact = ChartSearchDriver(store, lm, weights, exhaustive=True)
    every = {round(h.score, 4) for h in exact.kbest(exact.run(words), words, 10000, unique=False)}
    for hypothesis in pruned.kbest(pruned.run(words), words, 3, unique=False):
        assert round(hypothesis.score, 4) in every


@pytest.mark.parametrize("search", SEARCHES)
def test_the_real_pops_of_a_cell_do_not_depend_on_its_virtual_budget(store, lm, search):
    """The virtual and the real pops of a cell are two budgets: with another virtual_pop_limit, a cell
    whose cells below hold the same items makes the same real edges (the same rules and scores; under
    pop_count = "all" the virtual pops would take from them), while the virtual edges differ somewhere."""
    weights = Weights(FEATURES, WEIGHTS)
    checked_real_edges = virtual_differences = 0
    for seed in range(6):
        words = random_sentence(seed, 9)
        n1 = len(words) + 1
        for pop_limit, budgets in ((2, (1, 6)), (4, (2, 0))):
            contents = []
            for virtual_limit in budgets:
                driver = driver_of(search, store, lm, weights, max_unary_depth=0, pop_limit=pop_limit,
                                   pop_count="real", virtual_pop_limit=virtual_limit)
                chart = driver.run(words).chart
                # per cell (GOAL items apart): its items (symbol, score, LM state hash), and the edges into its
                # real and into its virtual items (rule, score), each sorted
                is_real = driver.grammar.arrays["symbol_is_real"]
                goal = driver.grammar.goal_symbol
                items, real_edges, virtual_edges = {}, {}, {}
                for t in range(len(chart["item_symbol"])):
                    symbol = int(chart["item_symbol"][t])
                    if symbol != goal:
                        items.setdefault(int(chart["item_cell"][t]), []).append(
                            (symbol, round(float(chart["item_score"][t]), 6), int(chart["item_hash"][t])))
                for e, head in enumerate(chart["edge_head"].tolist()):
                    symbol = int(chart["item_symbol"][head])
                    if symbol == goal:
                        continue
                    target = real_edges if is_real[symbol] else virtual_edges
                    target.setdefault(int(chart["item_cell"][head]), []).append(
                        (int(chart["edge_rule"][e]), round(float(chart["edge_score"][e]), 6)))
                contents.append(tuple({cell: sorted(values) for cell, values in table.items()}
                                      for table in (items, real_edges, virtual_edges)))
            (items_a, real_a, virtual_a), (items_b, real_b, virtual_b) = contents
            for i in range(n1):
                for j in range(i + 1, n1):
                    below = [k * n1 + m for k in range(i, j) for m in range(k + 1, j + 1) if (k, m) != (i, j)]
                    if all(items_a.get(cell) == items_b.get(cell) for cell in below):
                        assert real_a.get(i * n1 + j) == real_b.get(i * n1 + j), (seed, pop_limit, i, j)
                        checked_real_edges += len(real_a.get(i * n1 + j, []))
                    virtual_differences += virtual_a.get(i * n1 + j) != virtual_b.get(i * n1 + j)
    assert checked_real_edges > 0
    if store.n_nonterminals > store.n_real_nonterminals:  # the binarization made virtual symbols
        assert virtual_differences > 0


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
    assert SearchSettings().experimental.pop_count == "all"
    assert ExperimentalSettings(pop_count="real", virtual_pop_limit=0).virtual_pop_limit == 0
    for bad in ("virtual", "", None, 1):
        with pytest.raises(SettingsError, match="pop_count"):
            ExperimentalSettings(pop_count=bad)
    for bad in (-1, 2.5, "100", True):
        with pytest.raises(SettingsError, match="virtual_pop_limit"):
            ExperimentalSettings(virtual_pop_limit=bad)
    real = ExperimentalSettings(pop_count="real")
    assert SearchSettings(search="incremental", experimental=real).experimental.pop_count == "real"
    with pytest.raises(SettingsError, match="pop_count"):
        SearchSettings(experimental=real).replace(search="two-pass")
    with pytest.raises(SettingsError, match="pop_count"):
        SearchSettings(search="two-pass", experimental=real)


def test_pop_count_from_config_and_command_line(tmp_path):
    from decoder.cli.translate import add_arguments
    from decoder.config import load_config
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--experimental", "pop_count=real", "--experimental", "virtual_pop_limit=250"])
    assert dict(args.experimental) == {"pop_count": "real", "virtual_pop_limit": 250}
    with pytest.raises(SystemExit):
        parser.parse_args(["--experimental", "pop_count=some"])
    config = tmp_path / "config.toml"
    config.write_text('store = "s"\nlm = "l"\n[experimental]\npop_count = "real"\nvirtual_pop_limit = 50\n')
    loaded = load_config(str(config))
    assert (loaded.settings.experimental.pop_count, loaded.settings.experimental.virtual_pop_limit) == ("real", 50)
