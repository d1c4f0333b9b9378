"""`cky translate` (and the other commands) on bad input, bad files and interruptions: one clear line naming
the file, the documented exit code, no traceback, no lost or shifted lines."""
import json
import os
import pathlib
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest

from cli_fixtures import run_cky, start_cky
from conftest import write_toy_arpa
from test_decoder import decoder, model  # noqa: F401  (fixtures: the tiny system)


def run_translate(*args):
    return subprocess.run([sys.executable, "-m", "decoder.cli", "translate", *args], input="", capture_output=True,
                          text=True)


def test_missing_store_names_the_path(tmp_path):
    result = run_translate("--store", str(tmp_path / "no-store"), "--lm", str(tmp_path / "lm.arpa"))
    assert result.returncode == 1
    assert result.stderr.startswith(f"cky translate: {tmp_path / 'no-store'}: ")
    assert "Traceback" not in result.stderr


def test_broken_config_names_the_file(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("store = 'x'\n[weights\n", encoding="utf-8")
    result = run_translate("--config", str(config))
    assert result.returncode == 1
    assert result.stderr.startswith(f"cky translate: {config}: ")
    assert "Traceback" not in result.stderr


# ---- translate and batch at the command line: interruptions, line records, bad lines, signals -------

LINES = ["la casa verde es pequeña", "el perro", "un perro es verde", "la casa", "", "es verde", "el ☃ casa",
         "la casa es pequeña", "un perro", "el perro es pequeño"]


def translate_args(model, *more):
    return ["translate", "--config", str(model / "config.toml"), "--quiet", *more]


TEST_PROCESS = os.getpid()


def press_ctrl_c_in_the_parent() -> None:
    """Called in the decoding child: Ctrl-C the command, once it has written the lines before."""
    if os.getpid() == TEST_PROCESS:  # decoding in the command's own process
        raise KeyboardInterrupt
    time.sleep(0.5)
    os.kill(os.getppid(), signal.SIGINT)
    time.sleep(10)


def interrupt_at(monkeypatch, sentence_to_stop):
    """Decoder.translate presses Ctrl-C in the command when it meets `sentence_to_stop`; returns the
    original translate (to put back with monkeypatch.setattr)."""
    from decoder.decoder import Decoder

    original = Decoder.translate

    def translate(self, sentence):
        if sentence == sentence_to_stop:
            press_ctrl_c_in_the_parent()
        return original(self, sentence)

    monkeypatch.setattr(Decoder, "translate", translate)
    return original


def expected_output(decoder, lines) -> bytes:
    return "".join(decoder.translate(line).text + "\n" for line in lines).encode("utf-8")


def test_a_fresh_run_replaces_a_stale_progress_file_so_resume_never_pads(model, decoder, tmp_path, monkeypatch):
    """--resume interrupted late, a run without --resume interrupted sooner, then --resume:
    the output equals an uninterrupted run (it used to be padded with NUL bytes)."""
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    from decoder.decoder import Decoder

    original = interrupt_at(monkeypatch, LINES[8])
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out), "--resume"))
    assert code == 130 and "--resume" in err
    monkeypatch.setattr(Decoder, "translate", original)
    interrupt_at(monkeypatch, LINES[2])
    code, _, _ = run_cky(translate_args(model, "--input", str(source), "--output", str(out)))
    assert code == 130
    monkeypatch.setattr(Decoder, "translate", original)
    code, _, _ = run_cky(translate_args(model, "--input", str(source), "--output", str(out), "--resume"))
    assert code == 0
    assert out.read_bytes() == expected_output(decoder, LINES)
    assert not os.path.exists(f"{out}.progress.json")


@pytest.fixture
def interrupted_run(model, tmp_path, monkeypatch):
    """An --output run interrupted at its 6th line: (input path, output path)."""
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    from decoder.decoder import Decoder

    original = interrupt_at(monkeypatch, LINES[5])
    assert run_cky(translate_args(model, "--input", str(source), "--output", str(out)))[0] == 130
    monkeypatch.setattr(Decoder, "translate", original)
    assert json.loads(pathlib.Path(f"{out}.progress.json").read_text())["lines_done"] >= 1
    return source, out


@pytest.mark.parametrize("flags, change", [(["--pop-limit", "3"], "pop_limit: 50 -> 3"),
                                           (["--detokenize", "en"], "detokenize: None -> 'en'"),
                                           (["--tokenize", "es"], "tokenize: None -> 'es'")])
