"""The parse stage: Penn trees of the target side with link-grammar, as the Bible recipe parses
(decoder.data.parse: a worker pool with a hard time limit per sentence, or tasks on a Dask cluster;
answers cached per sentence in an SQLite file, decoder.data.parse_cache; decoder.data.trees: the
trees' leaves are exactly the tokens).

Target languages with a parser: PARSERS. Link-grammar sees the cased tokens; where casing
changed the tokenization of a line, it sees the lowercased ones.
"""
from __future__ import annotations

from pathlib import Path

from ..data import parse
from .split import read_lines, write_lines
from .stages import log

PARSERS = {"en": "link-grammar (English dictionary)"}


def parse_file(tokens_path: Path, cased_path: Path, trees_path: Path, cache_path: Path | None, work_dir: Path,
               workers: int, progress: bool = True, client=None, warn=None) -> dict:
    """Write the trees of `tokens_path`'s lines to `trees_path`; answers are cached in `cache_path`,
    `work_dir` holds the workers' log (and an earlier version's chunk files, read into the cache).
    Returns the statistics that describe the trees (not those of this run)."""
    verses = [line.split() for line in read_lines(tokens_path)]
    cased = [line.split() for line in read_lines(cased_path)]
    cased = [c if len(c) == len(v) else v for c, v in zip(cased, verses)]
    result = parse.parse_verses(verses, cache_path, work_dir, max(1, workers), parser_verses=cased,
                                client=client, show_progress=progress, warn=warn)
    write_lines(trees_path, result.trees)
    run = result.statistics
    log(f"parse: {run['sentences']} sentences, {run['distinct_sentences']} distinct: "
        f"{run['sentences_from_cache_this_run']} from the cache {cache_path}, "
        + (f"{run['sentences_from_earlier_chunk_files_this_run']} from earlier chunk files, "
           if run['earlier_chunk_files_read_this_run'] else "")
        + f"{run['sentences_parsed_this_run']} parsed in {run['parse_seconds_this_run']} s")
    return {key: value for key, value in result.statistics.items() if not key.endswith("_this_run")}
