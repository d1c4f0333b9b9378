"""Moses' GHKM training pipeline on the corpus of one of our builds, timed step by step (`cky bench --train`).

Moses is never built or fetched here: a Moses build is named by `--moses DIR` or $MOSES_ROOT and is
usable when DIR/scripts/training/train-model.perl and DIR/bin/ exist (`find_moses`). Its pipeline is
train-model.perl (mosesdecoder/scripts/training/train-model.perl) with the options Moses' syntax
tutorial and its experiment manager (scripts/ems/experiment.perl, get_training_setting and
define_training_extract_phrases) give a string-to-tree GHKM model:

    train-model.perl -root-dir W -corpus W/corpus/train -f SRC -e en -alignment grow-diag-final-and
        -hierarchical -glue-grammar -target-syntax -ghkm -unknown-word-label-file W/model/unknown-word-labels
        -cores N -lm 0:ORDER:LM:8 -first-step S -last-step S
        [-external-bin-dir W/../tools -mgiza -mgiza-cpus N]   (steps 1-3, when Moses aligns)

one process per step, as experiment.perl runs it, so that each step's wall and CPU seconds (the
process's and its waited-for children's: extract-ghkm, score, sort, gzip, mgiza) are its own.
The steps (train-model.perl's `### MAIN`): 1 prepare corpus, 2 run GIZA, 3 align words, 4 lexical
translation table, 5 extract rules (extract-ghkm, through extract-parallel.perl on -cores
processes), 6 score rules, 9 moses.ini. Steps 7 (lexicalized reordering) and 8 (generation
model) do nothing for a single-factor hierarchical model and are not run. Each step's stderr
starts with its line `(S) NAME @ DATE` (`step_marks` reads them): a step whose log lacks it did not run.

The same corpus as ours: our tokenized source (DIR/corpus/train.tok.src), our English trees
(DIR/corpus/train.trees) in Moses' XML tree format (`xml_tree`: `<tree label="NP"> ... </tree>`,
as scripts/training/wrappers/berkeleyparsed2mosesxml.perl writes them), and either Moses' own
aligner (mgiza or GIZA++ with mkcls and snt2cooc, found in DIR/tools, where Moses' baseline-system
instructions put them; steps 1-3) or our alignment (DIR/corpus/train.align, eflomal with
grow-diag-final-and, copied to W/model/aligned.grow-diag-final-and, where step 4 reads it; steps
1-3 skipped). The LM is ours (DIR/lm.bin, KenLM: `-lm 0:ORDER:PATH:8`, type 8 = KENLM in
train-model.perl's create_ini).

Words are written as our rule tables write them (decoder.grammar.escape_word: `|`, `[`, `]`), and
`<`, `>` as `&lt;`, `&gt;` (the XML tree reader, phrase-extract/XmlTree.cpp, would read them as
tags): Moses' extract-ghkm keeps words as it reads them (syntax-common/xml_tree_parser.h: no
unescaping by default) and its decoder looks them up in the LM as they are, so every word without
those characters (every word of both Bible corpora) is the LM's own word. Moses' escape-special-chars.perl
would also escape `'` and `"`, which our LM has as plain words; neither the rule-table reader nor
the XML tree reader needs them escaped.

Then Moses' decoder (DIR/bin/moses) translates the test set with the moses.ini of step 9 (its
default weights: train-model.perl does not tune, and MERT over Moses' chart decoder is not run
here) over the rule table filtered to the test sentences (decoder.extract.filtering: a superset of
the rules that can apply), and its output is scored as ours is.
"""
from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, TreeFormatError

MOSES_ENVIRONMENT = "MOSES_ROOT"
TRAIN_MODEL = Path("scripts") / "training" / "train-model.perl"
DECODER = Path("bin") / "moses"
EXTERNAL_TOOLS = "tools"          # where Moses' baseline-system instructions put mgiza, mkcls, snt2cooc
ALIGNMENT = "grow-diag-final-and"
KENLM_TYPE = 8                    # train-model.perl's -lm type for KENLM (create_ini)
# train-model.perl's steps (its `### MAIN` and -help text)
STEP_NAMES = {1: "prepare corpus", 2: "run GIZA", 3: "align words", 4: "learn lexical translation",
              5: "extract phrases", 6: "score phrases", 7: "learn reordering model",
              8: "learn generation model", 9: "create decoder config file"}