def test_resume_with_other_settings_is_refused(model, interrupted_run, flags, change):
    source, out = interrupted_run
    before = out.read_bytes()
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out), "--resume", *flags))
    assert code == 1 and change in err and f"{out}.progress.json" in err, err
    assert out.read_bytes() == before


@pytest.mark.parametrize("damage", ["truncate", "delete", "edit"])
def test_resume_after_the_output_changed_is_refused(model, interrupted_run, damage):
    source, out = interrupted_run
    if damage == "truncate":
        out.write_bytes(out.read_bytes()[:3])
    elif damage == "delete":
        out.unlink()
    else:
        out.write_bytes(b"X" + out.read_bytes()[1:])
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out), "--resume"))
    assert code == 1 and err.count("\n") == 1 and str(out) in err
    assert {"truncate": "shorter", "delete": "missing", "edit": "changed"}[damage] in err


def test_a_lone_carriage_return_stays_inside_its_line(model, decoder, tmp_path):
    """Lines are \\n-terminated records, from --input as from stdin."""
    data = "la casa\rverde\nes\u2028verde\x00\nel perro\n".encode("utf-8")
    source = tmp_path / "in.txt"
    source.write_bytes(data)
    # (the NUL makes its line invalid input: a failed line, its words passed through)
    expected = (expected_output(decoder, ["la casa\rverde"]) + "es verde\x00\n".encode("utf-8")
                + expected_output(decoder, ["el perro"]))
    assert run_cky(translate_args(model, "--input", str(source)))[1] == expected
    assert run_cky(translate_args(model), stdin=data)[1] == expected


def test_invalid_utf8_gives_an_empty_line_in_every_file(model, decoder, tmp_path, caplog):
    """The bad line is reported with its number, gets empty output and one record in every
    side file, the others are translated, exit 1 saying how many failed."""
    data = b"la casa\nel \xff perro\nes verde\n"
    kbest, stats, trees = tmp_path / "nbest.txt", tmp_path / "stats.jsonl", tmp_path / "trees.txt"
    side = ["--kbest", "2", "--kbest-out", str(kbest), "--stats-out", str(stats), "--trees-out", str(trees)]
    expected = expected_output(decoder, ["la casa", "", "es verde"])
    for extra in ([], ["--output", str(tmp_path / "out.txt")]):
        caplog.clear()
        code, out, err = run_cky(translate_args(model, *side, *extra), stdin=data)
        if extra:
            out = (tmp_path / "out.txt").read_bytes()
        assert code == 1 and "1 of 3 lines failed" in err
        assert out == expected
        assert "<stdin>:2: invalid UTF-8" in caplog.text
        records = [json.loads(line) for line in stats.read_text().splitlines()]
        assert [r["line"] for r in records] == [1, 2, 3] and "invalid UTF-8" in records[1]["error"]
        assert trees.read_text().count("\n") == 3
        assert {line.split(" ||| ")[0] for line in kbest.read_text().splitlines()} == {"0", "1", "2"}


def test_bom_dropped_and_a_literal_escape_survives(model, decoder):
    """A UTF-8 BOM does not stick to the first word; `&#124;` comes out as `&#124;`."""
    code, out, _ = run_cky(translate_args(model), stdin="\ufeffla casa\nun &#124; | &amp; perro\n".encode())
    assert code == 0
    first, second = out.decode().splitlines()
    assert first == decoder.translate("la casa").text == "the house"
    assert second.split() == ["a", "&#124;", "|", "&amp;", "dog"]


def test_errors_found_before_the_model_loads(tmp_path):
    """A missing --input or an output in a missing directory is reported at once
    (the store here does not exist: loading it first would report the store instead)."""
    config = tmp_path / "config.toml"
    config.write_text('store = "no-store"\nlm = "no-lm.arpa"\n')
    base = ["translate", "--config", str(config)]
    code, _, err = run_cky(base + ["--input", str(tmp_path / "missing.txt")])
    assert (code, err) == (1, f"cky translate: {tmp_path / 'missing.txt'}: No such file or directory\n")
    code, _, err = run_cky(base + ["--output", str(tmp_path / "no" / "out.txt")])
    assert code == 1 and err.startswith(f"cky translate: {tmp_path / 'no' / 'out.txt'}: ") and "no-store" not in err


@pytest.mark.parametrize("flag", ["--pop-limit", "--workers", "--kbest"])
def test_negative_counts_are_usage_errors(flag):
    with pytest.raises(SystemExit) as exit_:
        run_cky(["translate", "--store", "s", "--lm", "l", flag, "-1"])
    assert exit_.value.code == 2


