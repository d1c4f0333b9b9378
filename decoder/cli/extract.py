"""`cky extract`: GHKM string-to-tree rules from a parsed, word-aligned corpus.

    cky extract --source train.es --trees train.trees --alignment train.align \\
        --out rules.gz --summary summary.json --glue glue.gz --unknown-labels unknown-labels.txt

Filter an existing table to a test set (no extraction):

    cky extract --rules rules.gz --filter-to test.es --out rules.test.gz

With the extraction flags, --filter-to filters the new table while it is written.
With --cluster local[:N] or tcp://SCHEDULER:PORT the counting runs as Dask tasks
(decoder.extract.pipeline); the table is the same.

The SDIG system (Ding and Palmer 2005; decoder.sdig.train): induce its grammar from a
`cky data bible-es-en --dependencies` build (train.es.conllu, train.en.conllu,
train.align) into a grammar directory, and optionally write a `system = "sdig"` config:

    cky extract --system sdig --data-dir BUILD --out GRAMMAR_DIR [--config-out sdig.toml --lm BUILD/lm.bin]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import UsageError
from ..extract.corpus import CorpusPaths
from ..extract.filtering import filter_table
from ..extract.pipeline import ExtractionConfig, run_extraction
from ..extract.rules import Limits
from .arguments import add_quiet, add_workers, count


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..sdig.grammar import MIN_ET_COUNT

    parser.formatter_class = argparse.ArgumentDefaultsHelpFormatter
    parser.epilog = __doc__.split("\n\n", 1)[1]
    parser.add_argument("--system", choices=("ghkm", "sdig"), default="ghkm",
                        help="ghkm: a GHKM rule table (the flags below); sdig: an SDIG grammar directory "
                             "(--data-dir, --out, the sdig group)")
    io = parser.add_argument_group("input and output")
    io.add_argument("--source", help="source sentences, one tokenized sentence a line")
    io.add_argument("--trees", help="target parse trees, one Penn bracketed tree a line")
    io.add_argument("--alignment", help="word alignments, Pharaoh i-j with the source index first")
    io.add_argument("--target", help="optional target tokens: a tree with another number of leaves is a bad line")
    io.add_argument("--out", required=True, help="rule table to write (Moses format, sorted, .gz); "
                                                 "with --system sdig the grammar directory")
    io.add_argument("--summary", help="JSON summary to write")
    io.add_argument("--glue", help="glue grammar to write (Moses format)")
    io.add_argument("--glue-label", default="Q", help="LHS of the glue rules (the decoder's goal symbol)")
    io.add_argument("--unknown-labels", help="unknown-word labels to write (lines 'LABEL probability')")
    io.add_argument("--unknown-min-frequency", type=float, default=0.03,
                    help="drop unknown-word labels rarer than this")
    io.add_argument("--rules", help="an existing table to filter with --filter-to (no extraction)")
    io.add_argument("--filter-to", metavar="TEST", help="keep only the rules that can match a sentence of TEST")
    lim = parser.add_argument_group("rule size (composed rules; minimal rules are always kept)")
    defaults = Limits()
    lim.add_argument("--compose", type=count(1, " (1: minimal rules only)"), default=defaults.compose,
                     help="most minimal rules in a composed rule (1: minimal rules only)")
    lim.add_argument("--max-nonterminals", type=count(0), default=defaults.max_nonterminals,
                     help="most nonterminals on the source side")
    lim.add_argument("--max-symbols", type=count(1), default=defaults.max_symbols,
                     help="most symbols (words + nonterminals) on the source side")
    lim.add_argument("--max-depth", type=count(0), default=defaults.max_depth,
                     help="deepest target tree fragment (a slot, word or preterminal is depth 0)")
    lim.add_argument("--min-count", type=float, default=None,
                     help="drop rules seen fewer times than this (default 0; with --system sdig: the induced ET "
                          f"pairs larger than word-to-word, default {MIN_ET_COUNT})")
    sdig = parser.add_argument_group("--system sdig (docs/sdig.md)")
    sdig.add_argument("--data-dir", help="a `cky data --dependencies` build: train.{es,en}.conllu, train.align")
    sdig.add_argument("--limit", type=count(1), help="use only the first N training verses")
    sdig.add_argument("--maxent-sentences", type=count(1), default=2000, help="verses the max-ent scorer learns from")
    sdig.add_argument("--threshold", type=float, default=0.5, help="max-ent probability of a kept word pair")
    sdig.add_argument("--config-out", help="also write a `system = \"sdig\"` decoder config using the grammar")
    sdig.add_argument("--lm", help="the LM the written config names (with --config-out)")
    run = parser.add_argument_group("run")
    add_workers(run, default=0, minimum=0, meaning=" (0 means all cores)", help="worker processes (default 0: all cores)",
                aliases=("--jobs",))
    run.add_argument("--cluster", metavar="SPEC",
                     help="count on Dask instead of --workers processes: local, local:N or tcp://SCHEDULER:PORT "
                          "(the workers must see the corpus and --tmp-dir at the same paths)")
    run.add_argument("--shards", type=count(1), default=16, help="temporary shards (more: less memory)")
    run.add_argument("--chunk-size", type=count(1), default=250, help="sentence pairs per task")
    run.add_argument("--tmp-dir", help="where the temporary shards go (None: a new directory beside --out)")
    run.add_argument("--compress-level", type=count(0, maximum=9), default=3, help="gzip level of the table")
    add_quiet(run, aliases=("--no-progress",))
    run.add_argument("--keep-tmp", action="store_true", help="keep the temporary shards")


def extract_sdig(args: argparse.Namespace) -> int:

    from ..sdig.train import train_grammar
    from ..tune.config import write_config

    if not args.data_dir:
        raise UsageError("--system sdig needs --data-dir (a `cky data --dependencies` build)")
    counts = {} if args.min_count is None else {"min_count": args.min_count}
    stats = train_grammar(args.data_dir, args.out, limit=args.limit, maxent_sentences=args.maxent_sentences,
                          threshold=args.threshold, **counts)  # a missing or bad file: one line (decoder.cli.run)
    if args.config_out:
        here = os.path.dirname(os.path.abspath(args.config_out))
        config = {"system": "sdig", "grammar": os.path.relpath(os.path.abspath(args.out), here)}
        if args.lm:
            config["lm"] = os.path.relpath(os.path.abspath(args.lm), here)
        write_config(config, args.config_out, header=f"SDIG grammar from {args.data_dir} (cky extract --system sdig)")
    print(json.dumps({k: v for k, v in stats.items() if k != "maxent"}), file=sys.stderr)
    return 0


def check_files(args: argparse.Namespace) -> None:
    """UsageError if an output is one of the inputs or two outputs are one file (decoder.outputs)."""
    from ..grammar import feature_names_path
    from ..outputs import check_distinct_files, check_writable, is_stream

    inputs = {"--source": args.source, "--trees": args.trees, "--alignment": args.alignment, "--target": args.target,
              "--rules": args.rules, "--filter-to": args.filter_to, "--lm": args.lm}
    outputs = {"--out": args.out, "--summary": args.summary, "--glue": args.glue,
               "--unknown-labels": args.unknown_labels, "--config-out": args.config_out}
    if args.system == "ghkm":  # the tables' column names, beside them
        outputs["the names of --out's columns"] = feature_names_path(args.out)
        if args.glue:
            outputs["the names of --glue's columns"] = feature_names_path(args.glue)
    check_distinct_files(inputs, outputs)
    if args.system == "ghkm":  # (with sdig, --out is a directory)
        for path in outputs.values():
            if path is not None and not is_stream(path) and os.path.isdir(os.path.dirname(os.path.abspath(path))):
                check_writable(path)  # a directory, or a read-only place: before the work (a missing directory is made)


def main(args: argparse.Namespace) -> int:
    check_files(args)  # before anything is read or written
    if args.system == "sdig":
        return extract_sdig(args)
    if args.rules:
        if not args.filter_to:
            raise UsageError("--rules needs --filter-to")
        read, kept = filter_table(args.rules, args.filter_to, args.out)
        print(f"kept {kept} of {read} rules", file=sys.stderr)
        return 0
    missing = [flag for flag, value in (("--source", args.source), ("--trees", args.trees),
                                        ("--alignment", args.alignment)) if not value]
    if missing:
        raise UsageError(f"missing {', '.join(missing)} (or give --rules and --filter-to)")
    config = ExtractionConfig(
        corpus=CorpusPaths(args.source, args.trees, args.alignment, args.target),
        out=args.out, summary=args.summary, glue=args.glue, unknown_labels=args.unknown_labels,
        limits=Limits(args.compose, args.max_nonterminals, args.max_symbols, args.max_depth),
        jobs=args.workers, shards=args.shards, chunk_size=args.chunk_size, tmp_dir=args.tmp_dir,
        min_count=args.min_count or 0.0, filter_to=args.filter_to, glue_label=args.glue_label,
        unknown_min_frequency=args.unknown_min_frequency, compress_level=args.compress_level,
        progress=not args.quiet, keep_tmp=args.keep_tmp, cluster=args.cluster,
    )
    summary = run_extraction(config)  # a bad file: one line (decoder.cli.run)
    brief = {k: summary[k] for k in ("sentence_pairs", "skipped", "minimal_rules", "composed_rules",
                                     "distinct_rules", "nonterminals_per_rule", "seconds", "pairs_per_second")}
    print(json.dumps(brief), file=sys.stderr)
    return 0
