"""SdigDecoder: dependency tree-to-tree translation with a synchronous dependency insertion grammar
(Ding and Palmer 2005, section 4), behind the same interface as decoder.decoder.Decoder.

    decoder = SdigDecoder("model-sdig/grammar", lm="lm.bin", weights={...}, beam_size=10)
    decoder = sdig_decoder_from_paths(grammar="...", lm=None, weights="weights.toml")
    t = decoder.translate("en el principio creó dios los cielos y la tierra .")
    t.text, t.tree (English dependency tree, CoNLL-U), t.score, t.features, t.derivation, t.stats
    decoder.kbest(sentence, 10); decoder.translate_batch(sentences, workers=2)

Input: one tokenized, lowercased sentence (str or list of tokens), parsed with spaCy
(decoder.sdig.parser); or a DepTree already parsed. stats["parse_seconds"] and
stats["search_seconds"] separate parsing from decoding.

Raw text: with `languages` (a config's [languages] table, as `cky train --system sdig` writes
it) the decoder takes raw text as the GHKM Decoder does (decoder.decoder, "Raw text"; the one
pipeline, decoder.text.TextPipeline): a str is tokenized by the source language's tokenizer
before parsing, and `t.text` is the translation recased (`recase_model`) and detokenized, with
the tokens in `t.tokens` and `t.source_tokens`. `tokenized=True`, a list of tokens or a given
tree skip the pipeline (tokens in, tokens out). `t.unknown_words` lists the source words passed
through untranslated, in source order.

Bad input (one output per input, always):

* empty line: empty output (score 0, features 0);
* unknown word: passed through (feature `oov`);
* longer than the parser's limit (decoder.sdig.parser.MAX_TOKENS): the flat fallback tree
  (every token depends on the first), so each word is translated on its own;
* a given tree whose tokens are not the sentence's (a token the parser dropped): the flat
  fallback tree over the sentence's tokens; stats["fallback"] says which fallback was used.

Threads: an SdigDecoder may be shared between threads, as a Decoder may (decoder.decoder,
"Threads"). Its compiled search keeps one set of tables per decoder (the beams, and the options
and words it has seen, which grow as sentences come), and the parser is one spaCy pipeline with
its own counters, so a lock serializes parsing and searching (translate, kbest, and
translate_batch's in-process path, which calls translate): threads get the same results as
sequential calls, one sentence at a time. For parallel decoding, use translate_batch's worker
processes.
"""
from __future__ import annotations

import functools
import os
import threading
import time
from typing import Sequence

from ..errors import ConfigError, DependencyTreeError
from ..text import TextPipeline
from ..translation import Translation
from .deptree import DepTree, check_tree, flat_tree
from .grammar import MAX_ET_WORDS, TABLE_LIMIT, Grammar
from .search import FEATURES, Search


class FeatureWeights:
    """The SDIG weights by feature name, shaped as the GHKM decoder's Weights where tuning and
    `cky translate` read them (by_name, [name], feature_names())."""

    def __init__(self, search: Search):
        self.by_name = search.weights()

    def __getitem__(self, name: str) -> float:
        return self.by_name[name]

    def feature_names(self) -> list[str]:
        """The SDIG features' names, in the order of their weights."""
        return list(FEATURES)


