"""The binarization papers' grammar tables for a rule table (`cky bench --binarization`).

1. Grammar statistics (Zhang, Huang, Gildea and Knight 2006, section 4.1): rules, nonterminals per
   rule, the share of rules whose nonterminals reorder, of monotonic rules (identity or fully
   inverted) and of rules whose permutation is not binarizable.
2. Xiao, Li, Zhang, Zhu and Zhou 2009, Table 2: Q(G') (Eq. 2, the sum over binary rules of their
   bucket's size) and the number of binary rules for each strategy (random: several seeds), and
   Q(G') and binary rules after each sweep of iterative cost reduction (their Figures 6, 7 and 11).

How a rule is counted as non-binarizable: by the permutation of its nonterminals alone (each
nonterminal's target rank, in source order; terminals are left out, since they attach to any
binarization, Zhang et al. section 3.2), tested with Zhang et al.'s Algorithm 1
(decoder.binarize.permutation). Each rule of the table counts once, however often it was
extracted; the share is over all rules, as Zhang et al.'s 0.3%, and over the rules with four
or more nonterminals, the only ones where it can happen. The synchronous strategies binarize
these rules monolingually, so they stay in G' and in Q(G').

Both tables reuse the binarizer (decoder.binarize.binarize) and the rule reader
(decoder.grammar.read_rules); nothing here binarizes by itself.
"""
from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass

from ..errors import UsageError
from .buckets import TWO_TOKEN_KINDS, checked_analysis, forced_spans
from .experiments import RANDOM_SEEDS, STRATEGIES, machine_info
from .goals import (grammar_cost_ratio, icr_against_left, icr_lines, synchronous_against_monolingual,
                    synchronous_lines)

PAIRS = ("es-en", "zh-en")
NONTERMINAL_BINS = ("0", "1", "2", "3", "4", "5+")

# The papers' figures, on Chinese-English (printed beside ours).
ZHANG_2006 = {"rules": 50_879_242, "binarizable_share": 0.997, "non_binarizable_share": 0.003,
              "monotonic_share": 0.868}
XIAO_2009_COST = {"left": 4_897e6, "right": 5_182e6, "random": 3_479e6, "icr": 185e6}  # Table 2 (random: 5 runs)


@dataclass
class Settings:
    strategies: tuple = STRATEGIES
    random_seeds: int = RANDOM_SEEDS
    icr_max_iterations: int = 20
    icr_rules_per_iteration: bool = True  # binary rules after each sweep (one binarization per sweep)
    decode: bool = False  # also the pop-limit sweep (decode_sweep)
    decode_sentences: int = 10  # the first test sentences
    pop_limits: tuple = (10, 50, 100, 200, 1000)
    extraction_settings: bool = False  # only Q(left) and Q(icr) of the pair's rules re-extracted under
    # extraction_settings.SETTINGS (the statistics and strategy tables are the plain run's)


# ---- where a pair's rule table is ----------------------------------------------------------------------

def pair_build(pair: str) -> str:
    """The build directory of a pair's Bible recipe (`cky data bible-PAIR`; decoder.experiment.bible_build)."""
    from ..experiment import bible_build

    return bible_build(pair)


def pair_rule_tables(pair: str) -> list[str]:
    """Where a pair's rule table may be, best first: the full build's, then the --small build's; in
    each, rules.gz (the unfiltered table the recipe's pipeline extracts), then rules/rules.gz (one
    extracted by hand with `cky extract`) and demo/rules.test.gz (filtered to the test set)."""
    build = pair_build(pair)
    return [os.path.join(directory, name) for directory in (build, os.path.join(build, "small"))
            for name in ("rules.gz", os.path.join("rules", "rules.gz"), os.path.join("demo", "rules.test.gz"))]


def build_of(rules_path: str) -> str:
    """The build directory a table lies in: its own directory when that holds the build's LM (the
    recipe's BUILD/rules.gz), else the one above (BUILD/rules/rules.gz, BUILD/demo/rules.test.gz)."""
    directory = os.path.dirname(os.path.abspath(rules_path))
    return directory if os.path.exists(os.path.join(directory, "lm.bin")) else os.path.dirname(directory)


