"""The pair-key hash table of the compiled chart (decoder._ext._chart.pair_key_slots): every key it
holds found with its rules, every other key absent (against a search of the sorted keys), and the
chart's rule groups, so the whole chart, the same whichever left symbols' keys it holds."""
import numpy as np
import pytest

from decoder._ext import compiled_module
from decoder.lm import LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.incremental import IncrementalSearchDriver
from decoder.search.model import SearchSpace, Weights

from search_fixtures import random_sentence, write_arpa, write_random_store

_chart = compiled_module("_chart")

FEATURES = ["p1", "p2"]
WEIGHTS = {"p1": 0.7, "p2": 0.3, "lm": 1.0, "word_count": 0.4, "oov": -3.0, "glue": -0.6}


def random_pair_keys(seed, n_symbols=50, n_left=30):
    """Sorted binary keys left * n_symbols + right, their offsets into a rule array (some keys with no
    rules, as a table limit leaves them) and the left symbols' ranges (pair_left_offsets)."""
    rng = np.random.default_rng(seed)
    keys = []
    for left in rng.choice(n_symbols, size=n_left, replace=False):
        n_keys = int(rng.choice([1, 2, 5, 9, 20, 45]))
        rights = rng.choice(n_symbols, size=n_keys, replace=False)
        keys += [int(left) * n_symbols + int(b) for b in rights]
    keys = np.array(sorted(keys), dtype=np.int64)
    counts = rng.integers(0, 4, size=len(keys))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    left_offsets = np.searchsorted(keys, np.arange(n_symbols + 1, dtype=np.int64) * n_symbols).astype(np.int64)
    return keys, offsets, left_offsets, n_symbols


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("min_keys", (0, 2, 8, 10**6))
def test_table_finds_exactly_the_keys_of_left_symbols_with_many_keys(seed, min_keys):
    keys, offsets, left_offsets, n_symbols = random_pair_keys(seed)
    table = _chart.pair_key_slots(keys, offsets, left_offsets, min_keys)
    size = len(table)
    assert size & (size - 1) == 0
    held = int((table["key"] >= 0).sum())
    assert 2 * held <= size
    every_key = np.arange(n_symbols * n_symbols, dtype=np.int64)
    rules_lo, n_rules = _chart.lookup_pair_slots(table, every_key)
    for key in every_key.tolist():
        q = int(np.searchsorted(keys, key))
        left = key // n_symbols
        wanted = (q < len(keys) and keys[q] == key and offsets[q + 1] > offsets[q]
                  and left_offsets[left + 1] - left_offsets[left] > min_keys)
        if wanted:
            assert (rules_lo[key], n_rules[key]) == (offsets[q], offsets[q + 1] - offsets[q])
        else:
            assert (rules_lo[key], n_rules[key]) == (-1, 0)
    assert held == int((n_rules > 0).sum())


def test_empty_table_has_one_empty_slot():
    keys, offsets, left_offsets, _ = random_pair_keys(0)
    table = _chart.pair_key_slots(keys, offsets, left_offsets, 10**6)
    assert table["key"].tolist() == [-1]
    assert _chart.lookup_pair_slots(table, keys)[0].tolist() == [-1] * len(keys)


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    return LanguageModel(write_arpa(tmp_path_factory.mktemp("lm")))


def charts(driver, sentences):
    out = []
    for words in sentences:
        result = driver.run(words)
        out.append((result.chart, result.roots.tolist(), result.stats["edges_proposed"]))
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("strategy", ("left", "right", "icr", "monolingual"))
@pytest.mark.parametrize("driver_class", (ChartSearchDriver, IncrementalSearchDriver))
def test_chart_is_the_same_whichever_keys_the_table_holds(tmp_path, lm, seed, strategy, driver_class):
    """All keys in the table (every right symbol probed there), none (all searched in pair_keys) and
    the default: the same groups in the same order, so the same chart, edge for edge."""
    _, store = write_random_store(tmp_path, seed, strategy, FEATURES, n_rules=40, max_arity=4)
    driver = driver_class(store, lm, Weights(FEATURES, WEIGHTS), SearchSpace(max_unary_depth=2),
                          pop_limit=[0, 3, 20][seed % 3])
    sentences = [random_sentence(seed + k, 4 + (seed + k) % 5) for k in range(4)]
    expected = charts(driver, sentences)
    arrays = driver.grammar.arrays
    default_table = arrays["pair_slots"]
    assert arrays["pair_slots_min_keys"] == _chart.PAIR_SLOTS_MIN_KEYS
    for min_keys in (0, 1, 10**9):
        arrays["pair_slots"] = _chart.pair_key_slots(arrays["pair_keys"], arrays["pair_offsets"],
                                                     arrays["pair_left_offsets"], min_keys)
        arrays["pair_slots_min_keys"] = min_keys
        driver.engine = driver._new_engine()
        got = charts(driver, sentences)
        for (chart, roots, proposed), (chart_expected, roots_expected, proposed_expected) in zip(got, expected):
            assert roots == roots_expected and proposed == proposed_expected
            for name, values in chart_expected.items():
                assert np.array_equal(chart[name], values, equal_nan=True), (min_keys, name)
    arrays["pair_slots"] = default_table
