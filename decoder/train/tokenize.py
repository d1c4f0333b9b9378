"""The tokenize stage: every text of the system through its language's tokenizer
(decoder.data.tokenize's registry), on `workers` processes or as tasks on a Dask cluster
(a dask.distributed Client); the same output either way.

Besides the lowercased tokens (what the model is trained on), the target side of
the training corpus is also written in its original casing, token for token:
the English parser uses capitals to recognize names.
"""
from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

from tqdm import tqdm

from ..data.tokenize import TOKENIZERS
from .split import read_lines, write_lines

CHUNK = 500  # lines per task


def _tokenize_chunk(task: tuple[str, bool, list[str]]) -> list[str]:
    name, lowercase, lines = task
    tokenizer = TOKENIZERS[name]
    return [" ".join(tokenizer.tokenize(line, lowercase)) for line in lines]


def tokenize_lines(lines: list[str], tokenizer: str, lowercase: bool = True, workers: int = 1,
                   desc: str = "tokenize", progress: bool = True, client=None) -> list[str]:
    """Each line's tokens joined by spaces, in order (on `client`'s cluster if given)."""
    tasks = [(tokenizer, lowercase, lines[start:start + CHUNK]) for start in range(0, len(lines), CHUNK)]
    out: list[str] = []
    with tqdm(total=len(lines), desc=desc, unit="lines", file=sys.stderr, disable=not progress,
              mininterval=1.0) as bar:
        if client is not None:
            for future in client.map(_tokenize_chunk, tasks, pure=False):
                result = future.result()
                out.extend(result)
                bar.update(len(result))
        elif workers > 1 and len(tasks) > 1:
            TOKENIZERS[tokenizer].tokenize("")  # loads a segmenter (zh) once here: the forked workers share it
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for result in pool.imap(_tokenize_chunk, tasks):
                    out.extend(result)
                    bar.update(len(result))
        else:
            for task in tasks:
                result = _tokenize_chunk(task)
                out.extend(result)
                bar.update(len(result))
    return out


def tokenize_files(jobs: list[tuple[Path, Path, str, bool]], workers: int = 1, progress: bool = True,
                   client=None) -> dict:
    """For each (input, output, tokenizer name, lowercase): write the tokenized lines; returns token counts."""
    counts = {}
    for source, target, tokenizer, lowercase in jobs:
        lines = tokenize_lines(read_lines(source), tokenizer, lowercase, workers, desc=f"tokenize {target.name}",
                               progress=progress, client=client)
        write_lines(target, lines)
        counts[target.name] = {"lines": len(lines), "tokens": sum(len(line.split()) for line in lines)}
    return counts
