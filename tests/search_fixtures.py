"""Tiny random grammars and sentences for the search tests (the toy ARPA is in conftest.py)."""
from __future__ import annotations

import random

import pytest

from conftest import write_toy_arpa
from decoder.grammar import Rule, unescape_word

LABELS = ("A", "B", "C")
SOURCE_WORDS = ("a", "b", "c", "d")
TARGET_WORDS = ("x", "y", "z", "w")
# the binarizations every search test runs on, and the features and weights of random_rules' stores
STRATEGIES = ("left", "right", "icr", "monolingual")
FEATURES = ["p1", "p2"]
WEIGHTS = {"p1": 0.7, "p2": 0.3, "lm": 1.0, "word_count": 0.4, "oov": -3.0, "glue": -0.6}
WEIGHTS_HEAVIER_LM = dict(WEIGHTS, lm=1.3)


def write_arpa(directory) -> str:
    return str(write_toy_arpa("search", directory, "tiny.arpa"))


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    """KenLM (decoder.lm.LanguageModel) over the toy trigram of write_arpa; a module imports it to use it."""
    from decoder.lm import LanguageModel

    return LanguageModel(write_arpa(tmp_path_factory.mktemp("lm")))


def random_source(rng: random.Random, arity: int, word_probability: float) -> list:
    """A random source side: slots 0..arity-1 in order, with a random source word before, between
    and after them, each with `word_probability`."""
    source = []
    for slot in range(arity + 1):
        if rng.random() < word_probability:
            source.append(rng.choice(SOURCE_WORDS))
        if slot < arity:
            source.append(slot)
    return source


def random_rules(seed: int, n_rules: int = 14, max_arity: int = 3, n_features: int = 2) -> list[Rule]:
    rng = random.Random(seed)
    rules = []
    # Some one-word lexical rules so that most words have a translation.
    for word in SOURCE_WORDS[:3]:
        for _ in range(rng.randint(1, 2)):
            target = tuple(rng.choice(TARGET_WORDS) for _ in range(rng.randint(1, 2)))
            rules.append(Rule(rng.choice(LABELS), (word,), target, (),
                              tuple(round(rng.uniform(0.05, 1.0), 3) for _ in range(n_features))))
    while len(rules) < n_rules:
        arity = rng.randint(1, max_arity)
        labels = tuple(rng.choice(LABELS) for _ in range(arity))
        source = random_source(rng, arity, 0.3)
        order = list(range(arity))
        if rng.random() < 0.5:
            rng.shuffle(order)
        target = []
        for slot in order + [None]:
            if rng.random() < 0.3:
                target.append(rng.choice(TARGET_WORDS))
            if slot is not None:
                target.append(slot)
        if arity == 1 and len(source) == 1 and labels[0] == "A" and rng.random() < 0.5:
            pass  # keep some pure unary rules
        rules.append(Rule(rng.choice(LABELS), tuple(source), tuple(target), labels,
                          tuple(round(rng.uniform(0.05, 1.0), 3) for _ in range(n_features))))
    return rules


def random_sentence(seed: int, length: int) -> list[str]:
    rng = random.Random(1000 + seed)
    return [rng.choice(SOURCE_WORDS + ("q",)) for _ in range(length)]


def write_random_store(directory, seed: int, strategy: str, feature_names, **rule_options):
    """(BinaryGrammar, GrammarStore) of random_rules(seed) binarized with `strategy`, written under directory."""
    from decoder.binarize import binarize
    from decoder.store import GrammarStore, write_store

    grammar = binarize(random_rules(seed, **rule_options), strategy)
    options = "-".join(f"{k}{v}" for k, v in sorted(rule_options.items()))
    path = directory / f"{seed}-{strategy}-{options}"
    write_store(grammar, path, feature_names=feature_names)
    return grammar, GrammarStore.open(path)


def random_store_cache(tmp_path_factory, strategy_of_seed, **rule_options):
    """get(seed) -> GrammarStore of write_random_store(seed, strategy_of_seed(seed)), written once per module."""
    directory = tmp_path_factory.mktemp("stores")
    cache = {}

    def get(seed):
        if seed not in cache:
            cache[seed] = write_random_store(directory, seed, strategy_of_seed(seed), FEATURES, **rule_options)[1]
        return cache[seed]

    return get


def lm_estimate(reference, target) -> float:
    """log10 of each maximal run of target words scored on its own by `reference` (an ArpaReference),
    no <s>/</s>: the LM estimate of a rule's words (rule_order and table_limit_rank "estimate")."""
    total, words = 0.0, []
    for item in list(target or ()) + [None]:
        if isinstance(item, str):
            words.append(unescape_word(item))
        elif words:
            total += reference.score_sentence(words, bos=False, eos=False)
            words = []
    return total
