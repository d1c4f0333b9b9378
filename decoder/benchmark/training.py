"""`cky bench --train`: a Bible system from plain text to a tuned system, timed stage by stage, and
beside it, where a Moses build is at hand, Moses' GHKM training pipeline on the same corpus
(decoder.benchmark.moses_training).

Ours: the recipe of `cky data RECIPE [--small]` (decoder.data.build: the Bibles' verses as raw
parallel files, then the stages of `cky train`) run into a fresh directory, or, with --reuse, a
build already made (its DIR/stages.json is read, nothing is rerun). Each stage's wall seconds and
CPU seconds are the stage runner's (decoder.train.stages): the CPU seconds count this process and
every child process the stage waited for (link-grammar workers, eflomal, lmplz and build_binary,
decoding workers). Also the rule count, the store's size and the test scores of the evaluate
stage: BLEU and chrF on tokenized, lowercased text, and sacreBLEU (13a, cased) of the recased,
detokenized output against the raw references.

Writes OUT/train.json (numbers, machine, command) and OUT/train.md (the tables).
"""
from __future__ import annotations

import datetime
import json
import os
import resource
import shutil
import time
from pathlib import Path
from typing import Callable

from ..errors import UsageError
from .report import number_cell
from ..train.system import model_bytes

TRAIN_JSON, TRAIN_MD = "train.json", "train.md"
BUILD_MARKER = ".cky-bench-train"   # in a directory this benchmark built (and may empty again)


def process_cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its waited-for children so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def fresh_directory(path: Path) -> Path:
    """`path` empty and marked as this benchmark's: a directory it made before is emptied; any other
    non-empty directory is a UsageError (it is never removed)."""
    path = Path(path)
    if path.exists():
        if (path / BUILD_MARKER).exists():
            shutil.rmtree(path)
        elif not path.is_dir() or any(path.iterdir()):
            raise UsageError(f"{path} exists and was not made by `cky bench --train`: remove it or give "
                             "another --out")
    path.mkdir(parents=True, exist_ok=True)
    (path / BUILD_MARKER).write_text("a build of cky bench --train; emptied when the benchmark runs again\n",
                                     encoding="utf-8")
    return path


def run_build(build: Callable[[Path], object], directory: Path) -> dict:
    """Run `build(directory)` in a fresh `directory`; its wall and CPU seconds (children included)."""
    fresh_directory(directory)
    started, cpu = time.monotonic(), process_cpu_seconds()
    build(directory)
    return {"seconds": round(time.monotonic() - started, 2), "cpu_seconds": round(process_cpu_seconds() - cpu, 2)}


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def read_build(directory: Path) -> dict:
    """A build's stages (in pipeline order, with wall and CPU seconds), sizes and test scores, from its
    stages.json, system.json and (a recipe's) manifest.json."""
    from ..train.pipeline import STAGES

    directory = Path(directory)
    state = _read_json(directory / "stages.json")
    if state is None:
        raise UsageError(f"{directory}: no stages.json: not a build of `cky train` or `cky data` "
                         "(give a build's directory to --reuse, or run without --reuse)")
    records = state.get("stages", {})
    stages = [{"name": name, "seconds": records[name].get("seconds"), "cpu_seconds": records[name].get("cpu_seconds")}
              for name in STAGES if name in records]
    system = _read_json(directory / "system.json") or {}
    manifest = _read_json(directory / "manifest.json") or {}
    statistics = {name: records[name].get("statistics", {}) for name in records}
    evaluate = statistics.get("evaluate", {})
    sizes = system.get("sizes", {})
    store = directory / "store"
    return {
        "directory": str(directory.resolve()),
        "name": manifest.get("name") or directory.name,
        "languages": system.get("languages"),
        "stages": stages,
        "missing_stages": [name for name in STAGES if name not in records],
        "total": {"seconds": round(sum(s["seconds"] or 0 for s in stages), 2),
                  "cpu_seconds": round(sum(s["cpu_seconds"] or 0 for s in stages), 2)},
        "train_pairs": sizes.get("train_pairs") or statistics.get("split", {}).get("train_pairs"),
        "rules": statistics.get("extract", {}).get("distinct_rules"),
        "binary_rules": statistics.get("compile", {}).get("binary_rules"),
        "store_bytes": sizes.get("store_bytes") if sizes.get("store_bytes") is not None else
        model_bytes(store),
        "tuned": system.get("tuned"),
        "scores": {key: evaluate.get(key) for key in ("test_sentences", "bleu", "chrf", "sacrebleu", "sacrebleu_chrf")
                   if key in evaluate},
        "recipe_seconds": manifest.get("timings_seconds"),
        "lm_order": (system.get("lm") or {}).get("order"),
    }


