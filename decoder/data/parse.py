"""Parse the English side with link-grammar: a worker pool with a hard time limit, a per-sentence cache.

Each verse is split into sentences (`trees.split_sentences`); every sentence
is one job for a pool of `lg_worker.py` processes (one per core). A job that
runs past `hard_limit` seconds has its worker killed and restarted, and the
sentence gets a fallback tree: the limit holds whatever link-grammar does.

The raw link-grammar answers are cached per sentence (decoder.data.parse_cache:
one SQLite file, keyed by the parser settings and the sentence's tokens), so
an interrupted run goes on from the answers it had stored, and any corpus
that shares sentences with an earlier one (a small and a full build, two
recipes on the same English text) parses only the sentences it adds. Each
distinct sentence is parsed once per run, locally or as tasks on a Dask
cluster. Turning answers into Penn trees (`trees.penn_tree`) is cheap and is
redone on every run, so the trees depend only on the answers.

An earlier version cached the answers of chunks of 1000 verses in files
`parse-<hash>.jsonl`; found beside the workers' log, such a file is read once
into the SQLite cache (`legacy_chunk_path`, `read_legacy_chunk`).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import selectors
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from decoder.data import parse_cache, trees

WORKER_SCRIPT = Path(__file__).with_name("lg_worker.py")
DEBIAN_PYTHON = "/usr/bin/python3"
BATCH_SENTENCES = 200       # answers per cache transaction, sentences per Dask task
LEGACY_CHUNK_VERSES = 1000  # verses per chunk file of the earlier cache


@dataclass(frozen=True)
class ParserSettings:
    """Link-grammar options and the limits the pool enforces."""
    linkage_limit: int = 10
    max_parse_time: int = 2      # link-grammar's own (soft) limit, per pass
    hard_limit: float = 6.0      # seconds per sentence, enforced by killing the worker
    min_sentence_tokens: int = 3
    max_sentence_tokens: int = 30  # longer sentences are cut at commas (trees.split_sentences)
    language: str = "en"

    def cache_key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def worker_python() -> str:
    """Debian's Python (whose link-grammar bindings match it) if present, else this one."""
    return DEBIAN_PYTHON if os.path.exists(DEBIAN_PYTHON) else sys.executable


def link_grammar_available() -> bool:
    """True if a worker can import linkgrammar."""
    probe = "import sys\ntry:\n import linkgrammar\nexcept ImportError:\n sys.path.append('/usr/lib/python3/dist-packages')\n import linkgrammar"
    return subprocess.run([worker_python(), "-c", probe], capture_output=True).returncode == 0


class Worker:
    """One lg_worker.py process."""

    def __init__(self, settings: ParserSettings, log_file, startup_timeout: float = 120.0):
        options = json.dumps({"language": settings.language, "linkage_limit": settings.linkage_limit,
                              "max_parse_time": settings.max_parse_time})
        env = dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8")
        self.process = subprocess.Popen([worker_python(), str(WORKER_SCRIPT), options],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file,
                                        text=True, encoding="utf-8", env=env)
        self.job: int | None = None
        self.deadline = 0.0
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        ready = selector.select(startup_timeout)
        selector.close()
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith('{"ready"'):
            self.kill()
            raise RuntimeError(f"link-grammar worker did not start ({worker_python()} {WORKER_SCRIPT}); "
                               f"see its log, {getattr(log_file, 'name', 'the worker log')}")
        self.version = json.loads(line).get("version", "unknown")

    def send(self, job: int, text: str, hard_limit: float) -> None:
        self.job = job
        self.deadline = time.monotonic() + hard_limit
        self.process.stdin.write(json.dumps({"text": text}) + "\n")
        self.process.stdin.flush()

    def receive(self) -> dict:
        line = self.process.stdout.readline()
        self.job = None
        if not line:
            return {"kind": "crash", "tree": None, "nulls": 0}
        return json.loads(line)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):  # stdin may hold a line the dead worker never read
                pipe.close()


