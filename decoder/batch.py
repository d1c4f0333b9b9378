"""Batch decoding on several processes, in input order, with failures isolated and resumable output files.

    translate_batch(decoder, sentences, workers=4)          # -> one Translation per sentence
    translate_batch(functools.partial(Decoder.from_config, "model/config.toml"), sentences, workers=4)

The batch layer never builds a decoder itself (it imports neither decoder.decoder nor
decoder.cluster; decoding on a Dask cluster goes through decoder.cluster_workers): it
takes a *loader*, either a decoder object or a callable that builds one. Workers
share what is expensive to load: given a decoder object, forked workers inherit it
(the memory-mapped store and the loaded LM are shared pages, nothing is loaded
again); given a callable, each worker calls it once (the store is memory-mapped,
so its pages are still shared through the page cache, and each worker loads the
LM once). Where fork is not available, a decoder object with a `config_path` is
rebuilt in each worker with `type(decoder).from_config(config_path)`.

A *job* turns (decoder, sentence) into a result (default: decoder.translate). The
batch layer attaches each sentence's 0-based index, so results come back as
(index, result) in input order. A sentence whose job raises is logged with its
line number and gives `Translation.failure(sentence, error)` (decoder.translation:
`ok` false, `error` set, empty text), and the other sentences are unaffected.

A worker process that dies (the OOM killer, a crash in compiled code, kill -9) costs
one sentence, not the batch: the sentence it died on is decoded again alone in a fresh
process, and gives Translation.failure (error "the decoding process died on this line ...")
if that process dies too; a fresh pool goes on with the rest (_decode_surviving).

Workers ignore Ctrl-C (the parent stops them) and die quietly when the parent is
gone (SIGPIPE instead of a BrokenPipeError traceback). `isolate=True` decodes in
a child process even with one worker, so that Ctrl-C interrupts the parent at
once although the compiled search may run for seconds without returning.

`translate_to_files` is the file-level driver behind `cky translate --output`: a
job's result is rendered as the text to append to each output file; a sidecar
progress file (`OUTPUT.progress.json`) records, at checkpoints, how many input
lines are done and, for every output file, its size and the SHA-256 of its bytes
then, plus the identity of the model and settings. A resumed run checks that every
output still begins with exactly those bytes and that the identity is the same,
truncates the outputs back to the checkpoint and continues: the files end up
identical to those of an uninterrupted run. A progress file that does not
describe its outputs any more (another input, an added or removed side file) is a
ResumeError naming the files, never a silent mix or a silent fresh start; a run
without `resume` replaces any old progress file. A run that finishes removes its
progress file: resumed without one, outputs that hold nothing yet are written from
the first line, a first output with one complete line per input line (and its side
files) is taken as finished (nothing is redone), and anything else is a ResumeError.
While a run writes, each output file is locked (decoder.outputs.locked_outputs): a
second run writing one of them is refused at once, naming the file.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import multiprocessing
import multiprocessing.pool
import operator
import os
import signal
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Sequence

from .errors import OutputError, ResumeError, Terminated, WorkerError
from .outputs import atomic_write, locked_outputs, progress_file
from .translation import Job, Translation, translate_job  # noqa: F401  (Job, translate_job: imported from here too)

log = logging.getLogger("cky.batch")

CHECKPOINT_SECONDS = 0.5  # at most this much work is redone after an interruption (plus one sentence)

# a decoder object, or a callable that builds one (picklable when workers are spawned, not forked)
Loader = Any


def failed(result) -> bool:
    """Whether a result is the stand-in for a sentence whose job raised."""
    return isinstance(result, Translation) and result.error is not None


def check_workers(workers) -> int:
    """`workers` as an int: a TypeError unless it is an integer (not a bool, float, string or None), a
    ValueError unless it is at least 1 (a silent fallback to one process would hide the mistake)."""
    if isinstance(workers, bool):
        raise TypeError(f"workers must be an integer, not a bool ({workers!r})")
    try:
        workers = operator.index(workers)
    except TypeError:
        raise TypeError(f"workers must be an integer, not {type(workers).__name__} ({workers!r})") from None
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    return workers


def load(loader: Loader):
    """The decoder a loader stands for."""
    if isinstance(loader, (str, bytes, os.PathLike)):
        raise TypeError("decoder.batch takes a decoder or a callable that builds one, not a path: "
                        "use functools.partial(Decoder.from_config, path)")
    return loader() if callable(loader) else loader


# ---- the worker side ------------------------------------------------------------------------------

# Set in the parent before forking (a decoder object), or built once per worker by a loader.
_WORKER_DECODER = None
_WORKER_JOB: Job | None = None
# Shared with the parent: for each item of the pool's list, 0 (not started), the pid of the worker
# decoding it, or -1 (done): when a worker dies, the parent knows the line it died on.
_WORKER_STATE = None
_WORKER_PID = 0


def _die_with_parent(parent: int) -> None:
    """Exit when the parent dies (killed, say), instead of writing BrokenPipeError tracebacks or
    waiting forever on a queue lock that a dead sibling held: Linux's parent-death signal; elsewhere
    SIGPIPE ends a worker whose result pipe is gone."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError, TypeError):  # not Linux
        return
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