def find_pair_table(pair: str) -> str | None:
    return next((path for path in pair_rule_tables(pair) if os.path.exists(path)), None)


# ---- 1. grammar statistics -------------------------------------------------------------------------

def nonterminal_bin(arity: int) -> str:
    return str(arity) if arity < 5 else "5+"


def is_monotonic(permutation: tuple[int, ...]) -> bool:
    """Identity or fully inverted order (Zhang et al.'s "monotonic permutations")."""
    n = len(permutation)
    return all(r == i for i, r in enumerate(permutation)) or all(r == n - 1 - i for i, r in enumerate(permutation))


def grammar_statistics(rules) -> dict:
    """Counts of Zhang et al. section 4.1 over a list of decoder.grammar.Rule."""
    from ..binarize.permutation import is_binarizable

    by_arity = Counter()
    reordered = Counter()
    monotonic = Counter()
    non_binarizable = Counter()
    permutations = Counter()
    for rule in rules:
        permutation = rule.permutation
        key = nonterminal_bin(rule.arity)
        by_arity[key] += 1
        if any(r != i for i, r in enumerate(permutation)):
            reordered[key] += 1
        if is_monotonic(permutation):
            monotonic[key] += 1
        if not is_binarizable(permutation):
            non_binarizable[key] += 1
            permutations[tuple(r + 1 for r in permutation)] += 1  # 1-based, as Zhang et al. write them
    n = sum(by_arity.values())
    multi = n - by_arity["0"] - by_arity["1"]
    four_plus = by_arity["4"] + by_arity["5+"]

    def share(count, total):
        return count / total if total else None

    return {
        "rules": n,
        "nonterminals": {b: by_arity[b] for b in NONTERMINAL_BINS},
        "reordered": sum(reordered.values()),
        "reordered_share": share(sum(reordered.values()), n),
        "reordered_share_of_rules_with_2_or_more": share(sum(reordered.values()), multi),
        "monotonic_share": share(sum(monotonic.values()), n),
        "non_binarizable": sum(non_binarizable.values()),
        "non_binarizable_share": share(sum(non_binarizable.values()), n),
        "non_binarizable_share_of_rules_with_4_or_more": share(sum(non_binarizable.values()), four_plus),
        "by_nonterminals": {b: {"rules": by_arity[b], "reordered": reordered[b], "monotonic": monotonic[b],
                                "non_binarizable": non_binarizable[b]} for b in NONTERMINAL_BINS},
        "non_binarizable_permutations": [{"permutation": list(p), "rules": c}
                                         for p, c in permutations.most_common(10)],
    }


# ---- 2. Xiao et al. Table 2 ----------------------------------------------------------------------------

def _run(rules, strategy: str, seed: int = 0, max_iterations: int = 20, forced=None) -> dict:
    """One binarization's Q(G'), binary rules and buckets (buckets.bucket_analysis; `forced`: the
    rules' forced spans, buckets.forced_spans, for the bound that holds for synchronous strategies)."""
    from ..binarize import SYNCHRONOUS, binarize

    grammar = binarize(rules, strategy, seed=seed, max_iterations=max_iterations)
    report = grammar.report
    analysis = checked_analysis(grammar, strategy, forced if strategy in SYNCHRONOUS else None)
    # Buckets that rules of one or two tokens fill: those rules have one binarization, so every
    # strategy puts them in the same buckets, and Q of these alone is a floor no binarization beats.
    fixed = Counter()
    for keys in grammar.bucket_keys:
        if len(keys) == 1:
            fixed.update(keys)
    return {"cost": report["cost"], "binary_rules": report["binary_rules"],
            "binary_rule_instances": report["binary_rule_instances"], "buckets": report["buckets"],
            "largest_buckets": [bucket["size"] for bucket in analysis["largest"][:3]],
            "cost_floor": sum(c * c for c in fixed.values()),
            "cost_by_source_tokens": {k: row["cost"] for k, row in analysis["by_source_tokens"].items()},
            "bucket_analysis": analysis,
            "non_binarizable": report["non_binarizable"], "iterations": report["iterations"],
            "seconds": report["seconds"]}


