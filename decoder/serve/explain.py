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

from ..grammar import unescape_word


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
    """A copy of a derivation with its rules spelled out (see the module docstring). Iterative: a
    derivation nests one level per glued piece, deeper than Python's recursion limit allows."""
    if node is None:
        return None
    store = decoder.store
    copies = []                    # pre-order
    root: list = []
    stack = [(node, root)]         # (input node, the children list its copy goes into)
    while stack:
        node, siblings = stack.pop()
        if node is None:
            siblings.append(None)
            continue
        out = {key: value for key, value in node.items() if key != "children"}
        out["children"] = []
        siblings.append(out)
        copies.append(out)
        stack.extend((child, out["children"]) for child in reversed(node.get("children", ())))
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
    # Children before parents (reversed pre-order): a virtual node's binary rules, pre-order, are its own
    # and those of its virtual descendants; a top rule's binarization is its own and its children's.
    virtual: dict[int, list[str]] = {}
    for out in reversed(copies):
        below = [rule for child in out["children"] if child is not None for rule in virtual.pop(id(child), ())]
        if "source" in out:
            out["binarization"] = [out["binary_rule"]] + below
        elif isinstance(out.get("rule"), int):
            virtual[id(out)] = [out["binary_rule"]] + below
    return root[0]


def rule_list(derivation: dict | None) -> list[dict]:
    """The derivation's rule applications, pre-order: one entry per source rule, unknown word and
    glue step (virtual nodes appear inside their source rule's `binarization`)."""
    out = []
    stack = [derivation] if derivation is not None else []
    while stack:
        node = stack.pop()
        rule = node.get("rule")
        if "source" in node:
            out.append({key: node[key] for key in ("symbol", "span", "rule", "source_rule", "source", "binarization",
                                                   "rule_features", "rule_score")})
        elif isinstance(rule, str):
            out.append({"symbol": node["symbol"], "span": node["span"], "rule": rule})
        stack.extend(child for child in reversed(node["children"]) if child is not None)
    return out


def translation_record(decoder, translation) -> dict:
    """What the API returns for one translation: the Translation's fields, and `stats` as
    `cky translate --stats-out` writes them (score and features included); decoder.serve.jsonio.encode
    writes it (numpy scalars as numbers, non-finite floats as null)."""
    derivation = explain_derivation(decoder, translation.derivation)
    stats = {"score": float(translation.score), "features": dict(translation.features)}
    stats.update(translation.stats or {})
    return {"source": translation.source, "text": translation.text, "tree": translation.tree,
            "score": float(translation.score), "features": dict(translation.features),
            "derivation": derivation, "rules": rule_list(derivation), "stats": stats}
