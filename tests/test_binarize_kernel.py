"""The compiled binarization loop (decoder._ext._rule_binarizer.RuleBinarizer) against its pure-Python
reference (decoder.binarize.reference.binarize_reference): identical grammars and reports."""
import pytest

from decoder.binarize import STRATEGIES, binarize
from decoder.binarize.reference import binarize_reference
from decoder.grammar import Rule, parse_rule
from decoder.synthetic import random_grammar


def _outputs(grammar):
    report = dict(grammar.report)
    report.pop("seconds")
    # repr as well as ==: a word must stay a str and a block reference an int, not just compare equal.
    return [(name, value, repr(value)) for name, value in
            (("rules", grammar.rules), ("binarizations", grammar.binarizations),
             ("bucket_keys", grammar.bucket_keys), ("non_binarizable", grammar.non_binarizable),
             ("report", report))]


def _assert_same(rules, strategy, seed=0, policy="monolingual"):
    fast = binarize(rules, strategy, seed=seed, non_binarizable=policy)
    slow = binarize_reference(rules, strategy, seed=seed, non_binarizable=policy)
    for (name, value, text), (_, expected, expected_text) in zip(_outputs(fast), _outputs(slow)):
        assert value == expected and text == expected_text, f"{strategy}/{policy}: {name} differs"


GRAMMARS = {
    "zipf": dict(n_rules=1500, seed=1),
    "many-inversions": dict(n_rules=1500, seed=2, n_labels=6, source_vocab=12, target_vocab=12,
                            mean_nonterminals=3.0, monotone=0.5, inverted=0.2),
    "long-rules": dict(n_rules=600, seed=3, n_labels=40, mean_nonterminals=4.5, max_nonterminals=9,
                       terminal_probability=0.6, monotone=0.2, inverted=0.1),
}


@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kernel_equals_reference_on_random_grammars(grammar, strategy):
    config = dict(GRAMMARS[grammar])
    rules = random_grammar(config.pop("n_rules"), **config)
    for seed in ([0, 5] if strategy == "random" else [0]):
        _assert_same(rules, strategy, seed=seed)
    _assert_same(rules, strategy, policy="drop")


EDGE_CASES = [
    "la casa [X] ||| the house [NP] ||| 1",  # lexical: one terminal-run token
    "[X][NP] [X] ||| [X][NP] [S] ||| 1",  # unary
    "[X][A] [X][B] [X] ||| [X][B] [X][A] [S] ||| 1",  # inverted pair, no terminals
    "a [X][A] b c [X][B] d [X] ||| w [X][B] x y [X][A] z [S] ||| 1",  # terminals everywhere
    "[X][A] [X][B] [X][C] [X][D] [X] ||| [X][B] [X][D] [X][A] [X][C] [S] ||| 1",  # (2,4,1,3): not binarizable
    "x [X][A] [X][B] [X][C] [X][D] y [X] ||| [X][C] [X][A] [X][D] [X][B] z [S] ||| 1",  # (3,1,4,2)
    "[X][A] x [X][B] [X] ||| [X][A] t u v [X][B] [S] ||| 1",
    "[X][A] x [X][B] y [X][C] [X] ||| [X][C] [X][B] [X][A] [S] ||| 1",
]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kernel_equals_reference_on_edge_cases(strategy):
    rules = [parse_rule(line) for line in EDGE_CASES]
    # Names that could confuse a kernel keyed on strings: a target word spelled like a block
    # reference, a label that looks virtual, words with spaces inside.
    rules.append(Rule("<X>", ("[0]", 0, "a b"), ("[0]", 0, "[1]"), ("<mono A>",)))
    rules.append(Rule("S", (0, "a b", 1), (1, "[0]", 0), ("A", "a b")))
    rules.append(Rule("S", (0, "a", "b", 1), (1, "[0]", 0), ("A", "B")))
    rules = rules * 2  # repeated rules share their virtual rules
    for policy in ("monolingual", "drop"):
        for seed in (0, 1, 2):
            _assert_same(rules, strategy, seed=seed, policy=policy)


def test_names_spelled_alike_from_different_target_yields_are_one_virtual_nonterminal():
    # The kernel tells names apart by their keys (bucket, yield) until a word could make two keys
    # spell one name: here the target word "[0]" next to slot 0. Worked by hand for `left`:
    # both rules make (X a), named <[X] a || [0] [0]> (slot then word, word then slot: two rules,
    # one name), and ((X a) Y), named <[X] a [Y] || [0] [0] [1]>, with equal children and target,
    # so one shared rule. 2 virtual names; 2 + 1 virtual rules + 2 top rules = 5.
    rules = [Rule("S", (0, "a", 1, 2), (0, "[0]", 1, 2), ("X", "Y", "Z")),
             Rule("S", (0, "a", 1, 2), ("[0]", 0, 1, 2), ("X", "Y", "Z"))]
    grammar = binarize(rules, "left")
    assert sorted({r.lhs for r in grammar.rules if r.origin < 0}) == ["<[X] a [Y] || [0] [0] [1]>",
                                                                     "<[X] a || [0] [0]>"]
    assert grammar.report["virtual_nonterminals"] == 2
    assert grammar.report["binary_rules"] == 5
    _assert_same(rules, "left")


def test_names_spelled_alike_from_different_source_tokens_are_one_virtual_nonterminal():
    # A source word "[Y]" in the run "a [Y]" spells L(v) like the run "a" and the label Y. By hand
    # (monolingual): the first rule makes <mono a [Y] [X]> over (run, X); the second makes
    # <mono a [Y]> over (a, Y) and <mono a [Y] [X]> over ((a Y), X): 2 names, 3 virtual rules.
    rules = [Rule("S", ("a", "[Y]", 0, 1), (0, 1), ("X", "Z")),
             Rule("S", ("a", 0, 1, 2), (0, 1, 2), ("Y", "X", "Z"))]
    grammar = binarize(rules, "monolingual")
    assert sorted({r.lhs for r in grammar.rules if r.origin < 0}) == ["<mono a [Y] [X]>", "<mono a [Y]>"]
    assert grammar.report["virtual_nonterminals"] == 2
    assert grammar.report["binary_rules"] == 5
    _assert_same(rules, "monolingual")


def test_sequence_index_against_a_dict_of_tuples():
    import random

    from decoder._ext._sequence_index import SequenceIndex

    rng = random.Random(3)
    index, expected = SequenceIndex(), {}
    for _ in range(20_000):  # enough to grow the table several times
        values = [rng.randrange(-3, 40) for _ in range(rng.randrange(0, 5))]
        is_new = tuple(values) not in expected
        assert index.add(values) == (expected.setdefault(tuple(values), len(expected)), is_new)
    assert len(index) == len(expected)
    for values, sequence_id in expected.items():
        assert index.sequence(sequence_id) == list(values)
        assert index.add(list(values)) == (sequence_id, False)


def test_binarize_restores_the_garbage_collector_state():
    import gc

    rules = random_grammar(200, seed=7)
    assert gc.isenabled()
    binarize(rules, "left")
    assert gc.isenabled()
    gc.disable()
    try:
        binarize(rules, "icr")
        assert not gc.isenabled()
    finally:
        gc.enable()
