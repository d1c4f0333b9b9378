"""Batch decoding on several processes, in input order, with failures isolated and resumable output files.

    translate_batch(decoder, sentences, workers=4)          # -> one Translation (or Failure) per sentence
    translate_batch("model/config.toml", sentences, workers=4)

Workers share what is expensive to load: given a `Decoder`, forked workers
inherit it (the memory-mapped store and the loaded LM are shared pages, nothing
is loaded again); given a config path, each worker builds its decoder once
(the store is memory-mapped, so its pages are still shared through the page
cache, and each worker loads the LM once). Results come back in input order.
A sentence whose decoding raises is logged with its line number and gives a
`Failure` (empty output), and the other sentences are unaffected.

`translate_to_files` is the file-level driver behind `cky translate --workers N
--resume`: a job turns each sentence into the text to append to each output
file; a sidecar progress file (`OUTPUT.progress.json`) records, at checkpoints,
how many input lines are done and the byte size of every output file then, so
that a resumed run truncates the outputs back to the checkpoint and continues:
the files end up identical to those of an uninterrupted run.
"""
from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

log = logging.getLogger("cky.batch")

PROGRESS_SUFFIX = ".progress.json"
CHECKPOINT_SECONDS = 0.5  # at most this much work is redone after an interruption (plus one sentence)

# job(decoder, sentence) -> result; must be picklable (a module-level function) when workers > 1
Job = Callable[[Any, str], Any]


@dataclass
class Failure:
    """The result for a sentence whose decoding raised: shaped like a Translation with an empty output."""

    line: int  # 1-based line number in the input
    error: str
    text: str = ""
    tree: str = ""
    score: float = float("-inf")
    features: dict = field(default_factory=dict)
    derivation: Any = None
    stats: dict = field(default_factory=dict)

    def __bool__(self) -> bool:  # `if result:` reads as "did it work"
        return False


def translate_job(decoder, sentence: str):
    return decoder.translate(sentence)


# ---- the worker side ------------------------------------------------------------------------------

# Set in the parent before forking (a Decoder object), or built once per worker from a config path.
_WORKER_DECODER = None
_WORKER_JOB: Job | None = None


def _load_decoder(decoder_or_config):
    if isinstance(decoder_or_config, (str, os.PathLike)):
        from .decoder import Decoder

        return Decoder.from_config(os.fspath(decoder_or_config))
    return decoder_or_config


def _init_worker(decoder_or_config, job: Job) -> None:
    global _WORKER_DECODER, _WORKER_JOB
    if decoder_or_config is not None:  # None: inherited through fork
        _WORKER_DECODER = _load_decoder(decoder_or_config)
    _WORKER_JOB = job


def _run_one(item: tuple[int, str]):
    index, sentence = item
    try:
        return index, _WORKER_JOB(_WORKER_DECODER, sentence), None
    except Exception as error:  # one bad sentence must not stop the batch
        return index, None, f"{type(error).__name__}: {error}"


# ---- the parent side ------------------------------------------------------------------------------

def iter_translate(decoder_or_config, sentences: Sequence[str], workers: int = 1, job: Job = translate_job,
                   start: int = 0, progress: bool = False, chunksize: int = 1) -> Iterator[tuple[int, Any]]:
    """Yield (index, result) for sentences[start:] in order; a failed sentence yields a Failure."""
    global _WORKER_DECODER, _WORKER_JOB
    items = [(i, sentences[i]) for i in range(start, len(sentences))]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(sentences), initial=start, unit="sent", desc="translating", smoothing=0.1)
    workers = max(1, min(int(workers or 1), len(items)))
    try:
        if workers == 1:
            _WORKER_DECODER, _WORKER_JOB = _load_decoder(decoder_or_config), job
            results: Iterable = map(_run_one, items)
            pool = None
        else:
            context, init_arg = _pool_context(decoder_or_config)
            pool = context.Pool(workers, initializer=_init_worker, initargs=(init_arg, job))
            results = pool.imap(_run_one, items, chunksize=chunksize)
        try:
            for index, result, error in results:
                if error is not None:
                    log.error("line %d: %s", index + 1, error)
                    result = Failure(index + 1, error)
                if bar is not None:
                    bar.update(1)
                yield index, result
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
    finally:
        if bar is not None:
            bar.close()
        _WORKER_DECODER = _WORKER_JOB = None


