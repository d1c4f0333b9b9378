"""The extract stage: GHKM rules of the whole training corpus (decoder.extract.pipeline), not
filtered to any test set, so the system translates any sentence; with the glue rules and the
unknown-word labels. On `workers` processes, or on a Dask cluster (`client`, a dask.distributed
Client): the same table either way."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from ..extract.corpus import CorpusPaths
from ..extract.pipeline import ExtractionConfig, run_extraction


def extract_rules(source: Path, trees: Path, alignment: Path, target: Path, rules: Path, glue: Path,
                  unknown_labels: Path, work_dir: Path, workers: int, client=None, progress: bool = True) -> dict:
    config = ExtractionConfig(corpus=CorpusPaths(str(source), str(trees), str(alignment), str(target)),
                              out=str(rules), glue=str(glue), unknown_labels=str(unknown_labels),
                              jobs=workers, tmp_dir=str(work_dir), progress=progress)
    summary = run_extraction(config, client)
    _recompress(glue)
    keep = ("sentence_pairs", "skipped", "skipped_by_reason", "minimal_rules", "composed_rules", "distinct_rules",
            "limits", "feature_names", "glue_rules", "unknown_word_labels")
    return {key: summary[key] for key in keep if key in summary}


def _recompress(path: Path) -> None:
    """Rewrite a gzip file with modification time 0 in its header, so that the same content gives the
    same bytes (and the same checksum) in every run."""
    temporary = path.with_name(path.name + ".tmp")
    with gzip.open(path, "rb") as source, gzip.GzipFile(temporary, "wb", mtime=0) as target:
        shutil.copyfileobj(source, target)
    temporary.replace(path)
