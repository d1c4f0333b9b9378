"""Translations as JSON for the viewer: the derivation with its rules spelled out from the store.

A derivation node (decoder.search.chart) holds `symbol`, `span`, `rule` (a binary rule id, or
"oov", "glue-start", "glue-concat"), `source_rule` (for a top rule: the source rule's index)
and `children`. `explain_derivation` keeps all of that and adds `binary_rule` (readable) to
every rule node, and to every top rule node `source` (the source rule: lhs, source and target
sides, tree fragment), `binarization` (the binary rules that make it up, top first: the node's
own and those of its virtual descendants), `rule_features` (its rule-table features, logs)
and `rule_score` (their weighted sum).
"""
from __future__ import annotations

import math

from ..grammar import unescape_word


def json_safe(value):
    """`value` with non-finite floats as None (JSON has no inf or NaN) and numpy scalars as Python's."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _side(items, labels) -> list[str]:
    """A rule side as display tokens: words unescaped, nonterminal slot k as "[LABEL]"."""
    return [f"[{labels[i]}]" if isinstance(i, int) else unescape_word(i) for i in items]


def binary_rule_text(store, rule: int) -> str:
    """"LHS -> children ||| target" of a binary rule; target `*` when it carries its children's blocks."""
    binary = store.binary_rule(rule)
    children = " ".join(" ".join(map(unescape_word, c)) if isinstance(c, tuple) else f"[{c}]"
                        for c in binary.children)
    if binary.target is None:
        target = "*"
    else:
        target = " ".join(unescape_word(t) if isinstance(t, str) else f"[{t}]" for t in binary.target)
    return f"{binary.lhs} -> {children} ||| {target}"


def explain_derivation(decoder, node: dict | None) -> dict | None:
    """A copy of a derivation with its rules spelled out (see the module docstring)."""
    if node is None:
        return None
    store = decoder.store
    out = {key: value for key, value in node.items() if key != "children"}
    out["children"] = [explain_derivation(decoder, child) for child in node.get("children", ())]
    rule = node.get("rule")
    if isinstance(rule, int):
        out["binary_rule"] = binary_rule_text(store, rule)
        if node.get("source_rule") is not None:
            source = store.source_rule(rule)
            out["source"] = {"lhs": source.lhs, "source": _side(source.source, source.labels),
                             "target": _side(source.target, source.labels), "tree": source.tree}
            features = {name: float(value) for name, value in
                        zip(store.feature_names, store.features[node["source_rule"]])}
            out["rule_features"] = features
            out["rule_score"] = decoder.weights.dot(features)
            out["binarization"] = [out["binary_rule"]] + _virtual_rules(out["children"])
    return out


def _virtual_rules(children: list) -> list[str]:
    """The binary rules of the virtual (binarization-internal) nodes under a top rule, pre-order."""
    rules = []
    for child in children:
        if "source" not in child and isinstance(child.get("rule"), int):
            rules.append(child["binary_rule"])
            rules.extend(_virtual_rules(child["children"]))
    return rules


def rule_list(derivation: dict | None) -> list[dict]:
    """The derivation's rule applications, pre-order: one entry per source rule, unknown word and
    glue step (virtual nodes appear inside their source rule's `binarization`)."""
    out = []

    def walk(node):
        rule = node.get("rule")
        if "source" in node:
            out.append({key: node[key] for key in ("symbol", "span", "rule", "source_rule", "source", "binarization",
                                                   "rule_features", "rule_score")})
        elif isinstance(rule, str):
            out.append({"symbol": node["symbol"], "span": node["span"], "rule": rule})
        for child in node["children"]:
            walk(child)

    if derivation is not None:
        walk(derivation)
    return out


def translation_record(decoder, translation) -> dict:
    """What the API returns for one translation: the Translation's fields, and `stats` as
    `cky translate --stats-out` writes them (score and features included)."""
    derivation = explain_derivation(decoder, translation.derivation)
    stats = {"score": float(translation.score), "features": dict(translation.features)}
    stats.update(translation.stats or {})
    return json_safe({
        "source": translation.source, "text": translation.text, "tree": translation.tree,
        "score": float(translation.score), "features": dict(translation.features),
        "derivation": derivation, "rules": rule_list(derivation), "stats": stats,
    })
