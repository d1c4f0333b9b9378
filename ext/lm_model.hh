// The KenLM model behind decoder._ext._lm's nogil functions (Cython's `Model`,
// declared in _kenlm.pxd): a probing model (KenLM's default) or a rest-cost
// probing model (Heafield, Koehn and Lavie 2012: `build_binary -r ...`), whose
// estimates for words still lacking left context are the lower-order models'
// probabilities. Exactly one of the two pointers is set; the scoring functions
// (lm_rule_score.hh) branch on `rest` once per call. The searches only pass
// `const CkyLanguageModel *` on to _lm's functions.
#ifndef CKY_LM_MODEL_HH
#define CKY_LM_MODEL_HH

#include "lm/model.hh"

struct CkyLanguageModel {
  lm::ngram::ProbingModel *probing;
  lm::ngram::RestProbingModel *rest;
};

#endif  // CKY_LM_MODEL_HH
