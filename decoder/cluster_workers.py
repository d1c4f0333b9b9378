"""Decoding on a Dask cluster, given a decoder *loader*: what runs on the workers and how
results come back, in input order.

This is the machinery under decoder.cluster (the user's entry point, which also takes a config
path) and under decoder.batch's `cluster=` argument. It never builds a decoder itself and does
not import decoder.decoder: a loader is a picklable callable that returns a decoder (such as
functools.partial(Decoder.from_config, path, pop_limit=50)), so the layering goes one way:
decoder.cluster -> decoder.decoder -> decoder.batch -> decoder.cluster_workers.

Needs the `cluster` extra (`pip install cky-decoder[cluster]`, i.e. dask[distributed]).
Dask's distributed scheduler does the scheduling, the transport and the fault handling;
this module only says what runs where:

- Each worker opens the decoder once: `DecoderPlugin` (a worker plugin) calls the loader when
  the worker starts (the store is memory-mapped, the LM loaded once), and again on a worker that
  replaces a dead one. Only the loader travels through the scheduler, so every worker must see
  the model files it names (the same machine, or a shared file system). Registering the same
  decoder again does not reload it.
- Sentences travel in shards of `shard_size`, one task each; results come back in input
  order, one per sentence: a sentence whose decoding raises gives `Translation.failure` (its
  `error` set) (logged with its line number) and the others are unaffected.
- A worker that dies mid-run (killed, out of memory, its machine lost): the scheduler runs its
  shards again on the other workers (up to `distributed.scheduler.allowed-failures` times per
  shard, 3 by default). A shard's result is gathered once, so no line is lost or duplicated.
- A worker decodes one shard at a time (a Decoder's chart is reused between sentences):
  start workers with one thread each (`dask worker --nthreads 1 --nworkers N`) and use processes
  for parallelism; a worker with more threads still works, its threads take turns.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import signal
import threading
import uuid
from typing import Iterator, Sequence

from .errors import ClusterError, SettingsError
from .translation import Job, Translation, translate_job

log = logging.getLogger("cky.cluster")

DEFAULT_SHARD_SIZE = 8  # sentences per task: large enough to amortize a task (~1 ms), small enough to balance
CONNECT_SECONDS = 30  # how long connect() waits for a scheduler


try:
    import cloudpickle  # what Dask sends functions with (a lambda, too); a dependency of distributed
    from distributed import WorkerPlugin as _WorkerPlugin
except ImportError:  # the `cluster` extra is not installed: connect() says so
    _WorkerPlugin = object


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ImportError("decoding on a cluster needs Dask: pip install 'cky-decoder[cluster]' "
                          "(or pip install 'dask[distributed]')") from None
    return distributed


def connect(spec: str):
    """A dask.distributed Client for `spec`: "local" (a LocalCluster of one single-threaded worker
    process per core), "local:N" (N workers), or a scheduler address "tcp://HOST:PORT".
    Closing the client (use it in a `with`) also closes a LocalCluster it started.
    A scheduler that cannot be reached is a ClusterError naming it."""
    distributed = _distributed()
    if spec == "local" or spec.startswith("local:"):
        count = spec.partition(":")[2]
        if count and not (count.isdigit() and int(count) > 0):
            raise SettingsError(None, f"--cluster {spec}: expected local, local:N (N >= 1) or tcp://HOST:PORT")
        n_workers = int(count) if count else (os.cpu_count() or 1)
        # a Client given no address starts a LocalCluster of its own, and closes it with itself
        with _ctrl_c_ignored_by_children():
            client = distributed.Client(n_workers=n_workers, threads_per_worker=1, processes=True,
                                        dashboard_address=":0")  # any free port: 8787 may be taken
        # a worker started again after one died is started by this process (its nanny): the plugin covers it
        client.register_plugin(IgnoreCtrlC(), name="cky-ignore-ctrl-c")
        return client
    if "://" not in spec:
        raise SettingsError(None, f"--cluster {spec}: expected local, local:N or a scheduler address tcp://HOST:PORT")
    try:
        return distributed.Client(spec, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError) as error:  # distributed raises OSError (or TimeoutError) after the timeout
        raise ClusterError(spec, f"cannot reach the Dask scheduler: {error}") from None


@contextlib.contextmanager
def _ctrl_c_ignored_by_children():
    """Start processes that ignore Ctrl-C (SIGINT), as decoder.batch's workers do: a terminal sends it to
    the whole process group, and the client, not each nanny and worker, stops the LocalCluster (else
    each prints a KeyboardInterrupt traceback). An ignored signal stays ignored in a child process, and
    Python keeps it so at start-up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class IgnoreCtrlC(_WorkerPlugin):
    """Makes a LocalCluster's worker ignore Ctrl-C (see _ctrl_c_ignored_by_children); not for the
    workers of a scheduler given by address (their own terminal's Ctrl-C must stop them)."""

    def setup(self, worker):
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def check_loader(loader) -> None:
    """A TypeError unless `loader` is a callable that builds a decoder (a config path is opened by
    decoder.cluster, which knows the decoder classes; this layer does not)."""
    if not callable(loader):
        raise TypeError(f"a cluster's workers build their decoder with a loader (a picklable callable such as "
                        f"functools.partial(Decoder.from_config, path)), not {type(loader).__name__}; "
                        f"decoder.cluster.translate_on_cluster also takes a config path")


