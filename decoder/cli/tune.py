"""`cky tune`: tune the feature weights of a decoder config with MERT on a dev set.

    cky tune --config model/config.toml --dev-src dev.es --dev-ref dev.en [--out model/tuned.toml]

Each iteration decodes the dev set's k-best lists (--kbest, default 100) with
the current weights, merges them with all earlier lists and optimizes BLEU
over them (decoder.tune.mert). The new config is the input config with the
tuned weights (and a header saying how they were obtained), its paths
rewritten to load from where it is written; a JSON log of every iteration is
written beside it. The work is decoder.tune.run.tune; this module is the command.

After each iteration MERT's state is saved beside the output (OUT.mert.npz,
decoder.tune.checkpoint): Ctrl-C exits 130 saying so, and --resume continues
from the last finished iteration exactly as the run would have gone on (the
same config, dev set and settings; a longer --max-iterations is fine).
"""
from __future__ import annotations

import argparse
import logging
import sys

from ..errors import InputError
from ..evaluate import TOKENIZERS, read_lines
from ..outputs import check_distinct_files
from ..settings import MAX_KBEST
from ..tune.checkpoint import checkpoint_path
from ..tune.run import default_output, tune
from .arguments import count, non_negative

log = logging.getLogger("cky.tune")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="decoder config (TOML) with the starting weights")
    parser.add_argument("--dev-src", required=True, help="dev source sentences, one a line")
    parser.add_argument("--dev-ref", required=True, nargs="+", help="dev reference file(s)")
    parser.add_argument("--out", help="tuned config to write (default: CONFIG with .tuned.toml)")
    parser.add_argument("--kbest", type=count(1, maximum=MAX_KBEST), default=100,
                        help=f"k-best list size per iteration (default: 100, at most {MAX_KBEST})")
    parser.add_argument("--non-unique", action="store_true",
                        help="k-best derivations instead of distinct translations (faster k-best)")
    parser.add_argument("--max-iterations", type=count(1), default=10, help="most decoding iterations (default: 10)")
    parser.add_argument("--restarts", type=count(0), default=20, help="random starting points per optimization "
                                                                 "(default: 20)")
    parser.add_argument("--random-directions", type=count(0), default=0,
                        help="random search directions besides the coordinate axes (default: 0)")
    parser.add_argument("--trust-region", type=non_negative(), default=0.2,
                        help="most each weight moves per iteration, relative to its size "
                             "(default: 0.2; 0: unbounded, as in Och 2003)")
    parser.add_argument("--fixed", nargs="*", default=[], metavar="FEATURE", help="features not to tune")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random restarts (default: 0)")
    parser.add_argument("--tokenize", choices=TOKENIZERS, default="13a",
                        help="sacrebleu tokenizer for BLEU, as in cky evaluate (default: 13a)")
    parser.add_argument("--workers", type=count(1), default=1, help="decoding processes (default: 1)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run from its last finished iteration (its state is saved "
                             "beside --out as OUT.mert.npz)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def main(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    sentences = read_lines(args.dev_src)  # a missing file: one line (decoder.cli.run)
    if not sentences:  # nothing to decode, no BLEU to optimize
        raise InputError(args.dev_src, "is empty: the dev set needs at least one sentence to tune on")
    references = [read_lines(path) for path in args.dev_ref]
    for path, stream in zip(args.dev_ref, references):
        if len(stream) != len(sentences):
            raise InputError(path, f"has {len(stream)} lines but {args.dev_src} has {len(sentences)}")
    out = args.out or default_output(args.config)
    check_distinct_files({"--config": args.config, "--dev-src": args.dev_src,
                          **{f"--dev-ref {path}": path for path in args.dev_ref}},
                         {"--out": out, "its log": out + ".log.json", "its checkpoint": checkpoint_path(out)})
    # a config, store or LM mistake: one line naming the file (decoder.cli.run)
    summary = tune(args.config, sentences, references, out, args.kbest, args.max_iterations, args.restarts,
                   args.random_directions, args.fixed, args.seed, args.tokenize, args.workers,
                   progress=not args.quiet, unique=not args.non_unique, trust_region=args.trust_region,
                   resume=args.resume)
    for step in summary["history"]:
        optimized = step.get("optimized_bleu")
        print(f"iteration {step['iteration']}: dev BLEU {step['decoded_bleu']:.2f}"
              + (f" -> {optimized:.2f} on {step['pool_size']} hypotheses" if optimized is not None else ""))
    print(f"{summary['stopped']}; tuned weights written to {out} (log: {out}.log.json)")
    return 0

