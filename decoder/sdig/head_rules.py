"""English dependency trees from Penn constituency trees with Collins-style head rules.

The paper converts its parses with Xia (2001); the usual choice, used here, is the head
table of Collins (1999, appendix A), with his special rule for NP. Every word depends on
the head word of the lowest constituent where its own maximal projection attaches; the head
of TOP (our verse trees join the pieces of a verse under TOP) is the head of its first
piece, so a verse is one tree.

Style "content" (the default) changes three rules so that the English trees have the
Spanish side's (Universal Dependencies, spaCy) content heads: a PP is headed by its object
(the preposition depends on it, as UD's `case`), an SBAR by its clause (the complementizer
as `mark`), and a VP whose head is an auxiliary (a modal, "to", a form of be/have/do)
followed by a VP by that VP (the auxiliary as `aux`). The category of a word
(decoder.sdig.deptree.CATEGORIES) is, like the Spanish side's (from the UPOS tag), its part
of speech's phrase type (tag_category); a word whose tag says nothing (link grammar's X)
gets its maximal projection's label. Why: the partitioning pairs words of one category
set at a time and cuts whole subtrees, so a noun must be an NP word on both sides and "de
jehová" must be a subtree on both sides ("of yahweh"); with Collins' function heads and
projection categories, measured on the Bible (docs/sdig.md), the induced ETs dropped
prepositions ("de jehová" = "yahweh") and paired nouns with unrelated words.
Style "collins" is the plain table with projection categories.
"""
from __future__ import annotations

from ..extract.trees import Tree, parse_tree
from ..grammar import unescape_word
from .deptree import DepTree, check_tree

# label -> (search direction, priority list); "left" scans children left to right.
HEAD_RULES: dict[str, tuple[str, list[str]]] = {
    "ADJP": ("left", "NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR RBS SBAR RB".split()),
    "ADVP": ("right", "RB RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN".split()),
    "CONJP": ("right", "CC RB IN".split()),
    "FRAG": ("right", []),
    "INTJ": ("left", []),
    "LST": ("right", "LS :".split()),
    "NAC": ("left", "NN NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP FW".split()),
    "PP": ("left", "IN TO VBG VBN RP FW".split()),
    "PRN": ("left", []),
    "PRT": ("right", ["RP"]),
    "QP": ("left", "$ IN NNS NN JJ RB DT CD NCD QP JJR JJS".split()),
    "RRC": ("right", "VP NP ADVP ADJP PP".split()),
    "S": ("left", "TO IN VP S SBAR ADJP UCP NP".split()),
    "SBAR": ("left", "WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG".split()),
    "SBARQ": ("left", "SQ S SINV SBARQ FRAG".split()),
    "SINV": ("left", "VBZ VBD VBP VB MD VP S SINV ADJP NP".split()),
    "SQ": ("left", "VBZ VBD VBP VB MD VP SQ".split()),
    "UCP": ("right", []),
    "VP": ("left", "TO VBD VBN MD VBZ VB VBG VBP VP ADJP NN NNS NP".split()),
    "WHADJP": ("left", "CC WRB JJ ADJP".split()),
    "WHADVP": ("right", "CC WRB".split()),
    "WHNP": ("left", "WDT WP WP$ WHADJP WHPP WHNP".split()),
    "WHPP": ("right", "IN TO FW".split()),
    "TOP": ("left", []),
}

PHRASE_CATEGORY = {
    "NP": "NP", "WHNP": "NP", "NAC": "NP", "NX": "NP", "QP": "NP",
    "VP": "VP", "S": "VP", "SINV": "VP", "SQ": "VP", "SBAR": "VP", "SBARQ": "VP", "TOP": "VP",
    "PP": "PP", "WHPP": "PP", "ADJP": "ADJP", "WHADJP": "ADJP", "ADVP": "ADVP", "WHADVP": "ADVP",
}


def tag_category(tag: str) -> str:
    """The category of a word that projects no phrase, from its Penn tag."""
    if tag.startswith("NN") or tag in ("PRP", "CD", "EX", "WP"):
        return "NP"
    if tag.startswith("VB") or tag == "MD":
        return "VP"
    if tag in ("IN", "TO"):
        return "PP"
    if tag.startswith("JJ"):
        return "ADJP"
    if tag.startswith("RB") or tag == "WRB":
        return "ADVP"
    return "O"


def _np_head(labels: list[str]) -> int:
    """Collins' NP rule over the children's labels."""
    if labels[-1] == "POS":
        return len(labels) - 1
    for i in range(len(labels) - 1, -1, -1):
        if labels[i] in ("NN", "NNP", "NNPS", "NNS", "NX", "POS", "JJR"):
            return i
    for i, label in enumerate(labels):
        if label == "NP":
            return i
    for group in (("$", "ADJP", "PRN"), ("CD",), ("JJ", "JJS", "RB", "QP")):
        for i in range(len(labels) - 1, -1, -1):
            if labels[i] in group:
                return i
    return len(labels) - 1


