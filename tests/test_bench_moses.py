"""bench.bench_moses without a Moses binary: the model mapping, the moses.ini and glue writers, the
n-best parser and the per-verse checks (the bench itself needs `--moses-bin`)."""
from __future__ import annotations

import math

import pytest

from bench import bench_moses as bm
from decoder.grammar import parse_rule
from decoder.search.model import GLUE, LM, OOV, WORD_COUNT, GlueRules, Weights

RULE_FEATURES = ["p_tgt_given_src", "p_src_given_tgt", "rule_penalty"]

# A line as Moses 4 (moses-cmd, search-algorithm 3) writes it with `-n-best-list FILE 1`.
NBEST_LINE = ("3 ||| in the beginning ||| UnknownWordPenalty0= -100 WordPenalty0= -5 "
              "TranslationModel0= -2.5 -1.25 3 TranslationModel1= 2 LM0= -23.0258 ||| -7.89\n")


def weights(**given) -> Weights:
    return Weights(RULE_FEATURES, given)


def moses_features_of(ours: dict) -> dict:
    """Moses' feature values of a derivation with these features of ours, as Moses computes them
    (written out independently of bench_moses): WordPenalty counts <s> and </s> with the words, the
    LM is in natural log, an unknown word costs ln 0 floored at -100."""
    return {"UnknownWordPenalty0": [-100.0 * ours[OOV]], "WordPenalty0": [-(ours[WORD_COUNT] + 2)],
            "TranslationModel0": [ours[name] for name in RULE_FEATURES], "TranslationModel1": [ours[GLUE]],
            "LM0": [ours[LM] * math.log(10)]}


@pytest.mark.parametrize("given", [{}, {"lm": 0.7, "word_count": -0.3, "oov": -4.0, "glue": 0.25,
                                        "p_tgt_given_src": 1.5, "rule_penalty": -2.0}])
def test_moses_weights_give_our_score_up_to_the_sentence_marker_offset(given):
    w = weights(**given)
    ours = {"p_tgt_given_src": -2.5, "p_src_given_tgt": -1.25, "rule_penalty": 3.0, LM: -10.0, WORD_COUNT: 3.0,
            OOV: 1.0, GLUE: 2.0}
    features = moses_features_of(ours)
    mw = bm.moses_weights(w)
    moses_total = sum(wi * v for name, values in features.items() for wi, v in zip(mw[name], values))
    assert moses_total - bm.moses_total_offset(w) == pytest.approx(w.dot(ours), abs=1e-9)
    # the offset is the word-count weight times the two sentence markers
    assert bm.moses_total_offset(w) == pytest.approx(2 * w[WORD_COUNT])
    # and the features map back
    assert bm.our_features(features, RULE_FEATURES) == pytest.approx(ours)


def test_default_weights_in_moses_units():
    mw = bm.moses_weights(weights())
    assert mw["LM0"] == [pytest.approx(1 / math.log(10))]
    assert mw["WordPenalty0"] == [-0.5]            # our +0.5 per word; Moses' feature is minus the words
    assert mw["UnknownWordPenalty0"] == [pytest.approx(0.1)]  # -10 per word = 0.1 x (-100)
    assert mw["TranslationModel0"] == [0.2, 0.2, 0.2]
    assert mw["TranslationModel1"] == [-0.5]


def test_parse_nbest_line():
    entry = bm.parse_nbest_line(NBEST_LINE)
    assert entry.sentence == 3 and entry.text == "in the beginning" and entry.total == -7.89
    assert entry.features == {"UnknownWordPenalty0": [-100.0], "WordPenalty0": [-5.0],
                              "TranslationModel0": [-2.5, -1.25, 3.0], "TranslationModel1": [2.0], "LM0": [-23.0258]}
    ours = bm.our_features(entry.features, RULE_FEATURES)
    assert ours[WORD_COUNT] == 3 and ours[OOV] == 1 and ours[GLUE] == 2
    assert ours[LM] == pytest.approx(-23.0258 / math.log(10))


@pytest.mark.parametrize("line", ["0 ||| a b ||| LM0= -1", "0 ||| a ||| -1 LM0= -2 ||| -3"])
def test_parse_nbest_line_rejects_malformed(line):
    with pytest.raises(ValueError):
        bm.parse_nbest_line(line)