class WorkerPool:
    """`processes` workers; `parse(texts)` returns one answer per text, in order."""

    def __init__(self, settings: ParserSettings, processes: int, log_path: Path):
        self.settings = settings
        self.log_file = open(log_path, "a", encoding="utf-8")
        self.workers: list[Worker] = []
        self.restarts = 0
        try:
            for _ in range(processes):
                self.workers.append(Worker(settings, self.log_file))
        except BaseException:
            self.close()  # a worker that cannot start: stop those that did, close the log
            raise
        self.version = self.workers[0].version

    def parse(self, texts: list[str], progress: tqdm | None = None,
              on_answer: Callable[[int, dict], None] | None = None) -> list[dict]:
        """The answers, in the order of `texts`; `on_answer(index, answer)` is called as each one arrives."""
        answers: list[dict | None] = [None] * len(texts)
        # popped from the end: longest first, so that the pool does not wait for one long sentence at the end
        queue = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        selector = selectors.DefaultSelector()
        remaining = len(texts)
        try:
            while remaining:
                for worker in self.workers:
                    if worker.job is None and queue:
                        job = queue.pop()
                        worker.send(job, texts[job], self.settings.hard_limit)
                        selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
                busy = [w for w in self.workers if w.job is not None]
                timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
                for key, _ in selector.select(timeout):
                    worker = key.data
                    selector.unregister(worker.process.stdout)
                    job = worker.job
                    answers[job] = worker.receive()
                    if answers[job]["kind"] == "crash":
                        self._restart(worker)
                    remaining -= 1
                    if on_answer is not None:
                        on_answer(job, answers[job])
                    if progress is not None:
                        progress.update(1)
                now = time.monotonic()
                for worker in self.workers:
                    if worker.job is not None and now > worker.deadline:
                        selector.unregister(worker.process.stdout)
                        job = worker.job
                        answers[job] = {"kind": "timeout", "tree": None, "nulls": 0}
                        self._restart(worker)
                        remaining -= 1
                        if on_answer is not None:
                            on_answer(job, answers[job])
                        if progress is not None:
                            progress.update(1)
        finally:
            selector.close()
        return answers  # type: ignore[return-value]

    def _restart(self, worker: Worker) -> None:
        worker.kill()
        replacement = Worker(self.settings, self.log_file)
        self.workers[self.workers.index(worker)] = replacement
        self.restarts += 1

    def close(self) -> None:
        for worker in self.workers:
            worker.process.stdin.close()
            worker.kill()
        self.log_file.close()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class ParseResult:
    """Penn trees (one per verse) and the statistics of the run."""
    trees: list[str]
    statistics: dict


def sentence_tree(answer: dict, tokens: list[str], cased_tokens: list[str] | None = None
                  ) -> tuple[trees.Node, str, int]:
    """(tree, kind, reinserted tokens) for one sentence; kind is full, null or fallback."""
    if answer["tree"]:
        try:
            tree, reinserted = trees.penn_tree(answer["tree"], tokens, cased_tokens)
            return tree, answer["kind"], reinserted
        except trees.LeafMismatch:
            pass
    return trees.fallback_tree(tokens, cased_tokens), "fallback", 0




def legacy_chunk_path(work_dir: Path, verses: list[list[str]], settings: ParserSettings) -> Path:
    """Where an earlier version of this module kept the answers of a chunk of verses (parser tokens):
    a JSON line {"answers": [one per sentence]} per verse, named by a hash of the settings and the tokens."""
    digest = hashlib.sha1(settings.cache_key().encode())
    for tokens in verses:
        digest.update(("\t".join(tokens) + "\n").encode())
    return work_dir / f"parse-{digest.hexdigest()[:20]}.jsonl"


def read_legacy_chunk(path: Path, keys: list[list[str]], warn: Callable[[str], None]) -> dict[str, dict]:
    """The answers of a legacy chunk file by sentence key, `keys` being the sentence keys of its verses.
    A file with another number of lines is ignored; a line whose answers do not fit its verse's
    sentences (another count, or not well formed) is skipped: those sentences are parsed again."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        warn(f"{path}: cannot read this earlier parse cache file ({error}); its sentences are parsed again")
        return {}
    if len(lines) != len(keys):
        warn(f"{path}: {len(lines)} lines for the {len(keys)} verses of its chunk; ignored, its sentences are "
             "parsed again")
        return {}
    found: dict[str, dict] = {}
    skipped = []
    for number, (line, verse_keys) in enumerate(zip(lines, keys), 1):
        try:
            answers = json.loads(line)["answers"]
        except (ValueError, TypeError, KeyError):
            answers = None
        if not isinstance(answers, list) or len(answers) != len(verse_keys) \
                or not all(parse_cache.well_formed(answer) for answer in answers):
            skipped.append(number)
            continue
        found.update(zip(verse_keys, answers))
    if len(skipped) == 1:
        warn(f"{path}: line {skipped[0]} does not fit its verse; its sentences are parsed again")
    elif skipped:
        warn(f"{path}: lines {', '.join(map(str, skipped[:5]))}{', ...' if len(skipped) > 5 else ''} "
             f"({len(skipped)} lines) do not fit their verses; their sentences are parsed again")
    return found


def _worker_log_path() -> Path:
    """The link-grammar log of a Dask worker: in the worker's own directory (else the temporary directory)."""
    try:
        from distributed import get_worker

        directory = Path(get_worker().local_directory)
    except (ImportError, ValueError):
        import tempfile

        directory = Path(tempfile.gettempdir())
    return directory / "link-grammar-workers.log"