def test_evaluate_on_empty_files_is_one_line(tmp_path):
    (tmp_path / "h").write_text("")
    (tmp_path / "r").write_text("")
    code, _, err = run_cky(["evaluate", "--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r")])
    assert code == 1 and err.count("\n") == 1 and err.startswith(f"cky evaluate: {tmp_path / 'h'}: ")


def test_ctrl_c_stops_at_once_with_one_line_and_the_progress_saved(model, tmp_path):
    """The search may run for seconds in C without looking at signals; Ctrl-C still ends the
    command at once (exit 130, one line, no traceback) and --resume can continue."""
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("la casa\nlento casa\nel perro\n", encoding="utf-8")
    process = start_cky(translate_args(model, "--input", str(source), "--output", str(out)),
                        env={"CKY_TEST_DEAF_WORD": "lento", "CKY_TEST_DEAF_SECONDS": "6"},
                        stderr=subprocess.PIPE, text=True)
    assert "loaded" in process.stderr.readline()
    time.sleep(1.0)  # line 1 is written, the child is deaf in line 2 for seconds
    interrupted = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)  # as a terminal does: the whole process group
    code = process.wait(timeout=30)
    seconds = time.monotonic() - interrupted
    with process.stderr:
        err = process.stderr.read()
    assert code == 130 and seconds < 3.0, (seconds, err)
    assert "Traceback" not in err and err.splitlines()[-1].startswith("cky translate: interrupted")
    assert json.loads(pathlib.Path(f"{out}.progress.json").read_text())["lines_done"] == 1


