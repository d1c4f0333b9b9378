"""Decoding on a Dask LocalCluster of 2 worker processes (decoder.cluster): the same translations
as the Decoder in this process, in input order, failures isolated, and a worker killed mid-run
losing and duplicating no line; the TCP path with a scheduler and `dask worker` processes;
`cky translate --cluster` (the same files as --workers 1, --resume, a worker killed mid-run) and
`Decoder.translate_batch(cluster=...)`."""
import json
import logging
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed", reason="decoding on a cluster needs the `cluster` extra: dask[distributed]")

from decoder.cluster import connect, translate_on_cluster, iter_translate_on_cluster  # noqa: E402
from decoder.batch import failed as is_failed  # noqa: E402
from decoder.decoder import Decoder  # noqa: E402
from cli_fixtures import run_cky, start_cky  # noqa: E402
from test_decoder import model  # noqa: E402,F401  (the shared decoder fixture)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCES = ["la casa verde es pequeña", "", "un perro es verde", "el ☃ casa", "la casa", "el perro es pequeña",
             "la [ casa ] |", "la casa es pequeña " * 3]


# How long a worker may take to start (import the decoder, load the model) on a loaded 2-core machine,
# e.g. the one its nanny starts after a test kills it.
WORKER_START_SECONDS = 180


# Jobs are made by functions so that Dask sends them by value (the workers need not import this module).
def make_failing_job():
    def job(decoder, sentence):
        if "perro" in sentence:
            raise RuntimeError("forced failure")
        return decoder.translate(sentence)
    return job


def make_slow_job(seconds):
    def job(decoder, sentence):
        import os
        import time

        time.sleep(seconds)
        return sentence, decoder.translate(sentence).text, os.getpid()
    return job


@pytest.fixture(scope="module")
def client():
    with connect("local:2") as client:
        yield client


def test_translations_in_order_as_on_one_machine(client, model):  # noqa: F811
    config = model / "config.toml"
    here = Decoder.from_config(config)
    sentences = SENTENCES * 3
    results = translate_on_cluster(client, config, sentences, shard_size=3)
    assert len(results) == len(sentences)
    for sentence, result in zip(sentences, results):
        expected = here.translate(sentence)
        assert (result.source, result.text, result.tree) == (expected.source, expected.text, expected.tree)
        assert result.score == pytest.approx(expected.score)


def test_a_failing_sentence_is_a_failure_with_its_line_and_the_rest_translate(client, model):  # noqa: F811
    results = translate_on_cluster(client, model / "config.toml", SENTENCES, job=make_failing_job(), shard_size=2)
    failed = [(i, r) for i, r in enumerate(results) if is_failed(r)]
    assert [(i + 1, r.source) for i, r in failed] == [(3, SENTENCES[2]), (6, SENTENCES[5])]
    assert all("forced failure" in r.error for _, r in failed)
    assert results[0].text == "the green house is small" and results[4].text == "the house"


def test_a_worker_killed_mid_run_loses_and_duplicates_no_line(client, model):  # noqa: F811
    sentences = [f"la casa {i}" for i in range(40)]  # distinct: "i" passes through
    client.wait_for_workers(2, timeout=WORKER_START_SECONDS)  # (a loaded machine may still be starting one)
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2
    seen, killed = [], None
    for index, (sentence, text, pid) in iter_translate_on_cluster(client, model / "config.toml", sentences,
                                                                  job=make_slow_job(0.05), shard_size=2):
        seen.append((index, sentence, text, pid))
        if killed is None:
            killed = pid
            os.kill(pid, signal.SIGKILL)  # the worker that just delivered a shard: it has more queued
    # killed mid-run: the last shards (tasks run in submission order) ran after the kill, elsewhere
    assert seen[-1][3] != killed and seen[-2][3] != killed
    assert [index for index, *_ in seen] == list(range(len(sentences)))  # every line once, in order
    assert [(sentence, text) for _, sentence, text, _ in seen] == [(s, f"the house {i}")
                                                                   for i, s in enumerate(sentences)]
    assert killed not in client.run(os.getpid).values()  # gone (its nanny started a new worker)


def make_sigint_probe():
    def ignores_ctrl_c():
        import signal

        return signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    return ignores_ctrl_c


def test_local_workers_ignore_ctrl_c_and_this_process_does_not(client):
    """A terminal's Ctrl-C goes to the whole process group: `cky translate --cluster local` stops the
    cluster itself, so its nannies and workers must not each print a KeyboardInterrupt traceback."""
    client.wait_for_workers(2, timeout=WORKER_START_SECONDS)  # with the one started again after test_a_worker_killed_mid_run_...
    assert all(client.run(make_sigint_probe()).values())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_cluster_specs(client):
    with pytest.raises(ValueError, match="local:N"):
        connect("local:two")
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        connect("somewhere")


