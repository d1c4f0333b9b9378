"""An MT system's files, and the decoder config written for it: what `cky demo` and `cky bench` build on.

A `System` names the files of one system (rule table, LM, dev and test sets)
and a work directory for what is built from them; `fixture_system` makes the
tiny generated system (decoder.fixture), `bible_system` finds the Bible
Spanish-English build of `cky data bible-es-en [--small]`.
`write_decoder_config` writes the config `cky translate --config` reads for a
system and a grammar store; `run_cky` runs a `cky` subcommand in its own
process with this same package.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass, field

# The directory that holds this `decoder` package: a `cky` child process imports the same code.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The files a Bible data build must hold (train.*: only to extract rules here).
DATA_FILES = ("train.es", "train.trees", "train.align", "dev.es", "dev.en", "test.es", "test.en", "lm.bin")


@dataclass
class System:
    """The files of one MT system, and a work directory for what the benchmark builds from them."""

    name: str
    rules: str  # Moses rule table (the grammar whose cost is measured)
    lm: str
    dev_src: str
    dev_ref: str
    test_src: str
    test_ref: str
    work: str
    glue: str | None = None
    tokenize: str = "13a"  # sacrebleu tokenizer for BLEU
    notes: list = field(default_factory=list)


def cky_environment() -> dict:
    """This process's environment with PACKAGE_ROOT first on PYTHONPATH."""
    paths = [PACKAGE_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def run_cky(*arguments: str, log=None) -> None:
    """Run `cky ARGUMENTS` in its own process (its progress bars and logs go to the terminal);
    a failure raises subprocess.CalledProcessError."""
    if log is not None:
        log(" ".join(["cky", *arguments]))
    subprocess.run([sys.executable, "-m", "decoder.cli", *arguments], env=cky_environment(), check=True)


def read_lines(path: str) -> list[str]:
    from .evaluate import read_lines as read

    return read(path)


def fixture_system(work: str) -> System:
    """The tiny generated system (decoder.fixture), built under work/fixture."""
    from .fixture import build_fixture

    paths = build_fixture(os.path.join(work, "fixture"))
    return System("fixture", paths["rules"], paths["lm"], paths["dev_es"], paths["dev_en"], paths["test_es"],
                  paths["test_en"], work, glue=paths["glue"], tokenize="none",
                  notes=["tiny generated system (decoder.fixture): not comparable to the papers"])


def bible_build() -> str:
    """Where `cky data bible-es-en` writes the full build (its --small build is the `small` directory in it)."""
    from .data.build import default_out

    return str(default_out("bible-es-en"))


def bible_data_dir(build: str | None = None) -> str | None:
    """The full Bible build if it is complete, else the --small one, else None."""
    build = build or bible_build()
    for directory in (build, os.path.join(build, "small")):
        if os.path.exists(os.path.join(directory, "manifest.json")):
            return directory
    return None


def bible_system(work: str, data_dir: str | None = None, log=print) -> System | None:
    """The Bible system of a data build (`cky data bible-es-en [--small]`); None if there is no build.

    Rules: the build's rules/rules.gz from `cky extract` if it is there, else
    extracted here (into the work directory, filtered to dev+test).
    """
    data_dir = data_dir or bible_data_dir()
    path = lambda name: os.path.join(data_dir or "", name)  # noqa: E731
    rules, glue = path("rules/rules.gz"), path("rules/glue.gz")
    extracted_here = not os.path.exists(rules)
    # training files are needed only to extract rules (not yet extracted into the work directory)
    needed = [f for f in DATA_FILES if not f.startswith("train.")
              or (extracted_here and not os.path.exists(os.path.join(work, "rules.gz")))]
    if data_dir is None or not all(os.path.exists(path(f)) for f in needed):
        return None
    notes = []
    if extracted_here:
        os.makedirs(work, exist_ok=True)
        rules, glue = os.path.join(work, "rules.gz"), os.path.join(work, "glue.gz")
        if not os.path.exists(rules):
            devtest = os.path.join(work, "devtest.src")
            with open(devtest, "w", encoding="utf-8") as out:
                out.writelines(line + "\n" for line in read_lines(path("dev.es")) + read_lines(path("test.es")))
            log(f"extracting GHKM rules from {data_dir} (filtered to dev+test)")
            run_cky("extract", "--source", path("train.es"), "--trees", path("train.trees"), "--alignment",
                    path("train.align"), "--out", rules, "--glue", glue, "--filter-to", devtest, "--no-progress")
        notes.append("rules extracted by the benchmark with `cky extract` defaults, filtered to dev+test")
    try:
        name = json.loads(pathlib.Path(path("manifest.json")).read_text(encoding="utf-8"))["name"]
    except (OSError, ValueError, KeyError):
        name = "bible-es-en"
    return System(name, rules, path("lm.bin"), path("dev.es"), path("dev.en"), path("test.es"), path("test.en"),
                  work, glue=glue if os.path.exists(glue) else None, tokenize="none", notes=notes)


def filtered_rules(system: System) -> str:
    """The system's rule table filtered to its dev and test sentences (written once, streaming)."""
    from .extract.filtering import filter_table

    path = os.path.join(system.work, "rules.devtest.gz")
    if not os.path.exists(path):
        sentences = os.path.join(system.work, "devtest.src")
        with open(sentences, "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in read_lines(system.dev_src) + read_lines(system.test_src))
        partial = path[:-len(".gz")] + ".partial.gz"  # renamed when complete; .gz: written compressed
        filter_table(system.rules, sentences, partial)
        for suffix in ("", ".features.json"):  # the table and its feature names
            if os.path.exists(partial + suffix):
                os.replace(partial + suffix, path + suffix)
    return path


def store_for(system: System, strategy: str, seed: int = 0) -> str:
    """The grammar store of the dev+test-filtered rules for a strategy (compiled once)."""
    from .store import build_store

    name = strategy if strategy != "random" else f"random-{seed}"
    store_dir = os.path.join(system.work, "stores", name)
    if os.path.exists(os.path.join(store_dir, "meta.json")):
        return store_dir
    build_store(filtered_rules(system), store_dir, strategy, seed=seed, source_table=system.rules)
    return store_dir


def write_decoder_config(system: System, store_dir: str, path: str, weights: dict | None = None,
                         **settings) -> str:
    """Write the decoder config (`cky translate --config`) of a system and a store: absolute paths of the
    store and the LM, the built-in glue, then these settings and weights. Returns path."""
    from .settings import DEFAULT_GLUE
    from .tune.config import write_config

    # The decoder's built-in glue (any label may start or be concatenated), which the shipped
    # weights were tuned with; `cky extract`'s glue file (the grammar's LHS labels, plus the
    # unknown-word labels the decoder adds) is the Moses-style alternative: `glue = "<file>"`.
    config = {"store": os.path.abspath(store_dir), "lm": os.path.abspath(system.lm), "glue": DEFAULT_GLUE}
    config.update(settings)
    if weights:
        config["weights"] = dict(weights)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_config(config, path)
    return path
