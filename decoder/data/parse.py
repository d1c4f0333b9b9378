"""Parse the English side with link-grammar: a worker pool with a hard time limit, a chunked cache.

Each verse is split into sentences (`trees.split_sentences`); every sentence
is one job for a pool of `lg_worker.py` processes (one per core). A job that
runs past `hard_limit` seconds has its worker killed and restarted, and the
sentence gets a fallback tree: the limit holds whatever link-grammar does.

Verses are processed in chunks of `chunk_size`; the raw link-grammar answers
of a finished chunk are written to `cache_dir/parse-<hash>.jsonl`, the hash
covering the chunk's tokens and the parser settings, so an interrupted run
resumes at the first unfinished chunk and the small and full builds share
their common chunks. Turning answers into Penn trees (`trees.penn_tree`) is
cheap and is redone on every run.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import selectors
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm import tqdm

from decoder.data import trees

WORKER_SCRIPT = Path(__file__).with_name("lg_worker.py")
DEBIAN_PYTHON = "/usr/bin/python3"


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
                               "see the worker log in the parse cache directory")
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

    def parse(self, texts: list[str], progress: tqdm | None = None) -> list[dict]:
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
                    if progress is not None:
                        progress.update(1)
                now = time.monotonic()
                for worker in self.workers:
                    if worker.job is not None and now > worker.deadline:
                        selector.unregister(worker.process.stdout)
                        answers[worker.job] = {"kind": "timeout", "tree": None, "nulls": 0}
                        self._restart(worker)
                        remaining -= 1
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


def chunk_path(cache_dir: Path, verses: list[list[str]], settings: ParserSettings) -> Path:
    digest = hashlib.sha1(settings.cache_key().encode())
    for tokens in verses:
        digest.update(("\t".join(tokens) + "\n").encode())
    return cache_dir / f"parse-{digest.hexdigest()[:20]}.jsonl"


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


def parse_verses(verses: list[list[str]], cache_dir: Path, processes: int,
                 settings: ParserSettings = ParserSettings(), chunk_size: int = 1000,
                 parser_verses: list[list[str]] | None = None, show_progress: bool = True) -> ParseResult:
    """Penn trees for tokenized English verses (leaves == tokens), parsing what is not cached.

    `parser_verses`, if given, are the same tokens as `verses` in their
    original casing: link-grammar sees those (capitals mark names), the
    trees' leaves are the tokens of `verses`.
    """
    if parser_verses is None:
        parser_verses = verses
    if len(parser_verses) != len(verses):
        raise ValueError(f"parse_verses: {len(parser_verses)} parser verses for {len(verses)} verses")
    for index, (tokens, cased) in enumerate(zip(verses, parser_verses)):
        if len(tokens) != len(cased):
            raise ValueError(f"parse_verses: verse {index}: cased tokens {cased} do not match tokens {tokens}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    spans = [trees.split_sentences(tokens, settings.min_sentence_tokens, settings.max_sentence_tokens)
             for tokens in verses]
    total_sentences = sum(len(s) for s in spans)
    chunks = [range(start, min(start + chunk_size, len(verses))) for start in range(0, len(verses), chunk_size)]
    pool: WorkerPool | None = None
    answers_by_verse: list[list[dict]] = []
    parse_seconds = 0.0
    parsed_sentences = 0
    restarts = 0
    version = "unknown"
    progress = tqdm(total=total_sentences, desc="parsing English", unit="sent", file=sys.stderr,
                    smoothing=0.05, mininterval=2.0, disable=not show_progress)
    try:
        for chunk in chunks:
            chunk_verses = [parser_verses[i] for i in chunk]
            path = chunk_path(cache_dir, chunk_verses, settings)
            if path.exists():
                with open(path, encoding="utf-8") as cached:
                    chunk_answers = [json.loads(line)["answers"] for line in cached]
                if len(chunk_answers) != len(chunk_verses):
                    raise RuntimeError(f"{path}: {len(chunk_answers)} lines, expected {len(chunk_verses)}; "
                                       "delete the file to reparse the chunk")
                progress.update(sum(len(spans[i]) for i in chunk))
            else:
                if pool is None:
                    pool = WorkerPool(settings, processes, cache_dir / "workers.log")
                    version = pool.version
                jobs = [(k, trees.parser_input(parser_verses[i][start:end]))
                        for k, i in enumerate(chunk) for start, end in spans[i]]
                started = time.monotonic()
                flat_answers = pool.parse([text for _, text in jobs], progress)
                parse_seconds += time.monotonic() - started
                parsed_sentences += len(jobs)
                chunk_answers = [[] for _ in chunk]
                for (k, _), answer in zip(jobs, flat_answers):
                    chunk_answers[k].append(answer)
                temporary = path.with_suffix(".tmp")
                with open(temporary, "w", encoding="utf-8") as out:
                    for answers in chunk_answers:
                        out.write(json.dumps({"answers": answers}) + "\n")
                os.replace(temporary, path)
            answers_by_verse.extend(chunk_answers)
    finally:
        progress.close()
        if pool is not None:
            restarts = pool.restarts
            pool.close()

    sentence_kinds: Counter = Counter()
    answer_kinds: Counter = Counter()
    verse_kinds: Counter = Counter()
    reinserted_tokens = 0
    sentences_with_reinserted = 0
    penn_trees = []
    for tokens, cased, verse_spans, answers in zip(verses, parser_verses, spans, answers_by_verse):
        sentence_trees = []
        kinds = set()
        for (start, end), answer in zip(verse_spans, answers):
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
        "sentences_by_kind": dict(sentence_kinds),
        "link_grammar_answers": dict(answer_kinds),
        "verses_by_kind": dict(verse_kinds),
        "sentences_with_reinserted_tokens": sentences_with_reinserted,
        "reinserted_tokens": reinserted_tokens,
        "sentences_parsed_this_run": parsed_sentences,
        "parse_seconds_this_run": round(parse_seconds, 1),
        "sentences_per_second_this_run": round(parsed_sentences / parse_seconds, 2) if parse_seconds else None,
        "processes": processes,
        "settings": asdict(settings),
        "link_grammar_version": version,
    }
    return ParseResult(penn_trees, statistics)