def test_a_scheduler_and_two_dask_workers_over_tcp(model, tmp_path):  # noqa: F811
    scheduler_file = tmp_path / "scheduler.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    cli = [sys.executable, "-m"]
    processes = [subprocess.Popen(cli + ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                                             "--dashboard-address", ":0", "--scheduler-file", str(scheduler_file)],
                                  cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 30
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the dask scheduler did not start"
            time.sleep(0.1)
        for _ in range(2):
            processes.append(subprocess.Popen(
                cli + ["distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1",
                           "--host", "127.0.0.1", "--no-dashboard", "--no-nanny"],
                cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        import json

        from distributed import Client

        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        with connect(address) as tcp_client:
            tcp_client.wait_for_workers(2, timeout=WORKER_START_SECONDS)
            results = translate_on_cluster(tcp_client, model / "config.toml", SENTENCES, shard_size=2)
            assert isinstance(tcp_client, Client)
        assert [r.text for r in results][:2] == ["the green house is small", ""]
        assert len(results) == len(SENTENCES)
    finally:
        for process in reversed(processes):  # workers first, then the scheduler
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:  # a worker still closing (or starting) on a loaded machine
                process.kill()
                process.wait(10)


# ---- cky translate --cluster and Decoder.translate_batch(cluster=...) -------------------------------

CLI_LINES = ["la casa verde es pequeña", "el perro", "", "un perro es verde", "el ☃ casa", "la casa es pequeña",
             "la [ casa ] |", "es verde"]


def make_slow_decoder(seconds):
    """For client.run: the workers' Decoder.translate sleeps first (a worker that replaces a dead one is fast)."""
    def patch():
        import time

        from decoder.decoder import Decoder

        original = Decoder.__dict__.get("_unpatched_translate", Decoder.translate)
        Decoder._unpatched_translate = original

        def translate(self, sentence):
            time.sleep(seconds)
            return original(self, sentence)
        Decoder.translate = translate if seconds else original
    return patch


@pytest.fixture
def slow_workers(client):
    client.wait_for_workers(2, timeout=WORKER_START_SECONDS)  # a worker killed by an earlier test is replaced by now
    client.run(make_slow_decoder(0.1))
    yield
    client.run(make_slow_decoder(0))


def translate_argv(model, source, out, *more):  # noqa: F811
    return ["translate", "--config", str(model / "config.toml"), "--quiet", "--input", str(source),
            "--output", str(out), *more]


def wait_for(condition, seconds=60, what="the condition"):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def lines_done(out) -> int:
    try:
        return json.loads(pathlib.Path(f"{out}.progress.json").read_text())["lines_done"]
    except (OSError, ValueError):  # not written yet, or being replaced
        return 0


def without_times(stats: bytes) -> list:
    records = [json.loads(line) for line in stats.decode().splitlines()]
    return [{key: value for key, value in record.items() if not key.endswith("seconds")} for record in records]


def test_cli_on_a_local_cluster_writes_the_files_of_one_worker(model, tmp_path):  # noqa: F811
    source = tmp_path / "in.txt"
    source.write_bytes(("\n".join(CLI_LINES * 3) + "\n").encode() + b"\xff bad utf-8\n")
    files = {}
    for run, flags in (("one", ["--workers", "1"]), ("dask", ["--cluster", "local:2"])):
        directory = tmp_path / run
        directory.mkdir()
        side = ["--kbest", "3", "--kbest-out", str(directory / "kbest"), "--trees-out", str(directory / "trees"),
                "--stats-out", str(directory / "stats")]
        code, _, err = run_cky(translate_argv(model, source, directory / "out", *side, *flags))
        assert code == 1 and "1 of 25 lines failed" in err, err  # the line that is not UTF-8
        files[run] = {name: (directory / name).read_bytes() for name in ("out", "kbest", "trees", "stats")}
    for name in ("out", "kbest", "trees"):
        assert files["dask"][name] == files["one"][name], name
    assert without_times(files["dask"]["stats"]) == without_times(files["one"]["stats"])
    assert files["dask"]["out"].count(b"\n") == 25 and b"the green house is small\n" in files["dask"]["out"]


def test_cli_resumes_a_killed_cluster_run(client, slow_workers, model, tmp_path, caplog):  # noqa: F811
    lines = [f"la casa {i}" for i in range(40)]
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    process = start_cky(translate_argv(model, source, out, "--cluster", client.scheduler.address),
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: lines_done(out) >= 8, what="a checkpoint of 8 lines")
    finally:
        process.kill()
        process.wait()
    assert lines_done(out) < len(lines)  # killed mid-run
    caplog.set_level(logging.INFO, logger="cky.batch")
    code, _, err = run_cky(translate_argv(model, source, out, "--cluster", client.scheduler.address, "--resume"))
    assert code == 0 and "resuming at line" in caplog.text, err
    assert out.read_text(encoding="utf-8") == "".join(f"the house {i}\n" for i in range(40))
    assert not os.path.exists(f"{out}.progress.json")


def test_cli_loses_and_duplicates_no_line_when_a_worker_is_killed(client, slow_workers, model, tmp_path):  # noqa: F811
    lines = [f"la casa {i}" for i in range(40)]
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    workers = set(client.run(os.getpid).values())
    process = start_cky(translate_argv(model, source, out, "--cluster", client.scheduler.address),
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: lines_done(out) >= 1, what="a first line")
    victim = workers.pop()
    os.kill(victim, signal.SIGKILL)
    assert lines_done(out) < len(lines)  # killed mid-run
    code = process.wait(timeout=120)
    with process.stderr:
        assert code == 0, process.stderr.read()
    assert out.read_text(encoding="utf-8") == "".join(f"the house {i}\n" for i in range(40))
    wait_for(lambda: victim not in client.run(os.getpid).values(), what="the scheduler to drop the killed worker")
    client.wait_for_workers(2, timeout=WORKER_START_SECONDS)  # its nanny started another


def test_decoder_translate_batch_on_a_cluster_keeps_its_settings(client, model):  # noqa: F811
    here = Decoder.from_config(model / "config.toml", pop_limit=1)
    expected = [t.text for t in here.translate_batch(CLI_LINES)]
    assert [t.text for t in here.translate_batch(CLI_LINES, cluster=client)] == expected
    on_cluster = client.run(lambda dask_worker: [p.decoder.settings["pop_limit"] for name, p in
                                                 dask_worker.plugins.items() if name.startswith("cky-decoder:")])
    assert any(1 in limits for limits in on_cluster.values())  # the workers decode with pop_limit 1, not 50
    with pytest.raises(TypeError, match="list of sentences"):
        here.translate_batch("la casa", cluster=client)


def test_an_unreachable_scheduler_is_one_clear_line(model, tmp_path):  # noqa: F811
    import socket

    with socket.socket() as s:  # a free port: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import decoder.cluster

    (tmp_path / "in.txt").write_text("la casa\n")
    saved, decoder.cluster.CONNECT_SECONDS = decoder.cluster.CONNECT_SECONDS, 1
    try:
        code, _, err = run_cky(translate_argv(model, tmp_path / "in.txt", tmp_path / "out", "--cluster",
                                              f"tcp://127.0.0.1:{port}"))
    finally:
        decoder.cluster.CONNECT_SECONDS = saved
    assert code == 1 and err.splitlines()[-1].startswith(f"cky translate: tcp://127.0.0.1:{port}: cannot reach"), err
    assert "Traceback" not in err


def test_workers_and_cluster_together_is_a_usage_error(model, tmp_path):  # noqa: F811
    code, _, err = run_cky(translate_argv(model, tmp_path / "in", tmp_path / "out", "--workers", "2",
                                          "--cluster", "local:2"))
    assert code == 2 and "not both" in err


# ---- cky extract --cluster ------------------------------------------------------------------------------

def test_cli_extract_on_a_cluster_writes_the_table_of_one_process(client, tmp_path):
    import gzip

    from decoder.extract.synthetic import write_corpus

    corpus = write_corpus(str(tmp_path / "corpus"), 150, seed=11)
    outputs = {}
    for run, flags in (("one", ["--jobs", "1"]), ("dask", ["--cluster", client.scheduler.address])):
        out = tmp_path / run
        argv = ["extract", "--source", corpus["es"], "--trees", corpus["trees"], "--alignment", corpus["align"],
                "--out", str(out / "rules.gz"), "--glue", str(out / "glue.gz"), "--summary", str(out / "summary.json"),
                "--unknown-labels", str(out / "unknown.txt"), "--shards", "5", "--chunk-size", "17",
                "--no-progress", *flags]
        code, _, err = run_cky(argv)
        assert code == 0, err
        outputs[run] = {"rules": gzip.decompress((out / "rules.gz").read_bytes()),
                        "glue": gzip.decompress((out / "glue.gz").read_bytes()),
                        "unknown": (out / "unknown.txt").read_bytes(),
                        "summary": json.loads((out / "summary.json").read_text())}
    assert outputs["one"]["rules"].count(b"\n") > 100
    for name in ("rules", "glue", "unknown"):
        assert outputs["dask"][name] == outputs["one"][name], name  # exactly, not only after sorting
    one, dask = outputs["one"]["summary"], outputs["dask"]["summary"]
    for key in ("sentence_pairs", "minimal_rules", "composed_rules", "distinct_rules", "nonterminals_per_rule"):
        assert dask[key] == one[key], key
    assert dask["jobs"] == 2  # the cluster's workers
