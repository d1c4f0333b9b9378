"""The tiny fixture system for tests and `cky bench --quick`, built by code (nothing is downloaded).

    python -m decoder.fixture OUT_DIR     # or build_fixture(out_dir) from Python

What it makes in OUT_DIR (a few seconds on one core):
- corpus/: a generated parsed, word-aligned Spanish-like/English-like corpus
  (decoder.extract.synthetic), sentences of at most MAX_WORDS source words:
  train.{es,trees,align,en} (TRAIN pairs), dev.{es,en} and test.{es,en} (DEV and TEST pairs);
- rules.gz (+ .features.json) and glue.gz: GHKM rules extracted from the training pairs;
- lm.arpa: a trigram LM of the training English, absolute discounting with backoff;
- stores/STRATEGY/: the grammar store for a strategy, compiled on demand (`fixture_store`).
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import sys
from collections import Counter, defaultdict

TRAIN, DEV, TEST = 300, 30, 30
MAX_WORDS = 10
SEED = 7
VOCABULARY = 30  # per part of speech: small, so that dev and test are mostly covered
LM_ORDER = 3
DISCOUNT = 0.5


# ---- a small ARPA language model -------------------------------------------------------------------

def write_arpa(sentences: list[list[str]], path: str, order: int = LM_ORDER, discount: float = DISCOUNT) -> None:
    """Backoff n-gram LM (absolute discounting; unigrams add-one smoothed, with <unk>) as an ARPA file."""
    counts: list[Counter] = [Counter() for _ in range(order + 1)]  # counts[k][ngram], k = 1..order
    for words in sentences:
        padded = ["<s>"] + list(words) + ["</s>"]
        for end in range(1, len(padded)):  # the predicted word is never <s>
            for k in range(1, order + 1):
                if end - k + 1 < 0:
                    break
                counts[k][tuple(padded[end - k + 1:end + 1])] += 1
    vocabulary = sorted({w for (w,) in counts[1]} | {"<unk>"})
    total = sum(counts[1].values())
    unigram = {(w,): (counts[1][(w,)] + 1) / (total + len(vocabulary)) for w in vocabulary}

    probability: list[dict] = [{}, unigram]  # probability[k][ngram]: p of the last word given the rest
    backoff: list[dict] = [{} for _ in range(order + 1)]

    def full_probability(history: tuple, word: str) -> float:
        """p(word | history) with backoff, from the orders computed so far."""
        for start in range(len(history) + 1):
            ngram = history[start:] + (word,)
            if ngram in probability[len(ngram)]:
                weight = 1.0
                for s in range(start):  # backoff weights of the longer histories skipped
                    weight *= backoff[len(history) - s].get(history[s:], 1.0)
                return weight * probability[len(ngram)][ngram]
        return 0.0

    for k in range(2, order + 1):
        continuations: dict[tuple, list] = defaultdict(list)
        for ngram, count in counts[k].items():
            continuations[ngram[:-1]].append((ngram[-1], count))
        probability.append({})
        for history, seen in continuations.items():
            history_count = sum(c for _, c in seen)
            for word, count in seen:
                probability[k][history + (word,)] = (count - discount) / history_count
            left_over = discount * len(seen) / history_count
            lower_mass = sum(full_probability(history[1:], word) for word, _ in seen)
            backoff[k - 1][history] = left_over / max(1.0 - lower_mass, 1e-9)

    with open(path, "w", encoding="utf-8") as out:
        out.write("\\data\\\n")
        sizes = [len(unigram) + 1] + [len(probability[k]) for k in range(2, order + 1)]  # +1: <s>
        for k, size in enumerate(sizes, start=1):
            out.write(f"ngram {k}={size}\n")
        for k in range(1, order + 1):
            out.write(f"\n\\{k}-grams:\n")
            entries = sorted(probability[k].items())
            if k == 1:
                entries = [(("<s>",), None)] + entries
            for ngram, p in entries:
                logprob = -99.0 if p is None else math.log10(p)
                line = f"{logprob:.6f}\t{' '.join(ngram)}"
                if k < order:
                    line += f"\t{math.log10(backoff[k].get(ngram, 1.0)):.6f}"
                out.write(line + "\n")
        out.write("\n\\end\\\n")


# ---- the fixture ------------------------------------------------------------------------------------

def _short_pairs(directory: str, wanted: int) -> list[tuple[str, str, str, str]]:
    """Generated (source, tree, alignment, target) pairs with at most MAX_WORDS source words."""
    from decoder.extract.synthetic import write_corpus

    raw = os.path.join(directory, "raw")
    paths = write_corpus(raw, wanted * 6, seed=SEED, vocabulary=VOCABULARY)
    columns = [pathlib.Path(paths[name]).read_text(encoding="utf-8").splitlines() for name in ("es", "trees", "align", "en")]
    pairs = [p for p in zip(*columns) if 0 < len(p[0].split()) <= MAX_WORDS]
    for path in paths.values():
        os.unlink(path)
    os.rmdir(raw)
    if len(pairs) < wanted:
        raise RuntimeError(f"only {len(pairs)} generated pairs have at most {MAX_WORDS} words")
    return pairs[:wanted]


def build_fixture(out_dir: str, train: int = TRAIN, dev: int = DEV, test: int = TEST) -> dict:
    """Build (or reuse) the fixture in out_dir; returns its paths."""
    paths = fixture_paths(out_dir)
    if os.path.exists(paths["done"]):
        return paths
    from decoder.extract.corpus import CorpusPaths
    from decoder.extract.pipeline import ExtractionConfig, run_extraction

    corpus = os.path.join(out_dir, "corpus")
    os.makedirs(corpus, exist_ok=True)
    pairs = _short_pairs(corpus, train + dev + test)
    splits = {"train": pairs[:train], "dev": pairs[train:train + dev], "test": pairs[train + dev:]}
    for split, rows in splits.items():
        names = ("es", "trees", "align", "en") if split == "train" else ("es", "en")
        for name in names:
            column = ("es", "trees", "align", "en").index(name)
            with open(os.path.join(corpus, f"{split}.{name}"), "w", encoding="utf-8") as out:
                out.writelines(row[column] + "\n" for row in rows)

    run_extraction(ExtractionConfig(
        corpus=CorpusPaths(paths["train_es"], paths["train_trees"], paths["train_align"]),
        out=paths["rules"], glue=paths["glue"], jobs=1, shards=2, progress=False))
    write_arpa([row[3].split() for row in splits["train"]], paths["lm"])
    with open(paths["done"], "w") as done:
        json.dump({"train": train, "dev": dev, "test": test, "max_words": MAX_WORDS, "seed": SEED}, done)
    return paths


def fixture_paths(out_dir: str) -> dict:
    corpus = os.path.join(out_dir, "corpus")
    return {
        "dir": out_dir,
        "train_es": os.path.join(corpus, "train.es"), "train_trees": os.path.join(corpus, "train.trees"),
        "train_align": os.path.join(corpus, "train.align"), "train_en": os.path.join(corpus, "train.en"),
        "dev_es": os.path.join(corpus, "dev.es"), "dev_en": os.path.join(corpus, "dev.en"),
        "test_es": os.path.join(corpus, "test.es"), "test_en": os.path.join(corpus, "test.en"),
        "rules": os.path.join(out_dir, "rules.gz"), "glue": os.path.join(out_dir, "glue.gz"),
        "lm": os.path.join(out_dir, "lm.arpa"), "stores": os.path.join(out_dir, "stores"),
        "done": os.path.join(out_dir, "fixture.json"),
    }


def fixture_store(paths: dict, strategy: str, seed: int = 0) -> str:
    """The grammar store of the fixture's rules for a strategy (compiled once, then reused)."""
    from decoder.store import build_store

    name = strategy if strategy != "random" else f"random-{seed}"
    store_dir = os.path.join(paths["stores"], name)
    if not os.path.exists(os.path.join(store_dir, "meta.json")):
        build_store(paths["rules"], store_dir, strategy, seed=seed)
    return store_dir


if __name__ == "__main__":
    print(json.dumps(build_fixture(sys.argv[1] if len(sys.argv) > 1 else "models/fixtures/build"), indent=2))
