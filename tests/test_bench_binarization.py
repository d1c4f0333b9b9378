"""`cky bench --binarization`: the grammar statistics of Zhang et al. 2006 and Table 2 of Xiao et al. 2009
on hand-made rule tables whose answers are worked out by hand, and the command end to end on the fixture
system from a directory outside the repository."""
import gzip
import json
import os
import pathlib

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


# ---- where Q(G') lives: buckets.bucket_analysis ----------------------------------------------------
# Six rules; labels name the nonterminals, so equal labels give equal bucket keys.
#   R1 [A] [B] [C] monotone          left: {A B}, {A B C}      right: {B C}, {A B C}
#   R2 [A] [B] [D] monotone          left: {A B}, {A B D}      right: {B D}, {A B D}
#   R3 [A] [B]                       {A B} (one node: its top)
#   R4 [A] de [B] -> [B] 's [A]      left: {A de}, {A de B}    right: {de B}, {A de B}
#   R5 [A] [B] [C] -> [A] [C] [B]    ranks (0,2,1): A B is not contiguous on the target side, so the only
#                                    bracketing is A (B C): {B C}, {A B C}, whatever the strategy
#   R6 la                            {la} (a one-token rule)
# left:  {A B} 3, {A B C} 2 (R1, R5), {A B D}, {A de}, {A de B}, {B C}, {la} 1 each -> Q = 9 + 4 + 5 = 18
# right: {B C} 2 (R1, R5), {A B C} 2, {B D}, {A B D}, {A B}, {de B}, {A de B}, {la} 1 each -> Q = 4 + 4 + 6 = 14
# Top rules (every binarization): {A B C} 2, {A B D}, {A B}, {A de B}, {la} 1 -> bound 4 + 4 = 8;
# forced: also R5's {B C} -> 9.  ICR's best: R1 into {B C} or {A B} (one of them gets 2), R2 into {B D},
# R4 anywhere: 14.
BUCKET_TABLE = """\
[X][A] [X][B] [X][C] [X] ||| [X][A] [X][B] [X][C] [S] ||| 1
[X][A] [X][B] [X][D] [X] ||| [X][A] [X][B] [X][D] [S] ||| 1
[X][A] [X][B] [X] ||| [X][A] [X][B] [S] ||| 1
[X][A] de [X][B] [X] ||| [X][B] 's [X][A] [NP] ||| 1
[X][A] [X][B] [X][C] [X] ||| [X][A] [X][C] [X][B] [VP] ||| 1
la [X] ||| the [DT] ||| 1
"""


