"""KenLM n-gram language model, scored through KenLM's own C++ structures.

The decoder's hot path calls the nogil functions declared in _lm.pxd
(score_target and friends) with a LanguageModel's `model` pointer; the Python
methods here are for loading, vocabulary mapping, tests and tools.
"""
import errno
import os
import re
import time

import numpy as np

from decoder.errors import InputError

from libc.stdint cimport int32_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._kenlm cimport (ARPA_COMPLAIN_NONE, ARRAY_TRIE, PROBING, QUANT_ARRAY_TRIE, QUANT_TRIE,
                                  REST_PROBING, TRIE, ChartState, Config, Model, ModelType, ProbingModel,
                                  ProbingVocabulary, RecognizeBinary, RestProbingModel, State, WordIndex,
                                  hash_value)

cdef extern from "lm_rule_score.hh":
    float CkyScoreTarget(const Model &model, const int32_t *target, Py_ssize_t length,
                         const ChartState * const *children, ChartState &out,
                         unsigned long long *queries) nogil
    float CkyScorePartialTarget(const Model &model, const int32_t *target, Py_ssize_t length,
                                const ChartState * const *children, const unsigned char *cut,
                                unsigned long long *queries) nogil
    float CkyScoreSentenceBoundaries(const Model &model, const ChartState &root,
                                     ChartState &out, unsigned long long *queries) nogil
    float CkyScoreWords(const Model &model, const WordIndex *words, Py_ssize_t length,
                        bint bos, bint eos) nogil
    const ProbingVocabulary &CkyVocabulary(const Model &model) nogil
    unsigned char CkyOrder(const Model &model) nogil
    void CkyEmptyChartState(ChartState &out) nogil


# ---- nogil API (declared in _lm.pxd) ----

cdef float score_target(const Model *model, const int32_t *target, Py_ssize_t length,
                        const ChartState * const *children, ChartState *out,
                        unsigned long long *queries) noexcept nogil:
    return CkyScoreTarget(model[0], target, length, children, out[0], queries)


cdef float score_partial_target(const Model *model, const int32_t *target, Py_ssize_t length,
                                const ChartState * const *children, const unsigned char *cut,
                                unsigned long long *queries) noexcept nogil:
    return CkyScorePartialTarget(model[0], target, length, children, cut, queries)


cdef unsigned char cut_chart_state(const ChartState *state, int left, int right, ChartState *out) noexcept nogil:
    out[0] = state[0]
    if left < state.left.length:
        out.left.length = <unsigned char>left
    if right < state.right.length:
        out.right.length = <unsigned char>right
    if out.left.length < state.left.length:
        out.left.full = False
    return (1 if out.left.length < state.left.length else 0) | (2 if out.right.length < state.right.length else 0)


cdef float score_sentence_boundaries(const Model *model, const ChartState *root, ChartState *out,
                                     unsigned long long *queries) noexcept nogil:
    return CkyScoreSentenceBoundaries(model[0], root[0], out[0], queries)


cdef float score_word_ids(const Model *model, const WordIndex *words, Py_ssize_t length,
                          bint bos, bint eos) noexcept nogil:
    return CkyScoreWords(model[0], words, length, bos, eos)


cdef void empty_chart_state(ChartState *out) noexcept nogil:
    CkyEmptyChartState(out[0])


cdef uint64_t chart_state_hash(const ChartState *state) noexcept nogil:
    return hash_value(state[0])


# ---- Python API ----

_BINARY_TYPE_NAMES = {
    PROBING: "probing",
    REST_PROBING: "rest_probing",
    TRIE: "trie",
    QUANT_TRIE: "quantized trie",
    ARRAY_TRIE: "array trie",
    QUANT_ARRAY_TRIE: "quantized array trie",
}


cdef bytes _encode(word):
    cdef bytes encoded
    if isinstance(word, bytes):
        encoded = word
    elif isinstance(word, str):
        try:
            encoded = (<str>word).encode("utf-8")
        except UnicodeEncodeError as error:  # a lone surrogate ("\\ud800") is no text: that line is bad input
            raise InputError(None, f"the word {word!r} is not valid Unicode text (a lone surrogate, "
                                   f"U+{ord(word[error.start]):04X}): the sentence cannot be scored") from None
    else:
        raise TypeError(f"words must be str or bytes, not {type(word).__name__}")
    # KenLM looks words up as C strings: "a\0b" would be scored as the word "a"
    if b"\0" in encoded:
        raise InputError(None, f"the word {word!r} holds a NUL character: the sentence cannot be scored")
    return encoded


# KenLM's exceptions begin with the C++ source line that threw ("/path/lm/binary_format.cc:160 in void*
# lm::ngram::...LoadBinary(...) threw FormatLoadException because `...'."), then say what is wrong.
_KENLM_WHERE = re.compile(r"^\S+:\d+ in .*? threw (\w+)(?: because `[^\n]*')?\.?", re.S)


