"""What every search (reference, brute force, compiled) agrees on: the features, the
weights, and the search space outside the grammar (glue, unknown words, spans, unaries).

Features of a derivation (a log-linear model, score = sum of weight * value):

- the rule features (one per score column of the rule table, natural logs, as the
  store keeps them), summed over the source rules used;
- `lm`: log10 probability of the output with <s> and </s> (KenLM);
- `word_count`: number of target words produced;
- `oov`: number of unknown source words passed through;
- `glue`: the glue feature (built-in glue: one per concatenation; a glue file's
  rules carry their own values, the log of their score column).

The search space besides the grammar's rules:

- Unknown words: source position i gets a pass-through item (target: the source
  word) for each label of `oov_labels` when no one-child rule matches the word alone,
  so every position is covered by a real item.
- Rules other than glue cover at most `max_span` source words.
- Unary rules (one nonterminal child) are applied in at most `max_unary_depth`
  rounds per cell; round k only extends items made in round k-1, so unary cycles
  (X -> Y -> X) cannot loop. Items of different rounds never recombine (that could
  close a cycle in the hypergraph); parent cells see the items of every round.
- Glue: the goal symbol covers [0, j]: GOAL -> X over [0, j] (start) and
  GOAL -> GOAL X over [0, k] + [k, j] (concatenation), X any real nonterminal;
  the output is <s> GOAL[0, n] </s>. A glue file restricts X to its labels; the
  unknown-word labels are always added (GlueRules.cover), so every sentence has
  a derivation.
- Where the LM scores the sentence boundaries: the glue start is `<s> X`, as Moses'
  glue rule (KenLM's RuleScore: BeginSentence, then X's state), so X's first words
  get their sentence-start context there, exactly, and a GOAL item's LM state is
  "sentence start" (left side full and empty): GOAL items over [0, j) are ranked
  by the LM of "<s> their output" and recombine on their last words alone. The
  root adds only </s>. The `lm` feature of a derivation is the same either way
  (log10 P(<s> output </s>)); only the search's ranking of GOAL items changes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..settings import DEFAULT_OOV_LABELS, DEFAULT_SEARCH_SETTINGS

LM = "lm"
WORD_COUNT = "word_count"
OOV = "oov"
GLUE = "glue"
CORE_FEATURES = (LM, WORD_COUNT, OOV, GLUE)

GOAL = "GOAL"

# Documented default weights (used when a weight is not given).
DEFAULT_WEIGHTS = {
    LM: 1.0,          # per log10 unit of LM probability
    WORD_COUNT: 0.5,  # a bonus per target word, against the LM's liking for short outputs
    OOV: -10.0,       # per unknown word passed through
    GLUE: -0.5,       # per glue concatenation
}
DEFAULT_RULE_FEATURE_WEIGHT = 0.2  # each rule-table score column (natural log)


@dataclass
class GlueRules:
    """Values of the `glue` feature for the glue rules, by label (None: rule absent).

    Built-in: every real label may start (value 0) and be concatenated (value 1).
    """

    start: dict = field(default_factory=dict)   # label -> glue feature value of GOAL -> label
    concat: dict = field(default_factory=dict)  # label -> glue feature value of GOAL -> GOAL label
    builtin: bool = True

    def start_value(self, label: str):
        if self.builtin:
            return 0.0
        return self.start.get(label)

    def concat_value(self, label: str):
        if self.builtin:
            return 1.0
        return self.concat.get(label)

    def cover(self, labels) -> list:
        """Give every label of `labels` (the unknown-word labels) glue rules that a glue file left
        out, so that a sentence with an unknown word still has a derivation: start and
        concatenation value 1, what cky extract's glue file gives a label that was never a tree's
        root. Returns the labels that got a rule. (Built-in glue already covers every label.)"""
        if self.builtin:
            return []
        added = []
        for label in labels:
            if label not in self.start or label not in self.concat:
                self.start.setdefault(label, 1.0)
                self.concat.setdefault(label, 1.0)
                added.append(label)
        return added

    @classmethod
    def from_file(cls, path: str, goal_label: str = "Q") -> "GlueRules":
        """Read a Moses glue grammar (as written by `cky extract`): `Q -> L` and `Q -> Q L` rules;
        the glue feature value is the natural log of the rule's first score."""
        from ..grammar import read_rules

        glue = cls(builtin=False)
        for rule in read_rules(path):
            if rule.lhs != goal_label or rule.source_terminals or rule.target_terminals:
                continue
            value = math.log(rule.scores[0]) if rule.scores and rule.scores[0] > 0 else 0.0
            if rule.arity == 1:
                glue.start[rule.labels[0]] = value
            elif rule.arity == 2 and rule.labels[0] == goal_label:
                glue.concat[rule.labels[1]] = value
        return glue


@dataclass
class SearchSpace:
    """The search space outside the grammar (module docstring); defaults from decoder.settings."""

    max_span: int = DEFAULT_SEARCH_SETTINGS.max_span
    max_unary_depth: int = DEFAULT_SEARCH_SETTINGS.max_unary_depth
    oov_labels: tuple = DEFAULT_OOV_LABELS
    glue: GlueRules = field(default_factory=GlueRules)


class Weights:
    """Feature weights by name; unknown names get the documented defaults."""

    def __init__(self, rule_feature_names, weights: dict | None = None):
        self.rule_feature_names = list(rule_feature_names)
        given = dict(weights or {})
        self.by_name = {}
        for name in self.rule_feature_names:
            self.by_name[name] = float(given.pop(name, DEFAULT_RULE_FEATURE_WEIGHT))
        for name in CORE_FEATURES:
            self.by_name[name] = float(given.pop(name, DEFAULT_WEIGHTS[name]))
        self.unused = given  # weights for features this model does not have

    def __getitem__(self, name: str) -> float:
        return self.by_name[name]

    @property
    def rule_vector(self):
        import numpy as np

        return np.array([self.by_name[n] for n in self.rule_feature_names], dtype=np.float64)

    def dot(self, features: dict) -> float:
        return sum(self.by_name.get(name, 0.0) * value for name, value in features.items())

    def feature_names(self) -> list[str]:
        return self.rule_feature_names + list(CORE_FEATURES)
