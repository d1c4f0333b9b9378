"""The output files of `cky translate`: one writer per output, no output that is an input or another
output, and --resume that never throws finished work away."""
import os
import pathlib
import subprocess
import sys
import time

import pytest

from cli_fixtures import run_cky
from test_decoder import decoder, model  # noqa: F401  (fixtures: the tiny system)
from test_translate_cli_errors import LINES, expected_output, interrupted_run, translate_args  # noqa: F401


def write_input(tmp_path, name="in.txt", lines=LINES):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ---- one writer per output ------------------------------------------------------------------------

HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(60)
"""


@pytest.fixture
def writer_of(tmp_path):
    """Start another process holding the writer's lock on a file (as a running `cky translate` does)."""
    processes = []

    def start(path):
        process = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE)
        assert process.stdout.readline() == b"locked\n"
        processes.append(process)
        return process

    yield start
    for process in processes:
        process.kill()
        process.wait()
        process.stdout.close()


@pytest.mark.parametrize("locked", ["output", "stats"])
def test_a_second_writer_of_an_output_is_refused_naming_it(model, decoder, tmp_path, writer_of, locked):
    source = write_input(tmp_path)
    out, stats = tmp_path / "same.out", tmp_path / "stats.jsonl"
    out.write_bytes(b"the other run's line\n")
    holder = writer_of(out if locked == "output" else stats)
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out),
                                          "--stats-out", str(stats)))
    target = out if locked == "output" else stats
    assert code == 1 and err.startswith(f"cky translate: {target}: another process is writing it"), err
    assert out.read_bytes() == b"the other run's line\n"  # not truncated, not interleaved
    holder.kill()
    holder.wait()  # the lock ends with its process
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out)))
    assert code == 0 and out.read_bytes() == expected_output(decoder, LINES)


def test_two_concurrent_runs_on_one_output_do_not_interleave(model, decoder, tmp_path):
    """The defect as found: two commands started 1.5 s apart on one output, both 'succeeded'."""
    a = write_input(tmp_path, "a.txt", LINES[:4] * 20)
    b = write_input(tmp_path, "b.txt", LINES[5:] * 20)
    out = tmp_path / "same.out"
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).parents[1]), CKY_TEST_SLEEP="0.02")
    runner = str(pathlib.Path(__file__).with_name("translate_runner.py"))
    first = subprocess.Popen([sys.executable, runner, *translate_args(model, "--input", str(a), "--output", str(out))],
                             env=env, stderr=subprocess.PIPE)
    first.stderr.readline()  # its model is loaded: it is writing
    time.sleep(0.3)
    second = subprocess.run([sys.executable, runner, *translate_args(model, "--input", str(b), "--output", str(out))],
                            env=env, capture_output=True, text=True)
    first.stderr.close()
    assert first.wait(timeout=120) in (0, 1)
    assert second.returncode == 1 and f"{out}: another process is writing it" in second.stderr, second.stderr
    assert out.read_bytes() == expected_output(decoder, LINES[:4] * 20)


# ---- an output that is an input, or two outputs that are one file ---------------------------------

@pytest.mark.parametrize("link", ["symlink", "hardlink", "other spelling"])
def test_an_output_that_is_the_input_through_a_link_is_refused(model, tmp_path, link):
    source = write_input(tmp_path)
    before = source.read_bytes()
    out = tmp_path / "out.txt"
    if link == "symlink":
        out.symlink_to(source)
    elif link == "hardlink":
        os.link(source, out)
    else:
        out = tmp_path / "sub" / ".." / "in.txt"
        (tmp_path / "sub").mkdir()
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out)))
    assert code == 2 and err.count("\n") == 1 and f"{out} is both the input and the output file" in err, err
    assert source.read_bytes() == before


@pytest.mark.parametrize("flag", ["--stats-out", "--trees-out", "--kbest-out"])
def test_a_side_file_that_is_the_output_is_refused(model, tmp_path, flag):
    source = write_input(tmp_path)
    out = tmp_path / "out.txt"
    extra = ["--kbest", "2"] if flag == "--kbest-out" else []
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out), flag,
                                          str(tmp_path / "." / "out.txt"), *extra))
    assert code == 2 and "is both the output file and the" in err, err
    assert not out.exists()


