"""Synchronous grammar rules and the Moses rule-table format for syntax rules.

A `Rule` is one string-to-tree SCFG production:

    lhs -> < source , target >

`source` and `target` are tuples whose items are either a terminal (a `str`)
or a nonterminal slot (an `int`). Slot k is the k-th nonterminal of the source
side in source order; on the target side an `int` names the source slot it is
linked to, so the target side spells out the one-to-one nonterminal map.
`labels[k]` is the (target-side, syntactic) label of slot k.

The Moses text format, as written by extract-ghkm, score and consolidate:

    el [X][NN] [X] ||| the [X][NN] [NP] ||| 0.5 0.4 ||| 0-0 1-1 ||| 4 5 2 ||| ||| {{Tree [NP [DT the] [NN]]}}

Fields: source side with its LHS last (`[X]`), target side with its LHS last
(`[NP]`), scores (Moses takes the natural log of each when it loads the table),
the alignment (source position - target position, over the right-hand-side
symbols, nonterminals included: the nonterminal pairs define the slot map),
counts, sparse features, and key-value properties (`{{Tree ...}}` holds the
target tree fragment). Fields after the scores are optional. A nonterminal on
either right-hand side is written `[source label][target label]`.
"""
from __future__ import annotations

import functools
import gzip
import io
import json
import math
import os
import re
import sys
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence, Union

from ._ext import compiled_module
from .errors import FeatureNamesError, GrammarFormatError, InputError

_rule_table = compiled_module("_rule_table")

Symbol = Union[str, int]

FIELD_SEP = " ||| "
SOURCE_NT_LABEL = "X"

_RHS_NT = re.compile(r"^\[([^\[\]\s]+)\]\[([^\[\]\s]+)\]$")
_LHS = re.compile(r"^\[([^\[\]\s]+)\]$")
_TREE_PROPERTY = re.compile(r"\{\{Tree\s+(.*?)\}\}")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]")


@functools.lru_cache(maxsize=4096)
def _bracket_error(brackets: bytes) -> str | None:
    """tree_fragment_error of a fragment whose brackets, in order, are `brackets` (tree shapes repeat)."""
    def unmatched(text: bytes) -> bytes:  # what is left after removing matched pairs
        while b"[]" in text:
            text = text.replace(b"[]", b"")
        return text

    if brackets[:1] == b"[" and brackets[-1:] == b"]" and not unmatched(brackets[1:-1]):
        return None
    left = unmatched(brackets)
    if b"]" in left:
        return 'unbalanced brackets: a "]" closes no "["'
    if b"[" in left:
        return 'unbalanced brackets: a "[" is never closed'
    return "not one bracketed tree [LABEL ...]"


def tree_fragment_error(tree: str) -> str | None:
    """None if `tree` is one bracketed tree ("[NP [DT the] [NN]]": every "[" is closed by a later "]",
    the first one by the last character), else why not. Brackets inside words are escaped in a rule
    table (&#91; &#93;), so every bracket is structure. (The same test over a whole table's fragments
    at once: decoder.rule_arrays.unbalanced_tree_fragments.)"""
    if not tree:  # as a rule without a fragment
        return None
    problem = _bracket_error(tree.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS))
    if problem is None and not (tree.startswith("[") and tree.endswith("]")):  # words outside the tree
        return "not one bracketed tree [LABEL ...]"
    return problem


# Characters that would break the rule-table format ("|||" separates fields, "[...]" marks
# nonterminals and tree nodes) are written as Moses' escape-special-chars.perl writes them.
# Rule tables hold escaped words (cky extract escapes its corpus); the decoder escapes its input
# to match them and unescapes its output text and the words it looks up in the language model,
# which is trained on plain text.
# An "&" is escaped too (as "&amp;"), but only where it would otherwise read as an escape, so that
# an input word that already looks like one ("&#124;") survives the round trip, while every other
# word, "AT&T" included, is written exactly as before.
_ESCAPES = {"|": "&#124;", "[": "&#91;", "]": "&#93;"}
_UNESCAPES = {escaped: plain for plain, escaped in _ESCAPES.items()} | {"&amp;": "&"}
_NEEDS_ESCAPE = re.compile(r"[|\[\]]|&(?=#124;|#91;|#93;|amp;)")
_NEEDS_UNESCAPE = re.compile("|".join(map(re.escape, _UNESCAPES)))


