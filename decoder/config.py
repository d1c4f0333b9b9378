"""Decoder configs (TOML): the keys, their defaults, the path rule, and the one loader.

    config = load_config("model/config.toml")       # a DecoderConfig, checked; paths resolved
    Decoder.from_config("model/config.toml")        # = Decoder(**load_config(...).decoder_arguments())
    Decoder.from_mapping({"store": ..., "lm": ..., "weights": {...}}, base_dir="model")

## Keys

Keys may sit at the top level or in any table (`[model]`, `[search]`, ...), except
the weights, which are the top-level `[weights]` table (feature name -> weight),
and the experimental settings, the top-level `[experimental]` table.
Relative paths are relative to the config file. Defaults:

    store = "store"              # grammar store directory (cky compile); required
    lm = "lm.bin"                # KenLM ARPA, probing or rest_probing binary (lm.rest.bin); required
    lm_order = 5                 # optional check against the LM file
    glue = "builtin"             # or a Moses glue rule table (cky extract's glue file; goal label Q);
                                 # the oov_labels always get glue rules (GlueRules.cover)
    oov_labels = ["X"]           # labels of pass-through items; or a file of "LABEL prob" lines
    oov_penalty = -10.0          # the `oov` weight (same as weights.oov)
    search = "cube"              # the search algorithm: "cube", "incremental" or "two-pass"
    max_span = 20                # longest source span of a non-glue rule
    max_unary_depth = 1          # unary rounds per cell
    pop_limit = 100              # cube pruning pops per cell (0: unlimited)
    beam_size = 0                # histogram beam: items kept per cell (0: no limit)
    beam_threshold = 0.0         # threshold beam: drop items this far below the cell's best (0: off)
    exhaustive = false           # no pruning at all (small inputs only)
    memory_budget_mb = 2048      # memory one sentence's search may hold (chart, queues, k-best), in MB;
                                 # a sentence over it fails alone, naming this setting (0: no limit)
    table_limit = 20             # rules kept per source side, best by rule score under the
                                 # weights, applied when the decoder opens the store (0: all)
    # search = "two-pass" (Venugopal et al. 2007): the first pass is the chart search above with
    # items recombined on (X, i, j); these bound the second pass (H.Search):
    two_pass_beam = 5.0          # drop partial items this far below the best score seen (inf: no beam)
    agenda_limit = 1000          # partial items kept on the agenda (0: no limit)
    max_pops = 10000             # unwind operations per sentence (-1: no limit)
    kbest_per_class = 1          # partial items kept per recombination class (more: a fuller k-best)
    allow_unknown_weights = false  # true: weights of features the model lacks are ignored, not an error
    system = "ghkm"              # the translation system: "ghkm" (this table) or "sdig" (below)

    [languages]                  # what the system translates (cky train writes them; optional):
    source_language = "es"       # language codes of the corpus sides
    target_language = "en"
    source_tokenizer = "es"      # tokenizers of decoder.data.tokenize's registry (TOKENIZERS)
    target_tokenizer = "en"
    # With languages, the decoder takes raw text and returns detokenized, recased text (decoder.text).
    recase_model = "recase.gz"   # optional: the recasing model (decoder.recase; cky train's recase stage);
                                 # without it, only sentence starts are capitalized

    [weights]                    # defaults: decoder.search.model.DEFAULT_WEIGHTS,
    lm = 1.0                     # and 0.2 for each rule-table score column
    word_count = 0.5
    oov = -10.0
    glue = -0.5

    [experimental]               # research knobs (decoder.settings.ExperimentalSettings; docs/search.md)
    pop_count = "all"            # what pop_limit counts: every pop, or ("real") only pops of real items
                                 # (complete rule applications, as Moses counts them); search "cube" or
                                 # "incremental"
    virtual_pop_limit = 1000     # pop_count = "real": pops on the binarization's virtual items per cell
    unary_pop_limit = 10         # pops per unary round (-1: the pop limit)
    table_limit_rank = "score"   # the table limit ranks by rule score, or ("estimate") by rule score +
                                 # weighted LM estimate of the rule's words, as Moses does
    rule_order = "estimate"      # cube pruning tries each key's rules best first by rule score +
                                 # weighted LM estimate of their words, or by rule score ("score")
    weight_pushing = true        # virtual items carry their best completion's rule score, so they
                                 # compete fairly with real items for a cell's pops (false: off)
    edge_limit = 0               # two-pass: hyperedges per item the second pass unwinds into (0: all)
    first_pass_items = 0         # two-pass: a first-pass cell (unary round) stops at this many items
    first_pass_threshold = 0.0   # ... or at a pop this far below the round's best so far (the paper's beta)
    second_pass_stop = "budget"  # "budget"; "bound": once the best complete derivation scores at least
                                 # the agenda's best; "first": at the first complete derivation

The experimental keys are read only from the top-level [experimental] table; an
unknown key there is a ConfigError naming it and the file. Configs written
before that table existed set them beside the other keys: such a key still
loads, with a warning (FutureWarning) that names the file and the [experimental]
table to move it to. `rule_lookahead` and `pop_threshold` were removed (they did
not pay): set to 0 (their old default, off) they load with a warning, any other
value is a ConfigError.

## The SDIG system (`system = "sdig"`, Ding and Palmer 2005; decoder.sdig)

A config with `system = "sdig"` describes an SdigDecoder (decoder.sdig.decoder), and
Decoder.from_config / from_mapping return one. Its keys (SdigConfig holds the defaults):

    system = "sdig"
    grammar = "grammar"          # SDIG grammar directory (`cky extract --system sdig`); required
    lm = "lm.bin"                # optional: without it the paper's model (no LM)
    beam_size = 20               # hypotheses kept per (node, parent root word); at least 1
                                 # (its effect on BLEU and speed: docs/sdig.md)
    kbest_beam_size = 10         # most hypotheses a k-best list is drawn from (caps k-best's cost:
                                 # kbest(k) searches with beam max(beam_size, min(3k, this)))
    reorder = false              # true: the grammar's learned child order model
    max_source_words = 7         # most source words of an ET used (default decoder.sdig.grammar.MAX_ET_WORDS)
    table_limit = 20             # English sides kept per source ET, likeliest first; 0: all
                                 # (default decoder.sdig.grammar.TABLE_LIMIT)
    recase_model = "recase.gz"   # optional, as for GHKM

    [languages]                  # optional, as for GHKM: raw text in, detokenized, recased text out
    source_language = "es"       # (`cky train --system sdig` writes them)
    ...

    [weights]                    # SDIG features (decoder.sdig.search.FEATURES; its DEFAULT_WEIGHTS,
    tm_fe = 1.0                  # and lm = 1.0 when there is an LM)

A GHKM key in an SDIG config (`store`, `pop_limit`, ...), an SDIG key in a GHKM
config, or a weight that is not an SDIG feature is a ConfigError naming the key.

The search settings' defaults live in decoder.settings.SearchSettings (the only
home); this table shows them. Every mistake is a ConfigError naming the key and
the file: a key not in this table (`pop_limt`), a value of the wrong type
(`pop_limit = 2.7`, `exhaustive = "false"`, `lm = true` among the weights,
`store = 42`) or out of range (`max_span = 0`, `oov_labels = []`), and a weight
for a feature the model does not have (`lmm = 1.13`) unless
`allow_unknown_weights = true`.
"""
from __future__ import annotations

