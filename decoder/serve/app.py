"""The Starlette app of `cky serve`: the viewer page (static/) and `POST /translate`.

The decoder is loaded once, before the app is made. What a request may be, checked in this order
(each refusal is {"error": message} on one line, and the server goes on serving):

- its `Host` names an allowed host (400), its `Origin`, if any, too (403): decoder.serve.guard;
- a POST is `Content-Type: application/json` (415: a cross-site page can send text/plain without
  asking the server first, but not JSON);
- the body has at most `max_body_bytes` bytes (413: by its Content-Length, and counted as it arrives);
- it is UTF-8 JSON nested at most MAX_JSON_DEPTH levels (400; checked by a scan that does not recurse,
  before json.loads, which does), an object with a string "sentence" of at most `max_chars`
  characters (413), holding no lone surrogate (400), of at most `max_tokens` words (413), and a
  "kbest" from 1 to `max_kbest` (422);
- fewer than `max_queue` sentences are waiting or decoding (else 503, with Retry-After).

Decoding runs in a worker thread, so the event loop keeps answering; one sentence at a time (a
Decoder's chart is reused between searches), the others waiting their turn on the event loop, not
in threads. A request whose client has gone away by its turn is dropped without decoding.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..data.tokenize import tokenize
from ..errors import InputError, RequestError
from ..settings import MAX_KBEST
from .explain import translation_record
from .guard import RequestGuard, json_error
from .jsonio import encode, nesting_depth
from .limits import (DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CHARS, DEFAULT_MAX_KBEST, DEFAULT_MAX_QUEUE,
                     DEFAULT_MAX_TOKENS, LOCAL_HOSTS)

log = logging.getLogger("cky.serve")

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
# Nesting of a request body: {"sentence": "...", "kbest": 5} is one level; a second lets a list or
# object given where a string belongs be named as such. Anything deeper is refused unparsed.
MAX_JSON_DEPTH = 2
# nginx's code for "the client closed the request": logged for a request dropped unanswered.
CLIENT_GONE = 499
# An absolute path in a message (its directories are dropped: answers name files, never where they are).
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/-])/(?:[^\s/'\"]+/)+(?=[^\s/'\"])")


def without_paths(message: str) -> str:
    """`message` with each absolute file path cut to its last component."""
    return _ABSOLUTE_PATH.sub("", message)


def parse_request(body: bytes, max_tokens: int, max_kbest: int, tokenize_as: str | None = None,
                  max_chars: int = DEFAULT_MAX_CHARS, tokens_of=None) -> tuple[str, int]:
    """(sentence, k) from a /translate request body, or RequestError saying what is wrong; the sentence
    tokenized as `tokenize_as` text if given. `tokens_of(sentence)`: the tokens a raw sentence is
    decoded as (words are counted on them), if the decoder takes raw text."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestError(f"the body is not valid JSON: it is not UTF-8 (byte {error.start})", 400) from None
    if nesting_depth(text, stop_above=MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise RequestError(f"the body nests arrays or objects more than {MAX_JSON_DEPTH} levels deep; "
                           'the API takes {"sentence": "...", "kbest": 5}', 400)
    try:
        request = json.loads(text)
    except (ValueError, RecursionError) as error:  # JSONDecodeError, or an integer of too many digits
        raise RequestError(f"the body is not valid JSON: {error}", 400) from None
    if not isinstance(request, dict):
        raise RequestError('the body must be a JSON object like {"sentence": "...", "kbest": 5}', 400)
    if "sentence" not in request:
        raise RequestError('the request has no "sentence"')
    sentence = request["sentence"]
    if not isinstance(sentence, str):
        raise RequestError(f'"sentence" must be a string, not {type(sentence).__name__}')
    if len(sentence) > max_chars:
        raise RequestError(f'"sentence" has {len(sentence)} characters; this server takes at most {max_chars} '
                           "(cky serve --max-chars)", 413)
    try:
        sentence.encode("utf-8")
    except UnicodeEncodeError as error:  # "\ud800" in JSON: a string, but not text
        raise RequestError(f'"sentence" holds a lone surrogate (U+{ord(sentence[error.start]):04X} at character '
                           f"{error.start}), which is not text", 400) from None
    if tokenize_as:
        sentence = " ".join(tokenize(sentence, tokenize_as))
    n_words = len(tokens_of(sentence) if tokens_of is not None else sentence.split())
    if n_words == 0:
        raise RequestError('"sentence" is empty: give at least one word')
    if n_words > max_tokens:
        raise RequestError(f'"sentence" has {n_words} words; this server takes at most {max_tokens} '
                           f"(cky serve --max-tokens)", 413)
    k = request.get("kbest", 1)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_kbest:
        raise RequestError(f'"kbest" must be a whole number from 1 to {max_kbest}, not {k!r}')
    return sentence, k


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type is application/json (parameters such as charset aside)."""
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() == "application/json"


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, or RequestError (413) as soon as it is known to exceed `limit` bytes: by its
    Content-Length, or by the bytes received (a chunked body has none)."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.strip().isdigit():
            raise RequestError(f"the Content-Length {length[:30]!r} is not a number of bytes", 400)
        if int(length) > limit:
            raise RequestError(f"the body has {int(length)} bytes; this server takes at most {limit} "
                               "(cky serve --max-body-bytes)", 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(f"the body has more than {limit} bytes; this server takes at most {limit} "
                               "(cky serve --max-body-bytes)", 413)
        chunks.append(chunk)
    return b"".join(chunks)


class DecodeQueue:
    """The sentences a server has accepted: at most `size` pending (one decoding, the others waiting
    their turn in arrival order); `full()` says a request must be refused rather than queued."""

    def __init__(self, size: int):
        self.size = size
        self.pending = 0
        self._loop = self._lock = None

    def full(self) -> bool:
        return self.pending >= self.size

    @contextlib.asynccontextmanager
    async def turn(self):
        """Wait (on the event loop) until no other sentence is decoding; counted as pending meanwhile."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # an asyncio lock belongs to one loop (each TestClient runs its own)
            self._loop, self._lock = loop, asyncio.Lock()
        self.pending += 1
        try:
            async with self._lock:
                yield
        finally:
            self.pending -= 1


def file_name(path) -> str | None:
    """The last component of a path: what the API says of a model file (never where it is)."""
    return os.path.basename(os.path.normpath(str(path))) if path else None


def create_app(decoder, *, max_tokens: int = DEFAULT_MAX_TOKENS, max_kbest: int = DEFAULT_MAX_KBEST,
               tokenize_as: str | None = None, max_chars: int = DEFAULT_MAX_CHARS,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, max_queue: int = DEFAULT_MAX_QUEUE,
               allowed_hosts=()) -> Starlette:
    """The viewer and API over a loaded `Decoder`. A decoder whose config records its languages takes
    raw text and answers detokenized, recased text (decoder.text); the answer's `tokens` and
    `source_tokens` are the tokenized output and source, `unknown_words` the source words passed
    through untranslated. Otherwise, with `tokenize_as` ("es", "en") each sentence is tokenized and
    lowercased as the corpus was before it is decoded (the answer's `source`). Requests must name
    one of `allowed_hosts` or LOCAL_HOSTS in their Host (and Origin) header. A `max_kbest`
    above decoder.settings.MAX_KBEST (more than any k-best list may hold) is a ValueError."""
    if max_kbest > MAX_KBEST:
        raise ValueError(f"max_kbest = {max_kbest} is more than {MAX_KBEST}, the most derivations a k-best list "
                         "may hold (decoder.settings.MAX_KBEST)")
    queue = DecodeQueue(max_queue)
    text = getattr(decoder, "text", None)
    raw = text is not None and text.raw and not tokenize_as
    tokens_of = (lambda sentence: text.source_tokens(sentence)[0]) if raw else None
    given = {"tokenized": True} if tokenize_as and text is not None else {}

    def decode(sentence: str, k: int) -> bytes:
        translations = decoder.kbest(sentence, k, **given) if k > 1 else [decoder.translate(sentence, **given)]
        if getattr(translations[0], "error", None):
            raise RuntimeError(translations[0].error)
        best = translations[0]
        record = translation_record(decoder, best)
        record.update(tokens=best.tokens, source_tokens=best.source_tokens, unknown_words=list(best.unknown_words))
        record["kbest"] = [{"text": t.text, "tokens": t.tokens, "score": float(t.score), "features": dict(t.features),
                            "tree": t.tree} for t in translations]
        return encode(record)

    async def translate(request: Request) -> Response:
        if not is_json(request.headers.get("content-type")):
            return json_error(415, 'POST /translate takes JSON: send the header "Content-Type: application/json"')
        try:
            sentence, k = parse_request(await read_body(request, max_body_bytes), max_tokens, max_kbest,
                                        tokenize_as, max_chars, tokens_of)
        except RequestError as error:
            return json_error(error.status, str(error))
        except ClientDisconnect:
            return Response(status_code=CLIENT_GONE)
        if queue.full():
            return json_error(503, f"the server is busy: {queue.pending} sentences are waiting or decoding, the most "
                                   "it takes (cky serve --max-queue); try again later", headers={"Retry-After": "1"})
        async with queue.turn():
            if await request.is_disconnected():
                log.info("dropped a sentence whose client went away before its turn")
                return Response(status_code=CLIENT_GONE)
            try:
                answer = await run_in_threadpool(decode, sentence, k)
            except InputError as error:  # a sentence the model cannot take (a word holding NUL): the client's
                return json_error(400, f"bad sentence: {without_paths(str(error))}")
            except Exception as error:  # a failing sentence must not take the server down
                log.exception("decoding failed: %r", sentence[:200])
                return json_error(500, f"decoding failed: {type(error).__name__}: {without_paths(str(error))}")
        return Response(answer, media_type="application/json")

    async def index(request: Request) -> FileResponse:
        return FileResponse(os.path.join(STATIC_DIR, "index.html"))

    async def health(request: Request) -> Response:
        return Response(encode({
            "status": "ok", "store": file_name(getattr(decoder.store, "path", None)),
            "lm": file_name(getattr(decoder.lm, "path", None)), "tokenize": tokenize_as, "raw_text": raw,
            "max_tokens": max_tokens, "max_kbest": max_kbest, "max_chars": max_chars,
            "max_body_bytes": max_body_bytes, "max_queue": max_queue, "pending": queue.pending,
        }), media_type="application/json")

    async def http_error(request: Request, error: HTTPException) -> Response:  # 404, 405: JSON as the rest
        return json_error(error.status_code, error.detail, headers=error.headers)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/health", health),
            Route("/translate", translate, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        middleware=[Middleware(RequestGuard, allowed_hosts=(*LOCAL_HOSTS, *allowed_hosts))],
        exception_handlers={HTTPException: http_error},
    )
