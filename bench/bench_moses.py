"""Our cube pruning against Moses' two string-to-tree decoders on the same model.

    python -m bench.bench_moses [--moses-bin BIN] [--search-algorithm 3|6|both] [--pair es-en|zh-en|both]
        [--small] [--sentences 100] [--pop-limits 10 30 100 300 1000] [--moses-pop-limits 100]
        [--rule-orders score estimate] [--skip N] [--moses-only] [--moses-kinds default our-rules]
        [--work DIR] [--out DIR]
    cky bench --moses BIN [--pair PAIR] [--test-sentences N]   # the same, from the bench command

--moses-bin defaults to $MOSES_ROOT/bin/moses; without an executable there the bench says so in one
line and exits with 2 (it never builds Moses). --pair picks the Bible build (decoder.data.build.default_out:
models/bible-PAIR/build, --small its small/), whose config.toml, rules.gz and test set are the defaults of
--config, --rule-table, --source and --references; Moses reads the rule table filtered to the decoded
verses (decoder.extract.filtering keeps every rule that can apply, and all or none of the rules of a source
side, so Moses' table limit ranks the same rules), written once into --work.

Moses' default configuration alone on held-out verses (101-200: --skip 100), its scores checked per
verse:

    nice -n 5 python -m bench.bench_moses --moses-bin BIN --skip 100 --sentences 100 --moses-only \
        --moses-kinds default --moses-jobs 1 --skip-fixture --work build/moses200 --out build/moses200/out

The bench never builds Moses: --moses-bin names a built `moses` binary (moses-cmd). It runs, with
`-threads 1`, the build's rule table, a glue grammar written here and the build's LM under a moses.ini
whose model is OURS (the features and weights of our decoder, decoder.search.model, every scale
difference mapped as below), through either or both of Moses' decoders for string-to-tree models
(--search-algorithm):

- 3, the CYK+ chart decoder (ChartManager; what train-model.perl's create_ini writes for hierarchical
  and syntax models), its tables `PhraseDictionaryMemory` features;
- 6, the string-to-tree decoder (moses/Syntax/S2T, Manager<RecursiveCYKPlusParser>: moses/TranslationTask.cpp
  SetupManager; `SyntaxS2T = 6` in moses/TypeDef.h), its tables `RuleTable` features (moses/Syntax/
  RuleTableFF.cpp loads them with S2T::RuleTrieLoader, which reads the same text format as the chart
  decoder's loader: the same TransformScore and FloorScore of the scores, the nonterminals keyed by
  their target labels through the alignment field; `[s2t-parsing-algorithm] 0`, recursive CYK+, the
  default of moses/parameters/SyntaxOptions.cpp).

Both read the input as `[inputtype] 3` (TreeInput, which reads the words through Sentence::Read: the
same words, with <s> and </s> added for syntax models in moses/Sentence.cpp), take the same glue
grammar, LM, unknown-word labels and weights, so one model; a run reports its algorithm with its scores.
Then the bench proves the models equivalent and compares, verse by verse, the model score each decoder finds.

## The model mapping (our feature: our value and weight w -> Moses' feature, value, weight)

- rule features (the table's score columns; we keep their natural logs): Moses'
  PhraseDictionaryMemory `TranslationModel0` reads the same file (rules.test.gz) and takes
  ln(score) as well (TransformScore, floored at -100, LOWEST_SCORE): same values, weights w.
- `lm`: log10 P(<s> output </s>) (KenLM), weight w. Moses' KENLM reports the same
  probability in natural log (TransformLMScore: x ln 10): weight w / ln 10. Moses' chart LM
  starts a sentence at the glue rule's `<s>` (BeginSentence: no probability for <s>) and
  scores `</s>` as a word: the same full-sentence score (checked per verse below).
- `word_count`: target words, weight w. Moses' WordPenalty is minus the target terminals of
  the rules used (WordPenaltyProducer::EvaluateInIsolation), and these include the glue's
  `<s>` and `</s>`: WordPenalty = -(words + 2), weight -w. So word_count = -WordPenalty - 2,
  and Moses' total is ours + 2w (a constant per verse, removed when comparing).
- `oov`: unknown source words passed through, weight w. Moses' UnknownWordPenalty of a
  pass-through is ln(p) of its unknown-lhs entry floored at -100; the default entry (label X,
  p = 0) gives -100: weight -w / 100. Moses passes a word through only where no rule's
  source is that word alone (ChartParser::Create, `to.Empty()`), as ours does; its unknown-
  word label is the `[non-terminals]` default X (an unknown-lhs file with p = 0 per label is
  written when our oov_labels are other than X).
- `glue`: ours (built-in glue, `glue = "builtin"`): GOAL -> L over [0, j] with value 0 and
  GOAL -> GOAL L with value 1, for every real label L, the output wrapped in <s> ... </s>.
  Moses: a glue table `TranslationModel1` (1 feature, weight w, max-chart-span 1000) written
  by write_glue_grammar: `<s> [X][L] ||| <s> [X][L] [Q]` (score e^0), `[X][Q] [X][L] ||| [X][Q]
  [X][L] [Q]` (e^1) and `[X][Q] </s> ||| [X][Q] </s> [Q]` (e^0). A glue file (`glue = PATH`)
  maps the same way with its own start and concatenation values.
- Unary rules: Moses' in-memory rule table never applies a rule whose source side is one
  nonterminal alone (ChartRuleLookupManagerMemory::AddAndExtend drops completions at
  m_unaryPos; the S2T parser likewise, RecursiveCYKPlusParser::IsNonLexicalUnary); the demo table
  had 11,732 such rules. So the same model is ours with
  `max_unary_depth = 0`, and every comparison here decodes with it (our default of 1 is a
  larger model; it is reported apart, as not comparable).
- Spans: rules other than glue cover at most 20 source words on both sides (Moses'
  `[max-chart-span]` 20 for the rule table, our max_span 20).

## Search settings (not part of the model)

Moses' cube pruning pops at most `cube-pruning-pop-limit` hypotheses per cell over all its
labels and rules (ChartCell::Decode), as ours pops `pop_limit` per cell. Its other pruning,
at defaults in "Moses' default configuration": `table-limit` 20 target sides per source side
ranked by the rule's future score (weighted rule features + word penalty + the LM estimate of
its target words: TargetPhraseCollection::Sort on GetFutureScore), where our table_limit ranks
by weighted rule features + word count, no LM; `stack` 200 hypotheses per (cell, label);
`beam-threshold` 1e-5 (drop a hypothesis more than ln 1e5 = 11.5 below the best of its
(cell, label)); `rule-limit` 5000 rule applications per span. For the equivalence runs they
are all off (table-limit 0, stack 0, beam-threshold 0, rule-limit 10^7) and the pop limit is
large; our side runs with `exhaustive = true` and table_limit 0. The S2T decoder
(S2T::Manager::Decode) prunes by the pop limit per cell over all labels, the rule limit per span,
`stack` per (cell, label) (0: no limit) and the table limit as the chart decoder does; it has no beam
threshold (the setting is written and ignored).

## Checks (per verse, in the JSON under "equivalence" and "checks")

- Moses' LM feature / ln 10 equals KenLM's full-sentence log10 score of Moses' output (bos and
  eos), and Moses' total equals its weights . features (both to float32 precision).
- Mapped to our features (above), Moses' derivation scores what Moses' total says, minus 2w.
- On short verses with no pruning on either side, both decoders reach the same best score
  (relative tolerance 1e-4) and, unless tied, the same output.

Then per verse at Moses' pop limit(s): our score >= Moses' score - 1e-4 * max(1, |Moses|), for
each of our (rule order, pop limit); averages, CPU seconds per verse (ours: time.process_time
around translate; Moses: the CPU time of its process from getrusage, minus that of the same
command on an empty input (loading the tables); and the CPU seconds Moses reports per sentence,
its chart manager's clock(), "Translation took"; the S2T decoder does not report it, nor the table
of hypotheses per cell). Writes moses.json and moses.md into --out.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field

from bench import RESULTS

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAIRS = ("es-en", "zh-en")
CHART, S2T = 3, 6                 # Moses' [search-algorithm] values (moses/TypeDef.h: CYKPlus, SyntaxS2T)
SEARCH_ALGORITHMS = {CHART: "the chart decoder, CYK+", S2T: "the string-to-tree decoder, S2T"}
# the rule-table feature each algorithm loads its text tables with (moses/StaticData.cpp OverrideFeatureNames
# renames PhraseDictionaryMemory to RuleTable for S2T; written out here as train-model.perl -s2t writes it)
TABLE_FEATURE = {CHART: "PhraseDictionaryMemory", S2T: "RuleTable"}

LN10 = math.log(10.0)
MOSES_LOWEST_SCORE = -100.0      # Moses' FloorScore floor (TypeDef.h LOWEST_SCORE): an unknown word's penalty
SENTENCE_MARKERS = 2             # <s> and </s>: target terminals of Moses' glue rules, counted by its WordPenalty
GOAL_LABEL = "Q"                 # the glue grammar's goal label (as cky extract's glue files name it)
RULE_TABLE = "TranslationModel0"
GLUE_TABLE = "TranslationModel1"
LM_FEATURE = "LM0"
WORD_PENALTY = "WordPenalty0"
UNKNOWN_WORD_PENALTY = "UnknownWordPenalty0"
TOLERANCE = 1e-4                 # relative, of max(1, |score|): float32 scores on Moses' side

# Moses' defaults (moses/TypeDef.h, moses/TranslationModel/PhraseDictionary.cpp), written out in the ini.
MOSES_DEFAULTS = {"table_limit": 20, "stack": 200, "beam_threshold": 1e-5, "rule_limit": 5000}
# No pruning but the pop limit (stack 0 is "no limit"; rule-limit 0 would keep one rule, so it is large).
MOSES_UNPRUNED = {"table_limit": 0, "stack": 0, "beam_threshold": 0.0, "rule_limit": 10 ** 7}


# ---------------------------------------------------------------------------- the model mapping

def moses_weights(weights) -> dict[str, list[float]]:
    """Moses' [weight] section for our decoder.search.model.Weights (module docstring)."""
    from decoder.search.model import GLUE, LM, OOV, WORD_COUNT

    return {UNKNOWN_WORD_PENALTY: [weights[OOV] / MOSES_LOWEST_SCORE],
            WORD_PENALTY: [-weights[WORD_COUNT]],
            RULE_TABLE: [float(w) for w in weights.rule_vector],
            GLUE_TABLE: [weights[GLUE]],
            LM_FEATURE: [weights[LM] / LN10]}


