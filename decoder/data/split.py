"""The deterministic train/dev/test split of the verse-aligned corpus.

By 0-based position i in the final corpus: test = i % 50 == 0 and i < 30000,
dev = i % 50 == 25 and i < 30000 (600 verses each when the corpus has at
least 30,000 verses), train = everything else.
"""
from __future__ import annotations

SPLIT_PERIOD = 50
TEST_RESIDUE = 0
DEV_RESIDUE = 25
HELD_OUT_LIMIT = 30000


def split_of(position: int) -> str:
    """'test', 'dev' or 'train' for the verse at 0-based `position`."""
    if position < 0:
        raise ValueError(f"split_of: negative position {position}")
    if position < HELD_OUT_LIMIT:
        if position % SPLIT_PERIOD == TEST_RESIDUE:
            return "test"
        if position % SPLIT_PERIOD == DEV_RESIDUE:
            return "dev"
    return "train"


def split_positions(count: int) -> dict[str, list[int]]:
    """{'train': [...], 'dev': [...], 'test': [...]} positions of a corpus of `count` verses."""
    parts: dict[str, list[int]] = {"train": [], "dev": [], "test": []}
    for position in range(count):
        parts[split_of(position)].append(position)
    return parts
