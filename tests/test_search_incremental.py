"""Incremental search (Heafield et al. 2013): the pure-Python reference against brute force and the
exhaustive reference decoder; the compiled search against the reference and exhaustive search."""
import heapq
import math

import numpy as np
import pytest

from decoder._ext import compiled_module
from decoder.binarize import binarize
from decoder.lm import ArpaReference
from decoder.search.brute_force import best_by_brute_force
from decoder.search.driver import ChartSearchDriver as ChartDecoder
from decoder.search.incremental import IncrementalSearchDriver as IncrementalDecoder, sorted_rule_arrays
from decoder.search.incremental_reference import IncrementalReferenceDecoder, boundary_tokens, build_trie
from decoder.search.model import SearchSpace, Weights
from decoder.search.readback import EDGE_OOV
from decoder.search.reference import STAR, Node, ReferenceDecoder

from search_fixtures import FEATURES, STRATEGIES as SEARCH_STRATEGIES, WEIGHTS, random_rules, random_sentence, write_arpa
from test_search_chart import models, stores  # noqa: F401 (fixtures: the LMs, stores of random grammars)

_chart_grammar = compiled_module("_chart_grammar")
_incremental = compiled_module("_incremental")

STRATEGIES = SEARCH_STRATEGIES + ("random",)


def assert_kbest_equals_reference(kbest, expected):
    """The compiled k-best's scores equal the reference's; where scores are not tied, the derivation at each
    rank is the same one (the same words)."""
    assert [h.score for h in kbest] == pytest.approx([d.score for d in expected], abs=1e-4)
    for rank, (hyp, derivation) in enumerate(zip(kbest, expected)):
        neighbours = [d.score for d in expected if abs(d.score - derivation.score) < 1e-6]
        if len(neighbours) == 1:
            assert hyp.words == list(derivation.words), rank


def exhaustive_optimum(store, lm, weights, words):
    """The best derivation's score under exhaustive search (ChartSearch, no pruning)."""
    exhaustive = ChartDecoder(store, lm, weights, exhaustive=True)
    return exhaustive.best(exhaustive.search(words), words).score


def assert_pruned_best_is_scored_exactly(best, optimum, weights, lm):
    """A pruned search's 1-best: never above the exhaustive optimum, its score its features' dot product, its
    LM feature its words' LM score."""
    assert best.score <= optimum + 1e-4
    assert weights.dot(best.features) == pytest.approx(best.score, abs=1e-4)
    assert best.features["lm"] == pytest.approx(lm.score_sentence(best.words), abs=1e-3)


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


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("strategy", ("left", "monolingual", "icr"))
def test_reference_counting_real_pops(reference_lm, seed, strategy):
    """pop_count = "real" in the reference: with no limits the exhaustive k-best; pruned, each cell's
    virtual rules get a queue of their own with virtual_pop_limit complete hypotheses and the rest one with
    pop_limit (two budgets: a cell's pops of both kinds together may pass pop_limit), and the best
    derivation is scored exactly and never beats exhaustive search."""
    grammar = binarize(random_rules(seed, n_rules=20, max_arity=4), strategy, seed=seed)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 5)
    expected = ReferenceDecoder(grammar, reference_lm, weights).decode(words, k=8)
    unlimited = IncrementalReferenceDecoder(grammar, reference_lm, weights, pop_count="real").decode(words, k=8)
    assert [d.score for d in unlimited.kbest] == pytest.approx([d.score for d in expected.kbest], abs=1e-9)
    assert unlimited.edges_proposed == expected.edges_proposed
    has_virtual = any(rule.lhs.startswith("<") for rule in grammar.rules)
    virtual_queues = 0
    for pop_limit, virtual_limit in ((1, 1), (2, 4), (3, 1)):
        decoder = IncrementalReferenceDecoder(grammar, reference_lm, weights, pop_limit=pop_limit, pop_count="real",
                                              virtual_pop_limit=virtual_limit)
        result = decoder.decode(words)
        assert result.best is not None
        assert result.best.score <= expected.best.score + 1e-9
        assert math.isclose(weights.dot(result.best.features), result.best.score, abs_tol=1e-9)
        kinds = {kind for kind, _, _ in decoder.queue_pops}
        assert kinds <= {"virtual", "real"} and "real" in kinds
        assert has_virtual or "virtual" not in kinds
        virtual_queues += "virtual" in kinds
        for kind, limit, pops in decoder.queue_pops:
            assert limit == (virtual_limit if kind == "virtual" else pop_limit)
            assert 0 < pops <= limit
    if strategy == "left" and seed < 3:  # (these grammars have binary rules with virtual lhs the sentence uses)
        assert virtual_queues > 0
    shared = IncrementalReferenceDecoder(grammar, reference_lm, weights, pop_limit=2)
    shared.decode(words)
    assert all(kind == "all" and pops <= 2 for kind, _, pops in shared.queue_pops)


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
    assert root.score == -0.5 and root.revealed == ()
    x, lone = root.children  # best first
    assert x.revealed[-1][2] == "x" and x.score == -0.5
    # Path compression: a single item is a leaf, whatever of its tokens are left to reveal.
    assert lone.item is items[2] and lone.revealed[:-1] == boundary_tokens(items[2].contexts)
    assert [c.item for c in x.children] == [items[1], items[0]]