def our_features(moses_features: dict[str, list[float]], rule_feature_names) -> dict[str, float]:
    """Our features (decoder.search.model) of a Moses derivation, from its n-best feature values."""
    from decoder.search.model import GLUE, LM, OOV, WORD_COUNT

    rule_values = moses_features.get(RULE_TABLE, [0.0] * len(rule_feature_names))
    if len(rule_values) != len(rule_feature_names):
        raise ValueError(f"{RULE_TABLE} has {len(rule_values)} values, the model {len(rule_feature_names)} rule features")
    out = {name: float(v) for name, v in zip(rule_feature_names, rule_values)}
    out[LM] = moses_features[LM_FEATURE][0] / LN10
    out[WORD_COUNT] = -moses_features[WORD_PENALTY][0] - SENTENCE_MARKERS
    out[OOV] = moses_features.get(UNKNOWN_WORD_PENALTY, [0.0])[0] / MOSES_LOWEST_SCORE
    out[GLUE] = moses_features.get(GLUE_TABLE, [0.0])[0]
    return out


def moses_total_offset(weights) -> float:
    """Moses' total minus our score of the same derivation: its WordPenalty counts <s> and </s>."""
    from decoder.search.model import WORD_COUNT

    return SENTENCE_MARKERS * weights[WORD_COUNT]


def glue_labels(store, oov_labels) -> list[str]:
    """The labels glue rules may take: the store's real labels and the unknown-word labels."""
    labels = list(store.real_label_ids)
    labels += [label for label in oov_labels if label not in store.real_label_ids]
    return labels


def write_glue_grammar(path: str, glue, labels, goal: str = GOAL_LABEL) -> int:
    """Moses' glue grammar for our glue (decoder.search.model.GlueRules): per label L with a
    start value s, `<s> [X][L] [X] ||| <s> [X][L] [Q] ||| e^s`; with a concatenation value c,
    `[X][Q] [X][L] [X] ||| [X][Q] [X][L] [Q] ||| e^c`; and `[X][Q] </s> [X] ||| [X][Q] </s> [Q] ||| 1`.
    Returns the number of rules written."""
    from decoder.grammar import escape_word

    if goal in labels:
        raise ValueError(f"the glue goal label {goal!r} is a label of the grammar; choose another")
    lines = [f"[X][{goal}] </s> [X] ||| [X][{goal}] </s> [{goal}] ||| 1 ||| 0-0 |||  |||  |||"]
    for label in labels:
        name = escape_word(label)
        start, concat = glue.start_value(label), glue.concat_value(label)
        if start is not None:
            lines.append(f"<s> [X][{name}] [X] ||| <s> [X][{name}] [{goal}] ||| {math.exp(start)!r} ||| 0-0 1-1 |||  |||  |||")
        if concat is not None:
            lines.append(f"[X][{goal}] [X][{name}] [X] ||| [X][{goal}] [X][{name}] [{goal}] ||| {math.exp(concat)!r} "
                         f"||| 0-0 1-1 |||  |||  |||")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines)


@dataclass
class MosesConfig:
    """What a moses.ini says (write_moses_ini): files, weights and search settings."""

    rule_table: str
    glue_grammar: str
    lm: str
    lm_order: int
    weights: dict                  # moses_weights(...)
    n_rule_features: int
    pop_limit: int = 100
    table_limit: int = MOSES_DEFAULTS["table_limit"]
    stack: int = MOSES_DEFAULTS["stack"]
    beam_threshold: float = MOSES_DEFAULTS["beam_threshold"]
    rule_limit: int = MOSES_DEFAULTS["rule_limit"]
    max_span: int = 20
    unknown_lhs: str | None = None  # a file of "label prob" lines (None: Moses' default, X with p = 0)
    search_algorithm: int = CHART
    extra: dict = field(default_factory=dict)


