"""Link-grammar constituent output -> Penn trees whose leaves are exactly our tokens.

Link-grammar's `constituent_tree()` brackets phrases (S NP VP PP ADJP ADVP SBAR
WHNP PRT ...) but has no part-of-speech level; its leaves carry the
dictionary's word-class suffix ("created.v-d", "heavens.n"), null-linked words
appear in braces ("{how}"), unknown words carry "{?}" and the first word is
lowercased. Sometimes, when the linkage has disconnected parts, it drops words.

`penn_tree(lg_tree, tokens)` turns that into a Penn tree with a preterminal
above every word:

* the preterminal comes from the suffix (.n -> NN, .v-d -> VBD, ... see
  `SUFFIX_TAGS`); closed-class words (`FUNCTION_WORD_TAGS`), numbers and
  punctuation (`PUNCTUATION_TAGS`) get their own tags whatever the suffix;
  anything else is X;
* leaves are matched to the tokens in order; a token that link-grammar split
  into several leaves is merged back into the first, and a token missing from
  the tree (dropped by link-grammar, or never sent to it, like brackets) is
  reinserted next to the preceding leaf;
* the leaf text is always our token, so leaves == tokens by construction.

Sentences (segments of a verse) are parsed separately; `verse_tree` joins
their trees under one TOP node; `fallback_tree` is a flat tree used when there
is no parse at all.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import LeafMismatch


@dataclass
class Node:
    """A tree node: a phrase (children are Nodes) or a preterminal (one str child)."""
    label: str
    children: list = field(default_factory=list)

    def is_preterminal(self) -> bool:
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def to_penn(self) -> str:
        if self.is_preterminal():
            return f"({self.label} {self.children[0]})"
        return f"({self.label} " + " ".join(child.to_penn() for child in self.children) + ")"

    def leaves(self) -> list[str]:
        if self.is_preterminal():
            return [self.children[0]]
        return [leaf for child in self.children for leaf in child.leaves()]


FUNCTION_WORD_TAGS = {
    **dict.fromkeys("the a an this that these those every each all some no any another both either neither".split(), "DT"),
    **dict.fromkeys(("of in on at by for with from into upon unto about against before after over under through "
                     "among between without within toward towards out up down off above below beside near across "
                     "around behind beyond during until till since because if though although whether than as "
                     "concerning throughout except like").split(), "IN"),
    "to": "TO",
    **dict.fromkeys(("i you he she it we they me him her us them thee thou ye myself yourself himself herself itself "
                     "ourselves yourselves themselves thyself").split(), "PRP"),
    **dict.fromkeys("my your his its our their thy thine mine ours yours theirs".split(), "PRP$"),
    **dict.fromkeys("and or but nor yet".split(), "CC"),
    **dict.fromkeys("who whom whose what whoever whatever".split(), "WP"),
    "which": "WDT",
    **dict.fromkeys("when where why how whence whither wherefore".split(), "WRB"),
    **dict.fromkeys("will would shall should can could may might must shalt wilt".split(), "MD"),
    **dict.fromkeys(("not", "n't", "never"), "RB"),
    "'s": "POS",
    **dict.fromkeys("was were".split(), "VBD"),
    **dict.fromkeys("is are am be art".split(), "VB"),
    "been": "VBN", "being": "VBG",
    **dict.fromkeys("have has hath do does doth".split(), "VB"),
    **dict.fromkeys("had did".split(), "VBD"),
    **dict.fromkeys(("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                     "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
                     "hundred thousand thousands hundreds").split(), "CD"),
    **dict.fromkeys(("won't can't couldn't wouldn't shouldn't mustn't shan't").split(), "MD"),
    **dict.fromkeys(("don't doesn't isn't aren't haven't hasn't ain't").split(), "VB"),
    **dict.fromkeys(("didn't wasn't weren't hadn't").split(), "VBD"),
    **dict.fromkeys(("therefore away again together so surely today here only indeed certainly "
                     "immediately thus now also then very too even still already forever truly "
                     "greatly exceedingly perhaps almost else henceforth hither thither").split(), "RB"),
    **dict.fromkeys("lest while whereas unless".split(), "IN"),
    **dict.fromkeys(("nothing everyone anyone anything none someone something everything nobody "
                     "everybody anybody somebody").split(), "NN"),
    **dict.fromkeys("many much more most other such same half few several".split(), "JJ"),
    **dict.fromkeys("behold amen alas oh hallelujah".split(), "UH"),
    "there": "EX",
}
PUNCTUATION_TAGS = {
    ",": ",", ".": ".", "!": ".", "?": ".", ";": ":", ":": ":", "--": ":", "-": ":",
    '"': "''", "'": "''", "-LRB-": "-LRB-", "-RRB-": "-RRB-",
}
# link-grammar suffix (the part after the dot, before any "-") -> tag
SUFFIX_TAGS = {
    "n": "NN", "s": "NN", "u": "NN", "x": "NN", "id": "NN",
    "p": "NNS",
    "m": "NNP", "f": "NNP", "b": "NNP", "l": "NNP", "o": "NNP", "t": "NNP",
    "v": "VB", "w": "VB", "q": "VB",
    "g": "VBG",
    "a": "JJ", "e": "RB", "r": "IN", "c": "IN",
}
NUMBER_RE = re.compile(r"^\d[\d.,:]*$")
LEAF_SUFFIX_RE = re.compile(r"^(?P<word>.*?[^.])\.(?P<suffix>[a-z#][^.]*)$")
UNKNOWN_MARK_RE = re.compile(r"[\[{][?!~*&][\]}]")
# tokens never sent to link-grammar (they break its bracketed output); reinserted afterwards
HIDDEN_FROM_PARSER = {"-LRB-", "-RRB-", "[", "]", "{", "}"}


def tag_for(word: str, suffix: str | None, capitalized: bool = False) -> str:
    """The preterminal of a token `word` with link-grammar suffix `suffix`.

    `capitalized`: the word was capitalized in the text, not at the start of
    its sentence; a capitalized word without class information is a name (NNP).
    """
    if word in PUNCTUATION_TAGS:
        return PUNCTUATION_TAGS[word]
    word = word.lower()
    if word in FUNCTION_WORD_TAGS:
        return FUNCTION_WORD_TAGS[word]
    if NUMBER_RE.match(word):
        return "CD"
    if not any(ch.isalnum() for ch in word):
        return "SYM"
    if not suffix:
        return "NNP" if capitalized else "X"
    if "j" in suffix.split("-")[0]:              # .j-n .ij .jr ...: conjunctions
        return "CC"
    head, _, modifier = suffix.partition("-")
    tag = SUFFIX_TAGS.get(head, "X")
    if tag == "VB" and modifier.startswith("d"):
        return "VBD"
    if tag == "JJ" and modifier in ("c", "s"):
        return "JJR" if modifier == "c" else "JJS"
    return tag


def split_leaf(leaf: str) -> tuple[str, str | None]:
    """("created", "v-d") from "created.v-d"; also strips null-link braces and unknown-word marks."""
    if len(leaf) > 2 and leaf.startswith("{") and leaf.endswith("}"):
        leaf = leaf[1:-1]
    if len(leaf) > 2 and leaf.startswith("[") and leaf.endswith("]"):
        leaf = leaf[1:-1]
    leaf = UNKNOWN_MARK_RE.sub("", leaf)
    match = LEAF_SUFFIX_RE.match(leaf)
    if match:
        return match["word"], match["suffix"]
    return leaf, None


def read_lg_tree(text: str) -> Node:
    """Parse link-grammar's bracketed constituent string into Nodes (leaves stay str)."""
    tokens = re.findall(r"\(|\)|[^\s()]+", text)
    if not tokens or tokens[0] != "(":
        raise ValueError(f"link-grammar tree does not start with '(': {text[:80]!r}")
    position = 0

    def read() -> Node:
        nonlocal position
        position += 1                                   # "("
        if position >= len(tokens) or tokens[position] in "()":
            raise ValueError(f"link-grammar tree: missing label at token {position}: {text[:80]!r}")
        node = Node(tokens[position])
        position += 1
        while position < len(tokens) and tokens[position] != ")":
            if tokens[position] == "(":
                node.children.append(read())
            else:
                node.children.append(tokens[position])
                position += 1
        if position >= len(tokens):
            raise ValueError(f"link-grammar tree: unbalanced brackets: {text[:80]!r}")
        position += 1                                   # ")"
        return node

    root = read()
    if position != len(tokens):
        raise ValueError(f"link-grammar tree: text after the root: {text[:80]!r}")
    return root


