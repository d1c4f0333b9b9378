"""The extraction run: streaming, sharded counting on all cores, then the sorted table.

Stage 1, extract (parallel over chunks of sentence pairs): each chunk's rule
occurrences are counted and written to temporary files, one per target-side
hash shard. Word-link counts, label counts and a sample of source sides come
back to the parent.
Stage 2, score by target side (parallel over the shards): a shard holds
every occurrence of its target sides, so it finds c(target side), each
rule's count and its most frequent word links and tree, and the lexical
weights. Rules go on to source-side range partitions (bounds from the sample).
Stage 3, score by source side and write (parallel over the partitions):
c(source side), the remaining features, the optional test-set filter; each
partition is sorted and gzipped as a gzip member. The members, in range
order, are concatenated into the table, so the table is sorted by line as
`LC_ALL=C sort` would sort it (the source side first).

Memory is bounded by a chunk (stage 1) and a shard or partition (stages 2
and 3); only the word-link counts, labels and the sample stay in the parent.

The stages run on forked processes, or as Dask tasks (`cky extract --cluster`,
`run_extraction(config, client)`): each stage's state goes to every worker once,
the chunks travel as task arguments, the shards stay in files in the temporary
directory (so every worker must see it), and a task whose worker dies runs again
elsewhere. The target-side shard of a rule is a CRC-32 (the same in every
interpreter), and the table is the same byte for byte.
"""
from __future__ import annotations

import glob
import json
import marshal
import multiprocessing
import os
import resource
import shutil
import sys
import time
import zlib
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Iterator

from tqdm import tqdm

from ..errors import InputError
from ..grammar import feature_names_path
from ..outputs import atomic_files, remove_stale_temporaries, temporary_name
from . import glue as glue_module
from .corpus import BadLine, CorpusPaths, count_lines, pair_graph, read_corpus
from .filtering import TestSetFilter
from .._ext import compiled_module
from .reference import count_occurrences_reference, extract_occurrences_reference, merge_by_target, table_lines
from .rules import Limits
from .scoring import FEATURE_NAMES, LexicalTable, count_links

_extract = compiled_module("_extract")  # the kernels; `compiled=False` runs their references instead

SAMPLE_EVERY = 64  # one source side in this many goes to the partition sample
MAX_REPORTED_ERRORS = 20  # bad lines printed; all are counted, the first 1000 kept in the summary


@dataclass
class ExtractionConfig:
    corpus: CorpusPaths
    out: str
    summary: str | None = None
    glue: str | None = None
    unknown_labels: str | None = None
    limits: Limits = field(default_factory=Limits)
    jobs: int = 0  # 0: all cores
    shards: int = 16
    chunk_size: int = 250
    tmp_dir: str | None = None
    min_count: float = 0.0
    filter_to: str | None = None
    glue_label: str = "Q"
    unknown_min_frequency: float = 0.03
    compress_level: int = 3  # gzip level of the table: 3 is 2.5x faster than 6, 25% larger
    compiled: bool = True  # the kernels of ext/_extract.pyx; False: their references (decoder.extract.reference)
    progress: bool = True
    keep_tmp: bool = False
    cluster: str | None = None  # a Dask cluster to count on (decoder.cluster.connect): local[:N] or tcp://HOST:PORT


# Read-only state of a stage, set by the parent before it forks the workers.
_STATE: dict = {}


