"""Minimum error rate training (Och 2003).

Each iteration decodes the dev set's k-best lists with the current weights and
merges them with the lists of all earlier iterations (`KbestPool`). The
optimizer then moves the weights along one direction at a time with an exact
line search: along w + g*d every hypothesis's model score is a line in g, each
sentence's 1-best is given by the upper envelope of its lines, and corpus BLEU
(from summed sufficient statistics) is constant between the envelopes'
breakpoints, so the best g is found by visiting every breakpoint of every
sentence once in order. Directions are the coordinate axes (plus optional
random ones), repeated until no direction improves, from the current weights
and from several random starting points.

Weights are kept at L1 norm 1 during the search (the 1-best does not depend on
the scale); the tuned weights are rescaled to the norm of the initial ones, so
that the decoder's score-threshold beam keeps its meaning.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..evaluate import N_STATS, BleuStatistics, bleu_from_stats, bleu_from_stats_array

log = logging.getLogger("cky.tune")

try:  # the envelope sweep is a tight loop over all hypotheses: compile it when numba is there
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*args, **kwargs):
        return (lambda f: f) if not args or not callable(args[0]) else args[0]

IMPROVEMENT = 1e-9  # BLEU points: smaller gains are ties
# Feature values are rounded to this many decimals: the store keeps features in float32, so
# features that are equal in exact arithmetic (word_count and the rule column target_words,
# 8.0 and 7.9999947) differ by noise, and the line search would otherwise find weights that
# rank hypotheses by that noise (w_target_words = -w_word_count: BLEU 0.06 decoded on the Bible).
FEATURE_DECIMALS = 3
# How far past the last breakpoint a step into an unbounded interval goes: 10% of the
# breakpoint's distance (at least 0.01; weights have L1 norm 1 during the search).
UNBOUNDED_MARGIN = 0.1


# ---- merged k-best lists --------------------------------------------------------------------------

class KbestPool:
    """The distinct hypotheses of every sentence over all iterations: features and BLEU statistics."""

    def __init__(self, feature_names: Sequence[str], bleu: BleuStatistics):
        self.feature_names = list(feature_names)
        self._index = {name: i for i, name in enumerate(self.feature_names)}
        self.bleu = bleu
        self._seen: list[set] = [set() for _ in range(len(bleu))]
        self._features: list[list[np.ndarray]] = [[] for _ in range(len(bleu))]
        self._stats: list[list[np.ndarray]] = [[] for _ in range(len(bleu))]
        self._texts: list[list[str]] = [[] for _ in range(len(bleu))]
        self._arrays = None

    def __len__(self) -> int:
        return sum(len(texts) for texts in self._texts)

    def vector(self, features: dict) -> np.ndarray:
        """Features by name as a vector in `feature_names` order (features without a weight are ignored)."""
        vector = np.zeros(len(self.feature_names))
        for name, value in features.items():
            i = self._index.get(name)
            if i is not None:
                vector[i] = value
        return np.round(vector, FEATURE_DECIMALS)

    def add(self, sentence: int, text: str, features: dict) -> bool:
        """Add a hypothesis unless the same output with the same features is there; True if new."""
        vector = self.vector(features)
        if (text, tuple(vector)) in self._seen[sentence]:
            return False
        self._append(sentence, text, vector, self.bleu.sentence(sentence, text))
        return True

    def _append(self, sentence: int, text: str, vector: np.ndarray, stats: np.ndarray) -> None:
        self._seen[sentence].add((text, tuple(vector)))
        self._texts[sentence].append(text)
        self._features[sentence].append(vector)
        self._stats[sentence].append(stats)
        self._arrays = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(features float64[H, F], stats int64[H, N_STATS], offsets int64[S+1]): sentence s owns rows
        offsets[s]:offsets[s+1]."""
        if self._arrays is None:
            counts = [len(rows) for rows in self._features]
            offsets = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            rows = [v for sentence in self._features for v in sentence]
            stats = [v for sentence in self._stats for v in sentence]
            features = np.array(rows, dtype=np.float64).reshape(-1, len(self.feature_names))
            self._arrays = (features, np.array(stats, dtype=np.int64).reshape(-1, N_STATS), offsets)
        return self._arrays

    def text(self, sentence: int, row: int) -> str:
        return self._texts[sentence][row]

    def texts(self) -> list[str]:
        """Every hypothesis's text, in the rows' order of `arrays()`."""
        return [text for sentence in self._texts for text in sentence]

    def restore(self, texts: Sequence[str], features: np.ndarray, stats: np.ndarray, offsets: np.ndarray) -> None:
        """Refill an empty pool with what `texts()` and `arrays()` gave (a MERT checkpoint)."""
        if len(self):
            raise ValueError("restore: the pool is not empty")
        if len(offsets) != len(self._texts) + 1 or offsets[-1] != len(texts) or len(features) != len(texts) \
                or len(stats) != len(texts) or features.shape[1:] != (len(self.feature_names),):
            raise ValueError(f"restore: {len(texts)} hypotheses of {len(offsets) - 1} sentences do not fit a pool "
                             f"of {len(self._texts)} sentences and {len(self.feature_names)} features")
        for sentence in range(len(self._texts)):
            for row in range(int(offsets[sentence]), int(offsets[sentence + 1])):
                self._append(sentence, texts[row], np.asarray(features[row], dtype=np.float64),
                             np.asarray(stats[row], dtype=np.int64))