def cost_table(rules, settings: Settings = Settings(), log=print) -> dict:
    """Q(G') and binary rules per strategy (random: mean, min and max over the seeds); icr: per sweep."""
    from ..binarize import SYNCHRONOUS, span_tables

    table: dict = {}
    forced = None
    if any(strategy in SYNCHRONOUS for strategy in settings.strategies):
        log("  forced spans")
        forced = forced_spans(span_tables(rules)[0])
    for strategy in settings.strategies:
        seeds = range(settings.random_seeds) if strategy == "random" else [0]
        runs = []
        for seed in seeds:
            log(f"  {strategy}" + (f" (seed {seed})" if strategy == "random" else ""))
            runs.append(_run(rules, strategy, seed, settings.icr_max_iterations, forced))
        entry = dict(runs[0])
        if strategy == "random":
            for key in ("cost", "binary_rules"):
                values = [run[key] for run in runs]
                entry[key] = statistics.mean(values)
                entry[f"{key}_min"], entry[f"{key}_max"] = min(values), max(values)
                entry[f"{key}_by_seed"] = values
            entry["seeds"] = len(runs)
        if strategy == "icr":
            entry["by_iteration"] = icr_by_iteration(rules, entry["iterations"], settings, log)
        del entry["iterations"]
        table[strategy] = entry
    return table


def icr_by_iteration(rules, history: list[int], settings: Settings, log=print) -> list[dict]:
    """Q(G') after each ICR sweep (sweep 0 is `left`) and, with icr_rules_per_iteration, the
    binary rules of the grammar ICR gives when stopped after that sweep."""
    from ..binarize import binarize

    rows = []
    for sweep, cost in enumerate(history):
        row = {"iteration": sweep, "cost": cost}
        if settings.icr_rules_per_iteration:
            log(f"  icr stopped after sweep {sweep}")
            grammar = binarize(rules, "icr", max_iterations=sweep)
            row["binary_rules"] = grammar.report["binary_rules"]
            if grammar.report["cost"] != cost:
                raise RuntimeError(f"icr stopped after sweep {sweep} has Q {grammar.report['cost']}, "
                                   f"its full run had {cost}")
        rows.append(row)
    return rows


# ---- 3. decoding against the pop limit (optional) ----------------------------------------------------

