"""Two-pass LM-driven hypergraph search (Venugopal et al. 2007) against independent answers:
brute-force enumeration, features recomputed from the derivation, KenLM's score of the
output, and the paper's section 3.2 example (NP2 VP3 PP1 unwinding)."""
import math

import numpy as np

import pytest

from decoder.binarize import binarize
from decoder.binarize.binary_grammar import BinaryRule, assemble_target
from decoder.grammar import Rule
from decoder.lm import ArpaReference, LanguageModel
from decoder.search.brute_force import best_by_brute_force
from decoder.search.model import GLUE, LM, OOV, WORD_COUNT, SearchSpace, Weights
from decoder.search.reference import ReferenceDecoder
from decoder.search.two_pass_reference import TwoPassReference

from search_fixtures import FEATURES, STRATEGIES, WEIGHTS, random_rules, random_sentence, write_arpa


@pytest.fixture(scope="module")
def arpa(tmp_path_factory):
    return write_arpa(tmp_path_factory.mktemp("lm"))


@pytest.fixture(scope="module")
def lm(arpa):
    return ArpaReference(arpa)


def _case(seed, strategy):
    rules = random_rules(seed, n_rules=16, max_arity=3)
    space = SearchSpace(max_span=3 if seed % 3 == 0 else 20, max_unary_depth=2)
    return binarize(rules, strategy), space, random_sentence(seed, 2 + seed % 3)


# ---- (a) unbounded second pass over a first pass that keeps every hyperedge: exact


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_unbounded_two_pass_equals_brute_force(lm, seed, strategy):
    grammar, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    expected_score, expected_words, _ = best_by_brute_force(grammar, words, lm, weights, space)
    result = TwoPassReference(grammar, lm, weights, space).decode(words)
    assert math.isclose(result.best.score, expected_score, abs_tol=1e-9)
    assert lm.score_sentence(result.best.words) == pytest.approx(
        lm.score_sentence(list(expected_words)), abs=1e-9) or result.best.words == list(expected_words)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_unbounded_kbest_equals_exhaustive_kbest(lm, seed, strategy):
    """Keeping the k best of each recombination class, the k best are the exhaustive decoder's."""
    grammar, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    two_pass = TwoPassReference(grammar, lm, weights, space).decode(words, k=6).kbest
    exhaustive = ReferenceDecoder(grammar, lm, weights, space).decode(words, k=6).kbest
    assert [d.score for d in two_pass] == pytest.approx([d.score for d in exhaustive], abs=1e-9)


# ---- (b) the score is weights . features recomputed from the derivation; lm is KenLM's


def _recompute(grammar, weights, tree):
    """(features without lm, output words) from a derivation tree, from the rules alone."""
    features: dict = {}

    def add(name, value):
        features[name] = features.get(name, 0.0) + value

    def walk(node):
        edge, children = node
        blocks = [b for child in children for b in walk(child)]
        rule = edge.rule
        if not isinstance(rule, BinaryRule):
            if rule[0] == "oov":
                add(OOV, 1.0)
                add(WORD_COUNT, 1.0)
                return [[rule[1]]]
            if rule[0] == "glue-start":
                add(GLUE, grammar_glue_start)
                return blocks
            add(GLUE, grammar_glue_concat)
            return [blocks[0] + blocks[1]]
        if rule.origin >= 0:
            for name, value in zip(weights.rule_feature_names, grammar.source_rules[rule.origin].log_scores()):
                add(name, value)
        if rule.target is None:
            return blocks
        add(WORD_COUNT, float(sum(isinstance(t, str) for t in rule.target)))
        return [assemble_target(rule.target, blocks)]

    grammar_glue_start, grammar_glue_concat = 0.0, 1.0  # built-in glue (decoder.search.model.GlueRules)
    (words,) = walk(tree)
    return features, words


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("limits", [{}, {"cell_limit": 2, "edge_limit": 2, "beam": 2.0, "agenda_limit": 5,
                                         "max_pops": 6}])
def test_score_is_weights_times_recomputed_features(lm, arpa, seed, strategy, limits):
    grammar, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    for derivation in TwoPassReference(grammar, lm, weights, space, **limits).decode(words, k=3).kbest:
        features, output = _recompute(grammar, weights, derivation.tree)
        assert output == derivation.words
        features[LM] = LanguageModel(arpa).score_sentence(output)  # KenLM's score of the output
        assert derivation.features[LM] == pytest.approx(features[LM], abs=1e-4)  # KenLM sums float32
        assert derivation.features.keys() == features.keys()
        for name, value in features.items():
            assert derivation.features[name] == pytest.approx(value, abs=1e-4), name
        assert derivation.score == pytest.approx(weights.dot(features), abs=1e-4)


