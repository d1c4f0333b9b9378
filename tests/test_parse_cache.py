"""The English parse's cache of link-grammar answers by sentence (decoder.data.parse_cache, used by
decoder.data.parse.parse_verses): hits and misses, two corpora sharing sentences, a killed run keeping
its stored answers, a damaged or unusable cache file (a warning, the same trees), the earlier chunk
files read into it, the same trees on one process, two and a Dask cluster, and the `cky train` flag
(--parse-cache: not part of the parse stage's fingerprint)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from decoder.data import build, parse, parse_cache
from decoder.data.tokenize import tokenize

REPOSITORY = Path(__file__).resolve().parents[1]

link_grammar = pytest.mark.skipif(not parse.link_grammar_available(),
                                  reason="link-grammar Python bindings (Debian python3-link-grammar) not importable")

# one sentence each (split_sentences keeps a verse of one sentence whole), every one parsed by link-grammar
TEXTS = ["In the beginning, God created the heavens and the earth.",
         "The earth was formless and empty.",
         "God saw the light, and saw that it was good.",
         "Yahweh, how my adversaries have increased!",
         "The servants' houses were burned.",
         "Abraham's son said: blah flurb the was of.",   # two sentences (split after the colon)
         "The earth was formless and empty."]             # a repeated verse: parsed once
VERSES = [tokenize(text, "en") for text in TEXTS]
CASED = [tokenize(text, "en", lowercase=False) for text in TEXTS]

# a stand-in for lg_worker.py: capitalized words get the given-name suffix .m (-> NNP), other words .n
FAKE_WORKER = textwrap.dedent('''
    import json, sys
    print(json.dumps({"ready": True, "version": "fake"}), flush=True)
    for line in sys.stdin:
        text = json.loads(line)["text"]
        words = " ".join(word + (".m" if word[0].isupper() else ".n") if word.isalpha() else word
                         for word in text.split())
        print(json.dumps({"kind": "full", "tree": "(S " + words + ")", "nulls": 0}), flush=True)
''')


def fake_worker(tmp_path, monkeypatch, script: str = FAKE_WORKER) -> None:
    path = tmp_path / f"worker-{hashlib.sha1(script.encode()).hexdigest()[:8]}.py"
    path.write_text(script)
    monkeypatch.setattr(parse, "WORKER_SCRIPT", path)


def rows(path: Path) -> dict[str, dict]:
    """The cache file's answers by sentence, read with sqlite3 directly."""
    with sqlite3.connect(path) as connection:
        return {sentence: json.loads(answer) for sentence, answer in
                connection.execute("SELECT sentence, answer FROM answers")}


def run(verses, cache, work, cased=None, **options):
    warnings = []
    result = parse.parse_verses(verses, cache, work, processes=options.pop("processes", 1), parser_verses=cased,
                                show_progress=False, warn=warnings.append, **options)
    return result, warnings


@link_grammar
def test_a_second_run_parses_nothing_and_gives_the_same_trees(tmp_path):
    cache = tmp_path / "parse.sqlite"
    first, warnings = run(VERSES, cache, tmp_path / "work", CASED, processes=2)
    assert warnings == []
    statistics = first.statistics
    assert statistics["sentences"] == 8 and statistics["distinct_sentences"] == 7
    assert statistics["sentences_parsed_this_run"] == 7 and statistics["sentences_from_cache_this_run"] == 0
    stored = rows(cache)
    assert set(stored) == {"In the beginning , God created the heavens and the earth .",
                           "The earth was formless and empty .", "God saw the light , and saw that it was good .",
                           "Yahweh , how my adversaries have increased !", "The servants ' houses were burned .",
                           "Abraham 's son said :", "blah flurb the was of ."}
    assert stored["The earth was formless and empty ."]["kind"] == "full"
    assert first.trees[1] == first.trees[6]
    again, warnings = run(VERSES, cache, tmp_path / "work", CASED, processes=2)
    assert warnings == [] and again.trees == first.trees
    assert again.statistics["sentences_parsed_this_run"] == 0
    assert again.statistics["sentences_from_cache_this_run"] == 7
    assert {k: v for k, v in again.statistics.items() if not k.endswith("_this_run") and k != "link_grammar_version"} \
        == {k: v for k, v in statistics.items() if not k.endswith("_this_run") and k != "link_grammar_version"}
    # the same trees as a run without any cache
    uncached, _ = run(VERSES, None, tmp_path / "work-uncached", CASED)
    assert uncached.trees == first.trees and not (tmp_path / "work-uncached" / "parse.sqlite").exists()


