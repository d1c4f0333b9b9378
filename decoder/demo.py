"""`cky demo` (what `make demo` runs): the default system end to end on a fresh machine.

1. data: the full Bible build if it is there (models/bible-es-en/build/manifest.json), else
   `cky data bible-es-en --small` (models/bible-es-en/build/small/; cached after the first run);
2. GHKM extraction with `cky extract`, filtered to the test set;
3. `cky compile --strategy icr` (filtered to the test set);
4. weights: the shipped tuned weights for the system if there are any
   (decoder/tune/weights/NAME.toml), else the decoder's documented defaults;
5. translation of the test set on all cores; prints BLEU, edges per sentence and sentences per second.

Steps already done are reused (each writes its output last). The outputs go
to demo/ in the data build: config.toml (the decoder config, for `cky translate
--config`), test.out (the translations) and demo.json (the scores). When the
compiled decoder cannot be imported, the demo says why and compares the
binarization strategies' grammar costs on the fixture system instead.
"""
from __future__ import annotations

import json
import os
import time

from .experiment import System, bible_build, fixture_system, read_lines, run_cky, write_decoder_config

# The shipped tuned weights, by system name (decoder/tune/weights/NAME.toml).
SHIPPED_WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tune", "weights")


def say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def data_dir() -> str:
    """The full Bible build if it is finished, else the --small one (built here when missing)."""
    build = bible_build()
    if os.path.exists(os.path.join(build, "manifest.json")):
        return build
    small = os.path.join(build, "small")
    if not os.path.exists(os.path.join(small, "manifest.json")):
        run_cky("data", "bible-es-en", "--small", log=say)
    return small


def demo_config(data: str | None = None) -> str:
    """The decoder config the demo writes for a data build (default: the full build)."""
    return os.path.join(data or bible_build(), "demo", "config.toml")


def binarization_only(reason: str, work: str) -> int:
    """Without the compiled decoder: the grammar cost of each binarization strategy on the fixture system."""
    from .benchmark.experiments import grammar_costs

    say(f"the decoder cannot be used: {reason}")
    say("comparing the binarization strategies on the fixture grammar instead")
    system = fixture_system(work)
    costs = grammar_costs(system.rules)
    for strategy, entry in costs["strategies"].items():
        print(f"{strategy:12s} Q(G') = {entry['cost']:>14,.0f}   binary rules {entry['binary_rules']:>10,.0f}")
    return 0


def run_demo(workers: int | None = None) -> int:
    """Build what is missing, translate the test set, print and write the scores; returns the exit code."""
    from .benchmark.experiments import decoder_missing

    started = time.perf_counter()
    missing = decoder_missing()
    if missing:
        return binarization_only(missing, os.path.join(bible_build(), "demo-fixture"))
    from .batch import translate_batch
    from .evaluate import corpus_bleu, corpus_chrf
    from .tune.config import read_config
    from .tune.decoding import load_decoder, stats_job

    data = data_dir()
    name = "bible-es-en" if data == bible_build() else "bible-es-en-small"
    work = os.path.dirname(demo_config(data))
    os.makedirs(work, exist_ok=True)
    test_src, test_ref = os.path.join(data, "test.es"), os.path.join(data, "test.en")

    rules = os.path.join(work, "rules.test.gz")
    glue = os.path.join(work, "glue.gz")
    if not os.path.exists(rules):
        run_cky("extract", "--source", os.path.join(data, "train.es"), "--trees", os.path.join(data, "train.trees"),
                "--alignment", os.path.join(data, "train.align"), "--filter-to", test_src, "--glue", glue,
                "--out", rules, log=say)
    store = os.path.join(work, "store-icr")
    if not os.path.exists(os.path.join(store, "meta.json")):
        run_cky("compile", "--strategy", "icr", "--filter", test_src, rules, store, log=say)

    shipped = os.path.join(SHIPPED_WEIGHTS, f"{name}.toml")
    weights = read_config(shipped).get("weights") if os.path.exists(shipped) else None
    say(f"weights: {'shipped, tuned with MERT: ' + shipped if weights else 'the decoder defaults (not tuned)'}")
    config = demo_config(data)
    system = System(name, rules, os.path.join(data, "lm.bin"), "", "", test_src, test_ref, work,
                    glue=glue if os.path.exists(glue) else None)
    write_decoder_config(system, store, config, weights=weights)

    sentences = read_lines(test_src)
    references = read_lines(test_ref)
    workers = workers or os.cpu_count() or 1
    say(f"translating {len(sentences)} test sentences with {workers} processes")
    decoder = load_decoder(config)
    decode_started = time.perf_counter()
    results = translate_batch(decoder, sentences, workers=workers, job=stats_job, progress=True)
    wall = time.perf_counter() - decode_started
    hypotheses = [r["text"] if isinstance(r, dict) else "" for r in results]
    with open(os.path.join(work, "test.out"), "w", encoding="utf-8") as f:
        f.writelines(h + "\n" for h in hypotheses)
    stats = [r["stats"] for r in results if isinstance(r, dict)]
    edges = sum(float(s.get("edges_proposed", 0)) for s in stats) / max(len(stats), 1)
    bleu = corpus_bleu(hypotheses, references, tokenize="none")
    chrf = corpus_chrf(hypotheses, references)
    summary = {"system": name, "test_sentences": len(sentences), "failed": len(sentences) - len(stats),
               "bleu": bleu.score, "chrf": chrf.score, "edges_per_sentence": edges,
               "sentences_per_second": len(sentences) / wall, "workers": workers,
               "weights": "shipped" if weights else "defaults", "seconds_total": time.perf_counter() - started}
    with open(os.path.join(work, "demo.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print()
    print(f"system              {name} (icr binarization, output in {os.path.join(work, 'test.out')})")
    print(f"test BLEU           {bleu.score:.2f}   ({bleu})")
    print(f"test chrF           {chrf.score:.2f}")
    print(f"edges per sentence  {edges:,.0f}")
    print(f"sentences/s         {summary['sentences_per_second']:.2f} ({workers} processes)")
    return 0
