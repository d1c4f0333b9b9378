"""The LM stage: a modified Kneser-Ney model of the target side with KenLM's lmplz and build_binary
(decoder.data.lm_build, the tools the project builds), on the tokenized training target text plus
any more target text given (`--lm-text`, tokenized here with the target tokenizer).

Two binaries of the same model: lm.bin (probing), and, where asked, lm.rest.bin (rest_probing:
the same probabilities, with lower-order rest costs for the LM estimates of incomplete
hypotheses; Heafield, Koehn and Lavie 2012), which the GHKM system's incremental search reads.
A complete translation scores the same under either."""
from __future__ import annotations

from pathlib import Path

from ..data import lm_build
from .split import read_lines, write_lines
from .tokenize import tokenize_lines


def build_lm(train_target: Path, extra_texts: list[Path], tokenizer: str, binary_path: Path, work_dir: Path,
             order: int, workers: int = 1, rest_path: Path | None = None) -> dict:
    lines = read_lines(train_target)
    for path in extra_texts:
        lines.extend(line for line in tokenize_lines(read_lines(path), tokenizer, workers=workers,
                                                     desc=f"tokenize {path.name}") if line)
    text = work_dir / "lm.txt"
    write_lines(text, lines)
    statistics = lm_build.build_language_model(text, binary_path, work_dir, order, sort_memory(text))
    statistics.pop("seconds", None)
    if rest_path is not None:
        rest = lm_build.build_rest_model(text, rest_path, work_dir / "rest", order)
        statistics["rest_model"] = {key: value for key, value in rest.items() if key not in ("seconds", "cached")}
    text.unlink()
    return {**statistics, "training_sentences": len(lines), "training_tokens": sum(len(l.split()) for l in lines)}


def sort_memory(text: Path) -> str:
    """lmplz's sorting memory (-S): 40 times the text, at least 64 MB, for texts under 100 MB (allocating
    the default 20% of a large machine's memory takes seconds), else 20% of the memory."""
    megabytes = text.stat().st_size / 2**20
    return f"{max(64, round(40 * megabytes))}M" if megabytes < 100 else "20%"