@link_grammar
def test_a_second_corpus_parses_only_the_sentences_it_adds(tmp_path):
    """Two 'recipes' on different, overlapping subsets of the same verses (in another order) and their
    own build directories share one cache: the second parses only its new sentences."""
    cache = tmp_path / "shared" / "parse.sqlite"
    first_subset, second_subset = [0, 1, 2, 3], [3, 5, 0, 4]
    first, _ = run([VERSES[i] for i in first_subset], cache, tmp_path / "a", [CASED[i] for i in first_subset])
    assert first.statistics["sentences_parsed_this_run"] == 4
    second, warnings = run([VERSES[i] for i in second_subset], cache, tmp_path / "b",
                           [CASED[i] for i in second_subset])
    assert warnings == []
    assert second.statistics["sentences_from_cache_this_run"] == 2                # verses 3 and 0
    assert second.statistics["sentences_parsed_this_run"] == 3                    # verse 5 (two) and verse 4
    assert second.trees[0] == first.trees[3] and second.trees[2] == first.trees[0]
    alone, _ = run([VERSES[i] for i in second_subset], None, tmp_path / "c", [CASED[i] for i in second_subset])
    assert second.trees == alone.trees
    assert len(rows(cache)) == 7


def test_a_killed_run_keeps_the_answers_it_had_stored(tmp_path, monkeypatch):
    """The worker kills the parsing process (SIGKILL) when it is given the 4th sentence: the answers
    stored batch by batch (2 a batch) survive, the 3rd (in a batch not yet stored) is lost."""
    killer = FAKE_WORKER.replace('    text = json.loads(line)["text"]\n',
                                 '    text = json.loads(line)["text"]\n'
                                 '    if "stop" in text:\n'
                                 '        import os, signal\n'
                                 '        os.kill(os.getppid(), signal.SIGKILL)\n'
                                 '        sys.exit(0)\n')
    script = tmp_path / "killer.py"
    script.write_text(killer)
    # one worker takes the sentences longest first: these lengths make "stop" the 4th
    texts = ["the first and by far the longest verse .", "the second verse is quite long .",
             "the third verse here .", "stop it now .", "go on ."]
    assert sorted(texts, key=len, reverse=True) == texts
    verses = [text.split() for text in texts]
    cache = tmp_path / "parse.sqlite"
    program = textwrap.dedent(f'''
        from pathlib import Path
        from decoder.data import parse
        parse.WORKER_SCRIPT = Path({str(script)!r})
        parse.parse_verses({verses!r}, Path({str(cache)!r}), Path({str(tmp_path / "work")!r}), processes=1,
                           batch_size=2, show_progress=False)
    ''')
    killed = subprocess.run([sys.executable, "-c", program], cwd=REPOSITORY, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPOSITORY)), timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert set(rows(cache)) == set(texts[:2])
    fake_worker(tmp_path, monkeypatch)
    result, warnings = run(verses, cache, tmp_path / "work")
    assert warnings == []
    assert result.statistics["sentences_from_cache_this_run"] == 2
    assert result.statistics["sentences_parsed_this_run"] == 3
    assert set(rows(cache)) == set(texts)