def _kenlm_reason(error) -> str:
    """KenLM's message without the C++ source location, on one line (the exception's name if that is all)."""
    text = str(error)
    where = _KENLM_WHERE.match(text)
    if where is not None:
        text = text[where.end():].strip() or where.group(1)
    return " ".join(text.split())


cdef class PyChartState:
    """A KenLM ChartState (left and right LM context of a chart item).

    Equal states recombine: == and hash follow KenLM's operator== and hash_value.
    """
    cdef ChartState state

    def __eq__(self, other):
        if not isinstance(other, PyChartState):
            return NotImplemented
        return self.state == (<PyChartState>other).state

    def __hash__(self):
        cdef Py_hash_t value = <Py_hash_t>hash_value(self.state)
        return -2 if value == -1 else value  # -1 means "error" to CPython

    @property
    def left_length(self):
        """Number of leftmost words whose probability still lacks left context."""
        return self.state.left.length

    @property
    def left_full(self):
        """True if words to the left can no longer change this item's score."""
        return bool(self.state.left.full)

    @property
    def right_words(self):
        """KenLM ids of the rightmost words that still matter, in sentence order."""
        return tuple(self.state.right.words[i] for i in reversed(range(self.state.right.length)))

    def partial(self, int left, int right):
        """This state as a trie node that reveals only its first `left` left words and its `right`
        most recent right words shows it (cut_chart_state): returns (PyChartState, cut)."""
        cdef ChartState out
        cdef unsigned char cut = cut_chart_state(&self.state, left, right, &out)
        return _wrap_state(out), cut

    def __repr__(self):
        return (f"PyChartState(left_length={self.left_length}, left_full={self.left_full}, "
                f"right_words={self.right_words})")


cdef PyChartState _wrap_state(const ChartState &state):
    cdef PyChartState wrapped = PyChartState.__new__(PyChartState)
    wrapped.state = state
    return wrapped


