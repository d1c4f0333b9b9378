"""A generated parsed, aligned corpus for tests and speed measurements.

English-like target trees from a small random grammar; the source side
translates each word (sometimes into two words, sometimes into none), puts
adjectives after nouns as Spanish does, adds unaligned words and a little
alignment noise. Deterministic for a given seed.
"""
from __future__ import annotations

import os
import random


class _Generator:
    def __init__(self, seed: int, vocabulary: int):
        self.rng = random.Random(seed)
        self.vocabulary = vocabulary

    def word(self, tag: str) -> str:
        # Zipf-like: small ranks are frequent
        rank = int(self.vocabulary ** self.rng.random())
        return f"{tag.lower()}{rank}"

    def node(self, label: str, depth: int) -> list:
        r = self.rng.random()
        deep = depth > 7
        if label == "S":
            kids = [self.node("NP", depth + 1), self.node("VP", depth + 1)]
            if r < 0.55 and not deep:
                kids += [["CC", "and"], self.node("S", depth + 1)]
            return [label] + kids
        if label == "NP":
            if r < 0.2 or deep:
                return [label, ["PRP", self.word("PRP")]]
            kids = [["DT", self.word("DT")]]
            if r < 0.5:
                kids.append(["JJ", self.word("JJ")])
            kids.append(["NN", self.word("NN")])
            if r > 0.8 and not deep:
                return [label, [label] + kids, self.node("PP", depth + 1)]
            return [label] + kids
        if label == "VP":
            kids = [["VB", self.word("VB")]]
            if r < 0.2:
                kids.insert(0, ["MD", self.word("MD")])
            if r < 0.8:
                kids.append(self.node("NP", depth + 1))
            if r > 0.6 and not deep:
                kids.append(self.node("PP", depth + 1))
            return [label] + kids
        if label == "PP":
            return [label, ["IN", self.word("IN")], self.node("NP", depth + 1)]
        raise ValueError(label)

    def pair(self) -> tuple[str, str, str]:
        tree = ["S", self.node("S", 0), [".", "."]] if self.rng.random() < 0.9 else self.node("S", 0)
        if tree[0] != "S":
            tree = ["S"] + tree[1:]
        target_words: list[str] = []
        source: list[tuple[str, int | None]] = []  # (word, target index or None)

        def render(node) -> str:
            label, kids = node[0], node[1:]
            if len(kids) == 1 and isinstance(kids[0], str):
                target_words.append(kids[0])
                return f"({label} {kids[0]})"
            return f"({label} " + " ".join(render(k) for k in kids) + ")"

        def translate(node) -> None:
            label, kids = node[0], node[1:]
            if len(kids) == 1 and isinstance(kids[0], str):
                j = order.pop(0)
                r = self.rng.random()
                if r < 0.08:
                    return  # unaligned target word
                source.append(("s" + kids[0], j))
                if r > 0.92:
                    source.append(("x" + kids[0], j))
                return
            if label == "NP" and len(kids) >= 3 and kids[1][0] == "JJ":
                kids = [kids[0], kids[2], kids[1]] + kids[3:]  # noun before adjective
                # the word order inside must follow the target indices
                first, second = order[1], order[2]
                order[1], order[2] = second, first
            for k in kids:
                translate(k)
            if self.rng.random() < 0.03:
                source.append(("u" + label.lower(), None))

        text = render(tree)
        order = list(range(len(target_words)))
        translate(tree)
        links = [f"{i}-{j}" for i, (_, j) in enumerate(source) if j is not None]
        if source and self.rng.random() < 0.2:  # alignment noise
            links.append(f"{self.rng.randrange(len(source))}-{self.rng.randrange(len(target_words))}")
        return " ".join(w for w, _ in source), text, " ".join(links)


def write_corpus(directory: str, pairs: int, seed: int = 1, vocabulary: int = 5000) -> dict[str, str]:
    """Write train.es, train.trees, train.align, train.en into directory; return their paths."""
    os.makedirs(directory, exist_ok=True)
    gen = _Generator(seed, vocabulary)
    paths = {name: os.path.join(directory, f"train.{name}") for name in ("es", "trees", "align", "en")}
    files = {name: open(path, "w") for name, path in paths.items()}
    try:
        for _ in range(pairs):
            source, tree, links = gen.pair()
            files["es"].write(source + "\n")
            files["trees"].write(tree + "\n")
            files["align"].write(links + "\n")
            files["en"].write(" ".join(w for w in tree.replace(")", " ").split() if not w.startswith("(")) + "\n")
    finally:
        for f in files.values():
            f.close()
    return paths


if __name__ == "__main__":
    import sys

    print(write_corpus(sys.argv[1], int(sys.argv[2])))
