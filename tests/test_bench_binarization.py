"""`cky bench --binarization`: the grammar statistics of Zhang et al. 2006 and Table 2 of Xiao et al. 2009
on hand-made rule tables whose answers are worked out by hand, and the command end to end on the fixture
system from a directory outside the repository."""
import gzip
import json
import os

import pytest

from decoder.benchmark import binarization
from decoder.grammar import read_rules
from installed_fixtures import installed_layout, run_installed

# Seven rules, one of each kind; labels are distinct, so the nonterminal links follow the labels.
# permutation (1-based target rank of each source nonterminal, in source order) in the comment.
TABLE = """\
la [X] ||| the [DT] ||| 1
de [X][NP] [X] ||| of [X][NP] [PP] ||| 1
[X][A] y [X][B] [X] ||| [X][A] and [X][B] [S] ||| 1
[X][A] de [X][B] [X] ||| [X][B] 's [X][A] [NP] ||| 1
[X][A] [X][B] [X][C] [X] ||| [X][A] [X][C] [X][B] [S] ||| 1
[X][A] [X][B] [X][C] [X][D] [X] ||| [X][C] [X][A] [X][D] [X][B] [S] ||| 1
[X][A] [X][B] [X][C] [X][D] [X][E] [X] ||| [X][A] [X][B] [X][C] [X][D] [X][E] [S] ||| 1
"""
# 0 nonterminals: -; 1: (1); 2: (1,2) and (2,1); 3: (1,3,2); 4: (2,4,1,3); 5: (1,2,3,4,5)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_grammar_statistics_counted_by_hand(tmp_path):
    rules = list(read_rules(write(tmp_path, "rules.txt", TABLE)))
    stats = binarization.grammar_statistics(rules)
    assert stats["rules"] == 7
    assert stats["nonterminals"] == {"0": 1, "1": 1, "2": 2, "3": 1, "4": 1, "5+": 1}
    # reorder: (2,1), (1,3,2), (2,4,1,3); of the five rules with two or more nonterminals
    assert stats["reordered"] == 3
    assert stats["reordered_share"] == pytest.approx(3 / 7)
    assert stats["reordered_share_of_rules_with_2_or_more"] == pytest.approx(3 / 5)
    # monotonic: no nonterminal, one, (1,2), (2,1), (1,2,3,4,5)
    assert stats["monotonic_share"] == pytest.approx(5 / 7)
    # the one non-binarizable permutation is Zhang et al.'s (2,4,1,3), Figure 3(c)
    assert stats["non_binarizable"] == 1
    assert stats["non_binarizable_share"] == pytest.approx(1 / 7)
    assert stats["non_binarizable_share_of_rules_with_4_or_more"] == pytest.approx(1 / 2)
    assert stats["non_binarizable_permutations"] == [{"permutation": [2, 4, 1, 3], "rules": 1}]
    assert stats["by_nonterminals"]["4"] == {"rules": 1, "reordered": 1, "monotonic": 0, "non_binarizable": 1}
    assert stats["by_nonterminals"]["3"] == {"rules": 1, "reordered": 1, "monotonic": 0, "non_binarizable": 0}


def test_binarizable_five_nonterminal_permutation_is_not_counted(tmp_path):
    # (2,3,5,4,1) reorders and is binarizable: <[2,3,<5,4>], 1> (Zhang et al.'s (2,3,5,4), inverted with 1)
    line = "[X][A] [X][B] [X][C] [X][D] [X][E] [X] ||| [X][E] [X][A] [X][B] [X][D] [X][C] [S] ||| 1\n"
    stats = binarization.grammar_statistics(list(read_rules(write(tmp_path, "r.txt", line))))
    assert stats["nonterminals"]["5+"] == 1
    assert (stats["reordered"], stats["non_binarizable"], stats["monotonic_share"]) == (1, 0, 0)


# Two monotone rules sharing their first two nonterminals. Buckets hold binary rules by the source
# sub-sequence they cover (Xiao et al. section 3.1), Q(G') = sum of squared bucket sizes (Eq. 4):
# left-heavy: [A B] twice, [A B C], [A B D]        -> 2*2 + 1 + 1 = 6; distinct rules: <A B> shared + 2 tops = 3
# right-heavy: [B C], [B D], [A B C], [A B D]      -> 1 + 1 + 1 + 1 = 4; distinct rules: 2 virtual + 2 tops = 4
TWO_RULES = """\
[X][A] [X][B] [X][C] [X] ||| [X][A] [X][B] [X][C] [S] ||| 1
[X][A] [X][B] [X][D] [X] ||| [X][A] [X][B] [X][D] [S] ||| 1
"""