# ---- pruning: fewer pops, never worse than the first pass's own best derivation


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ["left", "monolingual"])
def test_pruned_search_is_bounded_and_beats_first_pass(lm, seed, strategy):
    grammar, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    full = TwoPassReference(grammar, lm, weights, space).decode(words)
    decoder = TwoPassReference(grammar, lm, weights, space, cell_limit=2, edge_limit=3, max_pops=4)
    pruned = decoder.decode(words)
    assert pruned.stats["agenda_pops"] <= 4
    first_pass_best = decoder.complete_greedily(decoder.start(decoder.first_pass(words)))
    assert pruned.best.score >= first_pass_best.score - 1e-9
    assert pruned.best.score <= full.best.score + 1e-9


def test_first_pass_limits(lm):
    grammar, space, words = _case(4, "left")
    weights = Weights(FEATURES, WEIGHTS)
    decoder = TwoPassReference(grammar, lm, weights, space, cell_limit=1, edge_limit=1)
    graph = decoder.first_pass(words)
    seen, stack = set(), [graph.goal]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        assert len(item.edges) == 1
        stack.extend(t for _, edge in item.edges for t in edge.tails)
    # One item per cell and round, one edge each: the second pass can only find the first-pass best.
    result = decoder.decode(words, k=5)
    assert len(result.kbest) == 1


def test_empty_sentence_has_no_derivation(lm):
    result = TwoPassReference(binarize(random_rules(0), "left"), lm, Weights(FEATURES, WEIGHTS)).decode([])
    assert result.best is None


# ---- (c) section 3.2's example: NP2 VP3 PP1, "the nice man" unwound to "a nice man"

EXAMPLE_ARPA = """\
\\data\\
ngram 1=9
ngram 2=4
ngram 3=2

\\1-grams:
-99\t<s>\t0
-1.0\t</s>
-1.0\tthe\t0
-1.0\ta\t0
-1.0\tnice\t0
-1.0\tman\t0
-1.0\tsees\t0
-1.0\tin\t0
-1.0\tpark\t0

\\2-grams:
-2.0\t<s> the\t0
-0.1\t<s> a\t0
-0.5\tthe nice\t0
-0.5\ta nice\t0

\\3-grams:
-0.1\tthe nice man
-1.0\ta nice man

\\end\\
"""


EXAMPLE_RULES = [
    Rule("PP", ("en",), ("in", "the", "park"), (), (0.5,)),
    Rule("NP", ("hombre",), ("the", "nice", "man"), (), (0.5,)),
    Rule("NP", ("hombre",), ("a", "nice", "man"), (), (0.5,)),
    Rule("VP", ("ve",), ("sees",), (), (0.5,)),
    # source PP1 NP2 VP3, target NP2 VP3 PP1
    Rule("S", (0, 1, 2), (1, 2, 0), ("PP", "NP", "VP"), (0.5,)),
]
# (glue costs 10: the glued fragments "in the park the nice man sees" lose)
EXAMPLE_WEIGHTS = {"p": 1.0, "lm": 1.0, "word_count": 0.0, "glue": -10.0}


