"""Search settings: the one home of their defaults and of their validation.

    settings = SearchSettings(pop_limit=50)           # validated here: SettingsError naming the key
    settings.replace(exhaustive=True)                 # a validated copy

`Decoder`, the search driver (decoder.search.driver) and the compiled search
(decoder._ext._chart.ChartSearch, which has no defaults of its own) all take their
values from a `SearchSettings`. Values are checked strictly: an integer setting
takes an int (not 2.7, True or "abc"), `exhaustive` a bool (not "false"), and
each range is checked, so that a mistake is an error at construction instead of
a sentence that fails (or a search that never ends) later.

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
# rule_lookahead > 0: rules pushed past a popped hypothesis's successor on the rules' axis, at most.
RULE_LOOKAHEAD_RULES = 8
# The most derivations one k-best request may ask for (Decoder.kbest: a larger k is a ValueError).
MAX_KBEST = 10_000

# What the pop limit counts (SearchSettings.pop_count), and the searches that take "real".
POP_COUNTS = ("all", "real")
POP_COUNT_SEARCHES = ("cube", "incremental")
# The searches whose rules' axis is a cube's (SearchSettings.rule_lookahead); two-pass's first pass is cube pruning.
RULE_LOOKAHEAD_SEARCHES = ("cube", "two-pass")
# The searches that take pop_threshold (two-pass's first pass has the same rule as first_pass_threshold).
POP_THRESHOLD_SEARCHES = ("cube", "incremental")

# When the two-pass search's second pass stops (SearchSettings.second_pass_stop).
SECOND_PASS_STOPS = ("budget", "bound", "first")

# Model settings outside the search proper (decoder.decoder.Decoder): their defaults, once.
DEFAULT_GLUE = "builtin"
DEFAULT_OOV_LABELS = ("X",)


@dataclass(frozen=True)
class SearchSettings:
    """How the chart is searched (the defaults below are the only ones)."""

    search: str = "cube"          # the algorithm (SEARCH_ALGORITHMS)
    pop_limit: int = 100          # cube pruning pops per cell (0: unlimited)
    # what pop_limit counts: "all" (every pop, of real items and of the binarization's virtual items, in
    # one cube per cell) or "real" (only pops that make real items: complete rule applications, as a pop
    # of Moses' chart decoder is one; the virtual items, partial rules, are popped from a cube of their
    # own with at most virtual_pop_limit pops per cell and unary round). search = "cube" and "incremental"
    # (there a queue of partial edges over the virtual groups, then one over the real ones; not two-pass).
    # bench/results/moses.md, bench/results/incremental.md
    pop_count: str = "all"
    virtual_pop_limit: int = 1000  # pop_count = "real": pops on virtual items per cell (0: unlimited)
    beam_size: int = 0            # histogram beam: items kept per cell (0: no limit)
    beam_threshold: float = 0.0   # threshold beam: drop items this far below the cell's best (0: off)
    max_span: int = 20            # longest source span of a non-glue rule
    max_unary_depth: int = 1      # unary rounds per cell
    unary_pop_limit: int = 10     # pops per unary round (-1: the pop limit)
    exhaustive: bool = False      # no pruning at all (small inputs only)
    table_limit: int = 20         # rules kept per source side, best first (0: all); see decoder.search.table_limit
    # what the table limit ranks a source side's rules by: "score" (their rule-feature score under the
    # weights, as the issue asks) or "estimate" (plus the weighted LM estimate of their words, as Moses
    # ranks them: a little closer to Moses' own search, about 10% slower; bench/results/moses.md)
    table_limit_rank: str = "score"
    # the order cube pruning tries a key's rules in: "estimate" (rule score + weighted LM estimate of
    # their words, as Moses sorts them) or "score" (rule score alone). With weight pushing, "estimate"
    # gives the better model score and BLEU (bench/results/moses.md)
    rule_order: str = "estimate"
    # push each virtual (binarization) symbol's best completion score onto the rules that make it and
    # off the rules that use it: complete derivations score the same, but a virtual item no longer
    # looks better than it can end up, so it competes fairly with real items for the cell's pops
    # (decoder.search.weight_pushing; bench/results/moses.md)
    weight_pushing: bool = True
    # cube pruning's look-ahead on the rules' axis (0: off): a cube reaches rule r + 1 only by popping
    # rule r, so one rule that the LM makes bad in context ends the walk down a key's rules. With
    # rule_lookahead > 0, when the successor (r + 1) of a popped hypothesis scores more than this below
    # it, rule r + 2 is pushed as well, and so on (at most RULE_LOOKAHEAD_RULES more). search = "cube"
    # (and the two-pass search's first pass); bench/results/moses.md, "<s> at the glue start"
    rule_lookahead: float = 0.0
    # a cell's search (each unary round; with pop_count = "real" its virtual and its real pops apart) stops
    # before pop_limit once a complete hypothesis popped scores more than this below the best one popped so
    # far in that search (never at the first pop; 0: off). The same rule, in the same code
    # (ext/_chart.pxd cky_round_stops), as the two-pass search's first_pass_threshold (the paper's beta),
    # which is the name it keeps there: pop_threshold is a setting of search = "cube" and "incremental".
    # Measured on the Bible system, it does not buy score per CPU for either search (a cell's pops lie close
    # to its best, and the 1-best uses pops up to ~7 below it): bench/results/incremental.md, Session 11
    pop_threshold: float = 0.0
    # search = "two-pass" only: the first pass is the chart search above (pop_limit, beams) with
    # items recombined on (X, i, j); these bound the second pass (H.Search, section 3.2).
    two_pass_beam: float = 5.0    # drop partial items this far below the best score seen (inf: no beam)
    agenda_limit: int = 1000      # partial items kept on the agenda (0: no limit)
    max_pops: int = 10000         # unwind operations per sentence (-1: no limit)
    edge_limit: int = 0           # hyperedges per item the second pass unwinds into, best first (0: all)
    kbest_per_class: int = 1      # partial items kept per recombination class (equal LM state and rest)
    # The first pass's cube pruning may stop a cell (each unary round apart) before pop_limit pops:
    first_pass_items: int = 0     # once it holds this many (X, i, j) items (0: only pop_limit counts)
    first_pass_threshold: float = 0.0  # once a pop scores more than this below the round's best so far (the paper's beta; 0: off; pop_threshold's rule)
    # When the second pass stops before its budget (max_pops, or an empty agenda): "budget" never;
    # "bound" once the best complete derivation scores at least the agenda's best partial item;
    # "first" at the first complete derivation.
    second_pass_stop: str = "budget"
    # the memory one sentence's search may allocate, in MB (0: no limit): the chart's items, edges, LM states,
    # queues and per-cell tables, counted where the compiled search grows them, and the k-best search's;
    # a sentence over it fails with MemoryBudgetError and the others are translated
    memory_budget_mb: int = 2048

    def __post_init__(self):
        for field in dataclasses.fields(self):
            object.__setattr__(self, field.name, _check(field.name, getattr(self, field.name)))
        if self.pop_count != "all":
            self._only_for(f"pop_count = {self.pop_count!r}", POP_COUNT_SEARCHES)
        if self.rule_lookahead > 0:
            self._only_for("rule_lookahead", RULE_LOOKAHEAD_SEARCHES)
        if self.pop_threshold > 0:
            self._only_for("pop_threshold", POP_THRESHOLD_SEARCHES)

    def _only_for(self, setting: str, searches: tuple) -> None:
        """A SettingsError unless the search is one of `searches` (the setting would be ignored)."""
        if self.search not in searches:
            raise SettingsError(None, f"`{setting}` is a setting of "
                                      f"{' and '.join(f'search = {name!r}' for name in searches)}, "
                                      f"not of search = {self.search!r}")

    def replace(self, **changes) -> "SearchSettings":
        """A copy with these settings changed (validated; an unknown name is a SettingsError)."""
        unknown = sorted(set(changes) - set(SETTING_NAMES))
        if unknown:
            raise SettingsError(None, f"unknown search setting `{unknown[0]}` (known: {', '.join(SETTING_NAMES)})")
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, values: Mapping) -> "SearchSettings":
        """Settings from {name: value}, defaults for the names missing; other names are ignored."""
        return cls(**{name: values[name] for name in SETTING_NAMES if name in values})

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


SETTING_NAMES = tuple(field.name for field in dataclasses.fields(SearchSettings))

# name -> (kind, smallest allowed value; for a choice, the values allowed)
_RULES = {
    "pop_limit": ("int", 0),
    "pop_count": ("choice", POP_COUNTS),
    "virtual_pop_limit": ("int", 0),
    "beam_size": ("int", 0),
    "beam_threshold": ("number", 0.0),
    "max_span": ("int", 1),
    "max_unary_depth": ("int", 0),
    "unary_pop_limit": ("int", -1),
    "exhaustive": ("bool", None),
    "table_limit": ("int", 0),
    "rule_order": ("choice", RULE_ORDERS),
    "table_limit_rank": ("choice", RULE_ORDERS),
    "weight_pushing": ("bool", None),
    "rule_lookahead": ("number", 0.0),
    "pop_threshold": ("number", 0.0),
    "search": ("algorithm", None),
    "two_pass_beam": ("number", 0.0),
    "agenda_limit": ("int", 0),
    "max_pops": ("int", -1),
    "edge_limit": ("int", 0),
    "kbest_per_class": ("int", 1),
    "first_pass_items": ("int", 0),
    "first_pass_threshold": ("number", 0.0),
    "second_pass_stop": ("choice", SECOND_PASS_STOPS),
    "memory_budget_mb": ("int", 0),
}


def _check(name: str, value):
    kind, minimum = _RULES[name]
    if kind == "int":
        value = check_int(name, value)
    elif kind == "number":
        value = check_number(name, value)
    elif kind == "choice":
        if value not in minimum:
            raise SettingsError(None, f"`{name}` must be one of {', '.join(map(repr, minimum))}, not {value!r}")
        return value
    elif kind == "bool":
        if not isinstance(value, bool):
            raise SettingsError(None, f"`{name}` must be true or false, not {value!r}")
        return value
    else:
        if value not in SEARCH_ALGORITHMS:
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
