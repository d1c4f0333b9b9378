"""Benchmark: sentences per second on a Dask LocalCluster (decoder.cluster) against decoder.batch.

    python -m bench.bench_cluster [--system fixture|bible] [--sentences N] [--shard-size 8]
                                  [--config CONFIG --input FILE]

Systems: `fixture`, the tiny fixture system (decoder.fixture; built into models/cache/fixture
if missing), its test sentences repeated to --sentences (default 600); `bible`, the Bible
demo system (models/bible-es-en/build/config.toml, the first --sentences (default 100)
verses of ../test.es; --config and --input name another build). Runs: decoder.batch with 1
and 2 processes (given the config: each worker loads the decoder once) and decoder.cluster
with LocalClusters of 1 and 2 workers. Times are wall seconds of the decoding call only;
starting a cluster (and its workers' loading of the decoder, done on the first run) is timed
apart. The machine is often shared: the load average before and after each run is recorded.
Writes the system's entry of bench/results/cluster.json (the other systems' entries are kept,
and the system's last earlier measurements under "earlier").
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import time

from bench import RESULTS as RESULTS_DIR
from bench.machine import machine_info

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(RESULTS_DIR, "cluster.json")
FIXTURE = os.path.join(REPOSITORY, "models", "cache", "fixture")
KEEP_EARLIER = 4  # earlier measurements of a system kept in the results
BIBLE_CONFIG = os.path.join(REPOSITORY, "models", "bible-es-en", "build", "demo", "config.toml")


def fixture_config() -> tuple[str, list[str]]:
    from decoder.fixture import build_fixture, fixture_store

    paths = build_fixture(FIXTURE)
    store = fixture_store(paths, "icr")
    config = os.path.join(FIXTURE, "bench_cluster.toml")
    with open(config, "w") as f:
        f.write(f'store = "{store}"\nlm = "{paths["lm"]}"\nglue = "{paths["glue"]}"\n')
    with open(paths["test_es"], encoding="utf-8") as f:
        return config, [line.rstrip("\n") for line in f]


def bible_config(config: str | None, source: str | None) -> tuple[str, list[str]]:
    config = os.path.abspath(config or BIBLE_CONFIG)
    source = source or os.path.join(os.path.dirname(os.path.dirname(config)), "test.es")
    if not os.path.exists(config) or not os.path.exists(source):
        raise SystemExit(f"bench_cluster: {config} or {source} is missing: build the Bible system "
                         f"(models/bible-es-en) or give --config and --input")
    with open(source, encoding="utf-8") as f:
        return config, [line.rstrip("\n") for line in f]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("fixture", "bible"), default="fixture")
    parser.add_argument("--sentences", type=int, help="default: 600 (fixture), 100 (bible)")
    parser.add_argument("--shard-size", type=int, default=8)
    parser.add_argument("--config", help="the bible system's config (default: the demo build)")
    parser.add_argument("--input", help="the bible system's input (default: test.es beside the build)")
    args = parser.parse_args(argv)

    from decoder.batch import translate_batch
    from decoder.decoder import Decoder
    from decoder.cluster import connect, translate_on_cluster

    if args.system == "fixture":
        config, test = fixture_config()
        count = args.sentences or 600
        sentences = (test * (count // len(test) + 1))[:count]
        system = "fixture (icr)"
    else:
        config, test = bible_config(args.config, args.input)
        sentences = test[:args.sentences or 100]
        system = f"bible demo ({config})"
    words = sum(len(s.split()) for s in sentences)
    runs, reference = [], None

    def record(name, workers, seconds, results, load_before, startup=None):
        nonlocal reference
        texts = [r.text for r in results]
        reference = reference or texts
        runs.append({"run": name, "workers": workers, "seconds": round(seconds, 3),
                     "sentences_per_second": round(len(sentences) / seconds, 2),
                     "startup_seconds": None if startup is None else round(startup, 3),
                     "same_output": texts == reference,
                     "load_average_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)]})
        print(f"{name:10s} {workers} workers: {len(sentences) / seconds:8.2f} sentences/s"
              + ("" if startup is None else f"  (cluster start and decoder load {startup:.1f} s)")
              + f"  load {load_before:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)

    for workers in (1, 2):
        load = os.getloadavg()[0]
        started = time.perf_counter()
        results = translate_batch(functools.partial(Decoder.from_config, config), sentences, workers=workers)
        record("batch", workers, time.perf_counter() - started, results, load)
    for workers in (1, 2):
        started = time.perf_counter()
        with connect(f"local:{workers}") as client:
            translate_on_cluster(client, config, sentences[:workers])  # start-up: workers load the decoder
            startup = time.perf_counter() - started
            load = os.getloadavg()[0]
            started = time.perf_counter()
            results = translate_on_cluster(client, config, sentences, shard_size=args.shard_size)
            record("dask-local", workers, time.perf_counter() - started, results, load, startup)

    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    try:
        with open(RESULTS) as f:
            results_file = json.load(f)
    except (OSError, ValueError):
        results_file = {}
    if "runs" in results_file:  # the file of one system, as it was first written: the fixture's
        results_file = {"fixture": results_file}
    # on a loaded machine one measurement says little: the last few earlier ones are kept beside it
    earlier = results_file.get(args.system)
    history = ([{k: v for k, v in earlier.items() if k != "earlier"}] + earlier.get("earlier", []))[:KEEP_EARLIER] \
        if earlier else []
    results_file[args.system] = {"machine": machine_info(), "load_average": os.getloadavg(), "system": system,
                                 "sentences": len(sentences), "words": words, "shard_size": args.shard_size,
                                 "runs": runs, "earlier": history}
    with open(RESULTS, "w") as f:
        json.dump(results_file, f, indent=2)
    print(f"wrote the {args.system} entry of {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
