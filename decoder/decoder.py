"""The CKY decoder's public API: `Decoder` and `Translation`.

    decoder = Decoder.from_config("model/config.toml")
    decoder = Decoder(store="model/store", lm="model/lm.bin", weights={"lm": 1.0}, pop_limit=100)
    t = decoder.translate("en el principio creó dios")
    t.text, t.tree, t.score, t.features, t.derivation, t.stats
    decoder.kbest("en el principio", 100, unique=True)    # list of Translations, best first

Input is one sentence of whitespace-separated tokens (tokenize it as the grammar's
training data was). The search is the compiled CKY chart (decoder.search.chart);
the features, the glue and unknown-word handling are described in
decoder.search.model.

## Config (TOML)

Keys may sit at the top level or in any table (`[model]`, `[search]`, ...), except
the weights, which are the `[weights]` table (feature name -> weight). Relative
paths are relative to the config file. Defaults:

    store = "store"              # grammar store directory (cky compile); required
    lm = "lm.bin"                # KenLM ARPA or probing binary; required
    lm_order = 5                 # optional check against the LM file
    glue = "builtin"             # or a Moses glue rule table (cky extract's glue file; goal label Q);
                                 # the oov_labels always get glue rules (GlueRules.cover)
    oov_labels = ["X"]           # labels of pass-through items; or a file of "LABEL prob" lines
    oov_penalty = -10.0          # the `oov` weight (same as weights.oov)
    max_span = 20                # longest source span of a non-glue rule
    max_unary_depth = 1          # unary rounds per cell
    pop_limit = 100              # cube pruning pops per cell (0: unlimited)
    unary_pop_limit = 10         # pops per unary round (-1: the pop limit)
    beam_size = 0                # histogram beam: items kept per cell (0: no limit)
    beam_threshold = 0.0         # threshold beam: drop items this far below the cell's best (0: off)
    exhaustive = false           # no pruning at all (small inputs only)

    [weights]                    # defaults: decoder.search.model.DEFAULT_WEIGHTS,
    lm = 1.0                     # and 0.2 for each rule-table score column
    word_count = 0.5
    oov = -10.0
    glue = -0.5
"""
from __future__ import annotations

import os
import time
from typing import Sequence

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from .grammar import escape_word, unescape_word
from .search.model import LM, OOV, GlueRules, SearchSpace, Weights
from .translation import Translation

DEFAULT_SETTINGS = {
    "glue": "builtin",
    "oov_labels": ["X"],
    "max_span": 20,
    "max_unary_depth": 1,
    "pop_limit": 100,
    "unary_pop_limit": 10,
    "beam_size": 0,
    "beam_threshold": 0.0,
    "exhaustive": False,
}
_PATH_KEYS = ("store", "lm", "glue", "oov_labels")
_KNOWN_KEYS = set(DEFAULT_SETTINGS) | {"store", "lm", "lm_order", "oov_penalty"}


def _flatten(config: dict) -> tuple[dict, dict]:
    """(settings from every table but [weights], the weights)."""
    settings, weights = {}, dict(config.get("weights", {}))

    def walk(table: dict):
        for key, value in table.items():
            if key == "weights" and isinstance(value, dict):
                continue
            if isinstance(value, dict):
                walk(value)
            else:
                settings.setdefault(key, value)

    walk(config)
    return settings, weights


def _read_oov_labels(value) -> tuple:
    if isinstance(value, str):
        if os.path.isfile(value):
            with open(value, encoding="utf-8") as f:
                labels = [line.split()[0] for line in f if line.strip()]
            return tuple(labels) or ("X",)
        return (value,)
    return tuple(value)


