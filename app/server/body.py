"""Reading a request body with a size cap, before any of it is decoded.

The body is read from the raw ASGI ``receive`` callable, so the verbs' fast path
(:mod:`app.server.fastpath`) and their FastAPI routes share one reader without building a
Starlette ``Request`` per call.
"""

from __future__ import annotations

from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope

__all__ = ["BodyError", "content_length", "read_body"]


class BodyError(Exception):
    """A body that cannot be read: too large (413) or a bad ``Content-Length`` (400)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def content_length(scope: Scope) -> str | None:
    """The first ``Content-Length`` header of the request, as sent (None without one).

    ASGI servers hand header names over lower-cased; values are decoded as latin-1, as Starlette's
    ``Headers`` does.
    """
    for name, value in scope["headers"]:
        if name == b"content-length":
            return str(value.decode("latin-1"))
    return None


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The whole body of the request in ``scope``, refusing more than ``limit`` bytes.

    A declared ``Content-Length`` over the limit is refused before reading anything; a body
    without one (chunked) is counted as it streams and refused as soon as it passes the limit.
    A client that goes away mid-body raises Starlette's ``ClientDisconnect``, as
    ``Request.stream()`` does.
    """
    declared = content_length(scope)
    if declared is not None:
        try:
            length = int(declared)
        except ValueError:
            raise BodyError(400, f"invalid Content-Length header {declared!r}") from None
        if length > limit:
            raise BodyError(413, _too_large(limit))
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "http.request":
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    raise BodyError(413, _too_large(limit))
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        elif kind == "http.disconnect":
            raise ClientDisconnect()
    if len(chunks) == 1:
        return chunks[0]
    return b"".join(chunks)


def _too_large(limit: int) -> str:
    return f"request body larger than the limit of {limit} bytes"