def _init_worker(loader: Loader | None, job: Job, parent: int, state=None, started=None, size: int = 0) -> None:
    global _WORKER_DECODER, _WORKER_JOB, _WORKER_STATE, _WORKER_PID
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and terminates us
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (not the parent's _terminate_as_interrupt: Pool.terminate)
    if started is not None:
        with started.get_lock():
            started.value += 1
            replacement = started.value > size
        if replacement:
            # The pool replaces a worker that died: the parent is about to stop this pool (_watched). A worker
            # started by the pool's own thread would die with that thread (the parent-death signal is per
            # thread), maybe while it holds the task queue's lock, and then Pool.terminate would wait forever.
            os._exit(0)
    _die_with_parent(parent)
    _WORKER_DECODER = load(loader)  # (a decoder object forked with the worker: itself)
    _WORKER_JOB = job
    _WORKER_STATE, _WORKER_PID = state, os.getpid()


def _run_job(decoder, job: Job, item: tuple[int, str]):
    """(index, result, error) of one item: the job's result, or the error it raised."""
    index, sentence = item
    try:
        return index, job(decoder, sentence), None
    except Exception as error:  # one bad sentence must not stop the batch
        return index, None, f"{type(error).__name__}: {error}"


def _run_one(item: tuple[int, str]):
    """_run_job in a worker process, with the worker's decoder and job."""
    return _run_job(_WORKER_DECODER, _WORKER_JOB, item)


def _run_chunk(items: list[tuple[int, int, str]]) -> list:
    """Decode (slot, index, sentence) items, marking each slot of _WORKER_STATE while it is decoded."""
    results = []
    for slot, index, sentence in items:
        _WORKER_STATE[slot] = _WORKER_PID
        results.append(_run_one((index, sentence)))
        _WORKER_STATE[slot] = -1
    return results


# ---- the parent side ------------------------------------------------------------------------------

def iter_translate(loader: Loader, sentences: Sequence[str], workers: int = 1, job: Job = translate_job,
                   start: int = 0, progress: bool = False, chunksize: int = 1,
                   isolate: bool = False, cluster=None) -> Iterator[tuple[int, Any]]:
    """Yield (index, result) for sentences[start:] in order; a failed sentence yields Translation.failure.

    With `cluster` (a dask.distributed Client), the sentences are decoded on its workers instead
    (decoder.cluster_workers; `workers` and `isolate` do not apply): each worker builds the decoder from
    `loader`, which must then travel to them: a picklable callable, or a decoder
    built from a config file (rebuilt there from its config path and search settings).

    Threads may call it at once: the in-process path (one worker) keeps its decoder and job in
    this call's own frame, not in the module's worker globals, which only worker processes set."""
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(sentences), initial=start, unit="sent", desc="translating", smoothing=0.1)
    workers = check_workers(workers)
    items = [(i, sentences[i]) for i in range(start, len(sentences))]
    workers = max(1, min(workers, len(items)))
    in_process = workers == 1 and not (isolate and "fork" in multiprocessing.get_all_start_methods())
    results: Iterable = ()
    try:
        if cluster is not None:  # failures come back as Translation.failure already
            from .cluster_workers import iter_translate_on_cluster

            results: Iterable = ((index, result, None) for index, result in iter_translate_on_cluster(
                cluster, cluster_loader(loader), sentences, job, start=start))
        elif in_process:
            results = map(functools.partial(_run_job, load(loader), job), items)
        else:
            results = _decode_surviving(loader, items, workers, job, chunksize)
        for index, result, error in results:
            if error is not None:
                log.error("line %d: %s", index + 1, error)
                result = Translation.failure(sentences[index], error)
            if bar is not None:
                bar.update(1)
            yield index, result
    finally:
        close = getattr(results, "close", None)
        if close is not None:  # a generator of pools (_decode_surviving) stops its pool now
            close()
        if bar is not None:
            bar.close()


