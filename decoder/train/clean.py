"""The clean stage: drop sentence pairs a translation model should not learn from, as Moses'
clean-corpus-n.perl does, and say which and why.

A pair is dropped, for the first reason that applies (checked in this order), when
  invalid_utf8   a side is not valid UTF-8;
  empty          a side has no words;
  too_long       a side has more than `max_words` words;
  length_ratio   one side has more than `max_ratio` times the words of the other.
Words are runs of non-space characters of the raw line (clean-corpus-n counts
the words of its input the same way). Kept lines have their whitespace runs
collapsed to one space and are written in order; the log has one line per
dropped pair: "LINE<TAB>REASON<TAB>detail" (LINE: 1-based, in the input files).
"""
from __future__ import annotations

import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm import tqdm

from ..errors import InputError

REASONS = ("invalid_utf8", "empty", "too_long", "length_ratio")


@dataclass(frozen=True)
class CleanSettings:
    """clean-corpus-n's limits (its usual call: `clean-corpus-n.perl CORPUS xx en CLEAN 1 80`, ratio 9)."""
    max_words: int = 80
    max_ratio: float = 9.0


def count_lines(path: Path) -> int:
    """Lines of a file (a last line without a newline counts)."""
    lines = 0
    last = b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def check_parallel(source: Path, target: Path) -> int:
    """The number of pairs; different line counts are an InputError naming both files and counts."""
    source_lines, target_lines = count_lines(source), count_lines(target)
    if source_lines != target_lines:
        raise InputError(source, f"has {source_lines} lines but {target} has {target_lines}: "
                                 "a parallel corpus has one sentence pair per line")
    return source_lines


def pair_problem(source: bytes, target: bytes, settings: CleanSettings) -> tuple[str, str] | None:
    """(reason, detail) if the pair is dropped, else None."""
    for side, raw in (("source", source), ("target", target)):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return "invalid_utf8", f"{side}: {error.reason} at byte {error.start}"
    lengths = [len(raw.split()) for raw in (source, target)]
    for side, length in zip(("source", "target"), lengths):
        if length == 0:
            return "empty", f"{side} is empty"
    for side, length in zip(("source", "target"), lengths):
        if length > settings.max_words:
            return "too_long", f"{side} has {length} words (limit {settings.max_words})"
    if max(lengths) > settings.max_ratio * min(lengths):
        return "length_ratio", f"{lengths[0]} source words, {lengths[1]} target words (limit ratio {settings.max_ratio})"
    return None


def clean_corpus(source: Path, target: Path, out_source: Path, out_target: Path, log_path: Path,
                 settings: CleanSettings = CleanSettings(), progress: bool = True) -> dict:
    """Write the kept pairs and the log (see the module docstring); returns the counts."""
    total = check_parallel(source, target)
    dropped: Counter = Counter()
    kept = 0
    with open(source, "rb") as source_file, open(target, "rb") as target_file, \
            open(out_source, "w", encoding="utf-8") as source_out, \
            open(out_target, "w", encoding="utf-8") as target_out, \
            open(log_path, "w", encoding="utf-8") as log_file:
        for number, (source_line, target_line) in enumerate(
                tqdm(zip(source_file, target_file), total=total, desc="clean", unit="pairs", file=sys.stderr,
                     disable=not progress, mininterval=1.0), start=1):
            problem = pair_problem(source_line, target_line, settings)
            if problem is not None:
                dropped[problem[0]] += 1
                log_file.write(f"{number}\t{problem[0]}\t{problem[1]}\n")
                continue
            source_out.write(" ".join(source_line.decode("utf-8").split()) + "\n")
            target_out.write(" ".join(target_line.decode("utf-8").split()) + "\n")
            kept += 1
    return {"pairs_read": total, "pairs_kept": kept,
            "dropped": {reason: dropped[reason] for reason in REASONS}, "settings": asdict(settings)}