ALIGNER_STEPS = (1, 2, 3)
MODEL_STEPS = (4, 5, 6, 9)        # 7 and 8 do nothing for a single-factor hierarchical model
NOT_FOUND = (f"Moses not found: give `--moses DIR` or set ${MOSES_ENVIRONMENT} to a Moses build "
             f"(DIR/{TRAIN_MODEL} and DIR/bin/ with extract-ghkm, score, consolidate and moses)")


@dataclass
class MosesBuild:
    """A Moses build: its root, and Moses' own word aligner if one is at hand."""
    root: Path
    external_bin: Path | None = None  # mgiza or GIZA++ with mkcls and snt2cooc
    aligner: str | None = None        # "mgiza" or "GIZA++"

    @property
    def train_model(self) -> Path:
        return self.root / TRAIN_MODEL

    @property
    def decoder(self) -> Path:
        return self.root / DECODER


def find_moses(given: str | os.PathLike | None, environ=os.environ) -> tuple[MosesBuild | None, str]:
    """The Moses build named by `given` (--moses) or $MOSES_ROOT, or None and the one line saying why."""
    named = given if given is not None else environ.get(MOSES_ENVIRONMENT)
    if not named:
        return None, NOT_FOUND
    root = Path(named).expanduser().resolve()
    source = "--moses" if given is not None else f"${MOSES_ENVIRONMENT}"
    missing = [str(root / path) for path in (TRAIN_MODEL, Path("bin")) if not (root / path).exists()]
    if missing:
        return None, f"Moses not found at {root} ({source}): no {' and no '.join(missing)}; {NOT_FOUND[len('Moses not found: '):]}"
    build = MosesBuild(root)
    tools = root / EXTERNAL_TOOLS
    if _executable(tools / "mkcls") and any(_executable(tools / name) for name in ("snt2cooc", "snt2cooc.out")):
        if any(_executable(tools / name) for name in ("mgiza", "mgizapp")) and _executable(tools / "merge_alignment.py"):
            build.external_bin, build.aligner = tools, "mgiza"
        elif _executable(tools / "GIZA++"):
            build.external_bin, build.aligner = tools, "GIZA++"
    return build, f"Moses at {root} ({source})"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


# ---- Moses' input files ---------------------------------------------------------------------------

def moses_word(word: str) -> str:
    """A word as the Moses pipeline is given it (module docstring)."""
    from ..grammar import escape_word

    return escape_word(word).replace("<", "&lt;").replace(">", "&gt;")


def plain_word(word: str) -> str:
    """The inverse of moses_word, for Moses' output."""
    from ..grammar import unescape_word

    return unescape_word(word.replace("&lt;", "<").replace("&gt;", ">"))


def xml_tree(penn: str) -> str:
    """A Penn bracketed tree in Moses' XML tree format: `<tree label="L"> ... </tree>` per node, the words
    between the tags (moses_word). A label Moses' attribute reader cannot hold (a '"', '<', '>' or a
    space) is a TreeFormatError."""
    from ..extract.trees import parse_tree_reference

    tree = parse_tree_reference(penn)  # words come back escaped as rule tables write them
    parts: list[str] = []

    def write(node: int) -> None:
        if tree.is_word[node]:
            parts.append(tree.label[node].replace("<", "&lt;").replace(">", "&gt;"))
            return
        label = tree.label[node]
        if not label or any(c in label for c in '"<> \t'):
            raise TreeFormatError(f"label {label!r} cannot be a Moses XML tree label")
        parts.append(f'<tree label="{label}">')
        for child in tree.children[node]:
            write(child)
        parts.append("</tree>")

    write(0)
    return " ".join(parts)


@dataclass
class MosesCorpus:
    """The files the Moses pipeline reads, under its work directory."""
    work: Path
    source_lang: str
    target_lang: str
    pairs: int
    own_alignment: bool

    @property
    def stem(self) -> Path:
        return self.work / "corpus" / "train"

    @property
    def model(self) -> Path:
        return self.work / "model"

    @property
    def test_input(self) -> Path:
        return self.work / "test.in"