def escape_word(word: str) -> str:
    """A word as rule tables write it ('|', '[' and ']' are replaced, and an '&' that starts an escape)."""
    if "|" not in word and "[" not in word and "]" not in word and "&" not in word:
        return word
    return _NEEDS_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(0), "&amp;"), word)


def unescape_word(word: str) -> str:
    """The plain text of a rule-table word (the inverse of escape_word)."""
    if "&" not in word:
        return word
    return _NEEDS_UNESCAPE.sub(lambda m: _UNESCAPES[m.group(0)], word)


@dataclass(frozen=True, slots=True)
class Rule:
    lhs: str
    source: tuple[Symbol, ...]
    target: tuple[Symbol, ...]
    labels: tuple[str, ...]
    scores: tuple[float, ...] = ()
    alignment: tuple[tuple[int, int], ...] = ()  # terminal links: (source pos, target pos)
    counts: tuple[float, ...] = ()
    tree: str | None = None  # target tree fragment, e.g. "[NP [DT the] [NN]]"
    properties: str = field(default="", compare=False)  # other key-value properties, kept verbatim

    def __post_init__(self):
        slots = [s for s in self.source if isinstance(s, int)]
        if slots != list(range(len(slots))):
            raise ValueError(f"source slots must be 0..n-1 in order, got {slots}")
        if sorted(s for s in self.target if isinstance(s, int)) != slots:
            raise ValueError("target side must use every source slot exactly once")
        if len(self.labels) != len(slots):
            raise ValueError("one label per nonterminal slot")

    @property
    def arity(self) -> int:
        return len(self.labels)

    @property
    def permutation(self) -> tuple[int, ...]:
        """For each source slot in source order, its rank among the target slots."""
        target_order = [s for s in self.target if isinstance(s, int)]
        rank = {slot: r for r, slot in enumerate(target_order)}
        return tuple(rank[k] for k in range(self.arity))

    @property
    def source_terminals(self) -> tuple[str, ...]:
        return tuple(s for s in self.source if isinstance(s, str))

    @property
    def target_terminals(self) -> tuple[str, ...]:
        return tuple(s for s in self.target if isinstance(s, str))

    def log_scores(self) -> tuple[float, ...]:
        """Natural logs of the scores, as Moses applies them (0 maps to a large negative)."""
        return tuple(math.log(s) if s > 0 else -100.0 for s in self.scores)

    def source_string(self) -> str:
        return " ".join(s if isinstance(s, str) else f"[{self.labels[s]}]" for s in self.source)

    def target_string(self) -> str:
        return " ".join(s if isinstance(s, str) else f"[{self.labels[s]}]" for s in self.target)

    def __str__(self) -> str:
        return f"{self.lhs} -> < {self.source_string()} , {self.target_string()} >"


