"""More reliability: `cky binarize`'s outputs appear whole or not at all, the k-best bound is a usage
error up front, translate_batch's in-process path and SdigDecoder are safe to share between threads,
and bad input on the command line gives one line and the right exit code."""
import itertools
import os
import random
import subprocess
import sys
import threading

import pytest

from decoder.binarize import binarize
from decoder.batch import translate_batch
from decoder.decoder import Decoder
from decoder.lm import LanguageModel
from decoder.outputs import TEMPORARY_MARK
from decoder.settings import MAX_KBEST
from decoder.store import GrammarStore, write_store

from cli_fixtures import REPO, run_cky
from search_fixtures import FEATURES, WEIGHTS, random_rules, random_sentence, write_arpa
from test_thread_safety import run_threads

TABLE = ("la casa [X] ||| the house [NP] ||| 0.5 0.25\n"
         "el [X][NP] verde [X] ||| the green [X][NP] [NP] ||| 0.5 0.5 ||| 1-2\n"
         "[X][NP] de [X][NN] [X] ||| [X][NN] 's [X][NP] [NP] ||| 0.3 0.2 ||| 0-2 2-0\n"
         "[X][VB] [X][NP] de [X][JJ] [X] ||| [X][VB] [X][NP] will be [X][JJ] [VP] ||| 1 1 ||| 0-0 1-1 3-4\n")


def cky(*argv):
    """`python -m decoder.cli ARGV` as a user runs it: (exit code, stdout, stderr)."""
    result = subprocess.run([sys.executable, "-m", "decoder.cli", *map(str, argv)], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=REPO), timeout=300)
    return result.returncode, result.stdout, result.stderr


def temporaries(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith(TEMPORARY_MARK))