def test_two_processes_parse_into_one_cache_at_once(tmp_path, monkeypatch):
    """Two runs at the same time on overlapping corpora, storing 5 answers a transaction into one file:
    neither waits long enough to give up, and the file ends with every sentence of both."""
    script = tmp_path / "slow_fake_worker.py"   # 10 ms a sentence: the two runs' transactions interleave
    script.write_text(FAKE_WORKER.replace('    text = json.loads(line)["text"]\n',
                                          '    text = json.loads(line)["text"]\n    __import__("time").sleep(0.01)\n'))
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    verses = [f"the {a} saw the {b} .".split() for a in words for b in words]   # 100 distinct sentences
    cache = tmp_path / "parse.sqlite"
    program = textwrap.dedent(f'''
        import json, sys
        from pathlib import Path
        from decoder.data import parse
        parse.WORKER_SCRIPT = Path({str(script)!r})
        verses = json.loads(sys.argv[1])
        result = parse.parse_verses(verses, Path({str(cache)!r}), Path(sys.argv[2]), processes=1, batch_size=5,
                                    show_progress=False)
        print(json.dumps(result.trees))
    ''')
    subsets = {"a": verses[:70], "b": verses[30:]}
    processes = {name: subprocess.Popen([sys.executable, "-c", program, json.dumps(subset), str(tmp_path / name)],
                                        cwd=REPOSITORY, env=dict(os.environ, PYTHONPATH=str(REPOSITORY)),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for name, subset in subsets.items()}
    outputs = {name: process.communicate(timeout=300) for name, process in processes.items()}
    fake_worker(tmp_path, monkeypatch)
    for name, (stdout, stderr) in outputs.items():
        assert processes[name].returncode == 0 and "warning" not in stderr, stderr
        alone, _ = run(subsets[name], None, tmp_path / f"alone-{name}")
        assert json.loads(stdout) == alone.trees
    assert set(rows(cache)) == {" ".join(verse) for verse in verses}


def test_answers_are_stored_a_batch_at_a_time_and_when_interrupted(tmp_path, monkeypatch):
    """Ctrl-C while parsing: the answers that arrived are stored before the KeyboardInterrupt goes on."""
    fake_worker(tmp_path, monkeypatch)
    verses = [f"verse number {word} here .".split() for word in ("one", "two", "three", "four", "five")]
    arrived = []
    parse_texts = parse.WorkerPool.parse

    def interrupted_parse(pool, texts, progress=None, on_answer=None):
        def answer(index, value):
            on_answer(index, value)
            arrived.append(index)
            if len(arrived) == 3:
                raise KeyboardInterrupt
        return parse_texts(pool, texts, progress, answer)

    monkeypatch.setattr(parse.WorkerPool, "parse", interrupted_parse)
    cache = tmp_path / "parse.sqlite"
    with pytest.raises(KeyboardInterrupt):
        run(verses, cache, tmp_path / "work", batch_size=2)
    assert len(rows(cache)) == 3


def test_a_damaged_or_unusable_cache_file_is_a_warning_and_the_trees_are_the_same(tmp_path, monkeypatch):
    fake_worker(tmp_path, monkeypatch)
    verses = [text.split() for text in ("God made the sea .", "And Moses went up .", "it was so .")]
    reference, _ = run(verses, None, tmp_path / "work")
    good = tmp_path / "good.sqlite"
    run(verses, good, tmp_path / "work")

    not_a_database = tmp_path / "garbage.sqlite"
    not_a_database.write_bytes(b"this is not an SQLite file\n" * 200)
    truncated = tmp_path / "truncated.sqlite"
    content = good.read_bytes()
    truncated.write_bytes(content[:len(content) // 2])
    a_directory = tmp_path / "directory.sqlite"
    a_directory.mkdir()
    for path in (not_a_database, truncated, a_directory):
        result, warnings = run(verses, path, tmp_path / "work")
        assert result.trees == reference.trees, path
        assert len(warnings) == 1 and str(path) in warnings[0] and "parsing without it" in warnings[0], warnings
        assert result.statistics["sentences_parsed_this_run"] == 3
    assert not_a_database.read_bytes() == b"this is not an SQLite file\n" * 200   # left as it was

    # held by another process's write transaction for longer than the busy timeout
    monkeypatch.setattr(parse_cache, "BUSY_TIMEOUT_SECONDS", 0.2)
    with sqlite3.connect(good, isolation_level=None) as other:
        other.execute("BEGIN EXCLUSIVE")
        result, warnings = run(verses, good, tmp_path / "work")
        other.execute("ROLLBACK")
    assert result.trees == reference.trees
    assert len(warnings) == 1 and str(good) in warnings[0] and "locked" in warnings[0]


def test_a_row_whose_answer_does_not_fit_is_parsed_again(tmp_path, monkeypatch):
    fake_worker(tmp_path, monkeypatch)
    verses = [text.split() for text in ("God made the sea .", "And Moses went up .", "it was so .")]
    cache = tmp_path / "parse.sqlite"
    reference, _ = run(verses, cache, tmp_path / "work")
    with sqlite3.connect(cache) as connection:
        connection.execute("UPDATE answers SET answer = '[1, 2]' WHERE sentence = 'God made the sea .'")
        connection.execute("UPDATE answers SET answer = '{\"kind\": \"full\"' WHERE sentence = 'it was so .'")
    result, warnings = run(verses, cache, tmp_path / "work")
    assert warnings == [] and result.trees == reference.trees
    assert result.statistics["cache_rows_ignored_this_run"] == 2
    assert result.statistics["sentences_parsed_this_run"] == 2
    assert rows(cache) == {"God made the sea .": {"kind": "full", "tree": "(S God.m made.n the.n sea.n .)", "nulls": 0},
                           "And Moses went up .": {"kind": "full", "tree": "(S And.m Moses.m went.n up.n .)",
                                                   "nulls": 0},
                           "it was so .": {"kind": "full", "tree": "(S it.n was.n so.n .)", "nulls": 0}}


def legacy_file(work: Path, verses: list[list[str]], answers: list[list[dict]], settings=parse.ParserSettings()):
    """A chunk file as the earlier cache wrote it: named by the SHA-1 of the settings key and the verses'
    tab-joined tokens, a line {"answers": [...]} per verse."""
    digest = hashlib.sha1(json.dumps(
        {"hard_limit": settings.hard_limit, "language": settings.language, "linkage_limit": settings.linkage_limit,
         "max_parse_time": settings.max_parse_time, "max_sentence_tokens": settings.max_sentence_tokens,
         "min_sentence_tokens": settings.min_sentence_tokens}, sort_keys=True).encode())
    for tokens in verses:
        digest.update(("\t".join(tokens) + "\n").encode())
    path = work / f"parse-{digest.hexdigest()[:20]}.jsonl"
    work.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"answers": a}) + "\n" for a in answers), encoding="utf-8")
    return path


