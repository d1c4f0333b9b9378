"""`cky train`: from a plain parallel corpus to a tuned system, in one resumable command.

    cky train --source corpus.xx --target corpus.en --source-lang xx --target-lang en --out DIR \\
              [--system ghkm|sdig] [--dev dev.xx dev.en] [--test test.xx test.en] \\
              [--lm-text more.en | --lm model.arpa|.bin] [--lm-order 5] [--strategy icr] [--workers N] \\
              [--cluster local[:N]|tcp://...] [--parse-cache PATH] [--from STAGE] [--no-tune]

Runs decoder.train.pipeline (stages: clean, split, tokenize, recase, parse, align, lm,
extract, compile, tune, evaluate; with --system sdig, the dependency tree-to-tree system of
Ding and Palmer 2005, source-dependencies, target-dependencies and induce instead of extract
and compile; see docs/train.md). Running the same command again skips the stages whose
inputs and settings are unchanged; --from STAGE redoes that stage and every later one.
DIR/config.toml is the system's decoder config (`cky translate --config DIR/config.toml`:
raw text in, detokenized text out), DIR/system.json describes it.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .arguments import count


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..binarize import STRATEGIES
    from ..settings import MAX_KBEST
    from ..config import SYSTEMS
    from ..sdig.parser import LANGUAGES as DEPENDENCY_PARSERS
    from ..train.pipeline import (ALL_STAGES, DEFAULT_LM_ORDER, DEFAULT_STRATEGY, DEFAULT_SYSTEM, MERT_ITERATIONS,
                                  MERT_KBEST)

    corpus = parser.add_argument_group("corpus")
    corpus.add_argument("--source", required=True, type=Path, help="source sentences, one a line (plain text)")
    corpus.add_argument("--target", required=True, type=Path, help="their translations, line by line (plain text)")
    corpus.add_argument("--source-lang", required=True, metavar="LANG",
                        help="source language code (its tokenizer: es; any other: the Unicode default, with a "
                             "warning)")
    corpus.add_argument("--target-lang", required=True, metavar="LANG", help="target language code (en: parsed "
                                                                              "with link-grammar)")
    corpus.add_argument("--dev", nargs=2, type=Path, metavar=("SRC", "TGT"),
                        help="dev set MERT tunes on (default: held out from the corpus)")
    corpus.add_argument("--test", nargs=2, type=Path, metavar=("SRC", "TGT"),
                        help="test set to score the system on (BLEU, chrF)")
    model = parser.add_argument_group("model")
    model.add_argument("--system", choices=SYSTEMS, default=DEFAULT_SYSTEM,
                       help=f"ghkm: string-to-tree rules (default); sdig: dependency tree-to-tree (Ding and Palmer "
                            f"2005), for a source language with a dependency parser "
                            f"({', '.join(DEPENDENCY_PARSERS)})")
    lm = model.add_mutually_exclusive_group()
    lm.add_argument("--lm-text", nargs="+", type=Path, default=[], metavar="FILE",
                    help="more target-language text for the language model (plain text)")
    lm.add_argument("--lm", type=Path, metavar="MODEL", help="a finished KenLM model (ARPA or binary) to use "
                                                              "instead of building one")
    model.add_argument("--lm-order", type=count(1), default=DEFAULT_LM_ORDER,
                       help=f"n-gram order of the LM built (default: {DEFAULT_LM_ORDER})")
    model.add_argument("--strategy", choices=STRATEGIES, default=DEFAULT_STRATEGY,
                       help=f"binarization strategy of the GHKM store (default: {DEFAULT_STRATEGY})")
    model.add_argument("--no-tune", action="store_true", help="no MERT: the config keeps the default weights")
    model.add_argument("--mert-iterations", type=count(1), default=MERT_ITERATIONS,
                       help=f"most MERT iterations (default: {MERT_ITERATIONS})")
    model.add_argument("--mert-kbest", type=count(1, maximum=MAX_KBEST), default=MERT_KBEST,
                       help=f"k-best list size per MERT iteration (default: {MERT_KBEST}, at most {MAX_KBEST})")
    run = parser.add_argument_group("run")
    run.add_argument("--out", required=True, type=Path, metavar="DIR", help="the system's directory")
    run.add_argument("--from", dest="from_stage", choices=ALL_STAGES, metavar="STAGE",
                     help=f"redo this stage and every later one ({', '.join(ALL_STAGES)})")
    run.add_argument("--workers", type=count(1), default=None,
                     help="processes for tokenizing, parsing, extracting and decoding (default: the available cores)")
    run.add_argument("--cluster", metavar="SPEC",
                     help="a Dask cluster to tokenize, parse, extract and decode the test set on: local[:N] or "
                          "tcp://HOST:PORT")
    run.add_argument("--parse-cache", type=Path, metavar="PATH",
                     help="the SQLite file of the parser's answers by sentence, to share with other systems "
                          "(default: DIR/cache/parse.sqlite)")
    run.add_argument("--quiet", action="store_true", help="no progress bars")


def main(args: argparse.Namespace) -> int:
    import os

    from ..train.pipeline import TrainSettings, train

    settings = TrainSettings(
        source=args.source, target=args.target, source_lang=args.source_lang, target_lang=args.target_lang,
        out=args.out, system=args.system, dev=tuple(args.dev) if args.dev else None, test=tuple(args.test) if args.test else None,
        lm_text=list(args.lm_text), lm=args.lm, lm_order=args.lm_order, strategy=args.strategy,
        workers=args.workers or len(os.sched_getaffinity(0)), cluster=args.cluster, parse_cache=args.parse_cache,
        tune=not args.no_tune, mert_iterations=args.mert_iterations, mert_kbest=args.mert_kbest,
        progress=not args.quiet)
    system = train(settings, from_stage=args.from_stage)
    out = settings.out
    print(f"stages run: {', '.join(system['ran']) or 'none'}; skipped (unchanged): "
          f"{', '.join(system['skipped']) or 'none'}")
    sizes, scores = system["sizes"], system["scores"]
    print(f"corpus: {sizes['corpus_pairs']} pairs, {sizes['clean_pairs']} after cleaning (log: {out / 'clean.log'}); "
          f"train {sizes['train_pairs']}, dev {sizes['dev_pairs'] or 0}"
          f"{' (held out)' if sizes['dev_held_out'] else ''}, test {sizes['test_pairs'] or 0}")
    model = (f"ET pairs: {sizes['et_pairs']}" if system["system"] == "sdig" else f"rules: {sizes['rules']}")
    print(f"{model}; " + "; ".join(f"{k} {v}" for k, v in scores.items()))
    print(f"config: {out / 'config.toml'} (system: {out / 'system.json'})")
    # the config records its languages: raw text in, detokenized and recased text out
    print(f"translate raw text: cky translate --config {out / 'config.toml'} < text.{settings.source_lang} "
          f"> text.{settings.target_lang}")
    return 0