def test_read_nbest_keeps_the_first_entry_per_sentence(tmp_path):
    path = tmp_path / "nbest"
    second = NBEST_LINE.replace("in the beginning", "at first").replace("-7.89", "-9.5")
    path.write_text(NBEST_LINE + second + NBEST_LINE.replace("3 |||", "4 |||", 1))
    entries = bm.read_nbest(str(path))
    assert sorted(entries) == [3, 4] and entries[3].text == "in the beginning"


def test_reported_seconds():
    stderr = ("Line 0: Translation took 0.125 seconds total\nTranslation took 0.100 seconds\nsomething\n"
              "Line 1: Translation took 2 seconds total\nTranslation took 1.5 seconds\n")
    assert bm.reported_seconds(stderr) == ({0: 0.125, 1: 2.0}, [0.1, 1.5])


def glue_rules_by_kind(path):
    start, concat, end = {}, {}, []
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    for line in lines:
        rule = parse_rule(line.strip())
        assert rule.lhs == bm.GOAL_LABEL
        if rule.source[0] == "<s>":
            assert rule.target == ("<s>", 0) and rule.arity == 1
            start[rule.labels[0]] = math.log(rule.scores[0])
        elif rule.source[-1] == "</s>":
            assert rule.labels == (bm.GOAL_LABEL,) and rule.scores == (1.0,)
            end.append(rule)
        else:
            assert rule.labels[0] == bm.GOAL_LABEL and rule.source == (0, 1) and rule.target == (0, 1)
            concat[rule.labels[1]] = math.log(rule.scores[0])
    return start, concat, end


def test_builtin_glue_grammar(tmp_path):
    labels = ["NP", "VP", ".", "X"]
    path = tmp_path / "glue"
    assert bm.write_glue_grammar(str(path), GlueRules(), labels) == 1 + 2 * len(labels)
    start, concat, end = glue_rules_by_kind(path)
    assert len(end) == 1
    # built-in glue: GOAL -> L has glue value 0, GOAL -> GOAL L value 1, for every label
    assert start == {label: pytest.approx(0.0) for label in labels}
    assert concat == {label: pytest.approx(1.0) for label in labels}


def test_glue_grammar_from_a_glue_file(tmp_path):
    glue = GlueRules(start={"S": 0.0, "NP": 1.0}, concat={"NP": 1.0, "VP": 2.0}, builtin=False)
    path = tmp_path / "glue"
    bm.write_glue_grammar(str(path), glue, ["S", "NP", "VP"])
    start, concat, _ = glue_rules_by_kind(path)
    assert start == {"S": pytest.approx(0.0), "NP": pytest.approx(1.0)}   # no start rule for VP
    assert concat == {"NP": pytest.approx(1.0), "VP": pytest.approx(2.0)}  # none for S


def test_glue_goal_label_must_be_new(tmp_path):
    with pytest.raises(ValueError, match="goal label"):
        bm.write_glue_grammar(str(tmp_path / "glue"), GlueRules(), ["NP", bm.GOAL_LABEL])


def ini_sections(text: str) -> dict:
    sections, current = {}, None
    for line in text.splitlines():
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = []
        elif line.strip():
            sections[current].append(line)
    return sections


def test_moses_ini():
    mw = bm.moses_weights(weights(lm=2.0))
    config = bm.MosesConfig(rule_table="/m/rules.gz", glue_grammar="/m/glue", lm="/m/lm.bin", lm_order=5,
                            weights=mw, n_rule_features=3, pop_limit=77, **bm.MOSES_UNPRUNED)
    sections = ini_sections(bm.moses_ini(config))
    assert sections["search-algorithm"] == ["3"] and sections["inputtype"] == ["3"]
    assert sections["cube-pruning-pop-limit"] == ["77"]
    assert sections["stack"] == ["0"] and sections["beam-threshold"] == ["0.0"]
    assert sections["max-chart-span"] == ["20", "1000"]  # the rule table, then the glue
    assert sections["mapping"] == ["0 T 0", "1 T 1"]
    rule_table = next(f for f in sections["feature"] if "name=TranslationModel0" in f)
    assert "num-features=3" in rule_table and "path=/m/rules.gz" in rule_table and "table-limit=0" in rule_table
    assert "UnknownWordPenalty tuneable=true" in sections["feature"]  # else Moses leaves it out of n-best lists
    assert any(f.startswith("KENLM ") and "order=5" in f and "path=/m/lm.bin" in f for f in sections["feature"])
    written = {line.split("=")[0]: [float(v) for v in line.split("=", 1)[1].split()] for line in sections["weight"]}
    assert written == {name: pytest.approx(values) for name, values in mw.items()}
    assert written["LM0"] == [pytest.approx(2.0 / math.log(10))]
    assert "unknown-lhs" not in sections


