"""`cky train`'s bookkeeping (decoder.train.stages): a rerun skips what is unchanged, a changed
input reruns exactly the stages that read what changed, --from redoes a stage and the rest, and a
stage that dies (in its work or while its outputs are moved into place) is redone cleanly, leaving
the same files as an uninterrupted run. Parse and align are stand-ins here (train_fakes.py), the
LM is given (--lm); every other stage is the real one."""
from __future__ import annotations

import hashlib
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from decoder.errors import Interrupted
from decoder.train import stages as stages_module
from decoder.train.pipeline import STAGES, TrainSettings, train
from train_corpus import write_corpus
from train_fakes import FAKES, write_lm

# files whose content records times, dates or the directory's own path
VOLATILE = {"stages.json", "system.json", "store/meta.json", ".lock"}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The corpus files and LM every test starts from, and the system an uninterrupted run makes of them."""
    directory = tmp_path_factory.mktemp("shared")
    source, target = write_corpus(directory, "corpus", 200, seed=1)
    files = dict(source=source, target=target, dev=write_corpus(directory, "dev", 50, seed=3),
                 test=write_corpus(directory, "test", 20, seed=2), lm=write_lm(target, directory / "lm.arpa"))
    reference = directory / "reference"
    train(settings_for(files, reference), implementations=FAKES)
    return files, contents(reference)


@pytest.fixture
def inputs(shared, tmp_path):
    """A copy of the shared corpus files (the tests change them), the shared LM."""
    files, _ = shared
    copy = {"lm": files["lm"]}
    for role in ("source", "target", "dev", "test"):
        paths = files[role] if isinstance(files[role], tuple) else (files[role],)
        copied = tuple(Path(shutil.copy(path, tmp_path / path.name)) for path in paths)
        copy[role] = copied if isinstance(files[role], tuple) else copied[0]
    return copy


@pytest.fixture
def reference(shared):
    return shared[1]


def settings_for(inputs, out: Path, **changes) -> TrainSettings:
    values = dict(source=inputs["source"], target=inputs["target"], source_lang="es", target_lang="en", out=out,
                  dev=inputs["dev"], test=inputs["test"], lm=inputs["lm"], tune=False, progress=False)
    values.update(changes)
    return TrainSettings(**values)


def contents(directory: Path) -> dict:
    """Relative path -> SHA-256 of every file but the caches and the volatile ones."""
    return {path.relative_to(directory).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.rglob("*")) if path.is_file()
            and path.relative_to(directory).parts[0] != "cache"
            and path.relative_to(directory).as_posix() not in VOLATILE}


EXPECTED_STAGES = [s for s in STAGES if s != "lm"]  # --lm: no LM stage


def test_rerun_skips_everything_and_changes_nothing(inputs, tmp_path):
    out = tmp_path / "sys"
    first = train(settings_for(inputs, out), implementations=FAKES)
    assert first["ran"] == EXPECTED_STAGES and first["skipped"] == []
    before, system_before = contents(out), (out / "system.json").read_bytes()
    second = train(settings_for(inputs, out), implementations=FAKES)
    assert second["ran"] == [] and second["skipped"] == EXPECTED_STAGES
    assert contents(out) == before and (out / "system.json").read_bytes() == system_before
    assert not (out / ".tmp").exists()


def test_changed_inputs_rerun_exactly_what_reads_them(inputs, tmp_path):
    out = tmp_path / "sys"
    train(settings_for(inputs, out), implementations=FAKES)
    # another test reference: only its tokenization and the evaluation read it
    test_target = inputs["test"][1]
    lines = test_target.read_text(encoding="utf-8").splitlines()
    test_target.write_text("\n".join(["The king loves the bread."] + lines[1:]) + "\n", encoding="utf-8")
    assert train(settings_for(inputs, out), implementations=FAKES)["ran"] == ["tokenize", "evaluate"]
    # another dev set: split and tokenize (untuned, the config does not read the dev set)
    dev_source = inputs["dev"][0]
    dev_source.write_text(dev_source.read_text(encoding="utf-8").replace("hombre", "rey"), encoding="utf-8")
    assert train(settings_for(inputs, out), implementations=FAKES)["ran"] == ["split", "tokenize"]
    # another line of the training target side: everything from cleaning on
    target = inputs["target"]
    target.write_text(target.read_text(encoding="utf-8").replace("The old", "The good", 1), encoding="utf-8")
    assert train(settings_for(inputs, out), implementations=FAKES)["ran"] == EXPECTED_STAGES


def test_a_new_tokenizer_version_tokenizes_again(inputs, tmp_path, monkeypatch):
    """A tokenizer whose tokens changed has a new version: the tokenize stage runs again, later stages
    only where their inputs changed (here none: the same tokens), and system.json records the version."""
    import dataclasses
    import json

    from decoder.data import tokenize as tokenize_module

    out = tmp_path / "sys"
    train(settings_for(inputs, out), implementations=FAKES)
    system = json.loads((out / "system.json").read_text(encoding="utf-8"))
    assert system["tokenizers"]["versions"] == {"es": 1, "en": 1}
    newer = dataclasses.replace(tokenize_module.TOKENIZERS["es"], version=2)
    monkeypatch.setitem(tokenize_module.TOKENIZERS, "es", newer)
    assert train(settings_for(inputs, out), implementations=FAKES)["ran"] == ["tokenize"]
    system = json.loads((out / "system.json").read_text(encoding="utf-8"))
    assert system["tokenizers"]["versions"] == {"es": 2, "en": 1}


def test_from_redoes_the_stage_and_everything_after(inputs, reference, tmp_path):
    out = tmp_path / "sys"
    train(settings_for(inputs, out), implementations=FAKES)
    assert contents(out) == reference
    before = contents(out)
    result = train(settings_for(inputs, out), from_stage="extract", implementations=FAKES)
    assert result["ran"] == ["extract", "compile", "tune", "evaluate"]
    assert result["skipped"] == ["clean", "split", "tokenize", "recase", "parse", "align"]
    assert contents(out) == before  # the same inputs give the same files


@pytest.mark.parametrize("stage", ["tokenize", "extract", "compile"])
def test_a_stage_that_dies_is_redone_cleanly(inputs, reference, tmp_path, stage):

    out = tmp_path / "sys"
    real = {s.name: s.run for s in __import__("decoder.train.pipeline", fromlist=["build_stages"]).build_stages(
        settings_for(inputs, out), FAKES)}

    def dies(ctx):
        real[stage](ctx)  # its outputs are written (in the work directory) ...
        raise KeyboardInterrupt  # ... and then it is killed

    with pytest.raises(Interrupted, match="run the same command again"):
        train(settings_for(inputs, out), implementations={**FAKES, stage: dies})
    result = train(settings_for(inputs, out), implementations=FAKES)
    assert result["ran"] == EXPECTED_STAGES[EXPECTED_STAGES.index(stage):]
    assert contents(out) == reference
    assert not (out / ".tmp").exists()


def test_a_kill_while_outputs_move_into_place_redoes_the_stage(inputs, reference, tmp_path, monkeypatch):
    out = tmp_path / "sys"
    train(settings_for(inputs, out), implementations=FAKES)
    real_move = stages_module._move_into_place

    def move_then_die(source, target, trash):
        real_move(source, target, trash)
        if target.name == "test.tok.tgt":
            raise KeyboardInterrupt

    # the tokenize stage of a run with another test reference: killed after its changed output moved
    test_target = inputs["test"][1]
    original = test_target.read_text(encoding="utf-8")
    test_target.write_text(original.replace("The", "A"), encoding="utf-8")
    monkeypatch.setattr(stages_module, "_move_into_place", move_then_die)
    with pytest.raises(Interrupted, match="run the same command again"):
        train(settings_for(inputs, out), implementations=FAKES)
    monkeypatch.setattr(stages_module, "_move_into_place", real_move)
    # back to the original reference: the half-moved tokenize stage is redone, the rest kept
    test_target.write_text(original, encoding="utf-8")
    result = train(settings_for(inputs, out), implementations=FAKES)
    assert "tokenize" in result["ran"] and "extract" in result["skipped"]
    assert contents(out) == reference


KILLER = """
import sys
sys.path[:0] = {paths!r}
from pathlib import Path
from decoder.train.pipeline import TrainSettings, train
from train_fakes import FAKES
train(TrainSettings(**{settings!r}, progress=False), implementations=FAKES)
"""


@pytest.mark.parametrize("stage, delay", [("tokenize", 0.0), ("extract", 0.2), ("compile", 0.1), ("evaluate", 0.0)])
def test_a_process_killed_at_any_moment_resumes_to_the_same_files(inputs, reference, tmp_path, stage, delay):
    """SIGKILL (nothing can be cleaned up) `delay` seconds into a stage, then the same run again."""
    out = tmp_path / "sys"
    values = {key: (str(value) if isinstance(value, Path) else tuple(map(str, value)) if isinstance(value, tuple)
                    else value) for key, value in vars(settings_for(inputs, out)).items()
              if key in ("source", "target", "source_lang", "target_lang", "out", "dev", "test", "lm", "tune")}
    script = KILLER.format(paths=[str(Path(__file__).parent), str(Path(__file__).parents[1])], settings=values)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    try:
        for line in process.stderr:
            if f"{stage}: running" in line:
                time.sleep(delay)
                break
        else:
            raise AssertionError(f"the run ended before stage {stage}")
        process.send_signal(signal.SIGKILL)
        process.wait()
    finally:
        process.stderr.close()
    result = train(settings_for(inputs, out), implementations=FAKES)
    # the stages before it were kept (on a fast machine the kill may land in a later stage: `delay` is a
    # moment inside the stage only where the stage takes longer than that)
    assert result["ran"] and STAGES.index(result["ran"][0]) >= STAGES.index(stage)
    assert contents(out) == reference
    assert not (out / ".tmp").exists()


def test_processes_and_a_dask_cluster_give_the_same_files(inputs, reference, tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "sys"
    train(settings_for(inputs, out, workers=2, cluster="local:2"), implementations=FAKES)
    assert contents(out) == reference


def test_one_run_at_a_time_in_a_directory(inputs, tmp_path):
    import fcntl

    from decoder.errors import OutputError

    out = tmp_path / "sys"
    out.mkdir()
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as a running `cky train` holds it
        with pytest.raises(OutputError, match="another cky train is running"):
            train(settings_for(inputs, out), implementations=FAKES)
    assert not (out / "stages.json").exists()


def test_mert_killed_between_iterations_resumes_where_it_stopped(inputs, tmp_path, monkeypatch):
    from decoder.tune import run as tune_run

    tuned = dict(tune=True, mert_iterations=2, mert_kbest=10)
    reference = tmp_path / "reference"
    train(settings_for(inputs, reference, **tuned), implementations=FAKES)
    real_save = tune_run.save_state

    def save_then_die(*arguments):
        real_save(*arguments)
        raise KeyboardInterrupt

    out = tmp_path / "sys"
    monkeypatch.setattr(tune_run, "save_state", save_then_die)
    with pytest.raises(Interrupted):  # (just after MERT saved its state after iteration 1)
        train(settings_for(inputs, out, **tuned), implementations=FAKES)
    monkeypatch.setattr(tune_run, "save_state", real_save)
    result = train(settings_for(inputs, out, **tuned), implementations=FAKES)
    assert result["ran"] == ["tune", "evaluate"]
    assert result["stages"]["tune"]["statistics"]["resumed_after_iteration"] == 1
    assert (out / "config.toml").read_text() == (reference / "config.toml").read_text()
    assert not (out / "cache" / "tune").exists()
