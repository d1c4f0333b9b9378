"""The outer layer of `cky serve`: which requests reach the app at all, and what any failure looks like.

A server on 127.0.0.1 is reachable from every web page the user opens: a page may send it requests
(cross-site, without a preflight for a "simple" request), and DNS rebinding can make a foreign name
resolve to 127.0.0.1 so that the page may read the answers too. So every request must name an
allowed host in its `Host` header (as Starlette's TrustedHostMiddleware checks; else 400), and a
request that carries an `Origin` (browsers send one with every cross-site request, and with
same-origin POSTs) must come from a page of an allowed host (else 403). Any exception an endpoint
lets through is answered as a one-line JSON 500, never a traceback page, and the server goes on.
"""
from __future__ import annotations

import logging
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import Response

from .jsonio import encode

log = logging.getLogger("cky.serve")

ANY_HOST = "*"


def json_error(status: int, message: str, headers: dict | None = None) -> Response:
    """{"error": message} with `status`: how every refused or failed request is answered."""
    return Response(encode({"error": message}), status_code=status, media_type="application/json",
                    headers=headers)


def _host_name(name: str) -> str:
    """A host name as compared: lowercase, an IPv6 address without its brackets."""
    name = name.strip().lower()
    return name[1:-1] if name.startswith("[") and name.endswith("]") else name


def host_of_header(value: str | None) -> str | None:
    """The host name of a `Host` header ("name", "name:port", "[v6]:port"), or None if it is malformed."""
    if not value:
        return None
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[1:end], value[end + 1:]
        if end < 0 or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
    else:
        name, colon, port = value.partition(":")
        if colon and not port.isdigit():
            return None
    return _host_name(name) or None


def host_of_origin(value: str) -> str | None:
    """The host name of an `Origin` header ("scheme://host[:port]"), or None ("null", or malformed)."""
    try:
        parts = urlsplit(value.strip())
        return parts.hostname if parts.scheme in ("http", "https") else None
    except ValueError:
        return None


class RequestGuard:
    """ASGI middleware: the Host and Origin checks and the catch-all of the module docstring.
    `allowed_hosts`: host names (any port); "*" lets any host through."""

    def __init__(self, app, allowed_hosts):
        self.app = app
        self.allowed_hosts = frozenset(_host_name(host) for host in allowed_hosts)

    def allows(self, host: str | None) -> bool:
        return ANY_HOST in self.allowed_hosts or (host is not None and host in self.allowed_hosts)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        if not self.allows(host_of_header(host)):
            await json_error(400, f"this server does not answer to the host {(host or '')[:100]!r}: it answers to "
                                  f"{', '.join(sorted(self.allowed_hosts))} (cky serve --allowed-host)")(
                scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None and not self.allows(host_of_origin(origin)):
            await json_error(403, f"requests from pages of {origin[:100]!r} are refused: only pages of "
                                  f"{', '.join(sorted(self.allowed_hosts))} may call this server "
                                  f"(cky serve --allowed-host)")(scope, receive, send)
            return

        started = False

        async def watched_send(message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except Exception as error:
            log.exception("%s %s failed", scope.get("method"), scope.get("path"))
            if started:  # half an answer is out: the server closes the connection
                raise
            await json_error(500, f"internal error ({type(error).__name__}); the server goes on serving")(
                scope, receive, send)