def test_bucket_analysis_by_hand(tmp_path):
    from decoder.binarize import binarize, span_tables
    from decoder.benchmark.buckets import bucket_analysis, forced_spans

    rules = list(read_rules(write(tmp_path, "buckets.txt", BUCKET_TABLE)))
    forced = forced_spans(span_tables(rules)[0])
    # R5's B C (tokens 1..2) and every rule's top span; R3 and R6 have no span of two tokens or more
    # beyond their top (R6 has none at all: one token)
    assert sorted(map(tuple, forced.tolist())) == [(0, 0, 2), (1, 0, 2), (2, 0, 1), (3, 0, 2), (4, 0, 2), (4, 1, 2)]
    left = bucket_analysis(binarize(rules, "left").bucket_keys, forced)
    assert left["cost"] == 18 and left["buckets"] == 7 and left["binary_rule_instances"] == 10
    assert left["lower_bound"] == 8 and left["forced_lower_bound"] == 9
    assert {k: row["cost"] for k, row in left["by_source_tokens"].items()} == {"1": 1, "2": 11, "3+": 6}
    assert left["two_token_cost_share"] == pytest.approx(11 / 18)
    assert {k: row["cost"] for k, row in left["two_token_kinds"].items()} == \
        {"nonterminal nonterminal": 10, "nonterminal words": 1, "words nonterminal": 0}
    assert left["size_histogram"] == [
        {"size": "1", "buckets": 5, "binary_rules": 5, "cost": 5, "cost_share": pytest.approx(5 / 18)},
        {"size": "2-3", "buckets": 2, "binary_rules": 5, "cost": 13, "cost_share": pytest.approx(13 / 18)}]
    assert [(b["source"], b["size"], b["top_rules"], b["forced"]) for b in left["largest"]] == [
        ("[A] [B]", 3, 1, 1), ("[A] [B] [C]", 2, 2, 2), ("[A] [B] [D]", 1, 1, 1), ("[A] de", 1, 0, 0),
        ("[A] de [B]", 1, 1, 1), ("[B] [C]", 1, 0, 1), ("la", 1, 1, 1)]
    assert left["largest"][0]["cost_share"] == pytest.approx(9 / 18)
    right = bucket_analysis(binarize(rules, "right").bucket_keys, forced)
    assert right["cost"] == 14 and right["by_source_tokens"]["2"]["cost"] == 4 + 1 + 1 + 1
    assert right["two_token_kinds"]["words nonterminal"]["cost"] == 1  # de B
    icr = bucket_analysis(binarize(rules, "icr").bucket_keys, forced)
    assert icr["cost"] == 14 and icr["cost_over_forced_lower_bound"] == pytest.approx(14 / 9)
    # without the forced spans (the monolingual strategy) only the top-rule bound is given
    mono = bucket_analysis(binarize(rules, "monolingual").bucket_keys)
    assert mono["forced_lower_bound"] is None and mono["lower_bound"] == 8 and mono["largest"][0]["forced"] is None


def test_a_non_binarizable_rule_is_forced_into_its_monolingual_tree(tmp_path):
    from decoder.binarize import binarize, span_tables
    from decoder.benchmark.buckets import bucket_analysis, forced_spans

    # (2,4,1,3): no synchronous bracketing; the synchronous strategies keep its monolingual tree
    # {A B}, {A B C}, {A B C D}, all forced: every synchronous strategy has Q = 3, the bound
    line = "[X][A] [X][B] [X][C] [X][D] [X] ||| [X][C] [X][A] [X][D] [X][B] [S] ||| 1\n"
    rules = list(read_rules(write(tmp_path, "nb.txt", line)))
    forced = forced_spans(span_tables(rules)[0])
    assert sorted(map(tuple, forced.tolist())) == [(0, 0, 1), (0, 0, 2), (0, 0, 3)]
    for strategy in ("left", "right", "icr"):
        analysis = bucket_analysis(binarize(rules, strategy).bucket_keys, forced)
        assert analysis["cost"] == analysis["forced_lower_bound"] == 3
        assert analysis["lower_bound"] == 1


def test_bucket_size_classes_are_powers_of_two():
    from decoder.benchmark.buckets import size_class

    assert [size_class(n) for n in (1, 2, 3, 4, 7, 8, 15, 16, 5235)] == \
        ["1", "2-3", "2-3", "4-7", "4-7", "8-15", "8-15", "16-31", "4096-8191"]


def test_cost_table_carries_the_bucket_analysis(tmp_path):
    rules = list(read_rules(write(tmp_path, "buckets.txt", BUCKET_TABLE)))
    settings = binarization.Settings(strategies=("monolingual", "left", "icr"), icr_max_iterations=5)
    table = binarization.cost_table(rules, settings, log=lambda m: None)
    assert table["left"]["bucket_analysis"]["forced_lower_bound"] == 9
    assert table["monolingual"]["bucket_analysis"]["forced_lower_bound"] is None
    assert table["icr"]["bucket_analysis"]["cost"] == table["icr"]["cost"] == 14
    text = "\n".join(binarization.buckets_markdown({"zh-en": table}, ["monolingual", "left", "icr"]))
    assert "Lower bounds: top rules 8; forced 9." in text
    assert "| left | 18 | 7 | 5.6% | 61.1% | 55.6% / 5.6% / 0.0% | 33.3% | 2.25 | 2.00 |" in text
    # monolingual puts R5's first node in {A B} too (16 + 4 + 4 * 1 = 24); ICR moved R1 into {B C}
    assert "| monolingual | 24 | 6 |" in text
    assert "| 1 | `[A] [B]` 4 (top 1) | `[A] [B]` 3 (top 1, forced 1) | `[A] [B] [C]` 2 (top 2, forced 2) |" in text
    assert "| 2-3 | 1 (16.7%) | 2 (72.2%) | 2 (57.1%) |" in text


