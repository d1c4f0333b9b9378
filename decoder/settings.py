"""Search settings: the one home of their defaults and of their validation.

    settings = SearchSettings(pop_limit=50)           # validated here: SettingsError naming the key
    settings.replace(exhaustive=True)                 # a validated copy
    settings.replace(experimental={"pop_count": "real"})   # an experimental setting (or by its name)

`SearchSettings` holds the settings a user needs (the `[search]` config table,
docs/configuration.md): the algorithm, the pruning of each cell (pop limit,
beams), the span and unary bounds, the table limit, and the second pass of the
two-pass search. `ExperimentalSettings`, its `experimental` field, holds the
research knobs (the `[experimental]` config table, docs/search.md): other ways
to count pops, order and rank rules, and stop the two-pass search's passes.
They are typed and checked the same way, and the compiled searches read both
from the settings they are built with.

`Decoder`, the search driver (decoder.search.driver) and the compiled searches
(which have no defaults of their own) all take their values from a
`SearchSettings`. Values are checked strictly: an integer setting takes an int
(not 2.7, True or "abc"), a flag a bool (not "false"), and each range is
checked, so that a mistake is an error at construction instead of a sentence
that fails (or a search that never ends) later.

`SEARCH_ALGORITHMS` is the registry of the `search` key's values; an algorithm
registers itself with `register_search_algorithm`.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Mapping

from .errors import SettingsError

# The search algorithms the `search` setting may name: name -> one line on what it is.
SEARCH_ALGORITHMS: dict[str, str] = {
    "cube": "CKY with cube pruning (Chiang 2007) and an integrated language model",
    "incremental": "CKY with incremental search by LM boundary-word grouping (Heafield, Koehn and Lavie 2013)",
    "two-pass": "two-pass LM-driven hypergraph search (Venugopal, Zollmann and Vogel 2007): a first pass "
                "recombining on (X, i, j), then H.Search over its hypergraph (decoder.search.two_pass)",
}


def register_search_algorithm(name: str, description: str) -> None:
    """Make `search = NAME` a valid setting (an algorithm's module calls this when it is added)."""
    if not isinstance(name, str) or not name:
        raise SettingsError(None, f"a search algorithm needs a non-empty name, not {name!r}")
    SEARCH_ALGORITHMS[name] = description


# The orders in which cube pruning tries the rules of one key (decoder.search.grammar_arrays).
RULE_ORDERS = ("estimate", "score")
# The most derivations one k-best request may ask for (Decoder.kbest: a larger k is a ValueError).
MAX_KBEST = 10_000
# What the pop limit counts (ExperimentalSettings.pop_count), and the searches that take "real".
POP_COUNTS = ("all", "real")
POP_COUNT_SEARCHES = ("cube", "incremental")
# When the two-pass search's second pass stops (ExperimentalSettings.second_pass_stop).
SECOND_PASS_STOPS = ("budget", "bound", "first")

# Settings that no longer exist: name -> why. A config that still sets one to its old default (off) loads
# with a warning; any other value is an error (decoder.config).
REMOVED_SETTINGS = {
    "rule_lookahead": "cube pruning's look-ahead on the rules' axis did not improve the model score per CPU second",
    "pop_threshold": "stopping a cell's search at a pop far below its best did not improve the model score per "
                     "CPU second (the two-pass search keeps the rule as `first_pass_threshold`, in [experimental])",
}

# Model settings outside the search proper (decoder.decoder.Decoder): their defaults, once.
DEFAULT_GLUE = "builtin"
DEFAULT_OOV_LABELS = ("X",)

EXPERIMENTAL_TABLE = "experimental"  # the config table of ExperimentalSettings

# name -> (kind, smallest allowed value; for a choice, the values allowed)
_RULES = {
    "pop_limit": ("int", 0),
    "beam_size": ("int", 0),
    "beam_threshold": ("number", 0.0),
    "max_span": ("int", 1),
    "max_unary_depth": ("int", 0),
    "exhaustive": ("bool", None),
    "table_limit": ("int", 0),
    "search": ("algorithm", None),
    "two_pass_beam": ("number", 0.0),
    "agenda_limit": ("int", 0),
    "max_pops": ("int", -1),
    "kbest_per_class": ("int", 1),
    "memory_budget_mb": ("int", 0),
    # experimental
    "pop_count": ("choice", POP_COUNTS),
    "virtual_pop_limit": ("int", 0),
    "unary_pop_limit": ("int", -1),
    "table_limit_rank": ("choice", RULE_ORDERS),
    "rule_order": ("choice", RULE_ORDERS),
    "weight_pushing": ("bool", None),
    "edge_limit": ("int", 0),
    "first_pass_items": ("int", 0),
    "first_pass_threshold": ("number", 0.0),
    "second_pass_stop": ("choice", SECOND_PASS_STOPS),
}


# The largest value of an integer setting: the compiled searches hold them as C ints (32 bits).
MAX_INT_SETTING = 2**31 - 1


def _check(name: str, value):
    kind, minimum = _RULES[name]
    if kind == "int":
        value = check_int(name, value)
        if value > MAX_INT_SETTING:
            raise SettingsError(None, f"`{name}` must be at most {MAX_INT_SETTING:,}, not {value!r}")
    elif kind == "number":
        value = check_number(name, value)
    elif kind == "choice":
        if not isinstance(value, str) or value not in minimum:  # (a list from a config is not hashable)
            raise SettingsError(None, f"`{name}` must be one of {', '.join(map(repr, minimum))}, not {value!r}")
        return value
    elif kind == "bool":
        if not isinstance(value, bool):
            raise SettingsError(None, f"`{name}` must be true or false, not {value!r}")
        return value
    else:
        if not isinstance(value, str) or value not in SEARCH_ALGORITHMS:
            raise SettingsError(None, f"`{name}` must be one of {', '.join(map(repr, SEARCH_ALGORITHMS))}, "
                                      f"not {value!r}")
        return value
    if not value >= minimum:  # also rejects NaN
        raise SettingsError(None, f"`{name}` must be at least {minimum}, not {value!r}")
    return value


def check_int(name: str, value) -> int:
    """value as an int if it is one (not a bool, a float or a string); else a SettingsError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SettingsError(None, f"`{name}` must be an integer, not {value!r}")
    return int(value)


def check_number(name: str, value) -> float:
    """value as a float if it is a real number (not a bool, a string or a list); else a SettingsError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SettingsError(None, f"`{name}` must be a number, not {value!r}")
    return float(value)




@dataclass(frozen=True)
class ExperimentalSettings:
    """Research knobs of the searches (the `[experimental]` config table; docs/search.md). Their defaults
    are the searches' normal behaviour; other values trade speed for model score in ways that were
    measured and are kept for experiments, not for everyday use."""

    # What pop_limit counts: "all" (every pop, of real items and of the binarization's virtual items, in
    # one cube per cell) or "real" (only pops that make real items, complete rule applications, as a pop
    # of Moses' chart decoder is one; the virtual items, partial rules, come from a cube of their own with
    # at most virtual_pop_limit pops per cell and unary round). search = "cube" and "incremental".
    pop_count: str = "all"
    virtual_pop_limit: int = 1000  # pop_count = "real": pops on virtual items per cell (0: unlimited)
    unary_pop_limit: int = 10      # pops per unary round (-1: the pop limit)
    # What the table limit ranks a source side's rules by: "estimate" (their rule-feature score under the
    # weights plus the weighted LM estimate of their words, as Moses ranks them) or "score" (without the
    # estimate). "estimate" keeps the rules Moses keeps: with "score" a verse of the full Bible system
    # stays below Moses' model score at any pop limit, because the limit dropped a rule Moses uses
    # (docs/results.md, Rule-table limit: better model score and less CPU per verse at equal pop limit).
    table_limit_rank: str = "estimate"
    # The order cube pruning tries a key's rules in: "estimate" (rule score + weighted LM estimate of
    # their words, as Moses sorts them) or "score" (rule score alone).
    rule_order: str = "estimate"
    # Push each virtual (binarization) symbol's best completion score onto the rules that make it and off
    # the rules that use it: complete derivations score the same, but a virtual item no longer looks better
    # than it can end up, so it competes fairly with real items for a cell's pops
    # (decoder.search.weight_pushing).
    weight_pushing: bool = True
    # search = "two-pass" (Venugopal, Zollmann and Vogel 2007):
    edge_limit: int = 0            # hyperedges per item the second pass unwinds into, best first (0: all)
    # the first pass's cube pruning may stop a cell (each unary round apart) before pop_limit pops:
    first_pass_items: int = 0      # once it holds this many (X, i, j) items (0: only pop_limit counts)
    first_pass_threshold: float = 0.0  # once a pop scores more than this below the round's best (the paper's beta; 0: off)
    # When the second pass stops before its budget (max_pops, or an empty agenda): "budget" never;
    # "bound" once the best complete derivation scores at least the agenda's best partial item;
    # "first" at the first complete derivation.
    second_pass_stop: str = "budget"

    def __post_init__(self):
        for field in dataclasses.fields(self):
            object.__setattr__(self, field.name, _check(field.name, getattr(self, field.name)))

    def replace(self, **changes) -> "ExperimentalSettings":
        """A copy with these settings changed (validated; an unknown name is a SettingsError)."""
        _reject_unknown(changes, EXPERIMENTAL_NAMES, "experimental setting")
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, values: Mapping) -> "ExperimentalSettings":
        """Settings from {name: value}, defaults for the names missing; an unknown name is a SettingsError."""
        _reject_unknown(values, EXPERIMENTAL_NAMES, "experimental setting")
        return cls(**dict(values))

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def changed(self) -> dict:
        """The settings that differ from their defaults."""
        return {name: value for name, value in self.as_dict().items()
                if value != getattr(DEFAULT_EXPERIMENTAL_SETTINGS, name)}


