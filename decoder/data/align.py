"""Word alignment: eflomal in both directions, symmetrized with grow-diag-final-and.

`eflomal-align` (PyPI package eflomal) samples alignments with a Bayesian
IBM1+HMM+fertility model and writes both directions as Pharaoh "i-j" lines
with the source (Spanish) index first; it does not symmetrize, so
`grow_diag_final_and` below does (Koehn et al. 2003; the heuristic of Moses'
`symal -alignment=grow -diagonal=yes -final=yes -both=yes`).
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

Alignment = set[tuple[int, int]]      # (Spanish index, English index) pairs

NEIGHBORS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def read_pharaoh(line: str, source: str = "<string>", line_number: int = 0) -> Alignment:
    """Pharaoh "0-0 1-2" -> {(0, 0), (1, 2)}."""
    points = set()
    for item in line.split():
        left, dash, right = item.partition("-")
        if not dash or not left.isdigit() or not right.isdigit():
            raise ValueError(f"{source}:{line_number}: bad alignment point {item!r} (expected 'i-j')")
        points.add((int(left), int(right)))
    return points


def write_pharaoh(alignment: Alignment) -> str:
    """{(1, 2), (0, 0)} -> "0-0 1-2" (sorted)."""
    return " ".join(f"{s}-{t}" for s, t in sorted(alignment))


def grow_diag_final_and(forward: Alignment, reverse: Alignment) -> Alignment:
    """Symmetrize two directional alignments (both as (source, target) pairs).

    Start from the intersection; GROW-DIAG repeatedly adds union points that
    neighbour (also diagonally) an alignment point and whose source or
    target word is still unaligned, until nothing changes; FINAL-AND then
    adds the points of each direction (forward first) whose source and target
    words are both unaligned. Points are visited in the order of Koehn's
    pseudo-code: by target (English) index, then source index.
    """
    union = forward | reverse
    alignment = forward & reverse
    aligned_source = {s for s, _ in alignment}
    aligned_target = {t for _, t in alignment}

    def add(point: tuple[int, int]) -> None:
        alignment.add(point)
        aligned_source.add(point[0])
        aligned_target.add(point[1])

    def by_target(point: tuple[int, int]) -> tuple[int, int]:
        return point[1], point[0]

    grew = True
    while grew:
        grew = False
        for s, t in sorted(alignment, key=by_target):
            for ds, dt in NEIGHBORS:
                candidate = (s + ds, t + dt)
                if candidate in union and candidate not in alignment and (
                        candidate[0] not in aligned_source or candidate[1] not in aligned_target):
                    add(candidate)
                    grew = True
    for direction in (forward, reverse):
        for s, t in sorted(direction, key=by_target):
            if s not in aligned_source and t not in aligned_target:
                add((s, t))
    return alignment


def run_eflomal(source_path: Path, target_path: Path, work_dir: Path) -> tuple[Path, Path, float, bool]:
    """Run eflomal-align unless its output for these exact texts is in `work_dir`.

    Returns (forward links, reverse links, seconds of the run that made them,
    whether they came from the cache).
    """
    forward, reverse = work_dir / "eflomal.forward", work_dir / "eflomal.reverse"
    stamp = work_dir / "eflomal.json"
    digest = hashlib.sha1(source_path.read_bytes() + b"\0" + target_path.read_bytes()).hexdigest()
    if stamp.exists() and forward.exists() and reverse.exists():
        previous = json.loads(stamp.read_text())
        if previous.get("input_sha1") == digest:
            return forward, reverse, previous["seconds"], True
    command = [*_eflomal_command(), "-s", str(source_path), "-t", str(target_path),
               "-f", str(forward), "-r", str(reverse), "--overwrite"]
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=sys.stderr)
    seconds = time.monotonic() - started
    stamp.write_text(json.dumps({"input_sha1": digest, "seconds": round(seconds, 1)}))
    return forward, reverse, seconds, False


def _eflomal_command() -> list[str]:
    """The eflomal-align executable next to this Python, or on PATH."""
    candidate = Path(sys.executable).with_name("eflomal-align")
    if candidate.exists():
        return [str(candidate)]
    return ["eflomal-align"]


def symmetrize_files(forward_path: Path, reverse_path: Path, expected_lines: int) -> list[Alignment]:
    """grow-diag-final-and of two Pharaoh files, line by line."""
    with open(forward_path, encoding="utf-8") as forward_file, open(reverse_path, encoding="utf-8") as reverse_file:
        forward_lines, reverse_lines = forward_file.read().splitlines(), reverse_file.read().splitlines()
    for path, lines in ((forward_path, forward_lines), (reverse_path, reverse_lines)):
        if len(lines) != expected_lines:
            raise RuntimeError(f"{path}: {len(lines)} lines, expected {expected_lines}")
    return [grow_diag_final_and(read_pharaoh(f, str(forward_path), n), read_pharaoh(r, str(reverse_path), n))
            for n, (f, r) in enumerate(zip(forward_lines, reverse_lines), start=1)]


def check_alignment(alignment: Alignment, source_length: int, target_length: int, where: str) -> None:
    """Raise if a point lies outside the sentence pair."""
    for s, t in alignment:
        if not (0 <= s < source_length and 0 <= t < target_length):
            raise ValueError(f"{where}: alignment point {s}-{t} outside {source_length}x{target_length} tokens")


def write_lines(path: Path, lines) -> None:
    """Lines to `path` via a temporary file renamed into place."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        for line in lines:
            out.write(line + "\n")
    temporary.replace(path)


def align_pairs(source: list[list[str]], target: list[list[str]], work_dir: Path,
                names: list[str] | None = None) -> tuple[list[Alignment], dict]:
    """Symmetrized alignments of tokenized sentence pairs: eflomal both ways (cached in `work_dir`,
    see `run_eflomal`) and grow-diag-final-and, each checked against its pair's lengths (`names[i]`
    names pair i in errors). Returns (alignments, statistics)."""
    if len(source) != len(target):
        raise ValueError(f"align_pairs: {len(source)} source sentences, {len(target)} target sentences")
    work_dir.mkdir(parents=True, exist_ok=True)
    write_lines(work_dir / "corpus.src", (" ".join(tokens) for tokens in source))
    write_lines(work_dir / "corpus.tgt", (" ".join(tokens) for tokens in target))
    forward, reverse, seconds, cached = run_eflomal(work_dir / "corpus.src", work_dir / "corpus.tgt", work_dir)
    symmetrized = symmetrize_files(forward, reverse, len(source))
    for index, (alignment, source_tokens, target_tokens) in enumerate(zip(symmetrized, source, target)):
        check_alignment(alignment, len(source_tokens), len(target_tokens),
                        names[index] if names else f"sentence pair {index + 1}")
    statistics = {"eflomal_seconds": round(seconds, 1), "eflomal_from_cache": cached,
                  "sentence_pairs": len(source), "points": sum(len(a) for a in symmetrized),
                  "symmetrization": "grow-diag-final-and"}
    return symmetrized, statistics