STYLES = ("content", "collins")
DEFAULT_STYLE = STYLES[0]  # UD-like, as spaCy's Spanish trees (docs/sdig.md)
AUXILIARIES = frozenset("""be is are was were been being am 're 'm 's have has had having do does did
    will shall would should may might must can could 'll 'd ought to""".split())
OBJECT_LABELS = ("NP", "NN", "NNS", "NNP", "NNPS", "PRP", "CD", "X", "WHNP", "S", "SBAR", "SQ", "VP", "ADJP", "QP")
CLAUSE_LABELS = ("S", "SQ", "SINV", "SBARQ", "FRAG")


def head_child(label: str, child_labels: list[str], child_words: list[str | None] | None = None,
               style: str = DEFAULT_STYLE) -> int:
    """Index of the head child of a `label` node with these children's labels; child_words:
    the word of each preterminal child (None for phrases), for the content style's VP rule."""
    base = label.split("-")[0].split("=")[0] or "TOP"
    head = _collins_head(base, child_labels)
    if style == "collins":
        return head
    if base in ("PP", "WHPP") and child_labels[head] in ("IN", "TO"):
        for i in range(head + 1, len(child_labels)):
            if child_labels[i] in OBJECT_LABELS:
                return i
    elif base == "SBAR":
        for i in range(head + 1, len(child_labels)):
            if child_labels[i] in CLAUSE_LABELS:
                return i
    elif base == "VP" and child_words is not None:
        word = child_words[head]
        if child_labels[head] in ("MD", "TO") or (word is not None and word in AUXILIARIES):
            for i in range(head + 1, len(child_labels)):
                if child_labels[i] == "VP":
                    return i
    return head


def _collins_head(base: str, child_labels: list[str]) -> int:
    if base == "NP":
        return _np_head(child_labels)
    direction, priorities = HEAD_RULES.get(base, ("left", []))
    order = list(range(len(child_labels)))
    if direction == "right":
        order.reverse()
    for wanted in priorities:
        for i in order:
            if child_labels[i] == wanted:
                return i
    return order[0]


def dependency_tree(tree: Tree, style: str = DEFAULT_STYLE) -> DepTree:
    """The dependency tree of a constituency tree (decoder.extract.trees.Tree), in one of STYLES."""
    if style not in STYLES:
        raise ValueError(f"unknown head-rule style {style!r} (one of {', '.join(STYLES)})")
    n_words = len(tree.word_node)
    heads = [-1] * n_words
    relations = ["root"] * n_words
    categories = ["O"] * n_words
    tags = ["X"] * n_words
    head_word = [-1] * len(tree)          # node -> position of its lexical head
    for node in range(len(tree) - 1, -1, -1):    # preorder ids: children after parents
        if tree.is_word[node]:
            head_word[node] = tree.word_index[node]
            continue
        kids = tree.children[node]
        if tree.is_preterminal(node):
            head_word[node] = tree.word_index[kids[0]]
            tags[head_word[node]] = tree.label[node]
            continue
        words = [tree.label[tree.children[k][0]] if tree.is_preterminal(k) else None for k in kids]
        h = head_child(tree.label[node], [tree.label[k] for k in kids], words, style)
        head_word[node] = head_word[kids[h]]
        for k in kids:
            if k != kids[h]:
                heads[head_word[k]] = head_word[node]
                relations[head_word[k]] = tree.label[node]
    # maximal projections: the highest phrase each word heads (walk from the root down)
    for node in range(len(tree)):
        if tree.is_word[node] or tree.is_preterminal(node):
            continue
        word = head_word[node]
        if categories[word] == "O":
            categories[word] = PHRASE_CATEGORY.get(tree.label[node].split("-")[0], "O")
    for i in range(n_words):
        if style == "content":
            if tags[i] != "X":
                categories[i] = tag_category(tags[i])
        elif categories[i] == "O" or (categories[i] == "VP" and not tags[i].startswith(("VB", "MD"))):
            categories[i] = tag_category(tags[i])   # e.g. a verse that is one NP under TOP
    words = [unescape_word(w) for w in tree.words]
    return DepTree(words, heads, tags, categories, relations)


def english_dependency_tree(penn: str, tokens: list[str] | None = None, style: str = DEFAULT_STYLE) -> DepTree:
    """Read a Penn tree (train.trees line) and convert it; checks the result against `tokens`."""
    result = dependency_tree(parse_tree(penn), style)
    check_tree(result, tokens)
    return result
