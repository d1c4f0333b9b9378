"""The Starlette app of `cky serve`: the viewer page (static/) and `POST /translate`.

The decoder is loaded once, before the app is made. Decoding runs in a worker thread
(the event loop keeps answering), one sentence at a time: a Decoder's chart is reused
between searches, so two searches must not run on it at once.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import threading

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..data.tokenize import tokenize
from ..errors import RequestError
from .limits import DEFAULT_MAX_KBEST, DEFAULT_MAX_TOKENS
from .explain import json_safe, translation_record

log = logging.getLogger("cky.serve")

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
# Python frames per word of a sentence that the JSON of its derivation needs: every unknown word is a
# glue level, and explain's walks and json's encoder recurse through a level's dict and its children
# list (measured: 1,000 unknown words need 3,500-4,500; 5,000 words at 5 per word answer).
RECURSION_PER_WORD = 5


def allow_recursion_for(max_tokens: int) -> None:
    """Raise the interpreter's recursion limit so that a sentence of max_tokens words can be answered."""
    needed = RECURSION_PER_WORD * max_tokens + 1000
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def parse_request(body: bytes, max_tokens: int, max_kbest: int, tokenize_as: str | None = None) -> tuple[str, int]:
    """(sentence, k) from a /translate request body, or RequestError saying what is wrong; the sentence
    tokenized as `tokenize_as` text if given."""
    try:
        request = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RequestError(f"the body is not valid JSON: {error}", 400) from None
    if not isinstance(request, dict):
        raise RequestError('the body must be a JSON object like {"sentence": "...", "kbest": 5}', 400)
    if "sentence" not in request:
        raise RequestError('the request has no "sentence"')
    sentence = request["sentence"]
    if not isinstance(sentence, str):
        raise RequestError(f'"sentence" must be a string, not {type(sentence).__name__}')
    if tokenize_as:
        sentence = " ".join(tokenize(sentence, tokenize_as))
    n_words = len(sentence.split())
    if n_words == 0:
        raise RequestError('"sentence" is empty: give at least one word')
    if n_words > max_tokens:
        raise RequestError(f'"sentence" has {n_words} words; this server takes at most {max_tokens} '
                         f"(cky serve --max-tokens)", 413)
    k = request.get("kbest", 1)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_kbest:
        raise RequestError(f'"kbest" must be a whole number from 1 to {max_kbest}, not {k!r}')
    return sentence, k


def create_app(decoder, *, max_tokens: int = DEFAULT_MAX_TOKENS, max_kbest: int = DEFAULT_MAX_KBEST,
               tokenize_as: str | None = None) -> Starlette:
    """The viewer and API over a loaded `Decoder`; with `tokenize_as` ("es", "en") each sentence is
    tokenized and lowercased as the corpus was before it is decoded (the answer's `source`)."""
    lock = threading.Lock()
    allow_recursion_for(max_tokens)

    def decode(sentence: str, k: int) -> dict:
        with lock:
            translations = decoder.kbest(sentence, k) if k > 1 else [decoder.translate(sentence)]
            record = translation_record(decoder, translations[0])
            record["kbest"] = [json_safe({"text": t.text, "score": float(t.score), "features": dict(t.features),
                                          "tree": t.tree}) for t in translations]
        return record

    async def translate(request: Request) -> JSONResponse:
        try:
            sentence, k = parse_request(await request.body(), max_tokens, max_kbest, tokenize_as)
        except RequestError as error:
            return JSONResponse({"error": str(error)}, status_code=error.status)
        try:
            return JSONResponse(await run_in_threadpool(decode, sentence, k))
        except Exception as error:  # a failing sentence must not take the server down
            log.exception("decoding failed: %r", sentence[:200])
            return JSONResponse({"error": f"decoding failed: {type(error).__name__}: {error}"}, status_code=500)

    async def index(request: Request) -> FileResponse:
        return FileResponse(os.path.join(STATIC_DIR, "index.html"))

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "decoder": repr(decoder), "max_tokens": max_tokens,
                             "max_kbest": max_kbest, "tokenize": tokenize_as})

    return Starlette(routes=[
        Route("/", index),
        Route("/health", health),
        Route("/translate", translate, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ])
