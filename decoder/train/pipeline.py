"""`cky train`: from a plain parallel corpus to a tuned system in DIR, one resumable run.

Stages (STAGES, each a library function in its own module of decoder.train), in order:

    clean     decoder.train.clean      drop empty, over-long, badly proportioned and non-UTF-8 pairs (logged)
    split     decoder.train.split      the training pairs and the dev set (--dev, or held out)
    tokenize  decoder.train.tokenize   both languages' tokenizers (decoder.data.tokenize's registry)
    recase    decoder.train.recase     the recasing model of the cased target side (recase.gz)
    parse     decoder.train.parse      target trees with link-grammar
    align     decoder.train.align      eflomal + grow-diag-final-and
    lm        decoder.train.lm         KenLM lmplz + build_binary (skipped with --lm)
    extract   decoder.train.extract    GHKM rules of the whole corpus, glue, unknown-word labels
    compile   decoder.train.compile    the binarized grammar store (icr)
    tune      decoder.train.tune       MERT on the dev set -> config.toml (--no-tune: default weights)
    evaluate  decoder.train.evaluate   BLEU and chrF on the test set (only with --test): tokenized and
                                       lowercased, and sacreBLEU's default on the raw references

With `system = "sdig"` (`cky train --system sdig`: the dependency tree-to-tree system of Ding and
Palmer 2005, decoder.sdig; SDIG_STAGES), extract and compile give way to

    source-dependencies  decoder.train.dependencies  source dependency trees (spaCy; DEPENDENCY_PARSERS)
    target-dependencies  decoder.train.dependencies  target dependency trees from the parse stage's
                                                     Penn trees by head rules
    induce               decoder.train.induce        the SDIG grammar (grammar/)

and tune (with the pass-through weight fixed, decoder.sdig.search.FIXED_IN_TUNING) and evaluate
use the grammar. A source language without a dependency parser is a UsageError before any work.

decoder.train.stages runs them: unchanged stages are skipped, outputs appear
atomically, `from_stage` redoes a stage and everything after it. At the end
DIR/system.json describes the system (decoder.train.system).

Layout of DIR: corpus/ (cleaned, split and tokenized text, trees, alignments),
clean.log, recase.gz, lm.bin, rules.gz (+ .features.json), glue.gz, unknown-labels.txt,
store/ (GHKM) or corpus/train.{src,tgt}.conllu and grammar/ (SDIG), config.toml, test.out and
test.detok (with a test set), system.json, stages.json, cache/ (parser and aligner caches an
interrupted stage resumes from; the parser's answers are in cache/parse.sqlite unless
`parse_cache` names a file shared with other systems).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ..config import SYSTEMS
from ..data.tokenize import tokenizer_for, tokenizer_versions
from ..errors import InputError, UsageError
from ..sdig.parser import LANGUAGES as DEPENDENCY_PARSERS
from . import stages as runner
from .clean import CleanSettings, check_parallel, count_lines
from .parse import PARSERS
from .split import MIN_DEV_PAIRS, check_dev_size
from .system import GHKM_SEARCH, REST_LM, SDIG_REORDER, SYSTEM, describe, write_system_json

STAGES = ("clean", "split", "tokenize", "recase", "parse", "align", "lm", "extract", "compile", "tune", "evaluate")
SDIG_STAGES = ("clean", "split", "tokenize", "recase", "parse", "align", "lm", "source-dependencies",
               "target-dependencies", "induce", "tune", "evaluate")
ALL_STAGES = tuple(dict.fromkeys(STAGES[:-2] + SDIG_STAGES))  # either system's, in order (--from's choices)
DEFAULT_SYSTEM = "ghkm"
DEFAULT_STRATEGY = "icr"
DEFAULT_LM_ORDER = 5
MERT_ITERATIONS = 10
MERT_KBEST = 100


@dataclass
class TrainSettings:
    """Everything `cky train` is told (see docs/train.md)."""
    source: Path
    target: Path
    source_lang: str
    target_lang: str
    out: Path
    dev: tuple[Path, Path] | None = None
    test: tuple[Path, Path] | None = None
    lm_text: list[Path] = field(default_factory=list)
    lm: Path | None = None
    lm_order: int = DEFAULT_LM_ORDER
    strategy: str = DEFAULT_STRATEGY
    workers: int = 1
    cluster: str | None = None
    parse_cache: Path | None = None  # the parser's answers by sentence (None: DIR/cache/parse.sqlite)
    tune: bool = True
    weights: dict | None = None  # without tuning: these weights (feature -> value) instead of the defaults
    mert_iterations: int = MERT_ITERATIONS
    mert_kbest: int = MERT_KBEST
    clean: CleanSettings = field(default_factory=CleanSettings)
    progress: bool = True
    system: str = DEFAULT_SYSTEM  # "ghkm", or "sdig": the dependency tree-to-tree system

    def __post_init__(self) -> None:  # paths may be given as strings
        self.source, self.target, self.out = Path(self.source), Path(self.target), Path(self.out)
        self.dev = tuple(map(Path, self.dev)) if self.dev else None
        self.test = tuple(map(Path, self.test)) if self.test else None
        self.lm_text = [Path(path) for path in self.lm_text]
        self.lm = Path(self.lm) if self.lm is not None else None
        self.parse_cache = Path(self.parse_cache) if self.parse_cache is not None else None


def parse_cache_path(settings: TrainSettings) -> Path:
    """The SQLite file of the parser's answers: --parse-cache, else DIR/cache/parse.sqlite."""
    return settings.parse_cache if settings.parse_cache is not None else settings.out / "cache" / "parse.sqlite"