def verb(text: str) -> dict:
    """An answer unlike the fake worker's: every word a verb (.v -> VB)."""
    return {"kind": "full", "tree": "(S " + " ".join(w + ".v" if w.isalpha() else w for w in text.split()) + ")",
            "nulls": 0}


def test_the_earlier_chunk_files_seed_the_cache(tmp_path, monkeypatch):
    fake_worker(tmp_path, monkeypatch)
    texts = ["God made the sea .", "And Moses went up . He said so .", "it was so .", "the end came ."]
    verses = [text.split() for text in texts]
    work, cache = tmp_path / "work", tmp_path / "parse.sqlite"
    # chunks of 2 verses: the first has a file (the second verse's two sentences), the second has none
    legacy_file(work, verses[:2], [[verb(texts[0])], [verb("And Moses went up ."), verb("He said so .")]])
    result, warnings = run(verses, cache, work, legacy_chunk_verses=2)
    assert warnings == []
    assert result.statistics["earlier_chunk_files_read_this_run"] == 1
    assert result.statistics["sentences_from_earlier_chunk_files_this_run"] == 3
    assert result.statistics["sentences_parsed_this_run"] == 2
    # the file's answers (every open-class word a verb), not the fake worker's (nouns)
    assert result.trees[0] == "(TOP (S (VB God) (VB made) (DT the) (VB sea) (. .)))"
    assert result.trees[3] == "(TOP (S (DT the) (NN end) (NN came) (. .)))"
    assert rows(cache)["He said so ."] == verb("He said so .")
    # read into the cache: without the file, nothing is parsed and the trees are the same
    for path in work.glob("parse-*.jsonl"):
        path.unlink()
    again, _ = run(verses, cache, work, legacy_chunk_verses=2)
    assert again.trees == result.trees and again.statistics["sentences_parsed_this_run"] == 0


