// KenLM rule scoring loops of decoder._ext._lm (declared to Cython in _lm.pyx).
// RuleScore has no default constructor, so it cannot live on a Cython stack:
// the loops that use it are written here. Each is a template over KenLM's
// model type, instantiated for both types of CkyLanguageModel (lm_model.hh)
// and chosen by one branch per call.
#ifndef CKY_LM_RULE_SCORE_HH
#define CKY_LM_RULE_SCORE_HH

#include <cstddef>
#include <cstdint>

#include "lm/left.hh"
#include "lm/model.hh"
#include "lm_model.hh"

/* A rule's target side: symbol >= 0 a KenLM word id, symbol < 0 child -symbol - 1;
   a <s> id only first. Adds the scoring calls to *queries unless it is NULL. */
template <class Model>
static inline float CkyScoreTargetOf(const Model &model,
                                     const int32_t *target, std::ptrdiff_t length,
                                     const lm::ngram::ChartState *const *children,
                                     lm::ngram::ChartState &out,
                                     unsigned long long *queries) {
  lm::ngram::RuleScore<Model> scorer(model, out);
  const lm::WordIndex begin_sentence = model.GetVocabulary().BeginSentence();
  unsigned long long calls = 0;
  for (std::ptrdiff_t i = 0; i < length; ++i) {
    const int32_t symbol = target[i];
    if (symbol < 0) {
      const lm::ngram::ChartState &child = *children[-(symbol + 1)];
      if (i == 0) {
        scorer.BeginNonTerminal(child, 0.0f);  /* nothing to its left: a copy */
      } else {
        scorer.NonTerminal(child, 0.0f);
        ++calls;
      }
    } else if (i == 0 && static_cast<lm::WordIndex>(symbol) == begin_sentence) {
      scorer.BeginSentence();
    } else {
      scorer.Terminal(static_cast<lm::WordIndex>(symbol));
      ++calls;
    }
  }
  if (queries) *queries += calls;
  return scorer.Finish();
}

static float CkyScoreTarget(const CkyLanguageModel &model,
                            const int32_t *target, std::ptrdiff_t length,
                            const lm::ngram::ChartState *const *children,
                            lm::ngram::ChartState &out,
                            unsigned long long *queries) {
  if (model.rest) return CkyScoreTargetOf(*model.rest, target, length, children, out, queries);
  return CkyScoreTargetOf(*model.probing, target, length, children, out, queries);
}

/* The incremental search's estimate of a target side's LM score over children whose states may be
   partial (a trie node's: some boundary words not revealed yet). cut[c] of child c: bit 0 its left
   words beyond its state's are unknown (its state's left.full is then false), bit 1 its right words
   beyond its state's are unknown. A child with bit 1 ends a segment: the words after it are scored
   as a new rule's words after its revealed right words (KenLM's estimate for words whose left context
   could still change: the rest costs on a rest_probing model), less those words' own scores. A child
   with only bit 0 in the target's middle ends one too (KenLM would read its words as all of it): the
   words after it are scored after its right state, as after a first child. Its revealed left words
   are corrected by what precedes it, as KenLM's NonTerminal does, and no backoff is charged where
   they stop. A first child's left words change nothing here (its left side cut short is read as full);
   a last child's right side changes nothing. Every cut 0: score_target's
   number. */
template <class Model>
static inline float CkyScorePartialTargetOf(const Model &model,
                                            const int32_t *target, std::ptrdiff_t length,
                                            const lm::ngram::ChartState *const *children,
                                            const unsigned char *cut,
                                            unsigned long long *queries) {
  lm::ngram::ChartState out;
  lm::ngram::RuleScore<Model> scorer(model, out);
  const lm::WordIndex begin_sentence = model.GetVocabulary().BeginSentence();
  unsigned long long calls = 0;
  float total = 0.0f;
  for (std::ptrdiff_t i = 0; i < length; ++i) {
    const int32_t symbol = target[i];
    if (symbol >= 0) {
      if (i == 0 && static_cast<lm::WordIndex>(symbol) == begin_sentence) {
        scorer.BeginSentence();
      } else {
        scorer.Terminal(static_cast<lm::WordIndex>(symbol));
        ++calls;
      }
      continue;
    }
    const int c = -(symbol + 1);
    const lm::ngram::ChartState &child = *children[c];
    if (i == 0) {
      lm::ngram::ChartState copy = child;
      copy.left.full = child.left.full || (cut[c] & 1);  /* (cut short, it was full) */
      scorer.BeginNonTerminal(copy, 0.0f);
      if (!(cut[c] & 2)) continue;
    } else {
      scorer.NonTerminal(child, 0.0f);
      ++calls;
      if (!cut[c]) continue;
    }
    if (i + 1 == length) continue;
    total += scorer.Finish();
    if (cut[c] & 2) {
      scorer.Reset();
      unsigned char k = child.right.length;
      if (k > 0 && child.right.words[k - 1] == begin_sentence) {
        scorer.BeginSentence();
        --k;
      }
      for (; k > 0; ++calls) scorer.Terminal(child.right.words[--k]);
      total -= scorer.Finish();
    } else {
      lm::ngram::ChartState copy = child;
      copy.left.full = true;
      scorer.BeginNonTerminal(copy, 0.0f);
    }
  }
  if (queries) *queries += calls;
  return total + scorer.Finish();
}

