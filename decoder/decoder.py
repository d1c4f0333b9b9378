"""The CKY decoder's public API: `Decoder`, which translates with a synchronous grammar and an
n-gram LM by CKY over the source sentence (Chiang 2007), and the `Translation` it returns
(decoder.translation).

    decoder = Decoder.from_config("model/config.toml")
    decoder = Decoder(store="model/store", lm="model/lm.bin", weights={"lm": 1.0}, pop_limit=100)
    t = decoder.translate("en el principio creó dios")
    t.text, t.tree, t.score, t.features, t.derivation, t.stats
    decoder.kbest("en el principio", 100, unique=True)    # list of Translations, best first

## Raw text

A config that records its languages (`[languages]`, as `cky train` writes) describes a
system that takes raw text: translate, kbest and translate_batch tokenize each sentence
with the source language's tokenizer, and give back `t.text` detokenized and recased
(decoder.text.TextPipeline), with the tokens in `t.tokens` and `t.source_tokens`, and the
source words the grammar did not know in `t.unknown_words`:

    decoder.translate("En el principio creó Dios los cielos.").text   # "In the beginning God ..."
    decoder.translate("en el principio", tokenized=True).text         # tokens in, tokens out

`tokenized=True` (or a sentence given as a list of tokens) is for input already tokenized
(as the Bible recipe's test sets are): the output is then the tokens, as a config without
languages always gives. The search is the compiled CKY chart: cube pruning
(decoder.search.driver, `search = "cube"`, the default) or two-pass search
(decoder.search.two_pass, `search = "two-pass"`); the features, the glue and unknown-word handling are described in
decoder.search.model.

## Config

`Decoder.from_config(path)` reads a TOML config; its keys, their defaults and
every check are documented in decoder.config (load_config), the search
settings' defaults live in decoder.settings.SearchSettings.
`Decoder.from_mapping(mapping, base_dir=...)` builds one from the same keys
given as a dict (as tuning does). A config with `system = "sdig"` gives an
SdigDecoder (decoder.sdig.decoder) instead: the same translate / kbest /
translate_batch interface, so `cky translate`, `cky tune` and the benchmarks
drive either system.

The Python API takes a sentence as a str or a list of str tokens: bytes or None
are a TypeError, and k < 1 (or k > decoder.settings.MAX_KBEST) for kbest a ValueError.

## Threads

A `Decoder` may be shared between threads: its compiled search keeps one chart (and the
k-best search its own state) per decoder, so a lock serializes the calls into it (translate,
kbest, reconfigure, and translate_batch's in-process path, which calls translate): threads
get the same results as sequential calls, one sentence searched at a time. For parallel
decoding, use translate_batch's worker processes (or one Decoder per thread).
"""
from __future__ import annotations

import numbers
import os
import threading
import time
from typing import Mapping, Sequence

from .config import DecoderConfig, SdigConfig, check_glue, load_config, parse_config, read_oov_labels
from .errors import ConfigError, ModelError, SettingsError, StoreError, file_error_message
from .grammar import escape_word, unescape_word
from .search.model import LM, OOV, GlueRules, SearchSpace, Weights
from .settings import (DEFAULT_EXPERIMENTAL_SETTINGS, DEFAULT_GLUE, DEFAULT_OOV_LABELS,
                       DEFAULT_SEARCH_SETTINGS as _DEFAULTS, EXPERIMENTAL_NAMES, EXPERIMENTAL_TABLE, ExperimentalSettings,
                       MAX_KBEST,
                       SearchSettings, check_weights)
from .text import TextPipeline, unknown_positions
from .translation import Translation

# Every setting's default, by config key (read-only view; the search settings' home is SearchSettings).
DEFAULT_SETTINGS = {"glue": DEFAULT_GLUE, "oov_labels": list(DEFAULT_OOV_LABELS), **_DEFAULTS.as_dict()}


def _model_file_opener(key: str):
    """What opens the model file of config key `store` or `lm`."""
    if key == "store":
        from .store import GrammarStore

        return GrammarStore.open
    from .lm import LanguageModel

    return lambda path: LanguageModel(os.fspath(path))


