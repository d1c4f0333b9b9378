"""`cky demo` (what `make demo` runs): the default system end to end on a fresh machine.

1. system: the full Bible build if it is there (models/bible-es-en/build, or the user data directory of
   decoder.data.build.default_out, with a config.toml), else `cky data bible-es-en --small` (build/small;
   cached after the first run). That recipe trains with the pipeline of `cky train`: the full, unfiltered
   rule table of its training verses, an icr store, and the weights shipped for the small system
   (decoder/tune/weights/bible-es-en-small.toml, tuned with MERT once; `cky data bible-es-en --small
   --tune` runs MERT instead, several minutes per iteration on 2 cores);
2. translation of the test set (its tokenized verses) on all cores; prints BLEU, chrF, edges per sentence
   and sentences per second;
3. translation of a few raw Spanish sentences, as a user's text would be (the system's tokenizer,
   recaser and detokenizer).

The outputs go to demo/ in the build: test.out (the translations), examples.txt and demo.json (the
scores); the system's config is the build's config.toml, for `cky translate --config`. When the compiled
decoder cannot be imported, the demo says why and compares the binarization strategies' grammar costs on
the fixture system instead.
"""
from __future__ import annotations

import json
import os
import time

from .experiment import fixture_system, read_lines, run_cky

RECIPE = "bible-es-en"
# Raw Spanish, as a user would type it (Reina-Valera 1909 spelling, verses of the training part and
# sentences of no verse).
EXAMPLES = (
    "En el principio creó Dios los cielos y la tierra.",
    "Y dijo Dios: Sea la luz: y fué la luz.",
    "El hombre bueno da de comer a sus hijos.",
    "¿Dónde está tu hermano?",
)


def say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def data_dir(out: str | None = None) -> str:
    """`out` if given (built there with --small when it has no config), else the full build if it is
    finished, else the --small one (built when missing)."""
    from .data.build import default_out

    if out is not None:
        if not os.path.exists(os.path.join(out, "config.toml")):
            run_cky("data", RECIPE, "--small", "--out", out, log=say)
        return out
    full = str(default_out(RECIPE))
    if os.path.exists(os.path.join(full, "config.toml")) and os.path.exists(os.path.join(full, "manifest.json")):
        return full
    small = str(default_out(RECIPE, small=True))
    if not all(os.path.exists(os.path.join(small, name)) for name in ("config.toml", "manifest.json")):
        run_cky("data", RECIPE, "--small", log=say)
    return small


def demo_config(data: str) -> str:
    """The decoder config of a data build."""
    return os.path.join(data, "config.toml")


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


def translate_raw(decoder, sentences, source_tokenizer: str, target_tokenizer: str) -> list[str]:
    """Raw sentences in, readable translations out: through the system's own tokenizer, recaser and
    detokenizer (decoder.text) when its config records its languages, else with the registry's
    tokenizers."""
    if getattr(decoder, "text", None) is not None and decoder.text.raw:
        return [decoder.translate(sentence).text for sentence in sentences]
    from .data.tokenize import TOKENIZERS

    outputs = []
    for sentence in sentences:
        translation = decoder.translate(TOKENIZERS[source_tokenizer].tokenize(sentence))
        outputs.append(TOKENIZERS[target_tokenizer].detokenize(translation.text.split()))
    return outputs


def run_demo(workers: int | None = None, out: str | None = None) -> int:
    """Build what is missing, translate the test set and the examples, print and write the scores;
    returns the exit code."""
    from .benchmark.experiments import decoder_missing
    from .data.build import default_out

    started = time.perf_counter()
    missing = decoder_missing()
    if missing:
        return binarization_only(missing, os.path.join(out or str(default_out(RECIPE)), "demo-fixture"))
    from .batch import translate_batch
    from .evaluate import corpus_bleu, corpus_chrf
    from .tune.config import read_config
    from .tune.decoding import load_decoder, stats_job

    data = data_dir(out)
    manifest = json.loads(open(os.path.join(data, "manifest.json"), encoding="utf-8").read())
    name = manifest.get("name", RECIPE)
    work = os.path.join(data, "demo")
    os.makedirs(work, exist_ok=True)
    config = demo_config(data)
    test_src, test_ref = os.path.join(data, "corpus", "test.tok.src"), os.path.join(data, "corpus", "test.tok.tgt")
    languages = read_config(config).get("languages", {})
    source_tokenizer = languages.get("source_tokenizer", "es")
    target_tokenizer = languages.get("target_tokenizer", "en")

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

    examples = translate_raw(decoder, EXAMPLES, source_tokenizer, target_tokenizer)
    with open(os.path.join(work, "examples.txt"), "w", encoding="utf-8") as f:
        f.writelines(f"{source}\t{target}\n" for source, target in zip(EXAMPLES, examples))
    summary = {"system": name, "config": config, "test_sentences": len(sentences),
               "failed": len(sentences) - len(stats), "bleu": bleu.score, "chrf": chrf.score,
               "edges_per_sentence": edges, "sentences_per_second": len(sentences) / wall, "workers": workers,
               "weights": "given in the config" if read_config(config).get("weights") else "defaults",
               "examples": dict(zip(EXAMPLES, examples)), "seconds_total": time.perf_counter() - started}
    with open(os.path.join(work, "demo.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, ensure_ascii=False)
    print()
    for source, target in zip(EXAMPLES, examples):
        print(f"  {source}\n  -> {target}")
    print()
    print(f"system              {name} (icr binarization, unfiltered store)")
    print(f"config              {config}")
    print(f"test translations   {os.path.join(work, 'test.out')}")
    print(f"test BLEU           {bleu.score:.2f}   ({bleu})")
    print(f"test chrF           {chrf.score:.2f}")
    print(f"edges per sentence  {edges:,.0f}")
    print(f"sentences/s         {summary['sentences_per_second']:.2f} ({workers} processes)")
    raw_flags = "" if decoder.text.raw else f" --tokenize {source_tokenizer} --detokenize {target_tokenizer}"
    print(f"raw text:           cky translate --config {config}{raw_flags}")
    return 0
