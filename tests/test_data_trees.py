"""Penn trees from link-grammar output: leaves == tokens (null links, dropped words, fallback),
the worker pool's hard time limit, and (when link-grammar is installed) real parses."""
import textwrap

import pytest

from decoder.data import parse, trees
from decoder.data.tokenize import tokenize

FULL = """(S (PP in.r
       (NP the beginning.n))
   ,
   (S (NP God.m)
      (VP created.v-d
          (NP the heavens.n and.j-n the earth.n-u)))
   .)"""
NULL_LINKED = """(S (S (VP Yahweh.m))
   , {how}
   (S (NP my.p adversaries.n)
      (VP have.v
          (VP increased.v-d)))
   !)"""
# link-grammar dropped everything after the semicolon
DROPPED = """(S (NP (NP the servants.n ')
       houses.n)
   (VP were.v-d
       (ADJP burned.v-d)))"""


def test_full_parse_gets_preterminals_from_suffixes():
    tokens = tokenize("In the beginning, God created the heavens and the earth.", "en")
    tree, reinserted = trees.penn_tree(FULL, tokens)
    assert reinserted == 0
    assert tree.leaves() == tokens
    assert tree.to_penn() == (
        "(S (PP (IN in) (NP (DT the) (NN beginning))) (, ,) (S (NP (NNP god)) (VP (VBD created) "
        "(NP (DT the) (NN heavens) (CC and) (DT the) (NN earth)))) (. .))")


def test_null_linked_word_stays_in_place_and_hidden_brackets_are_reinserted():
    tokens = ["yahweh", ",", "-LRB-", "how", "-RRB-", "my", "adversaries", "have", "increased", "!"]
    assert trees.parser_input(tokens) == "yahweh , how my adversaries have increased !"
    tree, reinserted = trees.penn_tree(NULL_LINKED, tokens)
    assert reinserted == 2
    assert tree.leaves() == tokens
    assert "(-LRB- -LRB-) (WRB how) (-RRB- -RRB-)" in tree.to_penn()


def test_dropped_words_are_reinserted_after_the_preceding_leaf():
    tokens = "the servants ' houses were burned ; abraham 's son said .".split()
    tree, reinserted = trees.penn_tree(DROPPED, tokens)
    assert reinserted == 6
    assert tree.leaves() == tokens
    assert tree.to_penn().endswith("(ADJP (VBD burned) (: ;) (X abraham) (POS 's) (X son) (X said) (. .))))")


def test_split_token_is_merged_back():
    tokens = ["the", "burnt-offering", "."]
    tree, reinserted = trees.penn_tree("(S (NP the burnt.a - offering.n) .)", tokens)
    assert tree.leaves() == tokens and reinserted == 0
    assert tree.to_penn() == "(S (NP (DT the) (JJ burnt-offering)) (. .))"


def test_mismatch_raises_and_fallback_is_flat():
    with pytest.raises(trees.LeafMismatch):
        trees.penn_tree("(S (NP something.n else.n entirely.e))", ["god", "said", "so"])
    tree = trees.fallback_tree(["and", "god", "said", "-LRB-", "3", "-RRB-"])
    assert tree.to_penn() == "(S (CC and) (X god) (X said) (-LRB- -LRB-) (CD 3) (-RRB- -RRB-))"
    # with the original casing, a capitalized word in mid-sentence is a name
    tree = trees.fallback_tree(["judah", "and", "judah", "wept"], ["Judah", "and", "Judah", "wept"])
    assert tree.to_penn() == "(S (X judah) (CC and) (NNP judah) (X wept))"


def test_sentence_tree_falls_back_when_there_is_no_parse():
    tokens = ["god", "said", "."]
    tree, kind, _ = parse.sentence_tree({"kind": "timeout", "tree": None, "nulls": 0}, tokens)
    assert kind == "fallback" and tree.leaves() == tokens
    tree, kind, _ = parse.sentence_tree({"kind": "full", "tree": "(S (NP x.n))", "nulls": 0}, tokens)
    assert kind == "fallback" and tree.leaves() == tokens


def test_verse_tree_and_sentence_split():
    tokens = tokenize('God said, "Let there be light." And there was light; it was good.', "en")
    spans = trees.split_sentences(tokens)
    assert [tokens[a:b] for a, b in spans] == [
        ["god", "said", ",", '"', "let", "there", "be", "light", ".", '"'],
        ["and", "there", "was", "light", ";"], ["it", "was", "good", "."]]
    verse = trees.verse_tree([trees.fallback_tree(tokens[a:b]) for a, b in spans])
    assert verse.label == "TOP" and verse.leaves() == tokens
    # a short piece is joined to its neighbour
    assert trees.split_sentences(["yes", ".", "god", "said", "so", "."]) == [(0, 6)]


def test_long_sentences_are_cut_at_the_comma_nearest_the_middle():
    tokens = "a b c , d e f g , h i j k l , m n .".split()
    assert trees.split_sentences(tokens, max_length=10) == [(0, 9), (9, 18)]
    assert trees.split_sentences(tokens, max_length=30) == [(0, 18)]
    # no comma: the piece stays whole
    assert trees.split_sentences("a b c d e f g h .".split(), max_length=4) == [(0, 9)]


