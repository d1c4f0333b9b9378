"""An experimental setting reaches the compiled search, from every place it can be given: a config's
[experimental] table, the old place beside the other keys (with a warning), and `cky translate
--experimental KEY=VALUE`. Measured by its effect: pop_count = "real" with a small virtual_pop_limit changes
the hyperedges cube pruning builds on random grammars whose binarization made virtual symbols."""
import json
import warnings

import pytest

from decoder.decoder import Decoder

from cli_fixtures import run_cky
from search_fixtures import WEIGHTS, random_sentence
from test_search_chart import models, stores  # noqa: F401 (fixtures: the LMs, stores of random grammars)

SEEDS = range(6)
EXPERIMENTAL = '[experimental]\npop_count = "real"\nvirtual_pop_limit = 1\n'


def write_config(tmp_path, store, lm, name, extra=""):
    weights = "".join(f"{feature} = {value}\n" for feature, value in WEIGHTS.items())
    path = tmp_path / name
    path.write_text(f'store = "{store.path}"\nlm = "{lm.path}"\n[search]\npop_limit = 2\nmax_unary_depth = 0\n'
                    f"{extra}[weights]\n{weights}")
    return path


def edges(decoder, words) -> int:
    return decoder.translate(" ".join(words)).stats["edges_proposed"]


def test_the_experimental_table_changes_the_search(models, stores, tmp_path):
    _, lm = models
    changed = 0
    for seed in SEEDS:
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 9)
        plain = Decoder.from_config(write_config(tmp_path, store, lm, f"plain{seed}.toml"))
        real = Decoder.from_config(write_config(tmp_path, store, lm, f"real{seed}.toml", EXPERIMENTAL))
        assert not plain.chart.engine.pop_count_real and real.chart.engine.pop_count_real
        assert real.chart.engine.virtual_pop_limit == 1
        changed += edges(plain, words) != edges(real, words)
        # a config written before the table (the keys in [search]) gives the same search, with a warning
        with pytest.warns(FutureWarning, match=r"\[experimental\]"):
            old = Decoder.from_config(write_config(tmp_path, store, lm, f"old{seed}.toml",
                                                   'pop_count = "real"\nvirtual_pop_limit = 1\n'))
        assert edges(old, words) == edges(real, words)
    assert changed >= 2


def test_the_command_lines_experimental_flag_changes_the_search(models, stores, tmp_path):
    _, lm = models
    changed = 0
    for seed in SEEDS:
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        config = write_config(tmp_path, store, lm, f"cli{seed}.toml")
        sentence = (" ".join(random_sentence(seed, 9)) + "\n").encode()
        counts = []
        for flags in ([], ["--experimental", "pop_count=real", "--experimental", "virtual_pop_limit=1"]):
            stats = tmp_path / f"stats{seed}-{len(flags)}.jsonl"
            code, _, err = run_cky(["translate", "--config", str(config), "--quiet", "--stats-out", str(stats),
                                    *flags], sentence)
            assert code == 0, err
            counts.append(json.loads(stats.read_text())["edges_proposed"])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (the flag is the new place: no warning)
            direct = Decoder.from_config(config, experimental={"pop_count": "real", "virtual_pop_limit": 1})
        assert counts[1] == edges(direct, random_sentence(seed, 9))
        changed += counts[0] != counts[1]
    assert changed >= 2


@pytest.mark.parametrize("flag, message", [("pop_cont=real", "unknown experimental setting `pop_cont`"),
                                           ("pop_count=some", "`pop_count` must be one of"),
                                           ("pop_count", "is not KEY=VALUE"),
                                           ("rule_lookahead=0.5", "unknown experimental setting `rule_lookahead`")])
def test_a_bad_experimental_flag_is_a_usage_error_naming_it(flag, message, capsys):
    from decoder.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["translate", "--store", "s", "--lm", "l", "--experimental", flag])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --experimental" in err and message in err
