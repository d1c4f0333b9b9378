"""The pipeline behind `cky data bible-es-en`: corpus, split, trees, alignments, LM, manifest.

Stages, each timed in the manifest:

1. requirements: Debian packages (SWORD modules and tools, link-grammar) and
   eflomal, installed when missing;
2. corpus: dump both modules, strip OSIS markup, pair verses by reference,
   drop chapters numbered differently (`bible.detect_shifted_chapters`),
   empty verses and pairs with an implausible length ratio; tokenize;
3. split (`split.split_of`); `--small` keeps only the first
   `small_train_verses` training verses (dev and test are unchanged);
4. parse the English training side (`parse.parse_verses`, cached in chunks);
5. align train+dev+test with eflomal both ways + grow-diag-final-and;
6. 5-gram LM on the English training side plus the English-only
   (deuterocanonical) books of the English module, never dev or test;
   perplexity of dev;
7. manifest.json.

The English text is derived from the SWORD module engWEB2015eb (public
domain); since it is tokenized and lowercased here it must not be called the
"World English Bible" (a trademark for the unchanged text).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from decoder.data import align, bible, lm_build, manifest, parse, requirements, split
from decoder.data.align import write_lines
from decoder.data.tokenize import tokenize

REPOSITORY = Path(__file__).resolve().parents[2]
MODEL_DIR = REPOSITORY / "models" / "bible-es-en"
DEFAULT_OUT = MODEL_DIR / "build"
DEFAULT_SMALL_OUT = MODEL_DIR / "build" / "small"
DEFAULT_CACHE = MODEL_DIR / "build" / "cache"


@dataclass
class Pair:
    """One verse pair of the final corpus."""
    reference: str
    spanish: list[str]
    english: list[str]
    english_cased: list[str]      # the same tokens in their original casing, for the parser


def log(message: str) -> None:
    print(f"[cky data] {message}", file=sys.stderr, flush=True)


def build_corpus(max_length_ratio: float = 1.8) -> tuple[list[Pair], list[list[str]], dict]:
    """(pairs, English-only verses for the LM, statistics)."""
    spanish = bible.read_verses(bible.dump_module(bible.SPANISH_MODULE), f"mod2imp {bible.SPANISH_MODULE}")
    english = bible.read_verses(bible.dump_module(bible.ENGLISH_MODULE), f"mod2imp {bible.ENGLISH_MODULE}")
    shifted = bible.detect_shifted_chapters(spanish, english)
    paired = bible.pair_verses(spanish, english)
    dropped = {"shifted_chapter": 0, "empty": 0, "length_ratio": 0}
    pairs = []
    for es, en in paired:
        if (es.book, es.chapter) in shifted:
            dropped["shifted_chapter"] += 1
            continue
        es_tokens, en_tokens = tokenize(es.text, "es"), tokenize(en.text, "en")
        en_cased = tokenize(en.text, "en", lowercase=False)
        if len(en_cased) != len(en_tokens):
            raise RuntimeError(f"{bible.ENGLISH_MODULE} {en.reference}: casing changed the tokenization "
                               f"({en_cased} vs {en_tokens})")
        if not es_tokens or not en_tokens:
            dropped["empty"] += 1
            continue
        if not bible.plausible_length_ratio(len(es_tokens), len(en_tokens), max_length_ratio):
            dropped["length_ratio"] += 1
            continue
        pairs.append(Pair(es.reference, es_tokens, en_tokens, en_cased))
    spanish_books = {verse.book for verse in spanish}
    english_only = [tokenize(verse.text, "en") for verse in english if verse.book not in spanish_books]
    english_only = [tokens for tokens in english_only if tokens]
    statistics = {
        "spanish_verses": len(spanish), "english_verses": len(english),
        "shared_references": len(paired), "pairs": len(pairs), "dropped": dropped,
        "shifted_chapters": [{"book": book, "chapter": chapter, **info}
                             for (book, chapter), info in shifted.items()],
        "english_only_books": sorted({v.book for v in english if v.book not in spanish_books}),
        "english_only_verses": len(english_only),
        "max_length_ratio": max_length_ratio,
    }
    return pairs, english_only, statistics


def lm_cache_dir(cache_dir: Path, small: bool) -> Path:
    """Where the LM stage keeps its training text (lm.en) and work files."""
    return cache_dir / ("lm-small" if small else "lm")


def build_rest_lm(out_dir: Path, cache_dir: Path, small: bool) -> dict:
    """DIR/lm.rest.bin: lm.bin's model with lower-order rest costs (decoder.data.lm_build.build_rest_model),
    from the LM stage's cached training text; needs a finished build. Cached like the other stages."""
    lm_dir = lm_cache_dir(cache_dir, small)
    text = lm_dir / "lm.en"
    if not text.exists() or not (out_dir / "lm.bin").exists():
        raise FileNotFoundError(f"{text} or {out_dir / 'lm.bin'} is missing: build the data first")
    statistics = lm_build.build_rest_model(text, out_dir / "lm.rest.bin", lm_dir)
    log(f"lm.rest.bin: {statistics}")
    return statistics


