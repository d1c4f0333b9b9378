"""The per-sentence memory budget (search setting memory_budget_mb) and the k-best bound (MAX_KBEST).

A pathological line (thousands of repeated words) fails alone, quickly, with a message naming the setting
and the budget, and the other lines of the batch are translated as they would be alone; the budget's
accounting does not change the search; a k-best request beyond MAX_KBEST is a ValueError, and one over
the budget a MemoryBudgetError; an allocation failure inside the compiled search (a process under a
memory limit) fails that sentence with MemoryError instead of printing ignored exceptions forever."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from decoder.binarize import binarize
from decoder.decoder import Decoder
from decoder.errors import ChartLimitError, MemoryBudgetError
from decoder.lm import LanguageModel
from decoder.settings import DEFAULT_SEARCH_SETTINGS, MAX_KBEST
from decoder.store import GrammarStore, write_store

from search_fixtures import FEATURES, WEIGHTS, random_rules, random_sentence, write_arpa

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("model")
    write_store(binarize(random_rules(7, n_rules=60, max_arity=3), "icr"), directory / "store",
                feature_names=FEATURES)
    return GrammarStore.open(directory / "store"), LanguageModel(write_arpa(directory))


def decoder(model, **settings):
    store, lm = model
    return Decoder(store, lm, WEIGHTS, **{"pop_limit": 100, **settings})


def repeated(n_words: int) -> str:
    return " ".join((random_sentence(1, 5) * n_words)[:n_words])


def result(t):
    return t.text, round(t.score, 9), t.tree, t.stats["items"], t.stats["edges"]


def test_the_default_budget():
    assert DEFAULT_SEARCH_SETTINGS.memory_budget_mb == 2048
    assert MAX_KBEST == 10_000


def test_a_pathological_line_fails_alone_with_a_clear_message(model):
    """Lines of 3,000 repeated words (over the budget before the search: the chart's per-cell tables alone)
    and of 1,000 (over it while the chart grows) fail; the others are translated as alone."""
    short = [" ".join(random_sentence(seed, 8 + seed)) for seed in range(3)]
    lines = [short[0], repeated(3000), short[1], repeated(1000), short[2]]
    unbounded = decoder(model, memory_budget_mb=0)
    expected = [result(unbounded.translate(line)) for line in short]
    started = time.perf_counter()
    translations = decoder(model, memory_budget_mb=50).translate_batch(lines)
    assert time.perf_counter() - started < 10
    for index in (1, 3):
        error = translations[index].error
        assert error and "MemoryBudgetError" in error and "memory_budget_mb = 50" in error, error
        assert "\n" not in error
    assert "per-cell tables" in translations[1].error
    assert "went over" in translations[3].error
    assert [result(translations[i]) for i in (0, 2, 4)] == expected


def test_the_sentence_after_a_failed_one_is_unharmed(model):
    bounded = decoder(model, memory_budget_mb=50)
    line = " ".join(random_sentence(4, 12))
    before = result(bounded.translate(line))
    with pytest.raises(MemoryBudgetError, match="went over memory_budget_mb = 50"):
        bounded.translate(repeated(1000))
    assert result(bounded.translate(line)) == before


def test_the_budget_does_not_change_the_search(model):
    """The accounting only counts: under any budget a sentence fits, the search is the same."""
    lines = [" ".join(random_sentence(seed, 5 + 2 * seed)) for seed in range(8)] + [repeated(300)]
    runs = [[result(decoder(model, memory_budget_mb=mb).translate(line)) for line in lines] for mb in (0, 2048, 50)]
    assert runs[0] == runs[1] == runs[2]
    incremental = [[result(decoder(model, search="incremental", memory_budget_mb=mb).translate(line))
                    for line in lines] for mb in (0, 50)]
    assert incremental[0] == incremental[1]


@pytest.mark.parametrize("search", ["incremental", "two-pass"])
def test_the_other_searches_have_the_budget_too(model, search):
    with pytest.raises(MemoryBudgetError, match="went over memory_budget_mb = 50"):
        decoder(model, search=search, memory_budget_mb=50).translate(repeated(1000))


def test_the_chart_limit_message_names_the_pop_limit(model):
    bounded = decoder(model)
    bounded.chart.engine.chart_limit = 1000
    with pytest.raises(ChartLimitError) as caught:
        bounded.translate(repeated(100))
    message = str(caught.value)
    assert "pop_limit = 100" in message and "set a pop limit" not in message, message
    unlimited = decoder(model, pop_limit=0)
    unlimited.chart.engine.chart_limit = 1000
    with pytest.raises(ChartLimitError, match="pop_limit = 0 .no limit. is for short sentences; set a pop limit"):
        unlimited.translate(repeated(100))


def test_kbest_beyond_the_maximum_is_refused(model):
    bounded = decoder(model)
    line = " ".join(random_sentence(2, 6))
    with pytest.raises(ValueError, match="at most 10,000"):
        bounded.kbest(line, MAX_KBEST + 1)
    with pytest.raises(ValueError, match="at most 10,000"):
        bounded.kbest(line, 10 ** 6)
    assert len(bounded.kbest(line, MAX_KBEST, unique=False)) >= 1


def test_kbest_over_the_budget_fails_and_the_decoder_goes_on(model):
    bounded = decoder(model, memory_budget_mb=3)  # the chart fits, 10,000 derivations do not
    line = " ".join(random_sentence(5, 30))
    best = result(bounded.translate(line))
    with pytest.raises(MemoryBudgetError, match="k-best search went over memory_budget_mb = 3"):
        bounded.kbest(line, MAX_KBEST, unique=False)
    assert [h.text for h in bounded.kbest(line, 3, unique=False)] == \
        [h.text for h in decoder(model, memory_budget_mb=0).kbest(line, 3, unique=False)]
    assert result(bounded.translate(line)) == best


ALLOCATION_FAILURE = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, {tests!r})
    from search_fixtures import FEATURES, WEIGHTS, random_rules, random_sentence, write_arpa
    from decoder.decoder import Decoder
    from decoder.lm import LanguageModel
    from decoder.store import GrammarStore
    decoder = Decoder(GrammarStore.open({store!r}), LanguageModel({lm!r}), WEIGHTS, pop_limit=100,
                      memory_budget_mb=0)
    short = " ".join(random_sentence(1, 8))
    expected = decoder.translate(short).text
    with open("/proc/self/status") as status:
        size = [int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize")][0]
    resource.setrlimit(resource.RLIMIT_AS, (size + {headroom} * 2 ** 20, resource.RLIM_INFINITY))
    for n in (1000, 5000):
        try:
            decoder.translate(" ".join((random_sentence(1, 5) * n)[:n]))
            print("translated")
        except MemoryError as error:
            print(type(error).__name__, error)
    print("short", decoder.translate(short).text == expected)
""")


def test_an_allocation_failure_fails_the_sentence(model, tmp_path):
    """Under a memory limit (as `ulimit -v`) and no budget, std::bad_alloc inside the compiled search
    becomes a MemoryError for that sentence (never "Exception ignored in ..." and a process that never
    ends), and the next sentence is translated."""
    store, lm = model
    bad_allocs = 0
    for headroom in (55, 70, 150):
        script = ALLOCATION_FAILURE.format(tests=HERE, store=store.path, lm=lm.path, headroom=headroom)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Exception ignored" not in done.stderr and len(done.stderr) < 2000, done.stderr[-2000:]
        lines = done.stdout.splitlines()
        assert len(lines) == 3 and lines[-1] == "short True", done.stdout
        assert "MemoryError" in lines[1], done.stdout  # 5,000 words: 1.1 GB of per-cell tables
        bad_allocs += sum("std::bad_alloc" in line for line in lines)
    assert bad_allocs >= 2