def moses_ini(config: MosesConfig) -> str:
    """The text of a moses.ini over our model for Moses' chart decoder (search-algorithm 3) or its
    string-to-tree decoder (6): the same sections but the algorithm (and S2T's parser), and the tables'
    feature type (TABLE_FEATURE)."""
    if config.search_algorithm not in SEARCH_ALGORITHMS:
        raise ValueError(f"search algorithm {config.search_algorithm}: Moses' string-to-tree decoders are "
                         + " and ".join(map(str, SEARCH_ALGORITHMS)))
    table = TABLE_FEATURE[config.search_algorithm]
    sections = [
        ("input-factors", ["0"]), ("mapping", ["0 T 0", "1 T 1"]),
        ("search-algorithm", [str(config.search_algorithm)]), ("inputtype", ["3"]), ("non-terminals", ["X"]),
        ("cube-pruning-pop-limit", [str(config.pop_limit)]), ("stack", [str(config.stack)]),
        ("beam-threshold", [repr(float(config.beam_threshold))]), ("rule-limit", [str(config.rule_limit)]),
        ("max-chart-span", [str(config.max_span), "1000"]),
    ]
    if config.search_algorithm == S2T:
        sections.append(("s2t-parsing-algorithm", ["0"]))  # recursive CYK+ (moses/TypeDef.h S2TParsingAlgorithm)
    if config.unknown_lhs:
        sections.append(("unknown-lhs", [config.unknown_lhs]))
    for name, values in config.extra.items():
        sections.append((name, [str(v) for v in (values if isinstance(values, (list, tuple)) else [values])]))
    features = [
        # tuneable=true only makes Moses print the feature in its n-best lists (it is off by default)
        "UnknownWordPenalty tuneable=true", "WordPenalty",
        f"{table} name={RULE_TABLE} num-features={config.n_rule_features} path={config.rule_table} "
        f"input-factor=0 output-factor=0 table-limit={config.table_limit}",
        f"{table} name={GLUE_TABLE} num-features=1 path={config.glue_grammar} "
        f"input-factor=0 output-factor=0 table-limit=0",
        f"KENLM name={LM_FEATURE} factor=0 path={config.lm} order={config.lm_order}",
    ]
    sections.append(("feature", features))
    sections.append(("weight", [f"{name}= " + " ".join(repr(float(w)) for w in values)
                                for name, values in config.weights.items()]))
    return "".join(f"[{name}]\n" + "".join(line + "\n" for line in lines) + "\n" for name, lines in sections)


# ---------------------------------------------------------------------------- Moses' output

@dataclass
class NBestEntry:
    sentence: int
    text: str
    features: dict                 # Moses feature name -> [values]
    total: float


_FEATURE_NAME = re.compile(r"^(\S+)=$")


def parse_nbest_line(line: str) -> NBestEntry:
    """One line of Moses' n-best list: `id ||| text ||| Name= v v Name2= v ||| total`."""
    fields = line.rstrip("\n").split(" ||| ")
    if len(fields) < 4:
        raise ValueError(f"not a Moses n-best line (fewer than 4 ' ||| ' fields): {line!r}")
    features: dict[str, list[float]] = {}
    current = None
    for token in fields[2].split():
        match = _FEATURE_NAME.match(token)
        if match:
            current = match.group(1)
            features.setdefault(current, [])
        elif current is None:
            raise ValueError(f"a feature value before any feature name in {fields[2]!r}")
        else:
            features[current].append(float(token))
    return NBestEntry(int(fields[0]), fields[1].strip(), features, float(fields[3]))


def read_nbest(path: str) -> dict[int, NBestEntry]:
    """The first (best) entry per sentence of a Moses n-best file."""
    out: dict[int, NBestEntry] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                entry = parse_nbest_line(line)
                out.setdefault(entry.sentence, entry)
    return out


_LINE_TOOK = re.compile(r"^Line (\d+): Translation took ([0-9.eE+-]+) seconds total$", re.MULTILINE)
_MANAGER_TOOK = re.compile(r"^Translation took ([0-9.eE+-]+) seconds$", re.MULTILINE)


def reported_seconds(stderr: str) -> tuple[dict[int, float], list[float]]:
    """What Moses reports per sentence at its default verbosity: the wall seconds of each line's
    translation task (TranslationTask, `Line N: Translation took S seconds total`), and the CPU
    seconds of each sentence's chart manager, decoding and output (ChartManager's destructor times
    its life with clock(): `Translation took S seconds`)."""
    wall = {int(m.group(1)): float(m.group(2)) for m in _LINE_TOOK.finditer(stderr)}
    return wall, [float(m.group(1)) for m in _MANAGER_TOOK.finditer(stderr)]


def moses_cell_sizes(log_text: str) -> list[list[tuple[int, int, int]]]:
    """Per sentence, [(start, width, hypotheses)] for every cell of Moses' chart, from the table of
    hypotheses per cell its ChartManager prints at verbosity 1 (the default) after decoding; the
    chart's positions include <s> (0) and </s> (the last)."""
    out = []
    for block in log_text.split("\nTranslating: ")[1:]:
        lines = block.split("\n")
        if not any(line.startswith("BEST TRANSLATION") for line in lines):
            continue
        table = []
        for line in lines[1:]:
            if line.startswith("BEST TRANSLATION"):
                break
            if line.strip() and re.fullmatch(r"[ \d]+", line):
                table.append([int(x) for x in line.split()])
        rows = table[1:]  # the first is the header of start positions
        out.append([(start, width + 1, count) for width, row in enumerate(rows) for start, count in enumerate(row)])
    return out


def moses_real_hypotheses(log_text: str) -> list[int]:
    """Per sentence, the hypotheses Moses keeps over real labels: every cell but those holding <s>
    or </s> (there only the glue's Q items are)."""
    out = []
    for cells in moses_cell_sizes(log_text):
        n = max(start + width for start, width, _ in cells)
        out.append(sum(count for start, width, count in cells if start != 0 and start + width < n))
    return out


@dataclass
class MosesRun:
    outputs: list[str]
    nbest: dict[int, NBestEntry]
    cpu_seconds: float             # the process's user + system CPU seconds
    wall_seconds: float
    reported_wall: dict[int, float]  # sentence -> its wall seconds, as Moses reports them
    reported_cpu: list[float]        # per sentence, its chart manager's CPU seconds, as Moses reports them
    stderr_tail: str