def build(out_dir: Path, cache_dir: Path, small: bool, processes: int, small_train_verses: int = 3000) -> dict:
    """Run every stage; returns the manifest content."""
    started = time.monotonic()
    timings: dict[str, float] = {}
    out_dir.mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)

    def stage_done(name: str, stage_started: float) -> None:
        timings[name] = round(time.monotonic() - stage_started, 1)
        log(f"{name}: {timings[name]} s")

    stage = time.monotonic()
    installed = requirements.ensure_debian_packages(requirements.SWORD_PACKAGES + requirements.LINK_GRAMMAR_PACKAGES)
    requirements.ensure_pip_package("eflomal")
    stage_done("requirements", stage)

    stage = time.monotonic()
    pairs, english_only, corpus_statistics = build_corpus()
    parts = split.split_positions(len(pairs))
    corpus_statistics["split_full"] = {name: len(positions) for name, positions in parts.items()}
    if small:
        parts["train"] = parts["train"][:small_train_verses]
    for name, positions in parts.items():
        selected = [pairs[i] for i in positions]
        write_lines(out_dir / f"{name}.es", [" ".join(p.spanish) for p in selected])
        write_lines(out_dir / f"{name}.en", [" ".join(p.english) for p in selected])
        write_lines(out_dir / f"{name}.ids", [p.reference for p in selected])
    counts = {name: {"verses": len(positions),
                     "tokens_es": sum(len(pairs[i].spanish) for i in positions),
                     "tokens_en": sum(len(pairs[i].english) for i in positions)}
              for name, positions in parts.items()}
    log(f"corpus: {corpus_statistics['pairs']} pairs; {counts}")
    stage_done("corpus", stage)

    stage = time.monotonic()
    if not parse.link_grammar_available():
        raise RuntimeError("link-grammar's Python bindings cannot be imported (python3-link-grammar)")
    train_english = [pairs[i].english for i in parts["train"]]
    parsed = parse.parse_verses(train_english, cache_dir / "parse", processes,
                                parser_verses=[pairs[i].english_cased for i in parts["train"]])
    write_lines(out_dir / "train.trees", parsed.trees)
    stage_done("parse", stage)
    log(f"parse: {parsed.statistics['verses_by_kind']} verses, {parsed.statistics['sentences_by_kind']} sentences")

    stage = time.monotonic()
    order = [(name, i) for name in ("train", "dev", "test") for i in parts[name]]
    align_dir = cache_dir / ("align-small" if small else "align")
    align_dir.mkdir(parents=True, exist_ok=True)
    symmetrized, alignment_statistics = align.align_pairs(
        [pairs[i].spanish for _, i in order], [pairs[i].english for _, i in order], align_dir,
        names=[f"{name} {pairs[i].reference}" for name, i in order])
    alignment_lines: dict[str, list[str]] = {"train": [], "dev": [], "test": []}
    for (name, i), alignment in zip(order, symmetrized):
        alignment_lines[name].append(align.write_pharaoh(alignment))
    for name, lines in alignment_lines.items():
        write_lines(out_dir / f"{name}.align", lines)
    stage_done("align", stage)

    stage = time.monotonic()
    lm_dir = lm_cache_dir(cache_dir, small)
    lm_dir.mkdir(parents=True, exist_ok=True)
    lm_text = lm_dir / "lm.en"
    write_lines(lm_text, [" ".join(tokens) for tokens in train_english + english_only])
    lm_statistics = lm_build.build_language_model(lm_text, out_dir / "lm.bin", lm_dir)
    lm_statistics["training_sentences"] = len(train_english) + len(english_only)
    lm_statistics["training_tokens"] = sum(len(t) for t in train_english) + sum(len(t) for t in english_only)
    lm_statistics["training_text"] = "train.en + English-only (deuterocanonical) books of engWEB2015eb"
    lm_statistics["dev"] = lm_build.perplexity(out_dir / "lm.bin", out_dir / "dev.en")
    stage_done("lm", stage)

    timings["total"] = round(time.monotonic() - started, 1)
    content = {
        "name": "bible-es-en" + ("-small" if small else ""),
        "small": small,
        "sources": {
            "spanish": {"module": bible.SPANISH_MODULE, "version": bible.module_version(bible.SPANISH_MODULE),
                        "description": "Reina-Valera 1909, public domain"},
            "english": {"module": bible.ENGLISH_MODULE, "version": bible.module_version(bible.ENGLISH_MODULE),
                        "description": "derived (tokenized, lowercased) from the engWEB2015eb module, "
                                       "public domain; changed text, not the World English Bible itself"},
        },
        "tokenization": "decoder.data.tokenize: lowercased, punctuation split, English possessive 's split, "
                        "parentheses as -LRB-/-RRB-",
        "corpus": corpus_statistics,
        "split": counts,
        "parse": parsed.statistics,
        "alignment": alignment_statistics,
        "lm": lm_statistics,
        "timings_seconds": timings,
        "processes": processes,
        "installed_debian_packages": installed,
        "versions": {
            "link-grammar": parsed.statistics.get("link_grammar_version"),
            "link-grammar (Debian)": manifest.debian_version("link-grammar"),
            "sword-text-sparv": manifest.debian_version("sword-text-sparv"),
            "sword-text-web": manifest.debian_version("sword-text-web"),
            "eflomal": manifest.package_version("eflomal"),
            "kenlm sources": sorted(p.name for p in (REPOSITORY / "models/kenlm/build/sdist").glob("kenlm-*")),
            "cky-decoder commit": manifest.git_commit(REPOSITORY),
        },
    }
    path = manifest.write_manifest(out_dir, content)
    log(f"done in {timings['total']} s: {path}")
    return content


def default_processes() -> int:
    return max(1, len(os.sched_getaffinity(0)))
