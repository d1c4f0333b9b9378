// KenLM rule scoring loops of decoder._ext._lm (declared to Cython in _lm.pyx).
// RuleScore has no default constructor, so it cannot live on a Cython stack:
// the loops that use it are written here.
#ifndef CKY_LM_RULE_SCORE_HH
#define CKY_LM_RULE_SCORE_HH

#include <cstddef>
#include <cstdint>

#include "lm/left.hh"
#include "lm/model.hh"

/* A rule's target side: symbol >= 0 a KenLM word id, symbol < 0 child -symbol - 1;
   a <s> id only first. Adds the scoring calls to *queries unless it is NULL. */
static float CkyScoreTarget(const lm::ngram::ProbingModel &model,
                            const int32_t *target, std::ptrdiff_t length,
                            const lm::ngram::ChartState *const *children,
                            lm::ngram::ChartState &out,
                            unsigned long long *queries) {
  lm::ngram::RuleScore<lm::ngram::ProbingModel> scorer(model, out);
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

/* "<s> root </s>" around a complete item. */
static float CkyScoreSentenceBoundaries(const lm::ngram::ProbingModel &model,
                                        const lm::ngram::ChartState &root,
                                        lm::ngram::ChartState &out,
                                        unsigned long long *queries) {
  lm::ngram::RuleScore<lm::ngram::ProbingModel> scorer(model, out);
  scorer.BeginSentence();
  scorer.NonTerminal(root, 0.0f);
  scorer.Terminal(model.GetVocabulary().EndSentence());
  if (queries) *queries += 2;
  return scorer.Finish();
}

static void CkyEmptyChartState(lm::ngram::ChartState &out) {
  out.left.length = 0;
  out.left.full = false;
  out.right.length = 0;
}

#endif  // CKY_LM_RULE_SCORE_HH
