"""The rule-table limit (decoder.search.table_limit) against brute force on random tiny grammars:
the rules kept per source side, the binary rules kept with them, and decoding with the limit
equal to decoding a store compiled from the kept rules alone."""
import math
import random
from collections import defaultdict

import pytest

from decoder.binarize import binarize
from decoder.errors import SettingsError
from decoder.lm import ArpaReference, LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.model import LM, WORD_COUNT, SearchSpace, Weights
from decoder.search.reference import ReferenceDecoder
from decoder.settings import ExperimentalSettings, SearchSettings
from decoder.store import GrammarStore, write_store
from decoder.grammar import Rule

from search_fixtures import (FEATURES, LABELS, SOURCE_WORDS, STRATEGIES, TARGET_WORDS, WEIGHTS, lm_estimate,
                             random_sentence, random_source, write_arpa)


def crowded_rules(seed: int, n_sides: int = 6) -> list[Rule]:
    """Rules over a few source sides with many rules each (different lhs, target orders and
    words), so that a table limit has something to drop; scores are distinct."""
    rng = random.Random(seed)
    rules = []
    sides = [((word,), ()) for word in SOURCE_WORDS[:3]]
    while len(sides) < n_sides:
        arity = rng.randint(1, 3)
        source = random_source(rng, arity, 0.4)
        labels = tuple(rng.choice(LABELS) for _ in range(arity))
        if (tuple(source), labels) not in sides:
            sides.append((tuple(source), labels))
    for source, labels in sides:
        arity = len(labels)
        for _ in range(rng.randint(1, 7)):
            order = list(range(arity))
            rng.shuffle(order)
            target = []
            for slot in order + [None]:
                if rng.random() < 0.4 or (arity == 0 and not target):
                    target.append(rng.choice(TARGET_WORDS))
                if slot is not None:
                    target.append(slot)
            scores = tuple(rng.uniform(0.05, 1.0) for _ in FEATURES)
            rules.append(Rule(rng.choice(LABELS), source, tuple(target), labels, scores))
    return rules


