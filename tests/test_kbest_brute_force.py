"""Every k-best list against brute-force enumeration (decoder.search.brute_force) on tiny grammars.

Brute force lists every complete derivation of the sentence and scores its output with the LM as
a whole sentence: no items, no recombination, no LM contexts. From it the true k best are known,
and each search that claims them must give them: the k best scores, and the outputs (yields) at
those scores. Checked here: the Python references (the exhaustive decoder, incremental search with
no pop limit, two-pass search with no limits), and the compiled searches that are exact when
unlimited (exhaustive chart, cube pruning with no pop limit, incremental search with no pop limit,
two-pass search with no limits and k items per recombination class), each through the compiled
k-best and, for the chart, the Python lazy k-best over the same chart; both as derivations
(unique=False) and as distinct outputs (unique=True). A list shorter than k is right only when
fewer derivations (or distinct outputs) exist.
"""
import math
import random
from collections import Counter

import pytest

from decoder.binarize import binarize
from decoder.grammar import unescape_word
from decoder.lm import ArpaReference, LanguageModel
from decoder.search.brute_force import all_derivations
from decoder.search.driver import ChartSearchDriver
from decoder.search.incremental import IncrementalSearchDriver
from decoder.search.incremental_reference import IncrementalReferenceDecoder
from decoder.search.model import LM, SearchSpace, Weights
from decoder.search.reference import ReferenceDecoder
from decoder.search.two_pass import TwoPassSearchDriver
from decoder.search.two_pass_reference import TwoPassReference
from decoder.store import GrammarStore, write_store

from search_fixtures import FEATURES, STRATEGIES, WEIGHTS, random_rules, write_arpa

K = 10
TOLERANCE = 1e-4  # the compiled searches score in float32 and through KenLM
# Grammars and sentences with 12 to 500 derivations, most of them with a top 10 that unary chains two
# deep change (test_the_cases_are_not_trivial holds them to that).
SEEDS = (2, 3, 6, 9, 12, 13, 14, 19, 24, 28, 31, 38, 41, 57)


def sentence(seed: int) -> list[str]:
    """Three or four words, mostly ones the grammar's lexical rules cover (a, b, c), some not (d, q)."""
    rng = random.Random(2000 + seed)
    return [rng.choice(("a", "b", "c", "a", "b", "c", "d", "q")) for _ in range(3 + seed % 2)]


def space_for(seed: int, max_unary_depth: int = 2) -> SearchSpace:
    return SearchSpace(max_span=3 if seed % 4 == 0 else 20, max_unary_depth=max_unary_depth)


@pytest.fixture(scope="module")
def arpa(tmp_path_factory):
    return write_arpa(tmp_path_factory.mktemp("lm"))


@pytest.fixture(scope="module")
def models(arpa):
    """(the exact Python LM brute force and the references score with, KenLM for the compiled searches)"""
    return ArpaReference(arpa), LanguageModel(arpa)


@pytest.fixture(scope="module")
def cases(tmp_path_factory, models):
    """(seed, strategy) -> (grammar, store, space, words, brute-force derivations best first), made once."""
    directory = tmp_path_factory.mktemp("stores")
    reference_lm, _ = models
    cache = {}

    def get(seed, strategy):
        if (seed, strategy) not in cache:
            grammar = binarize(random_rules(seed, n_rules=18, max_arity=3), strategy)
            path = directory / f"{seed}-{strategy}"
            write_store(grammar, path, feature_names=FEATURES)
            space, words = space_for(seed), sentence(seed)
            cache[(seed, strategy)] = (grammar, GrammarStore.open(path), space, words,
                                       brute_force(grammar, words, reference_lm, space))
        return cache[(seed, strategy)]

    return get


def brute_force(grammar, words, lm, space) -> list[tuple[float, tuple]]:
    """(score, output) of every complete derivation, best first."""
    weights = Weights(FEATURES, WEIGHTS)
    scored = []
    for features, output in all_derivations(grammar, words, weights, space):
        features = dict(features, **{LM: lm.score_sentence([unescape_word(w) for w in output])})
        scored.append((weights.dot(features), tuple(output)))
    scored.sort(key=lambda d: -d[0])
    return scored


def best_per_output(derivations) -> list[tuple[float, tuple]]:
    """The best derivation of each distinct output, best first."""
    best: dict = {}
    for score, output in derivations:
        if output not in best or score > best[output]:
            best[output] = score
    return sorted(((score, output) for output, score in best.items()), key=lambda d: -d[0])


def assert_same_kbest(found, expected, k, tolerance=TOLERANCE):
    """`found` (score, output) best first is the k best of `expected` (all of them, best first): as many
    as there are (k, or all if fewer), the same scores, and at each score the same outputs as often
    (at the k-th score, a tie may be cut anywhere: there, outputs that brute force has at that score)."""
    assert len(found) == min(k, len(expected)), (len(found), len(expected))
    assert [s for s, _ in found] == pytest.approx([s for s, _ in expected[:k]], abs=tolerance)
    if not found:
        return
    cut = expected[len(found) - 1][0]

    levels = []  # expected's scores, ties (within tolerance: summed in another order) as one level each
    for score, _ in expected:
        if not levels or levels[-1] - score > tolerance:
            levels.append(score)

    def level_of(score):
        return min(levels, key=lambda level: abs(level - score))

    found_levels = Counter((level_of(s), tuple(o)) for s, o in found)
    expected_levels = Counter((level_of(s), o) for s, o in expected[:len(found)])
    for (level, output), count in found_levels.items():
        if level > cut + tolerance:
            assert expected_levels[(level, output)] == count, (level, output)
        else:  # the last score: any derivation with that score may be the one kept
            available = sum(1 for s, o in expected if abs(s - level) <= tolerance and o == output)
            assert count <= available, (level, output)
    above = Counter({key: n for key, n in expected_levels.items() if key[0] > cut + tolerance})
    assert above == Counter({key: n for key, n in found_levels.items() if key[0] > cut + tolerance})