def dead_pid() -> int:
    """The id of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# ---- cky binarize: outputs written whole or not at all ---------------------------------------------

@pytest.fixture
def table(tmp_path):
    path = tmp_path / "rules.txt"
    path.write_text(TABLE, encoding="utf-8")
    return path


def test_binarize_writes_its_outputs(table, tmp_path):
    out, report = tmp_path / "binary.txt", tmp_path / "report.json"
    code, _, err = run_cky(["binarize", "--quiet", "--report", str(report), str(table), str(out)])
    assert code == 0, err
    assert out.read_text(encoding="utf-8").startswith("#cky-binary-grammar\t")
    assert '"source_rules": 4' in report.read_text(encoding="utf-8")
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("name", ["binary.txt", "binary.gz"])
def test_binarize_failing_while_writing_leaves_no_part_of_its_output(table, tmp_path, monkeypatch, name):
    """A disk that fills up after two rules: no valid-looking partial grammar, the old file untouched."""
    from decoder.binarize import binary_grammar

    out = tmp_path / name
    out.write_bytes(b"the grammar of an earlier run\n")
    written = itertools.count()
    format_rule = binary_grammar.format_binary_rule

    def format_until_the_disk_is_full(rule):
        if next(written) == 2:
            raise OSError(28, "No space left on device")
        return format_rule(rule)

    monkeypatch.setattr(binary_grammar, "format_binary_rule", format_until_the_disk_is_full)
    code, _, err = run_cky(["binarize", "--quiet", str(table), str(out)])
    assert code == 1 and "No space left on device" in err, err
    assert out.read_bytes() == b"the grammar of an earlier run\n"
    assert temporaries(tmp_path) == []


def test_binarize_removes_the_temporaries_of_a_dead_run(table, tmp_path):
    out = tmp_path / "binary.txt"
    stale = tmp_path / f"{TEMPORARY_MARK}{dead_pid()}-0123abcd-binary.txt"
    stale.write_text("#cky-binary-grammar\t{}\nhalf a grammar", encoding="utf-8")
    live = tmp_path / f"{TEMPORARY_MARK}{os.getppid()}-0123abcd-binary.txt"  # a run still writing: kept
    live.write_text("", encoding="utf-8")
    code, _, err = run_cky(["binarize", "--quiet", str(table), str(out)])
    assert code == 0, err
    assert temporaries(tmp_path) == [live.name]


def test_binarize_report_it_cannot_write_is_refused_before_any_output(table, tmp_path):
    out, report = tmp_path / "binary.txt", tmp_path / "missing" / "report.json"
    code, _, err = run_cky(["binarize", "--quiet", "--report", str(report), str(table), str(out)])
    assert code == 1 and str(report) in err and "does not exist" in err, err
    assert not out.exists()


@pytest.mark.parametrize("alias", ["symlink", "hardlink", "report"])
def test_binarize_output_that_is_the_input_is_refused(table, tmp_path, alias):
    out = tmp_path / "out.txt"
    if alias == "symlink":
        out.symlink_to(table)
        argv = [str(table), str(out)]
    elif alias == "hardlink":
        os.link(table, out)
        argv = [str(table), str(out)]
    else:
        argv = ["--report", str(tmp_path / "." / "out.txt"), str(table), str(out)]
    code, _, err = run_cky(["binarize", "--quiet", *argv])
    assert code == 2 and "refusing to overwrite it" in err, err
    assert table.read_text(encoding="utf-8") == TABLE
    assert not out.exists() or out.read_text(encoding="utf-8") in ("", TABLE)


# ---- the k-best bound: a usage error before anything is loaded ---------------------------------------

def test_translate_kbest_above_the_maximum_is_a_usage_error(tmp_path):
    code, out, err = cky("translate", "--config", tmp_path / "no-such-config.toml", "--kbest", MAX_KBEST + 1,
                         "--kbest-out", tmp_path / "kbest.txt")
    assert code == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert last == f"cky translate: error: argument --kbest: {MAX_KBEST + 1} is more than {MAX_KBEST}", err
    assert not (tmp_path / "kbest.txt").exists()


def test_translate_kbest_at_the_maximum_is_accepted():
    from decoder.cli import build_parser

    args = build_parser("translate").parse_args(["translate", "--kbest", str(MAX_KBEST), "--kbest-out", "k"])
    assert args.kbest == MAX_KBEST


def test_serve_max_kbest_above_the_maximum_is_a_usage_error(tmp_path):
    code, _, err = cky("serve", "--config", tmp_path / "no-such-config.toml", "--max-kbest", MAX_KBEST + 1)
    assert code == 2
    assert err.strip().splitlines()[-1] == (f"cky serve: error: argument --max-kbest: {MAX_KBEST + 1} is more "
                                            f"than {MAX_KBEST}"), err


def test_serve_app_refuses_a_max_kbest_above_the_maximum():
    pytest.importorskip("starlette")
    from decoder.serve.app import create_app

    with pytest.raises(ValueError, match=str(MAX_KBEST)):
        create_app(object(), max_kbest=MAX_KBEST + 1)


# ---- translate_batch from several threads ------------------------------------------------------------

@pytest.fixture(scope="module")
def store_and_lm(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "icr"
    write_store(binarize(random_rules(7, n_rules=60, max_arity=3), "icr"), path, feature_names=FEATURES)
    return path, write_arpa(tmp_path_factory.mktemp("lm"))


@pytest.fixture(scope="module")
def two_decoders(store_and_lm):
    """Two decoders over one store whose scores differ (another LM weight)."""
    path, arpa = store_and_lm
    lm = LanguageModel(arpa)
    return (Decoder(GrammarStore.open(path), lm, WEIGHTS, pop_limit=100),
            Decoder(GrammarStore.open(path), lm, dict(WEIGHTS, lm=2.5), pop_limit=100))


class Job:
    """A translate_batch job that says whose it is: (name, text, score). With a barrier, its first
    sentence waits there until every thread has started its batch, so that the batches overlap."""

    def __init__(self, name, barrier=None):
        self.name, self.barrier = name, barrier

    def __call__(self, decoder, sentence):
        if self.barrier is not None:
            barrier, self.barrier = self.barrier, None
            barrier.wait(timeout=60)
        t = decoder.translate(sentence)
        return self.name, t.text, round(t.score, 9)


@pytest.mark.parametrize("same_decoder", [True, False], ids=["same decoder", "different decoders"])
def test_translate_batch_from_two_threads_gives_the_sequential_results(two_decoders, same_decoder):
    decoders = (two_decoders[0],) * 2 if same_decoder else two_decoders
    batches = [[" ".join(random_sentence(100 * t + seed, 4 + seed % 7)) for seed in range(12)] for t in range(2)]
    expected = [translate_batch(decoders[t], batches[t], workers=1, job=Job(t)) for t in range(2)]
    assert expected[0] != expected[1]
    for _ in range(3):
        barrier = threading.Barrier(2)
        results = [None, None]

        def run(t):
            results[t] = translate_batch(decoders[t], batches[t], workers=1, job=Job(t, barrier))

        threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == expected


# ---- one SdigDecoder from several threads ----------------------------------------------------------



def sdig_system():
    """An SdigDecoder over the ET pairs of random trees (as tests/test_sdig_search.py builds them), and
    those trees: given a tree, the decoder needs no parser (no spaCy)."""
    from decoder.sdig.decoder import SdigDecoder
    from decoder.sdig.grammar import Grammar
    from decoder.sdig.search import FEATURES as SDIG_FEATURES
    from test_sdig_search import random_grammar, random_tree

    rng = random.Random(11)
    trees, pairs, transitions = [], {}, None
    for _ in range(12):
        tree = random_tree(rng, rng.randint(12, 24))
        grammar = random_grammar(rng, tree)
        pairs.update({(p.source, p.target): p for options in grammar.by_source.values() for p in options})
        transitions = grammar.transitions.counts if transitions is None else transitions
        trees.append(tree)
    weights = {name: rng.uniform(-1, 1) for name in SDIG_FEATURES}
    decoder = SdigDecoder(Grammar(list(pairs.values()), transitions, max_source_words=3), weights=weights,
                          beam_size=6)
    return decoder, trees


def sdig_outcome(decoder, tree, kbest):
    if kbest:
        return [(h.text, round(h.score, 9)) for h in decoder.kbest(tree, 4, unique=False)]
    t = decoder.translate(tree)
    return t.text, round(t.score, 9), t.tree


def test_threads_on_one_sdig_decoder_get_the_sequential_results():
    decoder, trees = sdig_system()
    jobs = [(tree, index % 3 == 2) for index, tree in enumerate(trees)] * 4
    # The compiled search's option table grows with the sentences it sees: expected from a fresh decoder
    # that has seen the same sentences in another order gives the same scores (ids are not in the answer).
    expected = [sdig_outcome(decoder, *job) for job in jobs]
    for _ in range(3):
        decoder, _ = sdig_system()  # fresh: its tables grow while the threads run
        assert run_threads(decoder, jobs, sdig_outcome) == expected


# ---- bad input as a user or an attacker gives it ---------------------------------------------------

def test_a_search_algorithm_of_the_wrong_type_is_a_settings_error():
    """A list (from a config: `search = ["cube"]`) cannot even be looked up in the algorithms' registry."""
    from decoder.errors import SettingsError
    from decoder.settings import SearchSettings

    with pytest.raises(SettingsError, match="`search` must be one of"):
        SearchSettings.from_mapping({"search": ["cube"]})