cdef class LanguageModel:
    """A KenLM model from an ARPA file, a probing binary (build_binary's default) or
    a rest-cost probing binary (`build_binary -r "order1.arpa ..." probing ...`:
    Heafield, Koehn and Lavie 2012, decoder.data.lm_build.build_rest_model).

    Scores are log10 probabilities. `model` is the model handle (ext/lm_model.hh)
    for the nogil functions of this module. Rest costs change only the estimates
    for words whose left context is not yet known (a chart item's first words, a
    rule's words scored on their own); a complete sentence scores the same.
    """

    def __cinit__(self):
        self.handle.probing = NULL
        self.handle.rest = NULL
        self.model = NULL

    def __init__(self, path):
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, "language model file not found", path)
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "language model path is a directory", path)
        if not os.access(path, os.R_OK):
            raise PermissionError(errno.EACCES, "language model file is not readable", path)
        cdef bytes c_path = os.fsencode(path)
        cdef ModelType binary_type = PROBING
        try:
            is_binary = RecognizeBinary(c_path, binary_type)
        except Exception as error:
            raise ValueError(f"cannot read language model {path}: {_kenlm_reason(error)}") from None
        if is_binary and binary_type != PROBING and binary_type != REST_PROBING:
            kind = _BINARY_TYPE_NAMES.get(binary_type, str(binary_type))
            raise ValueError(
                f"{path} is a KenLM {kind} binary; decoder.lm loads ARPA files, probing and "
                f"rest_probing binaries only (rebuild with `build_binary probing MODEL.arpa {path}`)"
            )
        cdef bint rest = is_binary and binary_type == REST_PROBING
        cdef Config config
        config.show_progress = False
        config.arpa_complain = ARPA_COMPLAIN_NONE
        cdef const char *c_path_ptr = c_path
        try:
            with nogil:
                if rest:
                    self.handle.rest = new RestProbingModel(c_path_ptr, config)
                else:
                    self.handle.probing = new ProbingModel(c_path_ptr, config)
        except Exception as error:
            raise ValueError(f"cannot load language model {path}: {_kenlm_reason(error)}") from None
        self.model = &self.handle
        self.path = path
        self.kind = "rest_probing" if rest else "probing"
        self.order = CkyOrder(self.handle)
        cdef const ProbingVocabulary *vocab = &CkyVocabulary(self.handle)
        self.bos_index = vocab.BeginSentence()
        self.eos_index = vocab.EndSentence()
        self.unk_index = vocab.NotFound()
        self.queries = 0

    def __dealloc__(self):
        del self.handle.probing
        del self.handle.rest

    def __repr__(self):
        return f"LanguageModel({self.path!r}, order={self.order}, kind={self.kind!r})"

    @property
    def vocab_size(self):
        """Number of KenLM word ids, [0, vocab_size); 0 is <unk>."""
        return CkyVocabulary(self.handle).Bound()

    def vocab_index(self, word):
        """KenLM id of a word (unk_index, i.e. 0, if unknown)."""
        return CkyVocabulary(self.handle).Index(_encode(word))

    def vocab_indices(self, words):
        """KenLM ids of many words as a numpy uint32 array (map a grammar's vocabulary once)."""
        words = list(words)
        ids = np.empty(len(words), dtype=np.uint32)
        cdef WordIndex[::1] out = ids
        cdef const ProbingVocabulary *vocab = &CkyVocabulary(self.handle)
        cdef Py_ssize_t i
        for i, word in enumerate(words):
            out[i] = vocab.Index(_encode(word))
        return ids

    def score_sentence(self, words, bint bos=True, bint eos=True):
        """log10 probability of a sentence (a whitespace-separated str or a list of words).

        Without bos the words' left context is unknown and the score is KenLM's estimate
        for them, as for a rule of only these words: on a rest-cost model the lower-order
        rest costs of the first words (on a probing model the same as the probability)."""
        if isinstance(words, str):
            words = words.split()
        ids = self.vocab_indices(words)
        cdef const WordIndex[::1] id_view = ids
        cdef Py_ssize_t length = id_view.shape[0]
        self.queries += length + (1 if eos else 0)
        if length == 0:
            return score_word_ids(self.model, NULL, 0, bos, eos)
        return score_word_ids(self.model, &id_view[0], length, bos, eos)

    def score_target(self, items):
        """Score one rule application the way the decoder does: returns (log10, PyChartState).

        `items` is the target side left to right: a str is a word (<s> only
        first), a PyChartState is a child item, an int is a raw KenLM word id.
        """
        cdef vector[int32_t] target
        cdef vector[const ChartState *] children
        cdef PyChartState child
        items = list(items)  # keeps the children alive while we point into them
        for item in items:
            if isinstance(item, PyChartState):
                child = <PyChartState>item
                children.push_back(&child.state)
                target.push_back(-<int32_t>children.size())
            elif isinstance(item, int):
                if item < 0:
                    raise ValueError(f"word ids are >= 0, got {item}")
                target.push_back(<int32_t>item)
            else:
                target.push_back(<int32_t>CkyVocabulary(self.handle).Index(_encode(item)))
        cdef ChartState out
        cdef float score = score_target(self.model, target.data(), target.size(),
                                        children.data(), &out, &self.queries)
        return score, _wrap_state(out)

    def score_partial_target(self, items):
        """The incremental search's estimate over partial children (score_partial_target): `items` as
        score_target's, where a child may also be a (PyChartState, cut) pair (PyChartState.partial)."""
        cdef vector[int32_t] target
        cdef vector[const ChartState *] children
        cdef vector[unsigned char] cuts
        cdef PyChartState child
        items = list(items)
        for item in items:
            cut = 0
            if isinstance(item, tuple):
                item, cut = item
            if isinstance(item, PyChartState):
                child = <PyChartState>item
                children.push_back(&child.state)
                cuts.push_back(cut)
                target.push_back(-<int32_t>children.size())
            elif isinstance(item, int):
                target.push_back(<int32_t>item)
            else:
                target.push_back(<int32_t>CkyVocabulary(self.handle).Index(_encode(item)))
        return score_partial_target(self.model, target.data(), target.size(), children.data(), cuts.data(),
                                    &self.queries)

    def score_sentence_boundaries(self, PyChartState root not None):
        """Add <s> and </s> around a complete item: returns (log10, PyChartState)."""
        cdef ChartState out
        cdef float score = score_sentence_boundaries(self.model, &root.state, &out, &self.queries)
        return score, _wrap_state(out)

    def time_terminal_calls(self, sentences, Py_ssize_t repeats=1):
        """CPU nanoseconds per RuleScore.Terminal call, scoring each sentence (a list
        of words) as one all-terminal rule, `repeats` times over, without the GIL."""
        sentences = [list(words) for words in sentences]
        lengths = np.array([len(words) for words in sentences], dtype=np.intp)
        flat = np.concatenate([np.zeros(0, np.uint32)] + [self.vocab_indices(w) for w in sentences])
        cdef const int32_t[::1] targets = flat.astype(np.int32)
        cdef const Py_ssize_t[::1] target_lengths = lengths
        cdef Py_ssize_t total_words = targets.shape[0]
        if total_words == 0 or repeats <= 0:
            raise ValueError("need at least one word and one repeat")
        cdef ChartState out
        cdef double total = 0.0
        cdef Py_ssize_t r, s, start
        started = time.process_time()  # CPU time: robust on a busy machine
        with nogil:
            for r in range(repeats):
                start = 0
                for s in range(target_lengths.shape[0]):
                    total += score_target(self.model, &targets[start], target_lengths[s],
                                          NULL, &out, NULL)
                    start += target_lengths[s]
        elapsed = time.process_time() - started
        return elapsed * 1e9 / (repeats * total_words)