def test_moses_ini_defaults_are_moses_defaults():
    config = bm.MosesConfig(rule_table="r", glue_grammar="g", lm="l", lm_order=3, weights={}, n_rule_features=1)
    sections = ini_sections(bm.moses_ini(config))
    assert sections["stack"] == ["200"] and sections["rule-limit"] == ["5000"]
    assert float(sections["beam-threshold"][0]) == 1e-5
    assert "table-limit=20" in next(f for f in sections["feature"] if "TranslationModel0" in f)


def test_check_entry_and_summary():
    w = weights()
    ours = {"p_tgt_given_src": -2.5, "p_src_given_tgt": -1.25, "rule_penalty": 3.0, LM: -10.0, WORD_COUNT: 3.0,
            OOV: 0.0, GLUE: 2.0}
    features = moses_features_of(ours)
    mw = bm.moses_weights(w)
    total = sum(wi * v for name, values in features.items() for wi, v in zip(mw[name], values))
    entry = bm.NBestEntry(0, "a b c", features, total)
    check = bm.check_entry(entry, w, lambda text: -10.0 if text == "a b c" else 0.0)
    assert check["our_score"] == pytest.approx(w.dot(ours))
    summary = bm.summarize_checks([check])
    assert summary["lm_vs_kenlm_ok"] == summary["total_vs_weights_dot_features_ok"] == 1
    assert summary["our_score_vs_total_minus_offset_ok"] == 1
    wrong_lm = bm.check_entry(entry, w, lambda text: -12.0)
    assert bm.summarize_checks([wrong_lm])["lm_vs_kenlm_ok"] == 0


def test_compare_counts_ties_within_tolerance():
    result = bm.compare([-10.0, -10.0 - 5e-4, -9.0, -20.0], [-10.0 + 5e-4, -10.0, -10.0, -10.0])
    assert result["ours_at_least_moses"] == 3 and result["ours_better"] == 1 and result["moses_better"] == 1


def test_cky_bench_moses_needs_an_executable(tmp_path, capsys):
    import argparse

    from decoder.cli import bench as cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--moses", str(tmp_path / "no-moses"), "--out", str(tmp_path / "out")])
    assert cli.main(args) == 2
    assert "not an executable" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


MOSES_LOG = """Created input-output object : [14.699] seconds
Line 0: Initialize search took 0.000 seconds total
Translating: <s> a b </s>  ||| [0,0]=X (1) [0,1]=X (1)

  0   1   2   3 
  0   5   7   0 
   3   4   0 
     6   0 
       2 
BEST TRANSLATION: 12 Q  -> Q </s> :0-0 : term=: nonterm=0-0 : c=-2.652
Line 0: Translation took 0.5 seconds total
Translating: <s> c </s>  ||| [0,0]=X (1)

  0   1   2 
  0   9   0 
"""


def test_moses_cell_sizes_and_real_hypotheses():
    sizes = bm.moses_cell_sizes(MOSES_LOG)
    assert len(sizes) == 1  # the second sentence's table is unfinished (no BEST TRANSLATION yet)
    assert sizes[0] == [(0, 1, 0), (1, 1, 5), (2, 1, 7), (3, 1, 0), (0, 2, 3), (1, 2, 4), (2, 2, 0),
                        (0, 3, 6), (1, 3, 0), (0, 4, 2)]
    # real labels: cells that hold neither <s> (start 0) nor </s> (end 4): [1,2), [2,3), [1,3)
    assert bm.moses_real_hypotheses(MOSES_LOG) == [5 + 7 + 4]


