"""The verbs under generated bodies, over real sockets: never a 5xx, never a 200 carrying an internal
error, never a traceback, and the same answer to the same body whatever came before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fuzz.bookkeeping import COUNTS, Tracebacks
from fuzz.strategies import verb_bodies
from hypothesis import given
from server.conftest import build_app
from server.test_direct import exchange, post, serving

from app.server.chain import HandlerChain


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with serving(HandlerChain(build_app(max_request_bytes=1 << 20))) as port:
        yield port


def call(port: int, path: str, body: bytes) -> tuple[bytes, Any]:
    """One verb call; its status line and decoded answer, checked against the invariants."""
    ((status, _, answer),) = exchange(port, post(path, body), 1)
    COUNTS["requests"] += 1
    code = int(status.split()[1])
    COUNTS[f"{code // 100}xx"] += 1
    assert code < 500, (path, body[:300], status, answer[:300])
    decoded = orjson.loads(answer)
    if isinstance(decoded, dict) and decoded.get("Error"):
        COUNTS[f"{code} with Error"] += 1
        assert "internal" not in decoded["Error"], (path, body[:300], decoded["Error"])
    if code != 200:
        assert code in (400, 413) and isinstance(decoded, dict) and decoded["Error"], (status, decoded)
    return status, decoded


@given(verb_bodies(), verb_bodies())
def test_verbs_answer_cleanly_and_independently(
    port: int, tracebacks: Tracebacks, first: tuple[str, bytes], between: tuple[str, bytes]
) -> None:
    answer = call(port, *first)
    call(port, *between)
    assert call(port, *first) == answer  # no memo of an earlier request changes the answer
    tracebacks.check()
