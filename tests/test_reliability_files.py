"""Files written whole or not at all, and clear messages and exit codes: cky compile, extract and
tune on bad or partial inputs, a full disk, a config that is not UTF-8, signals and closed pipes."""
import errno
import gzip
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

from cli_fixtures import run_cky, start_cky
from test_decoder import decoder, model  # noqa: F401  (fixtures: the tiny system)
from test_translate_cli_errors import translate_args

from decoder.errors import GrammarFormatError
from decoder.extract.synthetic import write_corpus
from decoder.grammar import read_rules, write_rules
from decoder.outputs import atomic_files, remove_stale_temporaries, temporary_name
from decoder.rule_arrays import read_rule_arrays
from decoder.store import build_store
from decoder.synthetic import random_grammar


def dead_pid() -> int:
    """The pid of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write_table(path, n=300, seed=1):
    write_rules(random_grammar(n, seed=seed, n_features=2), path)
    pathlib.Path(f"{path}.features.json").write_text('["a", "b"]')
    return path


# ---- temporaries: renamed on success only, removed after a dead process ---------------------------

def test_atomic_files_appear_together_on_success_only(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    with pytest.raises(RuntimeError):
        with atomic_files() as files:
            pathlib.Path(files.path(a)).write_text("new a")
            pathlib.Path(files.path(b)).write_text("new b")
            raise RuntimeError("the command failed")
    assert a.read_text() == "old a" and not b.exists() and sorted(os.listdir(tmp_path)) == ["a.txt"]
    with atomic_files() as files:
        pathlib.Path(files.path(a)).write_text("new a")
        pathlib.Path(files.path(b)).write_text("new b")
        assert a.read_text() == "old a"  # not before the end
    assert (a.read_text(), b.read_text()) == ("new a", "new b") and sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]


def test_stale_temporaries_of_dead_processes_only_are_removed(tmp_path):
    target = tmp_path / "rules.gz"
    mine = pathlib.Path(temporary_name(target))
    mine.write_text("being written by this (live) process")
    stale_file = tmp_path / f".cky-tmp-{dead_pid()}-0badcafe-rules.gz"
    stale_file.write_text("left by a killed run")
    stale_dir = tmp_path / f".cky-tmp-{dead_pid()}-00c0ffee-rules.gz"
    (stale_dir / "stage1").mkdir(parents=True)
    other = tmp_path / f".cky-tmp-{dead_pid()}-0badcafe-other.gz"
    other.write_text("another output's")
    assert sorted(remove_stale_temporaries(target)) == sorted([str(stale_file), str(stale_dir)])
    assert mine.exists() and other.exists() and not stale_file.exists() and not stale_dir.exists()


def truncated_table(tmp_path):
    """A gzip rule table of 3,000 rules and a copy cut in the middle (trunc.gz, with its feature names)."""
    table = write_table(tmp_path / "rules.gz", n=3000)
    data = table.read_bytes()
    trunc = tmp_path / "trunc.gz"
    trunc.write_bytes(data[:len(data) // 2])
    (tmp_path / "trunc.gz.features.json").write_text('["a", "b"]')
    return table, trunc


def test_filter_to_after_a_truncated_table_leaves_no_output(tmp_path):
    """`cky extract --rules trunc.gz --filter-to T --out out.gz` exited 1 with a valid-looking out.gz."""
    table, trunc = truncated_table(tmp_path)
    words = sorted({w for rule in read_rules(table) for w in rule.source_terminals})
    test = tmp_path / "test.txt"
    test.write_text(" ".join(words) + "\n")
    out = tmp_path / "out.gz"
    code, _, err = run_cky(["extract", "--rules", str(trunc), "--filter-to", str(test), "--out", str(out)])
    assert code == 1 and "truncated or corrupt gzip data" in err, err
    assert not out.exists() and not pathlib.Path(f"{out}.features.json").exists()
    assert not [name for name in os.listdir(tmp_path) if "cky-tmp" in name]
    code, _, err = run_cky(["extract", "--rules", str(table), "--filter-to", str(test), "--out", str(out)])
    kept = len(gzip.decompress(out.read_bytes()).splitlines())
    assert code == 0 and err == f"kept {kept} of 3000 rules\n" and kept > 1000, err
    assert out.read_bytes()[10:14] == b"out\0"  # the gzip header names the table, not its temporary


def test_a_killed_compile_leaves_a_temporary_that_the_next_compile_removes(tmp_path):
    table = write_table(tmp_path / "rules.txt")
    store = tmp_path / "store"
    stale = tmp_path / f".cky-tmp-{dead_pid()}-1234abcd-store"  # what a compile killed midway leaves
    stale.mkdir()
    (stale / "features.npy").write_bytes(b"\0" * 4096)
    code, _, err = run_cky(["compile", str(table), str(store)])
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == ["rules.txt", "rules.txt.features.json", "store"]


def test_a_compile_killed_by_sigkill_is_cleaned_up_by_the_next(tmp_path):
    table = write_table(tmp_path / "rules.txt", n=2000)
    store = tmp_path / "store"
    slow = ("import sys, time, decoder.store.compile as c\n"
            "write = c._write_files\n"
            "def slow(compiled, path):\n"
            "    print(path, flush=True); time.sleep(60)\n"
            "c._write_files = slow\n"
            "from decoder.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    process = subprocess.Popen([sys.executable, "-c", slow, "compile", str(table), str(store)],
                               stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).parents[1])))
    temporary = process.stdout.readline().strip()
    assert os.path.isdir(temporary) and os.path.basename(temporary).endswith("-store")
    process.kill()
    process.wait()
    process.stdout.close()
    assert os.path.isdir(temporary)  # SIGKILL: no chance to clean up
    code, _, err = run_cky(["compile", str(table), str(store)])
    assert code == 0 and not os.path.exists(temporary), err


# ---- cky compile: a full disk, a truncated table, an empty table, unbalanced trees ---------------

@pytest.mark.parametrize("failure", ["ENOSPC", "short write"])
def test_a_full_disk_names_the_store_file(tmp_path, monkeypatch, failure):
    from decoder.store import compile as store_compile

    table = write_table(tmp_path / "rules.txt")
    store = tmp_path / "store"
    assert run_cky(["compile", str(table), str(store)])[0] == 0
    before = {name: (store / name).read_bytes() for name in os.listdir(store)}
    real_save = np.save

    def full_disk(file, array, *args, **kwargs):
        if os.path.basename(file) == "features.npy":
            if failure == "ENOSPC":
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            raise OSError("103769 requested and 51168 written")  # numpy's message for a short fwrite
        return real_save(file, array, *args, **kwargs)

    monkeypatch.setattr(store_compile.np, "save", full_disk)
    if failure == "short write":  # the file system is full
        monkeypatch.setattr(store_compile.os, "statvfs", lambda path: os.statvfs_result((4096,) * 2 + (0,) * 8))
    code, _, err = run_cky(["compile", str(table), str(store)])
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith(f"cky compile: {store / 'features.npy'}: cannot write it: No space left on device"), err
    assert {name: (store / name).read_bytes() for name in os.listdir(store)} == before
    assert sorted(os.listdir(tmp_path)) == ["rules.txt", "rules.txt.features.json", "store"]


def test_compile_reports_a_truncated_gz_at_the_line_it_cuts(tmp_path):
    table, trunc = truncated_table(tmp_path)
    whole_lines = zlib.decompressobj(wbits=31).decompress(trunc.read_bytes()).count(b"\n")
    assert 100 < whole_lines < 3000
    code, _, err = run_cky(["compile", str(trunc), str(tmp_path / "store")])
    assert code == 1 and err.startswith(f"cky compile: {trunc}:{whole_lines + 1}: truncated or corrupt gzip"), err
    with pytest.raises(Exception, match=f"{trunc}:{whole_lines + 1}: truncated"):
        read_rule_arrays(trunc)


def test_an_empty_table_is_refused_at_compile_time(tmp_path):
    table = tmp_path / "rules.txt"
    table.write_text("\n")
    code, _, err = run_cky(["compile", str(table), str(tmp_path / "store"), "--features", "a,b"])
    assert code == 1 and err == f"cky compile: {table}: has no rules: a grammar store needs at least one\n", err
    assert not (tmp_path / "store").exists()


UNBALANCED = ["[CC and]]]", "[NP [DT the] [NN]", "[NP x] [VP y]", "NP x"]


@pytest.mark.parametrize("tree", UNBALANCED)
def test_an_unbalanced_tree_fragment_is_refused_naming_file_and_line(tmp_path, tree):
    table = tmp_path / "rules.txt"
    good = "y [X] ||| and [CC] ||| 0.5 0.5 ||| ||| 1 1 1 ||| ||| {{Tree [CC and]}}"
    table.write_text(f"{good}\n\n{good.replace('[CC and]', tree)}\n{good}\n")
    (tmp_path / "rules.txt.features.json").write_text('["a", "b"]')
    for read in (read_rule_arrays, lambda path: list(read_rules(path))):
        with pytest.raises(GrammarFormatError, match=rf"^{table}:3: \{{\{{Tree "):
            read(table)
    code, _, err = run_cky(["compile", str(table), str(tmp_path / "store")])
    assert code == 1 and err.startswith(f"cky compile: {table}:3: {{{{Tree {tree}}}}}: "), err
    assert not (tmp_path / "store").exists()


def test_balanced_fragments_of_an_extracted_table_all_pass(tmp_path):
    """Every fragment cky extract writes is one tree: no false alarm, on both readers."""
    paths = write_corpus(str(tmp_path / "corpus"), 60, seed=3)
    out = tmp_path / "rules.gz"
    code, _, err = run_cky(["extract", "--source", paths["es"], "--trees", paths["trees"], "--alignment",
                            paths["align"], "--out", str(out), "--jobs", "1", "--no-progress"])
    assert code == 0, err
    arrays = read_rule_arrays(out)
    rules = list(read_rules(out))
    assert len(arrays) == len(rules) > 100 and all(rule.tree for rule in rules)


def test_zero_and_negative_scores_are_floored_with_one_warning(tmp_path, caplog):
    table = tmp_path / "rules.txt"
    table.write_text("a [X] ||| b [Y] ||| 0 0.5\nc [X] ||| d [Y] ||| -0.25 0\ne [X] ||| f [Y] ||| 0.5 0.5\n")
    caplog.set_level("WARNING")
    build = build_store(table, tmp_path / "store", feature_names=["a", "b"])
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert warnings == [f"{table.resolve()}: 3 of its 6 scores are zero or negative (1 negative): their log is "
                        f"taken as -100, as Moses does"]
    features = np.load(tmp_path / "store" / "features.npy")
    assert np.count_nonzero(features == -100) == 3 and build.n_read == 3


# ---- cky extract: misaligned corpus files ---------------------------------------------------------

@pytest.mark.parametrize("short", ["trees", "align", "es"])
def test_extract_refuses_corpus_files_of_different_line_counts(tmp_path, short):
    paths = write_corpus(str(tmp_path / "corpus"), 20, seed=2)
    lines = pathlib.Path(paths[short]).read_text().splitlines(keepends=True)
    del lines[7]  # one line missing from the middle
    pathlib.Path(paths[short]).write_text("".join(lines))
    out = tmp_path / "out" / "rules.gz"
    code, _, err = run_cky(["extract", "--source", paths["es"], "--trees", paths["trees"], "--alignment",
                            paths["align"], "--out", str(out), "--jobs", "1", "--no-progress"])
    assert code == 1 and err.count("\n") == 1, err
    if short == "es":
        assert f"{paths['trees']}: has 20 lines but {paths['es']} has 19" in err, err
    else:
        assert f"{paths[short]}: has 19 lines but {paths['es']} has 20" in err, err
    assert not out.parent.exists()


def test_extract_refuses_an_output_that_is_an_input(tmp_path):
    paths = write_corpus(str(tmp_path / "corpus"), 5, seed=2)
    link = tmp_path / "summary.json"
    link.symlink_to(paths["trees"])
    before = pathlib.Path(paths["trees"]).read_bytes()
    code, _, err = run_cky(["extract", "--source", paths["es"], "--trees", paths["trees"], "--alignment",
                            paths["align"], "--out", str(tmp_path / "rules.gz"), "--summary", str(link)])
    assert code == 2 and f"{link} is both --trees and --summary" in err, err
    assert pathlib.Path(paths["trees"]).read_bytes() == before


# ---- cky tune: an output that cannot be written, found before the decoding ------------------------

def test_tune_checks_that_out_is_writable_before_decoding(model, tmp_path, monkeypatch):
    from decoder.tune import run as tune_run

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded before finding that --out cannot be written")

    monkeypatch.setattr(tune_run, "decoder_from_config", no_decoding)
    if os.geteuid() == 0:  # permissions do not stop root: a file system that takes no new file
        out = "/sys/tuned.toml"
    else:
        locked = tmp_path / "read-only"
        locked.mkdir()
        locked.chmod(0o555)
        out = str(locked / "tuned.toml")
    source, ref = tmp_path / "dev.es", tmp_path / "dev.en"
    source.write_text("la casa\n")
    ref.write_text("the house\n")
    code, _, err = run_cky(["tune", "--config", str(model / "config.toml"), "--dev-src", str(source),
                            "--dev-ref", str(ref), "--out", out, "--quiet"])
    assert code == 1 and f"{out}: cannot write in" in err and err.count("\n") == 1, err


def test_tune_refuses_an_out_that_is_its_config(model, tmp_path):
    source = tmp_path / "dev.es"
    source.write_text("la casa\n")
    link = tmp_path / "tuned.toml"
    link.symlink_to(model / "config.toml")
    code, _, err = run_cky(["tune", "--config", str(model / "config.toml"), "--dev-src", str(source),
                            "--dev-ref", str(source), "--out", str(link), "--quiet"])
    assert code == 2 and "is both --config and --out" in err, err


# ---- a config that is not UTF-8 -------------------------------------------------------------------

def latin1_config(model, tmp_path):
    config = tmp_path / "latin1.toml"
    text = (model / "config.toml").read_text(encoding="utf-8").replace(
        'store = "', f'store = "{model}/').replace('lm = "', f'lm = "{model}/')
    config.write_bytes(b"# una canci\xf3n\n" + text.encode("utf-8"))
    return config


@pytest.mark.parametrize("command", ["translate", "tune", "serve"])
def test_a_config_that_is_not_utf8_is_one_line_naming_file_and_byte(model, tmp_path, command):
    config = latin1_config(model, tmp_path)
    source = tmp_path / "dev.es"
    source.write_text("la casa\n")
    argv = {"translate": ["translate", "--config", str(config)],
            "tune": ["tune", "--config", str(config), "--dev-src", str(source), "--dev-ref", str(source),
                     "--out", str(tmp_path / "tuned.toml")],
            "serve": ["serve", "--config", str(config), "--port", "1"]}[command]
    result = subprocess.run([sys.executable, "-m", "decoder.cli", *argv], input="", capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).parents[1])), timeout=60)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (f"cky {command}: {config}:1: not UTF-8 at byte offset 11 (0xf3: invalid "
                             f"continuation byte); save the config as UTF-8\n"), result.stderr


def test_decoder_from_a_config_that_is_not_utf8(model, tmp_path):
    from decoder.decoder import Decoder
    from decoder.errors import ConfigError

    config = latin1_config(model, tmp_path)
    with pytest.raises(ConfigError, match=rf"^{config}:1: not UTF-8 at byte offset 11 \(0xf3"):
        Decoder.from_config(config)


# ---- signals and pipes ----------------------------------------------------------------------------

def test_sigterm_saves_the_progress_and_exits_143(model, decoder, tmp_path):
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = ["la casa", "el perro", "la casa verde es pequeña", "un perro"] * 30
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    args = translate_args(model, "--input", str(source), "--output", str(out))
    process = start_cky(args, env={"CKY_TEST_SLEEP": "0.05"}, stderr=subprocess.PIPE, text=True)
    assert "loaded" in process.stderr.readline()
    time.sleep(1.5)
    process.send_signal(signal.SIGTERM)  # to the command only, as `kill PID` does
    code = process.wait(timeout=30)
    with process.stderr:
        err = process.stderr.read()
    assert code == 143 and "Traceback" not in err, err
    assert err.splitlines()[-1].startswith("cky translate: interrupted; the progress is saved"), err
    progress = json.loads(pathlib.Path(f"{out}.progress.json").read_text())
    assert 0 < progress["lines_done"] < len(lines)
    assert out.stat().st_size == progress["offsets"]["output"]  # flushed up to the last whole line, saved
    code, _, err = run_cky(args + ["--resume"])
    assert code == 0, err
    assert out.read_text(encoding="utf-8") == "".join(decoder.translate(line).text + "\n" for line in lines)


def test_a_closed_pipe_exits_141_quietly(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("la casa\n" * 3000, encoding="utf-8")
    reader = subprocess.Popen(["head", "-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    process = start_cky(translate_args(model, "--input", str(source)), stdout=reader.stdin, stderr=subprocess.PIPE)
    reader.stdin.close()
    assert reader.stdout.read() == b"the house\n"
    reader.stdout.close()
    reader.wait()
    code = process.wait(timeout=60)
    with process.stderr:
        err = process.stderr.read().decode()
    assert code == 141 and [line for line in err.splitlines() if "loaded" not in line] == [], err