def write_corpus(build_dir: Path, work: Path, source_lang: str, target_lang: str, own_alignment: bool) -> MosesCorpus:
    """W/corpus/train.SRC (tokenized source), W/corpus/train.TGT (XML trees), W/test.in (the tokenized test
    source) and, with `own_alignment`, W/model/aligned.grow-diag-final-and (our alignment)."""
    from ..train.split import read_lines, write_lines

    corpus = build_dir / "corpus"
    sources, trees = read_lines(corpus / "train.tok.src"), read_lines(corpus / "train.trees")
    if len(sources) != len(trees):
        raise InputError(corpus / "train.trees", f"{len(trees)} trees for {len(sources)} source lines "
                                                 f"({corpus / 'train.tok.src'})")
    moses = MosesCorpus(work, source_lang, target_lang, len(sources), own_alignment)
    moses.stem.parent.mkdir(parents=True, exist_ok=True)
    write_lines(Path(f"{moses.stem}.{source_lang}"), (" ".join(map(moses_word, s.split())) for s in sources))
    xml = []
    for number, penn in enumerate(trees, 1):
        try:
            xml.append(xml_tree(penn))
        except TreeFormatError as error:
            raise InputError(corpus / "train.trees", str(error), number) from None
    write_lines(Path(f"{moses.stem}.{target_lang}"), xml)
    write_lines(moses.test_input, (" ".join(map(moses_word, s.split()))
                                   for s in read_lines(corpus / "test.tok.src")))
    if own_alignment:
        moses.model.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus / "train.align", moses.model / f"aligned.{ALIGNMENT}")
    return moses


# ---- train-model.perl -----------------------------------------------------------------------------

def train_model_command(moses: MosesBuild, corpus: MosesCorpus, step: int, lm: Path, lm_order: int,
                        cores: int) -> list[str]:
    """The train-model.perl command line of one step (module docstring)."""
    command = [str(moses.train_model),
               "-root-dir", str(corpus.work), "-corpus", str(corpus.stem),
               "-f", corpus.source_lang, "-e", corpus.target_lang, "-alignment", ALIGNMENT,
               "-hierarchical", "-glue-grammar", "-target-syntax", "-ghkm",
               "-unknown-word-label-file", str(corpus.model / "unknown-word-labels"),
               "-cores", str(cores), "-lm", f"0:{lm_order}:{Path(lm).resolve()}:{KENLM_TYPE}",
               "-first-step", str(step), "-last-step", str(step)]
    if step in ALIGNER_STEPS:
        if moses.external_bin is None:
            raise ValueError(f"step {step} needs Moses' aligner, and this Moses build has none")
        command += ["-external-bin-dir", str(moses.external_bin)]
        if moses.aligner == "mgiza":
            command += ["-mgiza", "-mgiza-cpus", str(cores)]
    return command


def steps_to_run(moses: MosesBuild) -> tuple[int, ...]:
    """Moses' aligner's steps where it has one (else our alignment stands in), then the model's."""
    return (ALIGNER_STEPS if moses.aligner else ()) + MODEL_STEPS


_STEP_MARK = re.compile(r"^\((\d)\) (.+?) @ (.+)$", re.MULTILINE)


def step_marks(stderr: str) -> list[tuple[int, str, str]]:
    """The lines `(S) NAME @ DATE` train-model.perl prints as each step starts: [(S, NAME, DATE)]."""
    return [(int(m.group(1)), m.group(2).strip(), m.group(3).strip()) for m in _STEP_MARK.finditer(stderr)]


def run_timed(command: list[str], log_path: Path, cwd: Path, stdin: Path | None = None,
              stdout: Path | None = None) -> dict:
    """Run a command (stderr to `log_path`), wait for it with os.wait4: its exit code, wall seconds and
    the CPU seconds of the process and its waited-for descendants."""
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log, \
            (open(stdin, "rb") if stdin else open(os.devnull, "rb")) as source, \
            (open(stdout, "wb") if stdout else open(log_path.with_suffix(".stdout"), "wb")) as sink:
        process = subprocess.Popen(command, cwd=cwd, stdin=source, stdout=sink, stderr=log)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return {"exit_code": process.returncode, "seconds": round(time.monotonic() - started, 2),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2)}


@dataclass
class MosesResult:
    """What the Moses pipeline did: per step its command, times and marks; the rule count; the test scores."""
    root: str
    aligner: str
    steps: list[dict] = field(default_factory=list)
    rules: int | None = None
    glue_rules: int | None = None
    decode: dict | None = None
    scores: dict | None = None
    error: str | None = None


