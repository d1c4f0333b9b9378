"""`<s>` is scored at the glue start (GOAL -> X is `<s> X`, as Moses' glue rule), not at the root:
a GOAL item over [0, j) carries the exact LM of "<s> its output" (KenLM's full-sentence score
without </s>), its LM state is "sentence start" (left side full and empty), so GOAL items
recombine on their last words alone, and the root adds only </s>. Checked on random tiny
grammars for the cube and incremental searches, pruned and not."""
import math

import pytest

from decoder.lm import LanguageModel
from decoder.search.drivers import search_driver
from decoder.search.model import LM, SearchSpace, Weights
from decoder.search.readback import edge_tails

from search_fixtures import FEATURES, WEIGHTS, random_sentence, random_store_cache, write_arpa
from search_fixtures import lm  # noqa: F401 (the fixture)

SEEDS = range(12)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    return random_store_cache(tmp_path_factory, lambda seed: "icr" if seed % 2 else "left", n_rules=20, max_arity=3)


def goal_prefixes(decoder, result, words):
    """(j, item, output words, LM of the item's best derivation) for every alive GOAL item over [0, j)."""
    chart = result.chart
    n1 = result.n_words + 1
    goal = decoder.grammar.goal_symbol
    out = []
    for item in range(len(chart["item_symbol"])):
        if chart["item_symbol"][item] != goal or not chart["item_alive"][item]:
            continue
        edges, stack = [], [item]
        while stack:  # the item's best derivation, edges in pre-order
            edge = int(chart["item_best_edge"][stack.pop()])
            edges.append(edge)
            stack.extend(reversed(edge_tails(chart, edge)))
        read = decoder.reader.read(chart, result.n_words, words, float(chart["item_score"][item]), 0.0, edges)
        j = int(chart["item_cell"][item]) % n1
        out.append((j, item, read.words, read.features[LM]))
    return out


def make_decoder(search, store, lm, pop_limit):
    weights = Weights(FEATURES, WEIGHTS)
    space = SearchSpace(max_span=20, max_unary_depth=1)
    if pop_limit is None:
        return search_driver(search)(store, lm, weights, space, exhaustive=True)
    return search_driver(search)(store, lm, weights, space, pop_limit=pop_limit)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("search, pop_limit", [("cube", None), ("cube", 3), ("incremental", 0), ("incremental", 3)])
def test_goal_item_lm_is_kenlm_score_of_its_prefix_after_bos(lm, stores, seed, search, pop_limit):
    """Every GOAL item over [0, j), the whole sentence too: the LM of its best derivation (the sum of its
    edges' LM scores) is KenLM's score of "<s> output" without </s> (on main the first words had only
    their estimate without context until the root). The best derivation's total adds just </s>."""
    store = stores(seed)
    words = random_sentence(seed, 5)
    decoder = make_decoder(search, store, lm, pop_limit)
    result = decoder.search(words)
    prefixes = goal_prefixes(decoder, result, words)
    assert {j for j, *_ in prefixes} == set(range(1, len(words) + 1))
    for j, item, output, item_lm in prefixes:
        assert item_lm == pytest.approx(lm.score_sentence(output, bos=True, eos=False), abs=1e-4), (j, output)
    for root, boundary in zip(result.roots, result.root_boundary):  # the root adds </s> only
        (output, item_lm), = [(o, s) for _, i, o, s in prefixes if i == root]
        assert item_lm + boundary == pytest.approx(lm.score_sentence(output), abs=1e-4)
    best = decoder.best(result, words)
    assert best.features[LM] == pytest.approx(lm.score_sentence(best.words), abs=1e-4)
    assert Weights(FEATURES, WEIGHTS).dot(best.features) == pytest.approx(best.score, abs=1e-4)


@pytest.mark.parametrize("search", ["cube", "incremental"])
def test_goal_items_recombine_on_their_last_words(lm, stores, search):
    """With no pruning, GOAL items over one span with the same last n-1 words of "<s> output" are one item
    (their LM states are equal: the first words no longer count), also when their first words differ;
    such merges happen on these grammars (each merged item keeps both edges, for k-best)."""
    merged_first_words = 0
    for seed in SEEDS:
        store = stores(seed)
        words = random_sentence(seed, 5)
        decoder = make_decoder(search, store, lm, None if search == "cube" else 0)
        result = decoder.search(words)
        chart = result.chart
        by_last_words = {}
        for j, item, output, _ in goal_prefixes(decoder, result, words):
            key = (j, tuple((["<s>"] + output)[-(lm.order - 1):]))
            assert key not in by_last_words, f"seed {seed}: GOAL items {by_last_words.get(key)} and {item} not merged"
            by_last_words[key] = item
            # the outputs of the item's incoming edges' best derivations: do their first words differ?
            firsts = set()
            edge = int(chart["item_first_edge"][item])
            while edge >= 0:
                edges, stack = [edge], list(reversed(edge_tails(chart, edge)))
                while stack:
                    e = int(chart["item_best_edge"][stack.pop()])
                    edges.append(e)
                    stack.extend(reversed(edge_tails(chart, e)))
                read = decoder.reader.read(chart, result.n_words, words, 0.0, 0.0, edges)
                firsts.add(tuple(read.words[:1]))
                edge = int(chart["edge_next"][edge])
            merged_first_words += len(firsts) > 1
    assert merged_first_words > 0


def test_sentence_start_of_reference_contexts(tmp_path):
    """The Python reference's glue start and concatenation, against KenLM's scores of whole prefixes: the
    LM inside the pieces (Chiang's p within each) plus that of <s> X and of each concatenation is
    log10 P(output | <s>), whatever the context elision."""
    from decoder.lm import ArpaReference
    from decoder.search.reference import complete_ngrams, elide, glue_concatenation, sentence_end, sentence_start

    arpa = write_arpa(tmp_path)
    reference, kenlm = ArpaReference(arpa), LanguageModel(arpa)
    order = reference.order
    pieces = [("x", "y", "z", "w"), ("y",), (), ("w", "x"), ("z", "z", "y")]
    for first in range(len(pieces)):
        output = list(pieces[first])
        lm, context = sentence_start(elide(pieces[first], order), reference)
        lm += complete_ngrams(pieces[first], reference)
        assert lm == pytest.approx(kenlm.score_sentence(output, bos=True, eos=False), abs=1e-4)
        for piece in pieces[first + 1:] + pieces[:first]:
            step, context = glue_concatenation(context, elide(piece, order), reference)
            lm += step + complete_ngrams(piece, reference)
            output += list(piece)
            assert lm == pytest.approx(kenlm.score_sentence(output, bos=True, eos=False), abs=1e-4), output
            assert context[0] == "<s>"
        assert lm + sentence_end(context, reference) == pytest.approx(kenlm.score_sentence(output), abs=1e-4)
        assert math.isfinite(lm)