def parse_batch(settings: ParserSettings, texts: list[str]) -> tuple[str, list[dict]]:
    """One Dask task: (link-grammar version, answers) of `texts` from a pool of one worker process, with
    the same hard time limit per sentence as on this machine."""
    with WorkerPool(settings, 1, _worker_log_path()) as pool:
        return pool.version, pool.parse(texts)


def _parse_on_cluster(client, settings: ParserSettings, texts: list[str], batch_size: int,
                      on_batch: Callable[[list[int], list[dict]], None], progress: tqdm) -> str:
    """Parse `texts` as tasks of `batch_size` on the Dask cluster of `client`; `on_batch(indices, answers)`
    as each task finishes. Returns the link-grammar version of the workers."""
    import distributed

    from decoder.errors import ClusterError

    starts = range(0, len(texts), batch_size)
    futures = [client.submit(parse_batch, settings, texts[start:start + batch_size], pure=False)
               for start in starts]
    start_of = {future.key: start for future, start in zip(futures, starts)}
    version = "unknown"
    try:
        for future in distributed.as_completed(futures):
            start = start_of[future.key]
            try:
                version, answers = future.result()
            except distributed.KilledWorker as error:
                raise ClusterError(None, f"parsing sentences {start + 1}-{min(start + batch_size, len(texts))}: "
                                         f"the workers parsing them died again and again ({error})") from None
            future.release()
            on_batch(list(range(start, start + len(answers))), answers)
            progress.update(len(answers))
    finally:
        client.cancel([future for future in futures if not future.done()])
    return version