# ---- exact line search ----------------------------------------------------------------------------

@njit(cache=True)
def _envelopes(intercepts, slopes, offsets, quality):
    """Upper envelope of the lines a + g*b of each sentence (rows offsets[s]:offsets[s+1]).

    Returns (lines, starts, envelope_offsets): sentence s's envelope is
    lines[e0:e1] with e0, e1 = envelope_offsets[s], envelope_offsets[s+1], in
    order of increasing g; line lines[e] is the best from g = starts[e] on
    (starts[e0] = -inf). Among identical lines the row of lowest `quality`
    wins: weights under which hypotheses tie must not look good because the tie
    happens to be broken in favour of a good one (the decoder would break it
    some other way).
    """
    n_sentences = len(offsets) - 1
    lines = np.empty(len(intercepts), np.int64)
    starts = np.empty(len(intercepts), np.float64)
    envelope_offsets = np.zeros(n_sentences + 1, np.int64)
    count = 0
    for s in range(n_sentences):
        low, high = offsets[s], offsets[s + 1]
        base = count
        # stable sort by slope: among parallel lines the earlier row comes first
        order = np.argsort(slopes[low:high], kind="mergesort") + low
        for row in order:
            a = intercepts[row]
            b = slopes[row]
            x = -np.inf
            dominated = False
            while count > base:
                top = lines[count - 1]
                if slopes[top] == b:
                    if a < intercepts[top] or (a == intercepts[top] and quality[row] >= quality[top]):
                        dominated = True
                        break
                    count -= 1
                    continue
                x = (intercepts[top] - a) / (b - slopes[top])
                if x <= starts[count - 1]:
                    count -= 1  # the new line beats `top` wherever `top` was best
                    continue
                break
            if dominated:
                continue
            if count == base:
                x = -np.inf
            lines[count] = row
            starts[count] = x
            count += 1
        envelope_offsets[s + 1] = count
    return lines[:count], starts[:count], envelope_offsets


def upper_envelope(intercepts: Sequence[float], slopes: Sequence[float]) -> tuple[list[int], list[float]]:
    """One sentence's envelope: the lines that are best somewhere, by increasing g, and where each starts."""
    intercepts = np.asarray(intercepts, dtype=np.float64)
    lines, starts, _ = _envelopes(intercepts, np.asarray(slopes, dtype=np.float64),
                                  np.array([0, len(intercepts)], dtype=np.int64), np.zeros(len(intercepts)))
    return lines.tolist(), starts.tolist()


@dataclass
class LineSearchResult:
    step: float  # the best g: the weights become w + step * d
    bleu: float  # corpus BLEU of the 1-best lists at w + step * d
    bleu_at_zero: float  # corpus BLEU at w itself
    intervals: list = field(default_factory=list)  # (left, right, bleu) for every interval of g (for tests, plots)


def sentence_quality(stats: np.ndarray) -> np.ndarray:
    """Each hypothesis's own (smoothed) BLEU: how ties between hypotheses are broken, pessimistically."""
    return bleu_from_stats_array(stats)