class SdigDecoder:
    """The SDIG system's decoder over a grammar directory, an optional KenLM model and feature weights;
    `beam_size` bounds the hypotheses kept per forest node (decoder.sdig.search)."""

    # Settings a caller may override when building from a config (cky translate's --beam-size).
    SETTINGS = ("beam_size", "kbest_beam_size", "reorder", "max_source_words", "table_limit")

    def __init__(self, grammar, lm=None, weights: dict | None = None, *, beam_size: int = 1,
                 max_source_words: int = MAX_ET_WORDS, reorder: bool = False, parser=None,
                 kbest_beam_size: int | None = None, table_limit: int = TABLE_LIMIT,
                 languages: dict | None = None, recase_model=None, config_path: str | None = None):
        started = time.perf_counter()
        self.config_path = config_path  # the config file it was built from (workers on a cluster rebuild it)
        # raw text in, text out when the config records its languages (decoder.text)
        self.text = TextPipeline.from_config(languages, recase_model, config_path)
        # Held while a sentence is parsed and searched (the compiled search's tables, the parser).
        self._engine_lock = threading.Lock()
        self.grammar_path = None if isinstance(grammar, Grammar) else os.path.abspath(os.fspath(grammar))
        self.grammar = grammar if isinstance(grammar, Grammar) else Grammar.load(grammar, max_source_words, table_limit)
        if isinstance(lm, (str, os.PathLike)):
            from ..lm import LanguageModel

            lm = LanguageModel(os.fspath(lm))
        self.lm = lm
        self.search = Search(self.grammar, weights, lm, beam_size, reorder)
        self._parser = parser
        # None: no cap (kbest(k) searches with beam max(beam_size, 3k) for unique lists)
        self.kbest_beam_size = None if kbest_beam_size is None else max(1, int(kbest_beam_size))
        self.settings = {"system": "sdig", "beam_size": self.search.beam_size,
                         "kbest_beam_size": self.kbest_beam_size,
                         "max_source_words": self.grammar.max_source_words, "reorder": self.search.reorder,
                         "table_limit": self.grammar.table_limit}
        self.load_seconds = time.perf_counter() - started

    @classmethod
    def from_config(cls, path, **overrides) -> "SdigDecoder":
        """The decoder of a `system = "sdig"` config file (decoder.config); overrides as for from_checked."""
        from ..config import SdigConfig, load_config

        config = load_config(path)
        if not isinstance(config, SdigConfig):
            raise ConfigError(os.fspath(path), 'not a `system = "sdig"` config (Decoder.from_config reads either)')
        return cls.from_checked(config, overrides)

    @classmethod
    def from_checked(cls, config, overrides: dict | None = None) -> "SdigDecoder":
        """The decoder a checked `system = "sdig"` config (decoder.config.SdigConfig) describes;
        overrides (beam_size=..., from `cky translate --beam-size`) win over the file."""
        from ..errors import SettingsError

        arguments = config.decoder_arguments()
        for name, value in (overrides or {}).items():
            if name not in cls.SETTINGS:
                raise SettingsError(None, f"`{name}` is not a setting of the SDIG system "
                                          f"(its settings: {', '.join(cls.SETTINGS)})")
            arguments[name] = value
        if not os.path.isdir(arguments["grammar"]):
            raise ConfigError(config.path, f"`grammar = {arguments['grammar']!r}`: no such grammar directory "
                                           f"(train one with `cky extract --system sdig`)")
        return cls(**arguments)

    @property
    def weights(self) -> FeatureWeights:
        """The feature weights in use, by feature name."""
        return FeatureWeights(self.search)

    @property
    def parser(self):
        """The Spanish dependency parser (decoder.sdig.parser.SpanishParser), loaded on first use."""
        if self._parser is None:
            from .parser import SpanishParser

            self._parser = SpanishParser()
        return self._parser

    def feature_names(self) -> tuple:
        """The SDIG features' names (decoder.sdig.search.FEATURES)."""
        return FEATURES

    def _tree(self, sentence, tree: DepTree | None) -> tuple[DepTree, dict]:
        if isinstance(sentence, DepTree):
            tree, sentence = sentence, sentence.words
        words = sentence.split() if isinstance(sentence, str) else [str(w) for w in sentence]
        stats: dict = {"words": len(words), "parse_seconds": 0.0}
        if tree is None and words:
            parser = self.parser    # loaded once, outside the timing
            started = time.perf_counter()
            too_long_before = parser.statistics["too_long"]
            tree = parser.parse(words)
            stats["parse_seconds"] = time.perf_counter() - started
            if parser.statistics["too_long"] > too_long_before:
                stats["fallback"] = "too_long"
        elif tree is not None:
            try:
                check_tree(tree, words)
            except DependencyTreeError:
                tree, stats["fallback"] = flat_tree(words), "tree_mismatch"
        return tree if tree is not None else DepTree([], []), stats

    def _empty(self, stats: dict) -> Translation:
        features = {name: 0.0 for name in FEATURES}
        if self.lm is not None:
            features["lm"] = float(self.lm.score_sentence([]))
        return Translation("", "", self.search.dot(tuple(features[n] for n in FEATURES)), features, None,
                           dict(stats, seconds=0.0, search_seconds=0.0), "")

    def _translation(self, hypothesis, tree: DepTree, stats: dict) -> Translation:
        output = DepTree(list(hypothesis.words), list(hypothesis.heads),
                         relations=["root" if h == -1 else "dep" for h in hypothesis.heads])
        return Translation(" ".join(hypothesis.words), output.to_conllu(), float(hypothesis.score),
                           dict(zip(FEATURES, hypothesis.features)), hypothesis.derivation, stats,
                           " ".join(tree.words))

    def _prepare(self, sentence, tree: DepTree | None, tokenized: bool | None):
        """(what the search reads: the sentence, or for raw text its tokens; and for raw text (raw
        input, its tokens, their input casing), else None); see "Raw text" above."""
        if tokenized is not None and not isinstance(tokenized, bool):
            raise TypeError(f"tokenized must be True, False or None, not {tokenized!r}")
        if not self.text.raw or tokenized or tree is not None or not isinstance(sentence, str):
            return sentence, None
        tokens, cased = self.text.source_tokens(sentence)
        return tokens, (sentence, tokens, cased)

    def _finish(self, translation: Translation, raw) -> Translation:
        """Fill in the unknown words, and for raw input the text the user reads (decoder.text)."""
        translation.unknown_words = unknown_words(translation.derivation, translation.source_tokens.split())
        return self.text.present(translation, raw)

    def kbest(self, sentence, k: int, unique: bool = True, tree: DepTree | None = None,
              tokenized: bool | None = None) -> list[Translation]:
        """The k best translations, best first (unique: distinct output texts only). The list holds fewer
        than k when the beam kept fewer hypotheses at the root (the search keeps 3k of them for a unique
        list, at most `kbest_beam_size`), or fewer distinct texts among them. `tree`: the sentence's
        dependency tree, if already parsed. The sentence is raw text for a decoder with languages
        unless `tokenized` (see "Raw text" above), else tokenized text."""
        sentence, raw = self._prepare(sentence, tree, tokenized)
        with self._engine_lock:
            tree, stats = self._tree(sentence, tree)
            if not len(tree):
                return [self._finish(self._empty(stats), raw)]
            started = time.perf_counter()
            wanted = max(k, 1) * (3 if unique else 1)  # unique lists drop repeated texts: ask for more
            if self.kbest_beam_size is not None:
                wanted = min(wanted, self.kbest_beam_size)
            hypotheses, search_stats = self.search.search(tree, k=wanted)
        stats.update(search_stats, search_seconds=time.perf_counter() - started)
        stats["seconds"] = stats["search_seconds"] + stats["parse_seconds"]
        out, seen = [], set()
        for h in hypotheses:
            if unique and h.words in seen:
                continue
            seen.add(h.words)
            out.append(self._finish(self._translation(h, tree, stats), raw))
            if len(out) == k:
                break
        return out

    def translate(self, sentence, tree: DepTree | None = None, tokenized: bool | None = None) -> Translation:
        """The best translation of one sentence (its dependency tree `tree`, or parsed here; raw text or
        tokens as for kbest)."""
        return self.kbest(sentence, 1, unique=False, tree=tree, tokenized=tokenized)[0]

    def translate_batch(self, sentences: Sequence[str], workers: int = 1, progress: bool = False,
                        cluster=None, tokenized: bool | None = None) -> list:
        """Translations of many sentences, in order, on `workers` processes (decoder.batch), or on a Dask
        cluster (a dask.distributed Client, or a spec for decoder.cluster.connect), whose workers rebuild
        this decoder from its config file with its present settings; a sentence whose decoding raised
        gives Translation.failure. Raw text or tokens as for kbest (`tokenized`)."""
        from ..batch import translate_batch
        from ..translation import translate_job

        if tokenized is not None and not isinstance(tokenized, bool):
            raise TypeError(f"tokenized must be True, False or None, not {tokenized!r}")
        job = translate_job if tokenized is None else functools.partial(translate_job, tokenized=tokenized)
        if cluster is None:
            return translate_batch(self, sentences, workers=workers, job=job, progress=progress)
        if self.config_path is None:
            raise ValueError("decoding on a cluster needs a decoder built from a config file (from_config)")
        overrides = {name: self.settings[name] for name in self.SETTINGS}
        loader = functools.partial(type(self).from_config, os.path.abspath(self.config_path), **overrides)
        if isinstance(cluster, str):
            from ..cluster_workers import connect

            with connect(cluster) as client:
                return translate_batch(loader, sentences, job=job, progress=progress, cluster=client)
        return translate_batch(loader, sentences, job=job, progress=progress, cluster=cluster)

    def __repr__(self) -> str:
        return (f"SdigDecoder(source ETs={len(self.grammar.by_source)}, lm={getattr(self.lm, 'path', None)!r}, "
                f"beam_size={self.search.beam_size})")


def unknown_words(derivation: dict | None, source_tokens: list[str]) -> list[str]:
    """The source tokens a derivation passes through untranslated (its "oov" ETs), in source order."""
    passed: dict[str, int] = {}
    stack = [derivation] if derivation is not None else []
    while stack:
        node = stack.pop()
        if node.get("kind") == "oov":
            word = node["source"].rsplit("/", 1)[0]
            passed[word] = passed.get(word, 0) + 1
        stack.extend(child for child in node.get("children") or () if child is not None)
    out = []
    for token in source_tokens:
        if passed.get(token, 0) > 0:
            out.append(token)
            passed[token] -= 1
    return out


def sdig_decoder_from_paths(grammar, lm=None, weights=None, **settings) -> SdigDecoder:
    """An SdigDecoder from a grammar directory, an optional LM file and weights (a dict, or a TOML
    file whose [weights] table, or top level, maps SDIG feature names to weights)."""
    if isinstance(weights, (str, os.PathLike)):
        try:
            import tomllib
        except ImportError:  # Python < 3.11
            import tomli as tomllib
        with open(weights, "rb") as f:
            table = tomllib.load(f)
        weights = table.get("weights", table)
    return SdigDecoder(grammar, lm, weights, **settings)