class _Pool(multiprocessing.pool.Pool):
    """A Pool that remembers the workers it started with (`initial`, before its own thread can replace
    one that died at once): _watched names the dead ones and their exit codes from it."""

    def _repopulate_pool(self):  # called by __init__ only (the pool's thread calls the static version)
        result = super()._repopulate_pool()
        if not hasattr(self, "initial"):
            self.initial = list(self._pool)
        return result


def _start_pool(context, workers: int, init_arg, job: Job, state=None):
    """The worker pool. Forked workers share the parent's pages until they write to them; the cyclic
    garbage collector writes to the header of every object it traverses, so each worker's first
    collections would copy the pages of the parent's objects (the decoder's Python objects; the
    store's arrays are memory-mapped files, the grammar arrays' data is not traversed). gc.freeze()
    moves the parent's objects out of the collector's reach while the workers are forked (and they
    stay out in the workers), so the workers keep sharing those pages."""
    import gc

    forking = context.get_start_method() == "fork"
    if forking:
        gc.freeze()
    try:
        return _Pool(workers, initializer=_init_worker,
                     initargs=(init_arg, job, os.getpid(), state, context.Value("i", 0), workers),
                     context=context.get_context())
    finally:
        if forking:
            gc.unfreeze()  # the parent collects its own objects again


def cluster_loader(loader: Loader):
    """What a Dask worker builds its decoder from (decoder.cluster_workers.DecoderPlugin): a callable
    as given; a decoder object by its config file, with its present search settings."""
    if callable(loader):
        return loader
    config = getattr(loader, "config_path", None)
    if config is None:
        raise ValueError("decoding on a cluster needs a decoder built from a config file (Decoder.from_config) "
                         "or a loader that the workers can run")
    return functools.partial(type(loader).from_config, os.path.abspath(config), **loader.search_settings.as_dict())


def _raise_terminated(signum, frame):
    raise Terminated


