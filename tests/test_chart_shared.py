"""What both chart searches share per cell and per sentence (decoder._ext._chart), against independent answers:
the wide keys listed by right symbol (pair_key_index's wide_rules) against the sorted keys, a cell's filter and
table of its right symbols against its list of them, and the per-cell counts of the stats (chart_cells) against
numpy over the exported chart."""
import numpy as np
import pytest

from decoder._ext import compiled_module
from decoder.search.driver import ChartSearchDriver
from decoder.search.incremental import IncrementalSearchDriver
from decoder.search.model import SearchSpace, Weights

from search_fixtures import FEATURES, STRATEGIES, WEIGHTS, random_sentence, write_random_store
from search_fixtures import lm  # noqa: F401 (the fixture)
from test_pair_slots import decoded_cells, random_pair_keys

_chart_grammar = compiled_module("_chart_grammar")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_wide", (0, 1, 7, 64))
def test_wide_rules_list_each_right_symbols_keys_with_wide_symbols_in_bit_order(seed, n_wide):
    """Key (wide symbol k, b) with rules is at symbol_wide_offset[b] + (bits of b's mask below k), with its
    range of rules; b's entries are exactly its keys with wide symbols that have rules, in bit order."""
    keys, offsets, left_offsets, n_symbols = random_pair_keys(seed)
    rng = np.random.default_rng(200 + seed)
    wide = rng.choice(n_symbols, size=n_wide, replace=False).astype(np.int32).tolist()
    index = _chart_grammar.pair_key_index(keys, offsets, left_offsets, n_symbols, np.array(wide, dtype=np.int32))
    start = index["symbol_wide_offset"].tolist()
    rules = index["wide_rules"]
    assert len(start) == n_symbols + 1 and start[0] == 0 and start[-1] == len(rules)
    found = 0
    for b in range(n_symbols):
        expected = []
        for k, a in enumerate(wide):  # bit order
            q = int(np.searchsorted(keys, a * n_symbols + b))
            if q < len(keys) and keys[q] == a * n_symbols + b and offsets[q + 1] > offsets[q]:
                expected.append((int(offsets[q]), int(offsets[q + 1] - offsets[q])))
        got = [(int(r["rules_lo"]), int(r["n_rules"])) for r in rules[start[b]:start[b + 1]]]
        assert got == expected, b
        mask = int(index["symbol_right_mask"][b])
        assert bin(mask).count("1") == len(expected)
        for k in range(len(wide)):
            if mask >> k & 1:
                rank = bin(mask & ((1 << k) - 1)).count("1")
                assert got[rank] == expected[[j for j in range(len(wide)) if mask >> j & 1].index(k)]
        found += len(expected)
    n_wide_keys = sum(1 for q, key in enumerate(keys.tolist()) if key // n_symbols in wide and offsets[q + 1] > offsets[q])
    assert found == n_wide_keys


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_key_finds_its_right_childs_items_through_the_cells_filter_and_table(tmp_path, lm, seed, strategy):
    """As _add_binary_groups looks a key's right child up in a cell (its 512-bit filter, then its table): every
    right symbol of the cell gives its own item list, any other symbol (of the grammar, or beyond it) none."""
    _, store = write_random_store(tmp_path, seed, strategy, FEATURES, n_rules=40, max_arity=4)
    driver = ChartSearchDriver(store, lm, Weights(FEATURES, WEIGHTS), SearchSpace(max_unary_depth=2),
                               pop_limit=[0, 3, 20][seed % 3])
    symbols = list(range(driver.grammar.n_symbols)) + [driver.grammar.n_symbols + 5, 2**31 - 1]
    checked = 0
    for k in range(3):
        words = random_sentence(seed + k, 4 + (seed + k) % 5)
        for i, j in decoded_cells(driver, words):
            lists = {symbol: (list_lo, list_n) for symbol, list_lo, list_n in driver.engine.right_symbols_of_cell(i, j)}
            assert driver.engine.right_lists_of_cell(i, j, symbols) == [lists.get(s) for s in symbols]
            checked += len(lists)
    assert checked > 0


def chart_cells_by_numpy(items_in_cells, chart, goal_symbol):
    """The stats' chart_cells as the driver computed them before the engine did (the reference)."""
    n1 = items_in_cells.shape[0]
    heads = chart["edge_head"]
    kept = (chart["item_alive"][heads] != 0) & (chart["item_symbol"][heads] != goal_symbol)
    edges_in_cells = np.bincount(chart["item_cell"][heads[kept]], minlength=n1 * n1).reshape(n1, n1)
    starts, ends = np.nonzero(items_in_cells)
    return np.stack([starts, ends - starts, items_in_cells[starts, ends], edges_in_cells[starts, ends]],
                    axis=1).astype(np.int64).tolist()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("driver_class", (ChartSearchDriver, IncrementalSearchDriver))
def test_chart_cells_count_the_items_and_the_edges_into_alive_items_of_each_cell(tmp_path, lm, seed, driver_class):
    _, store = write_random_store(tmp_path, seed, STRATEGIES[seed % len(STRATEGIES)], FEATURES, n_rules=40,
                                  max_arity=4)
    driver = driver_class(store, lm, Weights(FEATURES, WEIGHTS), SearchSpace(max_unary_depth=2),
                          pop_limit=[0, 3, 20][seed % 3], beam_size=[0, 2][seed % 2])
    cells = 0
    for k in range(4):
        words = random_sentence(seed + k, 3 + (seed + k) % 6)
        result = driver.run(words)
        expected = chart_cells_by_numpy(driver.engine.items_per_cell(), result.chart, driver.grammar.goal_symbol)
        assert result.stats["chart_cells"] == expected
        cells += len(expected)
    assert cells > 0


@pytest.mark.parametrize("seed", range(8))
def test_entries_sort_by_class_then_best_score_then_id(seed):
    """cky_sort_entries (a cell's items, rule groups, trie children), through sort_rules_by_score: groups of
    every size (std::sort's insertion sort below 16 entries, introsort above), many equal scores and classes,
    -0.0 beside 0.0 (equal: the id decides), infinities; against Python's sort of (class, -score, id)."""
    rng = np.random.default_rng(seed)
    n_rules = 3000
    scores = rng.choice([-np.inf, -3.5, -1.0, -0.0, 0.0, 0.25, 7.0, np.inf], size=n_rules)
    scores = np.where(rng.random(n_rules) < 0.4, np.round(rng.normal(size=n_rules), 1), scores)
    classes = rng.integers(-2, 3, size=n_rules).astype(np.int32)
    sizes = rng.choice([0, 1, 2, 5, 15, 16, 17, 40, 200], size=60)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rules = rng.integers(0, n_rules, size=offsets[-1]).astype(np.int32)  # a rule may repeat: equal entries
    got = _chart_grammar.sort_rules_by_score(rules, offsets, scores, classes).tolist()
    for g in range(len(sizes)):
        group = rules[offsets[g]:offsets[g + 1]].tolist()
        expected = sorted(group, key=lambda r: (classes[r], -scores[r], r))
        assert got[offsets[g]:offsets[g + 1]] == expected, g