def _to_preterminals(node: Node, order: list[tuple[Node, str, str | None]]) -> None:
    """Replace every str leaf by a preterminal Node; record (preterminal, word, suffix) in order."""
    for index, child in enumerate(node.children):
        if isinstance(child, str):
            word, suffix = split_leaf(child)
            if word in ("{", "}", "[", "]", ""):        # link-grammar's rendering of brackets
                preterminal = Node("", [""])
            else:
                preterminal = Node("X", [word])
            node.children[index] = preterminal
            order.append((preterminal, word, suffix))
        else:
            _to_preterminals(child, order)


def _parents(node: Node, table: dict[int, Node]) -> dict[int, Node]:
    for child in node.children:
        if isinstance(child, Node):
            table[id(child)] = node
            _parents(child, table)
    return table


def _remove_empty(node: Node) -> bool:
    """Drop preterminals with empty label and phrases left without children; True if node is empty."""
    kept = []
    for child in node.children:
        if isinstance(child, Node) and (child.label == "" or _remove_empty(child)):
            continue
        kept.append(child)
    node.children = kept
    return not node.children


def name_like(cased_tokens: list[str] | None, position: int) -> bool:
    """True if the token at `position` is capitalized in mid-sentence (right after a word)."""
    if cased_tokens is None or position == 0:
        return False
    return cased_tokens[position][:1].isupper() and cased_tokens[position - 1][:1].isalnum()