import copy
import difflib
import os
import warnings
from dataclasses import dataclass, field
from typing import Mapping

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from .errors import ConfigError, SettingsError
from .settings import (DEFAULT_GLUE, DEFAULT_OOV_LABELS, DEFAULT_SEARCH_SETTINGS, EXPERIMENTAL_NAMES, EXPERIMENTAL_TABLE,
                       REMOVED_SETTINGS, SETTING_NAMES, SearchSettings, check_int, check_number, check_weights)

WEIGHTS = "weights"
# Keys whose values are paths relative to the config file; oov_labels is a path only if such a
# file exists (else it is a label), glue = "builtin" is not one.
PATH_KEYS = ("store", "lm", "glue", "oov_labels", "recase_model")
SDIG_PATH_KEYS = ("grammar", "lm", "recase_model")
# Every key that is a path in some system's config (relocate_paths rewrites them all).
ANY_PATH_KEYS = PATH_KEYS + tuple(k for k in SDIG_PATH_KEYS if k not in PATH_KEYS)
MODEL_KEYS = ("store", "lm", "lm_order", "glue", "oov_labels", "oov_penalty", "allow_unknown_weights",
              "recase_model")
SYSTEMS = ("ghkm", "sdig")
DEFAULT_SYSTEM = "ghkm"
# The SDIG system's keys (besides `system` and [languages]); `lm`, `beam_size` and `recase_model` are
# shared with GHKM.
SDIG_KEYS = ("grammar", "lm", "beam_size", "kbest_beam_size", "reorder", "max_source_words", "table_limit",
             "recase_model")