@contextlib.contextmanager
def _terminate_as_interrupt():
    """While active (in the main thread, where SIGTERM has its default action), SIGTERM raises Terminated,
    a KeyboardInterrupt: the outputs are flushed and the progress saved, as for Ctrl-C, instead of the
    process vanishing with up to CHECKPOINT_SECONDS of lines unsaved. Workers put the default back."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _DeferredInterrupt:
    """While active (in the main thread, with Python's own Ctrl-C handler in place), Ctrl-C (and SIGTERM,
    under _terminate_as_interrupt) only sets `pressed`; the waiting loop raises KeyboardInterrupt (or
    Terminated) between waits (`deliver`). A KeyboardInterrupt raised inside the pool's condition wait
    can leave its lock released twice ("release unlocked lock", a RuntimeError instead of a clean
    interruption)."""

    def __init__(self):
        self.pressed = None  # the signal received
        self.previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for number, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, _raise_terminated)):
                if signal.getsignal(number) is handler:
                    self.previous[number] = signal.signal(number, self._press)
        return self

    def _press(self, signum, frame):
        self.pressed = self.pressed or signum

    def deliver(self) -> None:
        """Raise what the signal received stands for, if any."""
        if self.pressed == signal.SIGTERM:
            raise Terminated
        if self.pressed:
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        for number, handler in self.previous.items():
            signal.signal(number, handler)
        return False


class _PoolDied(WorkerError):
    """A worker of a pool died: `exitcodes` {pid: exit code, negative for a signal} of the dead ones."""

    def __init__(self, exitcodes: dict[int, int | None]):
        super().__init__(None, "a decoding process died (see any message above); the lines before it are written")
        self.exitcodes = exitcodes


def _watched(pool, results) -> Iterator:
    """The pool's results, or a _PoolDied (a WorkerError) if a worker dies: the pool would replace it, and
    wait forever for the sentences it had taken (a crash in compiled code must not turn into a hang).
    Ctrl-C is a KeyboardInterrupt raised here, between waits (_DeferredInterrupt)."""
    started = {process.pid: process for process in getattr(pool, "initial", pool._pool)}
    with _DeferredInterrupt() as interrupt:
        while True:
            interrupt.deliver()
            try:
                result = results.next(timeout=0.1)
            except StopIteration:
                return
            except multiprocessing.TimeoutError:
                alive = {process.pid for process in pool._pool}  # Pool's own list of its worker processes
                if alive != set(started):
                    raise _PoolDied({pid: process.exitcode for pid, process in started.items()
                                     if pid not in alive}) from None
                continue
            yield result


def death_cause(exitcode: int | None) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it)."""
    if exitcode is None:
        return "died"
    if exitcode >= 0:
        return f"exited with code {exitcode}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        return f"killed by signal {-exitcode}"
    hint = ": out of memory?" if -exitcode == getattr(signal, "SIGKILL", None) else ""
    return f"killed by signal {-exitcode} ({name}{hint})"


# A pool that dies this many times in a row without a line settled (no line yielded, no line found to kill its
# process) is a WorkerError: something other than a line kills the workers.
MAX_FRUITLESS_RESTARTS = 3