def decode_system(name: str, rules_path: str, work: str, sentences: int):
    """The System (decoder.experiment) of a table in a build (build_of), decoding its first `sentences` test
    sentences; or the reason there is none. A `cky train` build gives BUILD/lm.bin and
    BUILD/corpus/test.tok.{src,tgt} (decoder.experiment.trained_files); a build of the earlier layout
    BUILD/lm.bin, BUILD/test.SRC and test.en, SRC the pair's source language."""
    from ..experiment import System, read_lines, trained_files

    data = build_of(rules_path)
    trained = trained_files(data)
    if os.path.exists(trained["test_src"]) and os.path.exists(trained["test_ref"]):
        files = {"lm": trained["lm"], "src": trained["test_src"], "ref": trained["test_ref"]}
    else:
        source = name.split("-")[0] if name in PAIRS else None
        if source is None:
            return None, (f"decoding needs a pair's build (--pair {'|'.join(PAIRS)}) or a `cky train` "
                          f"build ({trained['test_src']})")
        files = {"lm": os.path.join(data, "lm.bin"), "src": os.path.join(data, f"test.{source}"),
                 "ref": os.path.join(data, "test.en")}
    missing = [path for path in files.values() if not os.path.exists(path)]
    if missing:
        return None, "no " + ", ".join(missing)
    os.makedirs(work, exist_ok=True)
    subset = {}
    for key in ("src", "ref"):  # the first sentences, as dev and test (the table is filtered to them)
        subset[key] = os.path.join(work, f"sweep.{key}")
        with open(subset[key], "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in read_lines(files[key])[:sentences])
    glue = os.path.join(os.path.dirname(os.path.abspath(rules_path)), "glue.gz")
    return System(name, os.path.abspath(rules_path), files["lm"], subset["src"], subset["ref"], subset["src"],
                  subset["ref"], work, glue=glue if os.path.exists(glue) else None, tokenize="none",
                  build=data), None


def common_weights(rules_path: str) -> tuple[dict | None, str]:
    """The weights of the table's build: its own config.toml's (decoder.experiment.build_weights), else the
    weights shipped for its system (decoder/tune/weights/NAME.toml, NAME from its manifest), else None
    (the decoder's defaults); and which."""
    import json

    from ..data.build import shipped_weights
    from ..experiment import build_weights
    from ..tune.config import read_config

    weights, weights_from = build_weights(build_of(rules_path))
    if weights is not None:
        return weights, weights_from
    manifest = os.path.join(build_of(rules_path), "manifest.json")
    try:
        with open(manifest, encoding="utf-8") as f:
            name = json.load(f)["name"]
    except (OSError, ValueError, KeyError):
        return None, "the decoder's defaults"
    shipped = shipped_weights(name)
    if shipped is not None:
        return read_config(shipped).get("weights"), f"shipped for {name}"
    return None, "the decoder's defaults"


def decode_sweep(name: str, rules_path: str, work: str, settings: Settings, log=print) -> dict:
    """BLEU, edges and model score per strategy against the pop limit, with common weights
    (Xiao et al. Figures 8-10; monolingual against synchronous: Zhang et al. Figure 7)."""
    from .experiments import decode_with_stats, decoder_missing, summarize_decoding
    from ..experiment import read_lines, store_for, write_decoder_config

    missing = decoder_missing()
    if missing:
        return {"skipped": missing}
    system, reason = decode_system(name, rules_path, work, settings.decode_sentences)
    if system is None:
        return {"skipped": reason}
    weights, weights_from = common_weights(rules_path)
    sentences, references = read_lines(system.test_src), read_lines(system.test_ref)
    sweep: dict = {}
    for strategy in settings.strategies:
        log(f"  compiling the {strategy} store")
        config = write_decoder_config(system, store_for(system, strategy),
                                      os.path.join(work, "configs", f"{strategy}.toml"), weights=weights)
        sweep[strategy] = {}
        for pop_limit in settings.pop_limits:
            log(f"  decoding {len(sentences)} sentences with {strategy} at pop limit {pop_limit}")
            decoded = decode_with_stats(config, sentences, pop_limit=pop_limit)
            summary = summarize_decoding(decoded, references, system.tokenize)
            sweep[strategy][str(pop_limit)] = {key: summary[key] for key in
                                               ("bleu", "model_cost", "edges_per_sentence", "failed", "seconds")}
    return {"sentences": len(sentences), "weights": weights_from, "by_strategy": sweep}


# ---- one table, several pairs ------------------------------------------------------------------------

def measure_table(name: str, path: str, settings: Settings, work: str = "", log=print) -> dict:
    """Both tables for one rule table."""
    from ..grammar import read_rules

    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such rule table")
    started = time.perf_counter()
    result = {"rules_path": os.path.abspath(path)}
    if settings.extraction_settings:  # the tables of the pair's build, not this one (the recipe's is one of them)
        from . import extraction_settings

        log("Q(left) and Q(icr) under other extraction settings")
        result["extraction_settings"] = extraction_settings.run(
            build_of(path), os.path.join(work, name, "extraction"), settings.icr_max_iterations, log=log)
        result["seconds"] = round(time.perf_counter() - started, 1)
        return result
    log(f"reading {path}")
    rules = list(read_rules(path, uniform_scores=True))
    if not rules:
        raise UsageError(f"{path}: the rule table holds no rules")
    log(f"{len(rules):,} rules: grammar statistics")
    result["statistics"] = grammar_statistics(rules)
    log("Q(G') per strategy")
    result["costs"] = cost_table(rules, settings, log)
    if settings.decode:
        log("decoding against the pop limit")
        result["decode"] = decode_sweep(name, path, os.path.join(work, name, f"first-{settings.decode_sentences}"),
                                        settings, log)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def run(tables: dict[str, str | None], settings: Settings = Settings(), log=print, work: str = "") -> dict:
    """`tables`: column name -> rule table path (None: not built; the column says where it looked)."""
    results = {"settings": asdict(settings), "machine": machine_info(),
               "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "tables": {}, "skipped": {}}
    for name, path in tables.items():
        if path is None:
            looked = ", ".join(pair_rule_tables(name)) if name in PAIRS else "-"
            results["skipped"][name] = f"no rule table (looked for {looked})"
            log(f"{name}: skipped, {results['skipped'][name]}")
            continue
        log(f"{name}: {path}")
        results["tables"][name] = measure_table(name, path, settings, work, log)
    return results


# ---- the report -----------------------------------------------------------------------------------

def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header, rows) -> list[str]:
    return [_row(header), _row(["---"] + ["---:"] * (len(header) - 1))] + [_row(r) for r in rows]


def _count(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _percent(value, digits=1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def _cost(value) -> str:
    if value is None:
        return "-"
    if value < 1e6:
        return f"{value:,.0f}"
    mantissa, exponent = f"{value:.3e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def markdown(results: dict) -> str:
    tables = results["tables"]
    names = list(tables)
    only_extraction = bool(names) and all("statistics" not in tables[n] for n in names)
    lines = ["# Binarization: " + ("Q(left) and Q(icr) under other extraction settings" if only_extraction else
                                  "the grammar tables of Zhang et al. 2006 and Xiao et al. 2009"), ""]
    for name, entry in tables.items():
        lines.append(f"- {name}: `{entry['rules_path']}`")
    for name, reason in results.get("skipped", {}).items():
        lines.append(f"- {name}: skipped, {reason}")
    settings = results["settings"]
    lines += ["", f"{results['date']}; random: {settings['random_seeds']} seeds; ICR: at most "
                  f"{settings['icr_max_iterations']} sweeps.", ""]
    if not names:
        return "\n".join(lines + ["No rule table was measured."]) + "\n"
    extraction = {n: tables[n]["extraction_settings"] for n in names if "extraction_settings" in tables[n]}
    names = [n for n in names if "statistics" in tables[n]]
    if not names:
        return "\n".join(lines + extraction_settings_markdown(extraction)[2:]) + "\n"  # (its title is the page's)

    lines += ["## Grammar statistics (Zhang et al. 2006, section 4.1)", ""]
    stats = {n: tables[n]["statistics"] for n in names}
    header = [""] + names + ["Zhang et al. (zh-en)"]
    rows = [["rules"] + [_count(stats[n]["rules"]) for n in names] + [_count(ZHANG_2006["rules"])]]
    for b in NONTERMINAL_BINS:
        rows.append([f"rules with {b} nonterminals"]
                    + [f"{_count(stats[n]['nonterminals'][b])} ({_percent(stats[n]['nonterminals'][b] / stats[n]['rules'])})"
                       for n in names] + ["-"])
    rows += [["nonterminals reorder (of all rules)"] + [_percent(stats[n]["reordered_share"]) for n in names] + ["-"],
             ["nonterminals reorder (of rules with 2+)"]
             + [_percent(stats[n]["reordered_share_of_rules_with_2_or_more"]) for n in names] + ["-"],
             ["monotonic (identity or inverted)"] + [_percent(stats[n]["monotonic_share"]) for n in names]
             + [_percent(ZHANG_2006["monotonic_share"])],
             ["non-binarizable (of all rules)"]
             + [f"{_count(stats[n]['non_binarizable'])} ({_percent(stats[n]['non_binarizable_share'], 2)})"
                for n in names] + [_percent(ZHANG_2006["non_binarizable_share"])],
             ["non-binarizable (of rules with 4+)"]
             + [_percent(stats[n]["non_binarizable_share_of_rules_with_4_or_more"], 2) for n in names] + ["-"]]
    lines += _table(header, rows)
    lines += ["", "A rule counts as non-binarizable when the permutation of its nonterminals (terminals left out) "
                  "fails Zhang et al.'s Algorithm 1; each rule of the table counts once. The synchronous "
                  "strategies binarize these rules monolingually, so they stay in Q(G').", ""]
    header = ["nonterminals"] + [f"{n} {what}" for n in names for what in ("rules", "reorder", "non-binarizable")]
    rows = []
    for b in NONTERMINAL_BINS:
        row = [b]
        for n in names:
            counts = stats[n]["by_nonterminals"][b]
            row += [_count(counts["rules"]), _percent(counts["reordered"] / counts["rules"] if counts["rules"] else None),
                    _percent(counts["non_binarizable"] / counts["rules"] if counts["rules"] else None, 2)]
        rows.append(row)
    lines += ["By number of nonterminals (Zhang et al. Figure 6):", ""] + _table(header, rows) + [""]
    for n in names:
        perms = stats[n]["non_binarizable_permutations"]
        if perms:
            lines.append(f"Most frequent non-binarizable permutations, {n}: "
                         + ", ".join(f"({','.join(map(str, p['permutation']))}) x{p['rules']:,}" for p in perms[:5]))
    lines.append("")

    lines += ["## Q(G') and binary rules per strategy (Xiao et al. 2009, Table 2)", ""]
    header = ["strategy"]
    for n in names:
        header += [f"{n} Q(G')", f"{n} Q / Q(left)", f"{n} binary rules"]
    header.append("Xiao et al. Q(G')")
    rows = []
    strategies = [s for s in STRATEGIES if all(s in tables[n]["costs"] for n in names)]
    for strategy in strategies:
        label = strategy
        row = []
        for n in names:
            entry, left = tables[n]["costs"][strategy], tables[n]["costs"].get("left")
            cost, rules = _cost(entry["cost"]), _count(entry["binary_rules"])
            if strategy == "random":
                label = f"random (mean of {entry['seeds']} seeds [min-max])"
                cost += f" [{_cost(entry['cost_min'])}-{_cost(entry['cost_max'])}]"
                rules += f" [{_count(entry['binary_rules_min'])}-{_count(entry['binary_rules_max'])}]"
            ratio = f"{entry['cost'] / left['cost']:.3f}" if left and left["cost"] else "-"
            row += [cost, ratio, rules]
        paper = XIAO_2009_COST.get(strategy)
        rows.append([label] + row + [_cost(paper) if paper else "-"])
    lines += _table(header, rows)
    first = tables[names[0]]["costs"]
    lines += ["", "Binary rules: distinct binary rules (virtual rules shared across source rules), what the "
                  "decoder stores. Every binarization of a table has the same number of binary-rule instances "
                  "(one per internal node of each source rule: "
              + ", ".join(f"{n} {_count(next(iter(tables[n]['costs'].values()))['binary_rule_instances'])}"
                          for n in names)
              + "); Q(G') sums their bucket sizes. Xiao et al. report left 26 times ICR.", ""]
    if first:
        header = [""] + names
        rows = [["Q(G') floor: buckets of rules with 1-2 tokens (no choice)"]
                + [_cost(next(iter(tables[n]["costs"].values()))["cost_floor"]) for n in names]]
        for strategy in strategies:
            rows.append([f"{strategy}: share of Q(G') in buckets of 2 source tokens"]
                        + [_percent(tables[n]["costs"][strategy]["cost_by_source_tokens"]["2"]
                                    / tables[n]["costs"][strategy]["cost"]) for n in names])
        for strategy in strategies:
            rows.append([f"{strategy}: three largest buckets"]
                        + [", ".join(f"{s:,}" for s in tables[n]["costs"][strategy]["largest_buckets"]) for n in names])
        lines += _table(header, rows) + [""]

    lines += buckets_markdown({n: tables[n]["costs"] for n in names}, strategies)
    icr = {n: tables[n]["costs"].get("icr") for n in names if "icr" in tables[n]["costs"]}
    if icr:
        lines += ["## Q(G') and binary rules per ICR sweep (Xiao et al. 2009, Figures 6, 7 and 11)", "",
                  "Sweep 0 is `left`; ICR stops when a sweep does not lower Q(G').", ""]
        header = ["sweep"]
        for n in icr:
            header += [f"{n} Q(G')", f"{n} binary rules"]
        depth = max(len(e["by_iteration"]) for e in icr.values())
        rows = []
        for i in range(depth):
            row = [str(i)]
            for e in icr.values():
                it = e["by_iteration"][i] if i < len(e["by_iteration"]) else None
                row += [_count(it["cost"]) if it else "", _count(it.get("binary_rules")) if it else ""]
            rows.append(row)
        lines += _table(header, rows) + [""]
    decoded = {n: tables[n]["decode"] for n in names if "decode" in tables[n]}
    if decoded:
        lines += ["## BLEU, edges and model score against the pop limit (Xiao et al. Figures 8-10; "
                  "Zhang et al. Figure 7: monolingual against synchronous)", ""]
    for n, entry in decoded.items():
        if "skipped" in entry:
            lines += [f"{n}: skipped, {entry['skipped']}", ""]
            continue
        lines += [f"{n}: the first {entry['sentences']} test sentences, common weights ({entry['weights']}); "
                  "BLEU / edges per sentence / model score (sum over the sentences).", ""]
        by_strategy = entry["by_strategy"]
        pops = list(next(iter(by_strategy.values())))
        rows = []
        for pop in pops:
            rows.append([pop] + [f"{v['bleu']:.2f} / {v['edges_per_sentence']:,.0f} / {-v['model_cost']:.2f}"
                                 + (f" ({v['failed']} failed)" if v["failed"] else "")
                                 for v in (by_strategy[s][pop] for s in by_strategy)])
        lines += _table(["pop limit"] + list(by_strategy), rows) + [""]
        lines += [f"{n}, the goals on these sentences:", ""]
        lines += icr_lines(icr_against_left(by_strategy), grammar_cost_ratio(tables[n]["costs"]))
        lines += synchronous_lines(synchronous_against_monolingual(by_strategy)) + [""]
    lines += extraction_settings_markdown(extraction)
    return "\n".join(lines)


def _share(part, whole) -> str:
    return _percent(part / whole) if whole else "-"


def buckets_markdown(costs: dict[str, dict], strategies: list[str]) -> list[str]:
    """Where Q(G') lives, per table (buckets.bucket_analysis of each strategy; random: its first seed)."""
    lines = ["## Where Q(G') lives: the buckets (Xiao et al. 2009, Eq. 2 and 4)", "",
             "A bucket holds the binary rules that cover one source sequence; Q(G') is the sum of the squares of "
             "the bucket sizes. Tokens: a nonterminal or a run of source words (never split). No binarization "
             "splits a bucket of two tokens. Lower bounds on Q(G'): *top rules*, each source rule's top binary "
             "rule is in the bucket of its whole source side under every binarization; *forced*, also every span "
             "that lies in all synchronous bracketings of its rule (no other feasible span crosses it), a bound "
             "for left, right, random and icr. Random: its first seed.", ""]
    for name, by_strategy in costs.items():
        analyses = {s: by_strategy[s]["bucket_analysis"] for s in strategies if "bucket_analysis" in by_strategy[s]}
        if not analyses:
            continue
        any_analysis = next(iter(analyses.values()))
        forced = next((a["forced_lower_bound"] for a in analyses.values() if a["forced_lower_bound"]), None)
        lines += [f"### {name}", "",
                  f"Lower bounds: top rules {_cost(any_analysis['lower_bound'])}; forced {_cost(forced)}.", ""]
        rows = []
        for strategy, a in analyses.items():
            kinds = a["two_token_kinds"]
            rows.append([strategy, _cost(a["cost"]), _count(a["buckets"]),
                         _share(a["by_source_tokens"]["1"]["cost"], a["cost"]),
                         _share(a["by_source_tokens"]["2"]["cost"], a["cost"]),
                         " / ".join(_share(kinds[k]["cost"], a["cost"]) for k in TWO_TOKEN_KINDS),
                         _share(a["by_source_tokens"]["3+"]["cost"], a["cost"]),
                         f"{a['cost'] / a['lower_bound']:.2f}" if a["lower_bound"] else "-",
                         f"{a['cost'] / forced:.2f}" if forced else "-"])
        lines += _table(["strategy", "Q(G')", "buckets", "Q in 1-token buckets", "Q in 2-token buckets",
                         "of which NT NT / NT words / words NT", "Q in 3+-token buckets", "Q / top-rule bound",
                         "Q / forced bound"], rows) + [""]
        classes = []
        for a in analyses.values():
            for row in a["size_histogram"]:
                if row["size"] not in classes:
                    classes.append(row["size"])
        classes.sort(key=lambda c: int(c.split("-")[0]))
        rows = []
        for size in classes:
            row = [size]
            for a in analyses.values():
                found = next((r for r in a["size_histogram"] if r["size"] == size), None)
                row.append(f"{_count(found['buckets'])} ({_percent(found['cost_share'])})" if found else "")
            rows.append(row)
        lines += [f"Bucket sizes, {name}: buckets of each size (their share of Q(G')).", ""]
        lines += _table(["bucket size"] + list(analyses), rows) + [""]
        depth = max(len(a["largest"]) for a in analyses.values())
        rows = []
        for rank in range(depth):
            row = [str(rank + 1)]
            for a in analyses.values():
                if rank >= len(a["largest"]):
                    row.append("")
                    continue
                b = a["largest"][rank]
                forced_part = f", forced {_count(b['forced'])}" if b["forced"] is not None else ""
                row.append(f"`{b['source']}` {_count(b['size'])} (top {_count(b['top_rules'])}{forced_part})")
            rows.append(row)
        lines += [f"The largest buckets, {name}: source sequence, binary rules (of them top rules and forced ones).",
                  ""]
        lines += _table(["rank"] + list(analyses), rows) + [""]
    return lines


def extraction_settings_markdown(extraction: dict[str, dict]) -> list[str]:
    """Q(left) and Q(icr) per extraction setting (extraction_settings.run), whole table and test set."""
    if not extraction:
        return []
    lines = ["## Q(left) and Q(icr) under other extraction settings", "",
             "Each setting's table, whole (`full`) and filtered to the test set (`test`). *Ceiling*: Q(left) over "
             "the forced bound, the most any synchronous binarization could lower Q(G') from left's. "
             "Settings:", ""]
    described = {}
    for entry in extraction.values():
        for setting, e in entry.get("settings", {}).items():
            described.setdefault(setting, e["what"])
    lines += [f"- `{setting}`: {what}" for setting, what in described.items()] + [""]
    for name, entry in extraction.items():
        if "skipped" in entry:
            lines += [f"{name}: skipped, {entry['skipped']}", ""]
            continue
        rows = []
        for setting, e in entry["settings"].items():
            for part in ("full", "test"):
                m = e[part]
                left, icr = m["left"], m["icr"]
                rows.append([setting, part, _count(m["rules"]), _cost(left["cost"]), _cost(icr["cost"]),
                             f"{m['left_over_icr']:.2f}" if m["left_over_icr"] else "-", str(icr["sweeps"]),
                             f"{_percent(left['buckets']['two_token_cost_share'])} / "
                             f"{_percent(icr['buckets']['two_token_cost_share'])}",
                             _cost(m["forced_lower_bound"]),
                             f"{icr['cost'] / m['forced_lower_bound']:.2f}" if m["forced_lower_bound"] else "-",
                             f"{left['cost'] / m['forced_lower_bound']:.2f}" if m["forced_lower_bound"] else "-",
                             f"{_count(left['buckets']['largest'][0]['size'])} / "
                             f"{_count(icr['buckets']['largest'][0]['size'])}" if icr["buckets"]["largest"] else "-"])
        lines += [f"### {name} ({entry['build']})", ""]
        lines += _table(["setting", "table", "rules", "Q(left)", "Q(icr)", "Q(left) / Q(icr)", "ICR sweeps",
                         "Q in 2-token buckets: left / icr", "forced bound", "Q(icr) / bound", "ceiling",
                         "largest bucket: left / icr"], rows) + [""]
    return lines


def write_report(results: dict, out: str) -> None:
    import json

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, default=str)
        f.write("\n")
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
        f.write(markdown(results))