@pytest.mark.parametrize("setting", ["max_span", "pop_limit", "memory_budget_mb", "edge_limit"])
def test_an_integer_setting_too_large_for_the_search_is_a_settings_error(setting):
    from decoder.errors import SettingsError
    from decoder.settings import MAX_INT_SETTING, SearchSettings

    assert SearchSettings.from_mapping({setting: MAX_INT_SETTING})  # the largest is taken
    with pytest.raises(SettingsError, match=f"`{setting}` must be at most 2,147,483,647"):
        SearchSettings.from_mapping({setting: 10**22})


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from test_decoder import write_toy_system

    directory = tmp_path_factory.mktemp("toy")
    write_toy_system(directory, "pop_limit = 50\n")
    return directory


@pytest.mark.parametrize("line, problem", [('search = ["cube"]', "`search` must be one of"),
                                           ("[search]\nmax_span = 10000000000000000000000",
                                            "`max_span` must be at most")])
def test_translate_with_a_config_value_of_the_wrong_type_says_so_in_one_line(toy, tmp_path, line, problem):
    config = tmp_path / "config.toml"
    config.write_text(f'store = "{toy / "store"}"\nlm = "{toy / "lm.arpa"}"\n{line}\n', encoding="utf-8")
    code, out, err = run_cky(["translate", "--config", str(config), "--quiet"], stdin=b"la casa\n")
    assert code == 1 and out == b""
    assert err.startswith(f"cky translate: {config}: {problem}") and "Traceback" not in err, err


