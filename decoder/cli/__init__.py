"""The `cky` command: one subcommand per stage of the pipeline.

Each subcommand is a module of this package (decoder/cli/NAME.py) with
`add_arguments(parser)` and `main(args) -> int`. Modules are imported only when
their subcommand runs, so `cky binarize` does not pay for importing the decoder.

Exit codes, for every subcommand: 0 ok; 1 failed (a bad file, or some input
lines failed); 2 usage (argparse, or decoder.errors.UsageError); 130
interrupted (Ctrl-C); 143 terminated (SIGTERM); 141 the output pipe was closed
(`cky translate | head -1`: the command ends quietly, as a Unix tool killed by
SIGPIPE would, with nothing on stderr). Ctrl-C and SIGTERM differ only in the
exit code (the shell's 128 + signal number): `cky translate --output` flushes
its outputs and saves its progress for --resume on either (decoder.batch,
decoder.errors.Terminated); elsewhere SIGTERM ends the process at once, which
leaves no partial output either (each output appears whole or not at all,
decoder.outputs). Errors of ours (decoder.errors.CkyError) and missing or
unreadable files (OSError) are reported here, as one line `cky COMMAND:
message` naming the file, never as a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module, one-line help)
COMMANDS = {
    "data": ("decoder.cli.data", "build a Bible system (bible-es-en, bible-zh-en) with the pipeline of cky train"),
    "train": ("decoder.cli.train", "train a tuned system from a plain parallel corpus (resumable)"),
    "extract": ("decoder.cli.extract", "extract GHKM string-to-tree rules from a parsed, aligned corpus"),
    "binarize": ("decoder.cli.binarize", "binarize a rule table with a chosen strategy"),
    "compile": ("decoder.cli.compile", "binarize a rule table and compile it into a grammar store"),
    "translate": ("decoder.cli.translate", "translate sentences with the CKY decoder"),
    "tune": ("decoder.cli.tune", "tune feature weights with MERT"),
    "evaluate": ("decoder.cli.evaluate", "score hypotheses against references (BLEU, chrF)"),
    "serve": ("decoder.cli.serve", "serve the derivation viewer and its JSON API (needs the serve extra)"),
    "demo": ("decoder.cli.demo", "build the small Bible system and translate its test set (make demo)"),
    "bench": ("decoder.cli.bench", "run the benchmarks of the papers, or time the decoder (--quick, --speed)"),
}

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 143, 141


def _interrupted_code(error: BaseException) -> int:
    """143 for an interruption that SIGTERM caused (decoder.errors.Terminated, maybe as the context of the
    Interrupted that reports it), else 130."""
    from ..errors import Terminated

    while error is not None:
        if isinstance(error, Terminated):
            return EXIT_TERMINATED
        error = error.__context__
    return EXIT_INTERRUPTED


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(prog="cky", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"cky-decoder {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            importlib.import_module(module_name).add_arguments(sub_parser)
    return parser


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null, so that the interpreter's last flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run(command: str, args: argparse.Namespace) -> int:
    """Run one parsed subcommand under the exit-code convention (see the module docstring)."""
    from ..errors import CkyError, Interrupted, UsageError, file_error_message

    def report(message: str) -> None:
        print(f"cky {command}: {message}", file=sys.stderr, flush=True)

    try:
        module = importlib.import_module(COMMANDS[command][0])
        return int(module.main(args) or 0)
    except UsageError as error:
        report(str(error))
        return EXIT_USAGE
    except Interrupted as error:
        report(str(error))
        return _interrupted_code(error)
    except CkyError as error:
        report(str(error))
        return EXIT_FAILED
    except BrokenPipeError:  # the reader went away (`| head`): nothing to say, nothing more to write
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as error:  # a missing or unreadable file
        report(file_error_message(error))
        return EXIT_FAILED
    except KeyboardInterrupt as error:
        code = _interrupted_code(error)
        report("terminated" if code == EXIT_TERMINATED else "interrupted")
        return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS:
        command = None
    parser = build_parser(command)
    args = parser.parse_args(argv)  # a usage error exits 2 here
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    return run(args.command, args)
