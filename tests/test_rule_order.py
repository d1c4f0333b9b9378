"""The order cube pruning tries a key's rules in (SearchSettings.rule_order): the LM estimates against
the pure-Python ARPA reference, the sorted order, and the search's result where no pruning happens."""
import numpy as np
import pytest

from decoder.binarize import binarize
from decoder.errors import SettingsError
from decoder.lm import ArpaReference, LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.model import LM, Weights
from decoder.settings import ExperimentalSettings, SearchSettings
from decoder.store import GrammarStore, write_store

from search_fixtures import (FEATURES, WEIGHTS_HEAVIER_LM as WEIGHTS, lm_estimate, random_rules, random_sentence, write_arpa)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    arpa = write_arpa(tmp_path_factory.mktemp("lm"))
    return ArpaReference(arpa), LanguageModel(arpa)


@pytest.fixture(scope="module", params=("left", "icr", "monolingual"))
def store(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / request.param
    write_store(binarize(random_rules(7, n_rules=30, max_arity=3), request.param), path, feature_names=FEATURES)
    return GrammarStore.open(path)


def test_estimate_order_sorts_by_score_plus_weighted_lm_estimate(models, store):
    reference, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    grammar = ChartSearchDriver(store, lm, weights, rule_order="estimate").grammar
    estimates = np.array([lm_estimate(reference, store.target_side(r)) for r in range(len(store))])
    assert np.abs(estimates).max() > 0  # some rule has words: the estimate is tested
    expected = grammar.arrays["rule_score"] + weights[LM] * estimates
    assert grammar.rule_order_score == pytest.approx(expected, abs=1e-4)
    for rules, offsets in ((grammar.arrays["pair_rules_sorted"], grammar.arrays["pair_offsets"]),
                           (grammar.arrays["single_rules_sorted"], store.single_offsets)):
        for lo, hi in zip(offsets[:-1], offsets[1:]):
            assert np.all(np.diff(expected[rules[lo:hi]]) <= 1e-4)
    # "score": the rule score alone (the order before rule_order existed).
    by_score = ChartSearchDriver(store, lm, weights, rule_order="score").grammar
    assert by_score.rule_order_score.tolist() == by_score.arrays["rule_score"].tolist()


@pytest.mark.parametrize("seed", range(6))
def test_rule_order_does_not_change_an_unpruned_search(models, store, seed):
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 5)
    scores = []
    for rule_order in ("score", "estimate"):
        for options in ({"exhaustive": True}, {"pop_limit": 0}):
            chart = ChartSearchDriver(store, lm, weights, rule_order=rule_order, **options)
            result = chart.run(words)
            scores.append([h.score for h in chart.kbest(result, words, 5, unique=False)])
    for other in scores[1:]:
        assert other == pytest.approx(scores[0], abs=1e-4)


def test_rule_order_setting_is_checked():
    assert SearchSettings().replace(rule_order="score").experimental.rule_order == "score"
    for bad in ("lm", "", None, 1):
        with pytest.raises(SettingsError, match="rule_order"):
            ExperimentalSettings(rule_order=bad)
