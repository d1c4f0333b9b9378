"""`python -m decoder.sdig train|tune|translate ...`: the SDIG system on pre-parsed CoNLL-U trees
(the `cky` commands take `system = "sdig"` configs; see docs/sdig.md).

    python -m decoder.sdig train DATA_DIR GRAMMAR_DIR [--limit N] [--word-baseline]
    python -m decoder.sdig tune GRAMMAR_DIR --trees dev.es.conllu --ref dev.en --out weights.toml [--lm ...]
    python -m decoder.sdig translate GRAMMAR_DIR --trees test.es.conllu [--lm lm.bin] [--beam 10]
        [--weights weights.toml] [--limit N] [--out hyp.en] [--trees-out hyp.conllu] [--ref test.en]

`translate` reads pre-parsed Spanish trees (CoNLL-U, as `cky data --dependencies` writes
them), writes one output line per tree, and with --ref prints BLEU and chrF (tokenized
text, sacrebleu with tokenize none) and the time per verse.
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoder.sdig")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train")
    train.add_argument("data_dir")
    train.add_argument("grammar_dir")
    train.add_argument("--limit", type=int, default=None)
    train.add_argument("--maxent-sentences", type=int, default=2000)
    train.add_argument("--threshold", type=float, default=0.5)
    train.add_argument("--min-count", type=float, default=None,
                       help="drop induced ET pairs larger than word-to-word seen fewer times "
                            "(default decoder.sdig.grammar.MIN_ET_COUNT)")
    train.add_argument("--refilter", metavar="GRAMMAR_DIR", default=None,
                       help="instead of training: copy this grammar with --min-count applied")
    train.add_argument("--word-baseline", action="store_true",
                       help="the word-based baseline grammar: Model 1 word ETs and word transitions only")
    tune = commands.add_parser("tune", help="MERT (decoder.tune.run_mert) on pre-parsed dev trees")
    tune.add_argument("grammar_dir")
    tune.add_argument("--trees", required=True)
    tune.add_argument("--ref", required=True)
    tune.add_argument("--lm", default=None)
    tune.add_argument("--weights", default=None, help="initial weights (TOML)")
    tune.add_argument("--beam", type=int, default=5)
    tune.add_argument("--reorder", action="store_true")
    tune.add_argument("--kbest", type=int, default=20)
    tune.add_argument("--limit", type=int, default=None)
    tune.add_argument("--iterations", type=int, default=5)
    tune.add_argument("--out", required=True, help="tuned weights (TOML)")
    translate = commands.add_parser("translate")
    translate.add_argument("grammar_dir")
    translate.add_argument("--trees", required=True)
    translate.add_argument("--lm", default=None)
    translate.add_argument("--weights", default=None)
    translate.add_argument("--beam", type=int, default=1)
    translate.add_argument("--reorder", action="store_true", help="use the grammar's child order model")
    translate.add_argument("--limit", type=int, default=None)
    translate.add_argument("--out", default=None)
    translate.add_argument("--trees-out", default=None)
    translate.add_argument("--ref", default=None)
    args = parser.parse_args(argv)

    if args.command == "train" and args.word_baseline:
        from .train import train_word_grammar

        print(json.dumps(train_word_grammar(args.data_dir, args.grammar_dir, limit=args.limit), indent=1))
        return 0
    if args.command == "train" and args.refilter:
        from .grammar import refilter_grammar

        print(json.dumps(refilter_grammar(args.refilter, args.grammar_dir, args.min_count or 1), indent=1))
        return 0
    if args.command == "train":
        from .grammar import MIN_ET_COUNT
        from .train import train_grammar

        stats = train_grammar(args.data_dir, args.grammar_dir, limit=args.limit,
                              maxent_sentences=args.maxent_sentences, threshold=args.threshold,
                              min_count=args.min_count if args.min_count is not None else MIN_ET_COUNT)
        print(json.dumps({k: v for k, v in stats.items() if k != "maxent"}, indent=1))
        return 0

    from .decoder import sdig_decoder_from_paths
    from .deptree import read_conllu

    decoder = sdig_decoder_from_paths(args.grammar_dir, args.lm, args.weights, beam_size=args.beam,
                                      reorder=args.reorder)
    if args.command == "tune":
        return _tune(decoder, args)
    trees = list(read_conllu(args.trees))[:args.limit]
    started, cpu_started = time.perf_counter(), time.process_time()
    results = [decoder.translate(tree) for tree in trees]
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.writelines(t.text + "\n" for t in results)
    if args.trees_out:
        with open(args.trees_out, "w", encoding="utf-8") as out:
            out.writelines(t.tree + "\n" for t in results)
    report = {"verses": len(results), "seconds": round(seconds, 2),
              "ms_per_verse": round(1000 * seconds / max(len(results), 1), 2),
              "cpu_ms_per_verse": round(1000 * cpu_seconds / max(len(results), 1), 2),
              "load_seconds": round(decoder.load_seconds, 1)}
    if args.ref:
        from ..evaluate import corpus_bleu, corpus_chrf, read_lines

        references = read_lines(args.ref)[:len(results)]
        hypotheses = [t.text for t in results]
        report["bleu"] = round(corpus_bleu(hypotheses, [references], tokenize="none").score, 2)
        report["chrf"] = round(corpus_chrf(hypotheses, [references]).score, 2)
    print(json.dumps(report), file=sys.stderr)
    return 0


def _tune(decoder, args) -> int:
    from ..evaluate import read_lines
    from ..tune import run_mert
    from .deptree import read_conllu
    from .search import FEATURES, FIXED_IN_TUNING, Search

    trees = list(read_conllu(args.trees))[:args.limit]
    references = read_lines(args.ref)[:len(trees)]
    names = [n for n in FEATURES if n != "lm" or decoder.lm is not None]

    def decode_kbest(weights: dict):
        decoder.search = Search(decoder.grammar, weights, decoder.lm, args.beam, args.reorder)
        return [[(t.text, t.features) for t in decoder.kbest(tree, args.kbest)] for tree in trees]

    initial = {n: decoder.search.weights()[n] for n in names}
    result = run_mert(decode_kbest, references, initial, max_iterations=args.iterations, tokenize="none",
                      fixed=FIXED_IN_TUNING)
    with open(args.out, "w", encoding="utf-8") as out:
        out.write("[weights]\n" + "".join(f"{n} = {v:.6g}\n" for n, v in result.weights.items()))
    print(json.dumps({"dev_bleu": result.bleu, "weights": result.weights}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
