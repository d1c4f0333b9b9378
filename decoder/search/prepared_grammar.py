"""The prepared grammar cache: a store's search arrays under one set of weights, kept on disk.

Preparing a grammar for the search (decoder.search.grammar_arrays) scores every binary rule
under the weights, ranks each source side's rules for the table limit, pushes weights into
the virtual rules and sorts each key's rules: on a full Bible store (several million binary
rules) that is several seconds of numpy at every open, while the result depends only on the
store, the LM's vocabulary, the weights and a few search settings. So the result is saved
next to the store, under a key of all of these, and the next decoder opened on the same
system maps it from disk (numpy memory maps, copy on write) instead of computing it: a
system's config opens in a fraction of a second, and the pages of rules no sentence needs
are never read. Moses' binarized rule tables serve the same purpose (prepared once, mapped
at every start); here the weights are part of the key because the table limit and the rule
order depend on them.

Layout: STORE/prepared/KEY/{NAME.npy, ready.json}. An entry is written into a temporary
directory and renamed into place, so a reader sees a whole entry or none; ready.json lists
the arrays and their shapes and dtypes, and an entry that does not match it is ignored
(and recomputed). At most KEEP entries stay per store (the least recently used go), so
tuning, which opens the system under many weights, does not fill the disk. A store whose
directory is not writable is prepared in memory as before. A search that prepares records of its
own from the grammar (incremental search's sorted rules) caches them the same way, under a key
derived from the grammar's (derived_key). Grammars smaller than
MIN_CACHED_RULES binary rules are not cached: preparing them costs less than a read.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

FORMAT = 2                  # bump when what is prepared (or how) changes: older entries are ignored
DIRECTORY = "prepared"      # under the store's directory
READY = "ready.json"
KEEP = 4                    # entries kept per store (a search may add its own beside the grammar's)
MIN_CACHED_RULES = 200_000  # binary rules; below this, preparing is faster than reading


def cache_root(store) -> Path:
    return Path(store.path) / DIRECTORY


def _file_stamp(path: Path) -> list:
    stat = path.stat()
    return [path.name, stat.st_size, stat.st_mtime_ns]


def store_fingerprint(store) -> list:
    """What identifies the store's content: each file's name, size and modification time."""
    root = Path(store.path)
    return [_file_stamp(p) for p in sorted(root.iterdir()) if p.is_file()]


def lm_fingerprint(lm_path: str | None) -> list | None:
    if not lm_path:
        return None
    path = Path(lm_path).resolve()
    return [str(path)] + _file_stamp(path)[1:]


def cache_key(store, lm_path: str | None, facts: dict) -> str:
    """The key of a prepared grammar: the format, the package version, the store, the LM file and
    `facts` (the weights and the grammar settings; JSON-serializable)."""
    from .. import __version__

    content = json.dumps({"format": FORMAT, "version": __version__, "store": store_fingerprint(store),
                          "lm": lm_fingerprint(lm_path), "facts": facts}, sort_keys=True, default=repr)
    return hashlib.sha256(content.encode()).hexdigest()[:24]


def derived_key(key: str, name: str) -> str:
    """The key of what a search prepares from the grammar prepared under `key` (e.g. its own records)."""
    return hashlib.sha256(f"{key}/{name}".encode()).hexdigest()[:24]


def cached(store, key: str | None, compute: Callable[[], dict]) -> dict:
    """The arrays saved under `key`, or compute() (a dict of arrays), saved under it; None: not cached."""
    if key is not None:
        arrays = load(store, key)
        if arrays is not None:
            return arrays
    arrays = compute()
    if key is not None:
        save(store, key, arrays)
    return arrays


def load(store, key: str) -> dict[str, np.ndarray] | None:
    """The arrays of entry `key`, memory-mapped copy-on-write, or None when there is no whole entry."""
    entry = cache_root(store) / key
    ready = entry / READY
    if not ready.is_file():
        return None
    try:
        listing = json.loads(ready.read_text(encoding="utf-8"))
        arrays = {}
        for name, (shape, dtype) in listing["arrays"].items():
            array = np.load(entry / f"{name}.npy", mmap_mode="c", allow_pickle=False)
            if list(array.shape) != shape or array.dtype.str != dtype:
                raise ValueError(f"{name}.npy: shape {array.shape} {array.dtype.str}, ready.json says "
                                 f"{shape} {dtype}")
            arrays[name] = array
    except (OSError, ValueError, KeyError, TypeError) as error:
        warnings.warn(f"{entry}: prepared grammar unreadable ({error}); preparing it again", RuntimeWarning,
                      stacklevel=3)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    try:
        os.utime(ready)  # most recently used
    except OSError:
        pass
    return arrays


def save(store, key: str, arrays: dict[str, np.ndarray]) -> bool:
    """Write entry `key` (whole or not at all); False when the store's directory is not writable."""
    root = cache_root(store)
    try:
        root.mkdir(exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
    except OSError:
        return False
    try:
        listing = {}
        for name, array in arrays.items():
            array = np.ascontiguousarray(array)
            np.save(staging / f"{name}.npy", array, allow_pickle=False)
            listing[name] = [list(array.shape), array.dtype.str]
        (staging / READY).write_text(json.dumps({"arrays": listing, "written": time.time()}), encoding="utf-8")
        try:
            os.rename(staging, root / key)
        except OSError:  # another process wrote the same entry first: theirs is as good
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        warnings.warn(f"{root}: prepared grammar not saved ({error})", RuntimeWarning, stacklevel=3)
        return False
    _evict(root)
    return True


def _evict(root: Path, keep: int = KEEP) -> None:
    """Remove all but the `keep` most recently used entries (and staging directories over an hour old)."""
    entries, now = [], time.time()
    for path in root.iterdir():
        try:
            if path.name.startswith("."):
                if now - path.stat().st_mtime > 3600:
                    shutil.rmtree(path, ignore_errors=True)
            elif (path / READY).is_file():
                entries.append(((path / READY).stat().st_mtime, path))
            else:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue
    for _, path in sorted(entries, reverse=True)[keep:]:
        shutil.rmtree(path, ignore_errors=True)
