"""The split stage: the training pairs, and the dev set MERT tunes on.

With `--dev`, the dev set is that pair of files and every cleaned pair trains.
Without it, `held_out_size(n)` pairs spread evenly over the cleaned corpus
(every (n / size)-th pair) are held out as the dev set: 5% of the corpus,
at least MIN_DEV_PAIRS and at most MAX_DEV_PAIRS. MERT on fewer than
MIN_DEV_PAIRS sentences overfits its weights to them, so a smaller dev set is an
error unless tuning is turned off (`--no-tune`).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError, UsageError

MIN_DEV_PAIRS = 50
MAX_DEV_PAIRS = 1000
DEV_FRACTION = 0.05


def held_out_size(pairs: int) -> int:
    return min(MAX_DEV_PAIRS, max(MIN_DEV_PAIRS, round(pairs * DEV_FRACTION)))


def held_out_positions(pairs: int, size: int) -> list[int]:
    """`size` 0-based positions spread evenly over `pairs` (the middle of each of `size` equal parts)."""
    return [(2 * k + 1) * pairs // (2 * size) for k in range(size)]


def check_dev_size(pairs: int, where: str) -> None:
    if pairs < MIN_DEV_PAIRS:
        raise UsageError(f"{where}: {pairs} dev pairs are too few to tune on (MERT needs at least "
                         f"{MIN_DEV_PAIRS}); give a larger --dev, or --no-tune to keep the default weights")


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file; invalid UTF-8 is an InputError naming the line."""
    lines = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as error:
                raise InputError(path, f"not valid UTF-8 ({error.reason} at byte {error.start})", number) from None
    return lines


def write_lines(path: Path, lines) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for line in lines:
            out.write(line + "\n")


def split_corpus(source: Path, target: Path, outputs: dict[str, Path], hold_out: bool) -> dict:
    """Write outputs["train.src"/"train.tgt"] and, with `hold_out`, outputs["dev.src"/"dev.tgt"]
    (see the module docstring); returns the sizes."""
    source_lines, target_lines = read_lines(source), read_lines(target)
    if not source_lines:  # (an empty corpus, or one whose every pair cleaning dropped: see clean.log)
        raise InputError(source, "no sentence pairs left after cleaning: nothing to train on")
    held: set[int] = set()
    if hold_out:
        size = held_out_size(len(source_lines))
        if len(source_lines) < 2 * size:
            raise UsageError(f"{source}: {len(source_lines)} pairs after cleaning are too few to hold out "
                             f"{MIN_DEV_PAIRS} dev pairs and train on the rest; give --dev, or --no-tune")
        held = set(held_out_positions(len(source_lines), size))
        write_lines(outputs["dev.src"], (source_lines[i] for i in sorted(held)))
        write_lines(outputs["dev.tgt"], (target_lines[i] for i in sorted(held)))
    write_lines(outputs["train.src"], (line for i, line in enumerate(source_lines) if i not in held))
    write_lines(outputs["train.tgt"], (line for i, line in enumerate(target_lines) if i not in held))
    return {"train_pairs": len(source_lines) - len(held), "dev_pairs_held_out": len(held)}