def check_inputs(settings: TrainSettings) -> dict:
    """Before any work: the files exist and are parallel, the languages and the dev set are usable.
    Returns the pair counts by role."""
    if settings.weights is not None and settings.tune:
        raise UsageError("given weights replace tuning: turn tuning off (--no-tune) to use them")
    if settings.lm is not None and settings.lm_text:
        raise UsageError("give --lm (a finished model) or --lm-text (more text for the model built here), not both")
    if settings.system not in SYSTEMS:
        raise UsageError(f"--system {settings.system}: no such system (systems: {', '.join(SYSTEMS)})")
    if settings.system == "sdig" and settings.source_lang not in DEPENDENCY_PARSERS:
        raise UsageError(f"--system sdig: no dependency parser for source language {settings.source_lang!r}: the "
                         f"source side is parsed with {', '.join(f'{k} ({v})' for k, v in DEPENDENCY_PARSERS.items())}")
    if settings.target_lang not in PARSERS:
        raise UsageError(f"no parser for target language {settings.target_lang!r}: the target side is parsed with "
                         f"{', '.join(f'{k} ({v})' for k, v in PARSERS.items())}")
    files = [settings.source, settings.target, *(settings.dev or ()), *(settings.test or ()), *settings.lm_text]
    if settings.lm is not None:
        files.append(settings.lm)
    for path in files:
        if not path.is_file():
            raise InputError(path, "no such file" if not path.exists() else "is not a regular file")
    counts = {"corpus": check_parallel(settings.source, settings.target)}
    if settings.dev:
        counts["dev"] = check_parallel(*settings.dev)
        if settings.tune:
            check_dev_size(counts["dev"], str(settings.dev[0]))
    if settings.test:
        counts["test"] = check_parallel(*settings.test)
    if settings.tune and not settings.dev and counts["corpus"] < 2 * MIN_DEV_PAIRS:
        raise UsageError(f"{settings.source}: {counts['corpus']} pairs are too few to hold out {MIN_DEV_PAIRS} dev "
                         "pairs for tuning and train on the rest; give --dev, or --no-tune")
    return counts


class Cluster:
    """The Dask cluster of `--cluster`, connected when a stage first asks for it (None without one)."""

    def __init__(self, spec: str | None):
        self.spec, self._client = spec, None

    def client(self):
        if self.spec and self._client is None:
            from ..cluster import connect

            self._client = connect(self.spec)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def corpus_file(out: Path | str, name: str) -> Path:
    """Where a run in `out` keeps a prepared corpus file (train.tok.src, train.trees, train.align,
    train.tok.tgt, test.tok.src, ...)."""
    return Path(out) / "corpus" / name


