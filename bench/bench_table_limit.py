"""Benchmark of the rule-table limit (issue 16): model score, speed and BLEU against the pop limit.

    python -m bench.bench_table_limit [--sentences 100] [--table-limits 0 20] [--rule-orders score estimate]
                                      [--pop-limits 10 30 100 300 1000] [--store DIR --lm FILE ...]

Data: the Bible demo system (models/bible-es-en/build/store, lm.bin, glue.gz, the
first N verses of test.es and test.en), with the default weights. One decoder is opened; for
each rule order (the order cube pruning tries a key's rules in: rule score, or rule score plus
the weighted LM estimate of the rule's words) and table limit its grammar arrays are prepared (decoder.reconfigure(table_limit=...); their CPU
time, measured on a GrammarArrays made alone, is the open-time cost of the limit) and the verses are decoded at each pop limit. Per run:
the average model score per verse, CPU seconds per verse (time.process_time around translate),
corpus BLEU (sacrebleu, decoder.evaluate), edges proposed and novel LM queries per verse; and,
against the unlimited table ordered by rule score at the same pop limit, on how many verses the limited table's
derivation scores at least as well (the model is the same: the limit only removes rules).

Writes bench/results/table_limit.json and bench/results/table_limit.md.
"""
from __future__ import annotations

import argparse
import json
import os
import time

from bench import RESULTS
from bench.machine import machine_info

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = "/work/main/models/bible-es-en/build"


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default=os.path.join(BUILD, "store"))
    parser.add_argument("--lm", default=os.path.join(BUILD, "lm.bin"))
    parser.add_argument("--glue", default=os.path.join(BUILD, "glue.gz"))
    parser.add_argument("--source", default=os.path.join(BUILD, "test.es"))
    parser.add_argument("--references", default=os.path.join(BUILD, "test.en"))
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--table-limits", type=int, nargs="+", default=[0, 20])
    parser.add_argument("--rule-orders", nargs="+", default=["score", "estimate"])
    parser.add_argument("--pop-limits", type=int, nargs="+", default=[10, 30, 100, 300, 1000])
    parser.add_argument("--out", default=RESULTS)
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_arguments(argv)
    from decoder.decoder import Decoder
    from decoder.evaluate import corpus_bleu, read_lines
    from decoder.search.grammar_arrays import GrammarArrays

    sources = read_lines(args.source)[:args.sentences]
    references = read_lines(args.references)[:args.sentences]
    started = time.process_time()
    decoder = Decoder(args.store, args.lm, glue=args.glue, table_limit=0, rule_order="score")
    open_cpu = time.process_time() - started
    runs, preparation = [], {}
    for rule_order, table_limit in [(order, limit) for order in args.rule_orders for limit in args.table_limits]:
        name = f"{rule_order} {table_limit}"
        cpu = time.process_time()
        grammar = GrammarArrays(decoder.store, decoder.lm, decoder.weights, decoder.space, table_limit, rule_order)
        preparation[name] = {"grammar_arrays_cpu_seconds": round(time.process_time() - cpu, 3),
                             "rule_order": rule_order, **grammar.table_limit.stats()}
        del grammar
        decoder.reconfigure(table_limit=table_limit, rule_order=rule_order)
        print(f"{name}: {preparation[name]}", flush=True)
        for pop_limit in args.pop_limits:
            decoder.reconfigure(pop_limit=pop_limit)
            scores, texts, edges, novel = [], [], 0, 0
            cpu = time.process_time()
            for source in sources:
                translation = decoder.translate(source)
                scores.append(translation.score)
                texts.append(translation.text)
                edges += translation.stats.get("edges_proposed", 0)
                novel += translation.stats.get("lm_queries_novel", 0)
            seconds = time.process_time() - cpu
            run = {"rule_order": rule_order, "table_limit": table_limit, "pop_limit": pop_limit,
                   "model_score": sum(scores) / len(scores), "cpu_seconds_per_verse": seconds / len(sources),
                   "bleu": corpus_bleu(texts, references).score, "edges_proposed_per_verse": edges / len(sources),
                   "lm_queries_novel_per_verse": novel / len(sources), "scores": scores}
            runs.append(run)
            print(f"  {name} pop {pop_limit:5d}: score {run['model_score']:9.4f}  {run['cpu_seconds_per_verse']:.3f} s/verse  "
                  f"BLEU {run['bleu']:.2f}", flush=True)
    _compare(runs)
    result = {"machine": machine_info(), "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "data": {"store": args.store, "lm": args.lm, "glue": args.glue, "source": args.source,
                       "references": args.references, "sentences": len(sources), "weights": "defaults"},
              "decoder_open_cpu_seconds": round(open_cpu, 3), "preparation": preparation, "runs": runs}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "table_limit.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "table_limit.md"), "w") as f:
        f.write(markdown(result))
    print(markdown(result))
    return result


def _compare(runs: list[dict]) -> None:
    """Per run with a table limit: verses scoring at least the unlimited table's at the same pop
    limit, and at least its best over every pop limit (the best score found for the verse)."""
    unlimited = {run["pop_limit"]: run["scores"] for run in runs
                 if run["table_limit"] == 0 and run["rule_order"] == "score"}
    if not unlimited:
        return
    best = [max(values) for values in zip(*unlimited.values())]
    for run in runs:
        same = unlimited.get(run["pop_limit"])
        if same is not None:
            run["verses_at_least_unlimited"] = sum(a >= b - 1e-6 for a, b in zip(run["scores"], same))
        run["verses_at_least_unlimited_best"] = sum(a >= b - 1e-6 for a, b in zip(run["scores"], best))


def markdown(result: dict) -> str:
    data, lines = result["data"], []
    lines.append("# Rule-table limit: model score, speed and BLEU against the pop limit\n")
    lines.append(f"{result['created']}, `python -m bench.bench_table_limit`, {data['sentences']} verses of "
                 f"{data['source']}, store {data['store']}, LM {data['lm']}, glue {data['glue']}, default weights; "
                 f"{result['machine'].get('cpu', '')}. Seconds are CPU seconds of the decoding process "
                 f"(translate: search and read-back).\n")
    lines.append("Open-time cost (preparing the grammar arrays, CPU s) and rules kept:\n")
    lines.append("| rule order | table_limit | grammar arrays (CPU s) | source rules kept | binary rules kept |")
    lines.append("| --- | --- | --- | --- | --- |")
    for info in result["preparation"].values():
        lines.append(f"| {info['rule_order']} | {info['table_limit']} | {info['grammar_arrays_cpu_seconds']:.2f} | {info['source_rules_kept']:,} of "
                     f"{info['source_rules']:,} | {info['binary_rules_kept']:,} of {info['binary_rules']:,} |")
    lines.append(f"\n(the whole decoder open, LM included, with table_limit 0 and rule order score: {result['decoder_open_cpu_seconds']:.2f} CPU s)\n")
    lines.append("| rule order | table_limit | pop limit | avg model score | CPU s/verse | BLEU | edges/verse | novel LM queries/verse "
                 "| verses >= score order, unlimited (same pop) | verses >= its best |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for run in result["runs"]:
        lines.append(f"| {run['rule_order']} | {run['table_limit']} | {run['pop_limit']} | {run['model_score']:.4f} | "
                     f"{run['cpu_seconds_per_verse']:.3f} | {run['bleu']:.2f} | {run['edges_proposed_per_verse']:.0f} | "
                     f"{run['lm_queries_novel_per_verse']:.0f} | {run.get('verses_at_least_unlimited', '-')} | "
                     f"{run.get('verses_at_least_unlimited_best', '-')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