def _pool_context(decoder_or_config):
    """Fork where possible: workers then inherit a Decoder (or build theirs from the config)."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods:
        if not isinstance(decoder_or_config, (str, os.PathLike)):
            global _WORKER_DECODER
            _WORKER_DECODER = decoder_or_config  # inherited by the forked workers
            return multiprocessing.get_context("fork"), None
        return multiprocessing.get_context("fork"), decoder_or_config
    config = decoder_or_config if isinstance(decoder_or_config, (str, os.PathLike)) else \
        getattr(decoder_or_config, "config_path", None)
    if config is None:
        raise ValueError("without fork, workers need a config path to build their decoders")
    return multiprocessing.get_context("spawn"), config


def translate_batch(decoder_or_config, sentences: Sequence[str], workers: int = 1, job: Job = translate_job,
                    progress: bool = False, chunksize: int = 1) -> list:
    """One result per sentence, in order (the Translation, or a Failure for a sentence that raised)."""
    sentences = list(sentences)
    return [result for _, result in iter_translate(decoder_or_config, sentences, workers, job,
                                                   progress=progress, chunksize=chunksize)]


# ---- output files that can be resumed --------------------------------------------------------------

# file job(decoder, sentence) -> {output name: text to append (complete lines)}
# failure(line number, error) -> the same for a sentence that failed
FileJob = Callable[[Any, str], dict]


def empty_lines(names: Iterable[str]) -> Callable[[int, str], dict]:
    names = list(names)
    return lambda line, error: {name: "\n" for name in names}


def _input_digest(sentences: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for sentence in sentences:
        digest.update(sentence.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def progress_path(outputs: dict[str, str]) -> str:
    return os.fspath(next(iter(outputs.values()))) + PROGRESS_SUFFIX


def _read_checkpoint(path: str, digest: str, outputs: dict[str, str]) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            checkpoint = json.load(f)
    except (OSError, ValueError):
        return None
    if checkpoint.get("input_sha256") != digest or checkpoint.get("outputs") != outputs:
        log.warning("%s is for another input or other outputs: starting over", path)
        return None
    return checkpoint


def _write_checkpoint(path: str, checkpoint: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(checkpoint, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def translate_to_files(decoder_or_config, sentences: Sequence[str], outputs: dict[str, str], job: FileJob,
                       failure: Callable[[int, str], dict] | None = None, workers: int = 1,
                       resume: bool = False, progress: bool = True) -> dict:
    """Decode every sentence and append job's text to each output file, in input order.

    `outputs` maps output names to paths. With `resume`, a run interrupted after a
    checkpoint continues from it. Returns {"sentences", "failed", "resumed_from", "seconds"}.
    """
    started = time.perf_counter()
    sentences = list(sentences)
    outputs = {name: os.fspath(path) for name, path in outputs.items()}
    failure = failure or empty_lines(outputs)
    sidecar = progress_path(outputs)
    digest = _input_digest(sentences)
    checkpoint = _read_checkpoint(sidecar, digest, outputs) if resume else None
    done = 0
    if checkpoint is not None:
        done = int(checkpoint["lines_done"])
        for name, path in outputs.items():  # drop whatever was written after the checkpoint
            with open(path, "r+b") as f:
                f.truncate(int(checkpoint["offsets"][name]))
        log.info("resuming at line %d of %d", done + 1, len(sentences))
    files = {name: open(path, "ab" if checkpoint is not None else "wb") for name, path in outputs.items()}
    failed = 0

    def save(lines_done: int) -> None:
        for f in files.values():
            f.flush()
            os.fsync(f.fileno())
        _write_checkpoint(sidecar, {"input_sha256": digest, "outputs": outputs, "lines_done": lines_done,
                                    "offsets": {name: f.tell() for name, f in files.items()}})

    written = done
    try:
        save(written)
        last_save = time.monotonic()
        for index, result in iter_translate(decoder_or_config, sentences, workers, job, start=done,
                                            progress=progress):
            if isinstance(result, Failure):
                failed += 1
                result = failure(result.line, result.error)
            for name, f in files.items():
                f.write(result.get(name, "").encode("utf-8"))
            written = index + 1
            if time.monotonic() - last_save > CHECKPOINT_SECONDS:
                save(written)
                last_save = time.monotonic()
    except KeyboardInterrupt:  # Ctrl-C: keep everything written so far
        save(written)
        raise
    finally:
        for f in files.values():
            f.close()
    os.unlink(sidecar)  # only reached when every sentence is written
    return {"sentences": len(sentences), "failed": failed, "resumed_from": done,
            "seconds": time.perf_counter() - started}
