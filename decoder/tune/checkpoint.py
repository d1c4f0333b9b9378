"""MERT's checkpoint: `cky tune --resume` continues an interrupted run from its last finished iteration.

After every iteration that goes on, the loop's state (decoder.tune.mert.MertState: the merged k-best
lists with their features and BLEU statistics, the next weights, the history, every decoded weight
vector and the random generator's state) is written to OUT.mert.npz, atomically (a temporary file,
then os.replace), with the run's identity: the config, dev sources and references by content, the
features and every setting the result depends on. A resumed run continues exactly as the run would
have (the same weights and history); resuming under another identity is refused, naming the file and
what changed; --max-iterations may differ. A finished run removes the file.

The file holds only numbers and text (numpy's npz without pickles): the hypotheses' texts as UTF-8
joined by newlines (an output line holds none), the rest as JSON.
"""
from __future__ import annotations

import hashlib
import json
import os
import zipfile

import numpy as np

from ..batch import changed_identity, json_identity
from ..errors import ResumeError
from ..outputs import atomic_write
from .mert import MertState

SUFFIX = ".mert.npz"


def checkpoint_path(out_path: str) -> str:
    return out_path + SUFFIX


def text_digest(lines) -> str:
    """The SHA-256 of lines of text (one home for how a dev set enters the identity)."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def file_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def save_state(path: str, state: MertState, identity: dict) -> None:
    """Write the loop's state and the run's identity to `path` (atomically)."""
    texts, features, stats, offsets = state.pool_rows
    meta = {"identity": json_identity(identity), "iteration": state.iteration,
            "weights": np.asarray(state.weights, dtype=np.float64).tolist(), "history": state.history,
            "decoded": [[float(bleu), np.asarray(weights, dtype=np.float64).tolist()] for bleu, weights in state.decoded],
            "rng_state": state.rng_state}
    with atomic_write(path, binary=True) as f:
        np.savez(f, features=features, stats=stats, offsets=offsets,
                 texts=np.frombuffer("\n".join(texts).encode("utf-8", "surrogatepass"), dtype=np.uint8),
                 meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8))


def load_state(path: str, identity: dict) -> MertState:
    """The state saved at `path` for a run of this identity, or a ResumeError naming the file."""
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise ResumeError(path, "unreadable MERT checkpoint (not a whole npz file); run without --resume to "
                                "start over")
    try:
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as data:  # (a damaged file: closed too)
            arrays = {name: data[name] for name in ("features", "stats", "offsets", "texts", "meta")}
        meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
        raw_texts = arrays["texts"].tobytes().decode("utf-8", "surrogatepass")
    except FileNotFoundError:
        raise ResumeError(path, "no MERT checkpoint to resume from; run without --resume to start") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as error:
        raise ResumeError(path, f"unreadable MERT checkpoint ({error}); run without --resume to start over") \
            from None
    changes = changed_identity(meta.get("identity"), identity)
    if changes is not None:
        raise ResumeError(path, f"was written by another tuning run ({changes}); run without --resume to start "
                                f"over")
    offsets = arrays["offsets"]
    texts = raw_texts.split("\n") if int(offsets[-1]) else []
    if len(texts) != int(offsets[-1]) or len(arrays["features"]) != len(texts):
        raise ResumeError(path, f"unreadable MERT checkpoint ({len(texts)} texts for {int(offsets[-1])} "
                                f"hypotheses); run without --resume to start over")
    # (run_mert makes the weights arrays)
    return MertState(iteration=int(meta["iteration"]), weights=meta["weights"], history=meta["history"],
                     decoded=[(bleu, weights) for bleu, weights in meta["decoded"]],
                     rng_state=meta["rng_state"], pool_rows=(texts, arrays["features"], arrays["stats"], offsets))
