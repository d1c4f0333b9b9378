"""What `cky train` leaves in DIR besides the stages' files: config.toml and system.json.

config.toml is a decoder config (decoder.config) with paths relative to DIR, so the
directory can be moved: the store, the LM, the built-in glue, the tuned weights (none:
the decoder's defaults), and a [languages] table naming the source and target languages
and their tokenizers (decoder.data.tokenize's registry).

system.json describes the system: languages, tokenizers, the input files (path,
SHA-256, lines), sizes, each stage's times and statistics as of its last run, and
the scores. It is rewritten at the end of every run from DIR/stages.json, so a run
that skips every stage writes it unchanged.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..settings import DEFAULT_GLUE
from ..tune.config import write_config

CONFIG = "config.toml"
SYSTEM = "system.json"


def system_config(store: str, lm: str, languages: dict, weights: dict | None = None,
                  lm_order: int | None = None) -> dict:
    """The config mapping (paths as given: relative to the config's directory, or absolute)."""
    config: dict = {"store": store, "lm": lm}
    if lm_order is not None:
        config["lm_order"] = lm_order
    config["glue"] = DEFAULT_GLUE
    config["languages"] = dict(languages)
    if weights:
        config["weights"] = {name: float(value) for name, value in weights.items()}
    return config


def write_system_config(path: Path, config: dict, header: str) -> None:
    write_config(config, str(path), header=header)


def write_system_json(path: Path, content: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    temporary.replace(path)