def test_earlier_chunk_lines_that_do_not_fit_are_parsed_again(tmp_path, monkeypatch):
    fake_worker(tmp_path, monkeypatch)
    texts = ["God made the sea .", "And Moses went up . He said so ."]
    verses = [text.split() for text in texts]
    work = tmp_path / "work"
    # the second verse has two sentences, its line one answer: only the first verse's answer is taken
    path = legacy_file(work, verses, [[verb(texts[0])], [verb(texts[1])]])
    result, warnings = run(verses, tmp_path / "parse.sqlite", work)
    assert result.statistics["sentences_from_earlier_chunk_files_this_run"] == 1
    assert result.statistics["sentences_parsed_this_run"] == 2
    assert len(warnings) == 1 and str(path) in warnings[0] and "line 2 " in warnings[0]
    assert result.trees[0] == "(TOP (S (VB God) (VB made) (DT the) (VB sea) (. .)))"
    # a file with another number of lines than its chunk's verses is ignored as a whole
    work2 = tmp_path / "work2"
    path = legacy_file(work2, verses, [[verb(texts[0])]])
    result, warnings = run(verses, tmp_path / "parse2.sqlite", work2)
    assert result.statistics["sentences_from_earlier_chunk_files_this_run"] == 0
    assert len(warnings) == 1 and str(path) in warnings[0] and "1 lines for the 2 verses" in warnings[0]


@link_grammar
def test_one_process_two_and_a_dask_cluster_write_the_same_trees(tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="parsing on a cluster needs the `cluster` extra: dask[distributed]")
    from decoder.cluster import connect
    from decoder.train.parse import parse_file

    tokens, cased = tmp_path / "train.tok.tgt", tmp_path / "train.cased.tgt"
    tokens.write_text("".join(" ".join(v) + "\n" for v in VERSES), encoding="utf-8")
    cased.write_text("".join(" ".join(v) + "\n" for v in CASED), encoding="utf-8")
    monkeypatch.setattr(parse, "BATCH_SENTENCES", 3)   # several tasks on the cluster
    files = {}
    for name, workers in (("one", 1), ("two", 2)):
        parse_file(tokens, cased, tmp_path / f"{name}.trees", tmp_path / f"{name}.sqlite", tmp_path / name, workers,
                   progress=False)
        files[name] = (tmp_path / f"{name}.trees").read_bytes()
    with connect("local:2") as client:
        statistics = parse_file(tokens, cased, tmp_path / "dask.trees", tmp_path / "dask.sqlite", tmp_path / "dask",
                                1, progress=False, client=client)
    files["dask"] = (tmp_path / "dask.trees").read_bytes()
    assert files["one"].count(b"\n") == len(VERSES)
    assert files["two"] == files["one"] and files["dask"] == files["one"]
    assert statistics["dask_cluster"] and rows(tmp_path / "dask.sqlite") == rows(tmp_path / "one.sqlite")


def test_the_cache_location_is_not_part_of_the_parse_stage_fingerprint(tmp_path):
    from decoder.train.pipeline import TrainSettings, build_stages, parse_cache_path
    from decoder.train.stages import Runner

    source, target = tmp_path / "c.es", tmp_path / "c.en"
    stages = {}
    for name, cache in (("default", None), ("shared", tmp_path / "shared" / "parse.sqlite")):
        settings = TrainSettings(source, target, "es", "en", tmp_path / "sys", parse_cache=cache)
        stages[name] = next(stage for stage in build_stages(settings) if stage.name == "parse")
        assert parse_cache_path(settings) == (cache or tmp_path / "sys" / "cache" / "parse.sqlite")
    (tmp_path / "sys" / "corpus").mkdir(parents=True)
    for name in ("train.tok.tgt", "train.cased.tgt"):
        (tmp_path / "sys" / "corpus" / name).write_text("a b c\n", encoding="utf-8")
    runner = Runner(tmp_path / "sys")
    assert runner.fingerprint(stages["default"]) == runner.fingerprint(stages["shared"])


