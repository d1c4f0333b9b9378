"""How the compiled chart finds the binary rule keys of a cell's symbols (decoder._ext._chart): the wide
left symbols and each symbol's mask of them (pair_key_index) against brute force over the sorted keys
(their keys listed by right symbol: test_chart_shared.py); and the chart's rule groups, so the whole
chart, the same whichever left symbols are wide."""
import numpy as np
import pytest

from decoder._ext import compiled_module
from decoder.lm import LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.incremental import IncrementalSearchDriver
from decoder.search.model import SearchSpace, Weights

from search_fixtures import FEATURES, STRATEGIES, WEIGHTS, random_sentence, write_random_store
from search_fixtures import lm  # noqa: F401 (the fixture)

_chart_grammar = compiled_module("_chart_grammar")


def random_pair_keys(seed, n_symbols=120, n_left=80):
    """Sorted binary keys left * n_symbols + right, their offsets into a rule array (some keys with no
    rules, as a table limit leaves them) and the left symbols' ranges (pair_left_offsets)."""
    rng = np.random.default_rng(seed)
    keys = []
    for left in rng.choice(n_symbols, size=n_left, replace=False):
        n_keys = int(rng.choice([1, 2, 5, 9, 20, 45, 100]))
        rights = rng.choice(n_symbols, size=n_keys, replace=False)
        keys += [int(left) * n_symbols + int(b) for b in rights]
    keys = np.array(sorted(keys), dtype=np.int64)
    counts = rng.integers(0, 4, size=len(keys))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    left_offsets = np.searchsorted(keys, np.arange(n_symbols + 1, dtype=np.int64) * n_symbols).astype(np.int64)
    return keys, offsets, left_offsets, n_symbols


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_symbols, min_keys", [(64, 8), (64, 0), (5, 8), (0, 8), (64, 10**6)])
def test_wide_symbols_are_those_with_the_most_keys(seed, max_symbols, min_keys):
    keys, offsets, left_offsets, n_symbols = random_pair_keys(seed)
    wide = _chart_grammar.wide_left_symbols(left_offsets, max_symbols, min_keys).tolist()
    counts = np.diff(left_offsets).tolist()
    expected = sorted((a for a in range(n_symbols) if counts[a] > min_keys), key=lambda a: (-counts[a], a))
    assert wide == expected[:max_symbols]
    assert _chart_grammar.wide_left_symbols(left_offsets).tolist() == expected_default(counts)


def expected_default(counts):
    big = [a for a in range(len(counts)) if counts[a] > _chart_grammar.WIDE_MIN_KEYS]
    return sorted(big, key=lambda a: (-counts[a], a))[:_chart_grammar.MAX_WIDE_LEFT_SYMBOLS]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_wide", (0, 1, 7, 64))
def test_index_marks_exactly_the_keys_of_the_wide_symbols(seed, n_wide):
    keys, offsets, left_offsets, n_symbols = random_pair_keys(seed)
    rng = np.random.default_rng(100 + seed)
    wide = rng.choice(n_symbols, size=n_wide, replace=False).astype(np.int32)
    index = _chart_grammar.pair_key_index(keys, offsets, left_offsets, n_symbols, wide)
    assert index["symbol_wide_bit"].tolist() == [wide.tolist().index(a) if a in wide else -1 for a in range(n_symbols)]
    masks = [0] * n_symbols
    for q, key in enumerate(keys.tolist()):
        left, right = divmod(key, n_symbols)
        if offsets[q + 1] > offsets[q] and left in wide:
            masks[right] |= 1 << wide.tolist().index(left)
    assert index["symbol_right_mask"].tolist() == masks
    assert len(index["wide_rules"]) == sum(bin(m).count("1") for m in masks)


@pytest.mark.parametrize("seed", range(3))
def test_right_keys_give_each_key_its_right_child_and_rules(seed):
    keys, offsets, left_offsets, n_symbols = random_pair_keys(seed)
    right_keys = _chart_grammar.pair_right_keys(keys, offsets, n_symbols)
    assert len(right_keys) == len(keys) + 1 and right_keys["right"][-1] == -1
    for left in range(n_symbols):
        for q in range(left_offsets[left], left_offsets[left + 1]):
            assert left * n_symbols + right_keys["right"][q] == keys[q]
            lo, hi = right_keys["rules_lo"][q], right_keys["rules_lo"][q + 1]
            assert (lo, hi) == (offsets[q], offsets[q + 1])
    with pytest.raises(ValueError):
        _chart_grammar.pair_right_keys(keys, offsets[:-1], n_symbols)


def test_index_rejects_too_many_or_repeated_wide_symbols():
    keys, offsets, left_offsets, n_symbols = random_pair_keys(0)
    with pytest.raises(ValueError):
        _chart_grammar.pair_key_index(keys, offsets, left_offsets, n_symbols, np.arange(65, dtype=np.int32))
    with pytest.raises(ValueError):
        _chart_grammar.pair_key_index(keys, offsets, left_offsets, n_symbols, np.array([3, 3], dtype=np.int32))


def test_index_of_no_wide_symbol_lists_no_key():
    keys, offsets, left_offsets, n_symbols = random_pair_keys(0)
    index = _chart_grammar.pair_key_index(keys, offsets, left_offsets, n_symbols, np.zeros(0, np.int32))
    assert len(index["wide_rules"]) == 0 and not index["symbol_wide_offset"].any()
    assert not index["symbol_right_mask"].any() and (index["symbol_wide_bit"] == -1).all()


