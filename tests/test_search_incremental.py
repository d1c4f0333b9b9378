"""Incremental search (Heafield et al. 2013): the pure-Python reference against brute force and the
exhaustive reference decoder."""
import math

import pytest

from decoder.binarize import binarize
from decoder.lm import ArpaReference
from decoder.search.brute_force import best_by_brute_force
from decoder.search.incremental_reference import IncrementalReferenceDecoder, boundary_tokens, build_trie
from decoder.search.model import SearchSpace, Weights
from decoder.search.reference import STAR, Node, ReferenceDecoder

from search_fixtures import random_rules, random_sentence, write_arpa

FEATURES = ["p1", "p2"]
WEIGHTS = {"p1": 0.7, "p2": 0.3, "lm": 1.0, "word_count": 0.4, "oov": -3.0, "glue": -0.6}
STRATEGIES = ("left", "right", "icr", "monolingual", "random")


@pytest.fixture(scope="module")
def reference_lm(tmp_path_factory):
    return ArpaReference(write_arpa(tmp_path_factory.mktemp("lm")))


def space_for(seed):
    return SearchSpace(max_span=3 if seed % 3 == 0 else 20, max_unary_depth=2)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_unlimited_incremental_equals_brute_force(reference_lm, seed, strategy):
    grammar = binarize(random_rules(seed), strategy, seed=seed)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 2 + seed % 3)
    expected = best_by_brute_force(grammar, words, reference_lm, weights, space_for(seed))
    result = IncrementalReferenceDecoder(grammar, reference_lm, weights, space_for(seed)).decode(words, k=5)
    best = result.best
    assert math.isclose(best.score, expected[0], abs_tol=1e-9)
    # The score is the weights times the recomputed features; the LM part is the LM's score of the output.
    assert math.isclose(best.features["lm"], reference_lm.score_sentence(best.words), abs_tol=1e-9)
    assert math.isclose(weights.dot(best.features), best.score, abs_tol=1e-9)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("strategy", ("left", "monolingual"))
def test_unlimited_incremental_kbest_equals_exhaustive(reference_lm, seed, strategy):
    """No pop limit: the same hypergraph as exhaustive search, so the same k-best list."""
    grammar = binarize(random_rules(seed, n_rules=18, max_arity=4), strategy)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 4)
    expected = ReferenceDecoder(grammar, reference_lm, weights, space_for(seed)).decode(words, k=10)
    result = IncrementalReferenceDecoder(grammar, reference_lm, weights, space_for(seed)).decode(words, k=10)
    assert [d.score for d in result.kbest] == pytest.approx([d.score for d in expected.kbest], abs=1e-9)
    assert result.edges_proposed == expected.edges_proposed


@pytest.mark.parametrize("seed", range(10))
def test_pop_limit_never_beats_exhaustive_and_one_pop_finds_a_derivation(reference_lm, seed):
    grammar = binarize(random_rules(seed, n_rules=20, max_arity=4), "left")
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 5)
    best = ReferenceDecoder(grammar, reference_lm, weights).decode(words).best.score
    previous_edges = 0
    for limit in (1, 2, 5):
        result = IncrementalReferenceDecoder(grammar, reference_lm, weights, pop_limit=limit).decode(words)
        assert result.best is not None
        assert result.best.score <= best + 1e-9
        assert math.isclose(weights.dot(result.best.features), result.best.score, abs_tol=1e-9)
        assert result.edges_proposed >= previous_edges
        previous_edges = result.edges_proposed


def test_boundary_tokens_alternate_left_and_right_outermost_first():
    # A trigram context of a long block: first two words, STAR, last two words.
    tokens = boundary_tokens((("x", "y", STAR, "z", "w"),))
    assert [t[1:] for t in tokens] == [(0, "x"), (1, "w"), (0, "y"), (1, "z"),
                                        (0, ("end", "long")), (1, ("end", "long"))]
    assert [t[1:] for t in boundary_tokens((("x",),))] == [(0, "x"), (0, ("end", "short"))]


def test_trie_groups_items_by_boundary_words_and_scores_by_best_descendant():
    items = []
    for contexts, score in [((("x", "y"),), -1.0), ((("x", "z"),), -0.5), ((("y",),), -2.0)]:
        node = Node("A", (0, 1), contexts)
        node.best = score
        items.append(node)
    root = build_trie(items)
    assert root.score == -0.5
    assert [c.revealed[-1][2] for c in root.children] == ["x", "y"]  # best first
    x = root.children[0]
    assert x.score == -0.5 and [c.revealed[-1][2] for c in x.children] == ["z", "y"]
