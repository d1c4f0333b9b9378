"""The alignment graph of a sentence pair: spans, complement spans and frontier nodes.

Source positions are bits of a Python int, so a span is a bit set and the
set operations of GHKM (union, closure, intersection) are single int ops.
"""
from __future__ import annotations

from .trees import Tree


class AlignmentFormatError(ValueError):
    """An alignment line that cannot be read or points outside the sentence pair."""


def parse_alignment(text: str, n_source: int, n_target: int) -> list[tuple[int, int]]:
    """Read Pharaoh links "i-j ..." (source index first) and check them against the lengths."""
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


class AlignmentGraph:
    """GHKM's view of one (source, tree, alignment) triple.

    span[n]        source positions aligned to words under n (bit set)
    complement[n]  union of the spans of the nodes neither above nor below n
    frontier[n]    n is a non-word node whose span is non-empty and whose
                   closure does not meet its complement span
    lo[n], hi[n]   the closure of span[n] (the root's is widened to the whole
                   sentence, see `rules` for the unaligned-word policy)
    """

    __slots__ = ("tree", "source_words", "n_source", "source_links", "target_links", "span", "complement",
                 "frontier", "lo", "hi")

    def __init__(self, tree: Tree, source_words: list[str], links: list[tuple[int, int]]):
        self.tree = tree
        self.source_words = source_words
        self.n_source = n_source = len(source_words)
        n_nodes = len(tree)
        children = tree.children
        word_node = tree.word_node
        self.source_links: list[list[int]] = [[] for _ in range(n_source)]  # source pos -> target words
        self.target_links: list[list[int]] = [[] for _ in word_node]  # target word -> source positions
        span = [0] * n_nodes
        for i, j in links:
            self.source_links[i].append(j)
            self.target_links[j].append(i)
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
        if frontier[0]:
            lo[0], hi[0] = 0, n_source - 1
        self.span = span
        self.complement = complement
        self.frontier = frontier
        self.lo = lo
        self.hi = hi

    def frontier_nodes(self) -> list[int]:
        return [n for n, f in enumerate(self.frontier) if f]