# What a system translates: recorded by `cky train`, not arguments of the decoder (strings; optional).
LANGUAGE_KEYS = ("source_language", "target_language", "source_tokenizer", "target_tokenizer")
CONFIG_KEYS = MODEL_KEYS + SETTING_NAMES + LANGUAGE_KEYS + ("system",) + tuple(k for k in SDIG_KEYS
                                                               if k not in MODEL_KEYS + SETTING_NAMES)
# Keys read outside [experimental] only for configs written before it existed (with a FutureWarning),
# and keys of removed settings (decoder.settings.REMOVED_SETTINGS).
LEGACY_KEYS = EXPERIMENTAL_NAMES + tuple(REMOVED_SETTINGS)
REQUIRED_KEYS = ("store", "lm")


@dataclass(frozen=True)
class DecoderConfig:
    """A checked decoder config: what `Decoder` is built from."""

    store: str
    lm: str
    weights: dict = field(default_factory=dict)
    settings: SearchSettings = DEFAULT_SEARCH_SETTINGS
    lm_order: int | None = None
    glue: str = DEFAULT_GLUE
    oov_labels: tuple | str = DEFAULT_OOV_LABELS
    oov_penalty: float | None = None
    allow_unknown_weights: bool = False
    path: str | None = None  # the file it came from (named in errors)
    languages: dict = field(default_factory=dict)  # LANGUAGE_KEYS given in the file -> their values
    recase_model: str | None = None  # the recasing model's path (decoder.text)

    def decoder_arguments(self) -> dict:
        """Keyword arguments of Decoder(...)."""
        return dict(store=self.store, lm=self.lm, weights=dict(self.weights), lm_order=self.lm_order,
                    glue=self.glue, oov_labels=self.oov_labels, oov_penalty=self.oov_penalty,
                    allow_unknown_weights=self.allow_unknown_weights, config_path=self.path,
                    languages=dict(self.languages), recase_model=self.recase_model,
                    experimental=self.settings.experimental,
                    **{name: getattr(self.settings, name) for name in SETTING_NAMES})


@dataclass(frozen=True)
class SdigConfig:
    """A checked `system = "sdig"` config: what decoder.sdig.decoder.SdigDecoder is built from.
    The defaults here are the SDIG system's config defaults (documented in the module docstring)."""

    grammar: str
    lm: str | None = None
    weights: dict = field(default_factory=dict)
    beam_size: int = 20
    kbest_beam_size: int = 10
    reorder: bool = False
    max_source_words: int | None = None  # None: decoder.sdig.grammar.MAX_ET_WORDS
    table_limit: int | None = None  # None: decoder.sdig.grammar.TABLE_LIMIT
    path: str | None = None
    languages: dict = field(default_factory=dict)  # LANGUAGE_KEYS given in the file -> their values
    recase_model: str | None = None  # the recasing model's path (decoder.text)

    system = "sdig"

    def decoder_arguments(self) -> dict:
        """Keyword arguments of SdigDecoder(...)."""
        arguments = dict(grammar=self.grammar, lm=self.lm, weights=dict(self.weights), beam_size=self.beam_size,
                         kbest_beam_size=self.kbest_beam_size, reorder=self.reorder, config_path=self.path,
                         languages=dict(self.languages), recase_model=self.recase_model)
        if self.max_source_words is not None:
            arguments["max_source_words"] = self.max_source_words
        if self.table_limit is not None:
            arguments["table_limit"] = self.table_limit
        return arguments