def line_search(features: np.ndarray, stats: np.ndarray, offsets: np.ndarray, weights: np.ndarray,
                direction: np.ndarray, keep_intervals: bool = False, quality: np.ndarray | None = None,
                low: float = -np.inf, high: float = np.inf) -> LineSearchResult:
    """The g in [low, high] that maximizes corpus BLEU of the 1-best lists under weights + g * direction.

    Among equally good intervals of g the one nearest to 0 wins (no move if 0 is
    among them); inside a bounded interval the midpoint is taken; in an
    unbounded one, a point just past its end (UNBOUNDED_MARGIN): the pool says
    nothing about how far to go, and weights far out decode badly outside it.
    """
    if quality is None:
        quality = sentence_quality(stats)
    intercepts = features @ weights
    slopes = features @ direction
    lines, starts, envelope_offsets = _envelopes(intercepts, slopes, offsets, quality)
    nonempty = envelope_offsets[1:] > envelope_offsets[:-1]
    first = envelope_offsets[:-1][nonempty]
    base = stats[lines[first]].sum(axis=0)

    # Every envelope line after a sentence's first is an event: at g = its start, that
    # sentence's 1-best changes and the corpus statistics change by the difference.
    is_event = np.ones(len(lines), dtype=bool)
    is_event[first] = False
    events = np.nonzero(is_event)[0]
    order = np.argsort(starts[events], kind="stable")
    events = events[order]
    event_x = starts[events]
    deltas = stats[lines[events]] - stats[lines[events - 1]]
    running = base + np.cumsum(deltas, axis=0)
    # Several sentences may change at the same g: an interval starts after the last of them.
    last_at_x = np.ones(len(events), dtype=bool)
    last_at_x[:-1] = event_x[1:] != event_x[:-1]
    bounds = event_x[last_at_x]
    interval_stats = np.vstack([base[None, :], running[last_at_x]])
    bleu = bleu_from_stats_array(interval_stats)
    lefts = np.concatenate([[-np.inf], bounds])
    rights = np.concatenate([bounds, [np.inf]])
    if low > -np.inf or high < np.inf:  # a trust region: keep the part of each interval inside it
        lefts, rights = np.maximum(lefts, low), np.minimum(rights, high)
        inside = lefts < rights
        lefts, rights, bleu = lefts[inside], rights[inside], bleu[inside]

    contains_zero = (lefts <= 0.0) & (0.0 < rights)
    bleu_at_zero = float(bleu[np.argmax(contains_zero)])
    best = float(bleu.max())
    candidates = np.nonzero(bleu >= best - IMPROVEMENT)[0]
    distance = np.where(contains_zero[candidates], 0.0,
                        np.minimum(np.abs(lefts[candidates]), np.abs(rights[candidates])))
    chosen = int(candidates[np.argmin(distance)])
    left, right = lefts[chosen], rights[chosen]
    if left <= 0.0 < right:
        step = 0.0
    elif np.isinf(left):
        step = right - max(UNBOUNDED_MARGIN * abs(right), UNBOUNDED_MARGIN / 10)
    elif np.isinf(right):
        step = left + max(UNBOUNDED_MARGIN * abs(left), UNBOUNDED_MARGIN / 10)
    else:
        step = (left + right) / 2.0
    intervals = list(zip(lefts.tolist(), rights.tolist(), bleu.tolist())) if keep_intervals else []
    return LineSearchResult(float(step), float(bleu[chosen]), bleu_at_zero, intervals)


# ---- the optimizer --------------------------------------------------------------------------------

def _normalized(weights: np.ndarray) -> np.ndarray:
    norm = np.abs(weights).sum()
    return weights / norm if norm > 0 else weights


def corpus_bleu_at(features: np.ndarray, stats: np.ndarray, offsets: np.ndarray, weights: np.ndarray) -> float:
    """Corpus BLEU of the pool's 1-best lists under `weights` (ties: the first hypothesis)."""
    scores = features @ weights
    quality = sentence_quality(stats)
    chosen = []
    for low, high in zip(offsets[:-1], offsets[1:]):
        if high > low:
            best = np.flatnonzero(scores[low:high] == scores[low:high].max()) + low
            chosen.append(int(best[np.argmin(quality[best])]))  # ties: the worst, as in the envelope
    return bleu_from_stats(stats[chosen].sum(axis=0))


def coordinate_ascent(features, stats, offsets, start: np.ndarray, directions: np.ndarray,
                      max_sweeps: int = 30, box: tuple | None = None) -> tuple[np.ndarray, float]:
    """Line searches along each direction in turn until a whole sweep gains nothing.

    `box` = (lower, upper) weight vectors: a coordinate direction may not leave
    it (other directions are not bounded). Without a box the weights are kept
    at L1 norm 1; with one they are normalized at the end (the box is in the
    coordinates of the normalized starting weights).
    """
    weights = _normalized(start.astype(np.float64)) if box is None else start.astype(np.float64)
    bleu = corpus_bleu_at(features, stats, offsets, weights)
    quality = sentence_quality(stats)
    for _ in range(max_sweeps):
        improved = False
        for direction in directions:
            low, high = -np.inf, np.inf
            axis = np.flatnonzero(direction)
            if box is not None and len(axis) == 1:
                i = axis[0]
                low, high = sorted(((box[0][i] - weights[i]) / direction[i], (box[1][i] - weights[i]) / direction[i]))
            result = line_search(features, stats, offsets, weights, direction, quality=quality, low=low, high=high)
            if result.bleu > bleu + IMPROVEMENT:
                weights = weights + result.step * direction
                if box is None:
                    weights = _normalized(weights)
                bleu = result.bleu
                improved = True
        if not improved:
            break
    return _normalized(weights), bleu


