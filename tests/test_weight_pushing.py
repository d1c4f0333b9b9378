"""Weight pushing onto virtual symbols (SearchSettings.weight_pushing, decoder.search.weight_pushing):
each virtual symbol's pushed amount against a direct recursion over the rules, and searches without
pruning unchanged for every binarization (pushing moves score between rules, never changes a
complete derivation's)."""
import json

import numpy as np
import pytest

from decoder.errors import SettingsError
from decoder.lm import LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.model import Weights
from decoder.search.weight_pushing import pushed_rule_scores
from decoder.settings import ExperimentalSettings, SearchSettings

from search_fixtures import (FEATURES, STRATEGIES, WEIGHTS_HEAVIER_LM as WEIGHTS, random_sentence,
                             write_random_store)
from search_fixtures import lm  # noqa: F401 (the fixture)


@pytest.fixture(scope="module", params=STRATEGIES)
def store(request, tmp_path_factory):
    return write_random_store(tmp_path_factory.mktemp("store"), 11, request.param, FEATURES, n_rules=40, max_arity=4)[1]


def best_completions(store, score, kept) -> dict:
    """best(v) for each virtual symbol v by recursion: the best, over kept rules with v as a child, of
    `score` (real lhs: the rule's score plus its words' weighted LM estimate) or of best(its virtual lhs)."""
    virtual = {s for s in range(store.n_nonterminals) if store.symbol_is_virtual[s]}
    users: dict = {}
    for r in range(len(store)):
        if kept[r]:
            for child in (int(store.rule_child0[r]), int(store.rule_child1[r])):
                if child in virtual:
                    users.setdefault(child, []).append(r)
    memo: dict = {}

    def best(v):
        if v not in memo:
            values = [best(int(store.rule_lhs[r])) if int(store.rule_lhs[r]) in virtual else score[r]
                      for r in users.get(v, [])]
            memo[v] = max(values) if values else 0.0
        return memo[v]

    return {v: best(v) for v in virtual}


# a word bonus larger than the LM's cost of most words: the completion with the most words has the
# best rule score, and only the LM estimate of its words says that it is not the best completion
HEAVY_WORD_BONUS = dict(WEIGHTS, word_count=4.0)


@pytest.mark.parametrize("weights", [WEIGHTS, HEAVY_WORD_BONUS], ids=["weights", "heavy-word-bonus"])
def test_each_virtual_symbol_moves_its_best_completion(store, lm, weights):
    grammar = ChartSearchDriver(store, lm, Weights(FEATURES, weights), weight_pushing=False).grammar
    base, kept = grammar.arrays["rule_score"], grammar.table_limit.rules
    # the unpushed grammar orders rules by score + weighted LM estimate of their words (rule_order "estimate")
    estimate = np.nan_to_num(grammar.rule_order_score - base, nan=0.0)
    best = best_completions(store, base + estimate, kept)
    expected = base.copy()
    for r in range(len(store)):
        if not kept[r]:
            continue
        lhs = int(store.rule_lhs[r])
        expected[r] += best.get(lhs, 0.0)
        for child in (int(store.rule_child0[r]), int(store.rule_child1[r])):
            expected[r] -= best.get(child, 0.0)
    pushed = pushed_rule_scores(store, base, kept, estimate)
    assert pushed[kept] == pytest.approx(expected[kept], abs=1e-9)
    if best:  # the store has virtual symbols: pushing moved something
        assert np.abs(pushed - base).max() > 1e-6
    pushed_grammar = ChartSearchDriver(store, lm, Weights(FEATURES, weights), weight_pushing=True).grammar
    assert pushed_grammar.arrays["rule_score"][kept] == pytest.approx(expected[kept], abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_pushing_does_not_change_an_unpruned_search(store, lm, seed):
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 6)
    results = []
    for pushing in (False, True):
        for options in ({"exhaustive": True}, {"pop_limit": 0}):
            chart = ChartSearchDriver(store, lm, weights, weight_pushing=pushing, **options)
            result = chart.run(words)
            results.append([(round(h.score, 4), h.text) for h in chart.kbest(result, words, 5, unique=False)])
    for other in results[1:]:
        assert [score for score, _ in other] == pytest.approx([score for score, _ in results[0]], abs=1e-4)
    assert results[2][0][1] == results[0][0][1]


@pytest.mark.parametrize("seed", range(4))
def test_a_pruned_search_with_pushing_scores_its_derivation_exactly(store, lm, seed):
    """With pruning the derivations found may differ, but each one's score and output are that same
    derivation's in the unpushed exhaustive search (scores read back from the store's features, which
    pushing never touches). The exhaustive list holds every derivation of the sentence (fewer than it
    was asked for), each once."""
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 7)
    pushed = ChartSearchDriver(store, lm, weights, weight_pushing=True, pop_limit=2)
    exact = ChartSearchDriver(store, lm, weights, weight_pushing=False, exhaustive=True)
    best = pushed.kbest(pushed.run(words), words, 3, unique=False)
    every = exact.kbest(exact.run(words), words, 10000, unique=False)
    assert 0 < len(every) < 10000
    by_derivation = {json.dumps(h.derivation, sort_keys=True): h for h in every}
    assert len(by_derivation) == len(every)
    for hypothesis in best:
        same = by_derivation[json.dumps(hypothesis.derivation, sort_keys=True)]
        assert hypothesis.score == pytest.approx(same.score, abs=1e-5)
        assert hypothesis.words == same.words and hypothesis.features == pytest.approx(same.features, abs=1e-5)


def test_weight_pushing_setting_is_checked():
    assert ExperimentalSettings(weight_pushing=True).weight_pushing is True
    assert SearchSettings().experimental.weight_pushing is True  # the default
    assert SearchSettings().replace(weight_pushing=False).experimental.weight_pushing is False
    for bad in ("true", 1, None):
        with pytest.raises(SettingsError, match="weight_pushing"):
            ExperimentalSettings(weight_pushing=bad)