EXPERIMENTAL_NAMES = tuple(field.name for field in dataclasses.fields(ExperimentalSettings))
DEFAULT_EXPERIMENTAL_SETTINGS = ExperimentalSettings()


@dataclass(frozen=True)
class SearchSettings:
    """How the chart is searched (the `[search]` config table; the defaults below are the only ones)."""

    search: str = "cube"          # the algorithm (SEARCH_ALGORITHMS)
    pop_limit: int = 100          # cube pruning pops per cell (0: unlimited)
    beam_size: int = 0            # histogram beam: items kept per cell (0: no limit)
    beam_threshold: float = 0.0   # threshold beam: drop items this far below the cell's best (0: off)
    max_span: int = 20            # longest source span of a non-glue rule
    max_unary_depth: int = 1      # unary rounds per cell
    exhaustive: bool = False      # no pruning at all (small inputs only)
    table_limit: int = 20         # rules kept per source side, best first (0: all); see decoder.search.table_limit
    # search = "two-pass" only: the first pass is the chart search above (pop_limit, beams) with
    # items recombined on (X, i, j); these bound the second pass (H.Search, section 3.2).
    two_pass_beam: float = 5.0    # drop partial items this far below the best score seen (inf: no beam)
    agenda_limit: int = 1000      # partial items kept on the agenda (0: no limit)
    max_pops: int = 10000         # unwind operations per sentence (-1: no limit)
    kbest_per_class: int = 1      # partial items kept per recombination class (equal LM state and rest): k-best
    # the memory one sentence's search may allocate, in MB (0: no limit): the chart's items, edges, LM states,
    # queues and per-cell tables, counted where the compiled search grows them, and the k-best search's;
    # a sentence over it fails with MemoryBudgetError and the others are translated
    memory_budget_mb: int = 2048
    # the research knobs (the [experimental] table)
    experimental: ExperimentalSettings = DEFAULT_EXPERIMENTAL_SETTINGS

    def __post_init__(self):
        for name in SETTING_NAMES:
            object.__setattr__(self, name, _check(name, getattr(self, name)))
        if isinstance(self.experimental, Mapping):
            object.__setattr__(self, "experimental", ExperimentalSettings.from_mapping(self.experimental))
        elif not isinstance(self.experimental, ExperimentalSettings):
            raise SettingsError(None, f"`{EXPERIMENTAL_TABLE}` must be a table of experimental settings, "
                                      f"not {self.experimental!r}")
        if self.experimental.pop_count != "all" and self.search not in POP_COUNT_SEARCHES:
            raise SettingsError(None, f"`pop_count = {self.experimental.pop_count!r}` is a setting of "
                                      f"{' and '.join(f'search = {name!r}' for name in POP_COUNT_SEARCHES)}, "
                                      f"not of search = {self.search!r}")

    def replace(self, **changes) -> "SearchSettings":
        """A copy with these settings changed (validated; an unknown name is a SettingsError).
        `experimental` takes an ExperimentalSettings or a mapping of changes to the present ones; an
        experimental setting may also be given by its own name."""
        experimental = changes.pop(EXPERIMENTAL_TABLE, None)
        moved = {name: changes.pop(name) for name in list(changes) if name in EXPERIMENTAL_NAMES}
        removed = sorted(set(changes) & set(REMOVED_SETTINGS))
        if removed:
            raise SettingsError(None, f"`{removed[0]}` was removed: {REMOVED_SETTINGS[removed[0]]}")
        _reject_unknown(changes, SETTING_NAMES, "search setting")
        if isinstance(experimental, Mapping):
            experimental = self.experimental.replace(**experimental)
        elif experimental is None:
            experimental = self.experimental
        if moved:
            if not isinstance(experimental, ExperimentalSettings):
                raise SettingsError(None, f"`{EXPERIMENTAL_TABLE}` must be a table of experimental settings, "
                                          f"not {experimental!r}")
            experimental = experimental.replace(**moved)
        return dataclasses.replace(self, experimental=experimental, **changes)

    @classmethod
    def from_mapping(cls, values: Mapping) -> "SearchSettings":
        """Settings from {name: value} (an experimental setting by its own name, or an `experimental`
        mapping), defaults for the names missing; other names are ignored."""
        public = {name: values[name] for name in SETTING_NAMES if name in values}
        experimental = dict(values.get(EXPERIMENTAL_TABLE) or {})
        experimental.update({name: values[name] for name in EXPERIMENTAL_NAMES if name in values})
        return cls(**public, experimental=ExperimentalSettings.from_mapping(experimental))

    def as_dict(self) -> dict:
        """Every setting by name, the experimental ones too (flat: the inverse of from_mapping)."""
        out = {name: getattr(self, name) for name in SETTING_NAMES}
        out.update(self.experimental.as_dict())
        return out


SETTING_NAMES = tuple(field.name for field in dataclasses.fields(SearchSettings) if field.name != EXPERIMENTAL_TABLE)

def _reject_unknown(values: Mapping, known: tuple, what: str) -> None:
    unknown = sorted(str(name) for name in values if name not in known)
    if unknown:
        raise SettingsError(None, f"unknown {what} `{unknown[0]}` (known: {', '.join(known)})")


def check_weights(weights: Mapping) -> dict:
    """{feature name: float}: every weight a finite number (not a bool, a string or a list)."""
    if not isinstance(weights, Mapping):
        raise SettingsError(None, f"the weights must be a table of feature name -> number, not {weights!r}")
    out = {}
    for name, value in weights.items():
        value = check_number(f"weights.{name}", value)
        if not math.isfinite(value):
            raise SettingsError(None, f"`weights.{name}` must be finite, not {value!r}")
        out[str(name)] = value
    return out


DEFAULT_SEARCH_SETTINGS = SearchSettings()
