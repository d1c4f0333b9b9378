"""`cky data bible-es-en [--small] [--out DIR] [--rest-lm]`: build the Spanish-English Bible data.

Writes DIR/{train,dev,test}.{es,en,ids,align}, DIR/train.trees, DIR/lm.bin and
DIR/manifest.json (see models/bible-es-en/README.md); with --rest-lm also
DIR/lm.rest.bin (the LM with rest costs). Everything it needs is
installed when missing; parses are cached in chunks, so an interrupted run
resumes.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError

DATASETS = ("bible-es-en",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", choices=DATASETS, help="the data set to build")
    parser.add_argument("--small", action="store_true",
                        help="only the first --small-verses training verses (builds in minutes)")
    parser.add_argument("--small-verses", type=int, default=3000, metavar="N",
                        help="training verses kept by --small (default 3000)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="output directory (default models/bible-es-en/build/, "
                             "or models/bible-es-en/build/small/ with --small)")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR",
                        help="cache directory (default models/bible-es-en/build/cache/)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="parser processes (default: all cores)")
    parser.add_argument("--processes", dest="workers", type=int, help=argparse.SUPPRESS)  # (its older name)
    parser.add_argument("--dependencies", action="store_true",
                        help="also write the parallel dependency trees of the SDIG system "
                             "({train,dev,test}.es.conllu, train.en.conllu; docs/sdig.md); "
                             "a finished build (manifest.json) is not rebuilt")
    parser.add_argument("--rest-lm", action="store_true",
                        help="also write DIR/lm.rest.bin, lm.bin's model with lower-order rest costs "
                             "(Heafield et al. 2012; KenLM rest_probing, loaded like lm.bin), from the "
                             "cached LM text; a finished build is not rebuilt")


def main(args: argparse.Namespace) -> int:
    from decoder.data import build

    out_dir = args.out or (build.DEFAULT_SMALL_OUT if args.small else build.DEFAULT_OUT)
    cache_dir = args.cache or build.DEFAULT_CACHE
    processes = build.default_processes() if args.workers is None else args.workers  # 0 is not 'all'
    if processes < 1 or args.small_verses < 1:
        raise UsageError("--workers and --small-verses must be at least 1")
    if not ((args.dependencies or args.rest_lm) and (out_dir / "manifest.json").exists()):
        build.build(out_dir.resolve(), cache_dir.resolve(), args.small, processes, args.small_verses)
    if args.rest_lm:
        build.build_rest_lm(out_dir.resolve(), cache_dir.resolve(), args.small)
    if args.dependencies:
        from decoder.data.dependencies import build_dependencies

        build_dependencies(out_dir.resolve(), cache_dir.resolve())
    return 0
