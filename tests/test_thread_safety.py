"""One `Decoder` shared by several threads: its calls into the compiled search are serialized by a lock
(decoder.decoder, "Threads"), so 8 threads translating (and asking for k-best lists) at once get exactly
the results of the same calls made one after another. Without the lock the threads share one chart
and crash the process or return each other's translations."""
import threading

import pytest

from decoder.binarize import binarize
from decoder.decoder import Decoder
from decoder.lm import LanguageModel
from decoder.store import GrammarStore, write_store

from search_fixtures import FEATURES, WEIGHTS, random_rules, random_sentence, write_arpa

THREADS = 8


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "icr"
    write_store(binarize(random_rules(7, n_rules=60, max_arity=3), "icr"), path, feature_names=FEATURES)
    lm = LanguageModel(write_arpa(tmp_path_factory.mktemp("lm")))
    return Decoder(GrammarStore.open(path), lm, WEIGHTS, pop_limit=200)


def sentences():
    """Sentences of several lengths: the charts differ in size, so interleaved searches overlap."""
    return [" ".join(random_sentence(seed, 6 + seed % 9)) for seed in range(24)]


def outcome(decoder, sentence, kbest):
    if kbest:
        return [(h.text, round(h.score, 9)) for h in decoder.kbest(sentence, 5, unique=False)]
    t = decoder.translate(sentence)
    return t.text, round(t.score, 9), t.tree


def run_threads(decoder, jobs, outcome_of=None):
    """outcome_of(decoder, *job) (default: outcome) of every job, by THREADS threads taking jobs in turn;
    errors are kept as results."""
    outcome_of = outcome_of or outcome
    results = [None] * len(jobs)
    start = threading.Barrier(THREADS)

    def work(t):
        start.wait()
        for index in range(t, len(jobs), THREADS):
            try:
                results[index] = outcome_of(decoder, *jobs[index])
            except Exception as error:  # a wrong answer, not a lost thread
                results[index] = repr(error)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_threads_on_one_decoder_get_the_sequential_results(decoder):
    jobs = [(sentence, False) for sentence in sentences()] * 3
    expected = [outcome(decoder, *job) for job in jobs]
    for _ in range(3):
        assert run_threads(decoder, jobs) == expected


def test_threads_mixing_translate_and_kbest(decoder):
    jobs = [(sentence, index % 2 == 1) for index, sentence in enumerate(sentences())] * 2
    expected = [outcome(decoder, *job) for job in jobs]
    assert run_threads(decoder, jobs) == expected


def test_reconfigure_while_translating_is_serialized(decoder):
    """reconfigure takes the lock too: a thread changing the pop limit back and forth never leaves
    another thread searching a half-configured engine (each result is one of the two settings')."""
    sentence = sentences()[5]
    results = {}
    for limit in (20, 200):
        decoder.reconfigure(pop_limit=limit)
        results[limit] = outcome(decoder, sentence, False)
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            for limit in (20, 200):
                decoder.reconfigure(pop_limit=limit)

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        seen = run_threads(decoder, [(sentence, False)] * 40)
    finally:
        stop.set()
        flipper.join()
        decoder.reconfigure(pop_limit=200)
    assert all(result in results.values() for result in seen), seen
