"""`Translation`: what translating one sentence gives, from the decoder, the batch layer and the CLI."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Translation:
    """One translation: the output text, its target tree, model score, features by name,
    the derivation (nested dicts: symbol, span, rule, source_rule, children) and search stats.

    A sentence whose decoding failed is a Translation with `error` set (a one-line
    reason), empty text and tree, and score -inf; `bool(t)` is False for it.
    """

    text: str
    tree: str
    score: float
    features: dict
    derivation: dict | None = None
    stats: dict = field(default_factory=dict)
    source: str = ""
    error: str | None = None

    @classmethod
    def failed(cls, error: str, source: str = "") -> "Translation":
        return cls("", "", float("-inf"), {}, None, {}, source, error)

    def __bool__(self) -> bool:  # `if translation:` reads as "did it work"
        return self.error is None

    def __str__(self) -> str:
        return self.text