@pytest.mark.parametrize("strategy", ["monolingual", "icr"])
def test_section_3_2_unwinding_example(tmp_path, strategy):
    path = tmp_path / "example.arpa"
    path.write_text(EXAMPLE_ARPA)
    lm = ArpaReference(str(path))
    weights = Weights(["p"], EXAMPLE_WEIGHTS)
    grammar = binarize(EXAMPLE_RULES, strategy)
    decoder = TwoPassReference(grammar, lm, weights)
    words = ["en", "hombre", "ve"]

    def exact(output):  # the paper's w: the complete derivation's score, computed from scratch
        return 4 * math.log(0.5) + lm.score_sentence(output.split())  # PP, NP, VP and S rules

    w = exact("the nice man sees in the park")
    w2 = exact("a nice man sees in the park")
    assert w2 > w  # the first pass's choice is a search error the second pass can recover from

    # First pass: the NP item keeps e^1 of "the nice man" (better inside its item) and both hyperedges.
    graph = decoder.first_pass(words)
    start = decoder.start(graph)
    assert start.score == pytest.approx(w)
    trace = []
    result = decoder.decode(words, trace=trace)
    # The item whose leftmost reference is NP2, with VP3 and PP1 still to come.
    at_np = [item for item in trace if not item.words and item.rest[0][0].symbol == "NP"]
    assert len(at_np) == 1
    assert [e[0].symbol for e in at_np[0].rest] == ["NP", "VP", "PP"]
    assert at_np[0].score == pytest.approx(w)
    np_item = at_np[0].rest[0][0]
    assert " ".join(np_item.contexts[0][:2]) == "the nice"
    assert len(np_item.edges) == 2
    # Unwinding NP2: "the nice man VP3 PP1" keeps w, "a nice man VP3 PP1" gets w2 (VP3 and PP1
    # have one translation each, so their estimates are exact here).
    children = {" ".join(c.words): c for c in decoder.unwind(at_np[0])}
    assert children["the nice man"].score == pytest.approx(w)
    assert children["a nice man"].score == pytest.approx(w2)
    assert [e[0].symbol for e in children["a nice man"].rest] == ["VP", "PP"]
    # With a trigram LM both depend only on "nice man" and the same VP3 PP1: they recombine, and
    # only the better one is scheduled, so "the nice man" is never expanded.
    assert children["the nice man"].key() == children["a nice man"].key()
    assert children["a nice man"].key()[0] == ("nice", "man")  # the last n-1 = 2 words
    popped = [" ".join(item.words) for item in trace]
    assert "a nice man" in popped
    assert not any(p.startswith("the") for p in popped)
    # The agenda pops the start item first and every later pop extends an earlier one's output.
    assert trace[0].words == () and trace[0].score == pytest.approx(w)
    assert result.best.words == "a nice man sees in the park".split()
    assert result.best.score == pytest.approx(w2)
    assert result.stats["agenda_pops"] == len(trace)


# ---- the compiled search (decoder._ext._two_pass via decoder.search.two_pass) against the reference

from decoder.search.driver import ChartSearchDriver  # noqa: E402
from decoder.search.two_pass import TwoPassSearchDriver  # noqa: E402

from search_fixtures import write_random_store  # noqa: E402

UNBOUNDED = dict(exhaustive=True, two_pass_beam=math.inf, agenda_limit=0, max_pops=-1)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    directory = tmp_path_factory.mktemp("stores")
    cache = {}

    def get(seed, strategy):
        if (seed, strategy) not in cache:
            cache[(seed, strategy)] = write_random_store(directory, seed, strategy, FEATURES, n_rules=16, max_arity=3)
        return cache[(seed, strategy)]

    return get


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compiled_unbounded_equals_reference_and_brute_force(lm, arpa, stores, seed, strategy):
    grammar, store = stores(seed, strategy)
    _, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    expected = TwoPassReference(grammar, lm, weights, space).decode(words, k=2)
    brute_score, _, _ = best_by_brute_force(grammar, words, lm, weights, space)
    decoder = TwoPassSearchDriver(store, LanguageModel(arpa), weights, space, **UNBOUNDED)
    result = decoder.run(words)
    best = decoder.best(result, words)
    assert best.score == pytest.approx(brute_score, abs=1e-4)
    assert best.score == pytest.approx(expected.best.score, abs=1e-4)
    if len(expected.kbest) < 2 or expected.kbest[1].score < expected.kbest[0].score - 1e-3:
        assert best.words == expected.best.words  # a unique best: the same string
    # (b) for the compiled search: features from the derivation, lm = KenLM's score of the output
    assert best.features[LM] == pytest.approx(LanguageModel(arpa).score_sentence(best.words), abs=1e-4)
    assert weights.dot(best.features) == pytest.approx(best.score, abs=1e-4)
    stats = result.stats
    for name in ("edges_proposed", "edges_kept", "lm_queries", "lm_queries_novel", "items_per_cell", "seconds",
                 "cpu_seconds", "second_pass_cpu_seconds", "agenda_pops", "unwindings"):
        assert name in stats, name
    assert stats["agenda_pops"] >= 1 and stats["unwindings"] >= stats["agenda_pops"]
    assert 0 <= stats["second_pass_cpu_seconds"] <= stats["cpu_seconds"]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compiled_kbest_equals_reference_kbest(lm, arpa, stores, seed, strategy):
    grammar, store = stores(seed, strategy)
    _, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    expected = TwoPassReference(grammar, lm, weights, space).decode(words, k=5).kbest
    decoder = TwoPassSearchDriver(store, LanguageModel(arpa), weights, space, kbest_per_class=5, **UNBOUNDED)
    result = decoder.run(words)
    found = decoder.kbest(result, words, 5, unique=False)
    assert [h.score for h in found] == pytest.approx([d.score for d in expected], abs=1e-4)
    for hypothesis in found:
        assert weights.dot(hypothesis.features) == pytest.approx(hypothesis.score, abs=1e-4)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("strategy", ["icr", "monolingual"])