def test_killing_the_parent_of_two_workers_leaves_no_traceback_and_no_worker(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("lento\nlento casa\nlento perro\nla casa\n", encoding="utf-8")
    process = start_cky(translate_args(model, "--input", str(source), "--workers", "2"),
                        env={"CKY_TEST_DEAF_WORD": "lento", "CKY_TEST_DEAF_SECONDS": "2"},
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)  # loaded, workers busy
    process.kill()
    process.wait()
    started = time.monotonic()
    with process.stdout, process.stderr:
        err = process.stderr.read().decode()  # end of file once every worker is gone too
    assert time.monotonic() - started < 10
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_a_closed_output_pipe_ends_quietly(model, tmp_path):
    """`cky translate | head -1`: the closed pipe ends the command quietly."""
    source = tmp_path / "in.txt"
    source.write_text("la casa verde es pequeña\n" * 3000, encoding="utf-8")
    process = start_cky(translate_args(model, "--input", str(source)), stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
    assert process.stdout.readline() == b"the green house is small\n"
    process.stdout.close()
    code = process.wait(timeout=60)
    with process.stderr:
        err = process.stderr.read().decode()
    assert code == 141 and "Traceback" not in err and "Error" not in err, err


def test_store_and_lm_flags_replace_the_configs(model, decoder, tmp_path):
    """--lm / --store with --config are used (they were silently ignored): a missing one is reported,
    and another LM with other scores changes the output's score."""
    code, _, err = run_cky(translate_args(model, "--lm", str(tmp_path / "missing.arpa")), stdin=b"la casa\n")
    assert code == 1 and err.startswith(f"cky translate: {tmp_path / 'missing.arpa'}"), err
    code, _, err = run_cky(translate_args(model, "--store", str(tmp_path / "no-store")), stdin=b"la casa\n")
    assert code == 1 and f"{tmp_path / 'no-store'}" in err.splitlines()[-1], err
    other = write_toy_arpa("bigram", tmp_path, "other.arpa")  # other probabilities: another best score
    stats = tmp_path / "stats.jsonl"
    code, _, err = run_cky(translate_args(model, "--lm", str(other), "--stats-out", str(stats)), stdin=b"la casa\n")
    assert code == 0, err
    score = json.loads(stats.read_text())["score"]
    assert score != pytest.approx(decoder.translate("la casa").score, abs=1e-6)


def test_an_output_that_is_a_pipe_is_written_as_a_stream(model, decoder, tmp_path):
    """`--output /dev/stdout` or a FIFO: no seek, no fsync, so no checkpoints; every line arrives."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    code, _, err = run_cky(translate_args(model, "--output", str(fifo)), stdin="\n".join(LINES[:4]).encode())
    reader.join(timeout=60)
    assert code == 0 and received == [expected_output(decoder, LINES[:4])]
    assert not os.path.exists(f"{fifo}.progress.json")
    code, _, err = run_cky(translate_args(model, "--output", str(fifo), "--resume"))  # nothing to resume
    assert code == 2 and f"--resume needs regular output files: {fifo} is not one" in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
def test_a_full_device_is_named(model):
    code, _, err = run_cky(translate_args(model, "--output", "/dev/full"), stdin=b"la casa\n")
    assert (code, err.splitlines()[-1]) == (1, "cky translate: /dev/full: No space left on device")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
def test_a_full_stdout_is_one_line_without_errno(tmp_path):
    (tmp_path / "h").write_text("a b c d\n")
    with open("/dev/full", "wb") as full:
        result = subprocess.run([sys.executable, "-m", "decoder.cli", "evaluate", "--hyp", str(tmp_path / "h"),
                                 "--ref", str(tmp_path / "h")], stdout=full, stderr=subprocess.PIPE, text=True)
    assert (result.returncode, result.stderr) == (1, "cky evaluate: No space left on device\n")


def test_a_full_disk_names_the_output_and_keeps_the_progress(model, tmp_path):
    """A write that fails without a file name (here: the file-size limit, as a full disk would) is
    reported naming the output, with no traceback; the lines written before stay resumable."""
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("la casa verde es pequeña\n" * 400, encoding="utf-8")

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    process = start_cky(translate_args(model, "--input", str(source), "--output", str(out)),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit_file_size)
    _, err = process.communicate(timeout=120)
    err = err.decode()
    assert process.returncode == 1 and "Traceback" not in err, err
    assert err.splitlines()[-1] == f"cky translate: {out}: cannot write: File too large"
    assert 0 < out.stat().st_size <= 4096 and os.path.exists(f"{out}.progress.json")
    code, _, err = run_cky(translate_args(model, "--input", str(source), "--output", str(out), "--resume"))
    assert code == 0, err
    assert out.read_text(encoding="utf-8") == "the green house is small\n" * 400


def test_batch_does_not_import_the_decoder():
    """decoder.batch does not import decoder.decoder, at run time either (tests/test_import_graph.py checks
    every import of the package for cycles)."""
    code = "import decoder.batch, sys; print('decoder.decoder' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert result.stdout.strip() == "False", result.stderr
    import inspect

    import decoder.batch

    assert "from .decoder " not in inspect.getsource(decoder.batch)  # not even inside a function


def test_python_m_bench_runs_without_path_edits():
    result = subprocess.run([sys.executable, "-m", "bench", "--help"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert result.returncode == 0 and "--quick" in result.stdout


@pytest.mark.parametrize("flags", [["--processes", "0"], ["--small-verses", "0"]])
def test_data_counts_below_one_are_usage_errors_before_any_build(flags, monkeypatch):
    import decoder.data.build

    monkeypatch.setattr(decoder.data.build, "build", lambda *a, **k: pytest.fail("a data build started"))
    code, _, err = run_cky(["data", "bible-es-en", *flags])
    assert code == 2 and err.startswith("cky data: ")


@pytest.mark.parametrize("argv, message", [
    (["extract", "--shards", "0"], "argument --shards: 0 is less than 1"),  # was a ZeroDivisionError
    (["extract", "--compress-level", "12"], "argument --compress-level: 12 is more than 9"),  # a zlib ValueError
    (["extract", "--jobs", "-2"], "argument --jobs: -2 is less than 0 (0 means all cores)"),  # was accepted
    (["extract", "--compose", "0"], "argument --compose: 0 is less than 1"),
    (["binarize", "--max-iterations", "-1", "in", "out"], "argument --max-iterations: -1 is less than 0")])
def test_out_of_range_counts_of_extract_and_binarize_are_usage_errors(argv, message, capsys):
    from decoder.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv + (["--out", "x.gz"] if argv[0] == "extract" else []))
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_a_config_mistake_is_reported_before_the_input_is_read(tmp_path):
    """A misspelt key fails at once, naming the file and key, before the input's lines are read and
    judged (the non-UTF-8 line's message would otherwise come first, as if the run had started)."""
    config = tmp_path / "config.toml"
    config.write_text('store = "no-store"\nlm = "no-lm.arpa"\npop_limt = 5\n')
    source = tmp_path / "in.txt"
    source.write_bytes(b"uno\n\xff dos\n")
    result = run_translate("--config", str(config), "--input", str(source))
    assert result.returncode == 1
    assert result.stderr == f"cky translate: {config}: unknown key `pop_limt` (did you mean `pop_limit`?)\n"