# The moses.ini parameters the bench writes, each a parameter Moses declares (moses/Parameter.cpp, AddParam):
# Moses rejects a moses.ini with an undeclared one.
MOSES_PARAMETERS = {"input-factors", "mapping", "search-algorithm", "inputtype", "non-terminals",
                    "cube-pruning-pop-limit", "stack", "beam-threshold", "rule-limit", "max-chart-span",
                    "s2t-parsing-algorithm", "unknown-lhs", "feature", "weight"}


def s2t_and_chart_inis(**search):
    mw = bm.moses_weights(weights(lm=2.0))
    common = dict(rule_table="/m/rules.gz", glue_grammar="/m/glue", lm="/m/lm.bin", lm_order=5, weights=mw,
                  n_rule_features=3, unknown_lhs="/m/unknown-lhs", **search)
    return (ini_sections(bm.moses_ini(bm.MosesConfig(search_algorithm=6, **common))),
            ini_sections(bm.moses_ini(bm.MosesConfig(search_algorithm=3, **common))))


def test_moses_ini_for_the_string_to_tree_decoder():
    s2t, chart = s2t_and_chart_inis(pop_limit=100)
    assert set(s2t) <= MOSES_PARAMETERS and set(chart) <= MOSES_PARAMETERS
    # moses/TypeDef.h: SearchAlgorithm SyntaxS2T = 6 (CYKPlus = 3, the chart decoder)
    assert s2t["search-algorithm"] == ["6"] and chart["search-algorithm"] == ["3"]
    # moses/parameters/SyntaxOptions.cpp: s2t-parsing-algorithm, default RecursiveCYKPlus, the first value (0) of
    # moses/TypeDef.h's S2TParsingAlgorithm; TranslationTask::SetupManager picks S2T::Manager<RecursiveCYKPlusParser>
    assert s2t["s2t-parsing-algorithm"] == ["0"] and "s2t-parsing-algorithm" not in chart
    # moses/Syntax/RuleTableFF.cpp: a `RuleTable` feature loads its text table into an S2T rule trie under
    # search algorithm 6 (S2T::RuleTrieLoader) and throws under 3; the chart decoder's in-memory table is
    # `PhraseDictionaryMemory` (train-model.perl create_ini writes RuleTable for -s2t, else that)
    tables = [f for f in s2t["feature"] if "name=TranslationModel" in f]
    assert len(tables) == 2 and all(f.startswith("RuleTable ") for f in tables)
    assert all(f.startswith("PhraseDictionaryMemory ") for f in chart["feature"] if "name=TranslationModel" in f)
    # S2T::Manager::InitializeParsers takes one max-chart-span per decode graph (one per [mapping] line): the
    # rule table's 20, the glue's 1000, as for the chart decoder
    assert s2t["max-chart-span"] == ["20", "1000"] and s2t["mapping"] == ["0 T 0", "1 T 1"]
    # the same input reading (TreeInput reads its words with Sentence::Read, which adds <s> and </s> for any
    # syntax search algorithm: moses/Sentence.cpp, is_syntax), unknown-word labels (SyntaxOptions::
    # LoadNonTerminals, read by S2T::OovHandler) and pruning parameters S2T::Manager::Decode reads
    # (cube.pop_limit, syntax.rule_limit, search.stack_size)
    for name in ("inputtype", "non-terminals", "unknown-lhs", "cube-pruning-pop-limit", "rule-limit", "stack",
                 "weight", "input-factors"):
        assert s2t[name] == chart[name], name
    assert s2t["inputtype"] == ["3"] and s2t["cube-pruning-pop-limit"] == ["100"]
    # the same model: every feature line but the table type, every weight
    same = lambda features: [f.replace("RuleTable ", "PhraseDictionaryMemory ", 1) for f in features]  # noqa: E731
    assert same(s2t["feature"]) == chart["feature"]


def test_moses_ini_unpruned_for_both_decoders():
    s2t, chart = s2t_and_chart_inis(pop_limit=10 ** 6, **bm.MOSES_UNPRUNED)
    for sections in (s2t, chart):
        assert sections["stack"] == ["0"]            # S2T::Manager::Decode prunes stacks only when stack > 0
        assert sections["rule-limit"] == ["10000000"] and sections["cube-pruning-pop-limit"] == ["1000000"]
        assert all("table-limit=0" in f for f in sections["feature"] if "name=TranslationModel" in f)


