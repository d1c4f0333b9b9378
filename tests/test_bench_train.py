"""`cky bench --train` on the small Bible recipe with a generated corpus in place of the Bibles (parse and
align are stand-ins, train_fakes.py; the LM, extraction, store, decoding and scoring are real), and its
Moses branch against a stub Moses build whose train-model.perl and moses record how they were called.

The stub checks nothing itself: the test checks each command line against what Moses' own sources say
(mosesdecoder/scripts/training/train-model.perl: its GetOptions table, its `-lm` format check and its
step numbering; scripts/ems/experiment.perl: get_training_setting runs one step per process)."""
from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import os
import random
import re
import stat
from pathlib import Path

import pytest

from decoder.benchmark import moses_training, training
from decoder.cli import main as cky_main
from decoder.data import build
from decoder.errors import MissingToolError, TreeFormatError, UsageError
from decoder.train import pipeline
from decoder.train.pipeline import STAGES
from train_corpus import sentence_pair
from train_fakes import FAKES


def lm_tools_missing() -> str | None:
    from decoder.train.requirements import check_tools

    try:
        check_tools(["lm"])
    except MissingToolError as error:
        return str(error)
    return None


LM_MISSING = lm_tools_missing()

# train-model.perl's options (its GetOptions table) that a --ghkm string-to-tree run uses; a name outside
# this set would make the script print its help and exit.
TRAIN_MODEL_OPTIONS = {"root-dir", "corpus", "f", "e", "alignment", "hierarchical", "glue-grammar", "target-syntax",
                       "ghkm", "unknown-word-label-file", "cores", "lm", "first-step", "last-step",
                       "external-bin-dir", "mgiza", "mgiza-cpus"}
FLAGS = {"hierarchical", "glue-grammar", "target-syntax", "ghkm", "mgiza"}  # options without a value


def parse_options(argv: list[str]) -> dict:
    """train-model.perl's single-dash options as Getopt::Long reads them: flags and `-name value` pairs."""
    options, i = {}, 0
    while i < len(argv):
        assert argv[i].startswith("-") and not argv[i].startswith("--"), argv[i]
        name = argv[i][1:]
        assert name in TRAIN_MODEL_OPTIONS, f"train-model.perl has no option -{name}"
        if name in FLAGS:
            options[name] = True
            i += 1
        else:
            options[name] = argv[i + 1]
            i += 2
    return options


def synthetic_corpus(pairs: int):
    """A recipe Corpus of generated sentence pairs (the recipe splits it: every 50th verse is test)."""
    rng = random.Random(7)
    raw = [build.RawPair(f"Gen {i // 30 + 1}:{i % 30 + 1}", *sentence_pair(rng)) for i in range(pairs)]
    return build.Corpus(raw, ["The king sees the house.", "The dog eats the bread."], {"pairs": pairs})


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    """`cky bench --train --small` with the es-en recipe's corpus replaced by 500 generated pairs, nothing
    installed, and the parser and aligner replaced by train_fakes' stand-ins."""
    if LM_MISSING:
        pytest.skip(LM_MISSING)
    out = tmp_path_factory.mktemp("bench")
    patch = pytest.MonkeyPatch()
    recipe = dataclasses.replace(build.RECIPES["bible-es-en"], corpus=lambda cache: synthetic_corpus(500),
                                 debian_packages=(), pip_packages=())
    patch.setitem(build.RECIPES, "bible-es-en", recipe)
    patch.setattr(pipeline, "train", functools.partial(pipeline.train, implementations=FAKES))
    patch.delenv(moses_training.MOSES_ENVIRONMENT, raising=False)
    try:
        code = cky_main(["bench", "--train", "--small", "--workers", "1", "--out", str(out)])
    finally:
        patch.undo()
    assert code == 0
    return out