def run_extraction(config: ExtractionConfig, client=None) -> dict:
    """Extract, score and write the rule table (and glue, unknown labels, summary); return the summary.
    The stages run on forked processes, or as Dask tasks on `client` (a dask.distributed Client) or
    on the cluster `config.cluster` names (connected for this run): the same table either way."""
    if client is None and config.cluster:
        from ..cluster import connect

        with connect(config.cluster) as client:
            return run_extraction(config, client)
    started = time.time()
    cpu_started = _cpu_seconds()
    load_before = os.getloadavg()[0]
    jobs = config.jobs or os.cpu_count() or 1
    n_lines = check_line_counts(config.corpus)  # misaligned files: refused before any work
    out_dir = os.path.dirname(os.path.abspath(config.out))
    os.makedirs(out_dir, exist_ok=True)
    # The shards go to a directory named after this process (decoder.outputs.temporary_name), so that
    # the next run removes those of a run that was killed.
    tmp_parent = config.tmp_dir or out_dir
    os.makedirs(tmp_parent, exist_ok=True)
    remove_stale_temporaries(config.out, tmp_parent)
    tmp = temporary_name(config.out, tmp_parent)
    os.mkdir(tmp, 0o700)
    # Every output appears when the run has succeeded, not before: a failed run leaves none of them
    # (nor a valid-looking part of one), and the files of an earlier run stay as they were.
    with atomic_files() as files:
        try:
            summary = _run(config, jobs, tmp, started, client, files, n_lines)
        finally:
            if not config.keep_tmp:
                shutil.rmtree(tmp, ignore_errors=True)
        # CPU time (this process and its finished workers) and the machine's load: on a shared
        # machine the wall time alone says little
        summary["cpu_seconds"] = round(_cpu_seconds() - cpu_started, 2)
        summary["load_average"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        if config.summary:
            os.makedirs(os.path.dirname(os.path.abspath(config.summary)), exist_ok=True)
            with open(files.path(config.summary), "w") as f:
                json.dump(summary, f, indent=2)
                f.write("\n")
    return summary


def check_line_counts(paths: CorpusPaths) -> int:
    """The number of lines of the line-parallel corpus files; an InputError naming two files and their
    counts if they differ (a line missing in one file would pair every later line with the wrong one)."""
    files = [(what, path) for what, path in (("source", paths.source), ("trees", paths.trees),
                                             ("alignment", paths.alignment), ("target", paths.target)) if path]
    counts = [(what, path, count_lines(path)) for what, path in files]
    _, first_path, first_count = counts[0]
    for what, path, count in counts[1:]:
        if count != first_count:
            raise InputError(path, f"has {count} lines but {first_path} has {first_count}: the {what} file must "
                                   f"have one line per sentence pair")
    return first_count


def _run(config: ExtractionConfig, jobs: int, tmp: str, started: float, client, files: atomic_files,
         n_lines: int) -> dict:
    shards = config.shards
    for k in range(shards):
        os.makedirs(os.path.join(tmp, "stage1", f"t{k:03d}"))
        os.makedirs(os.path.join(tmp, "stage2", f"s{k:03d}"))
    os.makedirs(os.path.join(tmp, "stage3"))
    timings = {}
    cpu_timings = {}
    cpu = _cpu_seconds()

    # Stage 1: extract.
    _STATE.clear()
    _STATE.update(config=config, tmp=tmp)
    total = Totals()
    with tqdm(total=n_lines, unit="pairs", desc="extract", disable=not config.progress,
              smoothing=0.1) as bar:
        for result in _parallel_map(_extract_chunk, _chunks(config), jobs, client):
            total.add(result)
            for kind, message in result["errors"]:
                if total.reported < MAX_REPORTED_ERRORS:
                    tqdm.write(message, file=sys.stderr)
                total.reported += 1
            bar.update(result["pairs"])
    if total.reported > MAX_REPORTED_ERRORS:
        print(f"... {total.reported - MAX_REPORTED_ERRORS} more bad lines (see the summary)", file=sys.stderr)
    timings["extract"] = time.time() - started
    cpu_timings["extract"], cpu = _cpu_seconds() - cpu, _cpu_seconds()

    # Stage 2: score by target side.
    t = time.time()
    sample = sorted(set(total.sample))
    bounds = sorted(set(sample[len(sample) * p // shards] for p in range(1, shards))) if sample else []
    _STATE.update(lexicon=LexicalTable(total.links), bounds=bounds)
    for _ in tqdm(_parallel_map(_score_by_target, range(shards), jobs, client), total=shards, unit="shards",
                  desc="score", disable=not config.progress):
        pass
    timings["score"] = time.time() - t
    cpu_timings["score"], cpu = _cpu_seconds() - cpu, _cpu_seconds()

    # Stage 3: score by source side, filter, sort and write.
    t = time.time()
    _STATE.update(lhs_counts=dict(total.lhs),
                  test_filter=TestSetFilter.from_file(config.filter_to) if config.filter_to else None)
    written: Counter = Counter()
    distinct = 0
    for result in tqdm(_parallel_map(_write_partition, range(len(bounds) + 1), jobs, client), total=len(bounds) + 1,
                       unit="parts", desc="write", disable=not config.progress):
        written.update(result["nonterminals"])
        distinct += result["distinct"]
    with open(files.path(config.out), "wb") as out:
        for p in range(len(bounds) + 1):
            with open(os.path.join(tmp, "stage3", f"p{p:03d}.gz"), "rb") as member:
                shutil.copyfileobj(member, out, 1 << 20)
    with open(files.path(feature_names_path(config.out)), "w") as f:
        json.dump(FEATURE_NAMES, f)
        f.write("\n")
    timings["write"] = time.time() - t
    cpu_timings["write"] = _cpu_seconds() - cpu

    glue_rules = 0
    if config.glue:
        glue_rules = glue_module.write_glue(files.path(config.glue), total.lhs, total.roots, config.glue_label,
                                            names_path=files.path(feature_names_path(config.glue)))
    unknown = glue_module.unknown_word_labels(total.single_word_labels, total.source_words,
                                              config.unknown_min_frequency)
    if config.unknown_labels:
        glue_module.write_unknown_labels(files.path(config.unknown_labels), unknown)

    seconds = time.time() - started
    return {
        "sentence_pairs": total.pairs,
        "skipped": total.skipped,
        "skipped_by_reason": dict(sorted(total.skipped_by_reason.items())),
        "pairs_without_alignment": total.unaligned_pairs,
        "minimal_rules": total.minimal,
        "composed_rules": total.composed,
        "distinct_rules_extracted": distinct,
        "distinct_rules": sum(written.values()),
        "nonterminals_per_rule": {str(k): v for k, v in sorted(written.items())},
        "nonterminals_per_extracted_rule": {str(k): v for k, v in sorted(total.nonterminals.items())},
        "seconds": round(seconds, 2),
        "pairs_per_second": round(total.pairs / seconds, 1) if seconds else None,
        "seconds_by_stage": {k: round(v, 2) for k, v in timings.items()},
        "cpu_seconds_by_stage": {k: round(v, 2) for k, v in cpu_timings.items()},  # workers included
        "jobs": jobs if client is None else len(client.nthreads()),  # on a cluster: its workers
        "limits": asdict(config.limits),
        "min_count": config.min_count,
        "filtered_to": config.filter_to,
        "feature_names": FEATURE_NAMES,
        "glue_rules": glue_rules,
        "unknown_word_labels": unknown,
        "rules": config.out,
        "errors": total.errors[:1000],
    }


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


class Totals:
    """What the parent accumulates from the stage-1 chunks."""

    def __init__(self):
        self.pairs = self.skipped = self.unaligned_pairs = self.minimal = self.composed = 0
        self.reported = 0
        self.skipped_by_reason: Counter = Counter()
        self.nonterminals: Counter = Counter()
        self.links: Counter = Counter()
        self.source_words: Counter = Counter()
        self.single_word_labels: Counter = Counter()
        self.lhs: Counter = Counter()
        self.roots: Counter = Counter()
        self.sample: list[str] = []
        self.errors: list[str] = []

    def add(self, r: dict) -> None:
        self.pairs += r["pairs"]
        self.skipped += len(r["errors"])
        self.unaligned_pairs += r["unaligned_pairs"]
        self.minimal += r["minimal"]
        self.composed += r["composed"]
        for kind, message in r["errors"]:
            self.skipped_by_reason[kind] += 1
            if len(self.errors) < 1000:
                self.errors.append(message)
        for name in ("nonterminals", "links", "source_words", "single_word_labels", "lhs", "roots"):
            getattr(self, name).update(r[name])
        self.sample.extend(r["sample"])


def _chunks(config: ExtractionConfig) -> Iterator[tuple[int, list]]:
    chunk = []
    chunk_id = 0
    for pair in read_corpus(config.corpus):
        chunk.append(pair)
        if len(chunk) == config.chunk_size:
            yield chunk_id, chunk
            chunk_id += 1
            chunk = []
    if chunk:
        yield chunk_id, chunk


def _parallel_map(func: Callable, tasks: Iterable, jobs: int, cluster=None) -> Iterator:
    """func over tasks, in order, on `jobs` forked processes (or the workers of a Dask `cluster`)
    with few tasks in flight (bounded memory)."""
    if cluster is not None:
        yield from _cluster_map(cluster, func, tasks)
        return
    if jobs <= 1:
        yield from map(func, tasks)
        return
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        pending: deque = deque()
        for task in tasks:
            pending.append(pool.apply_async(func, (task,)))
            if len(pending) >= 2 * jobs:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def _with_state(func: Callable, state: dict, task):
    """Run on a Dask worker: a stage's task, with the stage's state in place of the forked _STATE."""
    _STATE.clear()
    _STATE.update(state, delete_consumed=False)  # a task run again after its worker died needs its input files
    return func(task)


def _cluster_map(client, func: Callable, tasks: Iterable) -> Iterator:
    """func over tasks on a Dask cluster, in order, with few tasks in flight. The stage's state (the
    config, the word-link table, ...) goes to every worker once (scattered), not with each task;
    the temporary shards are files, so every worker must see the temporary directory (one machine,
    or a shared file system). A worker that dies has its task run again elsewhere (stage 1 and 2
    tasks rewrite the same files, and on a cluster a task leaves the files it read for the end of the run)."""
    state = client.scatter([dict(_STATE)], broadcast=True)[0]
    in_flight = 2 * max(1, len(client.nthreads()))
    pending: deque = deque()
    try:
        for task in tasks:
            pending.append(client.submit(_with_state, func, state, task, pure=False))
            if len(pending) >= in_flight:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        client.cancel(list(pending))
        state.release()


def extract_occurrences(graph, limits: Limits, compiled: bool = True) -> list[tuple]:
    """The rule occurrences of a sentence pair as (fields, size, n_nonterminals, lhs, n_source_symbols),
    fields as `scoring.rule_fields` gives them; compiled or not, same result."""
    if compiled:
        return _extract.extract_sentence(graph.tree, graph, limits.compose, limits.max_nonterminals,
                                         limits.max_symbols, limits.max_depth)
    return extract_occurrences_reference(graph, limits)


def count_occurrences(graph, limits: Limits, compiled: bool, occurrences: dict, lhs: dict, nonterminals: dict,
                      single_word_labels: dict) -> tuple[int, int]:
    """Add a sentence pair's rules to the counts: occurrences by fields, LHS labels, nonterminals
    per rule, (word, LHS) of single-word minimal rules; return (rules extracted, of which minimal)."""
    if compiled:
        return _extract.count_sentence(graph.tree, graph, limits.compose, limits.max_nonterminals,
                                       limits.max_symbols, limits.max_depth, occurrences, lhs, nonterminals,
                                       single_word_labels)
    return count_occurrences_reference(graph, limits, occurrences, lhs, nonterminals, single_word_labels)


def _shard_of(target_field: str, shards: int) -> int:
    # Not Python's hash(): it is salted per interpreter, and the Dask workers of `cky extract --cluster`
    # may be separate interpreters, while every occurrence of a target side must reach the same shard.
    # The table does not depend on the shard function (it is sorted); CRC-32 costs ~0.3 us a rule.
    return zlib.crc32(target_field.encode("utf-8", "surrogatepass")) % shards


def _extract_chunk(task: tuple[int, list]) -> dict:
    """Stage 1 on one chunk: extract, count, write the shards; return the chunk's totals."""
    chunk_id, pairs = task
    config: ExtractionConfig = _STATE["config"]
    tmp = _STATE["tmp"]
    limits = config.limits
    corpus = config.corpus
    compiled = config.compiled
    occurrences: dict = {}  # rule fields -> count (plain dicts: Counter's += is slower)
    links: dict = {}
    source_words: Counter = Counter()
    single_word_labels: dict = {}
    lhs: dict = {}
    roots: Counter = Counter()
    nonterminals: dict = {}
    errors = []
    minimal = extracted = unaligned = 0
    for pair in pairs:
        try:
            graph = pair_graph(pair, corpus)
        except BadLine as e:
            errors.append((e.kind, str(e)))
            continue
        tree = graph.tree
        count_links(graph.source_words, tree.words, graph.source_links, graph.target_links, links)
        source_words.update(graph.source_words)
        roots[tree.label[0]] += 1
        if not graph.frontier[0]:
            unaligned += 1
            continue
        n_rules, n_minimal = count_occurrences(graph, limits, compiled, occurrences, lhs, nonterminals,
                                               single_word_labels)
        extracted += n_rules
        minimal += n_minimal
    composed = extracted - minimal

    shards = config.shards
    buckets: list[list] = [[] for _ in range(shards)]
    for fields, c in occurrences.items():
        buckets[_shard_of(fields[1], shards)].append(fields + (c,))
    for k, bucket in enumerate(buckets):
        if bucket:
            with open(os.path.join(tmp, "stage1", f"t{k:03d}", f"c{chunk_id:06d}"), "wb") as f:
                f.write(marshal.dumps(bucket))
    sample = [fields[0] for n, fields in enumerate(occurrences) if n % SAMPLE_EVERY == 0]
    return dict(pairs=len(pairs), errors=errors, unaligned_pairs=unaligned, minimal=minimal,
                composed=composed, nonterminals=nonterminals, links=links, source_words=source_words,
                single_word_labels=single_word_labels, lhs=lhs, roots=roots, sample=sample)


def _consume_shards(directory: str):
    """The marshalled files of a stage directory, in name order; each is deleted once read (unless
    the run keeps them: delete_consumed) to free the disk as the run goes."""
    for path in sorted(glob.glob(os.path.join(directory, "*"))):
        with open(path, "rb") as f:
            data = marshal.loads(f.read())
        if _STATE.get("delete_consumed", True):
            os.unlink(path)
        yield data


def _score_by_target(shard: int) -> int:
    """Stage 2 on one target shard; return its number of distinct rules."""
    tmp = _STATE["tmp"]
    lexicon: LexicalTable = _STATE["lexicon"]
    bounds: list[str] = _STATE["bounds"]
    record_lists = list(_consume_shards(os.path.join(tmp, "stage1", f"t{shard:03d}")))
    if _STATE["config"].compiled:
        parts, n_rules = _extract.merge_by_target(record_lists, bounds, lexicon.t_given_s, lexicon.s_given_t)
    else:
        parts, n_rules = merge_by_target(record_lists, bounds, lexicon)
    del record_lists
    for p, rows in enumerate(parts):
        if rows:
            with open(os.path.join(tmp, "stage2", f"s{p:03d}", f"t{shard:03d}"), "wb") as f:
                f.write(marshal.dumps(rows))
    return n_rules


def _write_partition(part: int) -> dict:
    """Stage 3 on one source-side range: final scores, filter, sort, gzip."""
    import gzip

    tmp = _STATE["tmp"]
    config: ExtractionConfig = _STATE["config"]
    lhs_counts: dict = _STATE["lhs_counts"]
    test_filter: TestSetFilter | None = _STATE["test_filter"]
    rows = []
    for shard_rows in _consume_shards(os.path.join(tmp, "stage2", f"s{part:03d}")):
        rows.extend(shard_rows)
    keep = test_filter.keeps if test_filter is not None else None
    make_lines = _extract.table_lines if config.compiled else table_lines
    lines, nonterminals = make_lines(rows, lhs_counts, config.min_count, keep)
    lines.sort()
    with gzip.GzipFile(os.path.join(tmp, "stage3", f"p{part:03d}.gz"), "wb",
                       compresslevel=config.compress_level, mtime=0) as out:  # mtime 0: the same bytes every run
        if lines:
            out.write("\n".join(lines).encode())
            out.write(b"\n")
    return dict(distinct=len(rows), nonterminals=nonterminals)