def _open_model_file(key: str, path, config_path: str | None):
    """The store or LM at path; a missing, unreadable or corrupt model file that a config names is reported
    as an error of that config, naming its key and the file (given in Python, the file's own error stands)."""
    try:
        return _model_file_opener(key)(path)
    except (OSError, ValueError, StoreError, ModelError) as error:  # (KenLM's load errors are ValueErrors)
        if config_path is None:
            raise
        reason = file_error_message(error) if isinstance(error, OSError) else str(error)
        raise ConfigError(config_path, f"`{key}`: {reason}") from error


class Decoder:
    """A CKY decoder over a grammar store with an integrated KenLM language model.

    The keywords are the config keys (decoder.config); their values are checked here
    (SettingsError naming the key), the search settings by SearchSettings."""

    def __init__(self, store, lm, weights: dict | None = None, *, lm_order: int | None = None,
                 glue: str = DEFAULT_GLUE, oov_labels=DEFAULT_OOV_LABELS, oov_penalty: float | None = None,
                 search: str = _DEFAULTS.search, max_span: int = _DEFAULTS.max_span,
                 max_unary_depth: int = _DEFAULTS.max_unary_depth, pop_limit: int = _DEFAULTS.pop_limit,
                 beam_size: int = _DEFAULTS.beam_size,
                 beam_threshold: float = _DEFAULTS.beam_threshold, exhaustive: bool = _DEFAULTS.exhaustive,
                 table_limit: int = _DEFAULTS.table_limit,
                 two_pass_beam: float = _DEFAULTS.two_pass_beam, agenda_limit: int = _DEFAULTS.agenda_limit,
                 max_pops: int = _DEFAULTS.max_pops, kbest_per_class: int = _DEFAULTS.kbest_per_class,
                 memory_budget_mb: int = _DEFAULTS.memory_budget_mb,
                 experimental: ExperimentalSettings | Mapping | None = None,
                 allow_unknown_weights: bool = False, config_path: str | None = None,
                 languages: Mapping | None = None, recase_model=None, **experimental_settings):
        from .search.drivers import search_driver

        started = time.perf_counter()
        # Held while the compiled search (its one chart, the k-best search's state) serves a sentence.
        self._engine_lock = threading.Lock()
        # Check every value before loading anything: a mistake is reported at once.
        # (experimental: the [experimental] table's settings; an experimental setting may also be given by name)
        self.search_settings = SearchSettings(search=search, max_span=max_span, max_unary_depth=max_unary_depth,
                                              pop_limit=pop_limit, beam_size=beam_size,
                                              beam_threshold=beam_threshold, exhaustive=exhaustive,
                                              table_limit=table_limit, two_pass_beam=two_pass_beam,
                                              agenda_limit=agenda_limit, max_pops=max_pops,
                                              kbest_per_class=kbest_per_class,
                                              memory_budget_mb=memory_budget_mb).replace(
            experimental=DEFAULT_EXPERIMENTAL_SETTINGS if experimental is None else experimental,
            **experimental_settings)
        weights = check_weights(weights if weights is not None else {})
        if oov_penalty is not None:
            weights[OOV] = check_weights({"oov_penalty": oov_penalty})["oov_penalty"]
        if lm_order is not None and (isinstance(lm_order, bool) or not isinstance(lm_order, numbers.Integral)):
            raise SettingsError(None, f"`lm_order` must be an integer, not {lm_order!r}")
        if not isinstance(allow_unknown_weights, bool):
            raise SettingsError(None, f"`allow_unknown_weights` must be true or false, not {allow_unknown_weights!r}")
        driver = search_driver(self.search_settings.search)
        glue = check_glue(glue)
        labels = read_oov_labels(oov_labels)

        # raw text in, text out when the config records its languages (decoder.text)
        self.text = TextPipeline.from_config(languages, recase_model, config_path)
        self.store = store if not isinstance(store, (str, os.PathLike)) else _open_model_file("store", store, config_path)
        self.lm = lm if not isinstance(lm, (str, os.PathLike)) else _open_model_file("lm", lm, config_path)
        error_class = ConfigError if config_path else SettingsError
        if lm_order is not None and int(lm_order) != self.lm.order:
            raise error_class(config_path, f"`lm_order = {lm_order}`, but {self.lm.path} is a "
                                           f"{self.lm.order}-gram model")
        self.weights = Weights(self.store.feature_names, weights)
        if self.weights.unused and not allow_unknown_weights:
            name = sorted(self.weights.unused)[0]
            raise error_class(config_path, f"weight `{name}` names no feature of this model (its features: "
                                           f"{', '.join(self.weights.feature_names())}); set "
                                           f"`allow_unknown_weights = true` to ignore such weights")
        glue_rules = GlueRules() if glue == DEFAULT_GLUE else GlueRules.from_file(os.fspath(glue))
        self.space = SearchSpace(max_span=self.search_settings.max_span,
                                 max_unary_depth=self.search_settings.max_unary_depth,
                                 oov_labels=labels, glue=glue_rules)
        self.glue_labels_added = glue_rules.cover(self.space.oov_labels)
        self.config_path = config_path
        self.settings = dict(glue=glue, oov_labels=list(self.space.oov_labels), **self.search_settings.as_dict())
        self.chart = driver(self.store, self.lm, self.weights, self.space, self.search_settings)
        self.load_seconds = time.perf_counter() - started

    @property
    def search(self):
        """The chart search driver: the same object as `chart`."""
        return self.chart

    def reconfigure(self, **changes) -> SearchSettings:
        """Search with these settings changed from now on (pop_limit=..., beam_size=...: the
        SearchSettings fields, checked); the store and LM are kept, and so are the grammar arrays
        unless table_limit or rule_order changes (then they are prepared again), or the search
        algorithm changes (then its driver is built)."""
        settings = self.search_settings.replace(**changes)
        with self._engine_lock:
            return self._reconfigure(settings)

    def _reconfigure(self, settings: SearchSettings) -> SearchSettings:
        from .search.drivers import search_driver

        if settings.search != self.chart.algorithm:  # another engine over the same store and LM
            self.chart = search_driver(settings.search)(self.store, self.lm, self.weights, self.space, settings)
        self.search_settings = self.chart.configure(settings)
        self.settings.update(self.search_settings.as_dict())
        return self.search_settings

    @classmethod
    def from_config(cls, path: str | os.PathLike, **overrides) -> "Decoder":
        """The decoder a TOML config describes (decoder.config.load_config); keyword overrides
        (pop_limit=..., ...) win over the file."""
        return cls._from_checked(load_config(path), overrides)

    @classmethod
    def from_mapping(cls, mapping: Mapping, base_dir: str | os.PathLike | None = None, *,
                     source: str | None = None, **overrides) -> "Decoder":
        """The decoder a config given as a dict describes (the TOML file's keys and tables); relative
        paths are relative to base_dir (None: to the working directory); errors name `source`."""
        return cls._from_checked(parse_config(mapping, base_dir=base_dir, source=source), overrides)

    @classmethod
    def _from_checked(cls, config: DecoderConfig, overrides: dict) -> "Decoder":
        if isinstance(config, SdigConfig):  # `system = "sdig"`: the other translation system
            from .sdig.decoder import SdigDecoder

            return SdigDecoder.from_checked(config, overrides)
        arguments = config.decoder_arguments()
        # an experimental setting given by name, or an `experimental` mapping, changes the config's
        moved = {name: overrides[name] for name in EXPERIMENTAL_NAMES if name in overrides}
        given = overrides.get(EXPERIMENTAL_TABLE)
        if moved or isinstance(given, Mapping):
            base = given if isinstance(given, ExperimentalSettings) else arguments[EXPERIMENTAL_TABLE]
            overrides = {key: value for key, value in overrides.items() if key not in moved}
            overrides[EXPERIMENTAL_TABLE] = base.replace(**(given if isinstance(given, Mapping) else {}), **moved)
        unknown = sorted(set(overrides) - set(arguments))
        if unknown:
            raise SettingsError(None, f"unknown setting `{unknown[0]}`")
        for key in ("store", "lm"):  # a file given beside the config (cky translate --lm): its own error
            if isinstance(overrides.get(key), (str, os.PathLike)):
                overrides = {**overrides, key: _model_file_opener(key)(overrides[key])}
        arguments.update(overrides)
        return cls(**arguments)

    # ------------------------------------------------------------------ translation

    @staticmethod
    def _words(sentence) -> tuple[str, list[str]]:
        """The source text, and its words as the rule table writes them (escaped, as cky extract
        wrote the table)."""
        if isinstance(sentence, str):
            words = sentence.split()
        elif isinstance(sentence, (bytes, bytearray)):
            raise TypeError("a sentence is a str (or a list of str tokens), not bytes: decode it first, "
                            "e.g. data.decode('utf-8')")
        elif sentence is None or not isinstance(sentence, (list, tuple)):
            raise TypeError(f"a sentence is a str or a list of str tokens, not {type(sentence).__name__}")
        else:
            words = list(sentence)
            for word in words:
                if not isinstance(word, str):
                    raise TypeError(f"a sentence given as a list must hold str tokens, not "
                                    f"{type(word).__name__} ({word!r})")
        return " ".join(words), [escape_word(w) for w in words]

    def _empty(self, source: str, started: float) -> Translation:
        features = {name: 0.0 for name in self.weights.feature_names()}
        features[LM] = float(self.lm.score_sentence([]))
        stats = {"words": 0, "edges_proposed": 0, "edges_kept": 0, "lm_queries": 0, "lm_queries_novel": 0,
                 "items_per_cell": {}, "seconds": time.perf_counter() - started}
        return Translation("", "", self.weights.dot(features), features, None, stats, source)

    def _translation(self, read_back, source: str, stats: dict) -> Translation:
        # The search works on rule-table words (escaped); the text is plain, the tree keeps them escaped.
        text = " ".join(map(unescape_word, read_back.words))
        return Translation(text, read_back.tree, float(read_back.score), read_back.features,
                           read_back.derivation, stats, source)

    def _prepare(self, sentence, tokenized: bool | None) -> tuple[str, list[str], "tuple | None"]:
        """(the tokenized source text, its words as the rule table writes them, and for raw text
        (raw input, its tokens, their input casing), else None); see "Raw text" above."""
        if tokenized is not None and not isinstance(tokenized, bool):
            raise TypeError(f"tokenized must be True, False or None, not {tokenized!r}")
        source, words = self._words(sentence)
        if not self.text.raw or tokenized or not isinstance(sentence, str):
            return source, words, None
        tokens, cased = self.text.source_tokens(sentence)
        return " ".join(tokens), [escape_word(w) for w in tokens], (sentence, tokens, cased)

    def _finish(self, translation: Translation, raw) -> Translation:
        """Fill in the unknown words, and for raw input the text the user reads (decoder.text)."""
        source_tokens = translation.source_tokens.split()
        translation.unknown_words = [source_tokens[i] for i in unknown_positions(translation.derivation)
                                     if i < len(source_tokens)]
        return self.text.present(translation, raw)

    def translate(self, sentence: str | Sequence[str], tokenized: bool | None = None) -> Translation:
        """The best translation of one sentence (a str, or a list of tokens): its text, target tree,
        model score, features, derivation and search stats (`stats["seconds"]`,
        `stats["cpu_seconds"]`, the search's counters). A str is raw text when the config records
        its languages and `tokenized` is not True (see "Raw text" above), else whitespace-separated
        tokens. An empty sentence gives an empty translation scored by the LM's sentence boundaries
        alone. A str or list of str is required (TypeError otherwise); errors of the search itself
        propagate."""
        started, cpu_started = time.perf_counter(), time.process_time()
        source, words, raw = self._prepare(sentence, tokenized)
        if not words:
            return self._finish(self._empty(source, started), raw)
        with self._engine_lock:
            result = self.chart.run(words)
            best = self.chart.best(result, words)
        if best is None:  # cannot happen with glue and pass-through; kept as a guard
            raise RuntimeError("no derivation covers the sentence")
        stats = dict(result.stats, seconds=time.perf_counter() - started,
                     cpu_seconds=time.process_time() - cpu_started)
        return self._finish(self._translation(best, source, stats), raw)

    def kbest(self, sentence: str | Sequence[str], k: int, unique: bool = True,
              tokenized: bool | None = None) -> list[Translation]:
        """The k best translations of one sentence, best first (the first is `translate`'s); with
        `unique` (the default), only the best derivation of each distinct output (its tokens).
        The sentence is raw text or tokens as for `translate`.

        The list can hold fewer than k translations, for one of these reasons:

        - the search space kept fewer: k-best reads the chart the search left (Huang and Chiang,
          2005, Algorithm 3), so with pruning (pop_limit, beam_size, beam_threshold, table_limit)
          only the derivations of the items that survived are candidates, and a short or
          unambiguous sentence may have fewer than k derivations at all;
        - with `unique`, fewer distinct outputs: many derivations give the same text, and at most
          50 * k derivations (decoder.search.kbest.DERIVATIONS_PER_UNIQUE_OUTPUT) are examined;
        - the two-pass search (`search = "two-pass"`) lists only the complete derivations its
          second pass reached before it stopped (`second_pass_stop`, `two_pass_beam`, `agenda_limit`,
          `max_pops`; at most decoder.search.two_pass.MAX_RESULTS).

        Raise `pop_limit` (or set `exhaustive = true`) for longer lists. An empty sentence gives one
        empty translation. k must be an integer >= 1 (TypeError, ValueError otherwise)."""
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError(f"k must be an integer, not {k!r}")
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if k > MAX_KBEST:
            raise ValueError(f"k must be at most {MAX_KBEST:,} (decoder.settings.MAX_KBEST), not {k:,}")
        started = time.perf_counter()
        source, words, raw = self._prepare(sentence, tokenized)
        if not words:
            return [self._finish(self._empty(source, started), raw)]
        with self._engine_lock:
            result = self.chart.run(words)
            hypotheses = self.chart.kbest(result, words, int(k), unique=unique)
        stats = dict(result.stats, seconds=time.perf_counter() - started)
        return [self._finish(self._translation(h, source, stats), raw) for h in hypotheses]

    def translate_batch(self, sentences: Sequence[str], workers: int = 1, progress: bool = False,
                        cluster=None, tokenized: bool | None = None) -> list:
        """Translations of many sentences, in order, on `workers` processes (decoder.batch), or on a Dask
        cluster: `cluster` is a dask.distributed Client, or a spec for decoder.cluster.connect ("local:2",
        "tcp://HOST:PORT"; connected for this call only). On a cluster each worker builds this decoder
        from its config file and present search settings (so it must come from Decoder.from_config).
        Each sentence is raw text or tokens as for `translate` (`tokenized`)."""
        import functools

        from .batch import translate_batch
        from .translation import translate_job

        if isinstance(sentences, (str, bytes, bytearray)) or sentences is None:
            raise TypeError(f"translate_batch takes a list of sentences, not {type(sentences).__name__}; "
                            f"to translate one sentence, use translate()")
        sentences = list(sentences)
        for sentence in sentences:
            self._words(sentence)  # a TypeError now rather than a failed line per sentence
        if tokenized is not None and not isinstance(tokenized, bool):
            raise TypeError(f"tokenized must be True, False or None, not {tokenized!r}")
        job = translate_job if tokenized is None else functools.partial(translate_job, tokenized=tokenized)
        if isinstance(cluster, str):
            from .cluster_workers import connect

            with connect(cluster) as client:
                return translate_batch(self, sentences, job=job, progress=progress, cluster=client)
        return translate_batch(self, sentences, workers=workers, job=job, progress=progress, cluster=cluster)

    def __repr__(self) -> str:
        return (f"Decoder(store={self.store.path!r}, lm={self.lm.path!r}, strategy={self.store.strategy}, "
                f"pop_limit={self.settings['pop_limit']}, exhaustive={self.settings['exhaustive']})")
