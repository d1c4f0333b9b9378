"""Decoding on a Dask cluster: the same results as decoder.batch, on many machines.

    from decoder.cluster import connect, translate_on_cluster
    with connect("local:2") as client:                  # or "local", or "tcp://SCHEDULER:8786"
        results = translate_on_cluster(client, "model/config.toml", sentences)

Needs the `cluster` extra (`pip install cky-decoder[cluster]`, i.e. dask[distributed]).
This is the user's entry point: it takes a config path (each worker builds the decoder with
`Decoder.from_config`) or a loader, a picklable callable that builds a decoder (such as
functools.partial(Decoder.from_config, path, pop_limit=50)). What runs on the workers, how
shards travel and how a dead worker's shards are run again is decoder.cluster_workers; that
layer takes loaders only, so that decoder.decoder and decoder.batch can use it without
importing this module (which imports decoder.decoder).
"""
from __future__ import annotations

import functools
import os
from typing import Iterator, Sequence

from .cluster_workers import (CONNECT_SECONDS, DEFAULT_SHARD_SIZE, DecoderPlugin, IgnoreCtrlC,  # noqa: F401
                              connect)
from .cluster_workers import iter_translate_on_cluster as _iter_with_loader
from .decoder import Decoder
from .translation import Job, translate_job

__all__ = ["DEFAULT_SHARD_SIZE", "connect", "decoder_loader", "iter_translate_on_cluster", "translate_on_cluster"]


def decoder_loader(config) -> tuple:
    """(loader, label): a config path becomes functools.partial(Decoder.from_config, absolute path),
    labelled by that path (the workers' plugin is named by it); a loader is kept as it is."""
    if isinstance(config, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(config))
        return functools.partial(Decoder.from_config, path), path
    return config, None


def iter_translate_on_cluster(client, config, sentences: Sequence[str], job: Job = translate_job,
                              shard_size: int = DEFAULT_SHARD_SIZE, start: int = 0) -> Iterator[tuple[int, object]]:
    """(index, result) for sentences[start:], in input order, as soon as each is ready in order.
    `config` is a config path or a loader (a picklable callable that builds a decoder). A shard whose
    workers keep dying (more than `distributed.scheduler.allowed-failures` times) is a ClusterError."""
    loader, label = decoder_loader(config)
    return _iter_with_loader(client, loader, sentences, job, shard_size, start, label=label)


def translate_on_cluster(client, config, sentences: Sequence[str], job: Job = translate_job,
                         shard_size: int = DEFAULT_SHARD_SIZE) -> list:
    """One result per sentence, in order: a Translation (or whatever `job` returns), or
    `Translation.failure(...)` (`ok` false, `error` set) where the job raised. `config` is a config
    path or a loader (see iter_translate_on_cluster)."""
    return [result for _, result in iter_translate_on_cluster(client, config, sentences, job, shard_size)]
