"""The KenLM n-gram language model, and a slow pure-Python reference for tests.

`LanguageModel(path)` loads an ARPA file, a KenLM probing binary or a
rest_probing binary (lower-order rest costs, Heafield et al. 2012: `cky data
bible-es-en --rest-lm` builds lm.rest.bin) and scores through KenLM's C++ code
(compiled into decoder._ext._lm). Rest costs change only the estimates for
words whose left context is not known yet; complete sentences score the same. Scores are log10
probabilities. The decoder scores rule applications from Cython through the
nogil functions declared in ext/_lm.pxd; the Python methods here are for
loading, vocabulary mapping, checks and tools:

    lm = LanguageModel("model.arpa")
    lm.score_sentence("the house is small")           # with <s> and </s>
    ids = lm.vocab_indices(target_vocabulary)          # uint32, once per grammar
    score, state = lm.score_target(["the", "house"])   # one rule application
    score, state = lm.score_target(["<s>", state, "is", "small", "</s>"])

`ArpaReference` reads an ARPA file into dictionaries and scores with the
textbook backoff formula; its `score_target` composes chart items from their
boundary words (Chiang 2007) without KenLM's state minimization. Tests use it
as an independent answer for the compiled code.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

from decoder._ext import compiled_module

_lm = compiled_module("_lm")
LanguageModel, PyChartState = _lm.LanguageModel, _lm.PyChartState

__all__ = ["LanguageModel", "PyChartState", "ArpaReference", "ReferenceState"]

BOS = "<s>"
EOS = "</s>"
UNK = "<unk>"
# What KenLM charges for <unk> when an ARPA file lacks it (Config default).
MISSING_UNK_LOGPROB = -100.0


@dataclass(frozen=True)
class ReferenceState:
    """Boundary words of a chart item, in sentence order.

    `right` is None for a short item (at most n-1 words): then `left` holds all
    its words. Otherwise `left` and `right` are its first and last n-1 words.
    """

    left: tuple
    right: tuple | None = None


# A token of a rule application being composed: a word and whether its
# probability has been added already; None stands for elided middle words.
_Token = Union[tuple, None]


class ArpaReference:
    """An ARPA n-gram model in plain dictionaries (slow; for tests)."""

    def __init__(self, path):
        self.path = str(path)
        self.logprobs: dict[tuple, float] = {}
        self.backoffs: dict[tuple, float] = {}
        self.order = 0
        self._read(self.path)
        self.vocabulary = {ngram[0] for ngram in self.logprobs if len(ngram) == 1}

    def _read(self, path):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as lines:
            section = None
            for line in lines:
                line = line.strip()
                if not line:
                    continue
                if line == "\\data\\":
                    section = "data"
                elif line == "\\end\\":
                    break
                elif line.startswith("\\") and line.endswith("-grams:"):
                    section = int(line[1:].split("-")[0])
                    self.order = max(self.order, section)
                elif section == "data":
                    continue  # "ngram N=count": the sections tell us the same
                elif isinstance(section, int):
                    fields = line.split()
                    words = tuple(fields[1 : 1 + section])
                    self.logprobs[words] = float(fields[0])
                    if len(fields) > 1 + section:
                        self.backoffs[words] = float(fields[1 + section])

    def _known(self, word):
        return word if word in self.vocabulary else UNK

    def logprob(self, context: Sequence[str], word: str) -> float:
        """log10 p(word | context), context oldest first, with backoff."""
        word = self._known(word)
        context = [self._known(w) for w in context]
        context = context[len(context) - (self.order - 1) :] if self.order > 1 else []
        backoff = 0.0
        for start in range(len(context) + 1):  # longest history first
            history = tuple(context[start:])
            if history + (word,) in self.logprobs:
                return backoff + self.logprobs[history + (word,)]
            backoff += self.backoffs.get(history, 0.0)
        return backoff + MISSING_UNK_LOGPROB

    def score_sentence(self, words: Union[str, Iterable[str]], bos=True, eos=True) -> float:
        """log10 probability of a sentence, like kenlm.Model.score."""
        if isinstance(words, str):
            words = words.split()
        context = [BOS] if bos else []
        total = 0.0
        for word in list(words) + ([EOS] if eos else []):
            total += self.logprob(context, word)
            context.append(word)
        return total

    # ---- chart composition from boundary words ----

    def score_target(self, items) -> tuple[float, ReferenceState]:
        """Score one rule application: items are words (str) and child ReferenceStates.

        Adds the probability of every word whose n-1 words of context (or all
        context back to a leading <s>) become known here and were not scored
        in a child; returns that sum and the new item's boundary words.
        """
        tokens: list[_Token] = []
        for position, item in enumerate(items):
            if isinstance(item, ReferenceState):
                tokens.extend(self._child_tokens(item))
            else:
                # <s> is context only: never scored itself.
                tokens.append((item, position == 0 and item == BOS))
        total = 0.0
        for i, token in enumerate(tokens):
            if token is None or token[1]:
                continue
            context = self._known_context(tokens, i)
            if context is not None:
                total += self.logprob(context, token[0])
        return total, self._state(tokens)

    def score_sentence_boundaries(self, root: ReferenceState) -> tuple[float, ReferenceState]:
        """Add <s> and </s> around a complete item."""
        return self.score_target([BOS, root, EOS])

    def _child_tokens(self, state: ReferenceState) -> list[_Token]:
        # A child's first n-1 words still lack left context unless it starts
        # with <s>; its last n-1 words were all scored inside it.
        left_scored = bool(state.left) and state.left[0] == BOS
        tokens = [(word, left_scored) for word in state.left]
        if state.right is not None:
            tokens.append(None)
            tokens.extend((word, True) for word in state.right)
        return tokens

    def _known_context(self, tokens: list[_Token], i: int):
        """The n-1 words before tokens[i], or all of them after a leading <s>; None if unknown."""
        context = []
        j = i - 1
        while j >= 0 and len(context) < self.order - 1:
            if tokens[j] is None:
                return None
            context.append(tokens[j][0])
            j -= 1
        context.reverse()
        if len(context) == self.order - 1 or (j < 0 and tokens and tokens[0] == (BOS, True)):
            return context
        return None

    def _state(self, tokens: list[_Token]) -> ReferenceState:
        words_known = None not in tokens
        keep = self.order - 1
        if words_known and len(tokens) <= keep:
            return ReferenceState(tuple(token[0] for token in tokens))
        # Elided middles sit at least n-1 tokens from either end, so both ends are words.
        left = tuple(token[0] for token in tokens[:keep])
        right = tuple(token[0] for token in tokens[len(tokens) - keep :]) if keep else ()
        return ReferenceState(left, right)
