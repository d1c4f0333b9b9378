"""KenLM's C++ query API, as Cython declarations (only `cdef extern` blocks, like
KenLM's own python/_kenlm.pxd). The project's LM API is decoder._ext._lm.

* State types (State, Left, ChartState): plain structs whose == and Compare
  are header-inline, so any module that cimports them can store and compare them.
* Everything with out-of-line code (hash_value, ProbingModel, RestProbingModel,
  RuleScore, ...) is compiled into the _lm extension only, so only _lm may call
  it (another module's .so would have undefined symbols); other modules use the
  nogil functions of _lm.pxd (chart_state_hash, score_target, ...) instead.
* Model (ext/lm_model.hh): the project's handle of a loaded model, probing or
  rest_probing; other modules hold a `const Model *` and pass it to _lm.

Modules that cimport this need KenLM's include directory and the same
KENLM_MAX_ORDER (setup.py gives both to every extension).
"""
from libc.stdint cimport int32_t, uint64_t
from libcpp cimport bool as cbool

cdef extern from "lm/max_order.hh":
    enum: KENLM_MAX_ORDER

cdef extern from "lm/word_index.hh" namespace "lm":
    ctypedef unsigned int WordIndex

cdef extern from "lm/return.hh" namespace "lm":
    cdef struct FullScoreReturn:
        float prob
        unsigned char ngram_length
        cbool independent_left
        uint64_t extend_left
        float rest

cdef extern from "lm/state.hh" namespace "lm::ngram" nogil:
    # Right state: the last words (most recent first) that can still matter.
    cdef cppclass State:
        WordIndex words[KENLM_MAX_ORDER - 1]
        float backoff[KENLM_MAX_ORDER - 1]
        unsigned char length
        cbool operator==(const State &other)
        int Compare(const State &other)
        unsigned char Length()
        void ZeroRemaining()

    # Left state: pointers to the n-grams that words to the left may extend.
    cdef cppclass Left:
        uint64_t pointers[KENLM_MAX_ORDER - 1]
        unsigned char length
        cbool full
        cbool operator==(const Left &other)
        int Compare(const Left &other)
        void ZeroRemaining()

    # The LM state of a chart item: recombine items whose ChartStates are ==.
    cdef cppclass ChartState:
        Left left
        State right
        cbool operator==(const ChartState &other)
        int Compare(const ChartState &other)
        void ZeroRemaining()

    # Out of line (MurmurHash is in _lm's .so): other modules call chart_state_hash.
    uint64_t hash_value(const State &state)
    uint64_t hash_value(const State &state, uint64_t seed)
    uint64_t hash_value(const Left &left)
    uint64_t hash_value(const ChartState &state)

cdef extern from "lm/config.hh" namespace "lm::ngram":
    ctypedef enum ARPALoadComplain "lm::ngram::Config::ARPALoadComplain":
        ARPA_COMPLAIN_ALL "lm::ngram::Config::ALL"
        ARPA_COMPLAIN_EXPENSIVE "lm::ngram::Config::EXPENSIVE"
        ARPA_COMPLAIN_NONE "lm::ngram::Config::NONE"

    cdef cppclass Config:
        Config()
        cbool show_progress
        ARPALoadComplain arpa_complain
        float probing_multiplier
        float unknown_missing_logprob

cdef extern from "lm/model_type.hh" namespace "lm::ngram":
    ctypedef enum ModelType:
        PROBING
        REST_PROBING
        TRIE
        QUANT_TRIE
        ARRAY_TRIE
        QUANT_ARRAY_TRIE

cdef extern from "lm/binary_format.hh" namespace "lm::ngram":
    # True for a KenLM binary file (and sets its type); false for ARPA.
    cbool RecognizeBinary(const char *file, ModelType &recognized) except +

# ---- usable inside _lm only (their code is in _lm's .so) ----

cdef extern from "lm/model.hh" namespace "lm::ngram" nogil:
    cdef cppclass ProbingVocabulary "lm::ngram::ProbingVocabulary":
        WordIndex Index(const char *word)
        WordIndex BeginSentence()
        WordIndex EndSentence()
        WordIndex NotFound()
        WordIndex Bound()

    # The hash-table (probing) model; KenLM's default, `lm::ngram::Model`.
    cdef cppclass ProbingModel "lm::ngram::ProbingModel":
        ProbingModel(const char *file, const Config &config) except +
        FullScoreReturn FullScore(const State &in_state, WordIndex new_word, State &out_state)
        float Score(const State &in_state, WordIndex new_word, State &out_state)
        const State &BeginSentenceState()
        const State &NullContextState()
        const ProbingVocabulary &GetVocabulary()
        unsigned char Order()

    # The probing model with rest costs (Heafield et al. 2012; `build_binary -r`):
    # FullScoreReturn.rest, the estimate of a word whose left context is still
    # unknown, is the lower-order models' probability instead of the model's own.
    cdef cppclass RestProbingModel "lm::ngram::RestProbingModel":
        RestProbingModel(const char *file, const Config &config) except +
        FullScoreReturn FullScore(const State &in_state, WordIndex new_word, State &out_state)
        const State &BeginSentenceState()
        const State &NullContextState()
        const ProbingVocabulary &GetVocabulary()
        unsigned char Order()

# ---- the project's model handle: every module may hold and pass a pointer to it ----

cdef extern from "lm_model.hh" nogil:
    # A loaded model, either type (ext/lm_model.hh): exactly one pointer is set.
    # Other modules keep a `const Model *` and pass it to _lm's nogil functions.
    cdef cppclass Model "CkyLanguageModel":
        ProbingModel *probing
        RestProbingModel *rest

cdef extern from "lm/left.hh" namespace "lm::ngram" nogil:
    # Scores one rule application left to right into `out`. It has no default
    # constructor, so Cython code cannot hold one on the stack: the loops that
    # use it are C++ (ext/lm_rule_score.hh, called by _lm.score_target).
    cdef cppclass RuleScore[M]:
        RuleScore(const M &model, ChartState &out)
        void BeginSentence()
        void Terminal(WordIndex word)
        void BeginNonTerminal(const ChartState &child, float prob)
        void NonTerminal(const ChartState &child, float prob)
        float Finish()
        void Reset()
        void Reset(ChartState &replacement)
