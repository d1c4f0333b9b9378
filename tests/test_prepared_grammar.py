"""The prepared grammar cache (decoder.search.prepared_grammar): a store opened again under the same
weights maps the arrays it prepared before, and they equal freshly prepared ones; other weights,
another LM file or a changed store miss; a damaged entry is prepared again; at most KEEP entries stay."""
from pathlib import Path

import numpy as np
import pytest

from decoder.lm import LanguageModel
from decoder.search import prepared_grammar
from decoder.search.driver import ChartSearchDriver
from decoder.search.model import Weights
from decoder.store import GrammarStore

from search_fixtures import FEATURES, WEIGHTS, random_sentence, write_arpa, write_random_store
from test_table_limit import crowded_rules


@pytest.fixture
def system(tmp_path, monkeypatch):
    """A store of crowded rules and an LM file, with every grammar cached however small."""
    monkeypatch.setattr(prepared_grammar, "MIN_CACHED_RULES", 0)
    from decoder.binarize import binarize
    from decoder.store import write_store

    rules = crowded_rules(5) + crowded_rules(6)
    write_store(binarize(rules, "icr"), tmp_path / "store", feature_names=FEATURES)
    arpa = write_arpa(tmp_path)
    return tmp_path / "store", arpa


def entries(store_path) -> list[str]:
    root = store_path / prepared_grammar.DIRECTORY
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


def driver(store_path, arpa, weights=WEIGHTS, **settings):
    return ChartSearchDriver(GrammarStore.open(store_path), LanguageModel(arpa), Weights(FEATURES, weights),
                             table_limit=settings.pop("table_limit", 2), **settings)


def test_second_open_maps_the_same_arrays(system):
    store_path, arpa = system
    first = driver(store_path, arpa)
    assert len(entries(store_path)) == 1
    second = driver(store_path, arpa)
    assert len(entries(store_path)) == 1
    assert first.grammar.arrays.keys() == second.grammar.arrays.keys()
    mapped = 0
    for name, array in first.grammar.arrays.items():
        other = second.grammar.arrays[name]
        np.testing.assert_array_equal(array, other, err_msg=name)
        assert array.dtype == other.dtype, name
        mapped += isinstance(other, np.memmap)
    assert mapped >= 8  # the weight-dependent arrays came from disk
    np.testing.assert_array_equal(first.grammar.table_limit.rules, second.grammar.table_limit.rules)
    np.testing.assert_array_equal(first.grammar.rule_order_score, second.grammar.rule_order_score)
    # and the search over them finds the same translations
    found = 0
    for seed in range(6):
        words = random_sentence(seed, 5)
        a, b = first.best(first.run(words), words), second.best(second.run(words), words)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.score == pytest.approx(b.score, abs=1e-9)
            assert (a.words, a.tree) == (b.words, b.tree)
            found += 1
    assert found


def test_other_weights_settings_or_lm_miss(system, tmp_path):
    store_path, arpa = system
    driver(store_path, arpa)
    changed = dict(WEIGHTS, **{FEATURES[0]: WEIGHTS.get(FEATURES[0], 1.0) + 0.5})
    driver(store_path, arpa, changed)
    assert len(entries(store_path)) == 2
    driver(store_path, arpa, table_limit=1)  # another setting: a third entry
    assert len(entries(store_path)) == 3
    for limit in range(2, 2 + prepared_grammar.KEEP):  # more than KEEP: the least recently used go
        driver(store_path, arpa, table_limit=limit)
    assert len(entries(store_path)) == prepared_grammar.KEEP
    # the same LM content in another file is another key (the file is part of it)
    copy = tmp_path / "copy.arpa"
    copy.write_bytes(Path(arpa).read_bytes())
    before = set(entries(store_path))
    driver(store_path, str(copy), table_limit=1)
    assert set(entries(store_path)) != before


def test_a_damaged_entry_is_prepared_again(system):
    store_path, arpa = system
    fresh = driver(store_path, arpa)
    (entry,) = entries(store_path)
    victim = store_path / prepared_grammar.DIRECTORY / entry / "rule_score.npy"
    victim.write_bytes(victim.read_bytes()[:-8])  # truncated
    with pytest.warns(RuntimeWarning, match="prepared grammar unreadable"):
        again = driver(store_path, arpa)
    np.testing.assert_array_equal(fresh.grammar.arrays["rule_score"], again.grammar.arrays["rule_score"])
    assert entries(store_path) == [entry]  # written anew
    driver(store_path, arpa)  # and now read without a warning


def test_an_unwritable_cache_is_prepared_in_memory(system):
    store_path, arpa = system
    (store_path / prepared_grammar.DIRECTORY).write_text("not a directory")  # mkdir fails, as read-only would
    first = driver(store_path, arpa)
    second = driver(store_path, arpa)
    np.testing.assert_array_equal(first.grammar.arrays["rule_score"], second.grammar.arrays["rule_score"])
    assert not isinstance(second.grammar.arrays["rule_score"], np.memmap)


def test_incremental_search_caches_its_records_beside_the_grammar(system):
    from decoder.search.incremental import IncrementalSearchDriver

    store_path, arpa = system

    def incremental():
        return IncrementalSearchDriver(GrammarStore.open(store_path), LanguageModel(arpa), Weights(FEATURES, WEIGHTS),
                                       table_limit=2)

    first = incremental()
    assert len(entries(store_path)) == 2  # the grammar's entry and the search's records
    second = incremental()
    assert len(entries(store_path)) == 2
    assert isinstance(second.records["sorted_rules"], np.memmap)
    np.testing.assert_array_equal(first.records["sorted_rules"],
                                  second.records["sorted_rules"])
    for seed in range(4):
        words = random_sentence(seed, 5)
        a, b = first.best(first.run(words), words), second.best(second.run(words), words)
        assert (a is None) == (b is None) and (a is None or (a.words, a.score) == (b.words, b.score))


def test_small_grammars_are_not_cached(tmp_path):
    _, store = write_random_store(tmp_path, 1, "icr", FEATURES)
    assert len(store) < prepared_grammar.MIN_CACHED_RULES
    ChartSearchDriver(store, LanguageModel(write_arpa(tmp_path)), Weights(FEATURES, WEIGHTS))
    assert not (prepared_grammar.cache_root(store)).exists()


def test_the_cache_is_not_part_of_the_store_checksum(system):
    """`cky train` checks its outputs by checksum: translating with a system must not make its
    store look changed (decoder.train.stages.Checksums)."""
    from decoder.train.stages import Checksums

    store_path, arpa = system
    before = Checksums().of(store_path)
    driver(store_path, arpa)
    assert entries(store_path)
    assert Checksums().of(store_path) == before
    (store_path / "meta.json").write_text((store_path / "meta.json").read_text() + " ")
    assert Checksums().of(store_path) != before  # the store's own files still count