def _decode_surviving(loader: Loader, items: list[tuple[int, str]], workers: int, job: Job,
                      chunksize: int) -> Iterator[tuple[int, Any, str | None]]:
    """(index, result, error) for each item, in order, decoded by a pool of worker processes.

    When a worker dies (killed by the OOM killer or by hand, a crash in compiled code), the pool is
    stopped; the line each dead worker was decoding (the shared state says which) is decoded again
    alone, in a fresh one-worker process: if that process dies too, the line gives an error (a failed
    line), else its result. Then a fresh pool continues with the lines not yet settled; what the old
    pool had decoded but not yet delivered is decoded again. A pool whose workers die before they start
    any line (a loader that crashes), or die MAX_FRUITLESS_RESTARTS times in a row with nothing settled,
    is a WorkerError."""
    context, init_arg = _pool_context(loader)
    pending = list(items)  # not yet yielded, in order
    settled: dict[int, tuple[int, Any, str | None]] = {}  # index -> result decided outside a pool
    fruitless = 0
    while pending:
        todo = [item for item in pending if item[0] not in settled]
        state = context.RawArray("q", max(1, len(todo)))
        position = 0  # pending[:position] are yielded
        try:
            pool = None
            if todo:
                pool = _start_pool(context, min(workers, len(todo)), init_arg, job, state)
                tagged = [(slot, index, sentence) for slot, (index, sentence) in enumerate(todo)]
                chunks = [tagged[i:i + chunksize] for i in range(0, len(tagged), max(1, chunksize))]
                for chunk in _watched(pool, pool.imap(_run_chunk, chunks)):
                    for result in chunk:
                        while pending[position][0] != result[0]:  # lines settled alone come first
                            yield settled.pop(pending[position][0])
                            position += 1
                        yield result
                        position += 1
            while position < len(pending):
                yield settled.pop(pending[position][0])
                position += 1
            return
        except _PoolDied as death:
            if not any(state[slot] for slot in range(len(todo))):
                raise _never_started(death) from None
            suspects = [todo[slot] for slot in range(len(todo)) if state[slot] in death.exitcodes]
            for pid, exitcode in death.exitcodes.items():
                lines = [index + 1 for slot, (index, _) in enumerate(todo) if state[slot] == pid]
                if lines:
                    log.warning("line %d: its decoding process died, %s: decoding the line again alone",
                                lines[0], death_cause(exitcode))
                else:
                    log.warning("a decoding process died between lines, %s: going on with a fresh one",
                                death_cause(exitcode))
        finally:
            if pool is not None:
                _stop_pool(pool)
        del pending[:position]
        for index, sentence in suspects:
            settled[index] = _decode_alone(context, init_arg, job, index, sentence)
        fruitless = 0 if position or suspects else fruitless + 1
        if fruitless >= MAX_FRUITLESS_RESTARTS:
            raise WorkerError(None, f"the decoding processes died {fruitless} times in a row between lines")


STOP_SECONDS = 5.0  # a pool that takes longer to stop has a lock held by a dead worker (_stop_pool)


def _stop_pool(pool) -> None:
    """pool.terminate() and join(), which cannot hang on a dead worker: a worker waiting for a task holds the
    task queue's lock, and one killed then (kill -9 from outside) never gives it back, so Pool.terminate
    would wait for it forever. If stopping takes longer than STOP_SECONDS, the lock is released for it."""
    stopping = threading.Thread(target=pool.terminate, daemon=True)
    stopping.start()
    stopping.join(STOP_SECONDS)
    if stopping.is_alive():
        log.warning("the decoding processes do not stop: releasing the task queue's lock of a dead one")
        with contextlib.suppress(ValueError):  # released meanwhile ("released too many times")
            pool._inqueue._rlock.release()
        stopping.join()
    pool.join()


def _never_started(death: _PoolDied) -> WorkerError:
    """The error for a pool whose workers die before they start a line (the exit code 0 of a replacement,
    _init_worker, says nothing about the death it replaced)."""
    causes = ", ".join(sorted({death_cause(code) for code in death.exitcodes.values() if code != 0}))
    return WorkerError(None, f"a decoding process died before decoding any line ({causes or 'exit code unknown'})")


def _decode_alone(context, init_arg, job: Job, index: int, sentence: str) -> tuple[int, Any, str | None]:
    """(index, result, error) of one line decoded in a fresh one-worker pool: an error if that process dies
    while decoding it (a WorkerError if it dies before)."""
    state = context.RawArray("q", 1)
    pool = _start_pool(context, 1, init_arg, job, state)
    try:
        for chunk in _watched(pool, pool.imap(_run_chunk, [[(0, index, sentence)]])):
            log.warning("line %d: decoded alone", index + 1)
            return chunk[0]
        raise WorkerError(None, "a decoding process returned no result")  # not reached: imap gives one
    except _PoolDied as death:
        if not state[0]:
            raise _never_started(death) from None
        cause = death_cause(next(iter(death.exitcodes.values())))
        return index, None, f"WorkerError: the decoding process died on this line, also decoding it alone: {cause}"
    finally:
        _stop_pool(pool)


