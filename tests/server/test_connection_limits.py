"""Every listener bounds its connections: header, body and idle timeouts, header size, a connection cap.

Real sockets on free loopback ports, plain and TLS, with timeouts shortened the way the flags
shorten them (kube's defaults are 32 s, 60 s and 90 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import Iterator

import orjson
import pytest
from server.conftest import build_app
from server.test_direct import FILTER, GET_HEALTHZ, post, read_answer
from server.test_protocol import RecordingTransport

from app.server.certs import self_signed_files, server_context
from app.server.chain import HandlerChain
from app.server.httpserver import HttpServer, Listener
from app.server.limits import ConnectionLimits
from app.server.protocol import CoalescingTransport

SHORT = ConnectionLimits(
    read_header_timeout=0.6, idle_timeout=0.8, read_body_timeout=0.7, max_header_bytes=8192, max_connections=8
)


@contextlib.contextmanager
def serving(
    limits: ConnectionLimits = SHORT, tls: bool = False
) -> Iterator[tuple[int, ssl.SSLContext | None]]:
    app = HandlerChain(build_app(max_request_bytes=1 << 20))
    with contextlib.ExitStack() as stack:
        ctx = None
        if tls:
            files = stack.enter_context(self_signed_files(None, "limits", "127.0.0.1"))
            ctx = server_context(files, None)
        server = HttpServer([Listener(app, "127.0.0.1", 0, ctx, limits)], name="limits")
        server.start()
        stack.callback(server.shutdown, 1)
        yield server.port, ctx


def client_tls() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def connect(port: int, tls: bool = False) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return client_tls().wrap_socket(sock) if tls else sock


def closed_after(sock: socket.socket, within: float = 10.0) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock``, and what it sent before."""
    start = time.monotonic()
    sock.settimeout(within)
    received = b""
    with contextlib.suppress(ConnectionResetError, ssl.SSLError):
        while chunk := sock.recv(65536):
            received += chunk
    return time.monotonic() - start, received


def error_of(answer: bytes) -> tuple[bytes, dict[str, str]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], orjson.loads(body)


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(tls: bool) -> None:
    with serving(tls=tls) as (port, _), connect(port, tls) as sock:
        elapsed, received = closed_after(sock)
    assert received == b""  # closed without an answer, as Go's server does
    assert 0.5 < elapsed < 5


def test_a_tls_handshake_never_begun_is_bounded_by_the_header_timeout() -> None:
    with serving(tls=True) as (port, _), connect(port) as raw:
        elapsed, _ = closed_after(raw)
    assert elapsed < 5


def test_half_sent_headers_are_closed_after_the_header_timeout() -> None:
    with serving() as (port, _), connect(port) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nhost: berth\r\n")
        elapsed, received = closed_after(sock)
    assert received == b"" and elapsed < 5


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_a_half_sent_body_is_408_after_the_body_timeout(tls: bool) -> None:
    with serving(tls=tls) as (port, _), connect(port, tls) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nhost: berth\r\ncontent-length: 100\r\n\r\n{")
        elapsed, received = closed_after(sock)
    status, body = error_of(received)
    assert status == b"HTTP/1.1 408 Request Timeout"
    assert "request body not received within 0.7s" in body["Error"]
    assert elapsed < 5


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() -> None:
    with serving() as (port, _), connect(port) as sock, sock.makefile("rb") as stream:
        sock.sendall(GET_HEALTHZ)
        assert read_answer(stream)[2] == b"ok"
        elapsed, received = closed_after(sock)
    assert received == b"" and 0.6 < elapsed < 5


def test_a_keep_alive_connection_that_keeps_asking_stays_open() -> None:
    with serving() as (port, _), connect(port) as sock, sock.makefile("rb") as stream:
        for _ in range(6):  # 1.8 s in all: longer than every timeout
            sock.sendall(post("/filter", FILTER))
            assert orjson.loads(read_answer(stream)[2])["NodeNames"] == ["n2", "n3"]
            time.sleep(0.3)


@pytest.mark.parametrize("split", [False, True], ids=["one-send", "trickled"])
def test_headers_over_max_header_bytes_are_431(split: bool) -> None:
    request = b"GET /healthz HTTP/1.1\r\nhost: berth\r\nx-big: " + b"a" * 20000 + b"\r\n\r\n"
    with serving() as (port, _), connect(port) as sock:
        if split:
            for start in range(0, len(request), 1000):
                with contextlib.suppress(OSError):
                    sock.sendall(request[start : start + 1000])
        else:
            sock.sendall(request)
        _, received = closed_after(sock)
    status, body = error_of(received)
    assert status == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert body == {"Error": "request headers larger than the limit of 8192 bytes"}


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_a_bad_content_length_is_400_even_while_the_client_keeps_sending(tls: bool) -> None:
    with serving(tls=tls) as (port, _), connect(port, tls) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nhost: berth\r\ncontent-length: abc\r\n\r\n")
        # A client that sends its whole (1 MiB) body before it reads: the answer is written at the
        # header and waits in the client's buffer while the server drains the rest. One thread: an
        # SSL socket must not be read and written from two threads at once (OpenSSL's SSL object
        # is not thread-safe; the test crashed the interpreter that way now and then).
        with contextlib.suppress(OSError):
            for _ in range(64):
                sock.sendall(b"x" * 16384)
        _, received = closed_after(sock)
    status, body = error_of(received)
    assert status == b"HTTP/1.1 400 Bad Request"
    assert body == {"Error": "malformed HTTP request: Invalid character in Content-Length"}


def test_a_flood_of_idle_connections_does_not_lock_clients_out() -> None:
    limits = ConnectionLimits(read_header_timeout=60, idle_timeout=60, max_connections=8)
    with serving(limits) as (port, _), contextlib.ExitStack() as stack:
        flood = [stack.enter_context(connect(port)) for _ in range(40)]
        time.sleep(0.2)  # let the server accept them all
        with connect(port) as sock, sock.makefile("rb") as stream:
            sock.sendall(post("/filter", FILTER))
            assert orjson.loads(read_answer(stream)[2])["NodeNames"] == ["n2", "n3"]
        still_open = 0
        for idle in flood:
            idle.setblocking(False)
            try:
                still_open += idle.recv(1) != b""
            except BlockingIOError:
                still_open += 1  # nothing to read and not closed
            except OSError:
                pass
    assert still_open <= limits.max_connections


def test_an_answer_after_an_error_answer_is_dropped_without_a_traceback() -> None:
    # An error answer half-closes the connection; an ASGI task still under way (a pipelined request
    # before the refused one, a 100 Continue) may write after it, and must not raise.

    class HalfClosable(RecordingTransport):
        eof = False

        def write_eof(self) -> None:
            self.eof = True

        def write(self, data: bytes) -> None:
            if self.eof:
                raise RuntimeError("Cannot call write() after write_eof()")  # as asyncio's transports
            super().write(data)

    loop = asyncio.new_event_loop()
    try:
        transport = HalfClosable()
        coalescing = CoalescingTransport(transport, loop)  # type: ignore[arg-type]
        coalescing.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        coalescing.write_eof()
        coalescing.write(b"HTTP/1.1 200 OK\r\n\r\n")
        coalescing.flush()
    finally:
        loop.close()
    assert transport.writes == [b"HTTP/1.1 400 Bad Request\r\n\r\n"]
