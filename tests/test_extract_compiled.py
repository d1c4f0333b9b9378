"""The compiled extraction (ext/_extract.pyx) agrees with its pure-Python reference (decoder.extract.reference)."""
import re

import pytest

from decoder._ext import compiled_module
from decoder.extract.corpus import CorpusPaths, pair_graph, read_corpus
from decoder.extract.pipeline import count_occurrences, extract_occurrences
from decoder.extract.reference import lexical_weights
from decoder.extract.rules import Limits
from decoder.extract.scoring import LexicalTable, count_links
from decoder.extract.synthetic import write_corpus

compiled = compiled_module("_extract")  # required: a missing build fails, never skips

LIMITS = [Limits(), Limits(compose=1), Limits(compose=4, max_nonterminals=3, max_symbols=6, max_depth=4)]


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    paths = write_corpus(str(tmp_path_factory.mktemp("corpus")), 150, seed=11)
    corpus = CorpusPaths(paths["es"], paths["trees"], paths["align"])
    return [pair_graph(pair, corpus) for pair in read_corpus(corpus) if pair.source.strip()]


@pytest.mark.parametrize("limits", LIMITS)
def test_compiled_rules_equal_the_reference(graphs, limits):
    for graph in graphs:
        reference = extract_occurrences(graph, limits, compiled=False)
        fast = compiled.extract_sentence(graph.tree, graph, limits.compose, limits.max_nonterminals,
                                         limits.max_symbols, limits.max_depth)
        assert fast == reference  # same rules, same order


def test_compiled_counting_equals_the_reference(graphs):
    counts = [({}, {}, {}, {}), ({}, {}, {}, {})]
    totals = [[0, 0], [0, 0]]
    for graph in graphs:
        for k, use_compiled in enumerate((False, True)):
            n, m = count_occurrences(graph, Limits(), use_compiled, *counts[k])
            totals[k][0] += n
            totals[k][1] += m
    assert counts[0] == counts[1] and totals[0] == totals[1]


def test_compiled_lexical_weights_equal_the_reference(graphs):
    links = {}
    for g in graphs:
        count_links(g.source_words, g.tree.words, g.source_links, g.target_links, links)
    table = LexicalTable(links)
    for graph in graphs[:40]:
        for fields, *_ in extract_occurrences(graph, Limits(), compiled=False):
            source, target, _, alignment, _ = fields
            assert compiled.lexical_weights(source, target, alignment, table.t_given_s, table.s_given_t) == \
                lexical_weights(source, target, alignment, table)


def test_compiled_table_lines_equal_the_reference(graphs):
    from decoder.extract.reference import table_lines
    from decoder.extract.scoring import lhs_of

    counts, lhs = {}, {}
    for graph in graphs[:60]:
        count_occurrences(graph, Limits(), False, counts, lhs, {}, {})
    target_count = {}
    for fields, c in counts.items():
        target_count[fields[1]] = target_count.get(fields[1], 0) + c
    rows = [(f[0], f[1], f[3], f[4], c, target_count[f[1]], 0.5 / (1 + k % 7), 1e-5 * (k % 3 + 1))
            for k, (f, c) in enumerate(counts.items())]
    assert all(lhs_of(r[1]) in lhs for r in rows)
    for min_count, keep in ((0, None), (2, None), (0, lambda source: "[X][" in source)):
        assert compiled.table_lines(rows, lhs, min_count, keep) == table_lines(rows, lhs, min_count, keep)


def test_compiled_merge_by_target_equals_the_reference(graphs):
    from decoder.extract.reference import merge_by_target

    links = {}
    for g in graphs:
        count_links(g.source_words, g.tree.words, g.source_links, g.target_links, links)
    table = LexicalTable(links)
    record_lists = []
    for start in range(0, 90, 30):  # three "chunks", so rules meet again across chunks
        counts = {}
        for graph in graphs[start:start + 30] + graphs[:10]:
            count_occurrences(graph, Limits(), False, counts, {}, {}, {})
        record_lists.append([fields + (c,) for fields, c in counts.items()])
    bounds = sorted({r[0] for records in record_lists for r in records})[::50]
    assert compiled.merge_by_target(record_lists, bounds, table.t_given_s, table.s_given_t) == \
        merge_by_target(record_lists, bounds, table)


