"""A tiny Spanish-English system that translates Genesis 1:1, for the viewer's tests."""
from __future__ import annotations

from decoder.binarize import binarize
from decoder.grammar import Rule
from decoder.store import write_store
from models.fixtures.build_fixture import write_arpa

VERSE = "en el principio creó dios los cielos y la tierra ."
TRANSLATION = "in the beginning god created the heavens and the earth ."
FEATURES = ["p_e_given_f", "p_f_given_e"]


def genesis_rules() -> list[Rule]:
    def r(lhs, source, target, labels=(), scores=(0.8, 0.7)):
        return Rule(lhs, tuple(source), tuple(target), tuple(labels), tuple(scores))

    lexicon = [("IN", "en", "in"), ("DT", "el", "the"), ("NN", "principio", "beginning"), ("VBD", "creó", "created"),
               ("NNP", "dios", "god"), ("DT", "los", "the"), ("NNS", "cielos", "heavens"), ("CC", "y", "and"),
               ("DT", "la", "the"), ("NN", "tierra", "earth"), (".", ".", ".")]
    return [r(lhs, [f], [e]) for lhs, f, e in lexicon] + [
        r("NN", ["principio"], ["start"], scores=(0.2, 0.3)),
        r("NP", [0, 1], [0, 1], ["DT", "NN"]),
        r("NP", [0, 1], [0, 1], ["DT", "NNS"]),
        r("NP", [0, 1, 2], [0, 1, 2], ["NP", "CC", "NP"]),
        r("PP", [0, 1], [0, 1], ["IN", "NP"]),
        # Spanish verb-subject order to English subject-verb: a reordering rule of four nonterminals
        r("S", [0, 1, 2, 3, 4], [0, 2, 1, 3, 4], ["PP", "VBD", "NNP", "NP", "."], scores=(0.6, 0.6)),
    ]


def write_genesis_model(directory) -> str:
    """Store, bigram LM and config under `directory`; returns the config's path."""
    write_arpa([TRANSLATION.split()], str(directory / "lm.arpa"), order=2)
    write_store(binarize(genesis_rules(), "icr"), directory / "store", feature_names=FEATURES)
    config = directory / "config.toml"
    config.write_text('store = "store"\nlm = "lm.arpa"\n\n[weights]\nlm = 1.0\nword_count = 0.3\n')
    return str(config)