def expected_kept(rules: list[Rule], weights: Weights, limit: int, reference: ArpaReference | None = None) -> set[int]:
    """Brute force: group by source side (words and labels), rank by weights . log scores +
    word-count weight * target words (+ LM weight * the LM estimate of the target words, given the
    `reference` LM: rule_order "estimate"; ties: the earlier rule), keep the first `limit`."""
    sides = defaultdict(list)
    for index, rule in enumerate(rules):
        side = tuple(s if isinstance(s, str) else "[" + rule.labels[s] + "]" for s in rule.source)
        score = sum(weights[name] * math.log(value) for name, value in zip(FEATURES, rule.scores))
        score += weights[WORD_COUNT] * sum(isinstance(t, str) for t in rule.target)
        if reference is not None:
            score += weights[LM] * lm_estimate(reference, rule.target)
        sides[side].append((-score, index))
    return {index for ranked in sides.values() for _, index in sorted(ranked)[:limit]}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    arpa = write_arpa(tmp_path_factory.mktemp("lm"))
    return ArpaReference(arpa), LanguageModel(arpa)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """(rules, strategy, name) -> (BinaryGrammar, GrammarStore), made on first use."""
    directory = tmp_path_factory.mktemp("stores")
    cache = {}

    def get(rules, strategy, name):
        if name not in cache:
            grammar = binarize(rules, strategy)
            write_store(grammar, directory / name, feature_names=FEATURES)
            cache[name] = (grammar, GrammarStore.open(directory / name))
        return cache[name]

    return get


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("limit", (1, 2, 3))
@pytest.mark.parametrize("rank", ("score", "estimate"))
def test_limit_keeps_the_best_rules_of_each_source_side(models, stores, seed, strategy, limit, rank):
    reference, lm = models
    rules = crowded_rules(seed)
    grammar, store = stores(rules, strategy, f"{seed}-{strategy}")
    weights = Weights(FEATURES, WEIGHTS)
    chart = ChartSearchDriver(store, lm, weights, table_limit=limit, table_limit_rank=rank)
    kept = chart.grammar.table_limit
    expected = expected_kept(rules, weights, limit, reference if rank == "estimate" else None)
    assert set(kept.source_rules.nonzero()[0].tolist()) == expected
    assert len(expected) < len(rules)  # the limit dropped something: the test can fail

    # Binary rules: every rule of a kept source rule's binarization, and nothing else but rules
    # defining the same virtual symbols (the store keeps no per-rule binarization).
    store_id = {store.binary_rule(r): r for r in range(len(store))}
    used = {store_id[grammar.rules[b]] for i in expected for b in grammar.binarizations[i]}
    kept_rules = set(kept.rules.nonzero()[0].tolist())
    assert used <= kept_rules
    used_symbols = {int(store.rule_lhs[r]) for r in used}
    for r in kept_rules - used:
        assert store.rule_origin[r] < 0 and int(store.rule_lhs[r]) in used_symbols
    # The search sees only the kept rules.
    arrays = chart.grammar.arrays
    searched = set(arrays["pair_rules_sorted"].tolist()) | set(arrays["single_rules_sorted"].tolist())
    assert searched == kept_rules


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_limit_zero_or_large_keeps_all(models, stores, strategy):
    _, lm = models
    rules = crowded_rules(3)
    _, store = stores(rules, strategy, f"3-{strategy}")
    weights = Weights(FEATURES, WEIGHTS)
    for limit in (0, 7):  # 7: the most rules any source side has
        kept = ChartSearchDriver(store, lm, weights, table_limit=limit).grammar.table_limit
        assert kept.rules.all() and kept.source_rules.all()


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ("left", "icr", "monolingual"))
@pytest.mark.parametrize("rank", ("score", "estimate"))
def test_decoding_with_a_limit_equals_decoding_the_kept_rules(models, stores, seed, strategy, rank):
    """Exhaustive search with table_limit=N equals the reference decoder over a grammar of only the
    brute-force-chosen rules; table_limit=0 equals it over every rule (decoding unchanged)."""
    reference_lm, lm = models
    rules = crowded_rules(seed)
    grammar, store = stores(rules, strategy, f"{seed}-{strategy}")
    weights = Weights(FEATURES, WEIGHTS)
    space = SearchSpace(max_span=20, max_unary_depth=2)
    words = random_sentence(seed, 3 + seed % 3)
    for limit in (0, 1, 2):
        ranking = reference_lm if rank == "estimate" else None
        chosen = rules if limit == 0 else [rules[i] for i in sorted(expected_kept(rules, weights, limit, ranking))]
        expected = ReferenceDecoder(binarize(chosen, strategy), reference_lm, weights, space).decode(words, k=6)
        chart = ChartSearchDriver(store, lm, weights, space, exhaustive=True, table_limit=limit,
                                  table_limit_rank=rank)
        result = chart.run(words)
        assert chart.best(result, words).score == pytest.approx(expected.best.score, abs=1e-4)
        assert [h.score for h in chart.kbest(result, words, 6, unique=False)] == \
            pytest.approx([d.score for d in expected.kbest], abs=1e-4)


def test_configure_changes_the_limit(models, stores):
    """configure(table_limit=...) prepares the grammar again: the same as a driver made with it."""
    _, lm = models
    rules = crowded_rules(5)
    _, store = stores(rules, "icr", "5-icr")
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(5, 5)
    chart = ChartSearchDriver(store, lm, weights, table_limit=0, pop_limit=3)
    unlimited = chart.best(chart.run(words), words).score
    chart.configure(table_limit=1)
    fresh = ChartSearchDriver(store, lm, weights, table_limit=1, pop_limit=3)
    assert chart.grammar.table_limit.rules.tolist() == fresh.grammar.table_limit.rules.tolist()
    assert chart.best(chart.run(words), words).score == pytest.approx(fresh.best(fresh.run(words), words).score)
    chart.configure(table_limit=0)
    assert chart.best(chart.run(words), words).score == pytest.approx(unlimited)


def test_table_limit_setting_is_checked():
    assert SearchSettings().table_limit == 20
    assert SearchSettings().experimental.table_limit_rank == "estimate"  # score plus LM estimate, as Moses
    for bad in ("lm", "", None):
        with pytest.raises(SettingsError, match="table_limit_rank"):
            ExperimentalSettings(table_limit_rank=bad)
    assert SearchSettings(table_limit=0).table_limit == 0
    for bad in (-1, 2.5, True, "20"):
        with pytest.raises(SettingsError, match="table_limit"):
            SearchSettings(table_limit=bad)