def parse_rule(line: str, path: str = "<string>", line_number: int = 1) -> Rule:
    """Parse one Moses rule-table line; raise GrammarFormatError naming path:line."""

    def fail(message: str) -> GrammarFormatError:
        return GrammarFormatError(path, line_number, message)

    fields = [f.strip() for f in line.rstrip("\n").split("|||")]
    if len(fields) < 3:
        raise fail(f"expected at least 3 fields separated by '{FIELD_SEP.strip()}', got {len(fields)}")
    # One string object per distinct word or label (sys.intern): a million-rule table then holds each
    # word once, and every dict keyed by words downstream finds it by identity.
    source_tokens = list(map(sys.intern, fields[0].split()))
    target_tokens = list(map(sys.intern, fields[1].split()))
    if len(source_tokens) < 2 or len(target_tokens) < 2:
        raise fail("source and target sides need a right-hand side and a [LHS] label")
    if not _LHS.match(source_tokens[-1]):
        raise fail(f"source side must end with its LHS label like [X], got {source_tokens[-1]!r}")
    lhs_match = _LHS.match(target_tokens[-1])
    if not lhs_match:
        raise fail(f"target side must end with its LHS label like [NP], got {target_tokens[-1]!r}")
    lhs = sys.intern(lhs_match.group(1))
    source_rhs, target_rhs = source_tokens[:-1], target_tokens[:-1]
    try:
        scores = tuple(float(x) for x in fields[2].split())
    except ValueError:
        raise fail(f"scores must be numbers, got {fields[2]!r}") from None
    for s in scores:
        if not math.isfinite(s):
            raise fail(f"score {s} is not finite")

    links: list[tuple[int, int]] = []
    if len(fields) > 3 and fields[3].strip():
        for pair in fields[3].split():
            i, dash, j = pair.partition("-")
            if not dash or not (i.isascii() and i.isdigit()) or not (j.isascii() and j.isdigit()):
                raise fail(f"alignment point {pair!r} is not of the form i-j")
            i, j = int(i), int(j)
            if i >= len(source_rhs) or j >= len(target_rhs):
                raise fail(f"alignment point {pair} is outside the rule")
            links.append((i, j))
    counts: tuple[float, ...] = ()
    if len(fields) > 4 and fields[4].strip():
        try:
            counts = tuple(float(x) for x in fields[4].split())
        except ValueError:
            raise fail(f"counts must be numbers, got {fields[4]!r}") from None
    tree = None
    properties = ""
    if len(fields) > 6:
        properties = " ".join(fields[6:]).strip()
        tree_match = _TREE_PROPERTY.search(properties)
        if tree_match:
            tree = tree_match.group(1).strip()
            properties = (properties[: tree_match.start()] + properties[tree_match.end():]).strip()
            problem = tree_fragment_error(tree)
            if problem is not None:
                raise fail(f"{{{{Tree {tree}}}}}: {problem}")

    source_nts = [(pos, _RHS_NT.match(tok)) for pos, tok in enumerate(source_rhs)]
    source_nts = [(pos, m.group(2)) for pos, m in source_nts if m]
    target_nts = [(pos, _RHS_NT.match(tok)) for pos, tok in enumerate(target_rhs)]
    target_nts = [(pos, m.group(2)) for pos, m in target_nts if m]
    if len(source_nts) != len(target_nts):
        raise fail(f"{len(source_nts)} nonterminals on the source side but {len(target_nts)} on the target side")
    slot_of_source_pos = {pos: k for k, (pos, _) in enumerate(source_nts)}
    target_nt_positions = {pos for pos, _ in target_nts}
    slot_of_target_pos: dict[int, int] = {}
    terminal_links: list[tuple[int, int]] = []
    for i, j in links:
        if i in slot_of_source_pos:
            if j not in target_nt_positions:
                raise fail(f"alignment point {i}-{j} links a nonterminal to a terminal")
            if j in slot_of_target_pos:
                raise fail(f"target nonterminal at {j} is aligned twice")
            slot_of_target_pos[j] = slot_of_source_pos[i]
        elif j in target_nt_positions:
            raise fail(f"alignment point {i}-{j} links a terminal to a nonterminal")
        else:
            terminal_links.append((i, j))
    if len(slot_of_target_pos) != len(target_nts):
        if slot_of_target_pos:
            raise fail("the alignment links only some of the nonterminals")
        # No nonterminal links given (hand-written tables): link by label, which must be unambiguous.
        source_labels = [label for _, label in source_nts]
        if len(set(source_labels)) != len(source_labels):
            raise fail("nonterminal links are missing and labels repeat, so the map is ambiguous")
        slot_by_label = {label: k for k, label in enumerate(source_labels)}
        for pos, label in target_nts:
            if label not in slot_by_label:
                raise fail(f"target nonterminal [{label}] has no source counterpart")
            slot_of_target_pos[pos] = slot_by_label[label]
    labels = tuple(sys.intern(label) for _, label in source_nts)
    for pos, label in target_nts:
        if labels[slot_of_target_pos[pos]] != label:
            raise fail(f"linked nonterminals disagree on their label: [{labels[slot_of_target_pos[pos]]}] vs [{label}]")

    source = tuple(slot_of_source_pos.get(pos, tok) for pos, tok in enumerate(source_rhs))
    target = tuple(slot_of_target_pos[pos] if pos in target_nt_positions else tok
                   for pos, tok in enumerate(target_rhs))
    try:
        return Rule(lhs=lhs, source=source, target=target, labels=labels, scores=scores,
                    alignment=tuple(sorted(terminal_links)), counts=counts, tree=tree,
                    properties=properties)
    except ValueError as error:  # e.g. one source nonterminal linked to two target ones
        raise fail(str(error)) from None