class MosesProcess:
    """One Moses process over these sentences (one thread, 1-best n-best list), started at once;
    `finish()` waits for it and reads its outputs, n-best features and the CPU time of that process
    alone (os.wait4), so that several may run side by side."""

    def __init__(self, binary: str, ini: str, sentences: list[str], work: str, name: str):
        self.ini, self.n = ini, len(sentences)
        self.nbest_path = os.path.join(work, f"{name}.nbest")
        self.out_path, self.log_path = os.path.join(work, f"{name}.out"), os.path.join(work, f"{name}.log")
        input_path = os.path.join(work, f"{name}.in")
        with open(input_path, "w", encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in sentences))
        self.wall = time.perf_counter()
        with open(input_path, encoding="utf-8") as stdin, open(self.out_path, "w") as out, \
                open(self.log_path, "w") as err:
            self.process = subprocess.Popen([binary, "-f", ini, "-threads", "1", "-n-best-list", self.nbest_path, "1"],
                                            stdin=stdin, stdout=out, stderr=err)

    def finish(self) -> MosesRun:
        _, status, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - self.wall
        stderr = pathlib.Path(self.log_path).read_text(encoding="utf-8", errors="replace")
        if self.process.returncode != 0:
            raise RuntimeError(f"moses failed (exit {self.process.returncode}) on {self.ini}: {stderr[-2000:]}")
        outputs = pathlib.Path(self.out_path).read_text(encoding="utf-8").split("\n")[:self.n]
        nbest = read_nbest(self.nbest_path) if self.n else {}
        return MosesRun(outputs, nbest, usage.ru_utime + usage.ru_stime, wall, *reported_seconds(stderr), stderr[-3000:])


def run_moses(binary: str, ini: str, sentences: list[str], work: str, name: str) -> MosesRun:
    """Moses over these sentences (one thread), its 1-best outputs and n-best features, CPU time."""
    return MosesProcess(binary, ini, sentences, work, name).finish()


def moses_load_cpu(binary: str, ini: str, work: str, name: str) -> float:
    """CPU seconds of Moses loading this ini (the same command on an empty input)."""
    return run_moses(binary, ini, [], work, name + "-load").cpu_seconds


# ---------------------------------------------------------------------------- model files

def write_limited_rule_table(store, keep_source_rules, path: str) -> int:
    """A Moses rule table of exactly the source rules our table limit keeps (rebuilt from the
    store: decoder.store.GrammarStore.source_rule), so that Moses with table-limit 0 decodes with
    the rules ours does. Returns the number of rules written."""
    import gzip

    import numpy as np

    from decoder.grammar import format_rule

    kept = np.flatnonzero(np.asarray(keep_source_rules, dtype=bool))
    written = 0
    with gzip.open(path + ".tmp", "wt", encoding="utf-8", compresslevel=1) as f:
        for source_rule in kept.tolist():
            top = store.top_rule(source_rule)
            if top < 0:
                continue
            f.write(format_rule(store.source_rule(top)) + "\n")
            written += 1
    os.replace(path + ".tmp", path)
    return written


def model_files(decoder, rule_table: str, work: str, name: str) -> dict:
    """The glue grammar (and, for unknown-word labels other than X, an unknown-lhs file) that
    make Moses' model ours; returns paths and the [weight] values."""
    os.makedirs(work, exist_ok=True)
    glue_path = os.path.join(work, f"{name}.glue")
    labels = glue_labels(decoder.store, decoder.space.oov_labels)
    n_glue = write_glue_grammar(glue_path, decoder.space.glue, labels)
    unknown_lhs = None
    if tuple(decoder.space.oov_labels) != ("X",):
        unknown_lhs = os.path.join(work, f"{name}.unknown-lhs")
        with open(unknown_lhs, "w", encoding="utf-8") as f:
            f.writelines(f"{label} 0\n" for label in decoder.space.oov_labels)
    return {"rule_table": rule_table, "glue_grammar": glue_path, "glue_rules": n_glue, "unknown_lhs": unknown_lhs,
            "weights": moses_weights(decoder.weights), "n_rule_features": len(decoder.weights.rule_feature_names)}


def write_ini(files: dict, lm: str, lm_order: int, path: str, **search) -> str:
    config = MosesConfig(rule_table=files["rule_table"], glue_grammar=files["glue_grammar"], lm=lm, lm_order=lm_order,
                         weights=files["weights"], n_rule_features=files["n_rule_features"],
                         unknown_lhs=files["unknown_lhs"], **search)
    with open(path, "w", encoding="utf-8") as f:
        f.write(moses_ini(config))
    return path


# ---------------------------------------------------------------------------- checks and scores

class KenLMScorer:
    """KenLM's full-sentence log10 score (with <s> and </s>): the independent check of Moses' LM."""

    def __init__(self, path: str):
        import kenlm

        self.model = kenlm.Model(path)

    def __call__(self, text: str) -> float:
        return self.model.score(text, bos=True, eos=True)


def check_entry(entry: NBestEntry, weights, kenlm_score) -> dict:
    """The per-verse checks of one Moses 1-best (module docstring): Moses' LM against KenLM,
    Moses' total against its weights . features, and the derivation under our model."""
    from decoder.grammar import unescape_word
    from decoder.search.model import LM

    mw = moses_weights(weights)
    moses_dot = sum(w * v for name, values in entry.features.items() for w, v in zip(mw.get(name, []), values))
    ours = our_features(entry.features, weights.rule_feature_names)
    our_score = weights.dot(ours)
    text = " ".join(unescape_word(w) for w in entry.text.split())
    kenlm = kenlm_score(text)
    return {"moses_total": entry.total, "moses_weights_dot_features": moses_dot,
            "our_score": our_score, "moses_total_minus_offset": entry.total - moses_total_offset(weights),
            "lm_moses_log10": ours[LM], "lm_kenlm_log10": kenlm, "features": ours}


def close(a: float, b: float, tolerance: float = TOLERANCE) -> bool:
    return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))


def summarize_checks(checks: list[dict]) -> dict:
    """Largest residuals of the per-verse checks, and how many verses pass each at TOLERANCE."""
    def worst(a, b):
        return max((abs(c[a] - c[b]) for c in checks), default=0.0)

    return {"verses": len(checks),
            "lm_vs_kenlm_max_abs": worst("lm_moses_log10", "lm_kenlm_log10"),
            "lm_vs_kenlm_ok": sum(close(c["lm_moses_log10"], c["lm_kenlm_log10"]) for c in checks),
            "total_vs_weights_dot_features_max_abs": worst("moses_total", "moses_weights_dot_features"),
            "total_vs_weights_dot_features_ok": sum(close(c["moses_total"], c["moses_weights_dot_features"])
                                                    for c in checks),
            "our_score_vs_total_minus_offset_max_abs": worst("our_score", "moses_total_minus_offset"),
            "our_score_vs_total_minus_offset_ok": sum(close(c["our_score"], c["moses_total_minus_offset"])
                                                      for c in checks)}


def decode_ours(decoder, sentences: list[str]) -> dict:
    """Our 1-best per verse: score, text, features, CPU seconds (translate: search and read-back)."""
    verses = []
    total = time.process_time()
    for sentence in sentences:
        cpu = time.process_time()
        t = decoder.translate(sentence)
        verses.append({"score": t.score, "text": t.text, "features": t.features,
                       "cpu_seconds": time.process_time() - cpu, "edges_proposed": t.stats.get("edges_proposed", 0)})
    return {"verses": verses, "cpu_seconds": time.process_time() - total}