def test_cost_of_left_and_right_by_hand(tmp_path):
    rules = list(read_rules(write(tmp_path, "two.txt", TWO_RULES)))
    settings = binarization.Settings(strategies=("monolingual", "left", "right", "icr"), random_seeds=1)
    table = binarization.cost_table(rules, settings, log=lambda message: None)
    assert table["left"]["cost"] == 6 and table["right"]["cost"] == 4
    assert table["monolingual"]["cost"] == 6  # left to right, as left-heavy for monotone rules
    assert table["left"]["binary_rules"] == 3 and table["right"]["binary_rules"] == 4
    assert all(table[s]["binary_rule_instances"] == 4 for s in table)  # two nodes per rule, any binarization
    assert table["left"]["largest_buckets"] == [2, 1, 1]
    assert table["left"]["cost_floor"] == 0  # no rule of one or two tokens
    # ICR starts from left (sweep 0) and reaches right's bracketing, the cheapest
    assert table["icr"]["cost"] == 4
    assert [row["cost"] for row in table["icr"]["by_iteration"]][0] == 6
    assert table["icr"]["by_iteration"][-1] == {"iteration": len(table["icr"]["by_iteration"]) - 1, "cost": 4,
                                                "binary_rules": 4}


def test_cost_floor_and_two_token_share(tmp_path):
    # two rules of two tokens, with one binarization each: bucket [A B] holds 2 whatever the strategy
    # (the floor: 2*2 = 4); left-heavy puts the three-token rule's first node there too:
    # [A B] x3 -> 9, [A B C] -> 1, Q = 10
    text = TWO_RULES.splitlines()[0] + "\n" + "[X][A] [X][B] [X] ||| [X][A] [X][B] [S] ||| 1\n" \
        + "[X][A] [X][B] [X] ||| [X][A] [X][B] [VP] ||| 1\n"
    rules = list(read_rules(write(tmp_path, "floor.txt", text)))
    table = binarization.cost_table(rules, binarization.Settings(strategies=("left", "right")), log=lambda m: None)
    assert table["left"]["cost"] == 10 and table["right"]["cost"] == 4 + 1 + 1
    assert table["left"]["cost_floor"] == table["right"]["cost_floor"] == 4
    assert table["left"]["cost_by_source_tokens"] == {"1": 0, "2": 9, "3+": 1}
    assert table["right"]["cost_by_source_tokens"] == {"1": 0, "2": 5, "3+": 1}


def test_pair_tables_prefer_the_full_build_and_its_unfiltered_table(tmp_path, monkeypatch):
    monkeypatch.setattr(binarization, "pair_build", lambda pair: str(tmp_path / pair))
    assert binarization.find_pair_table("zh-en") is None
    candidates = binarization.pair_rule_tables("zh-en")
    for path in candidates[::-1]:  # from the least preferred
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").close()
        assert binarization.find_pair_table("zh-en") == path
    assert candidates[0] == str(tmp_path / "zh-en" / "rules.gz")  # the recipe pipeline's unfiltered table


def test_the_zh_en_build_is_beside_the_es_en_one():
    es_en, zh_en = binarization.pair_build("es-en"), binarization.pair_build("zh-en")
    assert es_en.endswith(os.path.join("models", "bible-es-en", "build"))
    assert zh_en == os.path.join(os.path.dirname(os.path.dirname(es_en)), "bible-zh-en", "build")


