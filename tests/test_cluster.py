"""Decoding on a Dask LocalCluster of 2 worker processes (decoder.cluster): the same translations
as the Decoder in this process, in input order, failures isolated, and a worker killed mid-run
losing and duplicating no line; the TCP path with a scheduler and `dask worker` processes."""
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed", reason="decoding on a cluster needs the `cluster` extra: dask[distributed]")

from decoder.cluster import connect, translate_on_cluster, iter_translate_on_cluster  # noqa: E402
from decoder.batch import failed as is_failed  # noqa: E402
from decoder.decoder import Decoder  # noqa: E402
from test_decoder import model  # noqa: E402,F401  (the shared decoder fixture)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCES = ["la casa verde es pequeña", "", "un perro es verde", "el ☃ casa", "la casa", "el perro es pequeña",
             "la [ casa ] |", "la casa es pequeña " * 3]


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
            tcp_client.wait_for_workers(2, timeout=60)
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
