"""Reading the line-parallel training corpus: source tokens, target trees, alignments.

A bad line (unparsable tree, a tree with more or fewer leaves than the target tokens,
an alignment point that is malformed or out of range, a missing line in one
of the files) raises `BadLine` naming the file and line; the caller reports
it, counts it and goes on with the next line, so no other line moves.
"""
from __future__ import annotations

import itertools
from typing import Iterator, NamedTuple

from ..grammar import escape_word, open_text
from .alignment import AlignmentFormatError, AlignmentGraph, parse_alignment
from .trees import TreeFormatError, parse_tree


class BadLine(Exception):
    """A sentence pair that is skipped; str() is "file:line: reason"."""

    def __init__(self, path: str, line_number: int, kind: str, message: str):
        super().__init__(f"{path}:{line_number}: {message}")
        self.kind = kind  # short reason, counted in the summary


class PairLines(NamedTuple):
    line_number: int  # 1-based, the same in every file
    source: str | None  # None when that file has ended
    tree: str | None
    alignment: str | None
    target: str | None  # only when a target-token file is given


class CorpusPaths(NamedTuple):
    source: str
    trees: str
    alignment: str
    target: str | None = None


def read_corpus(paths: CorpusPaths) -> Iterator[PairLines]:
    """The lines of the parallel files, together, until the longest file ends."""
    files = [open_text(paths.source), open_text(paths.trees), open_text(paths.alignment)]
    if paths.target:
        files.append(open_text(paths.target))
    try:
        for number, lines in enumerate(itertools.zip_longest(*files), start=1):
            target = lines[3] if paths.target else None
            yield PairLines(number, lines[0], lines[1], lines[2], target)
    finally:
        for f in files:
            f.close()


def count_lines(path: str) -> int:
    """Lines in a (possibly gzipped) file, for the progress bar."""
    with open_text(path) as f:
        return sum(1 for _ in f)


def pair_graph(pair: PairLines, paths: CorpusPaths) -> AlignmentGraph:
    """The alignment graph of one line of the corpus, or BadLine."""
    n = pair.line_number
    for text, path in ((pair.source, paths.source), (pair.tree, paths.trees),
                       (pair.alignment, paths.alignment), (pair.target, paths.target)):
        if text is None and path is not None:
            raise BadLine(path, n, "missing_line", "the file ends before the other files do")
    source = [escape_word(w) for w in pair.source.split()]
    if not source:
        raise BadLine(paths.source, n, "empty_source", "empty source sentence")
    try:
        tree = parse_tree(pair.tree)
    except TreeFormatError as e:
        raise BadLine(paths.trees, n, "unparsable_tree", f"unparsable tree: {e}") from None
    if pair.target is not None:
        # The alignment indexes the target tokens, so their number must be the number of leaves;
        # the words themselves may be written differently (the rules use the tree's).
        n_tokens = len(pair.target.split())
        n_leaves = len(tree.word_node)
        if n_tokens != n_leaves:
            raise BadLine(paths.trees, n, "leaves_mismatch",
                          f"the tree has {n_leaves} leaves but {paths.target} has {n_tokens} tokens")
    try:
        links = parse_alignment(pair.alignment, len(source), len(tree.word_node))
    except AlignmentFormatError as e:
        raise BadLine(paths.alignment, n, "bad_alignment", str(e)) from None
    return AlignmentGraph(tree, source, links)
