"""Benchmark: the SDIG system (Ding and Palmer 2005; decoder.sdig) beside the GHKM system on the
Bible test set, and SDIG against its word-based baseline (the paper's section-5 comparison).

    python -m bench.bench_sdig --sdig-config SDIG.toml [--word-grammar GWORD_DIR] [--sentences 600]
        [--ghkm-config models/bible-es-en/build/config.toml] [--ghkm-hypotheses demo/test.out]
        [--ghkm-timing-sentences 30]
    cky bench --sdig ... (the same flags)

Systems, all decoded from the tokenized, lowercased test text, one process, one at a time:
- ghkm: the GHKM string-to-tree system (the demo config: icr store, default weights). Its 600
  test hypotheses are expensive (about 1 s of CPU per verse): with --ghkm-hypotheses the
  translation quality is scored from an existing output of that config (`cky demo`
  writes demo/test.out), and its speed is measured here on the first --ghkm-timing-sentences;
- sdig: the SDIG config (its grammar, LM, beam and weights);
- sdig-word: the same config with --word-grammar, a grammar of Model 1 word-pair ETs only
  (no induced multi-word ETs): the paper's word-based baseline, needing nothing new;
- sdig-paper (--paper): the SDIG grammar without the LM, the paper's own model (default weights);
  sdig-word-paper (--paper with --word-grammar): the baseline's grammar the same way;
- sdig-order: the SDIG config with the child order model (reorder = true), the third step of
  the issue's "no LM, + LM, + order model" (--no-order skips it).

--check-reference N also decodes the first N pre-parsed test verses (--trees, default
SOURCE.conllu) with the compiled search and the pure-Python reference and counts identical
10-best lists (with the LM, with the order model, without the LM).

The word-ET grammar: `python -m decoder.sdig train BUILD GWORD_DIR --word-baseline`.

Per system: BLEU (sacrebleu, tokenize none: the text is tokenized) and chrF on the first
--sentences test verses, sentences per second and ms per verse (CPU time of this process,
parsing included), and the split between parsing (spaCy; GHKM parses nothing) and decoding;
grammar size (GHKM: source rules
of the store; SDIG: ET pairs of the grammar). Writes bench/results/sdig.json and sdig.md.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

from bench import RESULTS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(REPO, "models", "bible-es-en", "build")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sdig-config", required=True, help="a `system = \"sdig\"` config (tuned weights)")
    parser.add_argument("--word-grammar", help="grammar of Model 1 word ETs only (the baseline)")
    parser.add_argument("--word-config", help="the baseline's own config (its tuned weights; default: the SDIG "
                                              "config with --word-grammar)")
    parser.add_argument("--paper", action="store_true", help="also the paper's model (no LM, default weights)")
    parser.add_argument("--no-order", action="store_true", help="skip the config + child order model step")
    parser.add_argument("--check-reference", type=int, default=0, metavar="N",
                        help="also compare the compiled search with the pure-Python reference on the first N "
                             "test verses (10-best lists, with and without the LM and the order model)")
    parser.add_argument("--trees", default=None, help="pre-parsed test trees for --check-reference "
                                                       "(default: SOURCE with .conllu)")
    parser.add_argument("--ghkm-config", default=os.path.join(BUILD, "demo", "config.toml"))
    parser.add_argument("--ghkm-hypotheses", default=None,
                        help="an existing output of --ghkm-config on the test set, to score (default: decode)")
    parser.add_argument("--ghkm-timing-sentences", type=int, default=30,
                        help="verses GHKM decodes for its speed when --ghkm-hypotheses is given")
    parser.add_argument("--source", default=os.path.join(BUILD, "test.es"))
    parser.add_argument("--reference", default=os.path.join(BUILD, "test.en"))
    parser.add_argument("--sentences", type=int, default=600, help="first N test verses")
    parser.add_argument("--out", default=RESULTS, help="directory of sdig.json and sdig.md")


def _lines(path: str, n: int) -> list[str]:
    from decoder.evaluate import read_lines

    return read_lines(path)[:n]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _quality(hypotheses: list[str], references: list[str]) -> dict:
    from decoder.evaluate import corpus_bleu, corpus_chrf

    return {"bleu": round(corpus_bleu(hypotheses, [references], tokenize="none").score, 2),
            "chrf": round(corpus_chrf(hypotheses, [references]).score, 2)}


def grammar_size(decoder) -> dict:
    if getattr(decoder, "grammar_path", None):  # SDIG
        stats_path = os.path.join(decoder.grammar_path, "stats.json")
        stats = json.loads(pathlib.Path(stats_path).read_text()) if os.path.exists(stats_path) else {}
        with open(os.path.join(decoder.grammar_path, "ets.tsv"), encoding="utf-8") as f:
            pairs = sum(1 for _ in f)
        return {"et_pairs": pairs, "induced_et_pairs": stats.get("induced_et_pairs"),
                "model1_et_pairs": stats.get("model1_et_pairs")}
    meta = json.loads(pathlib.Path(decoder.store.path, "meta.json").read_text())
    report = meta.get("report", {})
    return {"source_rules": report.get("source_rules"), "binary_rules": report.get("binary_rules")}


def decode(name: str, decoder, sentences: list[str], log) -> dict:
    """Translate every sentence, timing CPU (this process): for SDIG, parsing (spaCy) and decoding
    (translate on the parsed tree) separately; wall time on a shared machine mostly measures the
    other processes, so it is kept only as a total."""
    parser = getattr(decoder, "parser", None)  # SDIG parses its input; GHKM does not
    decoder.translate(sentences[0])  # warm up: the parser and LM pages load outside the timing
    started = time.perf_counter()
    texts, parse_cpu, decode_cpu = [], 0.0, 0.0
    for k, sentence in enumerate(sentences, 1):
        tree = None
        if parser is not None and sentence.split():
            cpu = time.process_time()
            tree = parser.parse(sentence.split())
            parse_cpu += time.process_time() - cpu
        cpu = time.process_time()
        t = decoder.translate(sentence, tree=tree) if tree is not None else decoder.translate(sentence)
        decode_cpu += time.process_time() - cpu
        texts.append(t.text)
        if k % 100 == 0:
            log(f"{name}: {k}/{len(sentences)}")
    wall = time.perf_counter() - started
    n = max(len(sentences), 1)
    total = parse_cpu + decode_cpu
    return {"texts": texts, "sentences": len(sentences), "cpu_seconds": round(total, 2),
            "wall_seconds": round(wall, 2), "sentences_per_second": round(n / total, 2),
            "ms_per_verse": round(1000 * total / n, 1), "parse_ms_per_verse": round(1000 * parse_cpu / n, 1),
            "decode_ms_per_verse": round(1000 * decode_cpu / n, 1)}


def run(args, log=lambda m: print(m, file=sys.stderr, flush=True)) -> dict:
    from decoder.tune.decoding import load_decoder
    from decoder.tune.config import read_config

    sources = _lines(args.source, args.sentences)
    references = _lines(args.reference, args.sentences)
    results: dict = {"sentences": len(sources), "source": args.source, "reference": args.reference,
                     "systems": {}, "machine": {"cpus": os.cpu_count(), "load_before": _load()}}

    def system(name, decoder, config, note, texts=None, timing_sentences=None):
        log(f"{name}: {decoder!r}")
        timed = decode(name, decoder, sources[:timing_sentences] if timing_sentences else sources, log)
        texts = texts if texts is not None else timed.pop("texts")
        timed.pop("texts", None)
        entry = {"config": config, "note": note, **_quality(texts, references), **timed,
                 "grammar": grammar_size(decoder), "settings": dict(decoder.settings),
                 "weights": dict(decoder.weights.by_name)}
        results["systems"][name] = entry
        log(f"{name}: {json.dumps({k: v for k, v in entry.items() if k not in ('settings', 'weights')})}")
        return entry

    ghkm = load_decoder(args.ghkm_config)
    if args.ghkm_hypotheses:
        texts = _lines(args.ghkm_hypotheses, args.sentences)
        if len(texts) != len(sources):
            raise SystemExit(f"{args.ghkm_hypotheses} has {len(texts)} lines, the test set {len(sources)}")
        system("ghkm", ghkm, args.ghkm_config, f"BLEU/chrF scored from {args.ghkm_hypotheses} (this config's "
               f"output); speed measured on the first {args.ghkm_timing_sentences} verses", texts,
               args.ghkm_timing_sentences)
    else:
        system("ghkm", ghkm, args.ghkm_config, "decoded here")
    del ghkm

    from decoder.sdig.decoder import SdigDecoder

    def paper_model(decoder, name, note, config=args.sdig_config):
        paper = SdigDecoder(decoder.grammar, None, None, beam_size=1, parser=decoder.parser)
        paper.grammar_path = decoder.grammar_path
        system(name, paper, config, note)

    sdig = load_decoder(args.sdig_config)
    if args.paper:
        paper_model(sdig, "sdig-paper", "the paper's model: SDIG grammar, no LM, default weights")
    system("sdig", sdig, args.sdig_config, "SDIG grammar + LM beam search")
    del sdig
    if not args.no_order:
        ordered = load_decoder(args.sdig_config, reorder=True)
        system("sdig-order", ordered, args.sdig_config, "SDIG grammar + LM beam search + the child order model")
        del ordered
    if args.word_grammar or args.word_config:
        if args.word_config:
            word, config = load_decoder(args.word_config), args.word_config
            note = "baseline: Model 1 word ETs only, its own config (LM, beam, tuned weights)"
        else:
            word, config = load_decoder(args.sdig_config, grammar=os.path.abspath(args.word_grammar)), args.sdig_config
            note = f"baseline: Model 1 word ETs only ({args.word_grammar}), the SDIG config's LM, beam and weights"
        if args.paper:
            paper_model(word, "sdig-word-paper", f"baseline without LM: Model 1 word ETs only "
                                                 f"({word.grammar_path}), default weights", config)
        system("sdig-word", word, config, note)
    if args.check_reference:
        results["reference_check"] = check_reference(args, log)
    cfg = read_config(args.sdig_config)
    results["sdig_config"] = cfg
    results["machine"]["load_after"] = _load()
    return results


def check_reference(args, log) -> list[dict]:
    """The compiled search (Search.search) against the pure-Python reference (search_reference) on
    real verses: identical 10-best lists (scores and features to 1e-9, words, derivations)."""
    from decoder.sdig.deptree import read_conllu
    from decoder.tune.decoding import load_decoder

    trees = [t for t in read_conllu(args.trees or args.source + ".conllu")][:args.check_reference]
    out = []
    from decoder.sdig.decoder import SdigDecoder

    base = load_decoder(args.sdig_config)
    settings = dict(weights=base.search.weights(), beam_size=base.search.beam_size)
    for name, decoder in (("lm", base), ("lm+order", SdigDecoder(base.grammar, base.lm, reorder=True, **settings)),
                          ("no-lm", SdigDecoder(base.grammar, None, **settings))):
        identical = compiled_cpu = reference_cpu = 0.0
        verses = 0
        for tree in trees:
            if not len(tree):
                continue
            started = time.process_time()
            compiled, compiled_stats = decoder.search.search(tree, k=10)
            middle = time.process_time()
            reference, reference_stats = decoder.search.search_reference(tree, k=10)
            compiled_cpu += middle - started
            reference_cpu += time.process_time() - middle
            verses += 1
            identical += (compiled_stats == reference_stats and len(compiled) == len(reference) and all(
                abs(c.score - r.score) < 1e-9 and c.words == r.words and c.derivation == r.derivation
                and max(abs(x - y) for x, y in zip(c.features, r.features)) < 1e-9
                for c, r in zip(compiled, reference)))
        entry = {"setting": name, "verses": verses, "identical_10best": int(identical),
                 "compiled_ms_per_verse": round(1000 * compiled_cpu / max(verses, 1), 2),
                 "reference_ms_per_verse": round(1000 * reference_cpu / max(verses, 1), 2)}
        log(f"reference check: {json.dumps(entry)}")
        out.append(entry)
    return out


def markdown(results: dict) -> str:
    rows = ["| system | BLEU | chrF | sentences/s | ms/verse (CPU) | parse ms/verse | decode ms/verse | "
            "grammar | verses timed |", "|---|---|---|---|---|---|---|---|---|"]
    for name, s in results["systems"].items():
        g = s["grammar"]
        size = (f"{g['et_pairs']:,} ET pairs" if "et_pairs" in g else f"{g['source_rules']:,} rules (filtered "
                f"to test), {g['binary_rules']:,} binary")
        rows.append(f"| {name} | {s['bleu']:.2f} | {s['chrf']:.2f} | {s['sentences_per_second']} | "
                    f"{s['ms_per_verse']} | {s['parse_ms_per_verse']} | {s['decode_ms_per_verse']} | {size} | "
                    f"{s['sentences']} |")
    systems = results["systems"]
    if "ghkm" in systems and "sdig" in systems and systems["sdig"]["decode_ms_per_verse"]:
        rows.append("")
        rows.append(f"SDIG decoding (without parsing) is {systems['ghkm']['decode_ms_per_verse'] / systems['sdig']['decode_ms_per_verse']:.1f} "
                    f"times faster per verse than GHKM (CKY, pop limit {systems['ghkm']['settings'].get('pop_limit')}); "
                    f"with parsing {systems['ghkm']['ms_per_verse'] / systems['sdig']['ms_per_verse']:.1f} times.")
    for k, check in enumerate(results.get("reference_check", [])):
        rows.extend([""] if k == 0 else [])
        rows.append(f"Compiled search vs the Python reference ({check['setting']}, 10-best): "
                    f"{check['identical_10best']} of {check['verses']} verses identical; "
                    f"{check['compiled_ms_per_verse']} vs {check['reference_ms_per_verse']} ms per verse "
                    f"(search only, options registered on first use included).")
    notes = "\n".join(f"- {name}: {s['note']}; config {s['config']}" for name, s in results["systems"].items())
    machine = results.get("machine", {})
    return (f"# SDIG vs GHKM on the Bible test set ({results['sentences']} verses)\n\n" + "\n".join(rows)
            + "\n\n" + notes + "\n\n" + f"Load average before / after: {machine.get('load_before')} / "
            f"{machine.get('load_after')} (CPU times of one process; the machine is shared).\n")


def main(args) -> int:
    results = run(args)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "sdig.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, default=str)
    text = markdown(results)
    with open(os.path.join(args.out, "sdig.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.bench_sdig", description=__doc__.splitlines()[0])
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