def test_the_report_holds_every_stage_and_the_builds_own_figures(bench_run):
    report = json.loads((bench_run / training.TRAIN_JSON).read_text())
    ours = report["ours"]
    directory = Path(ours["directory"])
    assert directory == (bench_run / "train" / "bible-es-en-small").resolve()
    assert [s["name"] for s in ours["stages"]] == list(STAGES) and ours["missing_stages"] == []
    state = json.loads((directory / "stages.json").read_text())["stages"]
    for stage in ours["stages"]:
        assert stage["seconds"] == state[stage["name"]]["seconds"] >= 0
        assert stage["cpu_seconds"] == state[stage["name"]]["cpu_seconds"] >= 0
    assert ours["total"]["seconds"] == pytest.approx(sum(s["seconds"] for s in ours["stages"]), abs=0.011)
    assert ours["total"]["cpu_seconds"] == pytest.approx(sum(s["cpu_seconds"] for s in ours["stages"]), abs=0.011)
    # the fresh run's own clock covers the stages and the recipe around them
    assert ours["fresh_run"]["seconds"] >= ours["total"]["seconds"]
    # rules: the lines of the table; store: the bytes of its files; both counted here from the files
    with gzip.open(directory / "rules.gz", "rt", encoding="utf-8") as f:
        assert ours["rules"] == sum(1 for line in f if line.strip()) > 0
    assert ours["store_bytes"] == sum(p.stat().st_size for p in (directory / "store").rglob("*") if p.is_file())
    assert ours["train_pairs"] == 500 - 10 - 10   # every 50th verse from 0 is test, from 25 dev
    # the test scores: sacreBLEU recomputed on the build's own output and references
    import sacrebleu

    hypotheses = (directory / "test.out").read_text(encoding="utf-8").splitlines()
    references = (directory / "corpus" / "test.tok.tgt").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == len(references) == ours["scores"]["test_sentences"] == 10
    expected = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none").score
    assert ours["scores"]["bleu"] == pytest.approx(expected, abs=0.006)
    assert "sacrebleu" in ours["scores"]
    assert report["machine"]["cpus"] == os.cpu_count()
    # the small recipe keeps its shipped weights: no MERT
    assert ours["tuned"] is False


def test_without_moses_the_report_says_how_to_point_to_it(bench_run):
    report = json.loads((bench_run / training.TRAIN_JSON).read_text())
    assert report["moses"] == {"found": False, "message": moses_training.NOT_FOUND}
    text = (bench_run / training.TRAIN_MD).read_text()
    assert "Moses not found: give `--moses DIR` or set $MOSES_ROOT" in text
    assert "| **total** |" in text


def test_reusing_a_build_reports_its_times_without_running_it(bench_run, tmp_path):
    directory = bench_run / "train" / "bible-es-en-small"
    before = (directory / "stages.json").read_text()
    assert cky_main(["bench", "--train", "--reuse", str(directory), "--out", str(tmp_path)]) == 0
    assert (directory / "stages.json").read_text() == before
    report = json.loads((tmp_path / training.TRAIN_JSON).read_text())
    first = json.loads((bench_run / training.TRAIN_JSON).read_text())
    assert report["ours"]["stages"] == first["ours"]["stages"] and report["ours"]["fresh_run"] is None


def test_a_directory_it_did_not_make_is_never_emptied(tmp_path):
    mine = tmp_path / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "sub" / "keep.txt").write_text("x")
    with pytest.raises(UsageError, match="was not made by `cky bench --train`"):
        training.fresh_directory(mine)
    assert (mine / "sub" / "keep.txt").read_text() == "x"
    made = training.fresh_directory(tmp_path / "made")
    (made / "old.txt").write_text("y")
    training.fresh_directory(made)
    assert sorted(p.name for p in made.iterdir()) == [training.BUILD_MARKER]


