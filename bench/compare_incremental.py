"""Model score against CPU seconds for `cube` and `incremental` search over pop limits.

    python -m bench.compare_incremental --config models/bible-es-en/build/demo/config.toml \\
        [--test TEST.es] [--sentences 30] [--pop-limits 10 30 100 300 1000] [--out results.json]
    python -m bench.compare_incremental --store STORE --lm LM --test TEST.es [--glue GLUE] ...
    python -m bench.compare_incremental --system synthetic      # bench_decoder's synthetic system
    ... --set cube=pop_count=real incremental=pop_count=real --virtual-pop-ratio 6
                                        # Moses' pops: virtual_pop_limit = 6 x each pop limit
    ... --searches cube incremental cube@rest incremental@rest \
        --lm-of cube@rest=lm.rest.bin incremental@rest=lm.rest.bin   # another LM for some searches
    ... --searches cube incremental incremental@off --engine incremental@off=partial_rest=0
                                        # a public attribute of one search's compiled engine (A/B)
    ... --more-pop-limits incremental=150,200,450   # more points on one search's curve
    ... --sentences 600 --blocks 200    # and the equal-score tables of sentences 1-200, 201-400, 401-600

Both searches decode the same sentences in this process with one Decoder's store, LM,
weights and search space (two drivers over them); for each (search, pop limit): average
model score per sentence, CPU seconds per sentence (the whole translate call, and the
compiled search alone), edges proposed, LM queries (total and novel), and on how many
sentences incremental beats / ties cube's score at the same pop limit. Each row also
carries the load average (the highest seen), as the machine may be shared; the JSON file
also has each sentence's model score and CPU seconds (so --blocks, or a reader of the file,
can give the tables of any part of the sentences from one run).

The machine's load changes while a run goes on, and CPU seconds grow with it (shared
caches and cores), so the searches take turns every --interleave sentences (the turn's
first search alternating) instead of each decoding all sentences in a row; and each
first decodes --warmup sentences untimed, so that the first row does not pay for the
store's and LM's first page touches.

At each of cube's pop limits the bench prints the CPU at which the other search reaches cube's
average score, as a ratio to cube's: `ratio` interpolates between the other search's two rows
around that score; `ratio_fitted` takes both searches' CPU from a power law fitted over all their
rows, at the pop limit where the other search reaches the score (`pop_limit_ratio`; scores are
deterministic, so that one does not move between runs). The fitted ratio moves less between runs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time

from bench.machine import machine_info


def _at_score(rows, target, field):
    """A search's `field` (of its rows over pop limits) where it reaches `target` average model score:
    log-linear between the two pop limits around it (the first row's if that already does); None if it
    never does."""
    rows = sorted(rows, key=lambda r: r["pop_limit"])
    for a, b in zip(rows, rows[1:]):
        sa, sb = a["model_score_per_sentence"], b["model_score_per_sentence"]
        if sa >= target:
            return a[field]
        if sa < target <= sb:
            fa, fb = a[field], b[field]
            return math.exp(math.log(fa) + (target - sa) / (sb - sa) * (math.log(fb) - math.log(fa)))
    if rows and rows[-1]["model_score_per_sentence"] >= target:
        return rows[-1][field]
    return None


def cpu_at_score(rows, target):
    """CPU seconds per sentence at which a search (its rows over pop limits) reaches `target` average
    model score: log-linear between the two pop limits around it; None if it never does."""
    return _at_score(rows, target, "cpu_seconds_per_sentence")


def pop_limit_at_score(rows, target):
    """The pop limit at which a search (its limited rows) reaches `target` average model score: log-linear
    between the two pop limits around it (scores are deterministic, so this is steady between runs); None
    if it never does."""
    found = _at_score([r for r in rows if r["pop_limit"] > 0], target, "pop_limit")
    return None if found is None else float(found)


def fitted_cpu(rows):
    """CPU seconds per sentence as a power of the pop limit, c = a * pop^b, least squares in log-log over
    all of a search's rows (at least two): a row's CPU moves by up to 10% between runs on a shared
    machine, the fit over the whole curve much less. None with fewer rows."""
    points = [(math.log(r["pop_limit"]), math.log(r["cpu_seconds_per_sentence"])) for r in rows
              if r["pop_limit"] > 0 and r["cpu_seconds_per_sentence"] > 0]
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return lambda pop_limit: math.exp(my + slope * (math.log(pop_limit) - mx))


def equal_score_table(rows, reference="cube", other="incremental"):
    """Per pop limit of `reference`: its score and CPU, and `other`'s CPU at that score (and the ratio):
    measured (`ratio`: `other`'s CPU log-linear between its two rows around the score, over `reference`'s
    row) and fitted (`ratio_fitted`: both searches' CPU from their power-law fits, `other`'s at the pop
    limit where it reaches the score, `pop_limit_ratio` that pop limit over `reference`'s)."""
    ref = [r for r in rows if r["search"] == reference]
    oth = [r for r in rows if r["search"] == other]
    ref_fit, oth_fit = fitted_cpu(ref), fitted_cpu(oth)
    out = []
    for r in sorted(ref, key=lambda r: r["pop_limit"]):
        cpu = cpu_at_score(oth, r["model_score_per_sentence"])
        pops = pop_limit_at_score(oth, r["model_score_per_sentence"])
        fitted = None
        if pops is not None and ref_fit is not None and oth_fit is not None and r["pop_limit"] > 0:
            fitted = oth_fit(pops) / ref_fit(r["pop_limit"])
        out.append({"pop_limit": r["pop_limit"], "score": r["model_score_per_sentence"],
                    f"{reference}_cpu": r["cpu_seconds_per_sentence"], f"{other}_cpu_at_equal_score": None if cpu is None else round(cpu, 4),
                    "ratio": None if cpu is None else round(cpu / r["cpu_seconds_per_sentence"], 3),
                    "pop_limit_ratio": None if pops is None or r["pop_limit"] <= 0 else round(pops / r["pop_limit"], 3),
                    "ratio_fitted": None if fitted is None else round(fitted, 3)})
    return out


TOTALS = ("edges_proposed", "lm_queries", "lm_queries_novel", "partial_edges_popped", "partial_edges_pushed",
          "initial_edges", "initial_edges_at_corner", "partial_lm_novel", "complete_edges_scored", "items", "edges")


def configure(driver, pop_limit, virtual_pop_ratio=None, engine_attributes=()):
    """Set one search's pop limit; virtual_pop_ratio: virtual_pop_limit = this times the pop limit (for
    pop_count = "real"; None: the driver's own virtual_pop_limit); engine_attributes: (name, text) of public
    attributes of the compiled engine to set (as the type of their value)."""
    if virtual_pop_ratio is None:
        driver.configure(pop_limit=pop_limit)
    else:
        driver.configure(pop_limit=pop_limit, virtual_pop_limit=round(virtual_pop_ratio * pop_limit))
    if engine_attributes:  # (after configure: it may make a new engine) an engine built with these arguments
        driver.engine_options.update({name: _setting_value(driver.engine, name, text)
                                      for name, text in engine_attributes})
        driver.engine = driver._new_engine()


class Tally:
    """One search's scores, counters and CPU at one pop limit, summed over the chunks it decoded."""

    def __init__(self):
        self.scores, self.totals = [], dict.fromkeys(TOTALS, 0)
        self.sentence_seconds = []
        self.seconds = self.search_seconds = 0.0
        self.loads = []

    def decode(self, decoder, driver, sentences):
        """Translate the sentences with this search, timing the whole translate call and the compiled
        search alone (CPU seconds of this process)."""
        decoder.chart = driver
        original_run = driver.run

        def timed_run(words):
            started = time.process_time()
            result = original_run(words)
            self.search_seconds += time.process_time() - started
            return result

        driver.run = timed_run
        self.loads.append(os.getloadavg()[0])
        started = time.process_time()
        try:
            for words in sentences:
                sentence_started = time.process_time()
                t = decoder.translate(words)
                self.sentence_seconds.append(time.process_time() - sentence_started)
                self.scores.append(t.score)
                for key in self.totals:
                    self.totals[key] += t.stats.get(key, 0)
        finally:
            self.seconds += time.process_time() - started
            del driver.run

    def row(self, driver, pop_limit):
        n = len(self.scores)
        return {"pop_limit": pop_limit, "pop_count": driver.settings.experimental.pop_count,
                "virtual_pop_limit": driver.settings.experimental.virtual_pop_limit, "sentences": n,
                "model_score_per_sentence": round(sum(self.scores) / n, 4),
                "cpu_seconds_per_sentence": round(self.seconds / n, 4),
                "search_cpu_seconds_per_sentence": round(self.search_seconds / n, 4),
                **{f"{k}_per_sentence": round(v / n, 1) for k, v in self.totals.items()},
                "load_average": round(max(self.loads), 2)}


def ratio_line(name, table):
    """One line of a search's equal_score_table against cube's: per cube pop limit, its CPU ratio (interpolated,
    fitted) and pop-limit ratio."""
    return f"{name} at cube's score, ratio to cube's CPU per cube pop limit: " + ", ".join(
        f"{row['pop_limit']}: {row['ratio']} (fitted {row['ratio_fitted']}, {row['pop_limit_ratio']}x the pops)"
        for row in table)


def block_rows(rows, lo, hi):
    """The rows (with their JSON `sentence_scores` and `sentence_seconds`) restricted to sentences lo..hi-1:
    average model score and CPU (each translate call's) per sentence over those alone, so that one run
    gives the equal-score table of each block of its sentences."""
    out = []
    for row in rows:
        scores, seconds = row["sentence_scores"][lo:hi], row["sentence_seconds"][lo:hi]
        out.append({"search": row["search"], "pop_limit": row["pop_limit"], "sentences": len(scores),
                    "model_score_per_sentence": round(sum(scores) / len(scores), 4),
                    "cpu_seconds_per_sentence": round(sum(seconds) / len(seconds), 4)})
    return out


def schedule(names, n_sentences, chunk):
    """The order in which the searches decode the sentences at one pop limit: (name, start, stop) triples.
    chunk 0: each search decodes all of them in turn; otherwise the searches take turns chunk by chunk,
    the turn's first search alternating, so that a change in the machine's load falls on all of them."""
    if chunk <= 0 or n_sentences == 0:
        return [(name, 0, n_sentences) for name in names]
    order = []
    for k, start in enumerate(range(0, n_sentences, chunk)):
        turn = names if k % 2 == 0 else names[::-1]
        order += [(name, start, min(start + chunk, n_sentences)) for name in turn]
    return order


def _setting_value(settings, name, text):
    """A --set value as the type of the setting's current value."""
    current = getattr(settings, name) if hasattr(settings, name) else getattr(settings.experimental, name)
    if isinstance(current, bool):
        return text.lower() in ("1", "true", "yes", "on")
    return type(current)(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=["synthetic"], default=None)
    parser.add_argument("--config", help="a decoder config (store, LM, glue, weights)")
    parser.add_argument("--store")
    parser.add_argument("--lm")
    parser.add_argument("--test")
    parser.add_argument("--glue", default="builtin")
    parser.add_argument("--sentences", type=int, default=30)
    parser.add_argument("--skip", type=int, default=0, help="sentences of TEST to skip first")
    parser.add_argument("--pop-limits", type=int, nargs="+", default=[10, 30, 100, 300, 1000])
    parser.add_argument("--searches", nargs="+", default=["cube", "incremental"])
    parser.add_argument("--more-pop-limits", nargs="+", default=[], metavar="SEARCH=P,P,...",
                        help="pop limits run by one search only, besides --pop-limits (e.g. "
                             "incremental@rest=150,200: more points on its curve, so that the CPU at cube's "
                             "score is interpolated over a shorter stretch)")
    parser.add_argument("--rule-order", nargs="+", default=[], metavar="SEARCH=ORDER",
                        help="a search's rule_order setting (e.g. incremental=estimate); default: the config's")
    parser.add_argument("--set", nargs="+", default=[], metavar="SEARCH=NAME=VALUE",
                        help="any search setting of one search (e.g. incremental@wp0=weight_pushing=false)")
    parser.add_argument("--lm-of", nargs="+", default=[], metavar="SEARCH=LM",
                        help="another LM file for one search (e.g. incremental@rest=lm.rest.bin, the LM with "
                             "rest costs); default: the config's")
    parser.add_argument("--engine", nargs="+", default=[], metavar="SEARCH=NAME=VALUE",
                        help="a public attribute of one search's compiled engine (e.g. "
                             "incremental@off=partial_rest=0: the incremental search's partial edges scored "
                             "as before Session 6 of bench/results/incremental.md)")
    parser.add_argument("--virtual-pop-ratio", type=float, default=None, metavar="R",
                        help="virtual_pop_limit = R x the pop limit at each pop limit (for pop_count = real, "
                             "e.g. --set cube=pop_count=real incremental=pop_count=real); default: the settings'")
    parser.add_argument("--interleave", type=int, default=10, metavar="N",
                        help="the searches take turns every N sentences at each pop limit, so that a change in "
                             "the machine's load falls on all of them (0: each decodes all sentences in turn)")
    parser.add_argument("--warmup", type=int, default=3, metavar="N",
                        help="each search first decodes the first N sentences untimed (the store's and LM's "
                             "pages touched, caches grown), so that no search pays for them in its row")
    parser.add_argument("--blocks", type=int, default=0, metavar="N",
                        help="also the equal-score tables of each block of N sentences (1..N, N+1..2N, ...), "
                             "from the same runs (JSON: equal_score_blocks)")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.virtual_pop_ratio is not None and not args.virtual_pop_ratio > 0:
        raise SystemExit("--virtual-pop-ratio must be positive")
    if args.interleave < 0 or args.warmup < 0:
        raise SystemExit("--interleave and --warmup take a number of sentences (0 or more)")
    if args.system == "synthetic":
        from bench.bench_decoder import build_store, synthetic_system

        system = synthetic_system(print)
        with open(system["test"]) as f:
            lines = [line.strip() for line in f][: args.sentences]
        args.store, _ = build_store(system, "icr", lines, print)
        args.lm, args.test = system["lm"], system["test"]

    from decoder.decoder import Decoder
    from decoder.search.drivers import search_driver

    if args.config:
        decoder = Decoder.from_config(args.config)
        if args.test is None:
            raise SystemExit("--config needs --test (the source sentences)")
    else:
        decoder = Decoder(args.store, args.lm, glue=args.glue)
    rule_orders = dict(item.split("=", 1) for item in args.rule_order)
    lm_paths = dict(item.split("=", 1) for item in args.lm_of)
    if set(lm_paths) - set(args.searches):
        raise SystemExit(f"--lm-of names searches not in --searches: {sorted(set(lm_paths) - set(args.searches))}")
    from decoder.lm import LanguageModel

    lms = {path: LanguageModel(path) for path in set(lm_paths.values())}
    more_pop_limits = {}
    for item in args.more_pop_limits:
        search, _, values = item.partition("=")
        if search not in args.searches:
            raise SystemExit(f"--more-pop-limits names a search not in --searches: {search}")
        try:
            more_pop_limits[search] = [int(v) for v in values.split(",")]
        except ValueError:
            raise SystemExit(f"--more-pop-limits {item!r}: not SEARCH=P,P,... with whole numbers") from None
    engine_attributes = {name: [] for name in args.searches}
    for item in args.engine:
        search, name, value = item.split("=", 2)
        if search not in engine_attributes:
            raise SystemExit(f"--engine names a search not in --searches: {search}")
        engine_attributes[search].append((name, value))
    drivers = {}
    for name in args.searches:
        settings = decoder.search_settings.replace(search=name.split("@")[0])
        if name in rule_orders:
            settings = settings.replace(rule_order=rule_orders[name])
        for item in args.set:
            search, setting, value = item.split("=", 2)
            if search == name:
                settings = settings.replace(**{setting: _setting_value(settings, setting, value)})
        lm = lms[lm_paths[name]] if name in lm_paths else decoder.lm
        drivers[name] = search_driver(settings.search)(decoder.store, lm, decoder.weights, decoder.space, settings)
    with open(args.test, encoding="utf-8") as f:
        sentences = [line.split() for line in f if line.strip()][args.skip: args.skip + args.sentences]
    rows = []
    pop_limits = {name: sorted(set(args.pop_limits) | set(more_pop_limits.get(name, ()))) for name in drivers}
    warm = set()
    for pop_limit in sorted(set().union(*pop_limits.values())):
        active = {name: driver for name, driver in drivers.items() if pop_limit in pop_limits[name]}
        for name, driver in active.items():
            configure(driver, pop_limit, args.virtual_pop_ratio, engine_attributes[name])
            if name not in warm and args.warmup:  # first touches of the store's and LM's pages: untimed
                Tally().decode(decoder, driver, sentences[: args.warmup])
                warm.add(name)
        tallies = {name: Tally() for name in active}
        for name, start, stop in schedule(list(active), len(sentences), args.interleave):
            tallies[name].decode(decoder, drivers[name], sentences[start:stop])
        scores = {}
        for name, driver in active.items():
            scores[name], row = tallies[name].scores, tallies[name].row(driver, pop_limit)
            rows.append({"search": name, "rule_order": driver.settings.experimental.rule_order,
                         **({"lm": lm_paths[name]} if name in lm_paths else {}),
                         **({"engine": dict(engine_attributes[name])} if engine_attributes[name] else {}), **row})
            sentence_scores = [round(score, 4) for score in scores[name]]
            print(json.dumps(rows[-1]), flush=True)
            rows[-1]["sentence_scores"] = sentence_scores  # in the JSON file, not on the screen
            rows[-1]["sentence_seconds"] = [round(t, 5) for t in tallies[name].sentence_seconds]
        if "cube" in scores and "incremental" in scores:
            inc, cube = scores["incremental"], scores["cube"]
            better = sum(a > b + 1e-4 for a, b in zip(inc, cube))
            tied = sum(abs(a - b) <= 1e-4 for a, b in zip(inc, cube))
            print(f"pop limit {pop_limit}: incremental better on {better}, tied on {tied}, worse on "
                  f"{len(sentences) - better - tied} of {len(sentences)} sentences", flush=True)
            rows[-1]["better_than_cube"] = better
            rows[-1]["tied_with_cube"] = tied
    equal = equal_score_table(rows) if "cube" in drivers and "incremental" in drivers else []
    for row in equal:
        print(f"cube at pop limit {row['pop_limit']}: score {row['score']}, {row['cube_cpu']} CPU s; incremental at "
              f"that score: {row['incremental_cpu_at_equal_score']} CPU s (ratio {row['ratio']}; fitted {row['ratio_fitted']}, "
              f"at {row['pop_limit_ratio']}x the pop limit)", flush=True)
    others = {name: equal_score_table(rows, other=name) for name in drivers if name not in ("cube", "incremental")}
    if "cube" in drivers:
        for name, table in others.items():
            print(ratio_line(name, table), flush=True)
    blocks = []
    if args.blocks > 0 and "cube" in drivers:
        for lo in range(0, len(sentences), args.blocks):
            hi = min(lo + args.blocks, len(sentences))
            some = block_rows(rows, lo, hi)
            tables = {name: equal_score_table(some, other=name) for name in drivers if name != "cube"}
            blocks.append({"first": args.skip + lo + 1, "last": args.skip + hi, "equal_score": tables})
            for name, table in tables.items():
                print(f"sentences {args.skip + lo + 1}-{args.skip + hi}: " + ratio_line(name, table), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": machine_info(), "config": args.config, "store": args.store, "lm": args.lm,
                       "test": args.test, "skip": args.skip, "runs": rows, "equal_score": equal,
                       **({"equal_score_others": others} if "cube" in drivers and others else {}),
                       **({"equal_score_blocks": blocks} if blocks else {})}, f, indent=1)


if __name__ == "__main__":
    main()
