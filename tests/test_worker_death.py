"""A decoding process that dies (the OOM killer, a crash in compiled code, kill -9) costs its line, not the run:
the line is failed (its source passed through at the command line), every other line is translated, in order."""
import functools
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from decoder.batch import failed, iter_translate, progress_path, translate_to_files
from decoder.errors import WorkerError
from test_batch import ToyDecoder, kill_past_checkpoint, lines_job

pytestmark = pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(),
                                reason="the decoding processes are forked")

MARKER = "MUERE"  # a sentence with this word kills the process that decodes it
TEST_PROCESS = os.getpid()
SENTENCES = [f"palabra{i} y otra{i % 7} {MARKER if i in (4, 5, 17) else ''} fin{i % 3}".split() for i in range(24)]
SENTENCES = [" ".join(words) for words in SENTENCES]
KILLERS = {4, 5, 17}  # two in a row: in flight together with two workers


def _die_on_marker(sentence: str) -> None:
    if MARKER in sentence.split():
        assert os.getpid() != TEST_PROCESS, "this job must run in a worker process"
        os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does
        time.sleep(10)


def killing_job(decoder, sentence):
    _die_on_marker(sentence)
    return decoder.translate(sentence)


def reversed_words(sentence: str) -> str:
    return " ".join(sentence.split()[::-1])


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("chunksize", [1, 3])
def test_a_line_that_kills_its_process_is_failed_and_the_others_are_translated(workers, chunksize, caplog):
    results = list(iter_translate(ToyDecoder(), SENTENCES, workers=workers, job=killing_job, chunksize=chunksize,
                                  isolate=True))
    assert [index for index, _ in results] == list(range(len(SENTENCES)))
    for index, result in results:
        if index in KILLERS:
            assert failed(result), index
            assert "died on this line" in result.error and "killed by signal 9 (SIGKILL: out of memory?)" in result.error
            assert result.source == SENTENCES[index]
        else:
            assert not failed(result) and result.text == reversed_words(SENTENCES[index]), index
    for index in KILLERS:
        assert f"line {index + 1}: its decoding process died, killed by signal 9" in caplog.text


def die_once_job(flag_dir, decoder, sentence):
    """Kills its process on a marker line the first time only (memory that ran out because of the line
    decoded beside it, a kill -9 from outside): decoded again alone, the line is translated."""
    flag = os.path.join(flag_dir, sentence.replace(" ", "_"))
    if MARKER in sentence.split() and not os.path.exists(flag):
        open(flag, "w").close()
        _die_on_marker(sentence)
    return decoder.translate(sentence)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_line_that_kills_its_process_only_once_is_translated(workers, tmp_path, caplog):
    job = functools.partial(die_once_job, str(tmp_path))
    results = translate_batch_isolated(job, workers)
    assert [r.text for r in results] == [reversed_words(sentence) for sentence in SENTENCES]
    assert "line 5: decoded alone" in caplog.text


def translate_batch_isolated(job, workers, chunksize=1):
    return [result for _, result in iter_translate(ToyDecoder(), SENTENCES, workers=workers, job=job,
                                                   chunksize=chunksize, isolate=True)]


def exit_job(decoder, sentence):
    if MARKER in sentence.split():
        os._exit(3)  # a crash that exits (an abort in a library, sys.exit in a thread ...)
    return decoder.translate(sentence)


def test_the_error_gives_the_exit_code():
    results = translate_batch_isolated(exit_job, 2, chunksize=2)
    assert [index for index, r in enumerate(results) if failed(r)] == sorted(KILLERS)
    assert results[4].error.endswith("exited with code 3")


def dying_loader():
    time.sleep(0.3)  # after the pool has started
    os._exit(7)


def test_a_pool_that_cannot_start_is_still_a_worker_error():
    """The retries are bounded: workers that die before decoding anything are not started again and again."""
    started = time.monotonic()
    with pytest.raises(WorkerError, match="before decoding any line .exited with code 7"):
        list(iter_translate(dying_loader, SENTENCES, workers=2, job=killing_job))
    assert time.monotonic() - started < 10


