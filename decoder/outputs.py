"""The files a command writes, in one place: checks made before its work starts (a missing
directory, an output that is also an input, a second process writing the same file), and the
one way a finished file appears (`atomic_files`, `atomic_write`): written under a temporary name
beside it, renamed over it only when the command succeeds, so that a failed or killed run never
leaves a valid-looking partial file. A temporary name records its writer's process id
(`.cky-tmp-PID-XXXXXXXX-NAME`): the temporaries of a process that is gone (killed, say) are removed
by the next run writing NAME. The one exception is `cky translate --output`, whose files grow in
place beside a progress file that says how much of them is whole, so that --resume can continue
them (decoder.batch)."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import shutil
import stat
from typing import Iterable, Mapping

from .errors import OutputError, UsageError

TEMPORARY_MARK = ".cky-tmp-"  # temporary_name


def check_output_directory(path: str) -> None:
    """OutputError unless the directory `path` would be written into exists."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OutputError(path, f"cannot write it: the directory {directory} does not exist")


def check_writable(path: str) -> None:
    """OutputError unless a file can be created (or replaced) at `path`: tried by creating and removing
    a temporary file beside it, which, unlike os.access, also sees read-only mounts and holds for root."""
    check_output_directory(path)
    if os.path.isdir(path):
        raise OutputError(path, "is a directory")
    directory = os.path.dirname(os.path.abspath(path))
    probe = temporary_name(path)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as error:
        raise OutputError(path, f"cannot write in {directory}: {error.strerror or error}") from None
    os.unlink(probe)


PROGRESS_SUFFIX = ".progress.json"


def progress_file(output: str | os.PathLike | None) -> str | None:
    """Where a resumable run writing `output` saves its progress (decoder.batch)."""
    return None if output is None else os.fspath(output) + PROGRESS_SUFFIX