class DecoderPlugin(_WorkerPlugin):
    """A worker plugin that builds the worker's decoder once per worker by calling `loader` (a
    picklable callable that returns a decoder). Its name says which decoder: `label` (decoder.cluster
    gives the config path) or a digest of the pickled loader, so that registering the same decoder
    again is recognized and does not reload it."""

    def __init__(self, loader, label: str | None = None):
        check_loader(loader)
        self.loader, self.label = loader, label
        self.name = f"cky-decoder:{label or hashlib.sha256(cloudpickle.dumps(loader)).hexdigest()[:16]}"
        self.decoder = None
        self.lock = threading.Lock()

    def setup(self, worker):
        self.decoder = self.loader()
        log.info("worker %s loaded %r in %.2f s", worker.address, self.decoder, self.decoder.load_seconds)

    def teardown(self, worker):
        self.decoder = None

    def __getstate__(self):  # travels to the workers as its loader (and label) only
        return {"loader": self.loader, "label": self.label}

    def __setstate__(self, state):
        self.__init__(state["loader"], state.get("label"))


def _translate_shard(plugin_name: str, first_line: int, sentences: list, job: Job) -> list:
    """Run on a worker: `job(decoder, sentence)` for each sentence of the shard (lines numbered
    from `first_line`, 1-based), `Translation.failure` for a sentence that raises."""
    from distributed import get_worker

    plugin = get_worker().plugins[plugin_name]
    results = []
    with plugin.lock:
        decoder = plugin.decoder  # kept for the whole shard: a closing worker's teardown drops the plugin's
        if decoder is None:  # torn down (the worker is closing): the scheduler runs the shard elsewhere
            raise RuntimeError(f"{plugin_name} was torn down on this worker")
        for offset, sentence in enumerate(sentences):
            try:
                results.append(job(decoder, sentence))
            except Exception as error:  # one bad sentence must not lose its shard
                line = first_line + offset
                log.error("line %d: decoding failed: %s: %s", line, type(error).__name__, error)
                results.append(Translation.failure(sentence, f"{type(error).__name__}: {error}"))
    return results


def _has_plugin(name: str, dask_worker=None) -> bool:
    return name in dask_worker.plugins


def register_decoder(client, loader, label: str | None = None) -> str:
    """Make every worker (present and future) build the decoder of `loader` once (see DecoderPlugin);
    returns the plugin's name. Workers that already have it keep their decoder."""
    plugin = DecoderPlugin(loader, label)
    present = client.run(_has_plugin, plugin.name)
    if not present or not all(present.values()):
        client.register_plugin(plugin, name=plugin.name)
    return plugin.name


def iter_translate_on_cluster(client, loader, sentences: Sequence[str], job: Job = translate_job,
                              shard_size: int = DEFAULT_SHARD_SIZE, start: int = 0,
                              label: str | None = None) -> Iterator[tuple[int, object]]:
    """(index, result) for sentences[start:], in input order, as soon as each is ready in order.
    `loader` builds each worker's decoder (see DecoderPlugin). A shard whose workers keep dying
    (more than `distributed.scheduler.allowed-failures` times) is a ClusterError."""
    distributed = _distributed()
    if shard_size < 1:
        raise SettingsError(None, f"shard_size must be at least 1, not {shard_size}")
    name = register_decoder(client, loader, label)
    run = uuid.uuid4().hex[:8]
    firsts = range(start, len(sentences), shard_size)
    futures = [client.submit(_translate_shard, name, first + 1, list(sentences[first:first + shard_size]), job,
                             key=f"cky-shard-{run}-{shard}", pure=False)
               for shard, first in enumerate(firsts)]
    shard_of = {future.key: shard for shard, future in enumerate(futures)}
    done: dict = {}
    next_shard = 0
    try:
        for future in distributed.as_completed(futures):
            try:
                done[shard_of[future.key]] = future.result()
            except distributed.KilledWorker as error:
                first = firsts[shard_of[future.key]]
                raise ClusterError(None, f"lines {first + 1}-{min(first + shard_size, len(sentences))}: the workers "
                                         f"decoding them died again and again ({error})") from None
            future.release()
            while next_shard in done:
                for offset, result in enumerate(done.pop(next_shard)):
                    yield firsts[next_shard] + offset, result
                next_shard += 1
    finally:
        client.cancel([f for f in futures if not f.done()])
