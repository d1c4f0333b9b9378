"""The compiled chart search (decoder._ext._chart via decoder.search.chart) against independent answers:
the pure-Python exhaustive decoder, exhaustive mode itself, and KenLM's full-sentence score."""
import functools
import math
import random

import pytest

from decoder.binarize import binarize
from decoder.lm import ArpaReference, LanguageModel
from decoder.search.driver import ChartSearchDriver as ChartDecoder
from decoder.search.kbest import ReferenceLazyKBest, kbest_derivations
from decoder.search.model import SearchSpace, Weights
from decoder.search.readback import EDGE_GLUE_START, edge_tails, preorder_edges
from decoder.search.reference import ReferenceDecoder
from decoder.store import GrammarStore, write_store

from search_fixtures import FEATURES, STRATEGIES, WEIGHTS, random_rules, random_sentence, write_arpa


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lm")
    arpa = write_arpa(directory)
    return ArpaReference(arpa), LanguageModel(arpa)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """(seed, strategy) -> (BinaryGrammar, GrammarStore), made on first use."""
    directory = tmp_path_factory.mktemp("stores")
    cache = {}

    def get(seed, strategy, **rule_options):
        key = (seed, strategy, tuple(sorted(rule_options.items())))
        if key not in cache:
            grammar = binarize(random_rules(seed, **rule_options), strategy)
            path = directory / f"{seed}-{strategy}-{len(cache)}"
            write_store(grammar, path, feature_names=FEATURES)
            cache[key] = (grammar, GrammarStore.open(path))
        return cache[key]

    return get


def space_for(seed):
    return SearchSpace(max_span=3 if seed % 3 == 0 else 20, max_unary_depth=2)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compiled_exhaustive_equals_reference(models, stores, seed, strategy):
    reference_lm, lm = models
    grammar, store = stores(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 2 + seed % 4)
    expected = ReferenceDecoder(grammar, reference_lm, weights, space_for(seed)).decode(words, k=8)
    decoder = ChartDecoder(store, lm, weights, space_for(seed), exhaustive=True)
    result = decoder.search(words)
    best = decoder.best(result, words)
    assert best.score == pytest.approx(expected.best.score, abs=1e-4)
    kbest = decoder.kbest(result, words, 8, unique=False)
    assert [h.score for h in kbest] == pytest.approx([d.score for d in expected.kbest], abs=1e-4)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("strategy", ("left", "monolingual"))
def test_unbounded_cube_pruning_equals_exhaustive(models, stores, seed, strategy):
    _, lm = models
    _, store = stores(seed, strategy, n_rules=20, max_arity=4)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 5)
    exhaustive = ChartDecoder(store, lm, weights, exhaustive=True)
    cube = ChartDecoder(store, lm, weights, pop_limit=0)  # 0: no pop limit
    best_exhaustive = exhaustive.best(exhaustive.search(words), words)
    result = cube.search(words)
    best_cube = cube.best(result, words)
    assert best_cube.score == pytest.approx(best_exhaustive.score, abs=1e-4)
    assert result.stats["edges_proposed"] == exhaustive.search(words).stats["edges_proposed"]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("pop_limit", (1, 5, 0))
def test_score_is_weights_times_recomputed_features(models, stores, seed, pop_limit):
    _, lm = models
    grammar, store = stores(seed, "icr" if seed % 2 else "monolingual", n_rules=20, max_arity=4)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 6)
    decoder = ChartDecoder(store, lm, weights, pop_limit=pop_limit, beam_size=3 if pop_limit == 5 else 0)
    result = decoder.search(words)
    for hypothesis in [decoder.best(result, words)] + decoder.kbest(result, words, 5):
        assert hypothesis.features["lm"] == pytest.approx(lm.score_sentence(hypothesis.words), abs=1e-3)
        assert weights.dot(hypothesis.features) == pytest.approx(hypothesis.score, abs=1e-3)
        # the features, recomputed from the derivation's rules alone
        recomputed = {name: 0.0 for name in FEATURES}
        oov = []

        def walk(node):
            if node.get("rule") == "oov":
                oov.append(node["span"])
            if "source_rule" in node:
                for name, value in zip(FEATURES, grammar.source_rules[node["source_rule"]].log_scores()):
                    recomputed[name] += value
            for child in node["children"]:
                walk(child)

        walk(hypothesis.derivation)
        for name in FEATURES:
            assert hypothesis.features[name] == pytest.approx(recomputed[name], abs=1e-4)
        assert hypothesis.features["oov"] == len(oov)
        assert hypothesis.features["word_count"] == len(hypothesis.words)