def read_toml(path: str | os.PathLike) -> dict:
    """The TOML file as a dict; a syntax error or an unreadable file is a ConfigError naming it."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
        try:  # TOML is UTF-8 (tomllib.load would raise a bare UnicodeDecodeError)
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            raise ConfigError(path, f"not UTF-8 at byte offset {error.start} (0x{data[error.start]:02x}: "
                                    f"{error.reason}); save the config as UTF-8", line) from None
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(path, f"not valid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(path, f"cannot read the config: {error.strerror or error}") from None


def load_config(path: str | os.PathLike) -> "DecoderConfig | SdigConfig":
    """The config file, checked (see the module docstring), its relative paths resolved against its
    directory."""
    path = os.fspath(path)
    return parse_config(read_toml(path), base_dir=os.path.dirname(os.path.abspath(path)), source=path)


def parse_config(mapping: Mapping, base_dir: str | os.PathLike | None = None,
                 source: str | None = None) -> "DecoderConfig | SdigConfig":
    """A DecoderConfig (an SdigConfig for `system = "sdig"`) from a mapping shaped like the TOML file (tables allowed); relative paths are
    resolved against base_dir (None: left as they are). Errors name `source` (the file) if given."""
    if not isinstance(mapping, Mapping):
        raise ConfigError(source, f"a config is a table of keys, not {type(mapping).__name__}")
    values, weights, experimental = _flatten(mapping, source)
    languages = {key: values.pop(key) for key in LANGUAGE_KEYS if key in values}
    for key, value in languages.items():
        if not isinstance(value, str) or not value:
            raise ConfigError(source, f"`{key}` must be a non-empty string, not {value!r}")
    system = values.pop("system", DEFAULT_SYSTEM)
    if system not in SYSTEMS:
        raise ConfigError(source, f"`system` must be one of {', '.join(repr(s) for s in SYSTEMS)}, not {system!r}")
    if system == "sdig":
        if experimental is not None:
            raise ConfigError(source, f"`[{EXPERIMENTAL_TABLE}]` is a table of the GHKM system's searches, "
                                      f"not of `system = \"sdig\"`")
        stray = sorted(k for k in values if k in LEGACY_KEYS)
        if stray:
            raise ConfigError(source, f"`{stray[0]}` is not a key of `system = \"sdig\"` (its keys: "
                                      f"system, {', '.join(SDIG_KEYS)})")
        return _parse_sdig(values, weights, base_dir, source, languages)
    experimental = _experimental_values(values, experimental, source)
    stray = sorted(k for k in values if k not in MODEL_KEYS + SETTING_NAMES)
    if stray:
        raise ConfigError(source, f"`{stray[0]}` is a key of `system = \"sdig\"`, not of the GHKM system")
    for key in REQUIRED_KEYS:
        if key not in values:
            raise ConfigError(source, f"the config needs `{key} = ...`")
    try:
        settings = SearchSettings.from_mapping({**values, EXPERIMENTAL_TABLE: experimental})
        weights = check_weights(weights)
        model = _check_model_values(values)
    except SettingsError as error:
        raise ConfigError(source, error.reason) from None
    if base_dir is not None:
        base_dir = os.fspath(base_dir)
        for key in PATH_KEYS:
            if key in model:
                model[key] = resolve_path(key, model[key], base_dir)
    return DecoderConfig(weights=weights, settings=settings, path=source, languages=languages, **model)


def _parse_sdig(values: dict, weights: dict, base_dir, source, languages: dict) -> SdigConfig:
    """An SdigConfig from the flattened keys (the SDIG keys only; see the module docstring)."""
    from .sdig.search import FEATURES

    stray = sorted(k for k in values if k not in SDIG_KEYS)
    if stray:
        raise ConfigError(source, f"`{stray[0]}` is not a key of `system = \"sdig\"` (its keys: "
                                  f"system, {', '.join(SDIG_KEYS)})")
    if "grammar" not in values:
        raise ConfigError(source, 'a `system = "sdig"` config needs `grammar = ...` (the SDIG grammar directory)')
    try:
        model: dict = {}
        for key in SDIG_PATH_KEYS:
            if key in values:
                value = values[key]
                if isinstance(value, os.PathLike):
                    value = os.fspath(value)
                if not isinstance(value, str) or not value:
                    raise SettingsError(None, f"`{key}` must be a path (a non-empty string), not {value!r}")
                model[key] = value if base_dir is None else resolve_path(key, value, os.fspath(base_dir))
        for key in ("beam_size", "kbest_beam_size", "max_source_words"):
            if key in values:
                model[key] = check_int(key, values[key])
                if model[key] < 1:
                    raise SettingsError(None, f"`{key}` must be at least 1, not {model[key]}")
        if "reorder" in values:
            if not isinstance(values["reorder"], bool):
                raise SettingsError(None, f"`reorder` must be true or false, not {values['reorder']!r}")
            model["reorder"] = values["reorder"]
        if "table_limit" in values:
            model["table_limit"] = check_int("table_limit", values["table_limit"])
            if model["table_limit"] < 0:
                raise SettingsError(None, f"`table_limit` must be at least 0 (0: no limit), not {model['table_limit']}")
        weights = check_weights(weights)
    except SettingsError as error:
        raise ConfigError(source, error.reason) from None
    unknown = sorted(set(weights) - set(FEATURES))
    if unknown:
        raise ConfigError(source, f"weight `{unknown[0]}` names no SDIG feature (its features: {', '.join(FEATURES)})")
    return SdigConfig(weights=weights, path=source, languages=languages, **model)


def resolve_path(key: str, value, base_dir: str):
    """A path key's value with a relative path made absolute against base_dir (the config's directory)."""
    if not isinstance(value, (str, os.PathLike)):
        return value
    value = os.fspath(value)
    if not value or value == DEFAULT_GLUE or os.path.isabs(value):
        return value
    candidate = os.path.normpath(os.path.join(base_dir, value))
    if key == "oov_labels" and not os.path.exists(candidate):
        return value  # a label, not a file
    return candidate


def relocate_paths(mapping: dict, from_dir: str, to_dir: str | None = None) -> dict:
    """A copy of a raw config (tables kept) whose relative paths, written for a file in from_dir,
    work for a file in to_dir: relative to to_dir, or absolute when to_dir is None."""
    mapping = copy.deepcopy(mapping)
    from_dir = os.path.abspath(from_dir)

    def fix(table: dict) -> None:
        for key, value in table.items():
            if key == WEIGHTS:
                continue
            if isinstance(value, dict):
                fix(value)
            elif key in ANY_PATH_KEYS:
                resolved = resolve_path(key, value, from_dir)
                if resolved == value:  # not a path (builtin, a label), or already absolute
                    continue
                if to_dir is None:
                    table[key] = resolved
                elif os.path.abspath(to_dir) != from_dir:
                    table[key] = os.path.relpath(resolved, os.path.abspath(to_dir))

    fix(mapping)
    return mapping


def _flatten(mapping: Mapping, source: str | None) -> tuple[dict, dict, dict | None]:
    """(every key but the weights and the experimental settings, from any table; the weights; the
    [experimental] table, or None); unknown or repeated keys are errors."""
    values: dict = {}
    where: dict = {}
    weights = mapping.get(WEIGHTS, {})
    if not isinstance(weights, Mapping):
        raise ConfigError(source, f"`{WEIGHTS}` must be a table of feature name -> number, not {weights!r}")
    experimental = mapping.get(EXPERIMENTAL_TABLE)
    if experimental is not None:
        experimental = _experimental_table(experimental, source)

    def walk(table: Mapping, prefix: str) -> None:
        for key, value in table.items():
            dotted = prefix + str(key)
            if key == WEIGHTS:
                if prefix:
                    raise ConfigError(source, f"`{dotted}`: the weights are the top-level [{WEIGHTS}] table")
                continue
            if key == EXPERIMENTAL_TABLE:
                if prefix:
                    raise ConfigError(source, f"`{dotted}`: the experimental settings are the top-level "
                                              f"[{EXPERIMENTAL_TABLE}] table")
                continue
            if isinstance(value, Mapping):
                walk(value, dotted + ".")
                continue
            if key not in CONFIG_KEYS + LEGACY_KEYS:
                close = difflib.get_close_matches(str(key), CONFIG_KEYS, n=1)
                hint = f" (did you mean `{close[0]}`?)" if close else f" (known keys: {', '.join(CONFIG_KEYS)})"
                raise ConfigError(source, f"unknown key `{dotted}`{hint}")
            if key in values:
                raise ConfigError(source, f"`{key}` is given twice (`{where[key]}` and `{dotted}`)")
            values[key], where[key] = value, dotted

    walk(mapping, "")
    for key in LEGACY_KEYS:
        if key in values:
            values[key] = (where[key], values[key])
    return values, dict(weights), experimental


def _experimental_table(table, source: str | None) -> dict:
    """The [experimental] table's keys (each an ExperimentalSettings field, else a ConfigError naming it)."""
    if not isinstance(table, Mapping):
        raise ConfigError(source, f"`{EXPERIMENTAL_TABLE}` must be a table of experimental settings, not {table!r}")
    for key, value in table.items():
        dotted = f"{EXPERIMENTAL_TABLE}.{key}"
        if key in REMOVED_SETTINGS:
            raise ConfigError(source, f"`{dotted}` was removed: {REMOVED_SETTINGS[key]}; delete it")
        if key not in EXPERIMENTAL_NAMES:
            close = difflib.get_close_matches(str(key), EXPERIMENTAL_NAMES, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else f" (its keys: {', '.join(EXPERIMENTAL_NAMES)})"
            raise ConfigError(source, f"unknown key `{dotted}` in the [{EXPERIMENTAL_TABLE}] table{hint}")
        if isinstance(value, Mapping):
            raise ConfigError(source, f"`{dotted}` must be a value, not a table")
    return dict(table)


def _experimental_values(values: dict, experimental: dict | None, source: str | None) -> dict:
    """The experimental settings: the [experimental] table's, and those of a config written before it
    existed, which set them beside the other keys (a FutureWarning naming each; removed settings at their
    old default, off, are dropped with a warning, other values are a ConfigError). Takes them out of values."""
    experimental = dict(experimental or {})
    where = source or "the config"
    for key in LEGACY_KEYS:
        if key not in values:
            continue
        dotted, value = values.pop(key)
        if key in REMOVED_SETTINGS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != 0:
                raise ConfigError(source, f"`{dotted}` was removed: {REMOVED_SETTINGS[key]}; delete it")
            warnings.warn(f"{where}: `{dotted}` was removed (it was off at 0); delete it", FutureWarning,
                          stacklevel=4)
            continue
        if key in experimental:
            raise ConfigError(source, f"`{key}` is given twice (`{dotted}` and `{EXPERIMENTAL_TABLE}.{key}`)")
        warnings.warn(f"{where}: `{dotted}` is an experimental setting: move it to the [{EXPERIMENTAL_TABLE}] "
                      f"table (docs/configuration.md)", FutureWarning, stacklevel=4)
        experimental[key] = value
    return experimental


def _check_model_values(values: dict) -> dict:
    """The model keys' values, checked (SettingsError naming the key)."""
    model = {}
    for key in ("store", "lm", "recase_model"):
        if key not in values:
            continue
        value = values[key]
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or not value:
            raise SettingsError(None, f"`{key}` must be a path (a non-empty string), not {value!r}")
        model[key] = value
    if values.get("lm_order") is not None:
        model["lm_order"] = check_int("lm_order", values["lm_order"])
        if model["lm_order"] < 1:
            raise SettingsError(None, f"`lm_order` must be at least 1, not {model['lm_order']}")
    if "glue" in values:
        model["glue"] = check_glue(values["glue"])
    if "oov_labels" in values:
        model["oov_labels"] = check_oov_labels(values["oov_labels"])
    if values.get("oov_penalty") is not None:
        model["oov_penalty"] = check_number("oov_penalty", values["oov_penalty"])
    if "allow_unknown_weights" in values:
        if not isinstance(values["allow_unknown_weights"], bool):
            raise SettingsError(None, f"`allow_unknown_weights` must be true or false, "
                                      f"not {values['allow_unknown_weights']!r}")
        model["allow_unknown_weights"] = values["allow_unknown_weights"]
    return model


def check_glue(value):
    if value is None:
        return DEFAULT_GLUE
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise SettingsError(None, f'`glue` must be "{DEFAULT_GLUE}" or a glue rule file, not {value!r}')
    return value or DEFAULT_GLUE


def check_oov_labels(value):
    """A label, a file of labels (a string), or a non-empty list of labels."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        if not value:
            raise SettingsError(None, "`oov_labels` must name a label or a file of labels, not an empty string")
        return value
    if not isinstance(value, (list, tuple)) or not value:
        raise SettingsError(None, f"`oov_labels` must be a non-empty list of labels (or a file of them), "
                                  f"not {value!r}")
    for label in value:
        if not isinstance(label, str) or not label or label.split() != [label]:
            raise SettingsError(None, f"`oov_labels`: {label!r} is not a label (a non-empty word)")
    return tuple(value)


def read_oov_labels(value) -> tuple:
    """The unknown-word labels: a list of them, one label, or a file of "LABEL prob" lines."""
    value = check_oov_labels(value)
    if isinstance(value, tuple):
        return value
    if os.path.isfile(value):
        with open(value, encoding="utf-8") as f:
            labels = tuple(line.split()[0] for line in f if line.strip())
        if not labels:
            raise ConfigError(value, "`oov_labels`: the file has no labels")
        return labels
    return (value,)
