"""`cky translate`: translate sentences, one per line, with the CKY decoder.

    cky translate --config CONFIG [--kbest K --kbest-out FILE] [--trees-out FILE]
                  [--stats-out FILE.jsonl] [--workers N [--resume]] < input > output
    cky translate --store STORE --lm LM.bin [--exhaustive] [--pop-limit N] < input > output

Without a config the decoder uses the documented default weights
(decoder.search.model.DEFAULT_WEIGHTS; 0.2 per rule-table score). Every input
line gives exactly one output line: an empty line gives an empty line, and a
sentence whose decoding fails is logged with its line number and gets its source
words passed through (the other lines are unaffected).

Side outputs: --kbest-out in the Moses n-best format (`line ||| text ||| name=value
... ||| score`, lines numbered from 0), --trees-out one target tree per line,
--stats-out one JSON object per line (`line`, `score`, `features`, `edges_proposed`,
`edges_kept`, `lm_queries`, `lm_queries_novel`, `items_per_cell`, `seconds`, and
`error` for a failed line).
"""
from __future__ import annotations

import argparse
import functools
import json
import logging
import sys

from .store import StoreError

log = logging.getLogger("cky.translate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="decoder config (TOML; see decoder/decoder.py for the keys)")
    parser.add_argument("--store", help="grammar store directory (without --config)")
    parser.add_argument("--lm", help="KenLM language model (without --config)")
    from .settings import SEARCH_ALGORITHMS

    parser.add_argument("--search", choices=list(SEARCH_ALGORITHMS),
                        help="search algorithm (default: the config's, else cube): cube pruning, or two-pass "
                             "search (Venugopal et al. 2007; second pass bounded by the config's two_pass_beam, "
                             "agenda_limit, max_pops, edge_limit)")
    parser.add_argument("--exhaustive", action="store_true", help="no pruning (small inputs only)")
    parser.add_argument("--pop-limit", type=int, help="cube pruning pops per cell (default 100; 0: unlimited)")
    parser.add_argument("--beam-size", type=int, help="items kept per cell (default: no limit)")
    parser.add_argument("--max-span", type=int, help="longest span of a non-glue rule (default 20)")
    parser.add_argument("--kbest", type=int, default=0, help="write the K best translations to --kbest-out")
    parser.add_argument("--kbest-out", help="k-best file (Moses n-best format)")
    parser.add_argument("--non-unique", action="store_true", help="k-best derivations, not distinct translations")
    parser.add_argument("--trees-out", help="file of target trees, one per line")
    parser.add_argument("--stats-out", help="JSON lines of per-sentence search statistics")
    parser.add_argument("--input", help="input file (default: standard input)")
    parser.add_argument("--output", help="output file (default: standard output)")
    parser.add_argument("--workers", type=int, default=1, help="decoding processes (default 1)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run (needs --output); see decoder.batch")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def build_decoder(args):
    from .decoder import Decoder

    overrides = {}
    if args.search is not None:
        overrides["search"] = args.search
    if args.exhaustive:
        overrides["exhaustive"] = True
    if args.pop_limit is not None:
        overrides["pop_limit"] = args.pop_limit
    if args.beam_size is not None:
        overrides["beam_size"] = args.beam_size
    if args.max_span is not None:
        overrides["max_span"] = args.max_span
    if args.config:
        return Decoder.from_config(args.config, **overrides)
    if not args.store or not args.lm:
        raise SystemExit("cky translate: give --config CONFIG, or --store STORE and --lm LM")
    return Decoder(args.store, args.lm, **overrides)


def _format_features(features: dict) -> str:
    return " ".join(f"{name}={value:.6g}" for name, value in features.items())


def _stats_record(line: int, translation) -> dict:
    record = {"line": line, "score": float(translation.score), "features": dict(translation.features)}
    record.update(translation.stats or {})
    record["items_per_cell"] = {str(k): v for k, v in record.get("items_per_cell", {}).items()}
    return record


def sentence_outputs(decoder, sentence: str, kbest: int = 0, unique: bool = True, line: int | None = None) -> dict:
    """The text every output file gets for one sentence (each a complete line or lines)."""
    if kbest > 0:
        translations = decoder.kbest(sentence, kbest, unique=unique)
        best = translations[0]
    else:
        best = decoder.translate(sentence)
        translations = [best]
    out = {"output": best.text + "\n", "trees": best.tree + "\n"}
    out["kbest"] = "".join(f"{{line}} ||| {t.text} ||| {_format_features(t.features)} ||| {t.score:.6g}\n"
                           for t in translations) if best.text or kbest else ""
    out["stats"] = json.dumps(_stats_record(-1, best), ensure_ascii=False) + "\n"
    return out


def _job(decoder, sentence: str, kbest: int, unique: bool) -> dict:
    return sentence_outputs(decoder, sentence, kbest, unique)


def _fallback(sentence: str, line: int, error: str) -> dict:
    """What a failed sentence writes: its source words passed through."""
    words = " ".join(sentence.split())
    record = {"line": line, "score": None, "features": {}, "error": error, "edges_proposed": 0, "edges_kept": 0,
              "lm_queries": 0, "lm_queries_novel": 0, "seconds": 0.0}
    return {"output": words + "\n", "trees": "\n", "kbest": f"{{line}} ||| {words} ||| error ||| 0\n",
            "stats": json.dumps(record, ensure_ascii=False) + "\n"}


def _finish(texts: dict, line_index: int) -> dict:
    """Fill the line number (0-based in n-best lists, 1-based in stats) into a sentence's outputs."""
    texts = dict(texts)
    texts["kbest"] = texts.get("kbest", "").replace("{line}", str(line_index))
    stats = texts.get("stats")
    if stats:
        record = json.loads(stats)
        record["line"] = line_index + 1
        texts["stats"] = json.dumps(record, ensure_ascii=False) + "\n"
    return texts


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    if args.kbest and not args.kbest_out:
        raise SystemExit("cky translate: --kbest needs --kbest-out FILE")
    if args.resume and not args.output:
        raise SystemExit("cky translate: --resume needs --output FILE")
    if args.input:
        with open(args.input, encoding="utf-8") as f:
            sentences = [line.rstrip("\n") for line in f]
    else:
        sentences = [line.rstrip("\n") for line in sys.stdin]
    try:
        decoder = build_decoder(args)
    except (OSError, ValueError, StoreError) as error:  # missing or corrupt store, LM or config
        where = f"{args.config}: " if args.config and type(error).__name__ == "TOMLDecodeError" else ""
        print(f"cky translate: {where}{error}", file=sys.stderr)
        return 1
    log.info("loaded %r in %.2f s", decoder, decoder.load_seconds)
    job = functools.partial(_job, kbest=args.kbest, unique=not args.non_unique)

    paths = {"output": args.output}
    if args.kbest_out:
        paths["kbest"] = args.kbest_out
    if args.trees_out:
        paths["trees"] = args.trees_out
    if args.stats_out:
        paths["stats"] = args.stats_out

    from .batch import Failure, iter_translate, translate_to_files

    numbered = [f"{i}\t{s}" for i, s in enumerate(sentences)]
    numbered_job = functools.partial(_numbered_job, job=job)
    if args.resume:
        summary = translate_to_files(decoder, numbered, paths, numbered_job,
                                     failure=lambda line, error: _finish(_fallback(sentences[line - 1], line, error),
                                                                         line - 1),
                                     workers=args.workers, resume=True, progress=not args.quiet)
        log.info("%d sentences (%d failed) in %.1f s", summary["sentences"], summary["failed"], summary["seconds"])
        return 0

    files = {name: (open(path, "w", encoding="utf-8") if path else sys.stdout) for name, path in paths.items()}
    failed = 0
    try:
        for index, result in iter_translate(decoder, numbered, args.workers, numbered_job,
                                            progress=not args.quiet and args.workers > 1):
            if isinstance(result, Failure):
                failed += 1
                result = _finish(_fallback(sentences[index], index + 1, result.error), index)
            for name, f in files.items():
                f.write(result.get(name, ""))
            files["output"].flush()
    finally:
        for name, f in files.items():
            if f is not sys.stdout:
                f.close()
    if failed:
        log.warning("%d of %d sentences failed (their source words were passed through)", failed, len(sentences))
    return 0


def _numbered_job(decoder, numbered_sentence: str, job) -> dict:
    """Run `job` on a sentence given as "index<TAB>text" and fill its line number into the outputs."""
    index, _, sentence = numbered_sentence.partition("\t")
    return _finish(job(decoder, sentence), int(index))
