"""What a system does with text around the search: `TextPipeline`, built from a config.

A config that records its languages (the `[languages]` table, decoder.config) describes a system
that takes raw text: each sentence is tokenized (and lowercased) by the source language's
tokenizer (decoder.data.tokenize's registry), decoded, recased by the config's recasing model
(`recase_model`, decoder.recase; without one only sentence starts are capitalized) and
detokenized as text of the target language. A source word the grammar does not know is passed
through untranslated, so its input casing is the recaser's hint for it ("Zebedeo" stays
"Zebedeo", not "zebedeo").

A config without languages (tokenized in, tokenized out) gives a pipeline that changes nothing:
`raw` is False, and the decoder behaves as it always did. Input given as tokens
(`tokenized=True` in the API, `--pretokenized` on the command line) skips the pipeline too.

The decoder (decoder.decoder), `cky translate`, `cky serve` and `cky train`'s evaluate stage all
go through this one object, so what raw text means is decided here only.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Sequence

from .data.tokenize import TOKENIZERS, Tokenizer, tokenizer_for
from .errors import ConfigError, ModelError
from .recase import RecaseModel

# The config key of the recasing model (a path, relative to the config file).
RECASE_KEY = "recase_model"


def _tokenizer(languages: Mapping, side: str, config_path: str | None) -> Tokenizer | None:
    """The tokenizer of one side ("source" or "target"): its `*_tokenizer` key (a registry name), else
    the registry's tokenizer of its `*_language`; None when neither is given."""
    name = languages.get(f"{side}_tokenizer")
    if name is not None:
        if name not in TOKENIZERS:
            raise ConfigError(config_path, f"`{side}_tokenizer = {name!r}` is not a tokenizer of "
                                           f"decoder.data.tokenize (known: {', '.join(sorted(TOKENIZERS))})")
        return TOKENIZERS[name]
    language = languages.get(f"{side}_language")
    return tokenizer_for(language) if language is not None else None


@dataclass(frozen=True)
class TextPipeline:
    """The source tokenizer, target detokenizer and recaser of a system (module docstring); with no
    source tokenizer, the identity (`raw` False)."""

    source: Tokenizer | None = None
    target: Tokenizer | None = None
    recaser: RecaseModel | None = None

    @classmethod
    def from_config(cls, languages: Mapping | None, recase_model=None,
                    config_path: str | None = None) -> "TextPipeline":
        """The pipeline of a config's [languages] table and recasing model (a path or a RecaseModel);
        a missing or malformed model file is a ConfigError naming the key and the file."""
        languages = dict(languages or {})
        source = _tokenizer(languages, "source", config_path)
        target = _tokenizer(languages, "target", config_path)
        if isinstance(recase_model, (str, os.PathLike)):
            try:
                recase_model = RecaseModel.load(recase_model)
            except ModelError as error:
                if config_path is None:
                    raise
                raise ConfigError(config_path, f"`{RECASE_KEY}`: {error}") from None
        if source is None:
            return cls(recaser=recase_model)
        return cls(source, target or TOKENIZERS["en"], recase_model or RecaseModel())

    @property
    def raw(self) -> bool:
        """Whether the system takes raw text (the config records its languages)."""
        return self.source is not None

    def source_tokens(self, text: str) -> tuple[list[str], list[str]]:
        """(the tokens the grammar reads, the same tokens with the input's casing)."""
        tokens = self.source.tokenize(text)
        cased = self.source.tokenize(text, lowercase=False)
        if len(cased) != len(tokens):  # casing never changes where tokens split (decoder.data.tokenize)
            cased = tokens
        return tokens, cased

    @staticmethod
    def hints(tokens: Sequence[str], cased: Sequence[str], unknown_words) -> dict[str, str]:
        """Input casing of the words passed through untranslated: {token: cased token}."""
        unknown = set(unknown_words)
        return {token: form for token, form in zip(tokens, cased) if token in unknown}

    def output_text(self, tokens: Sequence[str], hints: Mapping[str, str] | None = None) -> str:
        """The decoder's output tokens as text: recased (hints: casing of passed-through source words)
        and detokenized as the target language."""
        hints = hints or {}
        recased = self.recaser.recase(list(tokens), [hints.get(token) for token in tokens])
        return self.target.detokenize(recased)

    def present(self, translation, raw: tuple | None):
        """For raw input (`raw`: the input text, its tokens and their cased forms, as source_tokens
        made them), the text the user reads (unknown words keep the input's casing) and the input as
        given; tokenized input (None) is left as it is. Returns the translation."""
        if raw is not None:
            text, tokens, cased = raw
            hints = self.hints(tokens, cased, translation.unknown_words)
            translation.text = self.output_text(translation.tokens.split(), hints)
            translation.source = text
        return translation


def unknown_positions(derivation: dict | None) -> list[int]:
    """Source positions of the words a derivation passes through (its `oov` nodes), in order."""
    positions = []
    stack = [derivation] if derivation is not None else []
    while stack:  # iterative: a glued derivation nests one level per piece
        node = stack.pop()
        if node is None:
            continue
        if node.get("rule") == "oov":
            positions.append(int(node["span"][0]))
        stack.extend(node.get("children") or ())
    return sorted(positions)


def tokenized_input(decoder) -> dict:
    """The keyword arguments that make `decoder.translate` / `kbest` read tokenized text:
    {"tokenized": True} for a decoder that takes raw text, else none (it reads tokens already).
    For callers that feed the corpus's tokenized text: tuning, benchmarks, the demo."""
    text = getattr(decoder, "text", None)
    return {"tokenized": True} if isinstance(text, TextPipeline) and text.raw else {}
