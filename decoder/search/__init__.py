"""Chart search: the compiled CKY decoder's Python side, and pure-Python references.

- model: features, weights and the search space every decoder shares
- reference: exhaustive pure-Python CKY over a BinaryGrammar (tests' answer)
- brute_force: every derivation, one by one (tiny grammars)
- chart: the compiled decoder over a grammar store (decoder._ext._chart)
- two_pass: two-pass LM-driven search (Venugopal et al. 2007) over a grammar store (decoder._ext._two_pass)
- two_pass_reference: both passes in pure Python over a BinaryGrammar (tests' answer)
"""