def optimize_weights(features, stats, offsets, start: np.ndarray, rng: np.random.Generator, restarts: int = 20,
                     random_directions: int = 0, fixed: np.ndarray | None = None,
                     trust_region: float | None = None) -> tuple[np.ndarray, float]:
    """Best weights over coordinate ascent from `start` and from `restarts` random points.

    Without a trust region the random points are uniform in [-1, 1]^F (Och's
    MERT). With `trust_region` r, every weight w stays within r * |w| of its
    value in `start` (at least r/10 of the mean |w|), and the random points are
    drawn from that box:
    the k-best lists of one iteration say little about weights far away (on the
    Bible, unbounded steps went to word bonuses under which the decoder produced
    hundreds of words per verse: dev BLEU 0.2).
    `fixed` (bool[F]) marks features that are not searched: no direction moves
    them and random starts keep their starting value.
    """
    n_features = features.shape[1]
    free = np.ones(n_features, dtype=bool) if fixed is None else ~fixed
    directions = [np.eye(n_features)[i] for i in range(n_features) if free[i]]
    for _ in range(random_directions):
        direction = rng.normal(size=n_features) * free
        directions.append(direction / np.linalg.norm(direction))
    directions = np.array(directions)
    start = _normalized(start.astype(np.float64))
    # each weight may move by trust_region times its size (at least a tenth of the mean size):
    # relative, because one weight (the OOV penalty) can hold most of the L1 norm
    radius = trust_region * np.maximum(np.abs(start), 0.1 * np.abs(start).mean()) if trust_region else None
    box = None if radius is None else (start - radius, start + radius)
    best_weights, best_bleu = coordinate_ascent(features, stats, offsets, start, directions, box=box)
    for _ in range(restarts):
        if box is None:
            point = np.where(free, rng.uniform(-1.0, 1.0, size=n_features), start)
        else:
            point = np.where(free, rng.uniform(box[0], box[1]), start)
        weights, bleu = coordinate_ascent(features, stats, offsets, point, directions, box=box)
        if bleu > best_bleu + IMPROVEMENT:
            best_weights, best_bleu = weights, bleu
    return best_weights, best_bleu


# ---- the MERT loop --------------------------------------------------------------------------------

# decode_kbest(weights by name) -> for each dev sentence, its k-best list of (text, features by name)
DecodeKbest = Callable[[dict], list]


@dataclass
class MertState:
    """Where the MERT loop stands after an iteration: enough to continue it exactly (the same result as
    a run that was never stopped). `weights` are the next ones to decode, at L1 norm 1."""
    iteration: int  # iterations done
    weights: np.ndarray
    history: list
    decoded: list  # (dev BLEU, weights at L1 norm 1) of every decoding so far
    rng_state: dict  # numpy's bit generator state
    pool_rows: tuple  # the merged k-best lists: KbestPool.texts() and the three arrays of KbestPool.arrays()


@dataclass
class MertResult:
    weights: dict  # tuned weights by name, at the L1 norm of the initial weights
    bleu: float  # dev BLEU of the decoder's 1-best output with `weights`
    history: list  # per decoding: decoded BLEU, optimized BLEU, new hypotheses, pool size, weights, seconds
    stopped: str  # why the loop ended