def compare(ours: list[float], moses: list[float]) -> dict:
    """Verses where our score >= Moses' (relative tolerance), > and <; averages."""
    at_least = sum(a >= b - TOLERANCE * max(1.0, abs(b)) for a, b in zip(ours, moses))
    better = sum(a > b + TOLERANCE * max(1.0, abs(b)) for a, b in zip(ours, moses))
    n = len(moses)
    return {"verses": n, "ours_at_least_moses": at_least, "ours_better": better, "moses_better": n - at_least,
            "ours_average": sum(ours) / n if n else 0.0, "moses_average": sum(moses) / n if n else 0.0}


def moses_scores(run: MosesRun, weights, n: int) -> list[float]:
    """Moses' 1-best per verse in our units (its total minus the <s> </s> word-penalty offset)."""
    offset = moses_total_offset(weights)
    return [run.nbest[i].total - offset for i in range(n)]


# ---------------------------------------------------------------------------- the phases

def fixture_equivalence(binary: str, work: str, log=print, search_algorithm: int = CHART) -> dict:
    """Both decoders with no pruning on the tiny fixture system (decoder.fixture: a GHKM table of
    generated sentences of at most 10 words, a trigram ARPA LM): the same best score per sentence
    is the proof that the mapped models are one model (the search spaces included: glue, unknown
    words, spans, no unary rules). Ours: exhaustive, table_limit 0, max_unary_depth 0; Moses: pop
    limit 10^6, table-limit 0, stack 0, beam-threshold 0."""
    from decoder.decoder import Decoder
    from decoder.evaluate import read_lines
    from decoder.fixture import build_fixture, fixture_store

    paths = build_fixture(os.path.join(work, "fixture"))
    store = fixture_store(paths, "icr")
    decoder = Decoder(store, paths["lm"], exhaustive=True, table_limit=0, max_unary_depth=0)
    sentences = read_lines(paths["test_es"]) + read_lines(paths["dev_es"])
    files = model_files(decoder, paths["rules"], work, "fixture")
    name = f"fixture-{search_algorithm}"
    ini = write_ini(files, paths["lm"], decoder.lm.order, os.path.join(work, f"{name}.ini"),
                    pop_limit=10 ** 6, search_algorithm=search_algorithm, **MOSES_UNPRUNED)
    moses = run_moses(binary, ini, sentences, work, name)
    ours = decode_ours(decoder, sentences)
    kenlm = KenLMScorer(paths["lm"])
    checks = [check_entry(moses.nbest[i], decoder.weights, kenlm) for i in range(len(sentences))]
    moses_best = moses_scores(moses, decoder.weights, len(sentences))
    our_best = [v["score"] for v in ours["verses"]]
    same_score = sum(close(a, b) for a, b in zip(our_best, moses_best))
    same_text = sum(v["text"] == moses.nbest[i].text for i, v in enumerate(ours["verses"]))
    result = {"search_algorithm": search_algorithm, "sentences": len(sentences), "store": store, "lm": paths["lm"],
              "same_best_score": same_score,
              "same_output": same_text, "max_abs_score_difference": max(abs(a - b) for a, b in zip(our_best, moses_best)),
              "checks": summarize_checks(checks), "ours": our_best, "moses": moses_best,
              "differences": [{"sentence": i, "source": sentences[i], "ours": our_best[i], "moses": moses_best[i],
                               "our_text": ours["verses"][i]["text"], "moses_text": moses.nbest[i].text}
                              for i in range(len(sentences)) if not close(our_best[i], moses_best[i])]}
    log(f"fixture, search-algorithm {search_algorithm}: {same_score}/{len(sentences)} same best score, {same_text} "
        f"same output; checks {result['checks']}")
    return result


def pair_files(pair: str, small: bool = False) -> dict:
    """The defaults of --config, --rule-table, --source and --references for a pair's Bible build
    (decoder.data.build.default_out, the one home of where a recipe builds; the layout of `cky train`)."""
    from decoder.data.build import default_out

    build = default_out(f"bible-{pair}", small)
    return {"build": str(build), "config": str(build / "config.toml"), "rule_table": str(build / "rules.gz"),
            "source": str(build / "corpus" / "test.tok.src"), "references": str(build / "corpus" / "test.tok.tgt")}


