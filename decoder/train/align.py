"""The align stage: eflomal both ways and grow-diag-final-and, as the Bible recipe aligns
(decoder.data.align.align_pairs); Pharaoh lines, the source index first.

eflomal seeds its sampler from the clock (its command has no seed option), so this is the one stage
whose output differs from run to run on the same input; a rerun that skips it keeps its alignments
(and the runs of eflomal are cached in DIR/cache/align by the texts' checksum)."""
from __future__ import annotations

from pathlib import Path

from ..data import align
from .split import read_lines, write_lines


def align_files(source_path: Path, target_path: Path, alignment_path: Path, work_dir: Path) -> dict:
    source = [line.split() for line in read_lines(source_path)]
    target = [line.split() for line in read_lines(target_path)]
    alignments, statistics = align.align_pairs(source, target, work_dir,
                                               names=[f"{source_path}:{n}" for n in range(1, len(source) + 1)])
    write_lines(alignment_path, (align.write_pharaoh(a) for a in alignments))
    return {key: value for key, value in statistics.items() if key not in ("eflomal_seconds", "eflomal_from_cache")}
