"""Benchmark: sentences per second on a Dask LocalCluster (decoder.cluster) against decoder.batch.

    python -m bench.bench_cluster [--sentences 600] [--shard-size 8]

On the tiny fixture system (models/fixtures; built into models/cache/fixture if missing), its
test sentences repeated to --sentences: decoder.batch with 1 and 2 processes (given the config:
each worker loads the decoder once) and decoder.cluster with LocalClusters of 1 and 2 workers.
Times are wall seconds of the decoding call only; starting a cluster (and its workers' loading
of the decoder, done on the first run) is timed apart. Writes bench/results/cluster.json.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import time

from bench.machine import machine_info

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPOSITORY, "bench", "results", "cluster.json")
FIXTURE = os.path.join(REPOSITORY, "models", "cache", "fixture")


def fixture_config() -> tuple[str, list[str]]:
    from models.fixtures.build_fixture import build_fixture, fixture_store

    paths = build_fixture(FIXTURE)
    store = fixture_store(paths, "icr")
    config = os.path.join(FIXTURE, "bench_cluster.toml")
    with open(config, "w") as f:
        f.write(f'store = "{store}"\nlm = "{paths["lm"]}"\nglue = "{paths["glue"]}"\n')
    with open(paths["test_es"], encoding="utf-8") as f:
        return config, [line.rstrip("\n") for line in f]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=600)
    parser.add_argument("--shard-size", type=int, default=8)
    args = parser.parse_args(argv)

    from decoder.batch import translate_batch
    from decoder.decoder import Decoder
    from decoder.cluster import connect, translate_on_cluster

    config, test = fixture_config()
    sentences = (test * (args.sentences // len(test) + 1))[:args.sentences]
    words = sum(len(s.split()) for s in sentences)
    runs, reference = [], None

    def record(name, workers, seconds, results, startup=None):
        nonlocal reference
        texts = [r.text for r in results]
        reference = reference or texts
        runs.append({"run": name, "workers": workers, "seconds": round(seconds, 3),
                     "sentences_per_second": round(len(sentences) / seconds, 1),
                     "startup_seconds": None if startup is None else round(startup, 3),
                     "same_output": texts == reference})
        print(f"{name:10s} {workers} workers: {len(sentences) / seconds:8.1f} sentences/s"
              + ("" if startup is None else f"  (cluster start and decoder load {startup:.1f} s)"))

    for workers in (1, 2):
        started = time.perf_counter()
        results = translate_batch(functools.partial(Decoder.from_config, config), sentences, workers=workers)
        record("batch", workers, time.perf_counter() - started, results)
    for workers in (1, 2):
        started = time.perf_counter()
        with connect(f"local:{workers}") as client:
            translate_on_cluster(client, config, sentences[:workers])  # start-up: workers load the decoder
            startup = time.perf_counter() - started
            started = time.perf_counter()
            results = translate_on_cluster(client, config, sentences, shard_size=args.shard_size)
            record("dask-local", workers, time.perf_counter() - started, results, startup)

    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump({"machine": machine_info(), "load_average": os.getloadavg(), "system": "fixture (icr)",
                   "sentences": len(sentences), "words": words, "shard_size": args.shard_size, "runs": runs},
                  f, indent=2)
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
