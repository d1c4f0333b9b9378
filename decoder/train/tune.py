"""The tune stage: MERT on the dev set (decoder.tune.run.tune, k-best lists, BLEU on the
tokenized, lowercased text), then config.toml with the tuned weights; with `--no-tune`,
config.toml with the decoder's default weights. The same for both systems: the GHKM store
or (`system = "sdig"`) the SDIG grammar directory, whose decoder parses each dev sentence.

MERT's state is saved after each iteration in DIR/.work/tune; a run killed during tuning
resumes from the last finished iteration when the stage's inputs are unchanged.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import ResumeError
from ..tune.run import tune
from .split import read_lines
from .system import system_config, write_system_config


def tune_system(config_path: Path, out_dir: Path, model: Path, lm: str, lm_order: int | None, languages: dict,
                dev_source: Path | None, dev_target: Path | None, work_dir: Path, persistent_dir: Path,
                iterations: int, kbest: int, workers: int, progress: bool = True, fingerprint: str = "",
                weights: dict | None = None, recase_model: str | None = None, system: str = "ghkm",
                fixed: tuple[str, ...] = (), search: dict | None = None) -> dict:
    """Write config_path, to be moved into `out_dir`, for `system` (decoder.train.system.system_config;
    `model`, the store or grammar directory in `out_dir`; paths relative to `out_dir`, `lm` as given:
    relative to `out_dir`, or absolute; `recase_model`, relative to `out_dir`, recorded as the system's
    recasing model); returns statistics. MERT's checkpoint in `persistent_dir` is resumed only by a run
    of the same `fingerprint`; `fixed` features keep their weights; `search`, the config's [search]
    table, which MERT decodes with too. MERT decodes the tokenized dev set
    (decoder.text.tokenized_input). Without a dev set, the config gets `weights` if given, else the
    decoder's defaults."""
    relative_lm, relative_model = lm, model.relative_to(out_dir).as_posix()
    if dev_source is None:
        described = "the weights it was given" if weights else "the decoder's default weights"
        write_system_config(config_path, system_config(relative_model, relative_lm, languages, weights, lm_order,
                                                       recase_model, system, search),
                            f"written by cky train; not tuned (--no-tune): {described}")
        return {"tuned": False, **({"weights": dict(weights)} if weights else {})}
    start = work_dir / "start.toml"
    absolute_lm = str(out_dir / lm)  # (an absolute `lm` stays itself)
    # The fingerprint (of the model, LM and dev set) makes a checkpoint of another run's MERT unusable.
    write_system_config(start, system_config(str(model), absolute_lm, languages, None, lm_order, None, system,
                                             search),
                        f"cky train: the starting point of MERT; stage fingerprint {fingerprint}")
    persistent_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(start, persistent_dir / "start.toml")  # the checkpoint's identity names this path and content
    tuned = persistent_dir / "tuned.toml"
    sentences, references = read_lines(dev_source), read_lines(dev_target)
    arguments = dict(kbest=kbest, max_iterations=iterations, tokenize="none", workers=workers, progress=progress,
                     fixed=tuple(fixed))
    try:
        summary = tune(str(persistent_dir / "start.toml"), sentences, [references], str(tuned), resume=True,
                       **arguments)
    except ResumeError:  # no checkpoint, or one of another run
        summary = tune(str(persistent_dir / "start.toml"), sentences, [references], str(tuned), **arguments)
    header = (f"written by cky train: weights tuned with MERT on {len(sentences)} dev sentences, dev BLEU "
              f"{summary['bleu']:.2f} (tokenized, lowercased) after {len(summary['history'])} iterations")
    write_system_config(config_path, system_config(relative_model, relative_lm, languages, summary["weights"],
                                                   lm_order, recase_model, system, search),
                        header)
    shutil.rmtree(persistent_dir, ignore_errors=True)
    return {"tuned": True, "dev_sentences": len(sentences), "dev_bleu": round(summary["bleu"], 2),
            "iterations": len(summary["history"]), "stopped": summary["stopped"], "weights": summary["weights"],
            "resumed_after_iteration": summary["resumed_after"]}
