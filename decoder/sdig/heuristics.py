"""The section-3 heuristics for a tentative partitioning operation, and the max-ent model
(scikit-learn LogisticRegression) that interpolates them log-linearly.

For a candidate word pair (e_i, f_j) inside the current tree pair (a piece of the
partition: English nodes E, foreign nodes F), with E_i = the subtree of e_i inside E and
F_j that of f_j inside F (the two pieces the operation would cut off):

    t_ef      log t(e_i | f_j), IBM Model 1
    t_fe      log t(f_j | e_i), IBM Model 1 the other way
    inside    how well E_i is translated by F_j: mean over e in E_i of max over f in F_j of t(e|f)
    outside   the same for what stays: E minus E_i by F minus F_j
    position  |i / |e| - j / |f||, the relative positions' difference in the sentences
    size      |log(|E_i| / |F_j|)|, the subtrees' size ratio
    foreign   1 / |F|, inverse of the number of foreign words in the current tree

The max-ent model gives P(y = 1 | heuristics), y = 1 when the eflomal alignment links the two
words; it is trained on the candidate pairs of the first tree pairs of the corpus (a handful
of weights: a few thousand sentences are plenty).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .deptree import DepTree
from .model1 import Model1

FEATURES = ("t_ef", "t_fe", "inside", "outside", "position", "size", "foreign")
FLOOR = 1e-7


class PairContext:
    """Per sentence pair: the Model 1 matrices and full-tree subtree masks."""

    def __init__(self, e_tree: DepTree, f_tree: DepTree, t_ef: Model1, t_fe: Model1):
        self.e_tree, self.f_tree = e_tree, f_tree
        ne, nf = len(e_tree), len(f_tree)
        self.ef = np.array([[t_ef.prob(f, e) for f in f_tree.words] for e in e_tree.words]).reshape(ne, nf)
        self.fe = np.array([[t_fe.prob(e, f) for f in f_tree.words] for e in e_tree.words]).reshape(ne, nf)
        self.e_sub = _subtree_masks(e_tree)
        self.f_sub = _subtree_masks(f_tree)

    def features(self, i: int, j: int, e_piece: np.ndarray, f_piece: np.ndarray) -> list[float]:
        return self.feature_matrix([(i, j)], e_piece, f_piece)[0].tolist()

    def feature_matrix(self, pairs: list[tuple[int, int]], e_piece: np.ndarray, f_piece: np.ndarray) -> np.ndarray:
        """The heuristics of many candidate pairs of one piece at once: one row per pair."""
        ne, nf = len(self.e_tree), len(self.f_tree)
        i = np.array([p[0] for p in pairs], dtype=int)
        j = np.array([p[1] for p in pairs], dtype=int)
        e_in = self.e_sub[i] & e_piece            # (pairs, ne)
        f_in = self.f_sub[j] & f_piece            # (pairs, nf)
        e_out, f_out = e_piece & ~e_in, f_piece & ~f_in
        e_in_size, f_in_size = e_in.sum(axis=1), f_in.sum(axis=1)
        out = np.empty((len(pairs), len(FEATURES)))
        out[:, 0] = np.log(np.maximum(self.ef[i, j], FLOOR))
        out[:, 1] = np.log(np.maximum(self.fe[i, j], FLOOR))
        out[:, 2] = _coverage(self.ef, e_in, f_in)
        out[:, 3] = _coverage(self.ef, e_out, f_out)
        out[:, 4] = np.abs(i / ne - j / nf)
        out[:, 5] = np.abs(np.log(e_in_size / f_in_size))
        out[:, 6] = 1.0 / f_piece.sum()
        return out


def _subtree_masks(tree: DepTree) -> np.ndarray:
    """masks[n, m]: whether m is in the subtree of n."""
    kids = tree.children()
    masks = np.zeros((len(tree), len(tree)), dtype=bool)
    for node in range(len(tree)):
        masks[node, tree.subtree(node, kids)] = True
    return masks


def _coverage(matrix: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Per pair k: mean over the rows in rows[k] of the max over the columns in columns[k] of
    matrix (0 where either set is empty)."""
    best = (matrix[None, :, :] * columns[:, None, :]).max(axis=2)      # (pairs, rows)
    sizes = rows.sum(axis=1)
    return np.where(sizes > 0, (best * rows).sum(axis=1) / np.maximum(sizes, 1), 0.0) * columns.any(axis=1)


@dataclass
class MaxEntScorer:
    """P(y=1 | heuristics) = sigmoid(w . standardized(h) + b), from a trained LogisticRegression."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    def probability(self, features) -> np.ndarray:
        x = (np.asarray(features, dtype=float) - self.mean) / self.scale
        return 1.0 / (1.0 + np.exp(-(x @ self.weights + self.bias)))

    def to_json(self) -> dict:
        return {"features": list(FEATURES), "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "weights": self.weights.tolist(), "bias": self.bias}


def training_examples(contexts: list[PairContext], alignments: list[set[tuple[int, int]]]):
    """(X, y) over every non-root word pair of each whole tree pair; alignments are (f, e) pairs."""
    blocks, labels = [], []
    for context, links in zip(contexts, alignments):
        e_tree, f_tree = context.e_tree, context.f_tree
        pairs = [(i, j) for i in range(len(e_tree)) if e_tree.heads[i] != -1
                 for j in range(len(f_tree)) if f_tree.heads[j] != -1]
        if not pairs:
            continue
        blocks.append(context.feature_matrix(pairs, np.ones(len(e_tree), bool), np.ones(len(f_tree), bool)))
        labels.extend(1 if (j, i) in links else 0 for i, j in pairs)
    if not blocks:
        return np.zeros((0, len(FEATURES))), np.zeros(0, dtype=int)
    return np.concatenate(blocks), np.array(labels, dtype=int)


def train_maxent(X: np.ndarray, y: np.ndarray) -> MaxEntScorer:
    from sklearn.linear_model import LogisticRegression

    if len(set(y.tolist())) < 2:
        raise ValueError("the max-ent training data needs both linked and unlinked word pairs")
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(max_iter=1000)
    model.fit((X - mean) / scale, y)
    return MaxEntScorer(mean, scale, model.coef_[0].copy(), float(model.intercept_[0]))
