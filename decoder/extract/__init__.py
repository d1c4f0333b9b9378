"""GHKM rule extraction (`cky extract`): string-to-tree SCFG rules from a parsed, word-aligned corpus.

Modules, in the order the data flows:

    trees      Penn trees in, Moses tree fragments out; word escaping
    alignment  Pharaoh alignments; spans, complement spans and frontier nodes
    rules      minimal and composed rules of one sentence pair (the unaligned-word policy, the bounds)
    corpus     the line-parallel input files; bad lines reported as file:line
    scoring    features, lexical weights, Moses table lines
    pipeline   the streaming, sharded, multi-process run
    glue       glue grammar and unknown-word labels
    filtering  filtering a table to a test set
    cli        the `cky extract` command
    synthetic  a generated corpus for tests and speed measurements
"""
from .rules import ExtractedRule, Limits, extract_rules

__all__ = ["ExtractedRule", "Limits", "extract_rules"]
