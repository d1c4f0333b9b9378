"""The parse stage: Penn trees of the target side with link-grammar, as the Bible recipe parses
(decoder.data.parse: a worker pool with a hard time limit per sentence, a chunked cache that
an interrupted run resumes from; decoder.data.trees: the trees' leaves are exactly the tokens).

Target languages with a parser: PARSERS. Link-grammar sees the cased tokens; where casing
changed the tokenization of a line, it sees the lowercased ones.
"""
from __future__ import annotations

from pathlib import Path

from ..data import parse
from .split import read_lines, write_lines

PARSERS = {"en": "link-grammar (English dictionary)"}


def parse_file(tokens_path: Path, cased_path: Path, trees_path: Path, cache_dir: Path, workers: int,
               progress: bool = True) -> dict:
    verses = [line.split() for line in read_lines(tokens_path)]
    cased = [line.split() for line in read_lines(cased_path)]
    cased = [c if len(c) == len(v) else v for c, v in zip(cased, verses)]
    result = parse.parse_verses(verses, cache_dir, max(1, workers), parser_verses=cased, show_progress=progress)
    write_lines(trees_path, result.trees)
    statistics = dict(result.statistics)
    for key in ("sentences_parsed_this_run", "parse_seconds_this_run", "sentences_per_second_this_run"):
        statistics.pop(key, None)
    return statistics