def build_stages(settings: TrainSettings, implementations: dict[str, Callable] | None = None,
                 cluster: Cluster | None = None) -> list[runner.Stage]:
    """The stages of this run, their inputs, outputs and settings (see the module docstring).
    `implementations` replaces stage functions by name (a StageContext -> statistics function);
    tokenization, parsing, extraction and the test set's decoding run on `cluster` if given."""
    out = settings.out
    cluster = cluster or Cluster(None)
    corpus = lambda name: corpus_file(out, name)  # noqa: E731
    source_tokenizer = tokenizer_for(settings.source_lang, warn=lambda message: None).name  # (train() warns)
    target_tokenizer = tokenizer_for(settings.target_lang, warn=lambda message: None).name
    languages = {"source_language": settings.source_lang, "target_language": settings.target_lang,
                 "source_tokenizer": source_tokenizer, "target_tokenizer": target_tokenizer}
    hold_out = settings.tune and settings.dev is None
    has_dev = settings.dev is not None or hold_out
    progress = settings.progress
    stages: list[runner.Stage] = []

    def add(name, run, inputs, outputs, stage_settings):
        if implementations and name in implementations:
            run = implementations[name]
        stages.append(runner.Stage(name, run, {k: Path(v) for k, v in inputs.items()}, list(outputs),
                                   stage_settings))

    def clean(ctx):
        from .clean import clean_corpus

        return clean_corpus(ctx.input("source"), ctx.input("target"), ctx.output("corpus/clean.src"),
                            ctx.output("corpus/clean.tgt"), ctx.output("clean.log"), settings.clean, progress)

    add("clean", clean, {"source": settings.source, "target": settings.target},
        ["corpus/clean.src", "corpus/clean.tgt", "clean.log"], asdict(settings.clean))

    split_outputs = ["corpus/train.src", "corpus/train.tgt"] + (["corpus/dev.src", "corpus/dev.tgt"] if has_dev else [])

    def split(ctx):
        from .split import split_corpus

        outputs = {name: ctx.output(f"corpus/{name}") for name in ("train.src", "train.tgt", "dev.src", "dev.tgt")
                   if f"corpus/{name}" in ctx.stage.outputs}
        statistics = split_corpus(ctx.input("source"), ctx.input("target"), outputs, hold_out)
        if settings.dev is not None:
            import shutil

            shutil.copyfile(ctx.input("dev_source"), outputs["dev.src"])
            shutil.copyfile(ctx.input("dev_target"), outputs["dev.tgt"])
            statistics["dev_pairs_given"] = count_lines(outputs["dev.src"])
        return statistics

    split_inputs = {"source": corpus("clean.src"), "target": corpus("clean.tgt")}
    if settings.dev is not None:
        split_inputs.update(dev_source=settings.dev[0], dev_target=settings.dev[1])
    add("split", split, split_inputs, split_outputs, {"hold_out": hold_out})

    # tokenize: (input role, input path, output name, tokenizer, lowercase)
    jobs = [("train_source", corpus("train.src"), "corpus/train.tok.src", source_tokenizer, True),
            ("train_target", corpus("train.tgt"), "corpus/train.tok.tgt", target_tokenizer, True),
            ("train_target", corpus("train.tgt"), "corpus/train.cased.tgt", target_tokenizer, False)]
    if has_dev:
        jobs += [("dev_source", corpus("dev.src"), "corpus/dev.tok.src", source_tokenizer, True),
                 ("dev_target", corpus("dev.tgt"), "corpus/dev.tok.tgt", target_tokenizer, True)]
    if settings.test:
        jobs += [("test_source", settings.test[0], "corpus/test.tok.src", source_tokenizer, True),
                 ("test_target", settings.test[1], "corpus/test.tok.tgt", target_tokenizer, True)]

    def tokenize(ctx):
        from .tokenize import tokenize_files

        return tokenize_files([(ctx.input(role), ctx.output(name), tokenizer, lowercase)
                               for role, _, name, tokenizer, lowercase in jobs], settings.workers, progress,
                              cluster.client())

    add("tokenize", tokenize, {role: path for role, path, *_ in jobs}, [name for _, _, name, *_ in jobs],
        {"jobs": [[role, name, tokenizer, lowercase] for role, _, name, tokenizer, lowercase in jobs],
         "versions": tokenizer_versions(tokenizer for *_, tokenizer, _ in jobs)})

    def recase(ctx):
        from .recase import RECASE_MODEL, train_recaser

        return train_recaser(ctx.input("cased"), ctx.output(RECASE_MODEL))

    from .recase import RECASE_MODEL

    add("recase", recase, {"cased": corpus("train.cased.tgt")}, [RECASE_MODEL], {"model": "RecaseModel"})

    def parse(ctx):
        from .parse import parse_file

        # the cache is not part of the stage's settings: where answers are kept does not change them
        return parse_file(ctx.input("tokens"), ctx.input("cased"), ctx.output("corpus/train.trees"),
                          parse_cache_path(settings), out / "cache" / "parse", settings.workers, progress,
                          cluster.client(), warn=lambda message: runner.log(f"warning: {message}"))

    from ..data.parse import ParserSettings

    add("parse", parse, {"tokens": corpus("train.tok.tgt"), "cased": corpus("train.cased.tgt")},
        ["corpus/train.trees"], {"parser": PARSERS[settings.target_lang], **asdict(ParserSettings())})

    def align(ctx):
        from .align import align_files

        return align_files(ctx.input("source"), ctx.input("target"), ctx.output("corpus/train.align"),
                           out / "cache" / "align")

    add("align", align, {"source": corpus("train.tok.src"), "target": corpus("train.tok.tgt")},
        ["corpus/train.align"], {"aligner": "eflomal", "symmetrization": "grow-diag-final-and"})

    if settings.lm is None:
        def lm(ctx):
            from .lm import build_lm

            extra = [ctx.input(f"lm_text_{k}") for k in range(len(settings.lm_text))]
            return build_lm(ctx.input("target"), extra, target_tokenizer, ctx.output("lm.bin"), ctx.work_dir,
                            settings.lm_order, settings.workers, ctx.output(REST_LM) if rest else None)

        # GHKM searches incrementally over the rest-cost binary of the same model (GHKM_SEARCH)
        rest = settings.system != "sdig"
        lm_inputs = {"target": corpus("train.tok.tgt"),
                     **{f"lm_text_{k}": path for k, path in enumerate(settings.lm_text)}}
        add("lm", lm, lm_inputs, ["lm.bin", REST_LM] if rest else ["lm.bin"],
            {"order": settings.lm_order, "tokenizer": target_tokenizer, **({"rest_model": True} if rest else {})})
        config_lm = REST_LM if rest else "lm.bin"
        lm_path, lm_order, search = out / config_lm, settings.lm_order, GHKM_SEARCH if rest else None
    else:  # a finished model: cube pruning over it as given (rest costs need the lower-order models)
        lm_path = settings.lm.resolve()
        config_lm, lm_order, search = str(lm_path), None, None

    if settings.system == "sdig":
        from ..sdig.search import FIXED_IN_TUNING

        model, fixed = add_sdig_stages(settings, add, corpus), FIXED_IN_TUNING
    else:
        model, fixed = add_ghkm_stages(settings, add, corpus, cluster), ()

    def tune(ctx):
        from .tune import tune_system

        dev = (ctx.input("dev_source"), ctx.input("dev_target")) if settings.tune else (None, None)
        return tune_system(ctx.output("config.toml"), out, model, config_lm, lm_order, languages, *dev,
                           ctx.work_dir, out / "cache" / "tune", settings.mert_iterations, settings.mert_kbest,
                           settings.workers, progress, ctx.fingerprint, settings.weights,
                           recase_model=RECASE_MODEL, system=settings.system, fixed=fixed, search=search)

    model_role = "grammar" if settings.system == "sdig" else "store"
    tune_inputs = {model_role: model, "lm": lm_path}
    if settings.tune:
        tune_inputs.update(dev_source=corpus("dev.tok.src"), dev_target=corpus("dev.tok.tgt"))
    tune_settings = {"tune": settings.tune, "iterations": settings.mert_iterations, "kbest": settings.mert_kbest,
                     "languages": languages, "lm": config_lm, "lm_order": lm_order}
    if settings.system == "sdig":  # (a GHKM run's fingerprint stays what it was before SDIG could be trained)
        tune_settings.update(system="sdig", fixed=list(fixed), reorder=SDIG_REORDER)
    if search:
        tune_settings["search"] = dict(search)
    if settings.weights is not None:
        tune_settings["weights"] = dict(settings.weights)
    add("tune", tune, tune_inputs, ["config.toml"], tune_settings)

    if settings.test:
        def evaluate(ctx):
            from .evaluate import evaluate_system

            return evaluate_system(out / "config.toml", ctx.input("source"), ctx.input("target"), target_tokenizer,
                                   ctx.output("test.out"), ctx.output("test.detok"), settings.workers, progress,
                                   cluster.client(), raw_source=ctx.input("raw_source"),
                                   raw_target=ctx.input("raw_target"))

        add("evaluate", evaluate, {"config": out / "config.toml", model_role: model, "lm": lm_path,
                                   "recase": out / RECASE_MODEL,
                                   "source": corpus("test.tok.src"), "target": corpus("test.tok.tgt"),
                                   "raw_source": settings.test[0], "raw_target": settings.test[1]},
            ["test.out", "test.detok"], {"tokenizer": target_tokenizer, "scores": ["tokenized", "sacrebleu"]})
    return stages