# ---- files, resume, and the command line ------------------------------------------------------------

def test_files_get_one_line_per_input_line(tmp_path):
    outputs = {"out": str(tmp_path / "out.txt"), "stats": str(tmp_path / "stats.jsonl")}
    summary = translate_to_files(ToyDecoder(), SENTENCES, outputs, killing_lines_job, workers=2, progress=False,
                                 isolate=True)
    assert summary["failed"] == len(KILLERS)
    out = (tmp_path / "out.txt").read_text().split("\n")[:-1]
    assert out == ["" if i in KILLERS else reversed_words(s) for i, s in enumerate(SENTENCES)]
    assert len((tmp_path / "stats.jsonl").read_text().splitlines()) == len(SENTENCES)
    assert not os.path.exists(progress_path(outputs))


def killing_lines_job(decoder, sentence):
    _die_on_marker(sentence)
    return lines_job(decoder, sentence)


RUNNER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_worker_death import SENTENCES, killing_lines_job
    from test_batch import ToyDecoder
    from decoder.batch import translate_to_files
    summary = translate_to_files(ToyDecoder(delay={delay}), SENTENCES, {outputs!r}, killing_lines_job, workers={workers},
                                 resume={resume}, progress=False, isolate=True)
    sys.exit(1 if summary["failed"] else 0)
