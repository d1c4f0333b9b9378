"""Stand-ins for the `cky train` stages that need link-grammar, eflomal and KenLM, so that the
pipeline's bookkeeping (skipping, --from, invalidation, interrupted stages) is tested in seconds
on any machine: flat target trees, a monotone alignment, and a trigram LM written in Python
(models/fixtures). The real stages are tested end to end in test_train.py."""
from __future__ import annotations

from pathlib import Path

from decoder.data.trees import fallback_tree, verse_tree
from decoder.train.split import read_lines, write_lines


def flat_parse(ctx) -> dict:
    lines = read_lines(ctx.input("tokens"))
    write_lines(ctx.output("corpus/train.trees"), (verse_tree([fallback_tree(line.split())]).to_penn()
                                                   for line in lines))
    return {"verses": len(lines)}


def monotone_align(ctx) -> dict:
    source, target = read_lines(ctx.input("source")), read_lines(ctx.input("target"))
    write_lines(ctx.output("corpus/train.align"),
                (" ".join(f"{i}-{i}" for i in range(min(len(s.split()), len(t.split()))))
                 for s, t in zip(source, target)))
    return {"sentence_pairs": len(source)}


FAKES = {"parse": flat_parse, "align": monotone_align}


def write_lm(target_text: Path, path: Path) -> Path:
    """A trigram ARPA model of (the tokenized, lowercased) `target_text`."""
    from decoder.data.tokenize import tokenize
    from models.fixtures.build_fixture import write_arpa

    write_arpa([tokenize(line, "en") for line in read_lines(target_text)], str(path))
    return path