def score_translations(hypotheses: list[str], build_dir: Path, sentences: int | None = None) -> dict:
    """BLEU and chrF of tokenized translations of a build's test set, as its evaluate stage scores its own:
    tokenized and lowercased, and sacreBLEU of the text the build's recaser and detokenizer make of them
    against the raw references (when the build records them)."""
    from ..evaluate import bleu_metric, corpus_bleu, corpus_chrf
    from ..text import TextPipeline
    from ..train.evaluate import readable_text
    from ..train.split import read_lines
    from ..tune.config import read_config

    references = read_lines(Path(build_dir) / "corpus" / "test.tok.tgt")[:sentences or None]
    hypotheses = hypotheses[:len(references)] + [""] * (len(references) - len(hypotheses))
    bleu, chrf = corpus_bleu(hypotheses, [references], tokenize="none"), corpus_chrf(hypotheses, [references])
    scores = {"test_sentences": len(references), "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2)}
    system = _read_json(Path(build_dir) / "system.json") or {}
    raw = (system.get("inputs", {}).get("test_target") or {}).get("path")
    config_path = Path(build_dir) / "config.toml"
    if raw and os.path.exists(raw) and config_path.exists():
        config = read_config(str(config_path))
        recaser = config.get("recase_model")
        pipeline = TextPipeline.from_config(config.get("languages"), str(Path(build_dir) / recaser) if recaser else None,
                                            str(config_path))
        if pipeline.raw:
            texts = [readable_text(pipeline, h, (), None) if h else "" for h in hypotheses]
            raw_references = read_lines(raw)[:len(references)]
            scores["sacrebleu"] = round(bleu_metric().corpus_score(texts, [raw_references]).score, 2)
            scores["sacrebleu_chrf"] = round(corpus_chrf(texts, [raw_references]).score, 2)
    return scores


# Our stages whose outputs the Moses pipeline reads: it has no tokenizer, parser or LM trainer of its
# own here, and without its own aligner it reads our alignment too.
SHARED_STAGES = ("clean", "split", "tokenize", "parse", "lm")


def moses_side(moses, build: dict, work: Path, cores: int, test_sentences: int | None, log=print) -> dict:
    """Moses' GHKM training (decoder.benchmark.moses_training) on the corpus of `build` (read_build's),
    its test-set decoding and scores, and the wall time it needs from plain text given our shared stages."""
    from . import moses_training

    directory = Path(build["directory"])
    languages = build.get("languages") or {}
    if not (directory / "lm.bin").exists():
        return {"found": True, "root": str(moses.root), "error": f"{directory / 'lm.bin'} is missing"}
    fresh_directory(work)
    result, corpus = moses_training.train(moses, directory, work, languages.get("source", "src"),
                                          languages.get("target", "en"), directory / "lm.bin",
                                          build.get("lm_order") or 5, cores, log)
    out = {"found": True, "root": result.root, "aligner": result.aligner, "steps": result.steps,
           "rules": result.rules, "glue_rules": result.glue_rules, "error": result.error}
    out["training"] = {"seconds": round(sum(s["seconds"] for s in result.steps), 2),
                       "cpu_seconds": round(sum(s["cpu_seconds"] for s in result.steps), 2)}
    shared = SHARED_STAGES + (() if moses.aligner else ("align",))
    ours = {s["name"]: s for s in build["stages"]}
    out["shared_stages"] = [name for name in shared if name in ours]
    shared_wall = sum(ours[name]["seconds"] or 0 for name in out["shared_stages"])
    shared_cpu = sum(ours[name]["cpu_seconds"] or 0 for name in out["shared_stages"])
    out["from_plain_text"] = {"seconds": round(shared_wall + out["training"]["seconds"], 2),
                              "cpu_seconds": round(shared_cpu + out["training"]["cpu_seconds"], 2)}
    if result.error is None:
        timing, translations = moses_training.decode_test(moses, corpus, cores, test_sentences, log)
        out["decode"] = timing
        if timing["exit_code"] == 0:
            out["scores"] = score_translations(translations, directory, timing["sentences"])
        else:
            out["error"] = f"moses exited with {timing['exit_code']} decoding the test set: see {work / 'logs' / 'decode.log'}"
    return out


def report(build: dict, moses: dict, machine: dict, command: str, fresh: dict | None) -> dict:
    """train.json's content."""
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": command, "machine": machine, "ours": {**build, "fresh_run": fresh}, "moses": moses}


def write_report(content: dict, out: Path) -> tuple[Path, Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / TRAIN_JSON, out / TRAIN_MD
    json_path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(markdown(content), encoding="utf-8")
    return json_path, md_path


def _number(value, digits: int = 1) -> str:
    return number_cell(value, digits)


def _table(header: list[str], rows: list[list]) -> list[str]:
    row = lambda cells: "| " + " | ".join(str(c) for c in cells) + " |"  # noqa: E731
    return [row(header), row(["---"] + ["---:"] * (len(header) - 1))] + [row(r) for r in rows]


def _scores_line(scores: dict | None) -> str:
    if not scores:
        return "no test scores"
    text = (f"BLEU {_number(scores.get('bleu'), 2)}, chrF {_number(scores.get('chrf'), 2)} (tokenized, lowercased)")
    if scores.get("sacrebleu") is not None:
        text += (f"; sacreBLEU {_number(scores['sacrebleu'], 2)}, chrF {_number(scores.get('sacrebleu_chrf'), 2)} "
                 "(recased, detokenized, against the raw references)")
    return text + f" on {scores.get('test_sentences', '?')} test sentences"


def markdown(content: dict) -> str:
    ours, moses, machine = content["ours"], content["moses"], content["machine"]
    lines = [f"# cky bench --train: {ours['name']}", "",
             f"{content['date']}, `{content['command']}`, commit {(machine.get('git_commit') or '?')[:10]}, "
             f"{machine.get('cpu_model')} ({machine.get('cpus')} CPUs, {machine.get('memory_gb')} GB).", "",
             f"Build: {ours['directory']}" + (" (run fresh by this benchmark)." if ours.get("fresh_run")
                                              else " (reused: its recorded stage times)."), ""]
    if ours.get("missing_stages"):
        lines += [f"Stages not recorded (not run, or the build is unfinished): {', '.join(ours['missing_stages'])}.", ""]
    lines += ["## Ours: plain text to a tuned system", "",
              "CPU seconds include the child processes each stage waited for (link-grammar workers, eflomal, "
              "lmplz, decoding workers).", ""]
    rows = [[s["name"], _number(s["seconds"]), _number(s["cpu_seconds"])] for s in ours["stages"]]
    rows.append(["**total**", f"**{_number(ours['total']['seconds'])}**", f"**{_number(ours['total']['cpu_seconds'])}**"])
    lines += _table(["stage", "wall s", "CPU s"], rows)
    fresh = ours.get("fresh_run")
    if fresh:
        lines += ["", f"The whole recipe (its corpus from the Bible modules, raw files, the stages, the manifest): "
                      f"{_number(fresh['seconds'])} wall s, {_number(fresh['cpu_seconds'])} CPU s."]
    lines += ["", f"{_number(ours.get('train_pairs'))} training pairs; {_number(ours.get('rules'))} rules "
                  f"({_number(ours.get('binary_rules'))} binary rules in the store); store "
                  f"{_number((ours.get('store_bytes') or 0) / 2**20)} MiB; "
                  + ("MERT-tuned weights" if ours.get("tuned") else "untuned (given or default) weights") + "; "
                  + _scores_line(ours.get("scores")) + ".", ""]
    lines += ["## Moses: train-model.perl --ghkm on the same corpus", ""]
    if not moses.get("found"):
        lines += [moses.get("message", "Moses not found"), ""]
        return "\n".join(lines)
    lines += [f"Moses at {moses['root']}; alignment: {moses.get('aligner')}; LM: ours (KenLM, the same file). "
              "One train-model.perl process per step; CPU seconds include its waited-for children.", ""]
    rows = [[f"{s['step']} {s['name']}", _number(s["seconds"]), _number(s.get("cpu_seconds"))] for s in moses["steps"]]
    if moses.get("training"):
        rows.append(["**training steps**", f"**{_number(moses['training']['seconds'])}**",
                     f"**{_number(moses['training']['cpu_seconds'])}**"])
    lines += _table(["step", "wall s", "CPU s"], rows)
    if moses.get("error"):
        lines += ["", f"Failed: {moses['error']}."]
    if moses.get("from_plain_text"):
        lines += ["", f"From plain text, with our {', '.join(moses['shared_stages'])} stages (its inputs): "
                      f"{_number(moses['from_plain_text']['seconds'])} wall s, "
                      f"{_number(moses['from_plain_text']['cpu_seconds'])} CPU s (no tuning: train-model.perl's "
                      f"default weights); ours to a tuned system: {_number(ours['total']['seconds'])} wall s."]
    lines += ["", f"{_number(moses.get('rules'))} rules, {_number(moses.get('glue_rules'))} glue rules."]
    decode = moses.get("decode")
    if decode:
        lines += [f"Test set: {decode['sentences']} sentences decoded in {_number(decode['seconds'])} wall s, "
                  f"{_number(decode['cpu_seconds'])} CPU s (rule table filtered to them in "
                  f"{_number(decode['filter_seconds'])} s); " + _scores_line(moses.get("scores")) + "."]
    return "\n".join(lines) + "\n"
