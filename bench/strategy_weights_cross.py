"""Edges per sentence of the left and icr stores under each of three weight vectors (research script).

    python bench/strategy_weights_cross.py RESULTS_JSON WORK_DIR OUT_JSON [SENTENCES] [POP_LIMIT]

RESULTS_JSON is a `cky bench` results.json whose run compiled its stores and configs under
WORK_DIR (`--work`); the weights are its common weights and the tuned weights of icr and random.
It separates the binarization's effect on the edges proposed from the weights' effect.
"""
import json
import sys

from decoder.benchmark.experiments import decode_with_stats, summarize_decoding
from decoder.experiment import bible_system, read_lines

results_path, work, out_path = sys.argv[1:4]
sentences = int(sys.argv[4]) if len(sys.argv) > 4 else 100
pop_limit = int(sys.argv[5]) if len(sys.argv) > 5 else 50
results = json.load(open(results_path, encoding="utf-8"))
system = bible_system(work, results["system"]["build"])
source, references = read_lines(system.test_src)[:sentences], read_lines(system.test_ref)[:sentences]
weights = {"build": results["common_weights"], "icr-tuned": results["bleu"]["icr"]["weights"],
           "random-tuned": results["bleu"]["random"]["weights"]}
out = {}
for strategy in ("left", "icr"):
    config = f"{system.work}/configs/{strategy}.toml"
    for name, vector in weights.items():
        summary = summarize_decoding(decode_with_stats(config, source, 1, weights=vector, pop_limit=pop_limit),
                                     references, "none")
        out[f"{strategy} store, {name} weights"] = {key: summary[key] for key in (
            "bleu", "edges_per_sentence", "edges_kept_per_sentence", "model_cost", "lm_queries_novel")}
        print(strategy, name, out[f"{strategy} store, {name} weights"], flush=True)
with open(out_path, "w", encoding="utf-8") as f:
    json.dump(out, f, indent=2)
