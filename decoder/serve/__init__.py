"""`cky serve`: a derivation viewer in the browser, and the JSON API behind it.

    cky serve --config model/config.toml [--port 8000] [--host 127.0.0.1] [--max-tokens 200] [--allowed-host NAME]
    python -m decoder.serve --config model/config.toml          # the same, before `cky` knows it

The page (static/) shows a sentence's translation, its target tree, the rules of its
derivation (each source rule with its binarization, features and score), the k-best
list and heat maps of the items and edges per chart cell. It calls the API:

    POST /translate  {"sentence": "en el principio", "kbest": 5}
      -> {"source", "text", "tree", "score", "features", "derivation", "stats", "kbest", "rules"}

`stats` is what `cky translate --stats-out` writes for the sentence (search statistics,
including `chart_cells`: [start, length, items, edges] per chart cell); `derivation` is
Translation.derivation with each rule's binary and source rule spelled out (decoder.serve.explain).
Requests are checked before anything is decoded (decoder.serve.app: the Host and Origin, the
Content-Type, the body's size and nesting, the sentence's characters and words, the queue); a
refused or failing request gets a 4xx or 5xx with {"error": message} and the server keeps serving.
"""

from .limits import (DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CHARS, DEFAULT_MAX_KBEST, DEFAULT_MAX_QUEUE,
                     DEFAULT_MAX_TOKENS, LOCAL_HOSTS)

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_CHARS", "DEFAULT_MAX_KBEST", "DEFAULT_MAX_QUEUE",
           "DEFAULT_MAX_TOKENS", "LOCAL_HOSTS", "create_app"]


def __getattr__(name):
    # The web framework is an optional extra: `cky` builds its parser (decoder.cli.serve) without it.
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
