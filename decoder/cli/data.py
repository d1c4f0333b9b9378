"""`cky data RECIPE [--small] [--out DIR] [--rest-lm]`: build a Bible system (bible-es-en, bible-zh-en).

Each recipe pairs two Bibles by verse, writes plain raw parallel files into
DIR/raw/ and trains a system on them with the pipeline of `cky train`
(decoder.data.build); DIR/config.toml is the system, DIR/system.json
its description and scores, DIR/manifest.json the recipe's (see
models/RECIPE/README.md). Everything it needs is installed when missing;
every stage is cached, so an interrupted run resumes.

Weights: MERT on the recipe's dev set, except with --small where the recipe
ships weights tuned for its small system (decoder/tune/weights/RECIPE-small.toml,
bible-es-en): those, so that `make demo` builds in minutes (--tune to run MERT
anyway); --weights FILE gives others, --no-tune keeps the decoder's defaults.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError

DATASETS = ("bible-es-en", "bible-zh-en")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from decoder.train.pipeline import STAGES

    parser.add_argument("dataset", choices=DATASETS, help="the recipe to build")
    parser.add_argument("--small", action="store_true",
                        help="only the first --small-verses training verses (builds in minutes)")
    parser.add_argument("--small-verses", type=int, default=3000, metavar="N",
                        help="training verses kept by --small (default 3000)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="output directory (default: models/RECIPE/build[/small] in a clone of the "
                             "repository, else $CKY_DATA/RECIPE[/small], or one under ~/.cache: README, The two commands)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="processes for parsing, tokenizing, extraction and decoding (default: all cores)")
    parser.add_argument("--processes", dest="workers", type=int, help=argparse.SUPPRESS)  # the earlier name
    parser.add_argument("--from", dest="from_stage", choices=STAGES, metavar="STAGE",
                        help="redo this stage of `cky train` and everything after it")
    weights = parser.add_mutually_exclusive_group()
    weights.add_argument("--no-tune", action="store_true", help="no MERT: the config keeps the default weights")
    weights.add_argument("--weights", type=Path, metavar="FILE",
                         help="no MERT: the config gets the [weights] of this TOML file")
    weights.add_argument("--tune", action="store_true",
                         help="MERT on the dev set even where the recipe ships weights (bible-es-en --small)")
    parser.add_argument("--dependencies", action="store_true",
                        help="bible-es-en: also write the parallel dependency trees of the SDIG system "
                             "({train,dev,test}.es.conllu, train.en.conllu; docs/sdig.md); "
                             "a finished build (manifest.json) is not rebuilt")
    parser.add_argument("--rest-lm", action="store_true",
                        help="also write DIR/lm.rest.bin, lm.bin's model with lower-order rest costs "
                             "(Heafield et al. 2012; KenLM rest_probing, loaded like lm.bin); a finished build "
                             "is not rebuilt")


def main(args: argparse.Namespace) -> int:
    from decoder.data import build

    out_dir = (args.out or build.default_out(args.dataset, args.small)).resolve()
    workers = build.default_processes() if args.workers is None else args.workers  # 0 is not 'all'
    if workers < 1 or args.small_verses < 1:
        raise UsageError("--workers and --small-verses must be at least 1")
    if args.dependencies and args.dataset != "bible-es-en":
        raise UsageError("--dependencies: only bible-es-en has a source-language dependency parser")
    weights = args.weights
    if weights is None and not (args.tune or args.no_tune):
        weights = build.recipe_weights(args.dataset, args.small)
    if not ((args.dependencies or args.rest_lm) and (out_dir / "manifest.json").exists()):
        build.build(args.dataset, out_dir, args.small, workers, args.small_verses, args.from_stage,
                    tune=not args.no_tune, weights=weights)
    if args.rest_lm:
        build.build_rest_lm(out_dir)
    if args.dependencies:
        from decoder.data.dependencies import build_dependencies

        build_dependencies(out_dir, out_dir / "cache")
    return 0