# ---- extraction settings: Moses' limits measured on table lines ------------------------------------

def test_scope_and_tree_fragment_shape_as_moses_counts_them():
    from decoder.benchmark.extraction_settings import fragment_shape, source_scope

    # Hopkins and Langmead: a nonterminal at each end, and each pair of adjacent nonterminals
    assert source_scope(("a", 0, "b")) == 0
    assert source_scope((0, "a", 1)) == 2
    assert source_scope((0, 1)) == 3
    assert source_scope((0, 1, 2)) == 4
    assert source_scope((0, "a", 1, 2)) == 3
    assert source_scope(("a", "b")) == 0
    # size: nodes that are neither preterminals nor slots; nodes: every tree node; depth as Moses'
    assert fragment_shape("[NN house]") == (0, 1, 0)
    assert fragment_shape("[NP [DT the] [NN]]") == (1, 3, 1)
    assert fragment_shape("[VP [AUX does] [RB not] [VB]]") == (1, 4, 1)  # decoder.extract's depth-1 example
    assert fragment_shape("[S [NP [DT the] [NN man]] [VP]]") == (2, 5, 2)
    assert fragment_shape("[S [NP [NP [DT the] [NN]] [PP]] [VP [VB go]]]") == (4, 8, 3)
    with pytest.raises(ValueError):
        fragment_shape("[NP [DT the]")


def test_settings_filter_lines_by_count_scope_and_composed_size(tmp_path):
    from decoder.benchmark.extraction_settings import ExtractionSetting, apply_setting, rule_key

    table = """\
[X][NP] [X][VP] [X] ||| [X][NP] [X][VP] [S] ||| 1 ||| ||| 3 3 1 ||| ||| {{Tree [S [NP] [VP]]}}
a [X][NP] [X][VP] b [X] ||| [X][NP] [X][VP] [S] ||| 1 ||| ||| 3 3 2 ||| ||| {{Tree [S [NP] [VP]]}}
[X][NP] [X][VP] [X][PP] [X] ||| [X][NP] [X][VP] [X][PP] [S] ||| 1 ||| ||| 3 3 5 ||| ||| {{Tree [S [NP] [VP] [PP]]}}
a [X][NN] [X] ||| the [X][NN] [S] ||| 1 ||| ||| 3 3 4 ||| ||| {{Tree [S [NP [NP [DT the] [NN]] [PP [IN x]]] [VP [VB]]]}}
b [X][NN] [X] ||| the [X][NN] [S] ||| 1 ||| ||| 3 3 4 ||| ||| {{Tree [S [NP [NP [DT the] [NN]] [PP [IN x]]] [VP [VB]]]}}
"""
    rules = list(read_rules(write(tmp_path, "t.txt", table)))
    # c(rule) is the last count: the first rule was seen once
    kept, dropped = apply_setting(rules, ExtractionSetting("c", "", min_count=2))
    assert kept == rules[1:] and dropped["count"] == 1
    # scopes 3, 0, 4, 1, 1
    kept, dropped = apply_setting(rules, ExtractionSetting("s", "", max_scope=3))
    assert kept == rules[:2] + rules[3:] and dropped["scope"] == 1
    # the last two have size 4 (S, NP, NP, PP); only the composed one (not among the minimal rules) goes
    minimal = {rule_key(rules[4])}
    kept, dropped = apply_setting(rules, ExtractionSetting("m", "", max_size=3, max_nodes=15), minimal)
    assert kept == rules[:3] + rules[4:] and dropped["size"] == 1
    kept, dropped = apply_setting(rules, ExtractionSetting("n", "", max_nodes=7), minimal)
    assert kept == rules[:3] + rules[4:] and dropped["nodes"] == 1  # 8 nodes
    with pytest.raises(ValueError):
        apply_setting(rules, ExtractionSetting("m", "", max_size=3))