def test_report_sets_pairs_side_by_side(tmp_path):
    one = write(tmp_path, "one.txt", TABLE)
    two = write(tmp_path, "two.txt", TWO_RULES)
    settings = binarization.Settings(random_seeds=2, icr_max_iterations=3)
    results = binarization.run({"es-en": one, "zh-en": two}, settings, log=lambda m: None)
    text = binarization.markdown(results)
    assert "| strategy | es-en Q(G') | es-en Q / Q(left) | es-en binary rules | zh-en Q(G') | zh-en Q / Q(left) " \
           "| zh-en binary rules | Xiao et al. Q(G') |" in text
    assert "| rules | 7 | 2 | 50,879,242 |" in text
    assert "| non-binarizable (of all rules) | 1 (14.29%) | 0 (0.00%) | 0.3% |" in text
    assert "| 4 | 1 | 100.0% | 100.00% | 0 | - | - |" in text  # by number of nonterminals
    assert "| 3 | 1 | 100.0% | 0.00% | 2 | 0.0% | 0.00% |" in text
    row = next(line for line in text.splitlines() if line.startswith("| left |"))
    es = results["tables"]["es-en"]["costs"]["left"]
    assert row == f"| left | {es['cost']:,} | 1.000 | {es['binary_rules']:,} | 6 | 1.000 | 3 | 4.897e9 |"
    row = next(line for line in text.splitlines() if line.startswith("| right |"))
    assert row.endswith("| 4 | 0.667 | 4 | 5.182e9 |")
    results = binarization.run({"es-en": one, "zh-en": None}, settings, log=lambda m: None)
    assert "zh-en: skipped, no rule table (looked for " in binarization.markdown(results)
    assert list(results["tables"]) == ["es-en"]


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("outside")
    env = installed_layout(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    return work, env


def test_command_end_to_end_on_the_fixture_system(outside):
    work, env = outside
    built = run_installed(["-c", "from decoder.fixture import build_fixture; print(build_fixture('fixture')['rules'])"],
                          work, env)
    assert built.returncode == 0, built.stderr[-2000:]
    rules = built.stdout.strip()
    completed = run_installed(["-m", "decoder.cli", "bench", "--binarization", "--pair", "es-en", "--rules", rules,
                               "--seeds", "2"], work, env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    out = work / "build" / "bench" / "binarization"  # the default, under the working directory
    results = json.loads((out / "results.json").read_text())
    with gzip.open(os.path.join(work, rules), "rt", encoding="utf-8") as f:
        lines = sum(1 for line in f if line.strip())
    entry = results["tables"]["es-en"]
    assert entry["statistics"]["rules"] == lines
    assert sum(entry["statistics"]["nonterminals"].values()) == lines
    costs = entry["costs"]
    assert set(costs) == {"monolingual", "left", "right", "random", "icr"}
    assert len(costs["random"]["cost_by_seed"]) == 2
    assert costs["icr"]["by_iteration"][0]["cost"] == costs["left"]["cost"]
    assert costs["icr"]["by_iteration"][-1]["cost"] == costs["icr"]["cost"] <= costs["left"]["cost"]
    # the binarizer flags the same rules as non-binarizable as the statistics count
    assert costs["left"]["non_binarizable"] == entry["statistics"]["non_binarizable"]
    text = (out / "results.md").read_text()
    assert "## Q(G') and binary rules per strategy (Xiao et al. 2009, Table 2)" in text
    assert text in completed.stdout


def test_command_errors_in_one_line(outside):
    work, env = outside
    completed = run_installed(["-m", "decoder.cli", "bench", "--binarization", "--rules", "missing.gz"], work, env)
    assert completed.returncode != 0
    assert "Traceback" not in completed.stderr
    assert "missing.gz: no such rule table" in completed.stderr
    completed = run_installed(["-m", "decoder.cli", "bench", "--pair", "zh-en", "--seeds", "2"], work, env)
    assert completed.returncode != 0 and "go with --binarization" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_decode_sweep_on_a_build_of_the_fixture(outside):
    """--decode on a recipe-shaped build (BUILD/demo/rules.test.gz, BUILD/lm.bin, BUILD/test.es, test.en)
    made of the fixture system; a table outside a build is reported as skipped."""
    work, env = outside
    built = run_installed(["-c", "import json; from decoder.fixture import build_fixture; "
                                 "print(json.dumps(build_fixture('fixture')))"], work, env)
    assert built.returncode == 0, built.stderr[-2000:]
    paths = json.loads(built.stdout)
    build = work / "decode-build"
    (build / "demo").mkdir(parents=True)
    for source, target in ((paths["rules"], "demo/rules.test.gz"), (paths["lm"], "lm.bin"),
                           (paths["rules"] + ".features.json", "demo/rules.test.gz.features.json"),
                           (paths["test_es"], "test.es"), (paths["test_en"], "test.en")):
        (build / target).write_bytes((work / source).read_bytes())
    completed = run_installed(["-m", "decoder.cli", "bench", "--binarization", "--pair", "es-en", "--rules",
                               str(build / "demo" / "rules.test.gz"), "--decode", "--test-sentences", "3",
                               "--pop-limits", "2", "20", "--seeds", "1", "--icr-max-iterations", "2",
                               "--strategies", "monolingual", "left", "icr", "--out", "decode-out"], work, env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    decode = json.loads((work / "decode-out" / "results.json").read_text())["tables"]["es-en"]["decode"]
    assert decode["sentences"] == 3 and decode["weights"] == "the decoder's defaults"
    assert list(decode["by_strategy"]) == ["monolingual", "left", "icr"]
    for strategy, by_pop in decode["by_strategy"].items():
        assert list(by_pop) == ["2", "20"]
        for entry in by_pop.values():
            assert entry["failed"] == 0 and entry["edges_per_sentence"] > 0 and 0 <= entry["bleu"] <= 100
    # the pop limit reaches the search: more pops propose more edges
    assert all(by_pop["20"]["edges_per_sentence"] > by_pop["2"]["edges_per_sentence"]
               for by_pop in decode["by_strategy"].values())
    assert "| pop limit | monolingual | left | icr |" in (work / "decode-out" / "results.md").read_text()

    completed = run_installed(["-m", "decoder.cli", "bench", "--binarization", "--pair", "es-en", "--rules",
                               paths["rules"], "--decode", "--seeds", "1", "--strategies", "left",
                               "--out", "decode-skipped"], work, env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    decode = json.loads((work / "decode-skipped" / "results.json").read_text())["tables"]["es-en"]["decode"]
    assert decode["skipped"].startswith("no ") and "lm.bin" in decode["skipped"]
