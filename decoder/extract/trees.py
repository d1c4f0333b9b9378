"""Target parse trees: reading Penn bracketed trees and writing Moses tree fragments.

A `Tree` keeps its nodes in preorder (the root is node 0, children have larger
ids than their parent), so a bottom-up pass is a loop over ids in reverse.
Words are nodes too (`is_word`), numbered left to right by `word_node`.
"""
from __future__ import annotations

import re

from .._ext import compiled_module
from ..errors import TreeFormatError
from ..grammar import escape_word

_extract = compiled_module("_extract")  # the tokenizer: parse_tree_arrays

_TOKEN = re.compile(r"\(|\)|[^\s()]+")

class Tree:
    """A parse tree in preorder arrays.

    label[n]     syntactic category of node n, or the word itself for a word node
    children[n]  ids of n's children, left to right (empty for words)
    is_word[n]   whether n is a word (a leaf of the sentence)
    word_node    the node id of each word, in sentence order
    word_index   the inverse: sentence position of word node n (-1 for other nodes)
    """

    __slots__ = ("label", "children", "is_word", "word_node", "word_index")

    def __init__(self, label: list[str], children: list[list[int]], is_word: list[bool]):
        self.label = label
        self.children = children
        self.is_word = is_word
        self.word_node = [n for n, w in enumerate(is_word) if w]
        self.word_index = [-1] * len(label)  # node id -> sentence position of a word
        for position, node in enumerate(self.word_node):
            self.word_index[node] = position

    def __len__(self) -> int:
        return len(self.label)

    @property
    def words(self) -> list[str]:
        return [self.label[n] for n in self.word_node]

    def is_preterminal(self, node: int) -> bool:
        kids = self.children[node]
        return len(kids) == 1 and self.is_word[kids[0]]

    def bracketed(self, node: int = 0) -> str:
        """The subtree at `node` in Penn format, e.g. (NP (DT the) (NN dog))."""
        if self.is_word[node]:
            return self.label[node]
        inside = " ".join(self.bracketed(c) for c in self.children[node])
        return f"({self.label[node]} {inside})"


def parse_tree(text: str) -> Tree:
    """Read one Penn bracketed tree, e.g. "(S (NP (PRP he)) (VP (VB goes)))".

    A nameless outer bracket with one child, as some parsers write
    ("( (S ...) )"), is dropped. Raises TreeFormatError on anything else
    that is not a single well-formed tree with at least one word.
    Tokenized by the compiled parse_tree_arrays (same result as parse_tree_reference).
    """
    arrays = _extract.parse_tree_arrays(text, escape_word)
    if isinstance(arrays, str):  # an error: the reference says what is wrong, in full
        return parse_tree_reference(text)
    return _finish(*arrays)


def parse_tree_reference(text: str) -> Tree:
    """parse_tree in pure Python (the reference of the compiled parse_tree_arrays; see
    decoder.extract.reference)."""
    tokens = _TOKEN.findall(text)
    if not tokens:
        raise TreeFormatError("empty tree")
    label: list[str] = []
    children: list[list[int]] = []
    is_word: list[bool] = []
    stack: list[int] = []  # open nodes
    i = 0
    n_tokens = len(tokens)
    closed_root = False
    while i < n_tokens:
        tok = tokens[i]
        if closed_root:
            raise TreeFormatError(f"text after the end of the tree: {tok!r}")
        if tok == "(":
            nxt = tokens[i + 1] if i + 1 < n_tokens else ")"
            if nxt == "(":
                node_label = ""  # nameless bracket (only allowed as the outer wrapper)
                i += 1
            elif nxt == ")":
                raise TreeFormatError("empty brackets ()")
            else:
                node_label = nxt
                i += 2
            node = len(label)
            label.append(node_label)
            children.append([])
            is_word.append(False)
            if stack:
                children[stack[-1]].append(node)
            elif node != 0:
                raise TreeFormatError("more than one tree on the line")
            stack.append(node)
            continue
        if tok == ")":
            if not stack:
                raise TreeFormatError("unbalanced ')'")
            node = stack.pop()
            if not children[node]:
                raise TreeFormatError(f"node ({label[node]}) has no children")
            if not stack:
                closed_root = True
            i += 1
            continue
        # a word
        if not stack:
            raise TreeFormatError(f"word {tok!r} outside any bracket")
        node = len(label)
        label.append(escape_word(tok))
        children.append([])
        is_word.append(True)
        children[stack[-1]].append(node)
        i += 1
    if stack:
        raise TreeFormatError("unbalanced '(': missing ')'")
    return _finish(label, children, is_word)


def _finish(label: list[str], children: list[list[int]], is_word: list[bool]) -> Tree:
    """The Tree of parsed arrays, after the checks that do not depend on the tokenizer."""
    if label[0] == "":
        if len(children[0]) != 1 or is_word[children[0][0]]:
            raise TreeFormatError("a nameless bracket may only wrap one tree")
        return _drop_root(label, children, is_word)
    if "" in label:  # words are never empty, so this is a node
        raise TreeFormatError("a node without a label inside the tree")
    if True not in is_word:
        raise TreeFormatError("tree without words")
    return Tree(label, children, is_word)


def _drop_root(label, children, is_word) -> Tree:
    """The tree below a nameless one-child root, renumbered from 0."""
    label = label[1:]
    is_word = is_word[1:]
    children = [[c - 1 for c in kids] for kids in children[1:]]
    if any(lab == "" for lab, w in zip(label, is_word) if not w):
        raise TreeFormatError("a node without a label inside the tree")
    return Tree(label, children, is_word)