def test_rule_table(rule_table: str, sentences: list[str], work: str, name: str) -> str:
    """The rule table filtered to these sentences (written once into `work`): every rule that can apply to
    them, and all or none of each source side's rules (decoder.extract.filtering)."""
    import hashlib

    from decoder.extract.filtering import filter_table

    key = hashlib.sha256(("\n".join(sentences) + "\0" + os.path.abspath(rule_table)).encode()).hexdigest()[:12]
    path = os.path.join(work, f"{name}-rules-{key}.gz")
    if not os.path.exists(path):
        text = os.path.join(work, f"{name}-sentences-{key}.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.writelines(sentence + "\n" for sentence in sentences)
        filter_table(rule_table, text, path)
    return path


def demo_comparison(args, log=print, pair: str = "es-en") -> dict:
    """A pair's system: Moses (each search algorithm; its default configuration, and with exactly our
    table-limited rules) against ours over rule orders and pop limits; per-verse checks of every Moses output."""
    from decoder.decoder import Decoder
    from decoder.evaluate import corpus_bleu, read_lines

    defaults = pair_files(pair, args.small)
    config, source = args.config or defaults["config"], args.source or defaults["source"]
    reference_path = args.references or defaults["references"]
    verses = slice(args.skip, args.skip + args.sentences)
    sentences = read_lines(source)[verses]
    references = read_lines(reference_path)[verses] if reference_path else None
    decoder = Decoder.from_config(config, max_unary_depth=0, table_limit=args.table_limit,
                                  rule_order=args.rule_orders[0])
    lm_path = decoder.lm.path
    kenlm = KenLMScorer(lm_path)
    work = args.work
    os.makedirs(work, exist_ok=True)
    rule_table = args.rule_table or test_rule_table(defaults["rule_table"], sentences, work, pair)
    files = model_files(decoder, rule_table, work, pair)
    limited_table = os.path.join(work, f"{pair}-table-limit-{args.table_limit}-{os.path.basename(rule_table)}")
    keep = decoder.chart.grammar.table_limit.source_rules
    if "our-rules" in args.moses_kinds and not os.path.exists(limited_table):
        log(f"writing our table-limited rule table ({int(keep.sum()):,} source rules) to {limited_table}")
        write_limited_rule_table(decoder.store, keep, limited_table)
    same_rules_files = dict(files, rule_table=limited_table)

    # The Moses runs go side by side (--moses-jobs processes, each timed alone) while ours decode.
    planned = []
    for algorithm in args.search_algorithms:
        for pop_limit in args.moses_pop_limits:
            for kind, kind_files, search in (("default", files, {}),
                                             ("our rules", same_rules_files, {"table_limit": 0})):
                if kind.replace(" ", "-") not in args.moses_kinds:
                    continue
                name = moses_run_name(pair, algorithm, kind, pop_limit)
                ini = write_ini(kind_files, lm_path, decoder.lm.order, os.path.join(work, name + ".ini"),
                                pop_limit=pop_limit, search_algorithm=algorithm, **search)
                planned.append((name, (algorithm, kind), pop_limit, ini))
    running: dict = {}
    finished: dict = {}

    def start_next():
        while planned and len(running) < max(1, args.moses_jobs):
            name, kind, pop_limit, ini = planned.pop(0)
            log(f"{name}: decoding {len(sentences)} verses (load avg {os.getloadavg()[0]:.1f})")
            running[name] = (kind, pop_limit, ini, MosesProcess(args.moses_bin, ini, sentences, work, name))

    start_next()
    our_runs = []
    for rule_order in ([] if args.moses_only else args.rule_orders):
        decoder.reconfigure(rule_order=rule_order, max_unary_depth=0, table_limit=args.table_limit)
        for pop_limit in args.pop_limits:
            decoder.reconfigure(pop_limit=pop_limit)
            run = decode_ours(decoder, sentences)
            our_runs.append(_our_run(run, rule_order, pop_limit, 0, args.table_limit, references))
            log(f"  ours {rule_order} pop {pop_limit}: average {our_runs[-1]['average_score']:.4f}, "
                f"{our_runs[-1]['cpu_seconds_per_verse']:.3f} CPU s/verse")
    shares = {}
    if not args.moses_only:
        # our default model (unary rules too): a larger model than Moses', for reference only
        decoder.reconfigure(rule_order=args.rule_orders[0], max_unary_depth=1, pop_limit=100)
        run = decode_ours(decoder, sentences)
        our_runs.append(_our_run(run, args.rule_orders[0], 100, 1, args.table_limit, references))
    for pop_limit in (() if args.moses_only else (100, 1000)):
        decoder.reconfigure(rule_order=args.rule_orders[0], max_unary_depth=0, pop_limit=pop_limit)
        shares[pop_limit] = our_pop_shares(decoder, sentences[:args.share_sentences])
        log(f"  our pops at pop limit {pop_limit} ({args.rule_orders[0]} order), per verse: {shares[pop_limit]}")

    moses_runs = {}
    while running:
        name = next(iter(running))
        kind, pop_limit, ini, process = running.pop(name)
        finished[name] = (kind, pop_limit, ini, process.finish())
        start_next()
    for name, ((algorithm, kind), pop_limit, ini, run) in finished.items():
        load_cpu = moses_load_cpu(args.moses_bin, ini, work, name)
        checks = [check_entry(run.nbest[i], decoder.weights, kenlm) for i in range(len(sentences))]
        scores = moses_scores(run, decoder.weights, len(sentences))
        moses_runs[name] = {
            "search_algorithm": algorithm, "kind": kind, "pop_limit": pop_limit, "ini": ini, "scores": scores,
            "texts": [run.nbest[i].text for i in range(len(sentences))],
            "average_score": sum(scores) / len(scores),
            "process_cpu_seconds": run.cpu_seconds, "load_cpu_seconds": load_cpu,
            "decode_cpu_seconds_per_verse": (run.cpu_seconds - load_cpu) / len(sentences),
            "reported_wall_seconds_per_verse": sum(run.reported_wall.values()) / len(sentences),
            # the chart decoder's own per-sentence CPU clock; the S2T decoder prints none
            "reported_cpu_seconds_per_verse": sum(run.reported_cpu) / len(sentences) if run.reported_cpu else None,
            "wall_seconds": run.wall_seconds, "load_average": os.getloadavg()[0],
            "bleu": corpus_bleu(run.outputs, references).score if references else None,
            "checks": summarize_checks(checks),
            "real_hypotheses": moses_real_hypotheses(pathlib.Path(work, f"{name}.log").read_text(encoding="utf-8",
                                                                                    errors="replace"))}
        log(f"  {name}: average {moses_runs[name]['average_score']:.4f}, "
            f"{moses_runs[name]['decode_cpu_seconds_per_verse']:.3f} CPU s/verse (+ load {load_cpu:.1f} s), "
            f"checks {moses_runs[name]['checks']}")
    for run in our_runs:
        run["against"] = {name: compare(run["scores"], m["scores"]) for name, m in moses_runs.items()}
        log(f"  ours {run['rule_order']} pop {run['pop_limit']} unary {run['max_unary_depth']}: "
            + "; ".join(f"{name}: {c['ours_at_least_moses']}/{c['verses']}" for name, c in run["against"].items()))
    return {"pair": pair, "sentences": len(sentences), "skip": args.skip, "config": config, "rule_table": rule_table,
            "table_limit": args.table_limit, "limited_rule_table": limited_table, "source_rules_kept": int(keep.sum()),
            "moses": moses_runs, "ours": our_runs, "our_pops": shares}


def moses_run_name(pair: str, search_algorithm: int, kind: str, pop_limit: int) -> str:
    """The name of a Moses run: its inputs, logs and n-best list in --work, its key in moses.json."""
    return f"{pair}-moses{search_algorithm}-{'default' if kind == 'default' else 'our-rules'}-{pop_limit}"


def our_pop_shares(decoder, sentences: list[str]) -> dict:
    """Where our pops go (the analysis of why Moses may get more per pop): every pop adds one edge
    to the chart, so the edges by the kind of their head item count the pops spent on virtual items
    (partial rules of the binarization, which Moses' dotted-rule parser never prunes), on real items
    and on GOAL (glue) items; and the items that survive, by kind."""
    import numpy as np

    from decoder.grammar import escape_word

    grammar = decoder.chart.grammar
    is_real = np.asarray(grammar.arrays["symbol_is_real"], dtype=bool)
    goal = grammar.goal_symbol
    totals = {"pops_virtual": 0, "pops_real": 0, "pops_goal": 0, "items_virtual": 0, "items_real": 0}
    for sentence in sentences:
        result = decoder.chart.run([escape_word(w) for w in sentence.split()])
        chart = result.chart
        head_symbol = chart["item_symbol"][chart["edge_head"]]
        totals["pops_goal"] += int((head_symbol == goal).sum())
        totals["pops_real"] += int(((head_symbol != goal) & is_real[head_symbol]).sum())
        totals["pops_virtual"] += int((~is_real[head_symbol]).sum())
        alive = chart["item_alive"] != 0
        symbol = chart["item_symbol"]
        totals["items_real"] += int((alive & (symbol != goal) & is_real[symbol]).sum())
        totals["items_virtual"] += int((alive & ~is_real[symbol]).sum())
    n = max(1, len(sentences))
    out = {name: value / n for name, value in totals.items()}
    out["verses"] = len(sentences)
    spent = totals["pops_virtual"] + totals["pops_real"]
    out["virtual_share_of_non_goal_pops"] = totals["pops_virtual"] / spent if spent else 0.0
    return out


def _our_run(run: dict, rule_order: str, pop_limit: int, max_unary_depth: int, table_limit: int,
             references) -> dict:
    from decoder.evaluate import corpus_bleu

    scores = [v["score"] for v in run["verses"]]
    texts = [v["text"] for v in run["verses"]]
    return {"rule_order": rule_order, "pop_limit": pop_limit, "max_unary_depth": max_unary_depth,
            "table_limit": table_limit, "scores": scores, "texts": texts,
            "average_score": sum(scores) / len(scores),
            "cpu_seconds_per_verse": run["cpu_seconds"] / len(scores), "load_average": os.getloadavg()[0],
            "edges_proposed_per_verse": sum(v["edges_proposed"] for v in run["verses"]) / len(scores),
            "bleu": corpus_bleu(texts, references).score if references else None}


# ---------------------------------------------------------------------------- command line and report

def parse_arguments(argv=None):
    from decoder.benchmark.moses_training import DECODER, MOSES_ENVIRONMENT

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.environ.get(MOSES_ENVIRONMENT)
    parser.add_argument("--moses-bin", default=str(pathlib.Path(root) / DECODER) if root else None,
                        help=f"a built Moses decoder (moses-cmd's `moses`; default ${MOSES_ENVIRONMENT}/{DECODER})")
    parser.add_argument("--search-algorithm", choices=["3", "6", "both"], default="both",
                        help="Moses' chart decoder (3), its string-to-tree decoder (6), or both (default)")
    parser.add_argument("--pair", choices=[*PAIRS, "both"], default="es-en",
                        help="the Bible build whose model both decoders run (default es-en)")
    parser.add_argument("--small", action="store_true", help="the pair's small build (BUILD/small)")
    parser.add_argument("--config", default=None, help="our decoder config (store, LM, glue, weights; default: "
                                                       "the pair's BUILD/config.toml)")
    parser.add_argument("--rule-table", default=None,
                        help="the Moses-format rule table the config's store was compiled from (default: the pair's "
                             "BUILD/rules.gz filtered to the decoded verses)")
    parser.add_argument("--source", default=None, help="default: the pair's BUILD/corpus/test.tok.src")
    parser.add_argument("--references", default=None, help="default: the pair's BUILD/corpus/test.tok.tgt")
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--skip", type=int, default=0,
                        help="skip the first N verses: decode verses N+1 .. N+--sentences (Moses' sentence ids "
                             "and the per-verse lists then start at verse N+1)")
    parser.add_argument("--table-limit", type=int, default=20)
    parser.add_argument("--rule-orders", nargs="+", default=["score", "estimate"])
    parser.add_argument("--pop-limits", type=int, nargs="+", default=[10, 30, 100, 300, 1000])
    parser.add_argument("--moses-pop-limits", type=int, nargs="+", default=[100])
    parser.add_argument("--moses-kinds", nargs="+", choices=["default", "our-rules"], default=["default", "our-rules"],
                        help="Moses runs per pop limit: its default configuration, and with exactly our table-limited "
                             "rules")
    parser.add_argument("--moses-only", action="store_true",
                        help="run Moses only (its per-verse scores and checks), none of our decodes")
    parser.add_argument("--moses-jobs", type=int, default=2, help="Moses processes run side by side")
    parser.add_argument("--share-sentences", type=int, default=30,
                        help="verses of the count of where our pops go (pop limits 100 and 1000)")
    parser.add_argument("--rewrite-report", action="store_true",
                        help="only rewrite moses.md from moses.json (adding Moses' hypothesis counts from its logs "
                             "in --work when missing)")
    parser.add_argument("--skip-fixture", action="store_true", help="skip the no-pruning equivalence on the fixture")
    parser.add_argument("--work", default=os.path.join(REPOSITORY, "build", "moses-bench"),
                        help="Moses inputs, inis, logs and n-best lists (git-ignored)")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args(argv)
    args.search_algorithms = [CHART, S2T] if args.search_algorithm == "both" else [int(args.search_algorithm)]
    args.pairs = list(PAIRS) if args.pair == "both" else [args.pair]
    if len(args.pairs) > 1 and any((args.config, args.rule_table, args.source, args.references)):
        parser.error("--config, --rule-table, --source and --references name one pair's files: give one --pair")
    return args


