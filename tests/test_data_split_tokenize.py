"""The split rule, the tokenizer and the detokenizer."""
import pytest

from decoder.data.split import split_of, split_positions
from decoder.data.tokenize import detokenize, tokenize


def test_split_rule():
    assert split_of(0) == "test" and split_of(25) == "dev" and split_of(50) == "test"
    assert split_of(1) == split_of(24) == split_of(26) == split_of(49) == "train"
    assert split_of(29950) == "test" and split_of(29975) == "dev"
    assert split_of(30000) == split_of(30025) == "train"
    parts = split_positions(30800)
    assert len(parts["test"]) == 600 and len(parts["dev"]) == 600
    assert len(parts["train"]) == 30800 - 1200
    assert sorted(parts["train"] + parts["dev"] + parts["test"]) == list(range(30800))
    with pytest.raises(ValueError):
        split_of(-1)


def test_tokenize_english():
    tokens = tokenize("God said, “Let there be light,” and Abraham’s servants’ houses (3:16) don’t—burn!", "en")
    assert tokens == ["god", "said", ",", '"', "let", "there", "be", "light", ",", '"', "and", "abraham", "'s",
                      "servants", "'", "houses", "-LRB-", "3:16", "-RRB-", "don't", "--", "burn", "!"]


def test_tokenize_spanish():
    assert tokenize("¿Y dijo Dios: Sea la luz? (y fué la luz).", "es") == [
        "¿", "y", "dijo", "dios", ":", "sea", "la", "luz", "?", "-LRB-", "y", "fué", "la", "luz", "-RRB-", "."]
    # no clitic splitting in Spanish
    assert tokenize("Jehová's", "es") == ["jehová's"]


def test_tokenize_rejects_unknown_language():
    with pytest.raises(ValueError, match="unknown language"):
        tokenize("x", "fr")


def test_detokenize():
    tokens = tokenize("God said, “Let there be light,” and there was light. Abraham’s sons.", "en")
    assert detokenize(tokens, "en") == 'God said, "let there be light," and there was light. Abraham\'s sons.'
    assert detokenize(["¿", "y", "dijo", "dios", "?", "-LRB-", "sí", "-RRB-"], "es") == "¿Y dijo dios? (Sí)"