def penn_tree(lg_tree: str, tokens: list[str], cased_tokens: list[str] | None = None,
              max_skip: int = 4) -> tuple[Node, int]:
    """Penn tree (a phrase Node) for one sentence, and how many tokens were reinserted.

    `cased_tokens` (the tokens in their original casing) let capitalized
    words without class information be tagged NNP. Raises LeafMismatch when
    the leaves cannot be matched to `tokens`.
    """
    root = read_lg_tree(lg_tree)
    if root.is_preterminal():
        root = Node("S", [root.children[0]])
    order: list[tuple[Node, str, str | None]] = []
    _to_preterminals(root, order)
    parents = _parents(root, {})
    lowered = [token.lower() for token in tokens]
    leaves = [(node, word.lower(), suffix) for node, word, suffix in order if node.label != ""]
    reinserted = 0
    last_placed: Node | None = None
    pending_before: list[int] = []      # token indexes to insert before the next placed leaf
    position = 0                        # next token to match
    leaf_index = 0
    while leaf_index < len(leaves):
        node, word, suffix = leaves[leaf_index]
        if position >= len(tokens):
            raise LeafMismatch(f"extra leaf {word!r} after all tokens")
        target = lowered[position]
        if word == target:
            matched_leaves = 1
        elif target.startswith(word) and word:
            # link-grammar split the token: merge the following leaves into this one
            joined, matched_leaves = word, 1
            while joined != target and leaf_index + matched_leaves < len(leaves) and \
                    target.startswith(joined + leaves[leaf_index + matched_leaves][1]):
                joined += leaves[leaf_index + matched_leaves][1]
                matched_leaves += 1
            if joined != target:
                matched_leaves = 0
        else:
            matched_leaves = 0
        if matched_leaves == 0:
            # tokens missing from the tree: is this leaf a later token?
            skip = next((k for k in range(1, max_skip + 1)
                         if position + k < len(tokens) and lowered[position + k] == word), None)
            if skip is None:
                raise LeafMismatch(f"leaf {word!r} does not match token {tokens[position]!r} "
                                   f"(token {position})")
            missing = list(range(position, position + skip))
            if last_placed is None:
                pending_before.extend(missing)
            else:
                last_placed = _insert_after(last_placed, missing, tokens, cased_tokens, parents)
            reinserted += len(missing)
            position += skip
            continue
        node.label = tag_for(tokens[position], suffix, name_like(cased_tokens, position))
        node.children = [tokens[position]]
        for extra in range(1, matched_leaves):
            leaves[leaf_index + extra][0].label = ""     # merged away
        if pending_before:
            _insert_before(node, pending_before, tokens, cased_tokens, parents)
            pending_before = []
        last_placed = node
        position += 1
        leaf_index += matched_leaves
    missing = list(range(position, len(tokens)))
    if pending_before or (missing and last_placed is None):
        raise LeafMismatch("no leaf of the tree matches a token")
    if missing:
        _insert_after(last_placed, missing, tokens, cased_tokens, parents)
        reinserted += len(missing)
    _remove_empty(root)
    if root.leaves() != list(tokens):
        raise LeafMismatch(f"leaves {root.leaves()} != tokens {tokens}")
    return root, reinserted


