"""An MT system's files, and the decoder config written for it: what `cky demo` and `cky bench` build on.

A `System` names the files of one system (rule table, LM, dev and test sets)
and a work directory for what is built from them; `fixture_system` makes the
tiny generated system (decoder.fixture), `bible_system` reads a Bible build of
`cky data bible-PAIR [--small]` (the layout `cky train` leaves, decoder.train.pipeline).
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

# The files a Bible data build of the earlier layout must hold (train.*: only to extract rules here).
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
    build: str | None = None  # the build directory the files are from (its config.toml: build_weights)


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


def bible_build(pair: str = "es-en") -> str:
    """Where `cky data bible-PAIR` writes the full build (its --small build is the `small` directory in
    it): decoder.data.build.default_out."""
    from .data.build import default_out

    return str(default_out(f"bible-{pair}"))


def trained_files(data_dir: str) -> dict:
    """The files the benchmark reads from a build `cky train` made (decoder.train.pipeline's layout:
    what `cky data bible-PAIR` builds), by role, as paths in data_dir; glue and config may be absent."""
    path = lambda name: os.path.join(data_dir, name)  # noqa: E731
    return {"rules": path("rules.gz"), "lm": path("lm.bin"),
            "dev_src": path(os.path.join("corpus", "dev.tok.src")), "dev_ref": path(os.path.join("corpus", "dev.tok.tgt")),
            "test_src": path(os.path.join("corpus", "test.tok.src")),
            "test_ref": path(os.path.join("corpus", "test.tok.tgt")),
            "glue": path("glue.gz"), "config": path("config.toml")}


OPTIONAL_TRAINED_FILES = ("glue", "config")


def missing_trained_files(data_dir: str) -> list[str]:
    """What a `cky train` build lacks for the benchmark (empty: it can be benchmarked)."""
    return [path for role, path in trained_files(data_dir).items()
            if role not in OPTIONAL_TRAINED_FILES and not os.path.exists(path)]


def is_recipe_build(data_dir: str) -> bool:
    """A data build of the earlier layout (`cky data` before `cky train` built it), complete."""
    return os.path.exists(os.path.join(data_dir, "manifest.json"))


def is_usable_build(data_dir: str) -> bool:
    """The benchmark can read it: a `cky train` build with its rules, LM, dev and test sets, or a complete
    build of the earlier layout."""
    return not missing_trained_files(data_dir) or is_recipe_build(data_dir)


def bible_data_dir(build: str | None = None) -> str | None:
    """The full Bible build if the benchmark can use it (is_usable_build), else the --small one, else None."""
    build = build or bible_build()
    return next((d for d in (build, os.path.join(build, "small")) if is_usable_build(d)), None)


def build_name(data_dir: str) -> str:
    """A build's name: its manifest's (`cky data`), else from where it lies, as `cky data` names them:
    RECIPE/build -> RECIPE, RECIPE/build/small -> RECIPE-small, RECIPE/small -> RECIPE-small."""
    try:
        return json.loads(pathlib.Path(data_dir, "manifest.json").read_text(encoding="utf-8"))["name"]
    except (OSError, ValueError, KeyError):
        pass
    directory = os.path.abspath(data_dir)
    small = os.path.basename(directory) == "small"
    base = os.path.dirname(directory) if small else directory
    name = os.path.basename(base)
    if name == "build":
        name = os.path.basename(os.path.dirname(base))
    return name + ("-small" if small else "")


def build_weights(data_dir: str) -> tuple[dict | None, str]:
    """The weights of a build's own decoder config (DIR/config.toml: `cky train`'s tuned weights, or the
    weights it was given) and where they come from (the config's path and its first comment line);
    (None, why) when it has none: the decoder's defaults."""
    from .tune.config import read_config

    path = trained_files(data_dir)["config"]
    if not os.path.exists(path):
        return None, f"the decoder's defaults ({path} does not exist)"
    weights = read_config(path).get("weights") or None
    if weights is None:
        return None, f"the decoder's defaults ({path} has no weights)"
    with open(path, encoding="utf-8") as f:
        first = f.readline().strip()
    return dict(weights), path + (f" ({first.lstrip('#').strip()})" if first.startswith("#") else "")


def bible_system(work: str, data_dir: str | None = None, log=print) -> System | None:
    """The system of a Bible build (`cky data bible-PAIR [--small]`, or any `cky train` directory); None if
    there is none. Its work directory is work/NAME (NAME: build_name), one per build, since stores and the
    filtered table are reused from it (check_work_source).

    A `cky train` build (trained_files) gives everything; in a build of the earlier layout (es-en),
    rules are the build's rules/rules.gz from `cky extract` if it is there, else extracted here (into
    the work directory, filtered to dev+test).
    """
    data_dir = data_dir or bible_data_dir()
    if data_dir is None:
        return None
    name = build_name(data_dir)
    work = os.path.join(work, name)
    if not missing_trained_files(data_dir):
        files = trained_files(data_dir)
        system = System(name, files["rules"], files["lm"], files["dev_src"], files["dev_ref"], files["test_src"],
                        files["test_ref"], work, glue=files["glue"] if os.path.exists(files["glue"]) else None,
                        tokenize="none", build=os.path.abspath(data_dir))
        check_work_source(system)
        return system
    path = lambda name: os.path.join(data_dir, name)  # noqa: E731
    rules, glue = path("rules/rules.gz"), path("rules/glue.gz")
    extracted_here = not os.path.exists(rules)
    # training files are needed only to extract rules (not yet extracted into the work directory)
    needed = [f for f in DATA_FILES if not f.startswith("train.")
              or (extracted_here and not os.path.exists(os.path.join(work, "rules.gz")))]
    if not all(os.path.exists(path(f)) for f in needed):
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
    system = System(name, rules, path("lm.bin"), path("dev.es"), path("dev.en"), path("test.es"), path("test.en"),
                    work, glue=glue if os.path.exists(glue) else None, tokenize="none", notes=notes,
                    build=os.path.abspath(data_dir))
    check_work_source(system)
    return system


WORK_SOURCE = "source.json"


def check_work_source(system: System) -> None:
    """The work directory's stores and filtered table are reused, so they must come from this system's
    files: the first run records the rule table (path, size, modification time) and the dev and test
    sets in WORK/source.json; a later run with other files is a UsageError naming it."""
    from .errors import UsageError

    def stamp(path):
        info = os.stat(path)
        return {"path": os.path.realpath(path), "bytes": info.st_size, "modified": int(info.st_mtime)}

    source = {"rules": stamp(system.rules), "dev": os.path.realpath(system.dev_src),
              "test": os.path.realpath(system.test_src)}
    path = os.path.join(system.work, WORK_SOURCE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
        if recorded != source:
            raise UsageError(f"{path}: this work directory was built from {recorded['rules']['path']} "
                             f"({recorded['rules']['bytes']:,} bytes) with dev {recorded['dev']}; now the "
                             f"rules are {source['rules']['path']} ({source['rules']['bytes']:,} bytes) with "
                             f"dev {source['dev']}: give another --work")
        return
    os.makedirs(system.work, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(source, f, indent=2)
        f.write("\n")


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