""")


@pytest.mark.parametrize("workers", [1, 2])
def test_resume_after_a_kill_gives_the_same_files(tmp_path, workers):
    expected = {"out": str(tmp_path / "expected.txt"), "stats": str(tmp_path / "expected.jsonl")}
    translate_to_files(ToyDecoder(), SENTENCES, expected, killing_lines_job, workers=workers, progress=False,
                       isolate=True)
    outputs = {"out": str(tmp_path / "out.txt"), "stats": str(tmp_path / "stats.jsonl")}

    def run(delay, resume):
        code = RUNNER.format(tests=os.path.dirname(__file__), delay=delay, outputs=outputs, resume=resume,
                             workers=workers)
        return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)

    process = run(0.1, False)
    sidecar = progress_path(outputs)
    done = kill_past_checkpoint(process, sidecar, 7)  # once it is past the first killer line
    assert 7 <= done < len(SENTENCES)

    assert run(0.0, True).wait(timeout=60) == 1  # the output has failed lines, before the checkpoint or after
    for name in outputs:
        assert pathlib.Path(outputs[name]).read_text() == pathlib.Path(expected[name]).read_text()
    assert not os.path.exists(sidecar)


# ---- `cky translate` (the tiny system of test_decoder; the decoding processes are forked from this one) -----

from cli_fixtures import run_cky  # noqa: E402
from test_decoder import decoder, model  # noqa: E402,F401  (fixtures)
from test_translate_cli_errors import LINES, press_ctrl_c_in_the_parent, translate_args  # noqa: E402

CLI_LINES = LINES[:5] + [f"el perro {MARKER}"] + LINES[5:]  # line 6 kills its process
CLI_KILLER = 5


@pytest.fixture
def killing_decoder(monkeypatch):
    """Decoder.translate kills its process on a line with MARKER; set_interrupt(line) makes that line
    press Ctrl-C in the command."""
    from decoder.decoder import Decoder

    original = Decoder.translate
    interrupt = {}

    def translate(self, sentence):
        _die_on_marker(sentence)
        if sentence == interrupt.get("line"):
            press_ctrl_c_in_the_parent()
        return original(self, sentence)

    monkeypatch.setattr(Decoder, "translate", translate)
    return interrupt.__setitem__


def expected_cli_output(decoder) -> bytes:
    return "".join((line if i == CLI_KILLER else decoder.translate(line).text) + "\n"
                   for i, line in enumerate(CLI_LINES)).encode("utf-8")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_cky_translate_passes_the_killer_line_through_and_translates_the_rest(model, decoder, killing_decoder,
                                                                              tmp_path, workers):
    expected = expected_cli_output(decoder)
    source, out, stats = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "stats.jsonl"
    source.write_text("\n".join(CLI_LINES) + "\n", encoding="utf-8")
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out), "--stats-out",
                                          str(stats), "--workers", workers))
    assert code == 1, err
    assert out.read_bytes() == expected
    records = [json.loads(line) for line in stats.read_text().splitlines()]
    assert len(records) == len(CLI_LINES)
    assert [r["line"] for r in records if r.get("error")] == [CLI_KILLER + 1]
    assert "killed by signal 9 (SIGKILL: out of memory?)" in records[CLI_KILLER]["error"]
    assert f"1 of {len(CLI_LINES)} lines failed" in err and "Traceback" not in err


@pytest.mark.parametrize("interrupted_at", [2, 9])  # before the killer line, after it
def test_cky_translate_resume_gives_the_files_of_an_uninterrupted_run(model, decoder, killing_decoder, tmp_path,
                                                                       interrupted_at):
    source, out, stats = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "stats.jsonl"
    source.write_text("\n".join(CLI_LINES) + "\n", encoding="utf-8")
    args = translate_args(model, "--input", str(source), "--output", str(out), "--stats-out", str(stats))
    assert run_cky(args)[0] == 1
    expected = out.read_bytes(), stats.read_bytes()
    assert expected[0] == expected_cli_output(decoder)

    killing_decoder("line", CLI_LINES[interrupted_at])
    code, _, err = run_cky(args)
    assert code == 130, err
    killing_decoder("line", None)
    code, _, err = run_cky(args + ["--resume"])
    assert code == 1, err  # the output has a failed line, whichever run wrote it
    before = " (1 of them before --resume;" if interrupted_at > CLI_KILLER else " (see"
    assert f"1 of {len(CLI_LINES)} lines failed{before}" in err
    assert out.read_bytes() == expected[0]

    def lines_and_errors(data: bytes):  # the records' timings differ from run to run
        return [(record["line"], record.get("error")) for record in map(json.loads, data.decode().splitlines())]
    assert lines_and_errors(stats.read_bytes()) == lines_and_errors(expected[1])
    assert not os.path.exists(f"{out}.progress.json")


def kill_the_idle_sibling_job(flag_dir, decoder, sentence):
    """On the last line (SIBLING), kill -9 the other worker once, while it waits for a task (holding the pool's
    task queue lock, which it then never releases)."""
    flag = os.path.join(flag_dir, "killed")
    if "SIBLING" in sentence.split() and not os.path.exists(flag):
        open(flag, "w").close()
        time.sleep(0.5)  # the other worker has finished its line and waits for the next
        parent = os.getppid()
        with open(f"/proc/{parent}/task/{parent}/children") as f:
            siblings = [int(pid) for pid in f.read().split() if int(pid) != os.getpid()]
        for pid in siblings:
            os.kill(pid, signal.SIGKILL)
    return decoder.translate(sentence)


IDLE_RUNNER = textwrap.dedent("""
    import functools, sys
    sys.path.insert(0, {tests!r})
    from test_worker_death import kill_the_idle_sibling_job
    from test_batch import ToyDecoder
    from decoder.batch import translate_batch
    job = functools.partial(kill_the_idle_sibling_job, {flag_dir!r})
    print("|".join(r.text for r in translate_batch(ToyDecoder(), {sentences!r}, workers=2, job=job)))
""")


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"), reason="needs Linux /proc")
def test_a_worker_killed_while_it_waits_for_a_task_does_not_hang_the_run(tmp_path):
    sentences = ["a b", "c d", "e SIBLING"]
    code = IDLE_RUNNER.format(tests=os.path.dirname(__file__), flag_dir=str(tmp_path), sentences=sentences)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "|".join(reversed_words(sentence) for sentence in sentences)
    assert os.path.exists(tmp_path / "killed")