def test_trie_is_path_compressed():
    items = []
    for contexts, score in [((("a", "b", "c"),), -1.0), ((("a", "b", "d"),), -0.5)]:
        node = Node("A", (0, 2), contexts)
        node.best = score
        items.append(node)
    root = build_trie(items)
    # The shared tokens a, b are revealed by the root itself; each child is then an item.
    assert [t[2] for t in root.revealed] == ["a", "b"]
    assert [c.item for c in root.children] == [items[1], items[0]]
    single = build_trie(items[:1])
    assert single.item is items[0] and single.children == []


# ---------------------------------------------------------------------- the compiled search


@pytest.mark.parametrize("seed", range(15))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compiled_unlimited_equals_reference(models, stores, seed, strategy):
    """No pop limit: 1-best and k-best (scores and strings) equal the pure-Python incremental search."""
    reference_lm, lm = models
    grammar, store = stores(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 2 + seed % 4)
    expected = IncrementalReferenceDecoder(grammar, reference_lm, weights, space_for(seed)).decode(words, k=8)
    decoder = IncrementalDecoder(store, lm, weights, space_for(seed), pop_limit=0)
    result = decoder.search(words)
    best = decoder.best(result, words)
    assert best.score == pytest.approx(expected.best.score, abs=1e-4)
    assert best.features["lm"] == pytest.approx(reference_lm.score_sentence(best.words), abs=1e-4)
    assert_kbest_equals_reference(decoder.kbest(result, words, 8, unique=False), expected.kbest)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compiled_unlimited_counting_real_pops_equals_reference(models, stores, seed, strategy):
    """pop_count = "real" with no limit on either kind of pop: the compiled search's 1-best and k-best (scores
    and strings) equal the reference's, itself counting real pops."""
    reference_lm, lm = models
    grammar, store = stores(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 2 + seed % 4)
    expected = IncrementalReferenceDecoder(grammar, reference_lm, weights, space_for(seed),
                                           pop_count="real").decode(words, k=8)
    decoder = IncrementalDecoder(store, lm, weights, space_for(seed), pop_limit=0, pop_count="real",
                                 virtual_pop_limit=0, search="incremental")
    result = decoder.search(words)
    assert decoder.best(result, words).score == pytest.approx(expected.best.score, abs=1e-4)
    assert_kbest_equals_reference(decoder.kbest(result, words, 8, unique=False), expected.kbest)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("strategy", ("left", "monolingual", "icr"))
def test_compiled_pruned_search_is_consistent_and_never_beats_exhaustive(models, stores, seed, strategy):
    _, lm = models
    _, store = stores(seed, strategy, n_rules=20, max_arity=4)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 5)
    exhaustive = ChartDecoder(store, lm, weights, exhaustive=True)
    exhaustive_result = exhaustive.search(words)
    optimum = exhaustive.best(exhaustive_result, words).score
    unlimited = IncrementalDecoder(store, lm, weights, pop_limit=0)
    result = unlimited.search(words)
    assert unlimited.best(result, words).score == pytest.approx(optimum, abs=1e-4)
    assert result.stats["edges_proposed"] == exhaustive_result.stats["edges_proposed"]
    for limit in (1, 3, 10):
        decoder = IncrementalDecoder(store, lm, weights, pop_limit=limit)
        result = decoder.search(words)
        best = decoder.best(result, words)
        assert_pruned_best_is_scored_exactly(best, optimum, weights, lm)
        for key in ("edges_proposed", "edges_kept", "lm_queries", "lm_queries_novel", "items_per_cell"):
            assert key in result.stats
        # Deterministic: the same search twice gives the same chart.
        again = decoder.search(words)
        assert decoder.best(again, words).score == best.score
        assert again.stats["edges_proposed"] == result.stats["edges_proposed"]