def test_compiled_pruned_search_is_bounded(lm, arpa, stores, seed, strategy):
    grammar, store = stores(seed, strategy)
    _, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    decoder = TwoPassSearchDriver(store, LanguageModel(arpa), weights, space, pop_limit=2, two_pass_beam=1.0, agenda_limit=3,
                             max_pops=3)
    result = decoder.run(words)
    best = decoder.best(result, words)
    assert result.stats["agenda_pops"] <= 3
    assert best.features[LM] == pytest.approx(LanguageModel(arpa).score_sentence(best.words), abs=1e-4)
    assert weights.dot(best.features) == pytest.approx(best.score, abs=1e-4)
    brute_score, _, _ = best_by_brute_force(grammar, words, lm, weights, space)
    assert best.score <= brute_score + 1e-4


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ["left", "monolingual"])
def test_compiled_one_edge_per_item_rescores_the_first_pass_best(arpa, stores, seed, strategy):
    """edge_limit=1: each item unwinds into its best hyperedge only, so the second pass finds
    exactly the first pass's best derivation (ChartSearchDriver.best on the same chart), rescored."""
    _, store = stores(seed, strategy)
    _, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    kenlm = LanguageModel(arpa)
    decoder = TwoPassSearchDriver(store, kenlm, weights, space, exhaustive=True, two_pass_beam=math.inf, agenda_limit=0,
                             max_pops=-1, edge_limit=1)
    result = decoder.run(words)
    found = decoder.kbest(result, words, 5, unique=False)
    first_pass_best = ChartSearchDriver.best(decoder, result, words)
    assert len(found) == 1
    assert found[0].words == first_pass_best.words
    assert found[0].derivation == first_pass_best.derivation
    assert found[0].score == pytest.approx(weights.dot(found[0].features), abs=1e-4)
    assert found[0].features[LM] == pytest.approx(kenlm.score_sentence(found[0].words), abs=1e-4)


@pytest.mark.parametrize("strategy", ["monolingual", "icr"])
def test_compiled_section_3_2_example_pops_as_the_reference(tmp_path, strategy):
    """The compiled agenda recovers "a nice man" with the reference's pops: its estimates
    (KenLM RuleScore over e^1 states) rank the partial items as the reference's do here."""
    from decoder.store import GrammarStore, write_store

    path = tmp_path / "example.arpa"
    path.write_text(EXAMPLE_ARPA)
    grammar = binarize(EXAMPLE_RULES, strategy)
    write_store(grammar, tmp_path / "store", feature_names=["p"])
    weights = Weights(["p"], EXAMPLE_WEIGHTS)
    words = ["en", "hombre", "ve"]
    trace = []
    expected = TwoPassReference(grammar, ArpaReference(str(path)), weights).decode(words, trace=trace)
    decoder = TwoPassSearchDriver(GrammarStore.open(tmp_path / "store"), LanguageModel(str(path)), weights,
                             SearchSpace(), **UNBOUNDED)
    result = decoder.run(words)
    best = decoder.best(result, words)
    assert best.words == "a nice man sees in the park".split()
    assert best.score == pytest.approx(expected.best.score, abs=1e-4)
    assert result.stats["agenda_pops"] == len(trace)
    assert result.stats["unwindings"] == expected.stats["unwindings"]
    assert decoder.engine.popped_scores() == pytest.approx([item.score for item in trace], abs=1e-4)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compiled_suffix_reuse_changes_no_score(arpa, stores, seed, strategy):
    """Reusing the LM of alpha's unchanged tail (behind a full-left reference) gives the same
    estimates, so the same agenda, as rescoring all of alpha."""
    _, store = stores(seed, strategy)
    _, space, words = _case(seed, strategy)
    words = words + random_sentence(seed + 50, 2)  # longer: more partial items with long tails
    weights = Weights(FEATURES, WEIGHTS)
    popped, queries = {}, {}
    for reuse in (False, True):
        decoder = TwoPassSearchDriver(store, LanguageModel(arpa), weights, space,
                                      engine_options={"reuse_suffix": reuse}, **UNBOUNDED)
        result = decoder.run(words)
        popped[reuse] = decoder.engine.popped_scores()
        queries[reuse] = result.stats["lm_queries"]
    assert popped[True] == pytest.approx(popped[False], abs=1e-4)
    assert queries[True] <= queries[False]


