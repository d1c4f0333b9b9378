"""Every derivation of a sentence, enumerated one by one (tiny grammars only).

An independent answer for the decoders: no items, no recombination, no LM
contexts; each complete derivation's output is scored by the LM as a whole
sentence. The search space (glue, unknown words, spans, unary rounds) is the one
decoder.search.model describes.
"""
from __future__ import annotations

from functools import lru_cache

from ..binarize import BinaryGrammar
from ..binarize.binary_grammar import assemble_target
from ..grammar import unescape_word
from .model import GLUE, LM, OOV, WORD_COUNT, SearchSpace, Weights


def _add(a: dict, b: dict) -> dict:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, 0.0) + value
    return out


def all_derivations(grammar: BinaryGrammar, words, weights: Weights, space: SearchSpace | None = None,
                    limit: int = 200_000) -> list[tuple[dict, tuple]]:
    """(features without `lm`, output words) for every complete derivation."""
    space = space or SearchSpace()
    words = tuple(words)
    n = len(words)
    lexical, unary, binary, runs = {}, {}, {}, set()
    for rule in grammar.rules:
        for c in rule.children:
            if isinstance(c, tuple):
                runs.add(c)
        if len(rule.children) == 1:
            (lexical if isinstance(rule.children[0], tuple) else unary).setdefault(rule.children[0], []).append(rule)
        else:
            binary.setdefault(rule.children, []).append(rule)
    real = {r.lhs for r in grammar.rules if not r.lhs.startswith("<")} | set(space.oov_labels)

    def rule_features(rule) -> dict:
        features = {}
        if rule.origin >= 0:
            for name, value in zip(weights.rule_feature_names, grammar.source_rules[rule.origin].log_scores()):
                features[name] = features.get(name, 0.0) + value
        if rule.target is not None:
            features[WORD_COUNT] = float(sum(isinstance(t, str) for t in rule.target))
        return features

    def apply(rule, children) -> tuple[dict, tuple]:
        features = {}
        blocks = []
        for child_features, child_blocks in children:
            features = _add(features, child_features)
            blocks.extend(child_blocks)
        features = _add(features, rule_features(rule))
        if rule.target is None:
            return features, tuple(blocks)
        return features, (tuple(assemble_target(rule.target, blocks)),)

    @lru_cache(maxsize=None)
    def cell(i: int, j: int) -> dict:
        """symbol -> list of (features, blocks) over [i, j)."""
        if j - i > space.max_span:
            return {}
        out: dict = {}
        if j - i == 1 and (words[i],) not in lexical:
            for label in space.oov_labels:
                out.setdefault(label, []).append(({OOV: 1.0, WORD_COUNT: 1.0}, ((words[i],),)))
        for rule in lexical.get(words[i:j], ()):
            out.setdefault(rule.lhs, []).append(apply(rule, [({}, ())]))
        for split in range(i + 1, j):
            left_options = dict(cell(i, split))
            if words[i:split] in runs:
                left_options[words[i:split]] = [({}, ())]
            right_options = dict(cell(split, j))
            if words[split:j] in runs:
                right_options[words[split:j]] = [({}, ())]
            for (a, b), rules in binary.items():
                if a in left_options and b in right_options:
                    for rule in rules:
                        for left in left_options[a]:
                            for right in right_options[b]:
                                out.setdefault(rule.lhs, []).append(apply(rule, [left, right]))
                                if sum(map(len, out.values())) > limit:
                                    raise RuntimeError("too many derivations for brute force")
        frontier = out
        for _ in range(space.max_unary_depth):
            new: dict = {}
            for symbol, derivations in frontier.items():
                for rule in unary.get(symbol, ()):
                    for d in derivations:
                        new.setdefault(rule.lhs, []).append(apply(rule, [d]))
            for symbol, derivations in new.items():
                out.setdefault(symbol, []).extend(derivations)
            frontier = new
            if not new:
                break
        return out

    @lru_cache(maxsize=None)
    def goal(j: int) -> list:
        out = []
        for symbol, derivations in cell(0, j).items():
            value = space.glue.start_value(symbol) if symbol in real else None
            if value is not None:
                out.extend((_add(f, {GLUE: value}), blocks[0]) for f, blocks in derivations)
        for split in range(1, j):
            for symbol, derivations in cell(split, j).items():
                value = space.glue.concat_value(symbol) if symbol in real else None
                if value is None:
                    continue
                for goal_features, goal_words in goal(split):
                    for f, blocks in derivations:
                        out.append((_add(_add(goal_features, f), {GLUE: value}), goal_words + blocks[0]))
                        if len(out) > limit:
                            raise RuntimeError("too many derivations for brute force")
        return out

    return goal(n) if n else []


def best_by_brute_force(grammar: BinaryGrammar, words, lm, weights: Weights,
                        space: SearchSpace | None = None) -> tuple[float, tuple, dict]:
    """(score, output words, features) of the best complete derivation."""
    best = None
    for features, output in all_derivations(grammar, words, weights, space):
        features = dict(features)
        features[LM] = lm.score_sentence([unescape_word(w) for w in output])  # the LM knows plain words
        score = weights.dot(features)
        if best is None or score > best[0]:
            best = (score, output, features)
    return best
