"""HTTP framing under generated requests (methods, targets, versions, headers, lengths, chunking),
plain and TLS: every answer under 500, every connection closed in bounded time, no traceback."""

from __future__ import annotations

import contextlib
import re
import socket
import ssl
import time
from collections.abc import Iterator

import pytest
from fuzz.bookkeeping import COUNTS, Tracebacks
from fuzz.strategies import raw_requests
from hypothesis import given, settings
from server.conftest import build_app

from app.server.certs import self_signed_files, server_context
from app.server.chain import HandlerChain
from app.server.httpserver import HttpServer, Listener
from app.server.limits import ConnectionLimits

# The server's threads use the random module (request IDs) while hypothesis draws, which it
# mistakes for a strategy using it.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")

LIMITS = ConnectionLimits(
    read_header_timeout=1.0, idle_timeout=0.3, read_body_timeout=1.0, max_header_bytes=4096
)
STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")


@pytest.fixture(scope="module")
def ports() -> Iterator[tuple[int, int]]:
    app = HandlerChain(build_app(max_request_bytes=1 << 16))
    with self_signed_files(None, "fuzz", "127.0.0.1") as files:
        ctx = server_context(files, None)
    server = HttpServer(
        [Listener(app, "127.0.0.1", 0, None, LIMITS), Listener(app, "127.0.0.1", 0, ctx, LIMITS)], name="fuzz"
    )
    server.start()
    try:
        yield server.ports[0], server.ports[1]
    finally:
        server.shutdown(grace=1)


def exchange(port: int, request: bytes, tls: bool) -> tuple[bytes, float]:
    """Send ``request``; everything received until the server closes (or 6 s), and the seconds taken."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=6)
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        sock = ctx.wrap_socket(sock)
    start = time.monotonic()
    received = b""
    with sock, contextlib.suppress(ConnectionResetError, ssl.SSLError, BrokenPipeError, TimeoutError):
        sock.sendall(request)
        while chunk := sock.recv(65536):
            received += chunk
    return received, time.monotonic() - start


@given(raw_requests(), raw_requests())
# Each example waits for the server to close the connection (up to the 0.3 s idle timeout).
@settings(max_examples=min(settings.default.max_examples, 600))
@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_framing_is_answered_under_500_and_connections_end(
    ports: tuple[int, int], tracebacks: Tracebacks, tls: bool, first: bytes, second: bytes
) -> None:
    received, took = exchange(ports[1] if tls else ports[0], first + second, tls)
    COUNTS["requests"] += 2
    statuses = [int(code) for code in STATUS.findall(received)]
    for code in statuses:
        COUNTS[f"{code // 100}xx"] += 1
    assert all(code < 500 for code in statuses), (first, second, received[:500])
    assert took < 5  # idle, header and body timeouts end every connection
    tracebacks.check()
