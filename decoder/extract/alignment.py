"""The alignment graph of a sentence pair: spans, complement spans and frontier nodes.

Source positions are bits of a Python int, so a span is a bit set and the
set operations of GHKM (union, closure, intersection) are single int ops.
"""
from __future__ import annotations

from .._ext import compiled_module
from ..errors import AlignmentFormatError
from .trees import Tree

_extract = compiled_module("_extract")  # parse_alignment_links, frontier_arrays


def parse_alignment(text: str, n_source: int, n_target: int) -> list[tuple[int, int]]:
    """Read Pharaoh links "i-j ..." (source index first) and check them against the lengths."""
    links = _extract.parse_alignment_links(text, n_source, n_target)
    if links is None:  # an error: the reference says what is wrong
        return parse_alignment_reference(text, n_source, n_target)
    return links


def parse_alignment_reference(text: str, n_source: int, n_target: int) -> list[tuple[int, int]]:
    """parse_alignment in pure Python (it also says what is wrong); the reference of the
    compiled parse_alignment_links (see decoder.extract.reference)."""
    links = []
    for pair in text.split():
        i, dash, j = pair.partition("-")
        if not dash or not i.isdigit() or not j.isdigit():
            raise AlignmentFormatError(f"alignment point {pair!r} is not of the form i-j")
        i, j = int(i), int(j)
        if i >= n_source:
            raise AlignmentFormatError(f"alignment point {pair}: source index {i} out of range "
                                       f"(the sentence has {n_source} words)")
        if j >= n_target:
            raise AlignmentFormatError(f"alignment point {pair}: target index {j} out of range "
                                       f"(the tree has {n_target} words)")
        links.append((i, j))
    return list(dict.fromkeys(links))  # a repeated point counts once


def closure_bounds(span: int) -> tuple[int, int]:
    """(first, last) source position of a non-empty span."""
    return (span & -span).bit_length() - 1, span.bit_length() - 1


def spans(tree: Tree, n_source: int, links: list[tuple[int, int]]):
    """(span, complement, frontier, lo, hi) per node, as AlignmentGraph describes them, before
    the root's closure is widened. The pure-Python reference of the compiled `frontier_arrays`."""
    n_nodes = len(tree)
    children = tree.children
    word_node = tree.word_node
    span = [0] * n_nodes
    for i, j in links:
        span[word_node[j]] |= 1 << i
    for node in range(n_nodes - 1, -1, -1):  # children before parents
        for c in children[node]:
            span[node] |= span[c]

    complement = [0] * n_nodes
    for node in range(n_nodes):  # parents before children
        kids = children[node]
        if not kids:
            continue
        outside = complement[node]
        if len(kids) == 1:
            complement[kids[0]] = outside
            continue
        # union of the siblings' spans on each side, via prefix and suffix unions
        prefix = [0] * (len(kids) + 1)
        for k, c in enumerate(kids):
            prefix[k + 1] = prefix[k] | span[c]
        suffix = 0
        for k in range(len(kids) - 1, -1, -1):
            c = kids[k]
            complement[c] = outside | prefix[k] | suffix
            suffix |= span[c]

    is_word = tree.is_word
    frontier = [False] * n_nodes
    lo = [-1] * n_nodes
    hi = [-1] * n_nodes
    for node in range(n_nodes):
        s = span[node]
        if s == 0 or is_word[node]:
            continue
        first = (s & -s).bit_length() - 1
        last = s.bit_length() - 1
        lo[node] = first
        hi[node] = last
        closure = (1 << (last + 1)) - (1 << first)
        frontier[node] = (closure & complement[node]) == 0
    return span, complement, frontier, lo, hi


class AlignmentGraph:
    """GHKM's view of one (source, tree, alignment) triple.

    span[n]        source positions aligned to words under n (bit set)
    complement[n]  union of the spans of the nodes neither above nor below n
    frontier[n]    n is a non-word node whose span is non-empty and whose
                   closure does not meet its complement span
    lo[n], hi[n]   the closure of span[n] (the root's is widened to the whole
                   sentence, see `rules` for the unaligned-word policy)
    source_links   per source position, the target words aligned to it
    target_links   per target word, the source positions aligned to it

    frontier, lo and hi come from the compiled `frontier_arrays`; span and
    complement are computed (by `spans`, its reference) only when asked for.
    """

    __slots__ = ("tree", "source_words", "n_source", "links", "source_links", "target_links",
                 "frontier", "lo", "hi", "_spans")

    def __init__(self, tree: Tree, source_words: list[str], links: list[tuple[int, int]]):
        self.tree = tree
        self.source_words = source_words
        self.n_source = n_source = len(source_words)
        self.links = links
        self.source_links: list[list[int]] = [[] for _ in range(n_source)]
        self.target_links: list[list[int]] = [[] for _ in tree.word_node]
        for i, j in links:
            self.source_links[i].append(j)
            self.target_links[j].append(i)
        self._spans = None
        frontier, lo, hi = _extract.frontier_arrays(tree.children, tree.is_word, tree.word_node, n_source, links)
        if frontier[0]:
            lo[0], hi[0] = 0, n_source - 1
        self.frontier = frontier
        self.lo = lo
        self.hi = hi

    @property
    def span(self) -> list[int]:
        if self._spans is None:
            self._spans = spans(self.tree, self.n_source, self.links)
        return self._spans[0]

    @property
    def complement(self) -> list[int]:
        if self._spans is None:
            self._spans = spans(self.tree, self.n_source, self.links)
        return self._spans[1]

    def frontier_nodes(self) -> list[int]:
        return [n for n, f in enumerate(self.frontier) if f]