def test_a_word_holding_a_nul_character_is_not_scored_as_another_word(toy):
    """KenLM reads words as C strings: "casa\\0x" must not be scored as "casa" (the LM knows the one,
    not the other): its sentence is invalid input, and the others are translated."""
    from decoder.errors import InputError

    decoder = Decoder.from_config(toy / "config.toml")
    with pytest.raises(InputError, match="NUL"):
        decoder.lm.score_sentence(["the", "house\0x"])
    good, bad = "la casa verde es pequeña", "la casa\0x verde"
    results = translate_batch(decoder, [good, bad, good], workers=1)
    assert [r.ok for r in results] == [True, False, True]
    assert "NUL" in results[1].error and results[0].text == results[2].text == decoder.translate(good).text


# ---- an output that is a device or a pipe is written, never replaced ---------------------------------

@pytest.fixture
def null_device(tmp_path):
    """A node of the null device (as /dev/null) in tmp_path: an output that is not a regular file."""
    import stat

    path = tmp_path / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("cannot make a device node here (not root)")
    return path


def is_null_device(path):
    import stat

    status = os.stat(path)
    return stat.S_ISCHR(status.st_mode) and status.st_rdev == os.makedev(1, 3)


def test_atomic_write_onto_a_device_writes_to_it_instead_of_replacing_it(null_device):
    from decoder.outputs import atomic_files, atomic_write

    with atomic_write(null_device) as f:
        f.write("discarded\n")
    with atomic_files() as files:
        with open(files.path(null_device), "w") as f:
            f.write("discarded\n")
    assert is_null_device(null_device) and temporaries(null_device.parent) == []


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The flags of a small parsed, aligned corpus (decoder.fixture) for `cky extract`."""
    from decoder.fixture import build_fixture

    paths = build_fixture(str(tmp_path_factory.mktemp("fixture")), train=20, dev=2, test=2)
    return ["--source", paths["train_es"], "--trees", paths["train_trees"], "--alignment", paths["train_align"]]


def test_binarize_and_extract_onto_a_device_keep_the_device(table, tmp_path, null_device, corpus):
    """`--summary /dev/null` (as root) renamed a regular file over the system's /dev/null."""
    code, _, err = run_cky(["binarize", "--quiet", "--report", str(null_device), str(table), str(tmp_path / "b.txt")])
    assert code == 0, err
    code, _, err = run_cky(["binarize", "--quiet", str(table), str(null_device)])
    assert code == 0, err
    assert is_null_device(null_device)
    code, _, err = run_cky(["extract", "--quiet", "--workers", "1", *corpus,
                            "--out", str(tmp_path / "rules.gz"), "--summary", str(null_device),
                            "--unknown-labels", str(null_device)])
    assert code == 0, err
    assert is_null_device(null_device) and (tmp_path / "rules.gz").exists()
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("output", ["--out", "--summary", "--glue"])
def test_extract_output_that_is_a_directory_is_refused_before_any_work(tmp_path, output, corpus):
    directory = tmp_path / "a-directory"
    directory.mkdir()
    outputs = {"--out": str(tmp_path / "rules.gz"), output: str(directory)}
    code, _, err = run_cky(["extract", "--quiet", "--workers", "1", *corpus, *itertools.chain(*outputs.items())])
    assert code == 1 and err == f"cky extract: {directory}: is a directory\n", err
    assert not (tmp_path / "rules.gz").exists() and temporaries(tmp_path) == []