def test_compiled_kbest_of_pruned_search_is_sorted_and_unique(models, stores):
    _, lm = models
    _, store = stores(3, "left", n_rules=20, max_arity=4)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(3, 6)
    decoder = IncrementalDecoder(store, lm, weights, pop_limit=5)
    result = decoder.search(words)
    kbest = decoder.kbest(result, words, 10, unique=True)
    scores = [h.score for h in kbest]
    assert scores == sorted(scores, reverse=True)
    assert len({h.text for h in kbest}) == len(kbest)
    assert kbest[0].score == pytest.approx(decoder.best(result, words).score, abs=1e-6)


def test_compiled_tries_are_path_compressed_and_scored_by_best_descendant(models, stores):
    """Every inner node of a compiled trie has two or more children (a node with one child is that
    child; a vertex's single item is its root), children are best first, a node's score and item are
    its best child's, and a leaf is an item (of the chart) with its own score."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    inner_nodes = 0
    for seed in range(8):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 6)
        # (flat_items 0: no list gets a shallow trie, every list its full trie)
        decoder = IncrementalDecoder(store, lm, weights, pop_limit=0, engine_options={"flat_items": 0})
        result = decoder.search(words)
        nodes = decoder.engine.trie_nodes()
        item_score = result.chart["item_score"]
        children = {c for t in range(len(nodes["rank"])) if nodes["n_children"][t] > 0
                    for c in range(nodes["first_child"][t], nodes["first_child"][t] + nodes["n_children"][t])}
        for t in range(len(nodes["rank"])):
            if nodes["rank"][t] >= 0:
                assert nodes["n_children"][t] == 0
                assert nodes["score"][t] == item_score[nodes["item"][t]]
                # a single item's root: its tokens not counted (SINGLE_ITEM_DEPTH); a child leaf: counted (+1)
                assert (nodes["depth"][t] == 0x7FFF) == (t not in children)
                continue
            inner_nodes += 1
            lo, n = nodes["first_child"][t], nodes["n_children"][t]
            assert n >= 2
            scores = [nodes["score"][c] for c in range(lo, lo + n)]
            assert scores == sorted(scores, reverse=True)
            assert nodes["score"][t] == scores[0] and nodes["item"][t] == nodes["item"][lo]
            assert all(nodes["depth"][c] > nodes["depth"][t] for c in range(lo, lo + n))
            # What is left to reveal below a node: its children's reveals and theirs; its items: its leaves.
            below = 0
            for c in range(lo, lo + n):
                below |= int(nodes["reveals"][c]) | int(nodes["below"][c])
            assert nodes["below"][t] == below
            assert nodes["n_items"][t] == sum(nodes["n_items"][c] for c in range(lo, lo + n))
    assert inner_nodes > 20  # the vertices had items to group


def test_trie_nodes_are_cache_lines_carrying_their_items_state_fields(models, stores):
    """Every trie node (grown or a stub root) starts a 64-byte line, and the fields of its item that a pop
    reads through it (n_states, state_offset) are the chart's item's, for every item a node points to."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    checked = 0
    for seed in range(6):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        for pop_limit in (0, 3):
            decoder = IncrementalDecoder(store, lm, weights, pop_limit=pop_limit)
            decoder.search(random_sentence(seed, 6))
            nodes = decoder.engine.trie_nodes()
            assert nodes["aligned"].all()
            assert (nodes["n_states"] == nodes["item_n_states_of_chart"]).all()
            assert (nodes["item_state_offset"] == nodes["item_state_offset_of_chart"]).all()
            assert (nodes["n_states"] >= 1).all()
            checked += len(nodes["n_states"])
    assert checked > 100