def is_stream(path: str) -> bool:
    """True for an existing path that is not a regular file (/dev/stdout, a FIFO, a device, a directory):
    it can be neither truncated, fsynced nor replaced by a new file."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False


# ---- an output that is an input, or two outputs that are one file ---------------------------------

def file_identity(path: str | os.PathLike):
    """What tells two paths apart as files: (device, inode) of an existing file (so a symlink or a hard
    link to it is the same file), else its resolved absolute path (symlinks followed)."""
    try:
        status = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ("path", os.path.realpath(os.fspath(path)))
    return ("inode", status.st_dev, status.st_ino)


def check_distinct_files(inputs: Mapping[str, str | os.PathLike | None],
                         outputs: Mapping[str, str | os.PathLike | None]) -> None:
    """UsageError naming both if an output is one of the inputs, or two outputs are one file, through a
    symlink, a hard link or another spelling of the path (`inputs` and `outputs` map what a file is, say
    "--output", to its path; None: not given). Made before anything is opened for writing. Outputs that
    are not regular files (/dev/null, /dev/stdout, a FIFO) may be shared."""
    seen: dict = {}
    for name, path in inputs.items():
        if path is not None:
            seen.setdefault(file_identity(path), (name, path))
    for name, path in outputs.items():
        if path is None or is_stream(os.fspath(path)):
            continue
        identity = file_identity(path)
        if identity in seen:
            other, other_path = seen[identity]
            same = "" if os.fspath(other_path) == os.fspath(path) else f" ({other} {other_path})"
            raise UsageError(f"{path} is both {other} and {name}{same}: refusing to overwrite it")
        seen[identity] = (name, path)


# ---- one writer per output -------------------------------------------------------------------------

# (device, inode) -> [open descriptor holding the lock, holders in this process]: a second lock taken by
# the same process shares the first (flock would refuse a second descriptor even in one process).
_LOCKS: dict = {}


@contextlib.contextmanager
def locked_outputs(paths: Iterable[str | os.PathLike | None]):
    """Hold an advisory lock (flock, exclusive) on each regular output file for the duration: a second
    process writing one of them is an OutputError naming the file, at once, instead of two runs
    interleaving their lines. A file that does not exist is created empty for its lock (and removed
    again if the run fails before writing to it); the lock ends with the process at the latest. Paths
    that are not regular files (/dev/stdout, a FIFO) are not locked."""
    taken, created = [], []
    try:
        for path in paths:
            if path is None or is_stream(os.fspath(path)):
                continue
            path = os.fspath(path)
            existed = os.path.exists(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
            key = (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
            if key in _LOCKS:
                os.close(fd)
                _LOCKS[key][1] += 1
            else:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as error:
                    os.close(fd)
                    if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        raise OutputError(path, "another process is writing it (a cky run with the same output); "
                                                "wait for it to end or choose another output") from None
                    raise
                _LOCKS[key] = [fd, 1]
            taken.append(key)
            if not existed:
                created.append(path)
        yield
    except BaseException:
        for path in created:  # made for its lock only: do not leave an empty output behind a failure
            with contextlib.suppress(OSError):
                if os.path.getsize(path) == 0:
                    os.unlink(path)
        raise
    finally:
        for key in taken:
            holder = _LOCKS[key]
            holder[1] -= 1
            if holder[1] == 0:
                del _LOCKS[key]
                os.close(holder[0])  # closing the only descriptor releases the lock


# ---- files that appear whole or not at all ---------------------------------------------------------

def temporary_name(path: str | os.PathLike, directory: str | os.PathLike | None = None) -> str:
    """A new temporary path beside `path` (or in `directory`) that names this process:
    .cky-tmp-PID-RANDOM-NAME (ending in NAME, so that its extension, say .gz, still says how to write it)."""
    here, name = os.path.split(os.path.abspath(os.fspath(path)))
    return os.path.join(os.fspath(directory) if directory is not None else here,
                        f"{TEMPORARY_MARK}{os.getpid()}-{secrets.token_hex(4)}-{name}")


def final_name(path: str | os.PathLike) -> str:
    """The path a temporary (temporary_name) stands for; any other path as it is."""
    directory, name = os.path.split(os.fspath(path))
    match = re.match(re.escape(TEMPORARY_MARK) + r"\d+-[0-9a-f]+-(.+)$", name)
    return os.path.join(directory, match.group(1)) if match else os.fspath(path)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_temporaries(path: str | os.PathLike, directory: str | os.PathLike | None = None) -> list[str]:
    """Remove the temporaries of `path` (files or directories, beside it or in `directory`) left by
    processes that are gone; returns their paths. Those of a live process (another run writing now) are
    left alone."""
    here, name = os.path.split(os.path.abspath(os.fspath(path)))
    directory = os.fspath(directory) if directory is not None else here
    pattern = re.compile(re.escape(TEMPORARY_MARK) + r"(\d+)-[0-9a-f]+-" + re.escape(name) + r"(\.old)?$")
    removed = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry)
        if not match or _process_alive(int(match.group(1))):
            continue
        stale = os.path.join(directory, entry)
        if os.path.isdir(stale) and not os.path.islink(stale):
            shutil.rmtree(stale, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(stale)
        removed.append(stale)
    return removed


class atomic_files:
    """Several output files that appear together when the block ends without an exception, each
    written under its temporary name until then; after an exception (or a kill) none of them does
    and the files they replace are untouched.

        with atomic_files() as files:
            with gzip.open(files.path("rules.gz"), "wb") as out: ...
            with open(files.path("rules.gz.features.json"), "w") as out: ...
    """

    def __init__(self):
        self.pending: dict[str, str] = {}  # final path -> temporary path

    def path(self, final: str | os.PathLike) -> str:
        """The temporary path to write `final` to (its directory must exist); `final` itself if it is not
        a regular file (/dev/null, /dev/stdout, a FIFO: a stream cannot be replaced, only written); an
        OutputError if `final` is a directory, which no file can replace (refused now, not when the
        files are renamed: then the outputs renamed before it would appear without it)."""
        final = os.fspath(final)
        if final in self.pending:
            return self.pending[final]
        if os.path.isdir(final):
            raise OutputError(final, "is a directory")
        if is_stream(final):  # /dev/null, /dev/stdout, a FIFO: written as it is (renaming over it would replace
            return final      # the device or pipe by a regular file)
        remove_stale_temporaries(final)
        self.pending[final] = temporary_name(final)
        return self.pending[final]

    def __enter__(self) -> "atomic_files":
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if kind is None:
            try:
                for final, temporary in self.pending.items():
                    if os.path.exists(temporary):  # (a path asked for but not written: no file)
                        os.replace(temporary, final)
            except BaseException:
                self.discard()
                raise
        else:
            self.discard()
        return False

    def discard(self) -> None:
        for temporary in self.pending.values():
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        self.pending.clear()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, binary: bool = False, durable: bool = True):
    """An open file to write in place of `path`: written under a temporary name beside it, flushed to
    the disk (with `durable`), then renamed over it, so that `path` holds the old content or the new
    one, never part of either."""
    with atomic_files() as files:
        temporary = files.path(path)
        with open(temporary, "wb") if binary else open(temporary, "w", encoding="utf-8") as f:
            yield f
            if durable and temporary != os.fspath(path):  # (a stream, written as it is, cannot be synced)
                f.flush()
                os.fsync(f.fileno())

