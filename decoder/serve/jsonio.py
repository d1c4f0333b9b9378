"""JSON in and out of `cky serve` without recursion.

Requests are untrusted: json.loads recurses once per nesting level (in C, guarded by the interpreter's
recursion limit), so a body of nested brackets must be refused before it is parsed (`nesting_depth`).
Answers are deep: a derivation is written one nested level per glued piece, so a sentence of n unknown
words nests about 2n levels, deeper than json.dumps may go at Python's default recursion limit;
`encode` writes any depth with an explicit stack, and the limit is never raised (a raised limit lets
a deep enough structure overflow the C stack and kill the process).
"""
from __future__ import annotations

import json
import math
import re

# A JSON string (escapes included; an unterminated one runs to the end) or a bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_encode_string = json.encoder.encode_basestring  # the same escaping as json.dumps(ensure_ascii=False)


def nesting_depth(text: str, stop_above: int | None = None) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets inside strings do not count), or
    the first depth above `stop_above` met: a linear scan that never recurses, valid JSON or not."""
    depth = deepest = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and depth > stop_above:
                    return depth
        elif token == "]" or token == "}":
            depth -= 1
    return deepest


class _Text(str):
    """Output text on the encoder's stack, as opposed to a string value still to be encoded."""


_CLOSE_OBJECT, _CLOSE_ARRAY = _Text("}"), _Text("]")
_COMMA = _Text(",")


def encode(value) -> bytes:
    """`value` as compact UTF-8 JSON, at any nesting depth: dicts (keys made strings), lists and tuples,
    strings, numbers, booleans and None; non-finite floats are written as null (JSON has no inf or NaN)
    and numpy scalars as Python's."""
    out: list[str] = []
    stack: list = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Text:
            out.append(item)
        elif isinstance(item, str):
            out.append(_encode_string(item))
        elif item is None or item is True or item is False:
            out.append("null" if item is None else "true" if item else "false")
        elif isinstance(item, int):
            out.append(int.__repr__(item))
        elif isinstance(item, float):
            out.append(float.__repr__(item) if math.isfinite(item) else "null")
        elif isinstance(item, dict):
            stack.append(_CLOSE_OBJECT)
            pairs = list(item.items())
            for i in range(len(pairs) - 1, -1, -1):
                key, child = pairs[i]
                stack.append(child)
                stack.append(_Text(("," if i else "") + _encode_string(key if isinstance(key, str) else str(key))
                                   + ":"))
            out.append("{")
        elif isinstance(item, (list, tuple)):
            stack.append(_CLOSE_ARRAY)
            for i in range(len(item) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append(_COMMA)
            out.append("[")
        elif hasattr(item, "item"):  # a numpy scalar (or 0-d array)
            stack.append(item.item())
        else:
            raise TypeError(f"cannot write {type(item).__name__} as JSON")
    return "".join(out).encode("utf-8")