@pytest.mark.parametrize("strategy", ("left", "right", "icr"))
def test_what_the_lm_cannot_see_changes_no_search_result(models, stores, strategy):
    """Refinements that reveal only words a rule's LM score cannot see (a block's left words at the start of
    its target, right words at its end) keep the edge's LM score, and a tail with nothing visible left
    below it enumerates its items (flat): with the same scores, the pruned search finds the same chart as
    when every word counts (each partial edge rescored, each trie walked down), with fewer LM scorings."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    totals = {True: {"flat_tails": 0, "partial_lm_novel": 0}, False: {"flat_tails": 0, "partial_lm_novel": 0}}
    for seed in range(20):
        _, store = stores(seed, strategy, n_rules=20, max_arity=4)
        words = random_sentence(seed, 8)
        for limit in (1, 2, 4, 10):
            results = {}
            for visibility in (True, False):
                # (flat_items 0: the default flattens these tiny tries whatever the LM sees)
                decoder = IncrementalDecoder(store, lm, weights, pop_limit=limit,
                                             engine_options={"lm_visibility": visibility, "flat_items": 0})
                result = decoder.search(words)
                kbest = decoder.kbest(result, words, 5, unique=False)
                results[visibility] = (result.stats, [round(h.score, 6) for h in kbest], [h.text for h in kbest],
                                       result.chart)
                for key in totals[visibility]:
                    totals[visibility][key] += result.stats[key]
            (seen, seen_kbest, seen_text, seen_chart), (every, every_kbest, every_text, every_chart) = \
                results[True], results[False]
            assert seen_kbest == every_kbest and seen_text == every_text, (seed, limit)
            assert seen_chart.keys() == every_chart.keys()
            for key in seen_chart:  # the same items and edges, made in the same order
                assert np.array_equal(np.asarray(seen_chart[key]), np.asarray(every_chart[key])), (seed, limit, key)
            for key in ("edges_proposed", "edges_kept", "items", "edges"):
                assert seen.get(key) == every.get(key), (seed, limit, key)
    assert totals[True]["flat_tails"] > totals[False]["flat_tails"]
    assert totals[True]["partial_lm_novel"] < totals[False]["partial_lm_novel"]


def test_sorted_rule_records_follow_the_sorted_rule_arrays(models, stores):
    """Each SortedRule record (what a group's initial edges and their pops read) is the rule at that position
    of pair_rules_sorted, then of single_rules_sorted: its score, words-only LM estimate (NaN for a carrying
    rule), id, lhs, and its LM target's first and last symbol, length, offset and hash."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    for seed, strategy in ((0, "left"), (1, "monolingual"), (2, "icr"), (4, "right")):
        _, store = stores(seed, strategy, n_rules=20, max_arity=4)
        decoder = IncrementalDecoder(store, lm, weights, pop_limit=10)
        arrays = decoder.grammar.arrays
        out = sorted_rule_arrays(arrays, lm)
        records = out["sorted_rules"]
        rules = list(arrays["pair_rules_sorted"]) + list(arrays["single_rules_sorted"])
        assert out["sorted_rules_single_offset"] == len(arrays["pair_rules_sorted"])
        assert len(records) == len(rules) > 0
        offsets, target = arrays["rule_target_offsets"], arrays["rule_target_lm"]
        for record, rule in zip(records, rules):
            lo, hi = int(offsets[rule]), int(offsets[rule + 1])
            assert record["rule"] == rule
            assert record["score"] == arrays["rule_score"][rule]
            assert record["lhs"] == arrays["rule_lhs"][rule]
            assert (record["target_lo"], record["target_length"]) == (lo, hi - lo)
            if hi > lo:
                assert (record["target_first"], record["target_last"]) == (target[lo], target[hi - 1])
            assert int(record["target_hash"]) == int(np.asarray(arrays["rule_target_hash"]).view(np.uint64)[rule])
            words_only = _chart_grammar.rule_lm_estimates(lm, target[lo:hi].copy(), np.array([0, hi - lo], dtype=np.int64))[0]
            if arrays["rule_carries"][rule]:
                assert math.isnan(record["estimate"])
            else:
                assert record["estimate"] == pytest.approx(words_only, abs=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_search_queue_pops_best_first(seed):
    """The 4-ary heap of the incremental search pops what heapq pops (scores, ties included), from a batch
    ordered at once and pushes and pops interleaved."""
    rng = np.random.default_rng(seed)
    batch = list(rng.integers(-20, 20, size=int(rng.integers(0, 300))) / 4.0)
    operations = [float("nan") if rng.random() < 0.4 else float(rng.integers(-20, 20)) / 4.0 for _ in range(500)]
    popped = _incremental.queue_pops(batch, operations)
    expected, heap = [], [-score for score in batch]
    heapq.heapify(heap)
    for score in operations:
        if math.isnan(score):
            if heap:
                expected.append(-heapq.heappop(heap))
        else:
            heapq.heappush(heap, -score)
    expected += sorted((-score for score in heap), reverse=True)
    assert [score for score, _ in popped] == expected
    scores = batch + operations
    assert all(scores[index] == score for score, index in popped)  # each entry keeps its index
    assert len({index for _, index in popped}) == len(popped)


def _scan_heap_pops(batch, operations):
    """A 4-ary max-heap whose sift-down scans a node's children left to right with `<` (the queue before its
    tournament and cache-line layout): the (score, index) pops of queue_pops' protocol, ties and all."""
    heap = [(score, index) for index, score in enumerate(batch)]

    def sift_down(hole, value):
        while 4 * hole + 1 < len(heap):
            best = 4 * hole + 1
            for child in range(best + 1, min(best + 4, len(heap))):
                if heap[best][0] < heap[child][0]:
                    best = child
            if not value[0] < heap[best][0]:
                break
            heap[hole] = heap[best]
            hole = best
        heap[hole] = value

    def pop():
        top, last = heap[0], heap.pop()
        if heap:
            sift_down(0, last)
        return top

    if len(heap) >= 2:
        for i in reversed(range((len(heap) - 2) // 4 + 1)):
            sift_down(i, heap[i])
    popped, index = [], len(batch)
    for score in operations:
        if math.isnan(score):
            if heap:
                popped.append(pop())
        else:
            heap.append((score, index))
            hole = len(heap) - 1
            while hole > 0 and heap[(hole - 1) // 4][0] < score:
                heap[hole] = heap[(hole - 1) // 4]
                hole = (hole - 1) // 4
            heap[hole] = (score, index)
        index += 1
    while heap:
        popped.append(pop())
    return popped


@pytest.mark.parametrize("size", [0, 1, 47, 2 * 1024 * 1024, 2 * 1024 * 1024 + 48, 5 * 1024 * 1024 + 7])
def test_huge_page_copy_keeps_every_byte_at_a_2mb_boundary(size):
    """The copy the search reads its SortedRule records from (incremental_layout.hh's cky_huge_copy, used from
    4 MB of records on): the same bytes, starting a 2 MB page (so that its pages can be huge ones); no copy of
    nothing."""
    data = np.random.default_rng(size).integers(0, 256, size=size, dtype=np.uint8).tobytes()
    copied = _incremental.huge_copy(data)
    if size == 0:
        assert copied is None
        return
    assert copied == (data, True)


@pytest.mark.parametrize("seed", range(3))
def test_partial_lm_cache_finds_what_was_inserted_since_the_last_clear(seed):
    """The partial edges' LM cache against a dict: every key inserted since the last clear is found with its
    score, no other; through growth (thousands of keys) and the shrinking clear after a small use of a big
    table, and many clears (generation stamps)."""
    rng = np.random.default_rng(seed)
    operations, expected, current, previous = [], [], {}, []
    for size in (3000, 10, 0, 1500, 5, 700, 2):
        for key in rng.integers(0, 2 ** 63, size=size, dtype=np.uint64):
            key = int(key)
            if key not in current:
                current[key] = float(np.float32(rng.normal()))
                operations.append(("insert", key, current[key]))
        probes = list(current)[:200] + previous[:50] + [int(k) for k in rng.integers(0, 2 ** 63, size=50,
                                                                                   dtype=np.uint64)]
        for key in probes:
            operations.append(("find", key))
            expected.append(current.get(key))
        operations.append(("clear",))
        expected.append(len(current))
        previous = list(current)  # (found before the clear, not after)
        current = {}
    assert _incremental.score_cache_run(operations) == expected


@pytest.mark.parametrize("seed", range(6))
def test_search_queue_breaks_ties_as_the_scanning_heap(seed):
    """The queue's tournament over a node's four children picks the first best child, as a left-to-right scan
    does: among equal scores it pops the very entries of the scanning 4-ary heap in the same order (so the
    search's pops, hence its output, do not depend on which of the two is built). Many ties: scores from a
    few values; sizes across the first levels' boundaries."""
    rng = np.random.default_rng(100 + seed)
    for size in (0, 1, 2, 4, 5, 6, 20, 21, 22, 85, 86, 300):
        batch = list(rng.integers(-3, 3, size=size) / 2.0)
        operations = [float("nan") if rng.random() < 0.45 else float(rng.integers(-3, 3)) / 2.0
                      for _ in range(400)]
        popped = _incremental.queue_pops(batch, operations)
        assert popped == _scan_heap_pops(batch, operations)
        assert len({index for _, index in popped}) == len(popped)


# ---------------------------------------------------------------------- initial edges' keys, the search trace


def test_junction_gaps_are_the_rarest_word_right_after_a_tail(models, stores):
    """The SortedRule records' junction_gap (what keys a rule's initial edges at their corner, in 1/JUNCTION_GAP_UNITS log10,
    rounded up): the largest minus words-only estimate of a word that follows a tail in the rule's LM
    target, 0 where none does; a word after a word, or a rule's first word (after the previous rule's last
    tail in the flat array), is not one. Checked rule by rule against a loop over each target."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    flagged = unflagged = 0
    for seed, strategy in ((0, "left"), (1, "monolingual"), (2, "icr"), (4, "right")):
        _, store = stores(seed, strategy, n_rules=20, max_arity=4)
        arrays = IncrementalDecoder(store, lm, weights, pop_limit=10).grammar.arrays
        gaps = sorted_rule_arrays(arrays, lm)["sorted_rules"]["junction_gap"]
        rules = list(arrays["pair_rules_sorted"]) + list(arrays["single_rules_sorted"])
        assert len(gaps) == len(rules)
        offsets, target = arrays["rule_target_offsets"], arrays["rule_target_lm"]
        for gap, rule in zip(gaps, rules):
            lo, hi = int(offsets[rule]), int(offsets[rule + 1])
            expected = 0.0
            for k in range(lo + 1, hi):
                if target[k] >= 0 and target[k - 1] < 0:
                    word = np.array([target[k]], dtype=np.int32)
                    expected = max(expected, -_chart_grammar.rule_lm_estimates(lm, word, np.array([0, 1]))[0])
            units = _incremental.JUNCTION_GAP_UNITS
            assert expected * units - 1e-6 <= gap < expected * units + 1  # (1/units log10, rounded up)
            flagged += expected > 0
            unflagged += expected == 0
    assert flagged > 0 and unflagged > 0


def _one_pop_decoders(store, lm, weights, junction_threshold):
    """Cube pruning and incremental search (its initial edges keyed at their corner above junction_threshold:
    -1 every rule's, inf none) at pop limit 1, no unary rounds: every vertex is then a single item (a trie that
    is one leaf)."""
    cube = ChartDecoder(store, lm, weights, SearchSpace(max_unary_depth=0), pop_limit=1)
    incremental = IncrementalDecoder(store, lm, weights, SearchSpace(max_unary_depth=0), pop_limit=1,
                                     engine_options={"junction_threshold": junction_threshold})
    return cube, incremental


def _first_difference(chart, other, n, goal):
    """The first search of a cell's items by grammar rules (cell by span, then start) whose items (symbol,
    score to 1e-6) differ between two charts, and the best item score of each there; None if they have the
    same items. A cell's GOAL items (the glue rules' search) are left out: no rule's search takes a GOAL item
    as a tail, so every earlier rule search being the same means the same tails."""
    def searches(c):
        out = {}
        for cell, symbol, score in zip(c["item_cell"].tolist(), c["item_symbol"].tolist(), c["item_score"].tolist()):
            if symbol != goal:
                out.setdefault(cell, []).append((symbol, round(score, 6)))
        return {key: sorted(items) for key, items in out.items()}
    mine, theirs = searches(chart), searches(other)
    for span in range(1, n + 1):
        for i in range(n - span + 1):
            cell = i * (n + 1) + i + span
            if mine.get(cell, []) != theirs.get(cell, []):
                return (cell, max((s for _, s in mine.get(cell, [])), default=-np.inf),
                        max((s for _, s in theirs.get(cell, [])), default=-np.inf))
    return None


def test_exact_initial_keys_never_pop_below_cube_prunings_best_corner(models, stores):
    """A rule's initial edge keyed at its exact score over the tails' best items is keyed at cube pruning's
    corner. With every rule keyed so (junction_threshold -1), where every vertex is a single item (pop limit
    1, no unary rounds), the first cell whose rule-made items differ from cube pruning's (its tails the same
    items) gets an item at least as good as cube's: the edge popped first is keyed at least at cube's best
    corner, and an edge whose tails are single items is scored exactly when popped. With the paper's
    words-only estimate for every rule (junction_threshold inf) the initial edges are ordered by their rules'
    words alone, and in some grammars that first differing cell is worse than cube's (edges whose words-only
    key is below their exact score): the default keys such rules (a rare word right after a tail) at their
    corner. The glue rules' GOAL items are not compared: glue edges are always keyed at their words-only
    estimate (no SortedRule record), so there a GOAL X whose X gains from the sentence start can pop after
    a worse one, with either threshold."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    worse = {math.inf: 0, -1.0: 0}
    single = 0
    for seed in range(60):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 6)
        cube, _ = _one_pop_decoders(store, lm, weights, math.inf)
        expected = cube.search(words)
        vertices = list(zip(expected.chart["item_cell"].tolist(), expected.chart["item_symbol"].tolist()))
        if len(set(vertices)) < len(vertices):
            continue  # (a vertex of two items, e.g. a word's pass-through and a rule's: a trie of more than a leaf)
        single += 1
        for threshold in worse:
            _, incremental = _one_pop_decoders(store, lm, weights, threshold)
            difference = _first_difference(incremental.search(words).chart, expected.chart, len(words),
                                           incremental.grammar.goal_symbol)
            if difference is not None and difference[1] < difference[2] - 1e-6:
                worse[threshold] += 1
    assert single >= 40
    assert worse[-1.0] == 0
    assert worse[math.inf] > 0  # (the words-only keys do miss a better corner in some of these grammars)


def test_corner_keys_are_cube_prunings_corner_scores_bit_for_bit(models, stores):
    """Corner keys are scored from the rules' SortedRule records straight from KenLM (_corner_key), not
    through cube pruning's _evaluate and the chart's LM cache: the same number, bit for bit, for every key
    (check_corner_keys compares each one with _evaluate's), at every pop limit."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    keys = 0
    for seed in range(8):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 6)
        for limit in (1, 4, 0):
            # (junction_threshold -1: every rule's initial edges at their corner)
            decoder = IncrementalDecoder(store, lm, weights, pop_limit=limit,
                                         engine_options={"junction_threshold": -1.0, "check_corner_keys": True})
            decoder.search(words)
            keys += decoder.engine.corner_keys
            assert decoder.engine.corner_key_mismatches == 0
    assert keys > 100


@pytest.mark.parametrize("junction_threshold", (-1.0, 0.5, 2.0, math.inf))
def test_initial_keys_keep_the_unlimited_search_exact_and_the_pruned_one_consistent(models, stores,
                                                                                    junction_threshold):
    """Another queue key for the initial edges changes which hypotheses a pop limit keeps, never the
    unlimited search (every hypothesis completed: the exhaustive optimum) nor the scores of what is kept."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    for seed in range(6):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 5)
        optimum = exhaustive_optimum(store, lm, weights, words)
        for limit in (0, 1, 3):
            decoder = IncrementalDecoder(store, lm, weights, pop_limit=limit,
                                         engine_options={"junction_threshold": junction_threshold})
            best = decoder.best(decoder.search(words), words)
            if limit == 0:
                assert best.score == pytest.approx(optimum, abs=1e-4)
            assert_pruned_best_is_scored_exactly(best, optimum, weights, lm)


def test_search_trace_counts_each_queue_searchs_pops_and_items(models, stores):
    """The trace (IncrementalSearch.search_trace, a diagnosis) has one row per queue
    search: its complete pops are at most the limit, they add up to the hypotheses proposed outside the
    pass-through words, its items to the chart's items outside them; a search that stopped short of its
    limit emptied its queue."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    for seed in range(6):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 6)
        for limit in (1, 4):
            decoder = IncrementalDecoder(store, lm, weights, pop_limit=limit, engine_options={"trace": True})
            result = decoder.search(words)
            trace = decoder.engine.search_trace()
            oov_edges = int(np.sum(result.chart["edge_rule"] == EDGE_OOV))
            assert len(trace["cell"]) > 0
            assert np.all(trace["pops"] <= trace["limit"])
            assert int(trace["pops"].sum()) + oov_edges == result.stats["edges_proposed"]
            assert int(trace["items_made"].sum()) + oov_edges == result.stats["items"]
            short = trace["pops"] < trace["limit"]
            assert np.all(np.isneginf(trace["stop_key"][short]))
            assert np.all(trace["partial_pops"] >= trace["pops"])


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("flat_items", (2, 4, 1000))
def test_small_flat_tails_keep_the_unlimited_search_exact(models, stores, reference_lm, seed, flat_items):
    """flat_items: a tail whose node has at most that many items is split last and enumerated item by item (its
    items' words seen by the LM or not). Another search order, the same exhaustive search with no pop limit:
    the 1-best is brute force's, the k-best (scores and strings) the pure-Python reference's, and every
    hypothesis is completed (the default search's edges_proposed)."""
    lm = models[1]
    grammar, store = stores(seed, "left")
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 2 + seed % 4)
    expected = IncrementalReferenceDecoder(grammar, reference_lm, weights, space_for(seed)).decode(words, k=8)
    assert expected.best.score == pytest.approx(
        best_by_brute_force(grammar, words, reference_lm, weights, space_for(seed))[0], abs=1e-4)
    default = IncrementalDecoder(store, lm, weights, space_for(seed), pop_limit=0)
    decoder = IncrementalDecoder(store, lm, weights, space_for(seed), pop_limit=0,
                                 engine_options={"flat_items": flat_items})
    result = decoder.search(words)
    assert decoder.best(result, words).score == pytest.approx(expected.best.score, abs=1e-4)
    assert_kbest_equals_reference(decoder.kbest(result, words, 8, unique=False), expected.kbest)
    assert result.stats["edges_proposed"] == default.search(words).stats["edges_proposed"]
    # The reference with flat tails: the same exhaustive hypergraph, so the same k-best and hypotheses.
    flat = IncrementalReferenceDecoder(grammar, reference_lm, weights, space_for(seed),
                                       flat_items=flat_items).decode(words, k=8)
    assert [d.score for d in flat.kbest] == pytest.approx([d.score for d in expected.kbest], abs=1e-9)
    assert flat.edges_proposed == expected.edges_proposed


def test_reference_flat_tails_under_pop_limits(reference_lm):
    """The reference's flat_items: with no pop limit the same hypergraph with fewer queue pops (a small tail's
    items enumerated, not walked down to); under pop limits another search order, never beyond exhaustive
    search, the best derivation scored exactly, each queue's complete pops within its limit."""
    weights = Weights(FEATURES, WEIGHTS)
    pops = {0: 0, 4: 0, 1000: 0}
    for seed in range(8):
        grammar = binarize(random_rules(seed, n_rules=20, max_arity=4), "left")
        words = random_sentence(seed, 6)
        optimum = ReferenceDecoder(grammar, reference_lm, weights).decode(words).best.score
        for limit in (0, 1, 2, 4):
            for flat_items in pops:
                decoder = IncrementalReferenceDecoder(grammar, reference_lm, weights, pop_limit=limit,
                                                      flat_items=flat_items)
                best = decoder.decode(words).best
                assert best is not None and best.score <= optimum + 1e-9
                assert math.isclose(weights.dot(best.features), best.score, abs_tol=1e-9)
                assert all(0 < n <= limit for _, _, n in decoder.queue_pops if limit > 0)
                if limit == 0:
                    assert math.isclose(best.score, optimum, abs_tol=1e-9)
                    pops[flat_items] += decoder.partial_pops
    assert pops[1000] <= pops[4] < pops[0]


def test_small_flat_tails_change_the_pruned_search_consistently(models, stores):
    """Under a pop limit flat_items changes the search (more flat tails, fewer partial LM scorings: the tails
    whose items' words the LM sees are flattened too), never beyond the exhaustive optimum, and every kept
    hypothesis is scored exactly (its features' dot product, its words' LM score)."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    totals = {0: {"flat_tails": 0, "partial_lm_novel": 0}, 8: {"flat_tails": 0, "partial_lm_novel": 0}}
    for seed in range(12):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 7)
        optimum = exhaustive_optimum(store, lm, weights, words)
        for limit in (1, 3, 10):
            for flat_items in totals:
                decoder = IncrementalDecoder(store, lm, weights, pop_limit=limit,
                                             engine_options={"flat_items": flat_items})
                result = decoder.search(words)
                assert_pruned_best_is_scored_exactly(decoder.best(result, words), optimum, weights, lm)
                for key in totals[flat_items]:
                    totals[flat_items][key] += result.stats[key]
    assert totals[8]["flat_tails"] > totals[0]["flat_tails"]
    assert totals[8]["partial_lm_novel"] < totals[0]["partial_lm_novel"]


def test_small_lists_get_shallow_tries(models, stores):
    """A list of at most flat_items items (its tails are always flat: split item by item, never walked down)
    gets a shallow trie: the root, revealing what all its items share, over the items as leaves in list order,
    best first; fewer trie nodes than the full path-compressed tries (flat_items 0) of the same lists."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    nodes_made = {16: 0, 0: 0}
    shallow_roots = 0
    for seed in range(12):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 7)
        for flat_items in nodes_made:
            decoder = IncrementalDecoder(store, lm, weights, pop_limit=0, engine_options={"flat_items": flat_items})
            result = decoder.search(words)
            nodes_made[flat_items] += result.stats["trie_nodes"]
            if not flat_items:
                continue
            nodes = decoder.engine.trie_nodes()
            children = {c for t in range(len(nodes["rank"])) if nodes["n_children"][t] > 0
                        for c in range(nodes["first_child"][t], nodes["first_child"][t] + nodes["n_children"][t])}
            for t in range(len(nodes["rank"])):
                if t in children or nodes["rank"][t] >= 0 or nodes["n_children"][t] < 0 or \
                        nodes["n_items"][t] > flat_items:
                    continue
                lo, n = nodes["first_child"][t], nodes["n_children"][t]
                assert n == nodes["n_items"][t]  # its items, as leaves
                assert all(nodes["rank"][c] == c - lo for c in range(lo, lo + n))
                scores = [nodes["score"][c] for c in range(lo, lo + n)]
                assert scores == sorted(scores, reverse=True) and nodes["score"][t] == scores[0]
                shallow_roots += 1
    assert shallow_roots > 20
    assert nodes_made[16] < nodes_made[0]