def test_reuse_of_a_directory_without_stages_is_one_line(tmp_path, capsys):
    assert cky_main(["bench", "--train", "--reuse", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "no stages.json" in capsys.readouterr().err


# ---- Moses' input files ---------------------------------------------------------------------------------

def test_xml_tree_is_mosess_format_and_keeps_the_words():
    penn = "(TOP (S (NP (DT the) (NN a|b)) (VP (VBZ <x>) ('' '') (. .))))"
    assert moses_training.xml_tree(penn) == (
        '<tree label="TOP"> <tree label="S"> <tree label="NP"> <tree label="DT"> the </tree> '
        '<tree label="NN"> a&#124;b </tree> </tree> <tree label="VP"> <tree label="VBZ"> &lt;x&gt; </tree> '
        "<tree label=\"''\"> '' </tree> <tree label=\".\"> . </tree> </tree> </tree> </tree>")
    # train-model.perl's reduce_factors strips the tags (s/<\S[^>]*>/ /g): the words remain, as written
    stripped = " ".join(re.sub(r"<\S[^>]*>", " ", moses_training.xml_tree(penn)).split())
    assert stripped == "the a&#124;b &lt;x&gt; '' ." == " ".join(map(moses_training.moses_word, "the a|b <x> '' .".split()))
    assert [moses_training.plain_word(w) for w in stripped.split()] == "the a|b <x> '' .".split()
    with pytest.raises(TreeFormatError, match="label"):
        moses_training.xml_tree('(TOP (A"B x))')


# ---- the Moses branch, against a stub Moses build --------------------------------------------------------

STUB_TRAIN_MODEL = r"""#!/bin/sh
# records its arguments, prints train-model.perl's step line, writes the files the real steps write
here=$(dirname "$0")
step=""; root=""; prev=""
for a in "$@"; do
  case "$prev" in -first-step) step="$a";; -root-dir) root="$a";; esac
  prev="$a"
done
printf '%s\n' "$@" > "$here/../../calls/step-$step"
echo "($step) step $step of the stub @ Sun Nov 29 06:00:0$step UTC 2026" >&2
case "$step" in
  5) sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' ;;
  6) printf '%s\n' "el [X] ||| the [DT] ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1" \
        "rey [X] ||| king [NN] ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1" \
        "zzz [X] ||| nothing [NN] ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1" | gzip > "$root/model/rule-table.gz"
     printf '%s\n' "<s> [X] ||| <s> [S] ||| 1 ||| 0-0 ||| 1" > "$root/model/glue-grammar" ;;
  9) printf '%s\n' "[feature]" \
        "PhraseDictionaryMemory name=TranslationModel0 num-features=4 path=$root/model/rule-table.gz input-factor=0 output-factor=0" \
        "PhraseDictionaryMemory name=TranslationModel1 num-features=1 path=$root/model/glue-grammar input-factor=0 output-factor=0" \
        > "$root/model/moses.ini" ;;
esac
"""

# The stub decoder: records its arguments and its ini, and passes its input through.
STUB_DECODER = r"""#!/bin/sh
here=$(dirname "$0")
printf '%s\n' "$@" > "$here/../calls/decoder"
cp "$2" "$here/../calls/decoder.ini"
cat
"""


def stub_moses(root: Path) -> Path:
    for path, text in ((root / "scripts" / "training" / "train-model.perl", STUB_TRAIN_MODEL),
                       (root / "bin" / "moses", STUB_DECODER)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (root / "calls").mkdir()
    return root


def test_moses_branch_runs_train_model_step_by_step_as_its_sources_say(bench_run, tmp_path):
    moses = stub_moses(tmp_path / "moses")
    build_dir = bench_run / "train" / "bible-es-en-small"
    out = tmp_path / "out"
    assert cky_main(["bench", "--train", "--reuse", str(build_dir), "--moses", str(moses), "--workers", "2",
                     "--out", str(out)]) == 0
    report = json.loads((out / training.TRAIN_JSON).read_text())["moses"]
    work = out / "train" / "bible-es-en-small-moses"
    # no aligner in DIR/tools: our alignment stands in for steps 1-3; 7 and 8 do nothing here
    calls = {int(p.name.split("-")[1]): p.read_text().splitlines() for p in (moses / "calls").glob("step-*")}
    assert sorted(calls) == [4, 5, 6, 9]
    for step, argv in calls.items():
        options = parse_options(argv[1:] if argv[0].endswith("train-model.perl") else argv)
        assert options["first-step"] == options["last-step"] == str(step)   # one step per process
        assert all(options.get(flag) is True for flag in ("hierarchical", "glue-grammar", "target-syntax", "ghkm"))
        assert options["alignment"] == "grow-diag-final-and" and options["cores"] == "2"
        assert (options["f"], options["e"]) == ("es", "en")
        assert Path(options["root-dir"]) == work
        # -lm factor:order:filename:type; the file must be absolute (train-model.perl dies otherwise); 8 = KENLM
        factor, order, filename, kind = options["lm"].split(":")
        assert re.fullmatch(r"[0-9,]+", factor) and order == "5" and kind == "8"
        assert os.path.isabs(filename) and Path(filename) == (build_dir / "lm.bin").resolve()
        assert "external-bin-dir" not in options and "mgiza" not in options
    # the corpus it reads: -corpus STEM with STEM.es and STEM.en (XML trees whose words are our tokens)
    stem = Path(parse_options(calls[5])["corpus"])
    assert Path(f"{stem}.es").read_text().splitlines() == (build_dir / "corpus" / "train.tok.src").read_text().splitlines()
    trees = Path(f"{stem}.en").read_text().splitlines()
    words = [" ".join(re.sub(r"<\S[^>]*>", " ", tree).split()) for tree in trees]
    assert words == (build_dir / "corpus" / "train.tok.tgt").read_text().splitlines()
    assert all(tree.startswith('<tree label="TOP">') for tree in trees)
    # step 4 reads the alignment at $___MODEL_DIR/aligned.$___ALIGNMENT
    assert (work / "model" / "aligned.grow-diag-final-and").read_bytes() == (build_dir / "corpus" / "train.align").read_bytes()
    # the steps' times: one record per step, its line `(S) ... @ DATE` read back, CPU of the grandchild counted
    assert [s["step"] for s in report["steps"]] == [0, 4, 5, 6, 9]
    for record in report["steps"][1:]:
        assert record["marks"] == [[record["step"], f"step {record['step']} of the stub",
                                    f"Sun Nov 29 06:00:0{record['step']} UTC 2026"]]
    step5 = report["steps"][2]
    assert step5["cpu_seconds"] >= 0.1 and step5["seconds"] >= step5["cpu_seconds"] * 0.5
    assert report["rules"] == 3 and report["glue_rules"] == 1 and report["error"] is None
    assert report["shared_stages"] == ["clean", "split", "tokenize", "parse", "lm", "align"]
    # the decoder: step 9's moses.ini over the rule table filtered to the test sentences
    decoder_args = (moses / "calls" / "decoder").read_text().splitlines()
    assert decoder_args[0] == "-f" and decoder_args[2:] == ["-threads", "2"]
    ini = (moses / "calls" / "decoder.ini").read_text()
    table = re.search(r"name=TranslationModel0 \S+ path=(\S+)", ini).group(1)
    with gzip.open(table, "rt") as f:
        kept = [line.split(" |||")[0] for line in f]
    test_words = set((build_dir / "corpus" / "test.tok.src").read_text().split())
    assert kept and all(line.split()[0] in test_words for line in kept) and "zzz [X]" not in kept
    assert "name=TranslationModel1" in ini and "glue-grammar" in ini
    # its output (the stub passes the source through) scored as ours is
    import sacrebleu

    sources = (build_dir / "corpus" / "test.tok.src").read_text().splitlines()
    references = (build_dir / "corpus" / "test.tok.tgt").read_text().splitlines()
    assert report["scores"]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(sources, [references], tokenize="none").score, abs=0.006)
    assert report["decode"]["sentences"] == 10
    text = (out / training.TRAIN_MD).read_text()
    assert "train-model.perl --ghkm" in text and "| 5 extract phrases |" in text


def test_moses_step_that_fails_is_reported_and_the_run_fails(bench_run, tmp_path):
    moses = stub_moses(tmp_path / "moses")
    script = moses / "scripts" / "training" / "train-model.perl"
    script.write_text(script.read_text().replace('case "$step" in', '[ "$step" = 6 ] && exit 3\ncase "$step" in'))
    out = tmp_path / "out"
    build_dir = bench_run / "train" / "bible-es-en-small"
    assert cky_main(["bench", "--train", "--reuse", str(build_dir), "--moses", str(moses), "--out", str(out)]) == 1
    report = json.loads((out / training.TRAIN_JSON).read_text())["moses"]
    assert report["error"].startswith("train-model.perl step 6 exited with 3")
    assert [s["step"] for s in report["steps"]] == [0, 4, 5, 6] and "decode" not in report


def test_moses_with_its_own_aligner_runs_steps_one_to_three_with_it(tmp_path):
    root = stub_moses(tmp_path / "moses")
    tools = root / moses_training.EXTERNAL_TOOLS
    tools.mkdir()
    for name in ("mkcls", "snt2cooc", "mgiza", "merge_alignment.py"):
        (tools / name).write_text("#!/bin/sh\n")
        (tools / name).chmod(0o755)
    found, message = moses_training.find_moses(str(root))
    assert found is not None and found.aligner == "mgiza" and found.external_bin == tools
    assert moses_training.steps_to_run(found) == (1, 2, 3, 4, 5, 6, 9)
    corpus = moses_training.MosesCorpus(tmp_path / "w", "es", "en", 1, own_alignment=False)
    for step in (1, 2, 3):
        options = parse_options(moses_training.train_model_command(found, corpus, step, tmp_path / "lm.bin", 5, 2)[1:])
        # train-model.perl dies without -external-bin-dir when step 2 runs; -mgiza-cpus sets mgiza's threads
        assert options["external-bin-dir"] == str(tools) and options["mgiza"] is True and options["mgiza-cpus"] == "2"
    assert "external-bin-dir" not in parse_options(
        moses_training.train_model_command(found, corpus, 4, tmp_path / "lm.bin", 5, 2)[1:])
    (tools / "mgiza").unlink()
    (tools / "GIZA++").write_text("#!/bin/sh\n")
    (tools / "GIZA++").chmod(0o755)
    found, _ = moses_training.find_moses(str(root))
    assert found.aligner == "GIZA++"
    assert "mgiza" not in parse_options(moses_training.train_model_command(found, corpus, 2, tmp_path / "lm", 5, 2)[1:])


def test_find_moses_names_what_is_missing(tmp_path):
    assert moses_training.find_moses(None, {}) == (None, moses_training.NOT_FOUND)
    found, message = moses_training.find_moses(None, {moses_training.MOSES_ENVIRONMENT: str(tmp_path)})
    assert found is None and "$MOSES_ROOT" in message and "train-model.perl" in message and "--moses DIR" in message
    root = stub_moses(tmp_path / "moses")
    found, _ = moses_training.find_moses(None, {moses_training.MOSES_ENVIRONMENT: str(root)})
    assert found.root == root.resolve() and found.aligner is None


def test_an_unusable_moses_dir_is_a_usage_error(tmp_path, capsys):
    assert cky_main(["bench", "--train", "--reuse", str(tmp_path), "--moses", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "Moses not found at" in err and "--moses" in err


def test_moses_ini_with_another_table():
    ini = ("[feature]\nRuleTable name=TranslationModel0 num-features=4 path=/m/rule-table.gz input-factor=0\n"
           "RuleTable name=TranslationModel1 num-features=1 path=/m/glue\n")
    changed = moses_training.moses_ini_with_table(ini, Path("/w/filtered.gz"))
    assert "name=TranslationModel0 num-features=4 path=/w/filtered.gz input-factor=0" in changed
    assert "path=/m/glue" in changed
    with pytest.raises(ValueError):
        moses_training.moses_ini_with_table("[feature]\nKENLM name=LM0\n", Path("/x"))
