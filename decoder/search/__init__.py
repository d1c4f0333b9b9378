"""Chart search: the compiled CKY decoder's Python side, and pure-Python references.

- model: features, weights and the search space every decoder shares
- reference: exhaustive pure-Python CKY over a BinaryGrammar (tests' answer)
- brute_force: every derivation, one by one (tiny grammars)
- chart: the compiled decoder over a grammar store (decoder._ext._chart)
"""