# ---- early stops: the second pass (second_pass_stop), the first pass's cell rounds
# (first_pass_items, first_pass_threshold)

def _is_prefix(short, long):
    return len(short) <= len(long) and short == pytest.approx(long[:len(short)], abs=1e-9)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ["left", "icr", "monolingual"])
def test_reference_stop_pops_a_prefix_of_the_full_search(lm, seed, strategy):
    """A stopped second pass pops the first items the full one pops, and stops where its rule says:
    "first" once a complete derivation exists, "bound" once the best of them scores at least what
    the full search pops next (that next item was then the agenda's best)."""
    grammar, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    brute_score, _, _ = best_by_brute_force(grammar, words, lm, weights, space)
    full_trace = []
    full = TwoPassReference(grammar, lm, weights, space).decode(words, trace=full_trace)
    for stop in ("first", "bound"):
        trace = []
        found = TwoPassReference(grammar, lm, weights, space, stop=stop).decode(words, trace=trace)
        assert _is_prefix([t.score for t in trace], [t.score for t in full_trace])
        assert found.best.score <= full.best.score + 1e-9 and full.best.score == pytest.approx(brute_score)
        assert weights.dot(found.best.features) == pytest.approx(found.best.score, abs=1e-9)
        if len(trace) < len(full_trace):  # stopped early: the rule held before the next pop
            if stop == "bound":
                assert found.best.score >= full_trace[len(trace)].score - 1e-9
        if stop == "first":
            first_stop = len(trace)
    assert first_stop <= len(trace)  # "first" stops no later than "bound"


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compiled_second_pass_stop_pops_a_prefix_of_the_full_search(lm, arpa, stores, seed, strategy):
    """As the reference's: the compiled stop rules pop a prefix of the full search's pops, "bound"
    stops only once its best complete derivation scores at least the full search's next pop,
    "first" no later; the 1-best is scored exactly and never above the optimum."""
    grammar, store = stores(seed, strategy)
    _, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    kenlm = LanguageModel(arpa)
    brute_score, _, _ = best_by_brute_force(grammar, words, lm, weights, space)
    full = TwoPassSearchDriver(store, kenlm, weights, space, **UNBOUNDED)
    full.run(words)
    full_pops = full.engine.popped_scores()
    stopped_at = {}
    for stop in ("first", "bound"):
        decoder = TwoPassSearchDriver(store, kenlm, weights, space, second_pass_stop=stop, **UNBOUNDED)
        result = decoder.run(words)
        popped = decoder.engine.popped_scores()
        assert _is_prefix(popped, full_pops)
        stopped_at[stop] = len(popped)
        best = decoder.best(result, words)
        assert best.score <= brute_score + 1e-4
        assert weights.dot(best.features) == pytest.approx(best.score, abs=1e-4)
        assert best.features[LM] == pytest.approx(kenlm.score_sentence(best.words), abs=1e-4)
        if stop == "bound" and len(popped) < len(full_pops):
            assert best.score >= full_pops[len(popped)] - 1e-4
    assert stopped_at["first"] <= stopped_at["bound"]


