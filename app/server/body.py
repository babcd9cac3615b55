"""Reading a request body with a size cap, before any of it is decoded."""

from __future__ import annotations

from starlette.requests import Request

__all__ = ["BodyError", "read_body"]


class BodyError(Exception):
    """A body that cannot be read: too large (413) or a bad ``Content-Length`` (400)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, refusing more than ``limit`` bytes.

    A declared ``Content-Length`` over the limit is refused before reading anything; a body
    without one (chunked) is counted as it streams and refused as soon as it passes the limit.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            length = int(declared)
        except ValueError:
            raise BodyError(400, f"invalid Content-Length header {declared!r}") from None
        if length > limit:
            raise BodyError(413, _too_large(limit))
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyError(413, _too_large(limit))
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _too_large(limit: int) -> str:
    return f"request body larger than the limit of {limit} bytes"