def charts(driver, sentences):
    out = []
    for words in sentences:
        result = driver.run(words)
        out.append((result.chart, result.roots.tolist(), result.stats["edges_proposed"]))
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("driver_class", (ChartSearchDriver, IncrementalSearchDriver))
def test_chart_is_the_same_whichever_left_symbols_are_wide(tmp_path, lm, seed, strategy, driver_class):
    """Every left symbol with keys wide (its right symbols found by their masks and the hash table),
    none (all found by galloping through its keys), the default and an arbitrary few: the same
    groups in the same order, so the same chart, edge for edge."""
    _, store = write_random_store(tmp_path, seed, strategy, FEATURES, n_rules=40, max_arity=4)
    driver = driver_class(store, lm, Weights(FEATURES, WEIGHTS), SearchSpace(max_unary_depth=2),
                          pop_limit=[0, 3, 20][seed % 3])
    sentences = [random_sentence(seed + k, 4 + (seed + k) % 5) for k in range(4)]
    expected = charts(driver, sentences)
    arrays = driver.grammar.arrays
    n_symbols = driver.grammar.n_symbols
    counts = np.diff(arrays["pair_left_offsets"])
    assert arrays["symbol_wide_bit"].tolist() == [
        expected_default(counts.tolist()).index(a) if a in expected_default(counts.tolist()) else -1
        for a in range(n_symbols)]
    with_keys = np.flatnonzero(counts > 0).astype(np.int32)
    rng = np.random.default_rng(seed)
    for wide in (with_keys[:64], with_keys[::-1][:64], np.zeros(0, np.int32),
                 rng.permutation(with_keys)[:3].astype(np.int32)):
        arrays.update(_chart_grammar.pair_key_index(arrays["pair_keys"], arrays["pair_offsets"], arrays["pair_left_offsets"],
                                            n_symbols, wide))
        driver.engine = driver._new_engine()
        got = charts(driver, sentences)
        for (chart, roots, proposed), (chart_expected, roots_expected, proposed_expected) in zip(got, expected):
            assert roots == roots_expected and proposed == proposed_expected
            for name, values in chart_expected.items():
                assert np.array_equal(chart[name], values, equal_nan=True), (wide, name)


def decoded_cells(driver, words):
    """Decode `words`; the cells (i, j) of the sentence."""
    driver.run(words)
    n = len(words)
    return [(i, j) for i in range(n) for j in range(i + 1, n + 1)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_cell_table_finds_exactly_its_right_symbols(tmp_path, lm, seed, strategy):
    """Each cell's table of its right symbols by symbol (find_right_slot, which a left symbol's keys
    look their right child up in): every symbol of the grammar is found at its row, or not at all."""
    _, store = write_random_store(tmp_path, seed, strategy, FEATURES, n_rules=40, max_arity=4)
    driver = ChartSearchDriver(store, lm, Weights(FEATURES, WEIGHTS), SearchSpace(max_unary_depth=2),
                               pop_limit=[0, 3, 20][seed % 3])
    symbols = list(range(driver.grammar.n_symbols)) + [driver.grammar.n_symbols + 5]
    checked = 0
    for k in range(3):
        words = random_sentence(seed + k, 4 + (seed + k) % 5)
        for i, j in decoded_cells(driver, words):
            rows = driver.engine.right_symbols_of_cell(i, j)
            row_of = {symbol: r for r, (symbol, _, _) in enumerate(rows)}
            assert len(row_of) == len(rows)
            assert driver.engine.find_right_symbols(i, j, symbols) == [row_of.get(s, -1) for s in symbols]
            checked += len(rows)
    assert checked > 0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_wide_pairs_of_a_cell_are_the_keys_with_rules_of_its_right_symbols(tmp_path, lm, seed, strategy):
    """A cell's WideList for a wide left symbol (found on first use, then kept for later splits): the
    keys (wide symbol, right symbol) with rules, from the sorted keys, for the cell's right symbols in
    order, with their rules' range and the right symbol's items. Every left symbol with keys wide."""
    _, store = write_random_store(tmp_path, seed, strategy, FEATURES, n_rules=40, max_arity=4)
    driver = ChartSearchDriver(store, lm, Weights(FEATURES, WEIGHTS), SearchSpace(max_unary_depth=2),
                               pop_limit=[0, 3, 20][seed % 3])
    arrays = driver.grammar.arrays
    n_symbols = driver.grammar.n_symbols
    with_keys = np.flatnonzero(np.diff(arrays["pair_left_offsets"]) > 0).astype(np.int32)[:64]
    arrays.update(_chart_grammar.pair_key_index(arrays["pair_keys"], arrays["pair_offsets"], arrays["pair_left_offsets"],
                                        n_symbols, with_keys))
    driver.engine = driver._new_engine()
    key_index = {int(key): k for k, key in enumerate(arrays["pair_keys"].tolist())}
    offsets = arrays["pair_offsets"].tolist()
    found = 0
    for k in range(3):
        words = random_sentence(seed + k, 4 + (seed + k) % 5)
        for i, j in decoded_cells(driver, words):
            rows = driver.engine.right_symbols_of_cell(i, j)
            for bit, a in enumerate(with_keys.tolist()):
                expected = []
                for b, list_lo, list_n in rows:
                    key = key_index.get(a * n_symbols + b)
                    if key is not None and offsets[key + 1] > offsets[key]:
                        expected.append((offsets[key], offsets[key + 1] - offsets[key], list_lo, list_n))
                got = driver.engine.wide_pairs_of_cell(i, j, bit, a)
                assert got == (expected if rows else None), (i, j, a)
                assert driver.engine.wide_pairs_of_cell(i, j, bit, a) == got  # kept, not found again
                found += len(expected)
    assert found > 0
    with pytest.raises(ValueError):
        driver.engine.wide_pairs_of_cell(0, 1, 64, 0)
    with pytest.raises(ValueError):
        driver.engine.right_symbols_of_cell(1, 1)