def moses_missing(binary: str | None) -> str | None:
    """The one line saying why there is no Moses decoder to run, or None when `binary` is executable."""
    from decoder.benchmark.moses_training import DECODER, MOSES_ENVIRONMENT

    if binary and os.path.isfile(binary) and os.access(binary, os.X_OK):
        return None
    given = f"{binary} is not an executable" if binary else "no --moses-bin"
    return (f"bench_moses: Moses not found: {given}; give --moses-bin BIN (a built moses-cmd `moses`) or set "
            f"${MOSES_ENVIRONMENT} (${MOSES_ENVIRONMENT}/{DECODER}); the bench never builds Moses")


def main(argv=None) -> int:
    from bench.machine import machine_info

    args = parse_arguments(argv)
    if args.rewrite_report:
        return rewrite_report(args.out, args.work)
    missing = moses_missing(args.moses_bin)
    if missing:
        print(missing, file=sys.stderr)
        return 2
    os.makedirs(args.work, exist_ok=True)
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    started = time.time()
    result = {"machine": machine_info(), "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "command": "python -m bench.bench_moses " + " ".join(argv if argv is not None else sys.argv[1:]),
              "moses_bin": os.path.abspath(args.moses_bin), "tolerance": TOLERANCE,
              "search_algorithms": args.search_algorithms}
    if not args.skip_fixture:
        result["fixture"] = {str(algorithm): fixture_equivalence(args.moses_bin, args.work, log, algorithm)
                             for algorithm in args.search_algorithms}
    result["pairs"] = {pair: demo_comparison(args, log, pair) for pair in args.pairs}
    result["seconds"] = round(time.time() - started, 1)
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "moses.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.out, "moses.md"), "w", encoding="utf-8") as f:
        f.write(markdown(result))
    print(markdown(result))
    return 0


def normalized(result: dict) -> dict:
    """moses.json in the present layout: one comparison per pair under "pairs", one fixture check per search
    algorithm under "fixture", each Moses run with its search algorithm. JSON written when the bench ran
    only the chart decoder on es-en has "demo" and a single fixture check: those were search algorithm 3."""
    if "pairs" not in result and "demo" in result:
        result["pairs"] = {result["demo"].get("pair", "es-en"): result.pop("demo")}
    fixture = result.get("fixture")
    if fixture and "checks" in fixture:
        result["fixture"] = {str(CHART): fixture}
    for comparison in result.get("pairs", {}).values():
        for run in comparison["moses"].values():
            run.setdefault("search_algorithm", CHART)
    result.setdefault("search_algorithms", sorted({run["search_algorithm"] for comparison in result["pairs"].values()
                                                   for run in comparison["moses"].values()}))
    return result