# ---- cky tune: bad dev sets and k ------------------------------------------------------------------

def test_tune_on_an_empty_dev_set_says_so_in_one_line(toy, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    code, _, err = run_cky(["tune", "--quiet", "--config", str(toy / "config.toml"), "--dev-src", str(empty),
                            "--dev-ref", str(empty), "--out", str(tmp_path / "tuned.toml")])
    assert code == 1 and err == f"cky tune: {empty}: is empty: the dev set needs at least one sentence to tune on\n"
    assert not (tmp_path / "tuned.toml").exists()


def test_tune_kbest_above_the_maximum_is_a_usage_error(tmp_path):
    """Every k-best list would fail, and MERT would 'tune' on nothing and write a config (rc 0)."""
    code, _, err = cky("tune", "--config", tmp_path / "c.toml", "--dev-src", tmp_path / "s", "--dev-ref",
                       tmp_path / "r", "--kbest", MAX_KBEST + 1)
    assert code == 2
    assert err.strip().splitlines()[-1] == f"cky tune: error: argument --kbest: {MAX_KBEST + 1} is more than {MAX_KBEST}"


def test_train_mert_kbest_above_the_maximum_is_a_usage_error(tmp_path):
    """Every k-best list of MERT would fail, and the system would be 'tuned' on nothing (rc 0)."""
    code, _, err = cky("train", "--source", tmp_path / "s", "--target", tmp_path / "t", "--source-lang", "es",
                       "--target-lang", "en", "--out", tmp_path / "system", "--mert-kbest", MAX_KBEST + 1)
    assert code == 2
    assert err.strip().splitlines()[-1] == (f"cky train: error: argument --mert-kbest: {MAX_KBEST + 1} is more "
                                            f"than {MAX_KBEST}")
    assert not (tmp_path / "system").exists()


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_rule_table_holding_a_nul_character_is_refused_naming_its_line(tmp_path, gzipped):
    """A target word "house\\0x" would reach the LM as "house" (KenLM reads C strings): the table is
    refused where it is read, by both readers, instead of a store that cannot be loaded."""
    import gzip

    from decoder.errors import GrammarFormatError
    from decoder.grammar import read_rules
    from decoder.rule_arrays import read_rule_arrays

    lines = TABLE.splitlines(keepends=True)
    text = "".join(lines[:2]) + "\n" + lines[2].replace("'s", "'s\0x") + lines[3]  # line 4 (line 3 is blank)
    path = tmp_path / ("rules.txt.gz" if gzipped else "rules.txt")
    path.write_bytes(gzip.compress(text.encode()) if gzipped else text.encode())
    for read in (lambda p: list(read_rules(p, uniform_scores=True)), read_rule_arrays):
        with pytest.raises(GrammarFormatError, match=r":4: holds a NUL character"):
            read(path)
    code, _, err = run_cky(["compile", "--quiet", "--features", "a,b", str(path), str(tmp_path / "store")])
    assert code == 1 and err.startswith(f"cky compile: {path}:4: holds a NUL character"), err
    assert not (tmp_path / "store").exists()


def test_serve_answers_a_sentence_holding_nul_with_a_400(tmp_path):
    """The client's bad input (a word the LM cannot look up), not the server's failure (500)."""
    pytest.importorskip("starlette")
    import json as json_module

    from starlette.testclient import TestClient

    from decoder.serve import create_app
    from serve_fixtures import write_genesis_model

    decoder = Decoder.from_config(write_genesis_model(tmp_path))
    with TestClient(create_app(decoder), base_url="http://localhost:8000", raise_server_exceptions=False) as client:
        answer = client.post("/translate", content=json_module.dumps({"sentence": "la tierra\u0000"}),
                             headers={"Content-Type": "application/json"})
        assert answer.status_code == 400 and "NUL" in answer.json()["error"], answer.text
        answer = client.post("/translate", content=json_module.dumps({"sentence": "la tierra"}),
                             headers={"Content-Type": "application/json"})
        assert answer.json()["text"] == "the earth"
