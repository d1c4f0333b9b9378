"""Dependency trees: one head per token, a single root, no cycles, tokens equal to the corpus tokens.

A `DepTree` keeps parallel lists indexed by token position (0-based):

    words       the tokens, exactly the corpus tokens
    heads       the head's position, or -1 for the root
    tags        part of speech (UD UPOS for Spanish, Penn tags for English)
    categories  the phrase category the word heads (NP VP PP ADJP ADVP O): the partitioning
                of the grammar induction handles one category set per iteration (section 3)
    relations   the dependency relation (UD for Spanish, "PARENT/HEAD" labels for English)

Files are CoNLL-U: one block per verse, 10 tab-separated columns, a blank line after each
block; the category is kept in MISC as `Cat=NP`. An empty verse is a block with only the
comment `# empty`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator

from ..errors import DependencyTreeError

CATEGORIES = ("NP", "VP", "PP", "ADJP", "ADVP", "O")


@dataclass
class DepTree:
    words: list[str]
    heads: list[int]
    tags: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)

    def __post_init__(self):
        n = len(self.words)
        self.tags = self.tags or ["X"] * n
        self.categories = self.categories or ["O"] * n
        self.relations = self.relations or ["dep"] * n

    def __len__(self) -> int:
        return len(self.words)

    @property
    def root(self) -> int:
        return self.heads.index(-1)

    def children(self) -> list[list[int]]:
        """children[i]: the dependents of token i, in sentence order."""
        kids: list[list[int]] = [[] for _ in self.words]
        for i, h in enumerate(self.heads):
            if h >= 0:
                kids[h].append(i)
        return kids

    def subtree(self, node: int, kids: list[list[int]] | None = None) -> list[int]:
        """Positions of node and its descendants, sorted."""
        kids = kids or self.children()
        out, stack = [], [node]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(kids[n])
        return sorted(out)

    def to_conllu(self) -> str:
        if not self.words:
            return "# empty\n"
        lines = []
        for i, word in enumerate(self.words):
            lines.append("\t".join([str(i + 1), word, "_", self.tags[i], "_", "_", str(self.heads[i] + 1),
                                    self.relations[i], "_", f"Cat={self.categories[i]}"]))
        return "\n".join(lines) + "\n"

    def bracketed(self) -> str:
        """(head dependents...) with dependents in sentence order, e.g. (creó (principio en el) dios)."""
        if not self.words:
            return ""
        kids = self.children()

        def show(n: int) -> str:
            if not kids[n]:
                return self.words[n]
            return "(" + " ".join([self.words[n]] + [show(c) for c in kids[n]]) + ")"

        return show(self.root)


def check_tree(tree: DepTree, tokens: list[str] | None = None, path: str | None = None,
               line_number: int | None = None) -> None:
    """Raise DependencyTreeError unless `tree` is a well-formed dependency tree over `tokens`."""
    def fail(message: str):
        raise DependencyTreeError(path, message, line_number)

    n = len(tree.words)
    for name in ("heads", "tags", "categories", "relations"):
        if len(getattr(tree, name)) != n:
            fail(f"{len(getattr(tree, name))} {name} for {n} tokens")
    if tokens is not None and list(tokens) != list(tree.words):
        where = next((i for i, (a, b) in enumerate(zip(tokens, tree.words)) if a != b), min(len(tokens), n))
        fail(f"the tree's tokens differ from the corpus tokens at position {where + 1} "
             f"({len(tree.words)} tree tokens, {len(tokens)} corpus tokens)")
    if n == 0:
        return
    roots = [i for i, h in enumerate(tree.heads) if h == -1]
    if len(roots) != 1:
        fail(f"{len(roots)} roots (tokens {', '.join(str(r + 1) for r in roots)}); a tree has exactly one")
    for i, h in enumerate(tree.heads):
        if not -1 <= h < n or h == i:
            fail(f"token {i + 1} ({tree.words[i]!r}) has head {h + 1}, not a token position")
    for category in tree.categories:
        if category not in CATEGORIES:
            fail(f"unknown category {category!r} (one of {' '.join(CATEGORIES)})")
    # No cycles: from every token, following heads reaches the root within n steps.
    depth_known = [False] * n
    depth_known[roots[0]] = True
    for start in range(n):
        path_nodes, node = [], start
        while not depth_known[node]:
            path_nodes.append(node)
            node = tree.heads[node]
            if len(path_nodes) > n:
                fail(f"a cycle through token {start + 1} ({tree.words[start]!r})")
        for p in path_nodes:
            depth_known[p] = True


def read_conllu(path, check: bool = True) -> Iterator[DepTree]:
    """The trees of a CoNLL-U file written by DepTree.to_conllu (multiword ranges are not used)."""
    path = str(path)
    words, heads, tags, categories, relations = [], [], [], [], []
    start_line = 1
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                tree = DepTree(words, heads, tags, categories, relations)
                if check:
                    check_tree(tree, path=path, line_number=start_line)
                yield tree
                words, heads, tags, categories, relations = [], [], [], [], []
                start_line = line_number + 1
                continue
            if line.startswith("#"):
                continue
            columns = line.split("\t")
            if len(columns) != 10 or not columns[0].isdigit() or not columns[6].lstrip("-").isdigit():
                raise DependencyTreeError(path, "not a CoNLL-U token line (10 tab-separated columns, "
                                                "numeric ID and HEAD)", line_number)
            if int(columns[0]) != len(words) + 1:
                raise DependencyTreeError(path, f"token ID {columns[0]}, expected {len(words) + 1}", line_number)
            words.append(columns[1])
            tags.append(columns[3])
            heads.append(int(columns[6]) - 1)
            relations.append(columns[7])
            misc = dict(item.split("=", 1) for item in columns[9].split("|") if "=" in item)
            categories.append(misc.get("Cat", "O"))
    if words:
        raise DependencyTreeError(path, "the last tree has no blank line after it", start_line)


def write_conllu(path, trees) -> None:
    path = str(path)
    with open(path + ".tmp", "w", encoding="utf-8") as out:
        for tree in trees:
            out.write(tree.to_conllu() + "\n")
    os.replace(path + ".tmp", path)


def flat_tree(words: list[str]) -> DepTree:
    """The documented fallback when no parse is available: every token depends on the first."""
    return DepTree(list(words), [-1] + [0] * (len(words) - 1) if words else [])