def of_derivations(derivations):
    return [(d.score, tuple(d.words)) for d in derivations]


def of_read_backs(read_backs):
    return [(h.score, tuple(h.words)) for h in read_backs]


# ---- the brute force itself, and the cases


def test_the_cases_are_not_trivial(models, cases):
    """Most cases have more than K derivations, and in most the top K depend on the second unary round
    (a search that ran one round too few would differ there)."""
    reference_lm, _ = models
    longer, unary = 0, 0
    for seed in SEEDS:
        grammar, _, space, words, expected = cases(seed, "left")
        assert 12 <= len(expected) <= 500
        longer += len(expected) > K
        one_round = brute_force(grammar, words, reference_lm, space_for(seed, max_unary_depth=1))
        unary += [round(s, 9) for s, _ in one_round[:K]] != [round(s, 9) for s, _ in expected[:K]]
    assert longer >= len(SEEDS) * 2 // 3 and unary >= len(SEEDS) * 2 // 3, (longer, unary)


def test_brute_force_counts_the_derivations_of_a_worked_example(tmp_path):
    """One rule per word and a swap rule over two words: for "a b", the glued word by word output
    (one derivation per order of glue: there is one), and the swap rule's, two derivations."""
    from decoder.grammar import Rule

    rules = [Rule("A", ("a",), ("x",), (), (0.5, 0.5)), Rule("B", ("b",), ("y",), (), (0.5, 0.5)),
             Rule("S", (0, 1), (1, 0), ("A", "B"), (0.25, 0.25))]
    grammar = binarize(rules, "left")
    lm = ArpaReference(write_arpa(tmp_path))
    derivations = brute_force(grammar, ["a", "b"], lm, SearchSpace())
    assert sorted(output for _, output in derivations) == [("x", "y"), ("y", "x")]


# ---- the Python references


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reference_kbest_is_brute_forces(models, cases, seed, strategy):
    reference_lm, _ = models
    grammar, _, space, words, expected = cases(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    result = ReferenceDecoder(grammar, reference_lm, weights, space).decode(words, k=K)
    assert_same_kbest(of_derivations(result.kbest), expected, K, tolerance=1e-9)
    everything = ReferenceDecoder(grammar, reference_lm, weights, space).decode(words, k=len(expected) + 5)
    assert_same_kbest(of_derivations(everything.kbest), expected, len(expected) + 5, tolerance=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_unlimited_incremental_reference_kbest_is_brute_forces(models, cases, seed, strategy):
    reference_lm, _ = models
    grammar, _, space, words, expected = cases(seed, strategy)
    result = IncrementalReferenceDecoder(grammar, reference_lm, Weights(FEATURES, WEIGHTS), space,
                                         pop_limit=0).decode(words, k=K)
    assert_same_kbest(of_derivations(result.kbest), expected, K, tolerance=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_unbounded_two_pass_reference_kbest_is_brute_forces(models, cases, seed, strategy):
    """No limit on either pass, the k best of each recombination class kept: the k best derivations."""
    reference_lm, _ = models
    grammar, _, space, words, expected = cases(seed, strategy)
    result = TwoPassReference(grammar, reference_lm, Weights(FEATURES, WEIGHTS), space).decode(words, k=K)
    assert_same_kbest(of_derivations(result.kbest), expected, K, tolerance=1e-9)


# ---- the compiled searches


def compiled_driver(kind, store, lm, space, k):
    weights = Weights(FEATURES, WEIGHTS)
    if kind == "exhaustive":
        return ChartSearchDriver(store, lm, weights, space, exhaustive=True)
    if kind == "cube":  # cube pruning with no pop limit
        return ChartSearchDriver(store, lm, weights, space, pop_limit=0)
    if kind == "incremental":
        return IncrementalSearchDriver(store, lm, weights, space, pop_limit=0)
    assert kind == "two-pass"
    return TwoPassSearchDriver(store, lm, weights, space, exhaustive=True, two_pass_beam=math.inf, agenda_limit=0,
                               max_pops=-1, kbest_per_class=k)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("kind", ["exhaustive", "cube", "incremental", "two-pass"])
def test_compiled_kbest_is_brute_forces(models, cases, kind, seed, strategy):
    _, lm = models
    _, store, space, words, expected = cases(seed, strategy)
    driver = compiled_driver(kind, store, lm, space, K)
    result = driver.run(words)
    assert_same_kbest(of_read_backs(driver.kbest(result, words, K, unique=False)), expected, K)
    if kind != "two-pass":  # (the two-pass search's k-best is the second pass's list: no chart k-best)
        assert_same_kbest(of_read_backs(driver.kbest_reference(result, words, K, unique=False)), expected, K)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("kind", ["exhaustive", "cube", "incremental", "two-pass"])
def test_compiled_unique_kbest_is_brute_forces_best_distinct_outputs(models, cases, kind, seed, strategy):
    """unique=True, with every derivation examined (max_derivations): the k best distinct outputs, each
    with its best derivation's score; fewer than k exactly when fewer distinct outputs exist."""
    _, lm = models
    _, store, space, words, derivations = cases(seed, strategy)
    expected = best_per_output(derivations)
    k = len(expected) + 3 if seed % 2 else K  # more than there are, in half the cases
    driver = compiled_driver(kind, store, lm, space, len(derivations))
    result = driver.run(words)
    found = of_read_backs(driver.kbest(result, words, k, unique=True, max_derivations=len(derivations)))
    assert len({output for _, output in found}) == len(found)
    assert_same_kbest(found, expected, k)