def _first_pass_chart(decoder, words):
    result = decoder.run(words)
    chart = result.chart
    alive = (chart["item_alive"] != 0) & (chart["item_symbol"] != decoder.grammar.goal_symbol)
    return result, chart, alive


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ["left", "icr", "monolingual"])
def test_first_pass_items_bounds_each_cell_round(arpa, stores, seed, strategy):
    """first_pass_items=1 (no unary rounds, pops unlimited): one item per cell, made by the cell's
    first pop; a bound no cell reaches changes nothing; either way the 1-best is scored exactly."""
    _, store = stores(seed, strategy)
    _, space, words = _case(seed, strategy)
    space = SearchSpace(max_span=space.max_span, max_unary_depth=0)
    weights = Weights(FEATURES, WEIGHTS)
    kenlm = LanguageModel(arpa)
    bounds = dict(two_pass_beam=math.inf, agenda_limit=0, max_pops=-1)
    one = TwoPassSearchDriver(store, kenlm, weights, space, pop_limit=0, first_pass_items=1, **bounds)
    result, chart, alive = _first_pass_chart(one, words)
    n1 = len(words) + 1
    lengths = np.array([j - i for i, j in (divmod(int(c), n1) for c in chart["item_cell"])])
    assert np.bincount(chart["item_cell"][alive & (lengths >= 2)]).max(initial=0) <= 1
    best = one.best(result, words)
    assert weights.dot(best.features) == pytest.approx(best.score, abs=1e-4)
    assert best.features[LM] == pytest.approx(kenlm.score_sentence(best.words), abs=1e-4)
    runs = {}
    for items in (0, 10 ** 6):
        decoder = TwoPassSearchDriver(store, kenlm, weights, space, pop_limit=5, first_pass_items=items, **bounds)
        runs[items] = decoder.run(words), decoder
    (off, off_decoder), (far, far_decoder) = runs[0], runs[10 ** 6]
    assert far.stats["edges_proposed"] == off.stats["edges_proposed"]
    assert far_decoder.best(far, words).score == pytest.approx(off_decoder.best(off, words).score, abs=1e-9)
    assert result.stats["edges_proposed"] <= TwoPassSearchDriver(store, kenlm, weights, space, pop_limit=0,
                                                                 **bounds).run(words).stats["edges_proposed"]


def _pops_by_round(chart, goal_symbol):
    """The first pass's cube-pruning pops of each cell round, in pop order: the score each kept
    hyperedge had when popped (its edge score plus its tails' w^1), read back from the chart."""
    rounds = {}
    score = chart["item_score"]
    for e in range(len(chart["edge_head"])):  # edges are appended as they are popped
        head, rule = chart["edge_head"][e], chart["edge_rule"][e]
        if rule < 0 or chart["item_symbol"][head] == goal_symbol:  # OOV and glue edges: no cube pruning
            continue
        popped = chart["edge_score"][e] + sum(score[t] for t in (chart["edge_tail0"][e], chart["edge_tail1"][e])
                                              if t >= 0)
        rounds.setdefault((int(chart["item_cell"][head]), int(chart["item_round"][head])), []).append(popped)
    return rounds


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ["left", "monolingual"])
def test_first_pass_threshold_drops_pops_below_the_best_so_far(lm, arpa, stores, seed, strategy):
    """first_pass_threshold=beta: in every cell round, no kept pop scores more than beta below a
    pop before it (read back from the chart's hyperedges), and fewer hyperedges are proposed than
    without it; a beta no pop reaches changes nothing; the 1-best is exact and within the optimum."""
    grammar, store = stores(seed, strategy)
    _, space, words = _case(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    kenlm = LanguageModel(arpa)
    bounds = dict(two_pass_beam=math.inf, agenda_limit=0, max_pops=-1, pop_limit=0)
    off = TwoPassSearchDriver(store, kenlm, weights, space, **bounds).run(words)
    wide = TwoPassSearchDriver(store, kenlm, weights, space, first_pass_threshold=1e9, **bounds).run(words)
    assert wide.stats["edges_proposed"] == off.stats["edges_proposed"]
    brute_score, _, _ = best_by_brute_force(grammar, words, lm, weights, space)
    for beta in (1e-9, 0.5):
        decoder = TwoPassSearchDriver(store, kenlm, weights, space, first_pass_threshold=beta, **bounds)
        result = decoder.run(words)
        for pops in _pops_by_round(result.chart, decoder.grammar.goal_symbol).values():
            for k in range(1, len(pops)):
                assert pops[k] >= max(pops[:k]) - beta - 1e-6
        assert result.stats["edges_proposed"] <= off.stats["edges_proposed"]
        best = decoder.best(result, words)
        assert best.score <= brute_score + 1e-4
        assert weights.dot(best.features) == pytest.approx(best.score, abs=1e-4)
        assert best.features[LM] == pytest.approx(kenlm.score_sentence(best.words), abs=1e-4)
