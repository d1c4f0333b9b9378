"""The pure-Python exhaustive decoder against brute-force enumeration of derivations."""
import math

import pytest

from decoder.binarize import binarize
from decoder.lm import ArpaReference
from decoder.search.brute_force import best_by_brute_force
from decoder.search.model import SearchSpace, Weights
from decoder.search.reference import ReferenceDecoder

from search_fixtures import FEATURES, STRATEGIES, WEIGHTS, random_rules, random_sentence, write_arpa


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    return ArpaReference(write_arpa(tmp_path_factory.mktemp("lm")))


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("strategy", ["left", "monolingual"])
def test_exhaustive_equals_brute_force(lm, seed, strategy):
    rules = random_rules(seed)
    grammar = binarize(rules, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    space = SearchSpace(max_span=3 if seed % 3 == 0 else 20, max_unary_depth=2)
    words = random_sentence(seed, 2 + seed % 3)
    expected = best_by_brute_force(grammar, words, lm, weights, space)
    result = ReferenceDecoder(grammar, lm, weights, space).decode(words, k=5)
    assert math.isclose(result.best.score, expected[0], abs_tol=1e-9)
    # The best derivation's features reproduce its score, with the LM on the whole output.
    best = result.best
    assert math.isclose(best.features["lm"], lm.score_sentence(best.words), abs_tol=1e-9)
    assert math.isclose(weights.dot(best.features), best.score, abs_tol=1e-9)
    scores = [d.score for d in result.kbest]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("seed", range(12))
def test_binarizations_agree_on_best_score(lm, seed):
    rules = random_rules(seed, n_rules=18, max_arity=4)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 4)
    scores, edges = {}, {}
    for strategy in STRATEGIES:
        result = ReferenceDecoder(binarize(rules, strategy), lm, weights).decode(words)
        scores[strategy] = result.best.score
        edges[strategy] = result.edges_proposed
    for strategy, score in scores.items():
        assert math.isclose(score, scores["left"], abs_tol=1e-9), (strategy, scores)


def test_edge_counts_differ_between_binarizations(lm):
    counts = {}
    for strategy in STRATEGIES:
        total = 0
        for seed in range(6):
            rules = random_rules(seed, n_rules=18, max_arity=4)
            result = ReferenceDecoder(binarize(rules, strategy), lm, Weights(FEATURES, WEIGHTS)).decode(
                random_sentence(seed, 4))
            total += result.edges_proposed
        counts[strategy] = total
    assert len(set(counts.values())) > 1, counts


def test_empty_sentence_has_no_derivation(lm):
    result = ReferenceDecoder(binarize(random_rules(0), "left"), lm, Weights(FEATURES, WEIGHTS)).decode([])
    assert result.best is None