def format_rule(rule: Rule) -> str:
    """The Moses rule-table line for `rule` (no newline)."""

    def nt(slot: int) -> str:
        return f"[{SOURCE_NT_LABEL}][{rule.labels[slot]}]"

    source = " ".join(nt(s) if isinstance(s, int) else s for s in rule.source)
    target = " ".join(nt(s) if isinstance(s, int) else s for s in rule.target)
    source_pos_of_slot = {s: pos for pos, s in enumerate(rule.source) if isinstance(s, int)}
    links = list(rule.alignment)
    links += [(source_pos_of_slot[s], pos) for pos, s in enumerate(rule.target) if isinstance(s, int)]
    fields = [
        f"{source} [{SOURCE_NT_LABEL}]".lstrip(),
        f"{target} [{rule.lhs}]".lstrip(),
        " ".join(_format_number(s) for s in rule.scores),
        " ".join(f"{i}-{j}" for i, j in sorted(links)),
        " ".join(_format_number(c) for c in rule.counts),
        "",
    ]
    properties = rule.properties
    if rule.tree is not None:
        properties = (f"{{{{Tree {rule.tree}}}}} " + properties).strip()
    fields.append(properties)
    return FIELD_SEP.join(fields).rstrip()


def _format_number(x: float) -> str:
    if not math.isfinite(x):  # parse_rule takes any count, "inf" and "nan" included
        return repr(float(x))
    return repr(float(x)) if x != int(x) or abs(x) >= 1e15 else str(int(x))


def open_text(path: str | os.PathLike, mode: str = "r") -> io.TextIOBase:
    """Open a text file, gzip-compressed when the name ends in .gz (or, for reading, by its magic bytes).

    This is the one place the pipeline opens its text inputs: read as lines, a truncated or corrupt
    gzip stream or bytes that are not UTF-8 raise InputError naming the file and the line (no
    EOFError, zlib.error or UnicodeDecodeError escapes)."""
    path = os.fspath(path)
    if "r" in mode:
        with open(path, "rb") as probe:
            gzipped = probe.read(2) == b"\x1f\x8b"
    else:
        gzipped = path.endswith(".gz")
    if gzipped and "r" not in mode:
        stream = io.TextIOWrapper(gzip_writer(path), encoding="utf-8")
    elif gzipped:
        stream = io.TextIOWrapper(gzip.open(path, mode.replace("t", "") + "b"), encoding="utf-8")
    else:
        stream = open(path, mode, encoding="utf-8")
    return _CheckedLines(stream, path, gzipped) if "r" in mode else stream


def gzip_writer(path: str | os.PathLike, compresslevel: int = 9) -> gzip.GzipFile:
    """A new gzip file at `path` (binary). Its header names the file it will be renamed to when `path`
    is a temporary (decoder.outputs.final_name): the same bytes as written in place."""
    from .outputs import final_name

    raw = open(path, "wb")
    try:
        return _OwningGzipFile(filename=os.path.basename(final_name(path)), mode="wb", fileobj=raw,
                               compresslevel=compresslevel)
    except BaseException:
        raw.close()
        raise


class _OwningGzipFile(gzip.GzipFile):
    """A GzipFile that closes the file object it was given (as gzip.open's does)."""

    def close(self):
        raw = self.fileobj
        try:
            super().close()
        finally:
            if raw is not None:
                raw.close()


class _CheckedLines(io.TextIOBase):
    """Lines of a text file whose decoding errors become InputError with file and line."""

    _ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError)

    def __init__(self, stream: io.TextIOBase, path: str, gzipped: bool):
        self._stream = stream
        self._path = path
        self._gzipped = gzipped
        self._line_number = 0

    def _error(self, error: Exception) -> InputError:
        if isinstance(error, UnicodeDecodeError):
            # text is decoded in blocks, so the error may come a few lines early: find the line
            line_number, column = self._first_undecodable_line()
            return InputError(self._path, f"not UTF-8 ({error.reason} at byte {column + 1} of the line)",
                              line_number)
        return InputError(self._path, f"truncated or corrupt gzip data ({error or type(error).__name__})",
                          self._line_number + 1)

    def _first_undecodable_line(self) -> tuple[int, int]:
        """(line number, byte offset in it) of the first line that is not UTF-8 (read again, in bytes)."""
        try:
            with (gzip.open(self._path, "rb") if self._gzipped else open(self._path, "rb")) as raw:
                for number, line in enumerate(raw, start=1):
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as error:
                        return number, error.start
        except (OSError, EOFError, zlib.error):  # the file changed or is also truncated: say where we were
            pass
        return self._line_number + 1, 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        try:
            line = next(self._stream)
        except self._ERRORS as error:
            raise self._error(error) from None
        self._line_number += 1
        return line

    def readline(self, size: int = -1) -> str:
        try:
            line = self._stream.readline(size)
        except self._ERRORS as error:
            raise self._error(error) from None
        self._line_number += line.endswith("\n")
        return line

    def read(self, size: int = -1) -> str:
        try:
            return self._stream.read(size)
        except self._ERRORS as error:
            raise self._error(error) from None

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._stream.close()
        super().close()