def test_tags():
    assert trees.tag_for("created", "v-d") == "VBD"
    assert trees.tag_for("said", "q-d") == "VBD"
    assert trees.tag_for("heavens", "p") == "NNS"
    assert trees.tag_for("and", "j-n") == "CC"
    assert trees.tag_for("the", None) == "DT"
    assert trees.tag_for("3:16", None) == "CD"
    assert trees.tag_for("-LRB-", None) == "-LRB-"
    assert trees.split_leaf("{how}") == ("how", None)
    assert trees.split_leaf("blah[?].n") == ("blah", "n")
    assert trees.split_leaf(".") == (".", None)


FAKE_WORKER = textwrap.dedent('''
    import json, sys, time
    print(json.dumps({"ready": True, "version": "fake"}), flush=True)
    for line in sys.stdin:
        text = json.loads(line)["text"]
        if "slow" in text:
            time.sleep(60)
        # capitalized words get the given-name suffix .m (-> NNP), other words .n
        words = " ".join(word + (".m" if word[0].isupper() else ".n") if word.isalpha() else word
                         for word in text.split())
        print(json.dumps({"kind": "full", "tree": "(S " + words + ")", "nulls": 0}), flush=True)
''')


def test_hard_time_limit_kills_the_worker_and_the_cache_resumes(tmp_path, monkeypatch):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    monkeypatch.setattr(parse, "WORKER_SCRIPT", script)
    settings = parse.ParserSettings(hard_limit=1.0)
    verses = [["god", "said", "so", "."], ["a", "slow", "verse", "."], ["and", "it", "was", "."]]
    cache = tmp_path / "parse.sqlite"
    result = parse.parse_verses(verses, cache, tmp_path / "work", processes=2, settings=settings)
    assert result.statistics["link_grammar_answers"] == {"full": 2, "timeout": 1}
    assert result.statistics["verses_by_kind"] == {"full": 2, "fallback": 1}
    assert result.statistics["worker_restarts_this_run"] == 1
    # a second run reads every answer (the timeout too) from the cache: no worker starts
    monkeypatch.setattr(parse, "WORKER_SCRIPT", tmp_path / "missing.py")
    again = parse.parse_verses(verses, cache, tmp_path / "work", processes=2, settings=settings)
    assert again.trees == result.trees
    assert again.statistics["sentences_parsed_this_run"] == 0
    assert again.statistics["sentences_from_cache_this_run"] == 3


FLAKY_WORKER = textwrap.dedent('''
    import json, os, sys
    flag = sys.argv[0] + ".started"  # the first process starts, every later one fails
    if os.path.exists(flag):
        sys.exit(3)
    open(flag, "w").close()
    print(json.dumps({"ready": True, "version": "fake"}), flush=True)
    for line in sys.stdin:
        pass
''')


def test_a_worker_that_cannot_start_stops_the_workers_started_before_it(tmp_path, monkeypatch):
    """WorkerPool: the second worker fails to start; the error says so, and the first worker is stopped and
    the log closed (an unclosed log fails the test through the ResourceWarning filter of pyproject.toml)."""
    script = tmp_path / "flaky_worker.py"
    script.write_text(FLAKY_WORKER)
    monkeypatch.setattr(parse, "WORKER_SCRIPT", script)
    started = []
    start = parse.Worker.__init__

    def recording_start(worker, *args, **kwargs):
        started.append(worker)
        start(worker, *args, **kwargs)

    monkeypatch.setattr(parse.Worker, "__init__", recording_start)
    with pytest.raises(RuntimeError, match="did not start"):
        parse.WorkerPool(parse.ParserSettings(), 2, tmp_path / "workers.log")
    assert len(started) == 2
    assert started[0].process.returncode is not None
    assert started[0].process.stdout.closed


link_grammar = pytest.mark.skipif(not parse.link_grammar_available(),
                                  reason="link-grammar Python bindings (Debian python3-link-grammar) not importable")


def test_parser_sees_cased_tokens_and_leaves_are_lowercased(tmp_path, monkeypatch):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    monkeypatch.setattr(parse, "WORKER_SCRIPT", script)
    text = "Then Moses said (quietly): Go!"
    cased, lowered = tokenize(text, "en", lowercase=False), tokenize(text, "en")
    assert [t.lower() if t not in ("-LRB-", "-RRB-") else t for t in cased] == lowered
    result = parse.parse_verses([lowered], None, tmp_path / "work", processes=1, parser_verses=[cased])
    assert result.trees[0] == ("(TOP (S (RB then) (NNP moses) (NN said) (-LRB- -LRB-) (NN quietly) "
                               "(-RRB- -RRB-) (: :) (NNP go) (. !)))")
    assert result.statistics["sentences_with_reinserted_tokens"] == 1     # the brackets
    with pytest.raises(ValueError, match="verse 0: cased tokens"):
        parse.parse_verses([lowered], None, tmp_path / "work", processes=1, parser_verses=[cased[:-1]])


@link_grammar
def test_real_link_grammar_parses_keep_leaves_equal_to_tokens(tmp_path):
    texts = ["In the beginning, God created the heavens and the earth.",
             "Yahweh, how my adversaries have increased!",
             "The servants' houses (which were old) were burned; Abraham's son said: blah flurb the was of."]
    verses = [tokenize(text, "en") for text in texts]
    result = parse.parse_verses(verses, tmp_path / "parse.sqlite", tmp_path / "work", processes=1)
    for tokens, tree in zip(verses, result.trees):
        leaves = [leaf.rstrip(")") for leaf in tree.split() if not leaf.startswith("(")]
        assert leaves == tokens
    assert result.statistics["sentences_by_kind"].get("full", 0) >= 1
    assert result.statistics["sentences_by_kind"].get("null", 0) >= 1
