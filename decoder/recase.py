"""Recasing: restore the casing of lowercased target tokens, as Moses' truecaser does.

The corpus is lowercased before training (decoder.data.tokenize), so the decoder writes lowercased
tokens. A `RecaseModel`, trained on the cased tokens of the target side
(`tokenize(text, language, lowercase=False)`), gives each token back the casing it most often has
in the middle of a sentence: `i` -> `I`, `god` -> `God`, `yahweh` -> `Yahweh`, as the training
text writes them (Moses' `train-truecaser.perl` and `truecase.perl`; its
`detruecase.perl` then capitalizes sentence starts, which `recase` does too).

Training
    For each token not at a sentence start, count its surface form under its lowercased form.
    Sentence starts (whose capital says nothing about the word) are the first token, the token
    after a sentence end (`.`, `:`, `?`, `!`) and the token after an opening double quote (quoted
    speech starts with a capital); quotes and brackets in between delay the start to the token
    after them (Moses' "delayed sentence start"): `he said : " the man ...` skips `the`. By
    default, a context table also counts the forms of a token after each previous lowercased
    token; a context is kept only where it overrides the unigram choice with confidence (see
    `BIGRAM_MIN_COUNT`, `BIGRAM_MIN_SHARE`).

Choice of a form (ties)
    The most frequent form; among equally frequent forms, the all-lowercase one if it is among them
    (no evidence for a capital), else the one with fewest uppercase letters, then the first in
    code-point order. So the choice never depends on the order of the training text.

Recasing
    Each token takes the context table's form for (previous token, token) when there is one, else
    the unigram choice; a word the model has never seen keeps the casing of its hint when a hint is
    given (a source word passed through untranslated keeps the input's casing), else stays as it
    is. Then the first letter of each sentence is capitalized (sentence starts as in training, ends
    `.`, `?`, `!` only, as `detokenize` does: after a colon English goes on in lowercase).

File format (text, UTF-8, tab-separated; gzip-compressed when the name ends in `.gz`, and read
either way)::

    cky-recase<TAB>1                         format name and version (first line)
    setting<TAB>NAME<TAB>VALUE               bigram_min_count, bigram_min_share
    unigram<TAB>LOWER<TAB>FORM<TAB>COUNT     one line per surface form of each word
    bigram<TAB>PREVIOUS<TAB>LOWER<TAB>FORM<TAB>COUNT   the context table (kept contexts only)

FORM.lower() must equal LOWER, counts are positive integers, and no (kind, key, form) repeats.
Lines are sorted, and the gzip header has no time stamp, so the same training data gives the same
bytes. A malformed line is a `ModelError` naming the file and the line.
"""
from __future__ import annotations

import gzip
import io
import os
from collections import Counter, defaultdict
from typing import Iterable, Mapping, Sequence

from .errors import ModelError
from .outputs import atomic_write

FORMAT_NAME = "cky-recase"
FORMAT_VERSION = 1
# Tokens after which the next word starts a sentence (training: its case is not counted).
SENTENCE_END = frozenset({".", ":", "?", "!"})
# Sentence ends after which `recase` capitalizes (a colon is followed by lowercase in English).
CAPITALIZE_AFTER = frozenset({".", "?", "!"})
# Tokens that delay a sentence start to the token after them (quotes, brackets, inverted marks).
DELAYED_SENTENCE_START = frozenset({'"', "'", "-LRB-", "(", "[", "-LSB-", "¿", "¡", "--"})
# A context (previous token, token) overrides the unigram choice only when its own best form was
# seen at least this many times there, and in at least this share of that context's occurrences.
BIGRAM_MIN_COUNT = 3
BIGRAM_MIN_SHARE = 0.8
SETTINGS = ("bigram_min_count", "bigram_min_share")

Counts = dict[str, int]


def sentence_starts(tokens: Sequence[str], ends: frozenset[str] = SENTENCE_END) -> list[bool]:
    """For each token, True if it starts a sentence: the first token, the first after a token in
    `ends`, or the first after an opening double quote (the odd-numbered `"` of the line: quoted
    speech starts with a capital), skipping the tokens of DELAYED_SENTENCE_START, which start
    nothing themselves."""
    starts = []
    at_start = True
    quote_open = False
    for token in tokens:
        delayed = token in DELAYED_SENTENCE_START
        starts.append(at_start and not delayed)
        if token in ends:
            at_start = True
        elif token == '"':
            quote_open = not quote_open
            at_start = at_start or quote_open
        elif not delayed:
            at_start = False
    return starts


def best_form(counts: Mapping[str, int]) -> str:
    """The form to use: the most frequent, ties broken as the module docstring says."""
    return min(counts, key=lambda form: (-counts[form], form != form.lower(),
                                         sum(ch.isupper() for ch in form), form))


def _capitalize(token: str) -> str:
    return token[:1].upper() + token[1:]