def rewrite_report(out: str, work: str) -> int:
    """moses.md again from moses.json; Moses' hypotheses per verse from its logs if the JSON lacks them."""
    path = os.path.join(out, "moses.json")
    with open(path, encoding="utf-8") as f:
        result = normalized(json.load(f))
    for comparison in result["pairs"].values():
        for share in comparison.get("our_pops", {}).values():  # JSON written before "verses" was recorded
            share.setdefault("verses", min(30, comparison["sentences"]))
        for name, run in comparison["moses"].items():
            log_path = os.path.join(work, f"{name}.log")
            if "real_hypotheses" not in run and os.path.exists(log_path):
                log_text = pathlib.Path(log_path).read_text(encoding="utf-8", errors="replace")
                run["real_hypotheses"] = moses_real_hypotheses(log_text)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, "moses.md"), "w", encoding="utf-8") as f:
        f.write(markdown(result))
    print(markdown(result))
    return 0


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(result: dict) -> str:
    result = normalized(result)
    machine = result["machine"]
    algorithms = ", ".join(f"search-algorithm {a} ({SEARCH_ALGORITHMS[a]})" for a in result["search_algorithms"])
    lines = ["# Our cube pruning against Moses' string-to-tree decoders on the same model", "",
             f"{result['created']}, `{result['command']}`, commit {machine.get('git_commit', '?')}, "
             f"{machine.get('cpu', '')} ({machine.get('cpus')} CPUs), load average at start "
             f"{machine.get('load_average')}, at end {result.get('load_average_end')}; Moses: {result['moses_bin']} "
             f"({algorithms}; one thread). The model mapping and the checks: bench/bench_moses.py's docstring. "
             f"Scores are our model scores (Moses' total minus the constant its WordPenalty gives <s> and </s>); "
             f"'ours >= Moses' allows {result['tolerance']:g} x max(1, |score|).", ""]
    for algorithm, fixture in (result.get("fixture") or {}).items():
        checks = fixture["checks"]
        lines += [f"## Equivalence with no pruning (fixture system), search-algorithm {algorithm}", "",
                  f"{fixture['sentences']} sentences of the tiny fixture system (decoder.fixture), ours exhaustive "
                  f"(table_limit 0, max_unary_depth 0), Moses with pop limit 10^6, table-limit 0, stack 0, "
                  f"beam-threshold 0: the same best score on {fixture['same_best_score']} of {fixture['sentences']} "
                  f"(largest difference {fixture['max_abs_score_difference']:.2e}), the same output on "
                  f"{fixture['same_output']}. Moses' LM = KenLM's sentence score on {checks['lm_vs_kenlm_ok']}, "
                  f"its total = weights . features on {checks['total_vs_weights_dot_features_ok']}, our model's "
                  f"score of its derivation = its total - offset on {checks['our_score_vs_total_minus_offset_ok']} "
                  f"(largest residuals {checks['lm_vs_kenlm_max_abs']:.1e}, "
                  f"{checks['total_vs_weights_dot_features_max_abs']:.1e}, "
                  f"{checks['our_score_vs_total_minus_offset_max_abs']:.1e}).", ""]
    for pair, demo in result["pairs"].items():
        lines += markdown_pair(pair, demo)
    return "\n".join(lines) + "\n"


def markdown_pair(pair: str, demo: dict) -> list[str]:
    lines = [f"## {pair}", "",
             f"{demo['sentences']} verses of the test set; config {demo['config']} with max_unary_depth 0 (Moses "
             f"applies no unary rule); rule table {demo['rule_table']}. 'default': Moses' default "
             f"configuration (table-limit 20 by its own ranking, stack 200, beam-threshold 1e-5 (the chart decoder's "
             f"only), rule-limit 5000). 'our rules': the same but with exactly the {demo['source_rules_kept']:,} "
             f"source rules our table_limit keeps ({demo['limited_rule_table']}) and table-limit 0."
             + (f" Note: {demo['note']}." if demo.get("note") else ""), "",
             "| Moses run | search-algorithm | pop limit | avg score | BLEU | decode CPU s/verse | its own CPU s/verse | "
             "load CPU s | LM = KenLM | total = w.f | ours(features) = total - offset |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, run in demo["moses"].items():
        c = run["checks"]
        lines.append(f"| {run['kind']} | {run['search_algorithm']} | {run['pop_limit']} | {run['average_score']:.4f} | "
                     f"{run['bleu'] if run['bleu'] is None else round(run['bleu'], 2)} | "
                     f"{run['decode_cpu_seconds_per_verse']:.3f} | {_seconds(run['reported_cpu_seconds_per_verse'])} | "
                     f"{run['load_cpu_seconds']:.1f} | {c['lm_vs_kenlm_ok']}/{c['verses']} | "
                     f"{c['total_vs_weights_dot_features_ok']}/{c['verses']} | "
                     f"{c['our_score_vs_total_minus_offset_ok']}/{c['verses']} |")
    names = list(demo["moses"])
    if demo["ours"]:
        lines += ["", "Ours (table_limit " + str(demo["ours"][0]["table_limit"]) +
                  "); 'vs NAME': verses where our score >= that Moses run's (and where it is strictly better):", "",
                  "| rule order | max_unary_depth | pop limit | avg score | BLEU | CPU s/verse | edges/verse | "
                  + " | ".join(f"vs {name}" for name in names) + " |",
                  "| --- | --- | --- | --- | --- | --- | --- | " + " | ".join("---" for _ in names) + " |"]
        for run in demo["ours"]:
            cells = [f"{run['against'][n]['ours_at_least_moses']}/{run['against'][n]['verses']} "
                     f"({run['against'][n]['ours_better']} better)" for n in names]
            lines.append(f"| {run['rule_order']} | {run['max_unary_depth']} | {run['pop_limit']} | "
                         f"{run['average_score']:.4f} | {run['bleu'] if run['bleu'] is None else round(run['bleu'], 2)} | "
                         f"{run['cpu_seconds_per_verse']:.3f} | {run['edges_proposed_per_verse']:.0f} | "
                         + " | ".join(cells) + " |")
        lines += ["", "max_unary_depth 1 (our default) is a larger model than Moses' (it adds unary rules): its row "
                  "is not a same-model comparison.", ""]
    shares = demo.get("our_pops", {})
    if shares:
        lines += ["Where our pops go (per verse, first verses of the run; every pop adds one edge to the chart, "
                  "counted by the kind of its head item). Moses spends all of a cell's pops on complete rule "
                  "applications (real items); ours also pop the binarization's virtual items (partial rules):", "",
                  "| pop limit | pops on virtual items | pops on real items | pops on GOAL items | virtual share of "
                  "non-GOAL pops | real items kept | virtual items kept |", "| --- | --- | --- | --- | --- | --- | --- |"]
        for pop_limit, share in shares.items():
            lines.append(f"| {pop_limit} | {share['pops_virtual']:.0f} | {share['pops_real']:.0f} | "
                         f"{share['pops_goal']:.0f} | {share['virtual_share_of_non_goal_pops']:.3f} | "
                         f"{share['items_real']:.0f} | {share['items_virtual']:.0f} |")
        lines.append("")
        verses = next(iter(shares.values())).get("verses")
        for name, run in demo["moses"].items():
            real = run.get("real_hypotheses")  # from the chart decoder's log only
            if real and verses:
                lines.append(f"- {name}: {sum(real[:verses]) / len(real[:verses]):.0f} hypotheses over real labels "
                             f"kept per verse on the same {verses} verses ({sum(real) / len(real):.0f} on all "
                             f"{len(real)}), from the table of hypotheses per cell in its log.")
        lines.append("")
    return lines


if __name__ == "__main__":
    sys.exit(main())