def test_extraction_settings_on_a_build_of_the_fixture(tmp_path):
    """Each setting's table extracted from a recipe-shaped build (BUILD/corpus) of the fixture, measured
    whole and on the test set."""
    from decoder.benchmark import extraction_settings
    from decoder.benchmark.extraction_settings import SETTINGS, fragment_shape, rule_key, source_scope
    from decoder.fixture import build_fixture
    from decoder.grammar import read_rules as read

    paths = build_fixture(str(tmp_path / "fixture"))
    build = tmp_path / "build"
    (build / "corpus").mkdir(parents=True)
    for source, name in ((paths["train_es"], "train.tok.src"), (paths["train_trees"], "train.trees"),
                         (paths["train_align"], "train.align"), (paths["train_en"], "train.tok.tgt"),
                         (paths["test_es"], "test.tok.src")):
        (build / "corpus" / name).write_bytes(pathlib.Path(source).read_bytes())
    chosen = [s for s in SETTINGS if s.name in ("recipe", "minimal", "scope-3", "recipe-1/2", "moses")]
    result = extraction_settings.run(str(build), str(tmp_path / "work"), max_iterations=3, settings=chosen,
                                     log=lambda m: None)
    by_setting = result["settings"]
    assert list(by_setting) == ["recipe", "minimal", "scope-3", "recipe-1/2", "moses"]  # as SETTINGS orders them
    recipe = list(read(by_setting["recipe"]["table"]))
    # the fixture's own table was extracted with the recipe's limits too
    assert len(recipe) == by_setting["recipe"]["full"]["rules"] == sum(1 for _ in read(paths["rules"]))
    assert by_setting["scope-3"]["full"]["rules"] == sum(source_scope(r.source) <= 3 for r in recipe)
    assert by_setting["recipe-1/2"]["extracted"] < len(recipe)
    moses = list(read(by_setting["moses"]["table"]))
    assert by_setting["moses"]["extracted"] == len(moses)
    # no bound on nonterminals and symbols: every rule of the recipe's extraction, and more
    assert {rule_key(r) for r in recipe} < {rule_key(r) for r in moses}
    assert by_setting["moses"]["full"]["rules"] == len(moses) - sum(by_setting["moses"]["dropped"].values())
    minimal = {rule_key(r) for r in read(by_setting["minimal"]["table"])}
    assert minimal < {rule_key(r) for r in recipe}
    assert all(fragment_shape(r.tree)[2] <= 3 for r in moses if rule_key(r) not in minimal)  # composed rules
    for entry in by_setting.values():
        full, test = entry["full"], entry["test"]
        assert 0 < test["rules"] <= full["rules"]
        for part in (full, test):
            assert part["forced_lower_bound"] <= part["icr"]["cost"] <= part["left"]["cost"]
            assert part["left_over_icr"] == pytest.approx(part["left"]["cost"] / part["icr"]["cost"])
    text = "\n".join(binarization.extraction_settings_markdown({"es-en": result}))
    assert "| setting | table | rules | Q(left) | Q(icr) |" in text
    assert f"| moses | full | {by_setting['moses']['full']['rules']:,} |" in text
    assert extraction_settings.run(str(tmp_path), str(tmp_path / "w2"))["skipped"].startswith("no ")