class RecaseModel:
    """Surface-form counts of lowercased words, and the recasing they imply (module docstring).

    `unigrams[lower][form]` and `bigrams[(previous, lower)][form]` are counts; an empty model
    recases nothing but sentence starts.
    """

    def __init__(self, unigrams: Mapping[str, Mapping[str, int]] | None = None,
                 bigrams: Mapping[tuple[str, str], Mapping[str, int]] | None = None,
                 bigram_min_count: int = BIGRAM_MIN_COUNT, bigram_min_share: float = BIGRAM_MIN_SHARE):
        self.unigrams: dict[str, Counts] = {lower: dict(forms) for lower, forms in (unigrams or {}).items()}
        self.bigrams: dict[tuple[str, str], Counts] = {key: dict(forms) for key, forms in (bigrams or {}).items()}
        self.bigram_min_count = int(bigram_min_count)
        self.bigram_min_share = float(bigram_min_share)
        self._best = {lower: best_form(forms) for lower, forms in self.unigrams.items()}
        self._context_best = {key: best_form(forms) for key, forms in self.bigrams.items()}

    # -- training ---------------------------------------------------------------------------

    @classmethod
    def train(cls, sentences: Iterable[Sequence[str]], bigrams: bool = True,
              bigram_min_count: int = BIGRAM_MIN_COUNT,
              bigram_min_share: float = BIGRAM_MIN_SHARE) -> "RecaseModel":
        """A model from cased, tokenized sentences (lists of tokens, one list per line of text).

        With `bigrams`, also the context table, pruned to the contexts that override the unigram
        choice: best form different from it, seen >= `bigram_min_count` times there and in
        >= `bigram_min_share` of the context's occurrences.
        """
        unigram_counts: Counter[str] = Counter()                # cased token
        bigram_counts: Counter[tuple[str, str]] = Counter()     # (previous lowercased, cased token)
        for number, tokens in enumerate(sentences, 1):
            if isinstance(tokens, str):
                raise TypeError(f"RecaseModel.train: sentence {number} is a string; give its tokens "
                                "(decoder.data.tokenize.tokenize(text, language, lowercase=False))")
            counted = [i for i, start in enumerate(sentence_starts(tokens)) if not start]
            unigram_counts.update(tokens[i] for i in counted)
            if bigrams:
                bigram_counts.update((tokens[i - 1].lower(), tokens[i]) for i in counted if i > 0)
        unigrams: dict[str, Counts] = defaultdict(dict)
        for token, count in unigram_counts.items():
            unigrams[token.lower()][token] = count
        contexts: dict[tuple[str, str], Counts] = defaultdict(dict)
        for (previous, token), count in bigram_counts.items():
            lower = token.lower()
            if len(unigrams[lower]) > 1:  # a context can only matter for a word of several casings
                contexts[(previous, lower)][token] = count
        kept = {}
        for key, forms in contexts.items():
            choice = best_form(forms)
            if (choice != best_form(unigrams[key[1]]) and forms[choice] >= bigram_min_count
                    and forms[choice] >= bigram_min_share * sum(forms.values())):
                kept[key] = forms
        return cls(unigrams, kept, bigram_min_count, bigram_min_share)

    # -- use --------------------------------------------------------------------------------

    def recase(self, tokens: Sequence[str], hints: Sequence[str | None] | None = None) -> list[str]:
        """The tokens with their casing restored and each sentence's first letter capitalized.

        `hints`, if given, is parallel to `tokens`: the original casing of a token (or None), used
        for a word the model does not know, when it equals the token but for case.
        """
        if hints is not None and len(hints) != len(tokens):
            raise ValueError(f"recase: {len(hints)} hints for {len(tokens)} tokens")
        result = []
        previous = None
        for i, (token, start) in enumerate(zip(tokens, sentence_starts(tokens, CAPITALIZE_AFTER))):
            lower = token.lower()
            form = self._context_best.get((previous, lower)) if previous is not None else None
            if form is None:
                form = self._best.get(lower)
            if form is None:
                hint = hints[i] if hints is not None else None
                form = hint if hint is not None and hint.lower() == lower else token
            result.append(_capitalize(form) if start else form)
            previous = lower
        return result

    def __len__(self) -> int:
        """The number of words (lowercased forms) the model knows."""
        return len(self.unigrams)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecaseModel):
            return NotImplemented
        return (self.unigrams, self.bigrams, self.bigram_min_count, self.bigram_min_share) == (
            other.unigrams, other.bigrams, other.bigram_min_count, other.bigram_min_share)

    def __repr__(self) -> str:
        return f"RecaseModel({len(self.unigrams)} words, {len(self.bigrams)} contexts)"

    # -- file -------------------------------------------------------------------------------

    def lines(self) -> list[str]:
        """The model in the file format (module docstring), one string per line, without newlines."""
        lines = [f"{FORMAT_NAME}\t{FORMAT_VERSION}",
                 f"setting\tbigram_min_count\t{self.bigram_min_count}",
                 f"setting\tbigram_min_share\t{self.bigram_min_share!r}"]
        for word in [*self.unigrams, *(w for key in self.bigrams for w in key)]:
            if not word or any(ch in word for ch in "\t\n\r"):
                raise ValueError(f"RecaseModel: token {word!r} cannot be saved (empty, or with a tab or newline)")
        for lower in sorted(self.unigrams):
            for form, count in sorted(self.unigrams[lower].items()):
                lines.append(f"unigram\t{lower}\t{form}\t{count}")
        for previous, lower in sorted(self.bigrams):
            for form, count in sorted(self.bigrams[(previous, lower)].items()):
                lines.append(f"bigram\t{previous}\t{lower}\t{form}\t{count}")
        return lines

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to `path` atomically (gzip-compressed if the name ends in `.gz`)."""
        path = os.fspath(path)
        data = "".join(line + "\n" for line in self.lines()).encode("utf-8")
        if path.endswith(".gz"):
            buffer = io.BytesIO()
            with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as compressed:
                compressed.write(data)
            data = buffer.getvalue()
        with atomic_write(path, binary=True) as f:
            f.write(data)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "RecaseModel":
        """Read a model written by `save`; ModelError naming the file (and line) if it is not one."""
        path = os.fspath(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
        except OSError as error:  # also gzip.BadGzipFile and a truncated gzip stream (EOFError below)
            raise ModelError(path, f"cannot read the recasing model: {error.strerror or error}") from None
        except EOFError:
            raise ModelError(path, "cannot read the recasing model: the gzip stream is truncated") from None
        return cls.from_lines(data.split(b"\n"), path)

    @classmethod
    def from_lines(cls, lines: Iterable[bytes | str], path: str = "<recasing model>") -> "RecaseModel":
        """Parse the file format (module docstring); `path` names the source in errors."""
        unigrams: dict[str, Counts] = defaultdict(dict)
        bigrams: dict[tuple[str, str], Counts] = defaultdict(dict)
        settings: dict[str, float] = {}
        saw_header = False
        empty_line = 0
        for number, line in enumerate(lines, 1):
            def fail(message: str) -> ModelError:
                return ModelError(path, message, number)
            if isinstance(line, bytes):
                try:
                    line = line.decode("utf-8")
                except UnicodeDecodeError:
                    raise fail("not UTF-8") from None
            line = line.rstrip("\r\n")
            if line == "":
                empty_line = empty_line or number  # only the end of the file may be empty (the last newline)
                continue
            if empty_line:
                raise ModelError(path, "an empty line inside the model", empty_line)
            fields = line.split("\t")
            if not saw_header:
                if fields[0] != FORMAT_NAME or len(fields) != 2:
                    raise fail(f"not a recasing model (expected a first line '{FORMAT_NAME}<TAB>VERSION')")
                if fields[1] != str(FORMAT_VERSION):
                    raise fail(f"recasing model format version {fields[1]!r}; "
                               f"this version of cky reads version {FORMAT_VERSION}")
                saw_header = True
                continue
            kind = fields[0]
            if kind == "setting":
                if len(fields) != 3 or fields[1] not in SETTINGS:
                    raise fail(f"expected 'setting<TAB>NAME<TAB>VALUE' with NAME one of {', '.join(SETTINGS)}")
                try:
                    value = int(fields[2]) if fields[1] == "bigram_min_count" else float(fields[2])
                except ValueError:
                    raise fail(f"setting {fields[1]}: {fields[2]!r} is not a number") from None
                settings[fields[1]] = value
                continue
            if kind == "unigram" and len(fields) == 4:
                table, key, lower = unigrams, fields[1], fields[1]
            elif kind == "bigram" and len(fields) == 5:
                table, key, lower = bigrams, (fields[1], fields[2]), fields[2]
            else:
                raise fail("expected 'unigram<TAB>LOWER<TAB>FORM<TAB>COUNT' or "
                           "'bigram<TAB>PREVIOUS<TAB>LOWER<TAB>FORM<TAB>COUNT'")
            form, count_text = fields[-2], fields[-1]
            if "" in fields:
                raise fail("an empty field")
            if form.lower() != lower:
                raise fail(f"form {form!r} is not a casing of {lower!r}")
            if not (count_text.isascii() and count_text.isdigit()) or int(count_text) == 0:
                raise fail(f"count {count_text!r} is not a positive integer")
            if form in table[key]:
                raise fail(f"{kind} {' '.join(key) if isinstance(key, tuple) else key} {form!r} repeated")
            table[key][form] = int(count_text)
        if not saw_header:
            raise ModelError(path, "empty file, not a recasing model")
        return cls(unigrams, bigrams, **settings)