class Decoder:
    """A CKY decoder over a grammar store with an integrated KenLM language model."""

    def __init__(self, store, lm, weights: dict | None = None, *, lm_order: int | None = None,
                 glue: str = "builtin", oov_labels=("X",), oov_penalty: float | None = None,
                 max_span: int = 20, max_unary_depth: int = 1, pop_limit: int = 100, unary_pop_limit: int = 10,
                 beam_size: int = 0,
                 beam_threshold: float = 0.0, exhaustive: bool = False, config_path: str | None = None):
        from .lm import LanguageModel
        from .search.chart import ChartDecoder
        from .store import GrammarStore

        started = time.perf_counter()
        self.store = store if not isinstance(store, (str, os.PathLike)) else GrammarStore.open(store)
        self.lm = lm if not isinstance(lm, (str, os.PathLike)) else LanguageModel(os.fspath(lm))
        if lm_order is not None and int(lm_order) != self.lm.order:
            raise ValueError(f"the config says lm_order = {lm_order}, but {self.lm.path} is a {self.lm.order}-gram model")
        weights = dict(weights or {})
        if oov_penalty is not None:
            weights[OOV] = float(oov_penalty)
        self.weights = Weights(self.store.feature_names, weights)
        glue_rules = GlueRules() if glue in (None, "", "builtin") else GlueRules.from_file(os.fspath(glue))
        self.space = SearchSpace(max_span=int(max_span), max_unary_depth=int(max_unary_depth),
                                 oov_labels=_read_oov_labels(oov_labels), glue=glue_rules)
        self.glue_labels_added = glue_rules.cover(self.space.oov_labels)
        self.config_path = config_path
        self.settings = dict(glue=glue, oov_labels=list(self.space.oov_labels), max_span=int(max_span),
                             max_unary_depth=int(max_unary_depth), pop_limit=int(pop_limit),
                             unary_pop_limit=int(unary_pop_limit),
                             beam_size=int(beam_size), beam_threshold=float(beam_threshold),
                             exhaustive=bool(exhaustive))
        self.search = ChartDecoder(self.store, self.lm, self.weights, self.space, pop_limit=pop_limit,
                                   beam_size=beam_size, beam_threshold=beam_threshold, exhaustive=exhaustive)
        self.search.configure(unary_pop_limit=unary_pop_limit)
        self.load_seconds = time.perf_counter() - started

    @classmethod
    def from_config(cls, path: str | os.PathLike, **overrides) -> "Decoder":
        path = os.fspath(path)
        with open(path, "rb") as f:
            config = tomllib.load(f)
        settings, weights = _flatten(config)
        base = os.path.dirname(os.path.abspath(path))
        for key in _PATH_KEYS:
            value = settings.get(key)
            if isinstance(value, str) and value and value != "builtin" and not os.path.isabs(value):
                candidate = os.path.normpath(os.path.join(base, value))
                if key != "oov_labels" or os.path.exists(candidate):
                    settings[key] = candidate
        for key in ("store", "lm"):
            if key not in settings:
                raise ValueError(f"{path}: the config needs `{key} = ...`")
        kwargs = {k: v for k, v in settings.items() if k in _KNOWN_KEYS}
        kwargs.update(overrides)
        store, lm = kwargs.pop("store"), kwargs.pop("lm")
        return cls(store, lm, weights, config_path=path, **kwargs)

    # ------------------------------------------------------------------ translation

    @staticmethod
    def _words(sentence) -> tuple[str, list[str]]:
        """The source text, and its words as the rule table writes them (escaped, as cky extract
        wrote the table)."""
        words = sentence.split() if isinstance(sentence, str) else [str(w) for w in sentence]
        return " ".join(words), [escape_word(w) for w in words]

    def _empty(self, source: str, started: float) -> Translation:
        features = {name: 0.0 for name in self.weights.feature_names()}
        features[LM] = float(self.lm.score_sentence([]))
        stats = {"words": 0, "edges_proposed": 0, "edges_kept": 0, "lm_queries": 0, "lm_queries_novel": 0,
                 "items_per_cell": {}, "seconds": time.perf_counter() - started}
        return Translation("", "", self.weights.dot(features), features, None, stats, source)

    def _translation(self, hypothesis, source: str, stats: dict) -> Translation:
        # The search works on rule-table words (escaped); the text is plain, the tree keeps them escaped.
        text = " ".join(map(unescape_word, hypothesis.words))
        return Translation(text, hypothesis.tree, float(hypothesis.score), hypothesis.features,
                           hypothesis.derivation, stats, source)

    def translate(self, sentence: str | Sequence[str]) -> Translation:
        started, cpu_started = time.perf_counter(), time.process_time()
        source, words = self._words(sentence)
        if not words:
            return self._empty(source, started)
        result = self.search.search(words)
        best = self.search.best(result, words)
        if best is None:  # cannot happen with glue and pass-through; kept as a guard
            raise RuntimeError("no derivation covers the sentence")
        stats = dict(result.stats, seconds=time.perf_counter() - started,
                     cpu_seconds=time.process_time() - cpu_started)
        return self._translation(best, source, stats)

    def kbest(self, sentence: str | Sequence[str], k: int, unique: bool = True) -> list[Translation]:
        started = time.perf_counter()
        source, words = self._words(sentence)
        if not words:
            return [self._empty(source, started)]
        result = self.search.search(words)
        hypotheses = self.search.kbest(result, words, k, unique=unique)
        stats = dict(result.stats, seconds=time.perf_counter() - started)
        return [self._translation(h, source, stats) for h in hypotheses]

    def translate_batch(self, sentences: Sequence[str], workers: int = 1, progress: bool = False) -> list:
        """Translations of many sentences, in order, on `workers` processes (decoder.batch)."""
        from .batch import translate_batch

        return translate_batch(self, sentences, workers=workers, progress=progress)

    def __repr__(self) -> str:
        return (f"Decoder(store={self.store.path!r}, lm={self.lm.path!r}, strategy={self.store.strategy}, "
                f"pop_limit={self.settings['pop_limit']}, exhaustive={self.settings['exhaustive']})")