TREES = ["(S (NP (PRP he)) (VP (VB goes)))", "( (S (NP (NN a|b)) (VP (VB [x]))) )", "(TOP (S (X god) (. .)) (S (NN x)))",
         "(S\n  (NP\u00a0he)\n)", "(S (NP", "(S (NP he)))", "S NP he", "()", "", "(S) (T x)", "(S (NP he)) x", "( )",
         "(S (A a) (B b) (C c))", "(S ((NP he)))", "(S (NP he) (VP))", "(ROOT\t(S (-LRB- -LRB-) (NN x)))"]


@pytest.mark.parametrize("text", TREES)
def test_compiled_tree_reading_equals_the_reference(text):
    from decoder.extract.reference import parse_tree_reference
    from decoder.extract.trees import TreeFormatError, parse_tree
    from decoder.grammar import escape_word

    arrays = compiled.parse_tree_arrays(text, escape_word)
    try:
        reference = parse_tree_reference(text)
    except TreeFormatError as error:
        with pytest.raises(TreeFormatError, match=re.escape(str(error))):
            parse_tree(text)
        return
    tree = parse_tree(text)
    assert not isinstance(arrays, str)
    assert (tree.label, tree.children, tree.is_word) == (reference.label, reference.children, reference.is_word)


def test_compiled_tree_reading_on_a_corpus(graphs):
    from decoder.extract.reference import parse_tree_reference
    from decoder.grammar import escape_word

    for graph in graphs:
        text = graph.tree.bracketed()
        label, children, is_word = compiled.parse_tree_arrays(text, escape_word)
        reference = parse_tree_reference(text)
        assert (label, children, is_word) == (reference.label, reference.children, reference.is_word)


def test_compiled_frontier_equals_the_reference(graphs):
    from decoder.extract.reference import spans

    assert max(g.n_source for g in graphs) > 64  # bit sets of more than one 64-bit word
    for g in graphs:
        t = g.tree
        _, _, frontier, lo, hi = spans(t, g.n_source, g.links)
        assert compiled.frontier_arrays(t.children, t.is_word, t.word_node, g.n_source, g.links) == \
            (frontier, lo, hi)


def test_compiled_frontier_on_a_long_reordered_sentence():
    import random

    from decoder.extract.reference import spans
    from decoder.extract.trees import parse_tree

    rng = random.Random(3)
    n = 150
    tree = parse_tree("(S " + " ".join(f"(P{k % 3} (T w{k}))" for k in range(n)) + ")")
    for _ in range(20):
        links = sorted({(rng.randrange(n), rng.randrange(n)) for _ in range(n)})
        _, _, frontier, lo, hi = spans(tree, n, links)
        assert compiled.frontier_arrays(tree.children, tree.is_word, tree.word_node, n, links) == (frontier, lo, hi)


@pytest.mark.parametrize("text", ["0-1 2-0 0-1", "", "  3-3\t0-0 ", "0-5", "4-0", "0:1", "a-b", "0-", "-1", "1-1-1",
                                  "00-01", "1 -1", "0-0x", "\u00a01-2\u00a0"])
def test_compiled_alignment_reading_equals_the_reference(text):
    from decoder.extract.alignment import AlignmentFormatError
    from decoder.extract.reference import parse_alignment_reference

    try:
        reference = parse_alignment_reference(text, 4, 4)
    except AlignmentFormatError:
        assert compiled.parse_alignment_links(text, 4, 4) is None
        return
    assert compiled.parse_alignment_links(text, 4, 4) == reference
