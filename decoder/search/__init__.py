"""Chart search: the compiled CKY decoder's Python side, and pure-Python references.

- model: features, weights and the search space every decoder shares
- reference: exhaustive pure-Python CKY over a BinaryGrammar (tests' answer)
- brute_force: every derivation, one by one (tiny grammars)
- the compiled decoder over a grammar store (decoder._ext._chart), one module per concept,
  as Moses splits moses/Syntax:
  - grammar_arrays: the grammar as the compiled search reads it (GrammarArrays, SymbolNames)
  - driver: one sentence through the compiled search (ChartSearchDriver, SearchResult)
  - readback: a derivation's output, tree and features (DerivationReader, ReadBack)
  - kbest: lazy k-best (Huang and Chiang 2005, Algorithm 3): CompiledKBest (decoder._ext._kbest),
    and ReferenceLazyKBest, the pure-Python reference
- drivers: which driver implements each `search` setting (cube, incremental, two-pass)
- incremental: boundary-word grouping (Heafield et al. 2013; decoder._ext._incremental)
- two_pass: two-pass LM-driven search (Venugopal et al. 2007) over a grammar store (decoder._ext._two_pass)
- two_pass_reference: both passes in pure Python over a BinaryGrammar (tests' answer)
"""