def test_a_side_file_that_is_the_config_or_the_progress_file_is_refused(model, tmp_path):
    source = write_input(tmp_path)
    out = tmp_path / "out.txt"
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out),
                                          "--stats-out", str(model / "config.toml")))
    assert code == 2 and "is both the config and the stats file" in err, err
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out),
                                          "--stats-out", f"{out}.progress.json"))
    assert code == 2 and "progress file" in err, err


def test_outputs_that_are_devices_may_be_shared(model, tmp_path):
    source = write_input(tmp_path, lines=LINES[:2])
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", os.devnull,
                                          "--stats-out", os.devnull))
    assert code == 0, err


# ---- --resume never throws work away --------------------------------------------------------------

def test_resuming_a_finished_run_redoes_nothing(model, decoder, tmp_path, monkeypatch, caplog):
    source, out, stats = write_input(tmp_path), tmp_path / "out.txt", tmp_path / "stats.jsonl"
    args = translate_args(model, "--input", str(source), "--output", str(out), "--stats-out", str(stats))
    assert run_cky(args)[0] == 0
    before = out.read_bytes(), stats.read_bytes()
    assert before[0] == expected_output(decoder, LINES)
    from decoder.decoder import Decoder

    def no_decoding(self, sentence):
        raise AssertionError("a finished output was decoded again")

    monkeypatch.setattr(Decoder, "translate", no_decoding)
    caplog.set_level("INFO")
    code, _, err = run_cky(args + ["--resume"])
    assert code == 0, err
    assert [record.getMessage() for record in caplog.records if record.name == "cky.batch"] == [
        f"{out} is complete already ({len(LINES)} lines, one per input line): nothing to do"]
    assert (out.read_bytes(), stats.read_bytes()) == before


def test_resuming_without_a_progress_file_keeps_a_partial_output(model, tmp_path):
    source, out = write_input(tmp_path), tmp_path / "out.txt"
    out.write_bytes(b"first line of some earlier work\n")
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out), "--resume"))
    assert code == 1 and "run without --resume" in err and str(out) in err, err
    assert out.read_bytes() == b"first line of some earlier work\n"


def test_resuming_with_nothing_written_starts_at_the_first_line(model, decoder, tmp_path):
    source, out = write_input(tmp_path, lines=LINES[:3]), tmp_path / "out.txt"
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out), "--resume"))
    assert code == 0, err
    assert out.read_bytes() == expected_output(decoder, LINES[:3])


@pytest.mark.parametrize("change", ["input", "added side file"])
def test_resuming_with_another_input_or_side_file_is_refused(model, tmp_path, interrupted_run, change):
    source, out = interrupted_run
    before = out.read_bytes()
    progress = pathlib.Path(f"{out}.progress.json").read_bytes()
    if change == "input":
        other = write_input(tmp_path, "other.txt", LINES[::-1])
        args = translate_args(model, "--input", str(other), "--output", str(out), "--resume")
        expected = "another input"
    else:
        args = translate_args(model, "--input", str(source), "--output", str(out), "--resume",
                              "--stats-out", str(tmp_path / "stats.jsonl"))
        expected = "stats added"
    code, _, err = run_cky(args)
    assert code == 1 and expected in err and f"{out}.progress.json" in err and err.count("\n") == 1, err
    assert out.read_bytes() == before
    assert pathlib.Path(f"{out}.progress.json").read_bytes() == progress


def test_resuming_without_a_side_file_of_the_interrupted_run_is_refused(model, tmp_path, monkeypatch):
    from decoder.decoder import Decoder
    from test_translate_cli_errors import interrupt_at

    source, out, stats = write_input(tmp_path), tmp_path / "out.txt", tmp_path / "stats.jsonl"
    original = interrupt_at(monkeypatch, LINES[5])
    args = translate_args(model, "--input", str(source), "--output", str(out))
    assert run_cky(args + ["--stats-out", str(stats)])[0] == 130
    monkeypatch.setattr(Decoder, "translate", original)
    before = out.read_bytes(), stats.read_bytes()
    code, _, err = run_cky(args + ["--resume"])
    assert code == 1 and "stats removed" in err and err.count("\n") == 1, err
    assert (out.read_bytes(), stats.read_bytes()) == before
