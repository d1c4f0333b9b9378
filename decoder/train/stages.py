"""The stage runner of `cky train`: checksums, skipping, atomic outputs, resumption.

A stage reads input files (the user's, or earlier stages' outputs) and writes
named outputs into the system directory DIR. Its fingerprint is a SHA-256 of its
settings and of the SHA-256 of every input; DIR/stages.json records, for each
finished stage, the fingerprint, the checksums of its outputs, its times and its
statistics. A stage is skipped when its fingerprint is the recorded one and its
outputs are still there with the recorded checksums; so a changed input file
reruns the stages that read it, and the later stages rerun only if the rerun
changed what they read.

A stage writes into DIR/.tmp/STAGE (emptied first); when its function returns,
each output is renamed into DIR (a directory replaces the old one by two
renames), and only then is the stage recorded. A kill at any moment loses at
most the stage in progress: its outputs in DIR either are the old ones (the
record still matches them) or do not match the record, and the next run redoes
it. File checksums are cached in stages.json by (size, modification time), so
unchanged large files are not read again.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import resource
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import Interrupted, OutputError
from ..search.prepared_grammar import DIRECTORY as CACHE_DIRECTORY

STATE_FILE = "stages.json"
LOCK_FILE = ".lock"
TMP_DIR = ".tmp"


def log(message: str) -> None:
    print(f"[cky train] {message}", file=sys.stderr, flush=True)


@dataclass
class Stage:
    """One stage: `run(context)` writes `outputs` (names in DIR) into context.output(name), returns statistics."""
    name: str
    run: Callable[["StageContext"], dict]
    inputs: dict[str, Path] = field(default_factory=dict)   # role -> file or directory, checksummed
    outputs: list[str] = field(default_factory=list)
    settings: dict = field(default_factory=dict)            # what the outputs depend on besides the inputs


@dataclass
class StageContext:
    """What a stage function sees: its inputs by role, where to write its outputs, its settings."""
    stage: Stage
    out_dir: Path
    work_dir: Path
    fingerprint: str = ""  # of this run of the stage: its settings and its inputs' checksums

    def input(self, role: str) -> Path:
        return self.stage.inputs[role]

    def output(self, name: str) -> Path:
        if name not in self.stage.outputs:
            raise KeyError(f"stage {self.stage.name} has no output {name!r}")
        path = self.work_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def settings(self) -> dict:
        return self.stage.settings


class Checksums:
    """SHA-256 of files and directories, cached by (size, mtime_ns)."""

    def __init__(self, cache: dict | None = None):
        self.cache: dict = dict(cache or {})

    def file(self, path: Path) -> str:
        status = path.stat()
        key = os.path.abspath(path)
        cached = self.cache.get(key)
        if cached and cached[0] == status.st_size and cached[1] == status.st_mtime_ns:
            return cached[2]
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        value = digest.hexdigest()
        self.cache[key] = [status.st_size, status.st_mtime_ns, value]
        return value

    def of(self, path: Path) -> str | None:
        """The checksum of a file, or of a directory (its files' names and checksums, leaving out the
        caches a decoder writes inside a store: decoder.search.prepared_grammar), None if missing."""
        path = Path(path)
        if path.is_dir():
            digest = hashlib.sha256()
            for child in sorted(p for p in path.rglob("*")
                                if p.is_file() and CACHE_DIRECTORY not in p.relative_to(path).parts):
                digest.update(f"{child.relative_to(path).as_posix()}\0{self.file(child)}\n".encode())
            return "dir:" + digest.hexdigest()
        if path.is_file():
            return self.file(path)
        return None


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _write_json(path: Path, content) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(content, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")
    temporary.replace(path)


def _move_into_place(source: Path, target: Path, trash_dir: Path) -> None:
    """Rename `source` to `target`; a directory replaces the old one (moved aside, then removed)."""
    if source.is_dir() and target.exists():
        trash_dir.mkdir(parents=True, exist_ok=True)
        old = trash_dir / f"old-{target.name}"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(target, old)
        os.rename(source, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        if target.is_dir():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)


class Runner:
    """Runs stages in order in `out_dir`, skipping the unchanged ones (see the module docstring)."""

    def __init__(self, out_dir: Path):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.state_path = self.out_dir / STATE_FILE
        try:
            self.state = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.state = {}
        self.state.setdefault("stages", {})
        self.checksums = Checksums(self.state.get("checksums"))
        self.ran: list[str] = []
        self.skipped: list[str] = []

    def save(self) -> None:
        self.state["checksums"] = {key: value for key, value in self.checksums.cache.items()
                                   if os.path.exists(key)}
        _write_json(self.state_path, self.state)

    def fingerprint(self, stage: Stage) -> tuple[str, dict]:
        inputs = {}
        for role, path in sorted(stage.inputs.items()):
            checksum = self.checksums.of(path)
            if checksum is None:
                raise FileNotFoundError(2, "No such file or directory", str(path))
            inputs[role] = checksum
        text = json.dumps({"settings": stage.settings, "inputs": inputs}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest(), inputs

    def is_current(self, stage: Stage, fingerprint: str) -> bool:
        record = self.state["stages"].get(stage.name)
        if not record or record.get("fingerprint") != fingerprint:
            return False
        return all(self.checksums.of(self.out_dir / name) == checksum
                   for name, checksum in record.get("outputs", {}).items()) and \
            set(record.get("outputs", {})) == set(stage.outputs)

    def run(self, stages: list[Stage], from_stage: str | None = None) -> dict:
        """Run or skip each stage; one run at a time in a directory (a second one is an OutputError)."""
        with open(self.out_dir / LOCK_FILE, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OutputError(self.out_dir, "another cky train is running in this directory") from None
            return self._run(stages, from_stage)

    def _run(self, stages: list[Stage], from_stage: str | None) -> dict:
        names = [stage.name for stage in stages]
        if from_stage is not None and from_stage not in names:
            raise ValueError(f"no stage {from_stage!r} in this run (stages: {', '.join(names)})")
        forced = False
        tmp_root = self.out_dir / TMP_DIR
        for stage in stages:
            forced = forced or stage.name == from_stage
            fingerprint, inputs = self.fingerprint(stage)
            if not forced and self.is_current(stage, fingerprint):
                self.skipped.append(stage.name)
                log(f"{stage.name}: unchanged, skipped")
                continue
            work_dir = tmp_root / stage.name
            shutil.rmtree(work_dir, ignore_errors=True)
            work_dir.mkdir(parents=True)
            log(f"{stage.name}: running")
            self.state["stages"].pop(stage.name, None)  # outputs are about to change
            self.save()
            started, cpu_started = time.monotonic(), _cpu_seconds()
            try:
                statistics = stage.run(StageContext(stage, self.out_dir, work_dir, fingerprint)) or {}
                for name in stage.outputs:
                    if not (work_dir / name).exists():
                        raise RuntimeError(f"stage {stage.name} did not write its output {name}")
                for name in stage.outputs:
                    _move_into_place(work_dir / name, self.out_dir / name, tmp_root)
            except KeyboardInterrupt:
                raise Interrupted(f"interrupted in stage {stage.name}; the stages before it are kept in "
                                  f"{self.out_dir}: run the same command again to go on from there") from None
            record = {"fingerprint": fingerprint, "inputs": inputs,
                      "outputs": {name: self.checksums.of(self.out_dir / name) for name in stage.outputs},
                      "seconds": round(time.monotonic() - started, 2),
                      "cpu_seconds": round(_cpu_seconds() - cpu_started, 2),
                      "statistics": statistics}
            self.state["stages"][stage.name] = record
            self.save()
            shutil.rmtree(work_dir, ignore_errors=True)
            self.ran.append(stage.name)
            log(f"{stage.name}: done in {record['seconds']} s")
        shutil.rmtree(tmp_root, ignore_errors=True)
        return self.state
