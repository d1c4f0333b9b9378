"""Link-grammar answers by sentence, in one SQLite file that any number of builds share.

A row holds one sentence's answer (the JSON object lg_worker.py prints) under two keys: the parser
settings (`ParserSettings.cache_key()`, stored once in the table `settings`) and the sentence as
link-grammar is given it: its tokens in their original casing, joined by single spaces. Two corpora
that share sentences (the Bible recipes: the same English verses, different subsets of them) share
their parses, whatever verses surround them.

Several processes may use one file at once: the journal is SQLite's write-ahead log (readers never
wait for a writer), a writer waits up to BUSY_TIMEOUT_SECONDS for another, and each `store` is one
transaction, so a killed run loses only the answers it had not stored yet. Only the process that
parses opens the file (the workers of a Dask cluster return their answers to it), so the file must be
on a local file system, as WAL requires.

A cache is never a reason to fail: a file that cannot be used (not a database, damaged, locked for
longer than the timeout, not writable, written by an incompatible version) is reported once through
`warn`, naming the file, and the cache is off for the rest of the run, so the caller parses instead.
A row whose answer is not a well-formed answer counts as missing and is replaced when reparsed.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Callable, Iterable

SCHEMA_VERSION = 1            # PRAGMA user_version of a file this module writes
BUSY_TIMEOUT_SECONDS = 60.0   # how long a writer waits for another process's transaction
LOOKUP_BATCH = 500            # sentences per SELECT (below SQLite's limit on bound parameters)
ANSWER_KINDS = frozenset({"full", "null", "none", "timeout", "crash"})

SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS answers (
    settings INTEGER NOT NULL REFERENCES settings(id),
    sentence TEXT NOT NULL,
    answer TEXT NOT NULL,
    PRIMARY KEY (settings, sentence)
) WITHOUT ROWID;
"""


def sentence_key(tokens: list[str]) -> str:
    """The cache key of a sentence: its tokens as the parser sees them (cased), joined by spaces."""
    return " ".join(tokens)


def well_formed(answer) -> bool:
    """True if `answer` has the shape of a worker's answer: {"kind", "tree", "nulls"}."""
    return (isinstance(answer, dict) and answer.get("kind") in ANSWER_KINDS
            and (answer.get("tree") is None or isinstance(answer.get("tree"), str))
            and isinstance(answer.get("nulls"), int))


class ParseCache:
    """The answers of one parser-settings key in the SQLite file `path` (None: no cache; lookups find
    nothing, stores keep nothing). Use it in a `with` block, or call close()."""

    def __init__(self, path: Path | None, settings_key: str, warn: Callable[[str], None]):
        self.path = Path(path) if path is not None else None
        self.settings_key = settings_key
        self.warn = warn
        self.connection: sqlite3.Connection | None = None
        self.settings_id: int | None = None
        self.ignored_rows = 0   # rows found whose answer was not well formed
        if self.path is not None:
            try:
                self._open()
            except (sqlite3.Error, OSError) as error:
                self._give_up(error)

    @property
    def usable(self) -> bool:
        return self.connection is not None

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        connection = self.connection
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise sqlite3.DatabaseError(f"schema version {version}, this program reads {SCHEMA_VERSION}")
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")  # with WAL: a commit survives a killed process
        problems = [row[0] for row in connection.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError("damaged: " + "; ".join(problems[:3]))
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute("PRAGMA user_version = %d" % SCHEMA_VERSION)
            connection.execute("INSERT OR IGNORE INTO settings (key) VALUES (?)", (self.settings_key,))
            self.settings_id = connection.execute("SELECT id FROM settings WHERE key = ?",
                                                  (self.settings_key,)).fetchone()[0]
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _give_up(self, error: Exception) -> None:
        self.warn(f"{self.path}: the parse cache cannot be used ({type(error).__name__}: {error}); "
                  "parsing without it")
        self.close()

    def lookup(self, sentences: Iterable[str]) -> dict[str, dict]:
        """The well-formed cached answers of these sentence keys (missing ones are absent)."""
        found: dict[str, dict] = {}
        if self.connection is None:
            return found
        keys = list(dict.fromkeys(sentences))
        try:
            for start in range(0, len(keys), LOOKUP_BATCH):
                batch = keys[start:start + LOOKUP_BATCH]
                rows = self.connection.execute(
                    f"SELECT sentence, answer FROM answers WHERE settings = ? AND sentence IN "
                    f"({','.join('?' * len(batch))})", (self.settings_id, *batch))
                for sentence, text in rows:
                    try:
                        answer = json.loads(text)
                    except (TypeError, ValueError):
                        answer = None
                    if well_formed(answer):
                        found[sentence] = answer
                    else:
                        self.ignored_rows += 1
        except sqlite3.Error as error:
            self._give_up(error)
            return {}
        return found

    def store(self, answers: Iterable[tuple[str, dict]]) -> None:
        """Keep these (sentence key, answer) pairs, in one transaction (replacing rows of the same keys)."""
        if self.connection is None:
            return
        rows = [(self.settings_id, sentence, json.dumps(answer, ensure_ascii=False, separators=(",", ":")))
                for sentence, answer in answers]
        if not rows:
            return
        try:
            self.connection.execute("BEGIN IMMEDIATE")
            try:
                self.connection.executemany(
                    "INSERT OR REPLACE INTO answers (settings, sentence, answer) VALUES (?, ?, ?)", rows)
                self.connection.execute("COMMIT")
            except BaseException:
                self.connection.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            self._give_up(error)

    def count(self) -> int:
        """How many sentences of this settings key the file holds (0 without a usable file)."""
        if self.connection is None:
            return 0
        return self.connection.execute("SELECT COUNT(*) FROM answers WHERE settings = ?",
                                       (self.settings_id,)).fetchone()[0]

    def close(self) -> None:
        if self.connection is not None:
            connection, self.connection = self.connection, None
            try:
                connection.close()
            except sqlite3.Error:
                pass

    def __enter__(self) -> "ParseCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