def count_lines(path: Path) -> int | None:
    opener = gzip.open if path.suffix == ".gz" else open
    if not path.exists():
        return None
    with opener(path, "rb") as f:
        return sum(1 for _ in f)


def train(moses: MosesBuild, build_dir: Path, work: Path, source_lang: str, target_lang: str, lm: Path,
          lm_order: int, cores: int, log=print) -> tuple[MosesResult, MosesCorpus | None]:
    """Moses' training steps on our build's corpus in `work` (an empty directory), each timed."""
    result = MosesResult(str(moses.root), moses.aligner or f"ours (eflomal, {ALIGNMENT}): steps 1-3 not run")
    started, cpu = time.monotonic(), time.process_time()
    corpus = write_corpus(build_dir, work, source_lang, target_lang, own_alignment=moses.aligner is None)
    result.steps.append({"step": 0, "name": "input files (XML trees, escaped words)",
                         "seconds": round(time.monotonic() - started, 2),
                         "cpu_seconds": round(time.process_time() - cpu, 2)})
    logs = work / "logs"
    logs.mkdir()
    for step in steps_to_run(moses):
        command = train_model_command(moses, corpus, step, lm, lm_order, cores)
        log(f"moses step {step} ({STEP_NAMES[step]})")
        timing = run_timed(command, logs / f"step-{step}.log", work)
        stderr = (logs / f"step-{step}.log").read_text(encoding="utf-8", errors="replace")
        marks = step_marks(stderr)
        record = {"step": step, "name": STEP_NAMES[step], "command": command, **timing,
                  "marks": [list(mark) for mark in marks], "log": str(logs / f"step-{step}.log")}
        result.steps.append(record)
        if timing["exit_code"] != 0 or not any(mark[0] == step for mark in marks):
            result.error = (f"train-model.perl step {step} " + (f"exited with {timing['exit_code']}"
                            if timing["exit_code"] else "did not report starting") + f": see {record['log']}")
            log(result.error)
            return result, corpus
    result.rules = count_lines(corpus.model / "rule-table.gz")
    result.glue_rules = count_lines(corpus.model / "glue-grammar")
    return result, corpus


def moses_ini_with_table(ini: str, table: Path) -> str:
    """moses.ini's text with its rule table (the feature TranslationModel0) read from `table` instead."""
    lines = ini.splitlines()
    for i, line in enumerate(lines):
        words = line.split()
        if words and "name=TranslationModel0" in words[1:]:
            lines[i] = " ".join(f"path={table}" if w.startswith("path=") else w for w in words)
            return "\n".join(lines) + "\n"
    raise ValueError("moses.ini has no feature named TranslationModel0")


def decode_test(moses: MosesBuild, corpus: MosesCorpus, cores: int, sentences: int | None = None,
                log=print) -> tuple[dict, list[str]]:
    """Moses' decoder on the test set (the first `sentences`) with step 9's moses.ini over the rule
    table filtered to those sentences; returns the timing and the output in our words (plain_word)."""
    from ..extract.filtering import filter_table
    from ..train.split import read_lines, write_lines

    lines = read_lines(corpus.test_input)[:sentences] if sentences else read_lines(corpus.test_input)
    test = corpus.work / "test.decoded.in"
    write_lines(test, lines)
    plain = corpus.work / "test.decoded.plain"  # the filter escapes words itself, as our tables are
    write_lines(plain, (" ".join(plain_word(w) for w in line.split()) for line in lines))
    started = time.monotonic()
    filtered = corpus.work / "rule-table.test.gz"
    filter_table(str(corpus.model / "rule-table.gz"), str(plain), str(filtered))
    filter_seconds = round(time.monotonic() - started, 2)
    ini = corpus.work / "moses.test.ini"
    ini.write_text(moses_ini_with_table((corpus.model / "moses.ini").read_text(encoding="utf-8"), filtered),
                   encoding="utf-8")
    output = corpus.work / "test.out"
    log(f"moses: decoding {len(lines)} test sentences")
    timing = run_timed([str(moses.decoder), "-f", str(ini), "-threads", str(cores)], corpus.work / "logs" /
                       "decode.log", corpus.work, stdin=test, stdout=output)
    timing.update(sentences=len(lines), filter_seconds=filter_seconds, ini=str(ini))
    if timing["exit_code"] != 0:
        return timing, []
    translations = [" ".join(plain_word(w) for w in line.split()) for line in read_lines(output)]
    return timing, translations[:len(lines)]
