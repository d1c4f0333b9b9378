"""Every error of ours, in one place.

All derive from `CkyError`, so the command line reports any of them as one line
(`cky COMMAND: MESSAGE`, exit 1) and a Python caller can catch them all at once.
Each message names the file (and the line, where there is one). Errors that
used to be `ValueError`s still are, so `except ValueError` keeps working.
"""
from __future__ import annotations

import os


class CkyError(Exception):
    """The base class of every error this package raises on purpose."""


class LocatedError(CkyError):
    """An error in a file, at a line if known; str() is "path:line: message" (or "path: message")."""

    def __init__(self, path: str | os.PathLike | None, message: str, line_number: int | None = None):
        self.path = os.fspath(path) if path is not None else None
        self.line_number = line_number
        self.reason = message
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line_number}: " if line_number is not None else f"{self.path}: "
        super().__init__(f"{where}{message}")


def file_error_message(error: OSError) -> str:
    """"PATH: reason" for a file error (Python's own str() repeats the errno)."""
    if error.filename is not None and error.strerror:
        return f"{os.fsdecode(error.filename)}: {error.strerror}"
    if error.strerror:  # no file named: stdout (`> /dev/full`) or a stream the command had open
        return error.strerror
    return str(error)


class ConfigError(LocatedError, ValueError):
    """A config file (TOML) or setting that is missing, malformed, misspelled or out of range."""


class SettingsError(ConfigError):
    """A search or decoder setting out of range or of the wrong type (no file: given in Python)."""


class StoreError(LocatedError):
    """A missing, corrupt or incompatible grammar store; the message names the path."""

    def __init__(self, path: str | os.PathLike, message: str):
        super().__init__(path, message)


class GrammarFormatError(LocatedError, ValueError):
    """A rule-table line that cannot be read; the message names file and line."""

    def __init__(self, path: str, line_number: int, message: str):
        super().__init__(path, message, line_number)


class FeatureNamesError(LocatedError, ValueError):
    """A rule table whose score columns have no names (no RULES.features.json), or names that do
    not fit its scores: compiling it would silently stop tuned weights from applying."""


class TreeFormatError(CkyError, ValueError):
    """A bracketed tree that cannot be read."""


class AlignmentFormatError(CkyError, ValueError):
    """An alignment line that cannot be read or points outside the sentence pair."""


class LeafMismatch(CkyError, ValueError):
    """The tree's leaves cannot be matched to the tokens."""


class ModelError(LocatedError):
    """A language model (or other model file) that is missing, corrupt or does not fit the config."""


class InputError(LocatedError, ValueError):
    """An input file or sentence that cannot be read (the message names file and line)."""


class RequestError(CkyError, ValueError):
    """A request that `cky serve`'s API refuses (decoder.serve.app): answered with HTTP `status`
    and {"error": message}."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


class UsageError(CkyError):
    """A command line that asks for something impossible (the command exits 2, like argparse)."""


class ResumeError(LocatedError):
    """A progress file that does not describe its output any more (missing, shorter or changed
    output, other settings): resuming from it would mix or lose lines. The message names both files."""


class WorkerError(LocatedError):
    """A decoding process died (a crash in compiled code, or killed): its sentences have no result."""


class ClusterError(LocatedError):
    """A Dask cluster that cannot be reached, or that keeps losing the workers running a shard
    (decoder.cluster): the lines before the shard are delivered, the rest have no result."""


class OutputError(LocatedError):
    """An output file that cannot be written (for instance, its directory does not exist)."""


class ChartLimitError(CkyError):
    """A sentence's chart outgrew the items and edges one search may hold (ext/_chart.pyx
    CHART_LIMIT): exhaustive search or an unlimited pop limit on a sentence too long for them."""


class MemoryBudgetError(ChartLimitError):
    """A sentence's search (its chart, queues and tables, or its k-best search) needed more memory than
    the search setting `memory_budget_mb` allows; the message names the setting and the budget."""


class Interrupted(CkyError):
    """Ctrl-C stopped a command (exit 130; 143 when a Terminated caused it); the message says what was kept."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a job scheduler stopping a job) while `cky translate --output` writes: handled as
    Ctrl-C is (the outputs are flushed and the progress saved), and the command exits 143 (128 + 15, the
    shell's convention) where Ctrl-C exits 130 (128 + 2)."""


class DependencyTreeError(LocatedError, ValueError):
    """A dependency tree (CoNLL-U) that is malformed: not one head per token, several roots, a cycle,
    or tokens that differ from the corpus tokens. str() names the file and line when known."""


class MissingToolError(CkyError):
    """A program or package a command needs is not installed; the message names what to install."""