def _new_preterminal(tokens: list[str], cased_tokens: list[str] | None, position: int) -> Node:
    return Node(tag_for(tokens[position], None, name_like(cased_tokens, position)), [tokens[position]])


def _insert_after(anchor: Node, indexes: list[int], tokens: list[str], cased_tokens: list[str] | None,
                  parents: dict[int, Node]) -> Node:
    parent = parents[id(anchor)]
    at = parent.children.index(anchor) + 1
    new_nodes = [_new_preterminal(tokens, cased_tokens, i) for i in indexes]
    parent.children[at:at] = new_nodes
    for new in new_nodes:
        parents[id(new)] = parent
    return new_nodes[-1]


def _insert_before(anchor: Node, indexes: list[int], tokens: list[str], cased_tokens: list[str] | None,
                   parents: dict[int, Node]) -> None:
    parent = parents[id(anchor)]
    at = parent.children.index(anchor)
    new_nodes = [_new_preterminal(tokens, cased_tokens, i) for i in indexes]
    parent.children[at:at] = new_nodes
    for new in new_nodes:
        parents[id(new)] = parent


def fallback_tree(tokens: list[str], cased_tokens: list[str] | None = None) -> Node:
    """A flat S over the tokens, for sentences without a usable parse."""
    return Node("S", [_new_preterminal(tokens, cased_tokens, i) for i in range(len(tokens))])


def verse_tree(sentence_trees: list[Node]) -> Node:
    """Join the trees of a verse's sentences under one TOP node."""
    return Node("TOP", list(sentence_trees))


SENTENCE_END = {".", "!", "?", ";", ":"}
CLOSING = {'"', "'", "-RRB-"}
CLAUSE_BREAK = {","}


def split_sentences(tokens: list[str], min_length: int = 3, max_length: int = 30) -> list[tuple[int, int]]:
    """(start, end) token spans of the pieces of a verse that are parsed separately.

    Splits after . ! ? ; : (closing quotes and brackets stay with the piece
    they close); a piece shorter than `min_length` tokens is joined to its
    neighbour; a piece longer than `max_length` is cut after the comma
    nearest its middle, recursively (parse time grows with the cube of the
    length, and long Bible sentences are mostly clauses chained by commas).
    """
    spans: list[tuple[int, int]] = []
    start = 0
    i = 0
    while i < len(tokens):
        if tokens[i] in SENTENCE_END:
            end = i + 1
            while end < len(tokens) and tokens[end] in CLOSING:
                end += 1
            spans.append((start, end))
            start = end
            i = end
        else:
            i += 1
    if start < len(tokens):
        spans.append((start, len(tokens)))
    merged: list[tuple[int, int]] = []
    for span in spans:
        if merged and (span[1] - span[0] < min_length or merged[-1][1] - merged[-1][0] < min_length):
            merged[-1] = (merged[-1][0], span[1])
        else:
            merged.append(span)
    pieces: list[tuple[int, int]] = []
    for span in merged:
        pieces.extend(_cut_long(tokens, span, min_length, max_length))
    return pieces


def _cut_long(tokens: list[str], span: tuple[int, int], min_length: int, max_length: int) -> list[tuple[int, int]]:
    start, end = span
    if end - start <= max_length:
        return [span]
    middle = (start + end) / 2
    cuts = [i + 1 for i in range(start + min_length - 1, end - min_length)
            if tokens[i] in CLAUSE_BREAK and tokens[i + 1] not in CLOSING]
    if not cuts:
        return [span]
    cut = min(cuts, key=lambda c: abs(c - middle))
    return (_cut_long(tokens, (start, cut), min_length, max_length)
            + _cut_long(tokens, (cut, end), min_length, max_length))


def parser_input(tokens: list[str]) -> str:
    """The text sent to link-grammar for one sentence: the tokens without brackets."""
    return " ".join(token for token in tokens if token not in HIDDEN_FROM_PARSER)
