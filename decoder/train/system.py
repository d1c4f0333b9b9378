"""What `cky train` leaves in DIR besides the stages' files: config.toml and system.json.

config.toml is a decoder config (decoder.config) with paths relative to DIR, so the
directory can be moved: the store and the built-in glue (GHKM) or the grammar directory
(`system = "sdig"`), the LM, the tuned weights (none: the decoder's defaults), the recasing
model (recase.gz), and a [languages] table naming the source and target languages and their
tokenizers (decoder.data.tokenize's registry): with it, the system takes raw text and gives
detokenized, recased text (decoder.text).

system.json describes the system: which one (`system`: "ghkm" or "sdig"), languages,
tokenizers, parsers, the input files (path, SHA-256, lines), sizes, each stage's times and
statistics as of its last run, and the scores. It is rewritten at the end of every run from DIR/stages.json, so a run
that skips every stage writes it unchanged.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..data.tokenize import tokenizer_versions
from ..search.prepared_grammar import DIRECTORY as CACHE_DIRECTORY
from ..settings import DEFAULT_GLUE
from ..tune.config import write_config

CONFIG = "config.toml"
SYSTEM = "system.json"
# The SDIG config uses the grammar's learned child order model (decoder.sdig.search, `reorder`): the
# source's children otherwise keep their order (Spanish "el rey viejo" gives "the king old"); tuned,
# it scored higher on the Bible test set than without (docs/sdig.md).
SDIG_REORDER = True
# The GHKM system's search: incremental search (Heafield, Koehn and Lavie 2013) over the rest-cost
# binary of its LM. At equal model score it takes 0.39-0.45 times cube pruning's CPU on the 600
# test verses of the full Spanish-English Bible system, and about 0.35-0.7 times on Chinese-English
# (docs/results.md, Incremental search against cube pruning); a complete translation scores the same.
GHKM_SEARCH = {"search": "incremental"}
REST_LM = "lm.rest.bin"


def system_config(model: str, lm: str, languages: dict, weights: dict | None = None,
                  lm_order: int | None = None, recase_model: str | None = None, system: str = "ghkm",
                  search: dict | None = None) -> dict:
    """The config mapping of a `system` ("ghkm": `model` is the store; "sdig": the grammar directory);
    paths as given: relative to the config's directory, or absolute; `search`: its [search] table."""
    if system == "sdig":  # (the SDIG config has no LM order check and no glue)
        config: dict = {"system": "sdig", "grammar": model, "lm": lm, "reorder": SDIG_REORDER}
    else:
        config = {"store": model, "lm": lm}
        if lm_order is not None:
            config["lm_order"] = lm_order
        config["glue"] = DEFAULT_GLUE
    if recase_model is not None:
        config["recase_model"] = recase_model
    config["languages"] = dict(languages)
    if search:
        config["search"] = dict(search)
    if weights:
        config["weights"] = {name: float(value) for name, value in weights.items()}
    return config


def model_bytes(directory: Path) -> int | None:
    """The bytes of a model directory (a store, a grammar), leaving out the prepared grammar cache a
    decoder writes into a store (decoder.search.prepared_grammar); None if it is missing."""
    directory = Path(directory)
    if not directory.exists():
        return None
    return sum(p.stat().st_size for p in directory.rglob("*")
               if p.is_file() and CACHE_DIRECTORY not in p.relative_to(directory).parts)


def write_system_config(path: Path, config: dict, header: str) -> None:
    write_config(config, str(path), header=header)


def write_system_json(path: Path, content: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    temporary.replace(path)


def describe(settings, state: dict, counts: dict, source_tokenizer: str, target_tokenizer: str, checksums,
             names: list[str], parser: str | None, source_parser: str | None = None) -> dict:
    """system.json's content (see the module docstring): `settings` are the run's TrainSettings, `state`
    DIR/stages.json's content, `counts` the input files' pairs by role, `checksums` a
    decoder.train.stages.Checksums, `names` the run's stages in order, `parser` the target parser,
    `source_parser` the source side's dependency parser (SDIG)."""
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
    sdig = settings.system == "sdig"
    store_dir = settings.out / "store"
    grammar_dir = settings.out / "grammar"

    sizes = {
        "corpus_pairs": clean.get("pairs_read"), "clean_pairs": clean.get("pairs_kept"),
        "dropped_by_reason": clean.get("dropped"),
        "train_pairs": split.get("train_pairs"),
        "dev_pairs": split.get("dev_pairs_held_out") or split.get("dev_pairs_given"),
        "dev_held_out": bool(split.get("dev_pairs_held_out")),
        "test_pairs": counts.get("test"),
        "train_source_tokens": tokenized.get("train.tok.src", {}).get("tokens"),
        "train_target_tokens": tokenized.get("train.tok.tgt", {}).get("tokens"),
    }
    if sdig:
        induce = statistics.get("induce", {})
        sizes.update({"et_pairs": induce.get("et_pairs"), "induced_et_pairs": induce.get("induced_et_pairs_kept"),
                      "model1_et_pairs": induce.get("model1_et_pairs"), "grammar_bytes": model_bytes(grammar_dir)})
    else:
        sizes.update({"rules": extract.get("distinct_rules"),
                      "binary_rules": statistics.get("compile", {}).get("binary_rules"),
                      "store_bytes": model_bytes(store_dir)})
    sizes["lm_bytes"] = (settings.out / "lm.bin").stat().st_size if settings.lm is None and \
        (settings.out / "lm.bin").exists() else None
    scores = {}
    if tune.get("tuned"):
        scores["dev_bleu"] = tune.get("dev_bleu")
    if "evaluate" in statistics:
        scores["test_bleu"] = statistics["evaluate"].get("bleu")
        scores["test_chrf"] = statistics["evaluate"].get("chrf")
        if "sacrebleu" in statistics["evaluate"]:  # detokenized, cased, against the raw references
            scores["test_sacrebleu"] = statistics["evaluate"]["sacrebleu"]
            scores["test_sacrebleu_chrf"] = statistics["evaluate"].get("sacrebleu_chrf")
    described = {
        "config": "config.toml",
        "system": settings.system,
        "languages": {"source": settings.source_lang, "target": settings.target_lang},
        "tokenizers": {"source": source_tokenizer, "target": target_tokenizer,
                       "versions": tokenizer_versions((source_tokenizer, target_tokenizer))},
        "parser": parser,
    }
    if sdig:
        described["source_parser"] = source_parser
    return {
        **described,
        "strategy": None if sdig else settings.strategy,
        "lm": {"path": "lm.bin" if settings.lm is None else str(settings.lm.resolve()),
               "order": settings.lm_order if settings.lm is None else None, "built": settings.lm is None,
               **({"rest_costs": REST_LM} if settings.lm is None and not sdig else {})},
        "search": None if sdig else GHKM_SEARCH["search"] if settings.lm is None else "cube",
        "tuned": bool(tune.get("tuned")),
        "inputs": inputs,
        "sizes": sizes,
        "scores": scores,
        "stages": {name: {"seconds": records[name].get("seconds"), "cpu_seconds": records[name].get("cpu_seconds"),
                          "statistics": records[name].get("statistics")}
                   for name in records},
    }