def test_moses_ini_rejects_other_search_algorithms():
    with pytest.raises(ValueError, match="search algorithm 5"):
        bm.moses_ini(bm.MosesConfig(rule_table="r", glue_grammar="g", lm="l", lm_order=3, weights={},
                                    n_rule_features=1, search_algorithm=5))


def test_arguments_default_to_both_decoders_and_the_pairs_build(monkeypatch, tmp_path):
    from decoder.data.build import default_out

    monkeypatch.delenv("MOSES_ROOT", raising=False)
    args = bm.parse_arguments([])
    assert args.search_algorithms == [3, 6] and args.pairs == ["es-en"] and args.moses_bin is None
    assert bm.parse_arguments(["--search-algorithm", "6", "--pair", "both"]).search_algorithms == [6]
    assert bm.parse_arguments(["--pair", "both"]).pairs == ["es-en", "zh-en"]
    files = bm.pair_files("zh-en")
    assert files["config"] == str(default_out("bible-zh-en") / "config.toml")
    assert files["rule_table"] == str(default_out("bible-zh-en") / "rules.gz")
    assert files["source"] == str(default_out("bible-zh-en") / "corpus" / "test.tok.src")
    assert bm.pair_files("es-en", small=True)["config"] == str(default_out("bible-es-en", True) / "config.toml")
    monkeypatch.setenv("MOSES_ROOT", str(tmp_path))
    assert bm.parse_arguments([]).moses_bin == str(tmp_path / "bin" / "moses")
    with pytest.raises(SystemExit):
        bm.parse_arguments(["--pair", "both", "--config", "x.toml"])


def test_without_moses_the_bench_says_so_in_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("MOSES_ROOT", raising=False)
    assert bm.main(["--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Moses not found: no --moses-bin" in err and "MOSES_ROOT" in err
    monkeypatch.setenv("MOSES_ROOT", str(tmp_path))
    assert bm.main(["--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path}/bin/moses is not an executable" in err
    assert not (tmp_path / "out").exists()


def test_the_report_of_a_chart_only_run_reads_as_search_algorithm_3():
    """moses.json of a run of the chart decoder alone (a single fixture check, one comparison under "demo")
    reads as search algorithm 3 on es-en."""
    import json
    from pathlib import Path

    result = json.loads((Path(bm.REPOSITORY) / "bench" / "results" / "moses.json").read_text())
    text = bm.markdown(result)
    assert "## Equivalence with no pruning (fixture system), search-algorithm 3" in text and "## es-en" in text
    assert all(run["search_algorithm"] == 3 for run in result["pairs"]["es-en"]["moses"].values())


def test_a_run_name_names_pair_algorithm_kind_and_pop_limit():
    assert bm.moses_run_name("zh-en", 6, "our rules", 100) == "zh-en-moses6-our-rules-100"
    assert bm.moses_run_name("es-en", 3, "default", 1000) == "es-en-moses3-default-1000"


def test_the_rule_table_moses_reads_is_filtered_to_the_decoded_verses(tmp_path):
    import gzip

    table = tmp_path / "rules.gz"
    with gzip.open(table, "wt", encoding="utf-8") as f:
        f.write("el [X] ||| the [DT] ||| 0.5 ||| 0-0 ||| 1 1 1\n"
                "el [X][NN] [X] ||| the [X][NN] [NP] ||| 0.5 ||| 0-0 1-1 ||| 1 1 1\n"
                "perro [X] ||| dog [NN] ||| 0.5 ||| 0-0 ||| 1 1 1\n"
                "gato [X] ||| cat [NN] ||| 0.5 ||| 0-0 ||| 1 1 1\n")
    path = bm.test_rule_table(str(table), ["el perro"], str(tmp_path), "es-en")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        assert [line.split(" |||")[0] for line in f] == ["el [X]", "el [X][NN] [X]", "perro [X]"]
    assert bm.test_rule_table(str(table), ["el perro"], str(tmp_path), "es-en") == path   # written once
    assert bm.test_rule_table(str(table), ["el gato"], str(tmp_path), "es-en") != path