def parse_verses(verses: list[list[str]], cache_path: Path | None, work_dir: Path, processes: int = 1,
                 settings: ParserSettings = ParserSettings(), parser_verses: list[list[str]] | None = None,
                 client=None, batch_size: int | None = None, legacy_chunk_verses: int = LEGACY_CHUNK_VERSES,
                 show_progress: bool = True, warn: Callable[[str], None] | None = None) -> ParseResult:
    """Penn trees for tokenized English verses (leaves == tokens), parsing only what is not cached.

    `parser_verses`, if given, are the same tokens as `verses` in their original casing: link-grammar
    sees those (capitals mark names), the trees' leaves are the tokens of `verses`. Answers are looked
    up in the SQLite cache `cache_path` (decoder.data.parse_cache; None: no cache), then in the chunk
    files an earlier version wrote into `work_dir` (which seed the cache); each distinct sentence not
    found is parsed once, on `processes` local link-grammar processes or, given a dask.distributed
    `client`, as tasks of `batch_size` sentences on its cluster (default BATCH_SENTENCES), and stored
    `batch_size` answers at a time. The trees do not depend on where the answers came from. `warn`
    gets the cache's warnings (default: printed on stderr).
    """
    if warn is None:
        warn = _warn_on_stderr
    if parser_verses is None:
        parser_verses = verses
    if len(parser_verses) != len(verses):
        raise ValueError(f"parse_verses: {len(parser_verses)} parser verses for {len(verses)} verses")
    for index, (tokens, cased) in enumerate(zip(verses, parser_verses)):
        if len(tokens) != len(cased):
            raise ValueError(f"parse_verses: verse {index}: cased tokens {cased} do not match tokens {tokens}")
    if batch_size is None:
        batch_size = BATCH_SENTENCES
    if batch_size < 1:
        raise ValueError(f"parse_verses: batch_size must be at least 1, not {batch_size}")
    work_dir.mkdir(parents=True, exist_ok=True)
    spans = [trees.split_sentences(tokens, settings.min_sentence_tokens, settings.max_sentence_tokens)
             for tokens in verses]
    keys = [[parse_cache.sentence_key(cased[start:end]) for start, end in verse_spans]
            for cased, verse_spans in zip(parser_verses, spans)]
    total_sentences = sum(len(k) for k in keys)
    distinct = list(dict.fromkeys(key for verse_keys in keys for key in verse_keys))
    parse_seconds = 0.0
    version = "unknown"
    restarts = 0
    with parse_cache.ParseCache(cache_path, settings.cache_key(), warn) as cache:
        found = cache.lookup(distinct)
        from_cache = len(found)
        legacy_chunks = _import_legacy_chunks(work_dir, parser_verses, keys, found, cache, settings,
                                              legacy_chunk_verses, warn)
        from_legacy = len(found) - from_cache
        misses = [key for key in distinct if key not in found]
        # the text of the first occurrence (a key is the parser's tokens: every occurrence gives the same text)
        texts = {}
        for cased, verse_spans, verse_keys in zip(parser_verses, spans, keys):
            for (start, end), key in zip(verse_spans, verse_keys):
                if key in found or key in texts:
                    continue
                texts[key] = trees.parser_input(cased[start:end])
        pending: list[tuple[str, dict]] = []

        def keep(indices: list[int], answers: list[dict]) -> None:
            for index, answer in zip(indices, answers):
                found[misses[index]] = answer
                pending.append((misses[index], answer))
            if len(pending) >= batch_size:
                cache.store(pending)
                pending.clear()

        progress = tqdm(total=len(misses), desc="parsing English", unit="sent", file=sys.stderr,
                        smoothing=0.05, mininterval=2.0, disable=not show_progress or not misses)
        try:
            if misses:
                started = time.monotonic()
                miss_texts = [texts[key] for key in misses]
                if client is not None:
                    version = _parse_on_cluster(client, settings, miss_texts, batch_size, keep, progress)
                else:
                    with WorkerPool(settings, processes, work_dir / "workers.log") as pool:
                        version = pool.version
                        try:
                            pool.parse(miss_texts, progress, lambda index, answer: keep([index], [answer]))
                        finally:
                            restarts = pool.restarts
                parse_seconds = time.monotonic() - started
        finally:
            progress.close()
            cache.store(pending)  # the answers that came in since the last store (also when interrupted)
            pending.clear()
        ignored_rows = cache.ignored_rows

    sentence_kinds: Counter = Counter()
    answer_kinds: Counter = Counter()
    verse_kinds: Counter = Counter()
    reinserted_tokens = 0
    sentences_with_reinserted = 0
    penn_trees = []
    for tokens, cased, verse_spans, verse_keys in zip(verses, parser_verses, spans, keys):
        sentence_trees = []
        kinds = set()
        for (start, end), key in zip(verse_spans, verse_keys):
            answer = found[key]
            answer_kinds[answer["kind"]] += 1
            tree, kind, reinserted = sentence_tree(answer, tokens[start:end], cased[start:end])
            sentence_kinds[kind] += 1
            kinds.add(kind)
            reinserted_tokens += reinserted
            sentences_with_reinserted += reinserted > 0
            sentence_trees.append(tree)
        verse = trees.verse_tree(sentence_trees)
        if verse.leaves() != tokens:
            raise AssertionError(f"tree leaves differ from tokens: {tokens}")
        penn_trees.append(verse.to_penn())
        verse_kinds["fallback" if "fallback" in kinds else "null" if "null" in kinds else "full"] += 1
    statistics = {
        "verses": len(verses),
        "sentences": total_sentences,
        "distinct_sentences": len(distinct),
        "sentences_by_kind": dict(sentence_kinds),
        "link_grammar_answers": dict(answer_kinds),
        "verses_by_kind": dict(verse_kinds),
        "sentences_with_reinserted_tokens": sentences_with_reinserted,
        "reinserted_tokens": reinserted_tokens,
        "settings": asdict(settings),
        # what this run did (not a property of the trees)
        "sentences_from_cache_this_run": from_cache,
        "sentences_from_earlier_chunk_files_this_run": from_legacy,
        "earlier_chunk_files_read_this_run": legacy_chunks,
        "cache_rows_ignored_this_run": ignored_rows,
        "sentences_parsed_this_run": len(misses),
        "parse_seconds_this_run": round(parse_seconds, 1),
        "sentences_per_second_this_run": round(len(misses) / parse_seconds, 2) if parse_seconds else None,
        "worker_restarts_this_run": restarts,
        "processes": processes,
        "dask_cluster": client is not None,
        "link_grammar_version": version,
    }
    return ParseResult(penn_trees, statistics)


def _warn_on_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _import_legacy_chunks(work_dir: Path, parser_verses: list[list[str]], keys: list[list[str]],
                          found: dict[str, dict], cache: parse_cache.ParseCache, settings: ParserSettings,
                          chunk_verses: int, warn: Callable[[str], None]) -> int:
    """Add to `found` (and to `cache`) the answers of the earlier chunk files in `work_dir` that belong to
    these verses and hold sentences not found yet; returns how many files were read."""
    present = {path.name for path in work_dir.glob("parse-*.jsonl")}
    if not present:
        return 0
    read = 0
    for start in range(0, len(parser_verses), chunk_verses):
        chunk_keys = keys[start:start + chunk_verses]
        if all(key in found for verse_keys in chunk_keys for key in verse_keys):
            continue
        path = legacy_chunk_path(work_dir, parser_verses[start:start + chunk_verses], settings)
        if path.name not in present:
            continue
        answers = {key: answer for key, answer in read_legacy_chunk(path, chunk_keys, warn).items()
                   if key not in found}
        found.update(answers)
        cache.store(answers.items())
        read += 1
    return read
