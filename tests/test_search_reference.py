"""The pure-Python exhaustive decoder against brute-force enumeration of derivations."""
import math

import pytest

from decoder.binarize import binarize
from decoder.lm import ArpaReference
from decoder.search.brute_force import best_by_brute_force
from decoder.search.model import SearchSpace, Weights
from decoder.search.reference import ReferenceDecoder

from search_fixtures import FEATURES, STRATEGIES, WEIGHTS, random_rules, random_sentence, write_arpa
from test_kbest_brute_force import assert_same_kbest, brute_force


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
    # the k best: brute force's, scores and outputs (as the k-best tests of every search, test_kbest_brute_force)
    assert_same_kbest([(d.score, tuple(d.words)) for d in result.kbest],
                      brute_force(grammar, words, lm, space), 5, tolerance=1e-9)


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


@pytest.mark.parametrize("sizes", [(1, 2, 3), (3, 2, 1), (2, 3, 1), (2, 2, 2)])
def test_edge_counts_follow_the_binarization(lm, sizes):
    """Words a b c with |A|, |B|, |C| translations (distinct words: no two items recombine) and one rule
    X -> A B C: the left-branching binarizations (left, and monolingual, which always branches left)
    build the virtual item over A B, |A||B| edges, then X over it, |A||B||C| edges; the right one
    builds B C, |B||C| edges, then X, |A||B||C|. Everything else is common: the lexical edges
    |A| + |B| + |C|, and the glue: GOAL over [0, 1) from each A, over [0, 2) each of those with each
    B (|A||B| GOAL items, their contexts distinct), over [0, 3) each X item and each GOAL item over
    [0, 2) with each C. So the right binarization proposes |B| (|C| - |A|) more edges than the left."""
    from decoder.grammar import Rule

    a, b, c = sizes
    rules = [Rule(label, (word,), (f"{word}{i}",), (), (0.5, 0.5))
             for word, label, n in zip("abc", "ABC", sizes) for i in range(n)]
    rules.append(Rule("X", (0, 1, 2), (0, 1, 2), ("A", "B", "C"), (0.5, 0.5)))
    common = (a + b + c) + a * b * c + (a + a * b + a * b * c + a * b * c)  # lexical, X, glue
    expected = {"left": common + a * b, "monolingual": common + a * b, "right": common + b * c}
    for strategy, edges in expected.items():
        result = ReferenceDecoder(binarize(rules, strategy), lm, Weights(FEATURES, WEIGHTS)).decode(["a", "b", "c"])
        assert result.edges_proposed == edges, strategy
    assert expected["right"] - expected["left"] == b * (c - a)


def test_empty_sentence_has_no_derivation(lm):
    result = ReferenceDecoder(binarize(random_rules(0), "left"), lm, Weights(FEATURES, WEIGHTS)).decode([])
    assert result.best is None
