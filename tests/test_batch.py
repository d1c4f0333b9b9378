"""Batch decoding: same output as sequential decoding, failures isolated, resume after a kill."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

from decoder.batch import failed, progress_path, translate_batch, translate_to_files
from decoder.errors import ResumeError

SENTENCES = [f"palabra{i} y otra{i % 7} {'FALLA' if i == 13 else ''} fin{i % 3}".strip() for i in range(40)]


class ToyDecoder:
    """Stands in for Decoder: reverses the words; 'FALLA' raises."""

    def __init__(self, delay: float = 0.0):
        self.delay = delay

    def translate(self, sentence):
        if self.delay:
            time.sleep(self.delay)
        if "FALLA" in sentence:
            raise ValueError("cannot translate this")
        words = sentence.split()[::-1]
        return SimpleNamespace(text=" ".join(words), score=-float(len(words)), features={"n": len(words)})


def lines_job(decoder, sentence):
    translation = decoder.translate(sentence)
    return {"out": translation.text + "\n",
            "stats": json.dumps({"score": translation.score, "features": translation.features}) + "\n"}


def test_batch_equals_sequential_and_isolates_failures(caplog):
    decoder = ToyDecoder()
    sequential = translate_batch(decoder, SENTENCES, workers=1)
    parallel = translate_batch(decoder, SENTENCES, workers=2, chunksize=3)
    assert [r.text for r in parallel] == [r.text for r in sequential]
    assert failed(parallel[13]) and parallel[13].error and parallel[13].text == ""  # was: a Failure with line 14
    assert parallel[12].text == " ".join(SENTENCES[12].split()[::-1])
    assert "line 14: ValueError: cannot translate this" in caplog.text


def test_files_have_one_line_per_input_line(tmp_path):
    outputs = {"out": str(tmp_path / "out.txt"), "stats": str(tmp_path / "stats.jsonl")}
    summary = translate_to_files(ToyDecoder(), SENTENCES, outputs, lines_job, workers=2, progress=False)
    assert summary["failed"] == 1
    out = (tmp_path / "out.txt").read_text().split("\n")[:-1]
    assert len(out) == len(SENTENCES) and out[13] == ""
    assert not os.path.exists(progress_path(outputs))  # a finished run leaves no sidecar


RUNNER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_batch import SENTENCES, ToyDecoder, lines_job
    from decoder.batch import translate_to_files
    translate_to_files(ToyDecoder(delay={delay}), SENTENCES, {outputs!r}, lines_job, workers=2,
                       resume={resume}, progress=False)
""")


def run_translation(outputs, delay, resume):
    code = RUNNER.format(tests=os.path.dirname(__file__), delay=delay, outputs=outputs, resume=resume)
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def kill_past_checkpoint(process, sidecar: str, lines: int) -> int:
    """kill -9 `process`'s group once its progress file says `lines` lines are done (no chance to clean up:
    the worst interruption); returns the lines done at the last checkpoint."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if json.loads(pathlib.Path(sidecar).read_text())["lines_done"] >= lines:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return json.loads(pathlib.Path(sidecar).read_text())["lines_done"]


def test_resume_after_a_kill_gives_the_same_files(tmp_path):
    expected = {"out": str(tmp_path / "expected.txt"), "stats": str(tmp_path / "expected.jsonl")}
    translate_to_files(ToyDecoder(), SENTENCES, expected, lines_job, workers=1, progress=False)

    outputs = {"out": str(tmp_path / "out.txt"), "stats": str(tmp_path / "stats.jsonl")}
    process = run_translation(outputs, delay=0.05, resume=False)
    sidecar = progress_path(outputs)
    done = kill_past_checkpoint(process, sidecar, 5)  # once a checkpoint past the start exists
    assert 5 <= done < len(SENTENCES)

    process = run_translation(outputs, delay=0.0, resume=True)
    assert process.wait(timeout=60) == 0
    for name in outputs:
        assert pathlib.Path(outputs[name]).read_text() == pathlib.Path(expected[name]).read_text()
    assert not os.path.exists(sidecar)


def test_resume_refuses_a_checkpoint_of_another_input(tmp_path):
    """Resuming another input's run would discard its lines (a silent fresh start) or mix two inputs."""
    outputs = {"out": str(tmp_path / "out.txt")}
    job = lambda decoder, sentence: {"out": decoder.translate(sentence).text + "\n"}
    translate_to_files(ToyDecoder(), ["a b", "c d"], outputs, job, progress=False)
    with open(progress_path(outputs), "w") as f:  # a sidecar of some other run
        json.dump({"input_sha256": "0" * 64, "outputs": outputs, "lines_done": 1, "offsets": {"out": 4}}, f)
    with pytest.raises(ResumeError, match="another input"):
        translate_to_files(ToyDecoder(), ["e f", "g h"], outputs, job, resume=True, progress=False)
    assert pathlib.Path(outputs["out"]).read_text() == "b a\nd c\n"


def frozen_objects(decoder, sentence):
    import gc

    return gc.get_freeze_count()


def test_forked_workers_keep_the_parents_objects_out_of_the_collector():
    """The parent's objects are frozen while the workers fork (no copy-on-write by the workers'
    collections), and only then: the parent collects them again afterwards."""
    import gc

    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("no fork")
    parent_objects = len(gc.get_objects())
    counts = translate_batch(SimpleNamespace(), ["a", "b", "c"], workers=2, job=frozen_objects)
    assert all(count >= parent_objects // 2 for count in counts)
    assert gc.get_freeze_count() == 0