def test_the_shared_cache_is_beside_the_builds_and_ignored_by_git(tmp_path, monkeypatch):
    clone = tmp_path / "clone"
    (clone / "models" / "bible-es-en").mkdir(parents=True)
    monkeypatch.setattr(build, "PACKAGE_PARENT", clone)
    assert build.shared_parse_cache() == clone / "models" / "cache" / "parse.sqlite"
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(build, "PACKAGE_PARENT", site)
    monkeypatch.setenv("CKY_DATA", str(tmp_path / "data"))
    assert build.shared_parse_cache() == tmp_path / "data" / "cache" / "parse.sqlite"
    monkeypatch.delenv("CKY_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert build.shared_parse_cache() == tmp_path / "home" / ".cache" / "cky-decoder" / "cache" / "parse.sqlite"
    if not (REPOSITORY / ".git").exists():
        pytest.skip("not a git checkout")
    names = [f"models/cache/parse.sqlite{suffix}" for suffix in ("", "-wal", "-shm")]
    ignored = subprocess.run(["git", "check-ignore", *names], cwd=REPOSITORY, capture_output=True, text=True)
    assert ignored.stdout.split() == names


@link_grammar
def test_cky_train_systems_share_a_parse_cache_and_its_place_changes_no_stage(tmp_path, monkeypatch):
    """Two systems on corpora that share sentences, one --parse-cache: the second parses only what the
    first did not (here nothing: its corpus is the first's second half); the first system run again
    with another cache file skips every stage. Alignment is a stand-in, the LM given."""
    from decoder.train.pipeline import TrainSettings, train
    from train_corpus import write_corpus
    from train_fakes import monotone_align, write_lm

    source, target = write_corpus(tmp_path, "corpus", 60, seed=1)
    half = tmp_path / "half"
    half.mkdir()
    for path in (source, target):
        (half / path.name).write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[30:]),
                                      encoding="utf-8")
    lm = write_lm(target, tmp_path / "lm.arpa")
    shared = tmp_path / "shared" / "parse.sqlite"

    def settings(source, target, out, cache):
        return TrainSettings(source, target, "es", "en", out, lm=lm, tune=False, progress=False, parse_cache=cache)

    first = train(settings(source, target, tmp_path / "one", shared), implementations={"align": monotone_align})
    assert "parse" in first["ran"] and len(rows(shared)) > 0
    assert not (tmp_path / "one" / "cache" / "parse.sqlite").exists()
    stored = rows(shared)
    monkeypatch.setattr(parse, "WORKER_SCRIPT", tmp_path / "missing.py")   # parsing anything would fail
    second = train(settings(half / source.name, half / target.name, tmp_path / "two", shared),
                   implementations={"align": monotone_align})
    assert "parse" in second["ran"] and rows(shared) == stored
    again = train(settings(source, target, tmp_path / "one", tmp_path / "elsewhere.sqlite"),
                  implementations={"align": monotone_align})
    assert again["ran"] == [] and "parse" in again["skipped"]


def test_the_parse_cache_flag_reaches_the_settings(tmp_path, monkeypatch):
    from decoder.cli import main as cky_main
    from decoder.train import pipeline

    seen = {}

    def fake_train(settings, from_stage=None):
        seen["settings"] = settings
        raise SystemExit(0)

    monkeypatch.setattr(pipeline, "train", fake_train)
    with pytest.raises(SystemExit):
        cky_main(["train", "--source", "a", "--target", "b", "--source-lang", "es", "--target-lang", "en",
                  "--out", str(tmp_path / "sys"), "--parse-cache", str(tmp_path / "p.sqlite")])
    assert seen["settings"].parse_cache == tmp_path / "p.sqlite"
