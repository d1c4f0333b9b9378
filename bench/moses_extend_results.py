"""Moses' per-verse scores over more verses: a results file extended by a bench.bench_moses run on the
verses that follow it (no Moses run here).

    python -m bench.bench_moses --moses-bin MOSES --skip 100 --sentences 100 --moses-only \\
        --moses-kinds default --moses-jobs 1 --skip-fixture --work build/moses200 --out build/moses200/out
    python -m bench.moses_extend_results bench/results/moses_default100_verses100.json \\
        build/moses200/out/moses.json --out bench/results/moses_default100_verses200.json

The base file (bench_moses' moses.json or a file of that layout, such as moses_default100_verses100.json)
covers verses skip+1 .. skip+sentences of the source; the extension must be a bench_moses run of the
same config, rule table and table limit starting right after them (its --skip). For every Moses run
of the base that the extension also has (by name: the same kind and pop limit), the scores are
concatenated and the average recomputed; the extension's run itself (CPU, wall seconds, texts, checks,
ini) is kept under "verses_A_B" (1-based, inclusive). Refuses to write if any of the extension's
verses fails one of the three checks (bench.bench_moses: LM = KenLM, total = weights . features, our
score of the derivation = total - offset), so a file made here holds only checked scores.
"""
from __future__ import annotations

import argparse
import json
import sys

RUN_DETAILS = ("kind", "pop_limit", "ini", "texts", "process_cpu_seconds", "load_cpu_seconds",
               "decode_cpu_seconds_per_verse", "reported_cpu_seconds_per_verse", "reported_wall_seconds_per_verse",
               "wall_seconds", "load_average", "checks")
CHECKS = ("lm_vs_kenlm_ok", "total_vs_weights_dot_features_ok", "our_score_vs_total_minus_offset_ok")


def extend(base: dict, extension: dict, note: str = "", extension_path: str | None = None) -> dict:
    """The base results with the extension's verses appended (module docstring). An extension that
    does not continue the base (other model, other verses, failed checks) is an InputError naming
    extension_path."""
    from decoder.errors import InputError

    def refuse(message: str) -> InputError:
        return InputError(extension_path, message)

    b, e = base["demo"], extension["demo"]
    start = b.get("skip", 0) + b["sentences"]
    if e.get("skip", 0) != start:
        raise refuse(f"the extension starts after verse {e.get('skip', 0)}, the base ends at verse {start}")
    for key in ("config", "rule_table"):
        if b[key] != e[key]:
            raise refuse(f"{key} differs: {b[key]} (base) against {e[key]} (extension)")
    base_limit = b.get("table_limit", b["ours"][0]["table_limit"] if b.get("ours") else None)
    if e.get("table_limit") != base_limit:
        raise refuse(f"table limit differs: {base_limit} (base) against {e.get('table_limit')} (extension)")
    names = [name for name in b["moses"] if name in e["moses"]]
    if not names:
        raise refuse(f"no Moses run in both: {sorted(b['moses'])} (base), {sorted(e['moses'])} (extension)")
    span = f"verses_{start + 1}_{start + e['sentences']}"
    out_moses = {}
    for name in names:
        run = e["moses"][name]
        if len(run["scores"]) != e["sentences"]:
            raise refuse(f"{name}: {len(run['scores'])} scores for {e['sentences']} verses")
        checks = run["checks"]
        failed = [check for check in CHECKS if checks[check] != checks["verses"] or checks["verses"] != e["sentences"]]
        if failed:
            raise refuse(f"{name}: the extension's verses fail the checks {failed}: {checks}")
        scores = list(b["moses"][name]["scores"]) + list(run["scores"])
        merged = {key: value for key, value in b["moses"][name].items() if key not in ("scores", "average_score")}
        merged.update(scores=scores, average_score=sum(scores) / len(scores))
        merged[span] = {key: run[key] for key in RUN_DETAILS if key in run}
        out_moses[name] = merged
    demo = {key: value for key, value in b.items() if key != "moses"}
    demo.update(sentences=b["sentences"] + e["sentences"], skip=b.get("skip", 0), table_limit=base_limit,
                moses=out_moses)
    if note:
        demo["note"] = note
    out = {key: value for key, value in base.items() if key != "demo"}
    out["demo"] = demo
    out["extensions"] = list(base.get("extensions", [])) + [
        {"verses": span, "command": extension.get("command"), "created": extension.get("created"),
         "machine": extension.get("machine"), "load_average_end": extension.get("load_average_end")}]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base", help="Moses' results on the first verses")
    parser.add_argument("extension", help="a bench.bench_moses moses.json on the verses right after them")
    parser.add_argument("--out", required=True)
    parser.add_argument("--note", default="", help="which run made which verses (replaces the base's note)")
    args = parser.parse_args(argv)
    with open(args.base, encoding="utf-8") as f:
        base = json.load(f)
    with open(args.extension, encoding="utf-8") as f:
        extension = json.load(f)
    from decoder.errors import InputError

    try:
        result = extend(base, extension, args.note, args.extension)
    except InputError as error:
        print(f"moses_extend_results: {error}", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    demo = result["demo"]
    for name, run in demo["moses"].items():
        print(f"{name}: {demo['sentences']} verses from verse {demo['skip'] + 1}, average {run['average_score']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
