"""`cky translate`: translate sentences, one per line, with the CKY decoder.

    cky translate --config CONFIG [--kbest K --kbest-out FILE] [--trees-out FILE]
                  [--stats-out FILE.jsonl] [--workers N | --cluster local[:N]|tcp://HOST:PORT]
                  [--output FILE [--resume]] < input > output
    cky translate --store STORE --lm LM.bin [--exhaustive] [--pop-limit N] < input > output

Without a config the decoder uses the documented default weights
(decoder.search.model.DEFAULT_WEIGHTS; 0.2 per rule-table score). The search
flags override the config keys of their names; the experimental settings (the
config's [experimental] table, docs/search.md) are changed with the hidden flag
`--experimental KEY=VALUE` (repeatable, e.g. `--experimental pop_count=real`).

The line contract (decoder.lines): the input is read as bytes and split on "\\n"
only (a "\\r", NUL or U+2028 stays inside its line; a leading UTF-8 BOM is
dropped), and every input line gives exactly one output line, and one record in
every side file, in order. An empty line gives an empty line. A line that is not
UTF-8, or whose decoding fails, is reported on stderr with its line number and
counts as failed: a line that is not UTF-8 gets an empty output line, a sentence
whose decoding fails gets its source words passed through; the other lines are
unaffected, and the command exits 1 saying how many lines failed.

Raw text: a config that records its languages (`[languages]`, as `cky train` writes)
takes raw text and writes detokenized, recased text (decoder.text): each line is
tokenized by the source language's tokenizer, decoded, recased and detokenized. The
side files stay tokenized (k-best lists, trees). --pretokenized is for input already
tokenized as the corpus was (as the Bible recipe's test sets are): the output is then
tokenized too. At the end, the source words the grammar did not know (passed through
untranslated) are counted on stderr, unless --quiet.

For a config without languages the input is tokenized text and so is the output;
there --tokenize es applies the corpus's tokenizer (decoder.data.tokenize: NFC, ASCII
quotes, lowercase, Penn brackets) to each input line, --detokenize en turns each
output line into text (spacing, sentence-initial capitals); the side files stay
tokenized, and a resumed run must give the same flags.

Side outputs: --kbest-out in the Moses n-best format (`line ||| text ||| name=value
... ||| score`, lines numbered from 0; a failed line gets one `line ||| words |||
error ||| 0`), --trees-out one target tree per line, --stats-out one JSON object
per line (`line`, `score`, `features`, `edges_proposed`, `edges_kept`,
`lm_queries`, `lm_queries_novel`, `items_per_cell`, `seconds`, and `error` for a
failed line).

With --cluster the sentences are decoded on a Dask cluster (decoder.cluster; needs the
`cluster` extra): `local` or `local:N` starts a LocalCluster of one worker process per core
(or N) on this machine, `tcp://HOST:PORT` uses a running scheduler, whose workers must see
the model's files at the same paths. The outputs, side files and --resume are the same as
with --workers; a worker that dies mid-run has its sentences decoded again elsewhere.

With --output, progress is saved beside it (OUTPUT.progress.json, see
decoder.batch) and --resume continues an interrupted run; resuming with other
settings, another input or other side files, or after the output was changed, is
refused with a message naming the files; --resume after a finished run does
nothing. A second run writing one of the same files is refused at once (a lock,
decoder.outputs.locked_outputs), as is an output that is also an input or another
output (through a link too). Ctrl-C stops at once (decoding runs in a child
process), saves the progress and exits 130; SIGTERM does the same and exits 143.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import sys
from collections import Counter

from ..data.tokenize import LANGUAGES as TOKENIZER_LANGUAGES, detokenize, tokenize
from ..errors import CkyError, ConfigError, Interrupted, OutputError, SettingsError, UsageError
from ..outputs import check_distinct_files, check_output_directory, is_stream, locked_outputs, progress_file
from ..settings import DEFAULT_EXPERIMENTAL_SETTINGS, DEFAULT_SEARCH_SETTINGS as DEFAULTS, MAX_KBEST, SEARCH_ALGORITHMS
from .arguments import add_quiet, count

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

log = logging.getLogger("cky.translate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    io = parser.add_argument_group("input and output")
    io.add_argument("--input", help="input file, one sentence a line (default: standard input)")
    io.add_argument("--output", help="output file (default: standard output); with it, progress is saved for --resume")
    text = parser.add_argument_group("text", "a config with [languages] takes raw text and writes text; "
                                             "one without takes and writes tokenized text")
    text.add_argument("--pretokenized", action="store_true",
                      help="the input is tokenized as the corpus was: decode it as it is and write tokenized "
                           "translations")
    text.add_argument("--tokenize", choices=TOKENIZER_LANGUAGES, metavar="LANG",
                      help="(config without [languages]) tokenize and lowercase each input line as the corpus was "
                           "(LANG: es or en)")
    text.add_argument("--detokenize", choices=TOKENIZER_LANGUAGES, metavar="LANG",
                      help="(config without [languages], or --pretokenized) detokenize the translations as LANG "
                           "text (the k-best list and trees stay tokenized)")
    model = parser.add_argument_group("model")
    model.add_argument("--config", help="decoder config (TOML; its keys: docs/configuration.md; `system = \"sdig\"` "
                                        "for the SDIG system)")
    model.add_argument("--store", help="grammar store directory (config key `store`; with --config: instead of it)")
    model.add_argument("--lm", help="KenLM language model (config key `lm`; with --config: instead of it, e.g. "
                                    "lm.rest.bin)")
    search = parser.add_argument_group("search", "each flag overrides the config key of its name "
                                                 "(docs/configuration.md, docs/search.md)")
    search.add_argument("--search", choices=sorted(SEARCH_ALGORITHMS),
                        help=f"search algorithm, config key `search` (default: {DEFAULTS.search})")
    search.add_argument("--pop-limit", type=count(0, " (0 means unlimited)"), metavar="N",
                        help=f"pops per cell, `pop_limit` (default {DEFAULTS.pop_limit}; 0: unlimited)")
    search.add_argument("--beam-size", type=count(0), metavar="N",
                        help=f"items kept per cell, `beam_size` (default {DEFAULTS.beam_size}: no limit)")
    search.add_argument("--table-limit", type=count(0, " (0 means all)"), metavar="N",
                        help=f"rules kept per source side, best first under the weights, `table_limit` (default "
                             f"{DEFAULTS.table_limit}; 0: all)")
    search.add_argument("--max-span", type=count(1), metavar="N",
                        help=f"longest span of a non-glue rule, `max_span` (default {DEFAULTS.max_span})")
    search.add_argument("--exhaustive", action="store_true", help="no pruning, `exhaustive` (small inputs only)")
    performance = parser.add_argument_group("performance")
    performance.add_argument("--workers", type=count(1), default=1, metavar="N", help="decoding processes (default 1)")
    performance.add_argument("--cluster", metavar="SPEC",
                             help="decode on Dask: local, local:N (workers on this machine) or tcp://SCHEDULER:PORT "
                                  "(docs/serve.md)")
    side = parser.add_argument_group("side outputs")
    side.add_argument("--kbest", type=count(0, maximum=MAX_KBEST), default=0, metavar="K",
                      help=f"write the K best translations to --kbest-out (at most {MAX_KBEST})")
    side.add_argument("--kbest-out", help="k-best file (Moses n-best format)")
    side.add_argument("--non-unique", action="store_true", help="k-best derivations, not distinct translations")
    side.add_argument("--trees-out", help="file of target trees, one per line (SDIG: CoNLL-U blocks)")
    side.add_argument("--stats-out", help="JSON lines of per-sentence search statistics")
    run = parser.add_argument_group("runs")
    run.add_argument("--resume", action="store_true", help="continue an interrupted run (needs --output)")
    add_quiet(run)
    # The research knobs: the [experimental] config table's keys (docs/search.md), hidden from --help.
    parser.add_argument("--experimental", action="append", default=[], metavar="KEY=VALUE", type=experimental_setting,
                        help=argparse.SUPPRESS)


def experimental_setting(text: str) -> tuple:
    """An argparse type: KEY=VALUE of the [experimental] config table, VALUE read as a TOML value (a bare
    word is a string: pop_count=real), the key checked by decoder.settings.ExperimentalSettings."""
    key, equals, value = text.partition("=")
    key = key.strip()
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    try:
        value = tomllib.loads(f"value = {value.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = value.strip()
    try:
        DEFAULT_EXPERIMENTAL_SETTINGS.replace(**{key: value})
    except SettingsError as error:
        raise argparse.ArgumentTypeError(error.reason) from None
    return key, value


OVERRIDING_FLAGS = ("search", "table_limit", "pop_limit", "beam_size", "max_span")


def decoder_loader(args) -> functools.partial:
    """A picklable callable that builds the decoder the arguments describe (paths made absolute, so
    that it builds the same decoder in a Dask worker)."""
    from ..decoder import Decoder

    # the flags that override a setting (None: not given; --exhaustive only turns it on)
    overrides = {name: getattr(args, name) for name in OVERRIDING_FLAGS if getattr(args, name) is not None}
    if args.exhaustive:
        overrides["exhaustive"] = True
    if args.experimental:  # the config's [experimental] table, with these keys changed
        overrides["experimental"] = dict(args.experimental)
    if args.config:  # --store and --lm replace the config's
        overrides.update({name: os.path.abspath(path) for name, path in (("store", args.store), ("lm", args.lm))
                          if path})
        return functools.partial(Decoder.from_config, os.path.abspath(args.config), **overrides)
    return functools.partial(Decoder, os.path.abspath(args.store), os.path.abspath(args.lm), **overrides)


def build_decoder(args):
    try:
        return decoder_loader(args)()
    except CkyError:
        raise
    except ValueError as error:  # a TOML syntax error or a bad value from a loader: name the config
        where = args.config if args.config and type(error).__name__ == "TOMLDecodeError" else None
        raise ConfigError(where, str(error)) from None


def model_identity(decoder, args) -> dict:
    """What the output of a run depends on, besides the input: resuming under another identity is refused."""
    weights = decoder.weights
    model = getattr(decoder, "store", None)  # an SdigDecoder has a grammar directory instead
    return {"store": os.path.abspath(os.fspath(getattr(model, "path", None) or getattr(decoder, "grammar_path", ""))),
            "lm": os.path.abspath(os.fspath(getattr(decoder.lm, "path", ""))),
            "settings": dict(decoder.settings),
            "weights": {name: weights[name] for name in weights.feature_names()},
            "kbest": args.kbest, "unique": not args.non_unique,
            # (only when given: the identity of a run without them is what it was before these flags)
            **{name: getattr(args, name) for name in ("tokenize", "detokenize", "pretokenized", "raw")
               if getattr(args, name, None)}}


def _format_features(features: dict) -> str:
    return " ".join(f"{name}={value:.6g}" for name, value in features.items())


def _stats_record(line: int, translation) -> dict:
    record = {"line": line, "score": float(translation.score), "features": dict(translation.features)}
    record.update(translation.stats or {})
    record["items_per_cell"] = {str(k): v for k, v in record.get("items_per_cell", {}).items()}
    return record


def sentence_outputs(decoder, sentence: str, kbest: int = 0, unique: bool = True, line: int | None = None,
                     tokenized: bool | None = None) -> dict:
    """The text every output file gets for one sentence (each a complete line or lines); "{line}" in the
    k-best text stands for the line number, filled in by `_finish`. The k-best list holds the
    translations' tokens; `unknown` (no file's) lists the source words passed through."""
    given = {} if tokenized is None else {"tokenized": tokenized}
    if kbest > 0:
        translations = decoder.kbest(sentence, kbest, unique=unique, **given)
        best = translations[0]
    else:
        best = decoder.translate(sentence, **given)
        translations = [best]
    out = {"output": best.text + "\n", "trees": best.tree + "\n"}
    out["kbest"] = "".join(f"{{line}} ||| {t.tokens} ||| {_format_features(t.features)} ||| {t.score:.6g}\n"
                           for t in translations) if best.tokens or kbest else ""
    out["stats"] = json.dumps(_stats_record(-1, best), ensure_ascii=False) + "\n"
    out["unknown"] = list(best.unknown_words)
    return out


def _job(decoder, sentence: str, kbest: int, unique: bool, tokenized: bool | None = None) -> dict:
    return sentence_outputs(decoder, sentence, kbest, unique, tokenized=tokenized)


def unknown_words_summary(counts: Counter, lines: int, total_lines: int, shown: int = 10) -> str:
    """The stderr line about unknown words: how many, in how many lines, the most frequent."""
    total = sum(counts.values())
    frequent = ", ".join(f"{word} ({count})" for word, count in
                         sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:shown])
    return (f"cky translate: {total} unknown word{'s' if total != 1 else ''} in {lines} of {total_lines} "
            f"line{'s' if total_lines != 1 else ''} (passed through untranslated); most frequent: {frequent}")


def _fallback(sentence: str, line: int, error: str) -> dict:
    """What a failed sentence writes: its source words passed through."""
    words = " ".join(sentence.split())
    record = {"line": line, "score": None, "features": {}, "error": error, "edges_proposed": 0, "edges_kept": 0,
              "lm_queries": 0, "lm_queries_novel": 0, "seconds": 0.0}
    return {"output": words + "\n", "trees": "\n", "kbest": f"{{line}} ||| {words} ||| error ||| 0\n",
            "stats": json.dumps(record, ensure_ascii=False) + "\n"}


def _finish(texts: dict, line_index: int, detokenize_as: str | None = None) -> dict:
    """Fill the line number (0-based in n-best lists, 1-based in stats) into a sentence's outputs, and
    detokenize its output line as `detokenize_as` text if given."""
    texts = {name: text for name, text in texts.items() if name != "unknown"}
    if detokenize_as:
        texts["output"] = detokenize(texts["output"].split(), detokenize_as) + "\n"
    texts["kbest"] = texts.get("kbest", "").replace("{line}", str(line_index))
    stats = texts.get("stats")
    if stats:
        record = json.loads(stats)
        record["line"] = line_index + 1
        texts["stats"] = json.dumps(record, ensure_ascii=False) + "\n"
    return texts


def _check_arguments(args) -> tuple[dict, list[str]]:
    """Usage and file errors found before the (slow) model load; returns {output name: path or None}
    and the output paths that are not regular files (/dev/stdout, a FIFO, a device): they can be
    neither truncated nor fsynced, so a run with one is written as a stream, without checkpoints."""
    if args.kbest and not args.kbest_out:
        raise UsageError("--kbest needs --kbest-out FILE")
    if args.resume and not args.output:
        raise UsageError("--resume needs --output FILE")
    if args.cluster and args.workers > 1:
        raise UsageError("give --workers N or --cluster SPEC, not both")
    if not args.config and not (args.store and args.lm):
        raise UsageError("give --config CONFIG, or --store STORE and --lm LM")
    args.raw = False  # whether the input is raw text (a config with [languages], without --pretokenized)
    if args.config:  # its mistakes (a bad key, value or syntax) before the input is read, not after
        from ..config import load_config

        languages = getattr(load_config(args.config), "languages", None)
        args.raw = bool(languages) and not args.pretokenized
    if args.raw and (args.tokenize or args.detokenize):
        flag = "--tokenize" if args.tokenize else "--detokenize"
        raise UsageError(f"{flag}: {args.config} records its languages, so the input is raw text and the output "
                         f"detokenized text already; {flag} is for tokenized text (with --pretokenized, or a config "
                         "without [languages])")
    paths = {"output": args.output, "kbest": args.kbest_out, "trees": args.trees_out, "stats": args.stats_out}
    paths = {name: path for name, path in paths.items() if path or name == "output"}
    for path in paths.values():
        if path is None:
            continue
        check_output_directory(path)
        if os.path.isdir(path):
            raise OutputError(path, "is a directory")
    check_distinct_files({"the input": args.input, "the config": args.config, "the LM": args.lm},
                         {**{f"the {name} file": path for name, path in paths.items()},
                          "the progress file": progress_file(paths["output"])})
    streams = [path for path in paths.values() if path and is_stream(path)]
    if streams and args.resume:
        raise UsageError(f"--resume needs regular output files: {streams[0]} is not one")
    return paths, streams


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    paths, streams = _check_arguments(args)
    with locked_outputs(paths.values()):  # a second run writing one of them is refused at once
        return _translate(args, paths, streams)


def _translate(args: argparse.Namespace, paths: dict, streams: list) -> int:
    from ..lines import decode_lines, read_records

    sentences, bad = decode_lines(read_records(args.input))  # a missing input is reported before the load
    where = args.input or "<stdin>"
    for index, reason in bad.items():
        log.error("%s:%d: %s: the line gets an empty output", where, index + 1, reason)
    if args.tokenize:
        sentences = [" ".join(tokenize(sentence, args.tokenize)) for sentence in sentences]

    decoder = build_decoder(args)
    log.info("loaded %r in %.2f s", decoder, decoder.load_seconds)

    from ..batch import failed, iter_translate, progress_path, translate_to_files

    job = functools.partial(_job, kbest=args.kbest, unique=not args.non_unique,
                            tokenized=True if args.pretokenized else None)
    unknown, unknown_lines = Counter(), 0  # the source words passed through, and the lines with any

    def line_failed(index: int, result) -> bool:  # a line render() gives its fallback
        return index in bad or failed(result)

    def render(index: int, result) -> dict:
        nonlocal unknown_lines
        if isinstance(result, dict) and result.get("unknown"):
            unknown.update(result["unknown"])
            unknown_lines += 1
        if index in bad:
            return _finish(_fallback("", index + 1, bad[index]), index, args.detokenize)
        if failed(result):
            return _finish(_fallback(sentences[index], index + 1, result.error), index, args.detokenize)
        return _finish(result, index, args.detokenize)

    n_failed = failed_before = 0
    with contextlib.ExitStack() as stack:
        loader, cluster = decoder, None
        if args.cluster:
            from ..cluster import connect

            logging.getLogger("distributed").setLevel(logging.WARNING)  # not its start-up and shut-down steps
            cluster = stack.enter_context(connect(args.cluster))
            loader = decoder_loader(args)  # each worker builds the decoder; the one here gives the identity
            log.info("decoding on %s", args.cluster)
        if streams:
            log.info("%s is not a regular file: the outputs are written as streams, without checkpoints",
                     streams[0])
        if args.output and not streams:
            try:
                summary = translate_to_files(loader, sentences, paths, job, workers=args.workers, resume=args.resume,
                                             progress=not args.quiet, render=render,
                                             identity=model_identity(decoder, args), isolate=True, cluster=cluster,
                                             counts_as_failed=line_failed)
            except KeyboardInterrupt:
                raise Interrupted(f"interrupted; the progress is saved in {progress_path(paths)} "
                                  f"(continue with --resume)") from None
            # the whole output counts, with the failed lines written before the resumed checkpoint
            n_failed, failed_before = summary["failed"], summary["failed_before"]
        else:
            files = {name: (open(path, "wb") if path else sys.stdout.buffer) for name, path in paths.items()}
            writing = "output"  # the file being written, for a write error's message
            try:
                for index, result in iter_translate(loader, sentences, args.workers, job, isolate=True,
                                                    progress=not args.quiet and (args.workers > 1 or bool(cluster)),
                                                    cluster=cluster):
                    n_failed += line_failed(index, result)
                    for name, text in render(index, result).items():
                        if name in files:
                            writing = name
                            files[name].write(text.encode("utf-8"))
                    writing = "output"
                    files["output"].flush()
                for writing, f in files.items():
                    f.flush()
            except BrokenPipeError:
                raise
            except OSError as error:  # a full disk or device: name the file (the error itself does not)
                if error.filename is not None:
                    raise
                raise OutputError(paths[writing] or "<stdout>", error.strerror or str(error)) from None
            finally:
                for f in files.values():
                    if f is not sys.stdout.buffer:
                        with contextlib.suppress(OSError):  # the error, if any, was reported above
                            f.close()
    if unknown and not args.quiet:
        print(unknown_words_summary(unknown, unknown_lines, len(sentences)), file=sys.stderr)
    if n_failed:
        where = f"{failed_before} of them before --resume; " if failed_before else ""
        print(f"cky translate: {n_failed} of {len(sentences)} lines failed ({where}see the messages above)",
              file=sys.stderr)
        return 1
    return 0
