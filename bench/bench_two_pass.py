"""Cube pruning against two-pass search (Venugopal et al. 2007, Figures 3-5 and Table 1): a sketch.

One store, one LM, one test file, the same weights for both searches. Sweeps cube
pruning's pop limit and two-pass search's first-pass pop limit x second-pass beam
(agenda size fixed at 1000, as in the paper), and writes one JSON object per run:
model cost (minus the summed model score), LM queries (all and novel, i.e. LM cache
misses), CPU seconds, agenda pops / unwindings, and BLEU against the reference.

    python -m bench.bench_two_pass --store S --lm LM --test test.es --ref test.en \
        --sentences 200 --out results/two_pass.json

Until the lead wires `search = "two-pass"` into decoder.decoder.Decoder, the two-pass
runs swap `Decoder.search` for a TwoPassDecoder over the same store, LM, weights and
search space (what the setting will do).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

CUBE_POP_LIMITS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
FIRST_PASS_POP_LIMITS = (5, 10, 20, 50)
SECOND_PASS_BEAMS = (0.5, 1.0, 2.0, 5.0, 10.0)
AGENDA_LIMIT = 1000


def run(decoder, sentences, references, label: str, parameters: dict) -> dict:
    """Decode every sentence with decoder.search as configured; totals and BLEU."""
    from decoder.evaluate import corpus_bleu

    totals = dict(edges_proposed=0, edges_kept=0, lm_queries=0, lm_queries_novel=0, agenda_pops=0, unwindings=0)
    score = 0.0
    outputs = []
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    for words in sentences:
        translation = decoder.translate(words)
        for key in totals:
            totals[key] += int(translation.stats.get(key, 0))
        score += translation.score
        outputs.append(translation.text)
    cpu = time.process_time() - cpu_started
    out = {"search": label, **parameters, "sentences": len(sentences), "model_cost": round(-score, 4),
           "cpu_seconds": round(cpu, 3), "wall_seconds": round(time.perf_counter() - wall_started, 3), **totals}
    if references is not None:
        out["bleu"] = round(corpus_bleu(outputs, [references[: len(outputs)]]).score, 2)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--lm", required=True)
    parser.add_argument("--test", required=True, help="source sentences, one per line, tokenized")
    parser.add_argument("--ref", help="reference translations (for BLEU)")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--glue", default="builtin")
    parser.add_argument("--cube-pop-limits", type=int, nargs="*", default=list(CUBE_POP_LIMITS))
    parser.add_argument("--first-pass-pop-limits", type=int, nargs="*", default=list(FIRST_PASS_POP_LIMITS))
    parser.add_argument("--beams", type=float, nargs="*", default=list(SECOND_PASS_BEAMS))
    parser.add_argument("--out", required=True, help="JSON file: a list of runs")
    args = parser.parse_args(argv)

    from decoder.decoder import Decoder
    from decoder.lm import LanguageModel
    from decoder.search.two_pass import TwoPassDecoder
    from decoder.store import GrammarStore

    store = GrammarStore.open(args.store)
    lm = LanguageModel(args.lm)
    decoder = Decoder(store, lm, glue=args.glue)
    cube = decoder.search
    with open(args.test, encoding="utf-8") as f:
        sentences = [line.split() for line in f][: args.sentences]
    references = None
    if args.ref:
        with open(args.ref, encoding="utf-8") as f:
            references = [line.rstrip("\n") for line in f][: args.sentences]

    runs = []
    for pop_limit in args.cube_pop_limits:
        cube.configure(pop_limit=pop_limit)
        decoder.search = cube
        runs.append(run(decoder, sentences, references, "cube", {"pop_limit": pop_limit}))
        print(json.dumps(runs[-1]), file=sys.stderr)
    two_pass = TwoPassDecoder(store, lm, cube.weights, cube.space, agenda_limit=AGENDA_LIMIT)
    decoder.search = two_pass
    for pop_limit in args.first_pass_pop_limits:
        two_pass.configure(pop_limit=pop_limit)
        for beam in args.beams:
            two_pass.configure_second_pass(beam=beam if beam > 0 else math.inf)
            runs.append(run(decoder, sentences, references, "two-pass",
                            {"pop_limit": pop_limit, "beam": beam, "agenda_limit": AGENDA_LIMIT}))
            print(json.dumps(runs[-1]), file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(runs, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
