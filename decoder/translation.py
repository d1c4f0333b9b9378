"""`Translation`: what translating one sentence gives, from the decoder, the batch layer, the cluster
layer and the CLI; and `translate_job`, the default job those layers run on each sentence."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

# job(decoder, sentence) -> result; must be picklable (a module-level function) to run in worker processes
Job = Callable[[Any, str], Any]

REPR_TEXT_CHARS = 48  # of the source and of the text in repr(): the whole repr stays around 200 characters


@dataclass(repr=False)
class Translation:
    """One translation: the output text, its target tree, model score, features by name,
    the derivation (nested dicts: symbol, span, rule, source_rule, children) and search stats.

    `text` is what the user reads: for a system that takes raw text (decoder.text), the
    detokenized, recased translation of the raw `source`; `tokens` is the decoder's output as
    tokens (what the tree's leaves spell, what BLEU on tokenized text scores) and
    `source_tokens` the tokenized source it decoded. For tokenized input they equal `text` and
    `source`. `unknown_words` lists the source tokens the grammar did not know (passed through
    untranslated), in source order.

    A sentence whose decoding failed is `Translation.failure(source, error)`: `ok` is False,
    `error` holds a one-line reason, the text and tree are empty and the score is -inf.
    `bool(t)` is `t.ok`.
    """

    text: str
    tree: str
    score: float
    features: dict
    derivation: dict | None = None
    stats: dict = field(default_factory=dict)
    source: str = ""
    error: str | None = None  # None when the sentence was translated, else why it was not
    tokens: str | None = None  # the output as tokens (None: the same as text)
    source_tokens: str | None = None  # the tokenized source (None: the same as source)
    unknown_words: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.tokens is None:
            self.tokens = self.text
        if self.source_tokens is None:
            self.source_tokens = self.source

    @classmethod
    def failure(cls, source: str, error: str) -> "Translation":
        """The stand-in for a sentence that could not be translated: `error` is a one-line reason
        (such as "RuntimeError: ..."); empty text and tree, score -inf, no features."""
        return cls("", "", float("-inf"), {}, None, {}, source, error)

    @property
    def ok(self) -> bool:
        """True when the sentence was translated (`error` is None)."""
        return self.error is None

    def __bool__(self) -> bool:  # `if translation:` reads as "did it work"
        return self.ok

    def __str__(self) -> str:
        """The output text."""
        return self.text

    def __repr__(self) -> str:
        """A one-line summary: source, text, score and ok (and the error of a failure), long strings
        shortened; the tree, features, derivation and stats are attributes."""
        error = "" if self.ok else f", error={_shorten(self.error)!r}"
        return (f"Translation(source={_shorten(self.source)!r}, text={_shorten(self.text)!r}, "
                f"score={self.score:.4f}, ok={self.ok}{error})")


def _shorten(text: str | None, limit: int = REPR_TEXT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def translate_job(decoder, sentence: str, tokenized: bool | None = None) -> Translation:
    """The default job of decoder.batch and decoder.cluster_workers: `decoder.translate(sentence)`
    (with `tokenized` if given: decoder.decoder.Decoder.translate)."""
    if tokenized is None:
        return decoder.translate(sentence)
    return decoder.translate(sentence, tokenized=tokenized)
