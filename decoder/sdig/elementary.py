"""Elementary trees (ETs): connected pieces of a dependency tree, and their canonical keys.

An ET is a set of token positions of a dependency tree that is connected through head
links (one of them, the ET's root, has its head outside the set). Its key lists the words in
sentence order, each with the 1-based index of its head inside the ET (0 for the ET's root):

    positions {0, 1, 2} of "en el principio creó"  ->  "en/3 el/3 principio/0"

Two occurrences with the same key are the same ET (gaps between the words do not matter:
the ETs of the paper are attached to each other at their root nodes). Child ETs attach to
a word of their parent ET; the output keeps them in source order (section 4).
"""
from __future__ import annotations

from typing import Iterator

from .deptree import DepTree


def et_key(tree: DepTree, nodes) -> str:
    ordered = sorted(nodes)
    index = {n: k for k, n in enumerate(ordered)}
    return " ".join(f"{tree.words[n]}/{index[tree.heads[n]] + 1 if tree.heads[n] in index else 0}"
                    for n in ordered)


def parse_key(key: str) -> tuple[list[str], list[int]]:
    """(words, heads) of a key; heads are 0-based ET positions, -1 for the ET's root."""
    words, heads = [], []
    for item in key.split(" "):
        word, head = item.rsplit("/", 1)
        words.append(word)
        heads.append(int(head) - 1)
    return words, heads


def key_root(key: str) -> str:
    words, heads = parse_key(key)
    return words[heads.index(-1)]


def rooted_subsets(root: int, kids: list[list[int]], max_size: int) -> Iterator[tuple[int, ...]]:
    """Every connected set of at most max_size nodes whose top is `root`, each exactly once
    (grown by a frontier: a node left out of the frontier is never added later)."""
    def grow(chosen: tuple[int, ...], frontier: list[int]):
        yield chosen
        if len(chosen) == max_size:
            return
        for k, node in enumerate(frontier):
            yield from grow(chosen + (node,), frontier[k + 1:] + kids[node])

    yield from grow((root,), list(kids[root]))
