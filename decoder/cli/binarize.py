"""`cky binarize`: binarize a Moses rule table and report the grammar cost."""
from __future__ import annotations

import json

from ..grammar import read_rules
from ..outputs import atomic_files, check_distinct_files, check_writable, is_stream
from ..binarize import NON_BINARIZABLE_POLICIES, STRATEGIES, binarize, write_binary_grammar
from .arguments import count


def add_arguments(parser) -> None:
    parser.add_argument("input", metavar="IN", help="rule table in Moses format (plain or .gz)")
    parser.add_argument("output", metavar="OUT", help="binary grammar (text; gzip when it ends in .gz)")
    parser.add_argument("--strategy", choices=STRATEGIES, default="left", help="binarization strategy (default: left)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random strategy (default: 0)")
    parser.add_argument("--report", metavar="REPORT.json", help="write the report as JSON here")
    parser.add_argument("--max-iterations", type=count(0), default=20, help="icr: maximum sweeps (default: 20)")
    parser.add_argument("--non-binarizable", choices=NON_BINARIZABLE_POLICIES, default="monolingual",
                        help="what to do with rules whose permutation is not binarizable (default: binarize "
                             "them monolingually and flag them)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args) -> int:
    # Before any work: an output that is the input (or both outputs one file), or that cannot be written.
    check_distinct_files({"IN": args.input}, {"OUT": args.output, "--report": args.report})
    for path in (args.output, args.report):
        if path is not None and not is_stream(path):
            check_writable(path)
    rules = list(read_rules(args.input, uniform_scores=True))  # a bad table: one line (decoder.cli.run)
    grammar = binarize(rules, args.strategy, seed=args.seed, max_iterations=args.max_iterations,
                       non_binarizable=args.non_binarizable, progress=not args.quiet)
    report = grammar.report
    # Both files appear together when both are whole; a failure (or a kill) leaves neither, nor a part.
    with atomic_files() as files:
        write_binary_grammar(grammar, files.path(args.output))
        if args.report:
            with open(files.path(args.report), "w", encoding="utf-8") as out:
                json.dump(report, out, indent=2)
                out.write("\n")
    print(summary(report))
    return 0


def summary(report: dict) -> str:
    lines = [
        f"strategy             {report['strategy']}",
        f"source rules         {report['source_rules']:,}",
        f"binary rules         {report['binary_rules']:,}",
        f"virtual nonterminals {report['virtual_nonterminals']:,}",
        f"non-binarizable      {report['non_binarizable']:,} ({report['non_binarizable_policy']})",
        f"cost Q(G')           {report['cost']:,}",
        f"seconds              {report['seconds']:.2f}",
    ]
    if report["iterations"]:
        lines.append("icr cost by sweep    " + " -> ".join(f"{q:,}" for q in report["iterations"]))
    return "\n".join(lines)
