"""The compiled extraction (ext/_extract.pyx) agrees with the pure-Python reference."""
import pytest

from decoder.extract.corpus import CorpusPaths, pair_graph, read_corpus
from decoder.extract.pipeline import count_occurrences, extract_occurrences
from decoder.extract.rules import Limits
from decoder.extract.scoring import LexicalTable, count_links, lexical_weights
from decoder.extract.synthetic import write_corpus

compiled = pytest.importorskip("decoder._ext._extract")

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