def test_kbest_unique_gives_distinct_translations(models, stores):
    _, lm = models
    _, store = stores(3, "left", n_rules=20, max_arity=4)
    decoder = ChartDecoder(store, lm, Weights(FEATURES, WEIGHTS), pop_limit=50)
    words = random_sentence(3, 6)
    result = decoder.search(words)
    unique = decoder.kbest(result, words, 10, unique=True)
    texts = [h.text for h in unique]
    assert len(texts) == len(set(texts))
    scores = [h.score for h in unique]
    assert scores == sorted(scores, reverse=True)
    assert unique[0].score == pytest.approx(decoder.best(result, words).score)


def test_pop_limit_and_beam_reduce_search(models, tmp_path):
    """Five words `a`, each with six translations, and two rules joining any two A's (straight and
    swapped): a cell over two words alone has 6 x 6 x 2 candidate edges, far more than a small pop
    limit lets through. Cube pruning pops at most pop_limit edges per cell (and per GOAL cell over
    [0, j)), each popped edge kept, so a larger limit proposes and keeps strictly more edges, and no
    limit proposes exactly what exhaustive search does; the beam keeps at most beam_size items a cell."""
    from decoder.grammar import Rule

    _, lm = models
    targets = [("x",), ("y",), ("z",), ("w",), ("x", "y"), ("z", "w")]
    rules = [Rule("A", ("a",), target, (), (0.1 + 0.1 * i, 0.5)) for i, target in enumerate(targets)]
    rules += [Rule("A", (0, 1), (0, 1), ("A", "A"), (0.5, 0.5)), Rule("A", (0, 1), (1, 0), ("A", "A"), (0.4, 0.5))]
    write_store(binarize(rules, "left"), tmp_path / "store", feature_names=FEATURES)
    store = GrammarStore.open(tmp_path / "store")
    weights = Weights(FEATURES, WEIGHTS)
    words = ["a"] * 5
    cells = len(words) * (len(words) + 1) // 2 + len(words)  # the spans, and GOAL over [0, j) for each j
    proposed, kept = [], []
    for pop_limit in (1, 2, 4, 0):
        stats = ChartDecoder(store, lm, weights, pop_limit=pop_limit).search(words).stats
        proposed.append(stats["edges_proposed"])
        kept.append(stats["edges_kept"])
        if pop_limit:
            assert stats["edges_kept"] <= pop_limit * cells
            assert all(mean <= pop_limit for mean, _ in stats["items_per_cell"].values())
    assert proposed[0] < proposed[1] < proposed[2] < proposed[3]
    assert kept[0] < kept[1] < kept[2] < kept[3]
    assert proposed[3] == ChartDecoder(store, lm, weights, exhaustive=True).search(words).stats["edges_proposed"]
    unlimited = ChartDecoder(store, lm, weights, pop_limit=0).search(words).stats
    assert max(mean for mean, _ in unlimited["items_per_cell"].values()) > 2
    stats = ChartDecoder(store, lm, weights, pop_limit=0, beam_size=2).search(words).stats
    assert all(mean <= 2 for mean, _ in stats["items_per_cell"].values())
    assert stats["edges_kept"] < unlimited["edges_kept"]
    assert stats["lm_queries_novel"] <= stats["lm_queries"]


def _kbest_pairs(decoder, result, words, k, unique):
    """(compiled, reference): the k best as (score, root index, edges in pre-order) by each k-best."""
    root_extra = decoder.weights["lm"] * result.root_boundary
    compiled = decoder.kbest_finder.derivations(result.chart, result.roots, root_extra, words, k, unique)
    chart = {name: values.tolist() for name, values in result.chart.items()}
    finder = ReferenceLazyKBest(chart, result.roots.tolist(), root_extra.tolist(), edge_tails,
                       functools.partial(decoder.reader.edge_blocks, chart, words))
    reference = [(score, root, preorder_edges(tree)) for score, root, tree in kbest_derivations(finder, k, unique)]
    return ([(score, root, list(map(int, edges))) for score, root, edges in compiled], reference)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("unique", (False, True))
def test_compiled_kbest_equals_reference(models, stores, seed, strategy, unique):
    """The compiled k-best (decoder._ext._kbest) and the Python ReferenceLazyKBest: the same derivations in the
    same order (ties included: same heap order and arithmetic), so equal scores, edges and texts."""
    _, lm = models
    _, store = stores(seed, strategy, n_rules=20, max_arity=4)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 3 + seed % 4)
    settings = dict(exhaustive=True) if seed % 2 else dict(pop_limit=3)
    decoder = ChartDecoder(store, lm, weights, space_for(seed), **settings)
    result = decoder.search(words)
    compiled, reference = _kbest_pairs(decoder, result, words, 15, unique)
    assert compiled == reference
    texts = [h.text for h in decoder.kbest(result, words, 15, unique=unique)]
    assert texts == [h.text for h in decoder.kbest_reference(result, words, 15, unique=unique)]
    if unique:
        assert len(set(texts)) == len(texts)


