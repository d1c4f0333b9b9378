"""What `cky train` leaves in DIR besides the stages' files: config.toml and system.json.

config.toml is a decoder config (decoder.config) with paths relative to DIR, so the
directory can be moved: the store, the LM, the built-in glue, the tuned weights (none:
the decoder's defaults), the recasing model (recase.gz), and a [languages] table naming
the source and target languages and their tokenizers (decoder.data.tokenize's registry):
with it, the system takes raw text and gives detokenized, recased text (decoder.text).

system.json describes the system: languages, tokenizers, the input files (path,
SHA-256, lines), sizes, each stage's times and statistics as of its last run, and
the scores. It is rewritten at the end of every run from DIR/stages.json, so a run
that skips every stage writes it unchanged.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..settings import DEFAULT_GLUE
from ..tune.config import write_config

CONFIG = "config.toml"
SYSTEM = "system.json"


def system_config(store: str, lm: str, languages: dict, weights: dict | None = None,
                  lm_order: int | None = None, recase_model: str | None = None) -> dict:
    """The config mapping (paths as given: relative to the config's directory, or absolute)."""
    config: dict = {"store": store, "lm": lm}
    if lm_order is not None:
        config["lm_order"] = lm_order
    config["glue"] = DEFAULT_GLUE
    if recase_model is not None:
        config["recase_model"] = recase_model
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


def describe(settings, state: dict, counts: dict, source_tokenizer: str, target_tokenizer: str, checksums,
             names: list[str], parser: str | None) -> dict:
    """system.json's content (see the module docstring): `settings` are the run's TrainSettings, `state`
    DIR/stages.json's content, `counts` the input files' pairs by role, `checksums` a
    decoder.train.stages.Checksums, `names` the run's stages in order, `parser` the target parser."""
    records = {name: state["stages"][name] for name in names if name in state["stages"]}
    statistics = {name: record.get("statistics", {}) for name, record in records.items()}

    def file_entry(path: Path, lines: int | None) -> dict:
        return {"path": os.path.abspath(path), "sha256": checksums.of(path), "lines": lines}

    inputs = {"source": file_entry(settings.source, counts["corpus"]),
              "target": file_entry(settings.target, counts["corpus"])}
    if settings.dev:
        inputs["dev_source"], inputs["dev_target"] = (file_entry(p, counts["dev"]) for p in settings.dev)
    if settings.test:
        inputs["test_source"], inputs["test_target"] = (file_entry(p, counts["test"]) for p in settings.test)
    for k, path in enumerate(settings.lm_text):
        inputs[f"lm_text_{k}"] = file_entry(path, None)
    if settings.lm is not None:
        inputs["lm"] = file_entry(settings.lm, None)
    clean, split = statistics.get("clean", {}), statistics.get("split", {})
    tokenized = statistics.get("tokenize", {})
    extract, tune = statistics.get("extract", {}), statistics.get("tune", {})
    store_dir = settings.out / "store"
    sizes = {
        "corpus_pairs": clean.get("pairs_read"), "clean_pairs": clean.get("pairs_kept"),
        "dropped_by_reason": clean.get("dropped"),
        "train_pairs": split.get("train_pairs"),
        "dev_pairs": split.get("dev_pairs_held_out") or split.get("dev_pairs_given"),
        "dev_held_out": bool(split.get("dev_pairs_held_out")),
        "test_pairs": counts.get("test"),
        "train_source_tokens": tokenized.get("train.tok.src", {}).get("tokens"),
        "train_target_tokens": tokenized.get("train.tok.tgt", {}).get("tokens"),
        "rules": extract.get("distinct_rules"), "binary_rules": statistics.get("compile", {}).get("binary_rules"),
        "store_bytes": sum(p.stat().st_size for p in store_dir.rglob("*") if p.is_file()) if store_dir.exists()
        else None,
        "lm_bytes": (settings.out / "lm.bin").stat().st_size if settings.lm is None and
        (settings.out / "lm.bin").exists() else None,
    }
    scores = {}
    if tune.get("tuned"):
        scores["dev_bleu"] = tune.get("dev_bleu")
    if "evaluate" in statistics:
        scores["test_bleu"] = statistics["evaluate"].get("bleu")
        scores["test_chrf"] = statistics["evaluate"].get("chrf")
        if "sacrebleu" in statistics["evaluate"]:  # detokenized, cased, against the raw references
            scores["test_sacrebleu"] = statistics["evaluate"]["sacrebleu"]
            scores["test_sacrebleu_chrf"] = statistics["evaluate"].get("sacrebleu_chrf")
    return {
        "config": "config.toml",
        "languages": {"source": settings.source_lang, "target": settings.target_lang},
        "tokenizers": {"source": source_tokenizer, "target": target_tokenizer},
        "parser": parser,
        "strategy": settings.strategy,
        "lm": {"path": "lm.bin" if settings.lm is None else str(settings.lm.resolve()),
               "order": settings.lm_order if settings.lm is None else None, "built": settings.lm is None},
        "tuned": bool(tune.get("tuned")),
        "inputs": inputs,
        "sizes": sizes,
        "scores": scores,
        "stages": {name: {"seconds": records[name].get("seconds"), "cpu_seconds": records[name].get("cpu_seconds"),
                          "statistics": records[name].get("statistics")}
                   for name in records},
    }