# A rule holding a NUL character: its words could not be looked up in the LM (KenLM reads C strings).
NUL_IN_RULE = "holds a NUL character (a rule table is text)"


def read_rules(path: str | os.PathLike, uniform_scores: bool = False) -> Iterator[Rule]:
    """Yield the rules of a Moses rule table (plain or gzip). Blank lines are skipped;
    any other unreadable line raises GrammarFormatError with file and line number. With
    `uniform_scores` (a table to binarize or compile, whose score columns are features), so
    does a rule with another number of scores than the first rule.

    Lines are read by the compiled decoder._ext._rule_table.read_rule, which reads the usual
    lines exactly as parse_rule does (and keeps the rules off the cyclic collector's lists) and
    hands every other line, malformed ones included, to parse_rule."""
    read_rule = _rule_table.read_rule
    path = os.fspath(path)
    n_scores = first_line = None
    with open_text(path) as lines:
        for line_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if "\0" in line:
                raise GrammarFormatError(path, line_number, NUL_IN_RULE)
            rule = read_rule(line, Rule)
            if rule is None:
                rule = parse_rule(line, path, line_number)
            elif rule.tree is not None and (problem := tree_fragment_error(rule.tree)) is not None:
                raise GrammarFormatError(path, line_number, f"{{{{Tree {rule.tree}}}}}: {problem}")
            if uniform_scores and len(rule.scores) != n_scores:
                if n_scores is not None:
                    raise GrammarFormatError(path, line_number, f"{len(rule.scores)} scores, but the rule on "
                                                                f"line {first_line} has {n_scores}")
                n_scores, first_line = len(rule.scores), line_number
            yield rule


def write_rules(rules: Iterable[Rule], path: str | os.PathLike) -> int:
    """Write rules in the Moses format (gzip when the name ends in .gz); return how many."""
    n = 0
    with open_text(path, "w") as out:
        for rule in rules:
            out.write(format_rule(rule))
            out.write("\n")
            n += 1
    return n


def feature_names_path(rules_path: str | os.PathLike) -> str:
    """Where the names of a rule table's score columns are kept (a JSON list), if anywhere."""
    return os.fspath(rules_path) + ".features.json"


def read_feature_names(rules_path: str | os.PathLike) -> list[str] | None:
    """The names of a rule table's score columns, from RULES.features.json (which `cky extract`
    and `cky extract --filter-to` write), or for a table decompressed from RULES.gz, from
    RULES.gz.features.json; None if neither exists. FeatureNamesError if the file is not a JSON
    list of distinct, non-empty strings."""
    rules_path = os.fspath(rules_path)
    candidates = [feature_names_path(rules_path)]
    if not rules_path.endswith(".gz"):
        candidates.append(feature_names_path(rules_path + ".gz"))
    for path in candidates:
        if os.path.exists(path):
            return _load_feature_names(path)
    return None


def _load_feature_names(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            names = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FeatureNamesError(path, f"unreadable feature names: {e}") from None
    if not (isinstance(names, list) and all(isinstance(n, str) and n for n in names)):
        raise FeatureNamesError(path, "expected a JSON list of feature names (strings)")
    if len(set(names)) != len(names):
        raise FeatureNamesError(path, "feature names repeat")
    return names


def make_rule(lhs: str, source: Sequence[Symbol], target: Sequence[Symbol], labels: Sequence[str],
              scores: Sequence[float] = (), **kwargs) -> Rule:
    """Convenience constructor taking lists."""
    return Rule(lhs, tuple(source), tuple(target), tuple(labels), tuple(scores), **kwargs)
