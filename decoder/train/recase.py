"""The recase stage: a recasing model (decoder.recase.RecaseModel, as Moses' truecaser) trained
on the cased, tokenized target side of the training corpus, written to DIR/recase.gz.

config.toml names it (`recase_model`), so the finished system gives back the casing of the
target language (`I`, names) when it translates raw text (decoder.text).
"""
from __future__ import annotations

from pathlib import Path

from ..recase import RecaseModel
from .split import read_lines

RECASE_MODEL = "recase.gz"  # its name in DIR (config.toml's `recase_model`)


def train_recaser(cased_target: Path, output: Path) -> dict:
    """Train on `cased_target` (one sentence of cased tokens a line), save to `output`; statistics."""
    model = RecaseModel.train(line.split() for line in read_lines(cased_target))
    model.save(output)
    return {"recase_words": len(model.unigrams), "recase_contexts": len(model.bigrams)}