def run_mert(decode_kbest: DecodeKbest, references, initial_weights: dict, max_iterations: int = 10,
             restarts: int = 20, random_directions: int = 0, seed: int = 0, tokenize: str = "13a",
             tolerance: float = 1e-5, fixed: Sequence[str] = (), progress: bool = True,
             trust_region: float | None = 0.2, resume_from: MertState | None = None,
             checkpoint: Callable[[MertState], None] | None = None) -> MertResult:
    """MERT until the weights or the k-best lists stop changing, or `max_iterations`.

    `trust_region` bounds how far each weight moves per iteration, relative to
    its size (None: unbounded, Och's original). The result is the weight
    vector whose decoded dev BLEU was best: weights
    optimized on the k-best lists can decode badly outside them (more so after
    few iterations), so the last optimized weights are decoded once more when
    the loop ends before they were, and every decoded vector competes.

    `checkpoint` is called with the loop's state after every iteration that goes on; a loop given
    that state as `resume_from` (with the same arguments and decoder) continues as if never stopped.
    """
    names = list(initial_weights)
    initial = np.array([float(initial_weights[n]) for n in names])
    scale = float(np.abs(initial).sum()) or 1.0
    fixed_mask = np.array([n in set(fixed) for n in names])
    pool = KbestPool(names, BleuStatistics(references, tokenize=tokenize))
    rng = np.random.default_rng(seed)
    history: list[dict] = []
    decoded: list[tuple[float, np.ndarray]] = []  # (dev BLEU of the 1-best output, weights)

    def decode(weights: np.ndarray) -> tuple[float, int]:
        """Decode with these weights, merge the k-best lists; (1-best BLEU, new hypotheses)."""
        kbests = decode_kbest(dict(zip(names, (weights * scale).tolist())))
        if len(kbests) != len(pool.bleu):
            raise ValueError(f"decoder returned {len(kbests)} k-best lists for {len(pool.bleu)} dev sentences")
        one_best, new = [], 0
        for sentence, kbest in enumerate(kbests):
            kbest = list(kbest) or [("", {})]  # a failed sentence still counts against BLEU
            one_best.append(kbest[0][0])
            for text, features in kbest:
                new += pool.add(sentence, text, features)
        bleu = bleu_from_stats(pool.bleu.corpus(one_best).sum(axis=0))
        decoded.append((bleu, weights))
        return bleu, new

    weights = _normalized(initial)
    first = 1
    if resume_from is not None:
        pool.restore(*resume_from.pool_rows)
        weights, first = np.asarray(resume_from.weights, dtype=np.float64), resume_from.iteration + 1
        history[:] = resume_from.history
        decoded[:] = [(bleu, np.asarray(w, dtype=np.float64)) for bleu, w in resume_from.decoded]
        rng.bit_generator.state = resume_from.rng_state
    stopped = f"reached {max_iterations} iterations"
    verified = False  # whether `weights` has been decoded
    iterations = range(first, max_iterations + 1)
    if progress:
        from tqdm import tqdm
        iterations = tqdm(iterations, desc="MERT", unit="iteration", initial=first - 1, total=max_iterations)
    for iteration in iterations:
        started = time.perf_counter()
        decoded_bleu, new = decode(weights)
        verified = True
        step = {"iteration": iteration, "decoded_bleu": decoded_bleu, "new_hypotheses": new, "pool_size": len(pool),
                "weights": dict(zip(names, (weights * scale).tolist()))}
        history.append(step)
        if new == 0:
            stopped = f"k-best lists unchanged at iteration {iteration}"
            log.info("iteration %d: dev BLEU %.2f, no new hypotheses: stop", iteration, decoded_bleu)
            break
        features, stats, offsets = pool.arrays()
        new_weights, optimized_bleu = optimize_weights(features, stats, offsets, weights, rng, restarts,
                                                       random_directions, fixed_mask, trust_region)
        change = float(np.abs(new_weights - weights).max())
        step.update(optimized_bleu=optimized_bleu, weight_change=change, seconds=time.perf_counter() - started)
        log.info("iteration %d: dev BLEU %.2f (decoded), %.2f (optimized on %d hypotheses, %d new); "
                 "weight change %.2g", iteration, decoded_bleu, optimized_bleu, len(pool), new, change)
        if progress:
            iterations.set_postfix(bleu=f"{decoded_bleu:.2f}", optimized=f"{optimized_bleu:.2f}")
        if change < tolerance:
            stopped = f"weights unchanged at iteration {iteration}"
            break
        weights, verified = new_weights, False
        if checkpoint is not None:
            checkpoint(MertState(iteration, weights, history, decoded, rng.bit_generator.state,
                                 (pool.texts(), *pool.arrays())))
    if not verified:
        final_bleu, new = decode(weights)
        history.append({"iteration": len(history) + 1, "decoded_bleu": final_bleu, "new_hypotheses": new,
                        "pool_size": len(pool), "weights": dict(zip(names, (weights * scale).tolist())),
                        "final_check": True})
        log.info("final weights: dev BLEU %.2f (decoded)", final_bleu)
    best_bleu, best_weights = max(reversed(decoded), key=lambda pair: pair[0])  # ties: the latest
    return MertResult(dict(zip(names, (best_weights * scale).tolist())), best_bleu, history, stopped)