def add_ghkm_stages(settings: TrainSettings, add: Callable, corpus: Callable, cluster: Cluster) -> Path:
    """The GHKM system's model stages (extract, compile); returns the store directory tune reads."""
    out, progress = settings.out, settings.progress

    def extract(ctx):
        from .extract import extract_rules

        return extract_rules(ctx.input("source"), ctx.input("trees"), ctx.input("alignment"), ctx.input("target"),
                             ctx.output("rules.gz"), ctx.output("glue.gz"), ctx.output("unknown-labels.txt"),
                             ctx.work_dir, settings.workers, cluster.client(), progress)

    from ..extract.rules import Limits

    add("extract", extract, {"source": corpus("train.tok.src"), "trees": corpus("train.trees"),
                             "alignment": corpus("train.align"), "target": corpus("train.tok.tgt")},
        ["rules.gz", "rules.gz.features.json", "glue.gz", "glue.gz.features.json", "unknown-labels.txt"], asdict(Limits()))

    def compile_(ctx):
        from .compile import compile_store

        # the table's feature names file lies beside it in DIR
        return compile_store(ctx.input("rules"), ctx.output("store"), settings.strategy, out / "rules.gz", progress)

    add("compile", compile_, {"rules": out / "rules.gz", "features": out / "rules.gz.features.json"}, ["store"],
        {"strategy": settings.strategy})
    return out / "store"