@pytest.mark.parametrize("seed", range(25))
def test_compiled_unique_kbest_compares_words_not_their_origin(models, stores, seed):
    """A target word passed through as an unknown source word ("x", "y") and the same word written
    by a rule are the same output word, as the reference's text comparison has it; an unknown
    word no rule writes ("q") is no vocabulary word."""
    _, lm = models
    _, store = stores(seed, "left", n_rules=20, max_arity=4)
    decoder = ChartDecoder(store, lm, Weights(FEATURES, WEIGHTS), exhaustive=True)
    words = random_sentence(seed, 3) + ["x", "a", "y"]
    result = decoder.search(words)
    compiled, reference = _kbest_pairs(decoder, result, words, 30, unique=True)
    assert compiled == reference


def test_compiled_kbest_rejects_a_chart_that_is_not_the_search_s(models, stores):
    """The compiled k-best relies on every tail being an older item (so the hypergraph is acyclic and
    its walks end): a chart breaking that, or roots without their scores, is a ValueError."""
    _, lm = models
    _, store = stores(3, "left", n_rules=20, max_arity=4)
    decoder = ChartDecoder(store, lm, Weights(FEATURES, WEIGHTS), pop_limit=0)
    words = random_sentence(3, 4)
    result = decoder.search(words)
    extra = decoder.weights["lm"] * result.root_boundary
    finder = decoder.kbest_finder
    assert finder.derivations(result.chart, result.roots, extra, words, 5, True)
    with pytest.raises(ValueError, match="roots but"):
        finder.derivations(result.chart, result.roots, extra[:-1], words, 5, True)
    cyclic = dict(result.chart, edge_tail0=result.chart["edge_tail0"].copy())
    edge = int(result.chart["item_first_edge"][0])  # an edge into item 0 now takes the last item
    cyclic["edge_rule"] = result.chart["edge_rule"].copy()
    cyclic["edge_rule"][edge] = EDGE_GLUE_START
    cyclic["edge_tail0"][edge] = len(result.chart["item_score"]) - 1
    with pytest.raises(ValueError, match="not an earlier item"):
        finder.derivations(cyclic, result.roots, extra, words, 5, True)


def test_cube_corner_keys_are_distinct():
    """Cube pruning keeps the corners it pushed in a hash set keyed by (group, rule rank, left rank,
    right rank); two corners with one key lose the second corner's whole cube if it is a group's
    first corner. A hash-combining step that is no bijection gives (143, 0, 0, 0) and (147, 0, 0, 0) one
    key, and then a search never explores the cube of one of them."""
    from decoder._ext._chart import cube_corner_key

    corners = [(g, r, a, b) for g in range(2000) for r in range(3) for a in range(8) for b in range(8)]
    assert cube_corner_key(143, 0, 0, 0) != cube_corner_key(147, 0, 0, 0)
    assert len({cube_corner_key(*corner) for corner in corners}) == len(corners)


@pytest.mark.parametrize("seed", range(12))
def test_item_order_is_a_full_sort(seed):
    """A cell's items are sorted by (symbol, best score first, older first) through a radix sort by symbol
    and insertion sorts that give up to std::sort past a budget of moves: whatever the input's order
    (nearly sorted, as a search makes it; shuffled; reversed; tied scores; symbols over all four bytes, or
    negative; too few entries for the radix sort), the order is Python's sort of the same keys."""
    from decoder._ext._chart import item_order

    rng = random.Random(seed)
    n = rng.choice([0, 1, 5, 31, 32, 33, 200, 2000])
    symbol_pool = [rng.choice([rng.randrange(4), rng.randrange(300), rng.randrange(1 << 31)])
                   for _ in range(rng.choice([1, 3, 40]))]
    if seed % 4 == 3:  # (no item has a negative symbol; the sort still orders one first)
        symbol_pool.append(-1 - rng.randrange(1 << 31))
    symbols = [rng.choice(symbol_pool) for _ in range(n)]
    scores = [round(rng.uniform(-50, 0), rng.choice([0, 1, 6])) for _ in range(n)]
    shape = seed % 3
    if shape == 0:  # as a search pops them: descending, with some local disorder
        scores.sort(reverse=True)
        for _ in range(n // 10):
            i = rng.randrange(max(n - 1, 1))
            if i + 1 < n:
                scores[i], scores[i + 1] = scores[i + 1], scores[i]
    elif shape == 1:  # ascending: every run is reversed (the insertion sort gives up)
        scores.sort()
    expected = sorted(range(n), key=lambda k: (symbols[k], -scores[k], k))
    assert item_order(symbols, scores) == expected