def _pool_context(loader: Loader):
    """Fork where possible: workers then inherit a decoder object (or call the loader once each). A
    forked worker's initializer arguments are not pickled but inherited with the parent's memory, so
    a decoder object passed there is shared, not copied (load gives it back as it is); unlike a
    module global set in the parent, it cannot be another thread's decoder."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork"), loader
    if not callable(loader):
        config = getattr(loader, "config_path", None)
        if config is None:
            raise ValueError("without fork, workers need a loader (or a decoder built from a config file)")
        loader = functools.partial(type(loader).from_config, config)
    return multiprocessing.get_context("spawn"), loader


def translate_batch(loader: Loader, sentences: Sequence[str], workers: int = 1, job: Job = translate_job,
                    progress: bool = False, chunksize: int = 1, cluster=None) -> list:
    """One result per sentence, in order (the job's result, or Translation.failure for a sentence that raised);
    `cluster`: a dask.distributed Client to decode on (see iter_translate)."""
    if isinstance(sentences, str):
        raise TypeError("translate_batch takes a list of sentences, not one string")
    workers = check_workers(workers)
    sentences = list(sentences)
    return [result for _, result in iter_translate(loader, sentences, workers, job,
                                                   progress=progress, chunksize=chunksize, cluster=cluster)]


# ---- output files that can be resumed --------------------------------------------------------------

# render(index, result) -> {output name: text to append (complete lines)}
Render = Callable[[int, Any], dict]


def empty_lines(names: Iterable[str]) -> Callable[[int, str], dict]:
    names = list(names)
    return lambda line, error: {name: "\n" for name in names}


def _input_digest(sentences: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for sentence in sentences:
        digest.update(sentence.encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()


def progress_path(outputs: dict[str, str]) -> str:
    return progress_file(next(iter(outputs.values())))


def json_identity(identity) -> Any:
    """The identity as it reads back from JSON (tuples become lists, ...)."""
    return json.loads(json.dumps(identity, sort_keys=True, default=str))


def changed_identity(saved, identity) -> str | None:
    """None if a saved identity (as read back from JSON) is `identity`, else what changed
    ("key: old -> new; ...")."""
    expected = json_identity(identity)
    if saved == expected:
        return None
    return "; ".join(_identity_changes(saved, expected)) or "unknown"


def _identity_changes(old, new, prefix: str = "") -> list[str]:
    """"key: old -> new" for each leaf where two JSON values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [change for key in sorted(set(old) | set(new), key=str)
                for change in _identity_changes(old.get(key), new.get(key), f"{prefix}{key}.")]
    return [] if old == new else [f"{prefix.rstrip('.') or 'identity'}: {old!r} -> {new!r}"]


FINISHED = "finished"  # _read_checkpoint: the outputs are complete already


def _line_count(path: str) -> int | None:
    """Complete lines (b"\\n"-terminated) of a file, None if it does not exist or is empty."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    return data.count(b"\n") if data else None


def _without_checkpoint(path: str, n_lines: int, outputs: dict[str, str]):
    """Resuming without a progress file (a run that finished removes it): None (start at the first line)
    when no output holds anything yet, FINISHED when the first output has one complete line per input
    line and the side files exist (a finished run), else a ResumeError: truncating those outputs would
    throw away lines that no record describes."""
    first, *others = outputs.values()
    lines = _line_count(first)
    if lines is None and all(_line_count(other) is None for other in others):
        log.info("no progress file %s: starting from the first line", path)
        return None
    if lines == n_lines and all(os.path.exists(other) for other in others):
        with open(first, "rb") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) == b"\n":  # its last line is whole
                return FINISHED
    raise ResumeError(path, f"is missing, and {first} holds {lines or 0} lines for {n_lines} input lines: no record "
                            f"says which of them to keep; run without --resume to start over")


def _read_checkpoint(path: str, digest: str, outputs: dict[str, str], identity, n_lines: int = 0):
    """The checkpoint to resume from, None to start at the first line, FINISHED (nothing to do), or a
    ResumeError."""
    try:
        with open(path, encoding="utf-8") as f:
            checkpoint = json.load(f)
    except FileNotFoundError:
        return _without_checkpoint(path, n_lines, outputs)
    except (OSError, ValueError) as error:
        raise ResumeError(path, f"unreadable progress file ({error}); run without --resume to start over")
    if checkpoint.get("input_sha256") != digest:
        raise ResumeError(path, "was written for another input: resuming would mix two inputs' lines in one "
                                "output; give the same input, or run without --resume to start over")
    if checkpoint.get("outputs") != outputs:
        saved = checkpoint.get("outputs") or {}
        changes = [f"{name} {'added' if name not in saved else 'removed' if name not in outputs else 'moved'}"
                   for name in sorted(set(saved) | set(outputs), key=str) if saved.get(name) != outputs.get(name)]
        raise ResumeError(path, f"was written for other output files ({', '.join(changes)}): the side files would "
                                f"lack the lines before the checkpoint; give the same files, or run without "
                                f"--resume to start over")
    changes = changed_identity(checkpoint.get("identity"), identity)
    if changes is not None:
        raise ResumeError(path, f"was written with another model or other settings ({changes}): resuming would "
                                f"mix two models in one output; run without --resume to start over")
    for name, output in outputs.items():
        offset, expected = int(checkpoint["offsets"][name]), checkpoint.get("sha256", {}).get(name)
        try:
            with open(output, "rb") as f:
                prefix = f.read(offset)
        except FileNotFoundError:
            raise ResumeError(path, f"{output} is missing; run without --resume to start over") from None
        if not prefix and offset:  # (the lock of a missing output made it empty: locked_outputs)
            raise ResumeError(path, f"{output} is missing or empty; run without --resume to start over")
        if len(prefix) < offset:
            raise ResumeError(path, f"{output} is shorter ({len(prefix)} bytes) than when the progress was saved "
                                    f"({offset} bytes); run without --resume to start over")
        if hashlib.sha256(prefix).hexdigest() != expected:
            raise ResumeError(path, f"{output} has changed since the progress was saved; "
                                    f"run without --resume to start over")
    return checkpoint


def _write_checkpoint(path: str, checkpoint: dict) -> None:
    with atomic_write(path) as f:
        json.dump(checkpoint, f)


def translate_to_files(loader: Loader, sentences: Sequence[str], outputs: dict[str, str], job: Job,
                       failure: Callable[[int, str], dict] | None = None, workers: int = 1,
                       resume: bool = False, progress: bool = True, render: Render | None = None,
                       identity=None, isolate: bool = False, cluster=None,
                       counts_as_failed: Callable[[int, Any], bool] | None = None) -> dict:
    """Decode every sentence and append its rendered text to each output file, in input order.

    `outputs` maps output names to paths. By default the job's result is the
    text itself ({name: text}) and a failed sentence gets `failure(line number,
    error)` (default: an empty line in every file); `render(index, result)`
    replaces both. `identity` (anything JSON can write) names the model and
    settings; resuming under another identity is refused. With `resume`, a run
    interrupted after a checkpoint continues from it. With `cluster` (a Dask
    Client) the sentences are decoded on its workers (see iter_translate): the
    files, checkpoints and resuming are the same. `counts_as_failed(index,
    result)` says which lines count as failed (default: a failed result; a
    renderer may fail more). Returns {"sentences", "failed", "failed_before",
    "resumed_from", "seconds"}: "failed" counts the whole output, the lines
    of the interrupted run before the checkpoint ("failed_before" of them) too.
    """
    workers = check_workers(workers)  # before any file is touched
    outputs = {name: os.fspath(path) for name, path in outputs.items()}
    with locked_outputs(outputs.values()), _terminate_as_interrupt():  # one writer per output (and progress file)
        return _translate_to_files(loader, sentences, outputs, job, failure, workers, resume, progress, render,
                                   identity, isolate, cluster, counts_as_failed)


def _translate_to_files(loader, sentences, outputs, job, failure, workers, resume, progress, render, identity,
                        isolate, cluster, counts_as_failed) -> dict:
    started = time.perf_counter()
    sentences = list(sentences)
    failure = failure or empty_lines(outputs)
    if render is None:
        render = lambda index, result: failure(index + 1, result.error) if failed(result) else result  # noqa: E731
    counts_as_failed = counts_as_failed or (lambda index, result: failed(result))
    sidecar = progress_path(outputs)
    digest = _input_digest(sentences)
    checkpoint = _read_checkpoint(sidecar, digest, outputs, identity, len(sentences)) if resume else None
    if checkpoint == FINISHED:
        log.info("%s is complete already (%d lines, one per input line): nothing to do", outputs[next(iter(outputs))],
                 len(sentences))
        return {"sentences": len(sentences), "failed": 0, "failed_before": 0, "resumed_from": len(sentences),
                "seconds": time.perf_counter() - started, "finished_before": True}
    done = failed_before = 0
    hashes = {name: hashlib.sha256() for name in outputs}
    if checkpoint is not None:
        done = int(checkpoint["lines_done"])
        failed_before = int(checkpoint.get("failed", 0))  # absent from progress files of older versions
        for name, path in outputs.items():  # drop whatever was written after the checkpoint
            with open(path, "r+b") as f:
                hashes[name].update(f.read(int(checkpoint["offsets"][name])))
                f.truncate(int(checkpoint["offsets"][name]))
        log.info("resuming at line %d of %d", done + 1, len(sentences))
    else:
        try:  # a progress file of an earlier run describes outputs about to be overwritten
            os.unlink(sidecar)
        except FileNotFoundError:
            pass
    files = {name: open(path, "ab" if checkpoint is not None else "wb") for name, path in outputs.items()}
    # What the outputs hold after the last complete record (and how many of its lines failed): the
    # checkpoint never counts half a record.
    n_failed = failed_before
    lines_done, failed_done, offsets = done, failed_before, {name: f.tell() for name, f in files.items()}
    digests = {name: h.hexdigest() for name, h in hashes.items()}

    def save() -> None:
        for f in files.values():
            f.flush()
            os.fsync(f.fileno())
        _write_checkpoint(sidecar, {"input_sha256": digest, "outputs": outputs, "lines_done": lines_done,
                                    "failed": failed_done, "offsets": offsets, "sha256": digests,
                                    "identity": json_identity(identity)})

    try:
        save()
        last_save = time.monotonic()
        for index, result in iter_translate(loader, sentences, workers, job, start=done, progress=progress,
                                            isolate=isolate, cluster=cluster):
            n_failed += bool(counts_as_failed(index, result))
            texts = render(index, result)
            for name, f in files.items():
                data = texts.get(name, "").encode("utf-8")
                f.write(data)
                hashes[name].update(data)
            lines_done, failed_done, offsets = index + 1, n_failed, {name: f.tell() for name, f in files.items()}
            digests = {name: h.hexdigest() for name, h in hashes.items()}
            if time.monotonic() - last_save > CHECKPOINT_SECONDS:
                save()
                last_save = time.monotonic()
        for f in files.values():  # here, so that a full disk at the end is reported as above
            f.flush()
    except BaseException as error:  # Ctrl-C, a full disk, ...: keep every complete record
        try:
            save()
        except OSError:
            pass
        if isinstance(error, OSError) and error.filename is None:  # a full disk: say which outputs
            raise OutputError(", ".join(outputs.values()), f"cannot write: {error.strerror or error}") from None
        raise
    finally:
        for f in files.values():
            with contextlib.suppress(OSError):  # a write error is reported above
                f.close()
    os.unlink(sidecar)  # only reached when every sentence is written
    return {"sentences": len(sentences), "failed": n_failed, "failed_before": failed_before, "resumed_from": done,
            "seconds": time.perf_counter() - started}