def add_sdig_stages(settings: TrainSettings, add: Callable, corpus: Callable) -> Path:
    """The SDIG system's model stages (source-dependencies, target-dependencies, induce); returns the
    grammar directory tune reads."""
    from ..sdig.grammar import MIN_ET_COUNT
    from ..sdig.head_rules import DEFAULT_STYLE

    out, progress = settings.out, settings.progress

    def source_dependencies(ctx):
        from .dependencies import parse_source

        return parse_source(ctx.input("tokens"), ctx.output("corpus/train.src.conllu"), out / "cache" / "dependencies",
                            report=runner.log if progress else None)

    add("source-dependencies", source_dependencies, {"tokens": corpus("train.tok.src")}, ["corpus/train.src.conllu"],
        {"language": settings.source_lang, "parser": DEPENDENCY_PARSERS[settings.source_lang]})

    def target_dependencies(ctx):
        from .dependencies import target_dependencies as convert

        return convert(ctx.input("trees"), ctx.input("tokens"), ctx.output("corpus/train.tgt.conllu"))

    add("target-dependencies", target_dependencies, {"trees": corpus("train.trees"), "tokens": corpus("train.tok.tgt")},
        ["corpus/train.tgt.conllu"], {"head_rules": DEFAULT_STYLE})

    def induce(ctx):
        from .induce import induce_grammar

        return induce_grammar(ctx.input("source"), ctx.input("target"), ctx.input("alignment"), ctx.output("grammar"))

    add("induce", induce, {"source": corpus("train.src.conllu"), "target": corpus("train.tgt.conllu"),
                           "alignment": corpus("train.align")}, ["grammar"], {"min_count": MIN_ET_COUNT})
    return out / "grammar"


def train(settings: TrainSettings, from_stage: str | None = None,
          implementations: dict[str, Callable] | None = None) -> dict:
    """Run (or resume) the pipeline; returns system.json's content."""
    settings.out = Path(settings.out).resolve()
    if from_stage is not None and from_stage not in ALL_STAGES:
        raise UsageError(f"--from {from_stage}: no such stage (stages: {', '.join(ALL_STAGES)})")
    counts = check_inputs(settings)
    source_tokenizer = tokenizer_for(settings.source_lang, warn=lambda m: runner.log(f"warning: {m}"))
    target_tokenizer = tokenizer_for(settings.target_lang, warn=lambda m: runner.log(f"warning: {m}"))
    cluster = Cluster(settings.cluster)
    stages = build_stages(settings, implementations, cluster)
    names = [stage.name for stage in stages]
    if from_stage is not None and from_stage not in names:
        raise UsageError(f"--from {from_stage}: this run has no {from_stage} stage (its stages: {', '.join(names)})")
    from .requirements import check_tools

    check_tools([name for name in names if not (implementations and name in implementations)])
    run = runner.Runner(settings.out)
    try:
        state = run.run(stages, from_stage)
    finally:
        cluster.close()
    content = describe(settings, state, counts, source_tokenizer.name, target_tokenizer.name, run.checksums,
                       names, PARSERS.get(settings.target_lang), DEPENDENCY_PARSERS.get(settings.source_lang))
    write_system_json(settings.out / SYSTEM, content)
    content["ran"], content["skipped"] = run.ran, run.skipped  # (not in the file: it describes the system)
    return content