static float CkyScorePartialTarget(const CkyLanguageModel &model,
                                   const int32_t *target, std::ptrdiff_t length,
                                   const lm::ngram::ChartState *const *children,
                                   const unsigned char *cut,
                                   unsigned long long *queries) {
  if (model.rest) return CkyScorePartialTargetOf(*model.rest, target, length, children, cut, queries);
  return CkyScorePartialTargetOf(*model.probing, target, length, children, cut, queries);
}

/* "<s> root </s>" around a complete item. */
template <class Model>
static inline float CkyScoreSentenceBoundariesOf(const Model &model,
                                                 const lm::ngram::ChartState &root,
                                                 lm::ngram::ChartState &out,
                                                 unsigned long long *queries) {
  lm::ngram::RuleScore<Model> scorer(model, out);
  scorer.BeginSentence();
  scorer.NonTerminal(root, 0.0f);
  scorer.Terminal(model.GetVocabulary().EndSentence());
  if (queries) *queries += 2;
  return scorer.Finish();
}

static float CkyScoreSentenceBoundaries(const CkyLanguageModel &model,
                                        const lm::ngram::ChartState &root,
                                        lm::ngram::ChartState &out,
                                        unsigned long long *queries) {
  if (model.rest) return CkyScoreSentenceBoundariesOf(*model.rest, root, out, queries);
  return CkyScoreSentenceBoundariesOf(*model.probing, root, out, queries);
}

/* Words left to right. After <s> (bos) every word has its context: the sum of
   KenLM's probabilities. Without bos the words' left context is unknown, so the
   sum is KenLM's estimate, as for a rule of only these words: the lower-order
   rest cost for each word whose left context could still change its score, the
   probability after that (the same numbers as the probabilities for a model
   without rest costs). eos adds </s>. */
template <class Model>
static inline float CkyScoreWordsOf(const Model &model, const lm::WordIndex *words,
                                    std::ptrdiff_t length, bool bos, bool eos) {
  if (!bos) {
    lm::ngram::ChartState out;
    lm::ngram::RuleScore<Model> scorer(model, out);
    for (std::ptrdiff_t i = 0; i < length; ++i) scorer.Terminal(words[i]);
    if (eos) scorer.Terminal(model.GetVocabulary().EndSentence());
    return scorer.Finish();
  }
  lm::ngram::State states[2];
  int current = 0;
  float total = 0.0f;
  states[0] = model.BeginSentenceState();
  for (std::ptrdiff_t i = 0; i < length; ++i) {
    /* FullScore needs distinct in and out states: alternate between two. */
    total += model.FullScore(states[current], words[i], states[1 - current]).prob;
    current = 1 - current;
  }
  if (eos) total += model.FullScore(states[current], model.GetVocabulary().EndSentence(),
                                    states[1 - current]).prob;
  return total;
}

static float CkyScoreWords(const CkyLanguageModel &model, const lm::WordIndex *words,
                           std::ptrdiff_t length, bool bos, bool eos) {
  if (model.rest) return CkyScoreWordsOf(*model.rest, words, length, bos, eos);
  return CkyScoreWordsOf(*model.probing, words, length, bos, eos);
}

/* The model's vocabulary (both model types use KenLM's ProbingVocabulary). */
static inline const lm::ngram::ProbingVocabulary &CkyVocabulary(const CkyLanguageModel &model) {
  return model.rest ? model.rest->GetVocabulary() : model.probing->GetVocabulary();
}

static inline unsigned char CkyOrder(const CkyLanguageModel &model) {
  return model.rest ? model.rest->Order() : model.probing->Order();
}

static void CkyEmptyChartState(lm::ngram::ChartState &out) {
  out.left.length = 0;
  out.left.full = false;
  out.right.length = 0;
}

#endif  // CKY_LM_RULE_SCORE_HH
