"""The project's language-model API over KenLM (decoder._ext._lm): the LanguageModel
class and the nogil scoring functions other compiled modules call.

KenLM's own declarations are in _kenlm.pxd. KenLM's out-of-line code is
compiled into _lm's .so only, so other modules call the functions below
(chart_state_hash, score_target, ...), plain function pointers imported at
module load, never KenLM's functions directly.
"""
from libc.stdint cimport int32_t, uint64_t

from decoder._ext._kenlm cimport ChartState, Model, WordIndex


cdef class LanguageModel:
    cdef Model handle            # the loaded model, probing or rest_probing (ext/lm_model.hh)
    cdef Model *model            # &handle: what the nogil functions below take
    cdef readonly str path
    cdef readonly str kind       # "probing" or "rest_probing"
    cdef readonly int order
    cdef readonly WordIndex bos_index
    cdef readonly WordIndex eos_index
    cdef readonly WordIndex unk_index
    # Scoring calls made through this object's Python methods; nogil callers
    # may pass &lm.queries as the counter of their own calls.
    cdef public unsigned long long queries


# A rule's target side is an int32 array: symbol >= 0 is a KenLM word id (see
# LanguageModel.vocab_indices), symbol < 0 is child number -symbol - 1 in
# `children`. A <s> id is only allowed first (it is context, not a word).
# Writes the new item's state to `out` and returns the log10 score of the
# n-grams this application completes, plus KenLM's estimate for the words
# still lacking left context (corrected when they get it). Adds the number of
# Terminal/NonTerminal scoring calls to *queries unless queries is NULL.
cdef float score_target(const Model *model, const int32_t *target, Py_ssize_t length,
                        const ChartState * const *children, ChartState *out,
                        unsigned long long *queries) noexcept nogil

# The incremental search's LM estimate of a target side over children some of whose states are
# partial (cut per child: bit 0 left words unknown beyond the state's, bit 1 right words;
# lm_rule_score.hh's CkyScorePartialTarget); with every cut 0 the score of score_target.
cdef float score_partial_target(const Model *model, const int32_t *target, Py_ssize_t length,
                                const ChartState * const *children, const unsigned char *cut,
                                unsigned long long *queries) noexcept nogil

# `state` as a trie node that reveals only its first `left` left words and its `right` most recent right
# words shows it: the left side cut short is not full; returns the cut (bit 0 left, bit 1 right).
cdef unsigned char cut_chart_state(const ChartState *state, int left, int right, ChartState *out) noexcept nogil

# Scores "<s> root </s>" around a complete item: the sentence-level correction.
cdef float score_sentence_boundaries(const Model *model, const ChartState *root, ChartState *out,
                                     unsigned long long *queries) noexcept nogil

# Left-to-right score of KenLM word ids (log10): with bos the probability; without
# it KenLM's estimate for words of unknown left context, as score_target gives for
# a rule of only these words (rest costs on a rest_probing model, otherwise the
# same as the probability).
cdef float score_word_ids(const Model *model, const WordIndex *words, Py_ssize_t length,
                          bint bos, bint eos) noexcept nogil

# The empty state: the target side of a rule with no words.
cdef void empty_chart_state(ChartState *out) noexcept nogil

# KenLM's hash_value of a ChartState: equal states (==) hash equal.
cdef uint64_t chart_state_hash(const ChartState *state) noexcept nogil
