"""Verb calls answered inline by the protocol: the same bytes as through ASGI, in order, logged and counted."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import uvicorn
from server.chainkit import LogCapture, capture_logs
from server.conftest import build_app
from server.test_fastpath import metric
from server.test_protocol import RecordingTransport
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from app.server.authn import Authenticator
from app.server.chain import HandlerChain
from app.server.fastpath import ExtenderApp
from app.server.httpserver import HttpServer, Listener
from app.server.paths import PathSet
from app.server.protocol import BerthHttpProtocol
from builders import pod_dict

POD = pod_dict("web", requests=[{"cpu": "1", "memory": "1Gi"}])
FILTER = orjson.dumps({"Pod": POD, "NodeNames": ["n1", "n2", "n3"]})
PRIORITIZE = orjson.dumps({"Pod": POD, "NodeNames": ["n2", "n3"]})

Answer = tuple[bytes, list[tuple[bytes, bytes]], bytes]


def post(path: str, body: bytes, *headers: str, version: str = "1.1") -> bytes:
    """A raw POST with a Content-Length (unless a header names Transfer-Encoding)."""
    lines = [f"POST {path} HTTP/{version}", "host: berth", "user-agent: Go-http-client/1.1", *headers]
    if not any(h.lower().startswith("transfer-encoding") for h in headers):
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


GET_HEALTHZ = b"GET /healthz HTTP/1.1\r\nhost: berth\r\n\r\n"


def read_answer(stream: Any) -> Answer:
    """One answer from a buffered socket file: status line, headers (without ``date``), body."""
    status = stream.readline().rstrip(b"\r\n")
    while status.startswith(b"HTTP/1.1 100"):  # an interim 100 Continue, then the answer
        assert stream.readline() == b"\r\n"
        status = stream.readline().rstrip(b"\r\n")
    headers = []
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.rstrip(b"\r\n").partition(b": ")
        if name != b"date":
            headers.append((name, value))
    length = int(dict(headers).get(b"content-length", b"0"))
    return status, headers, stream.read(length)


class AsgiOnly:
    """The chain as a plain ASGI app: the protocol finds no direct routes and runs every request as a task."""

    def __init__(self, chain: HandlerChain) -> None:
        self.chain = chain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.chain(scope, receive, send)


@contextlib.contextmanager
def serving(app: Any) -> Iterator[int]:
    server = HttpServer([Listener(app, "127.0.0.1", 0)], name="test")
    server.start()
    try:
        yield server.port
    finally:
        server.shutdown(grace=1)


@contextlib.contextmanager
def connection(port: int) -> Iterator[tuple[socket.socket, Any]]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock, sock.makefile("rb") as stream:
        yield sock, stream


def exchange(port: int, request: bytes, answers: int) -> list[Answer]:
    """Send ``request`` (one or more requests) at once; read ``answers`` answers."""
    with connection(port) as (sock, stream):
        sock.sendall(request)
        return [read_answer(stream) for _ in range(answers)]


@pytest.fixture
def direct() -> Iterator[int]:
    """A server whose verb calls take the direct path."""
    with serving(HandlerChain(build_app(max_request_bytes=4096))) as port:
        yield port


def test_verb_calls_are_answered_without_the_asgi_app(direct: int, monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_asgi(*_: object) -> None:
        raise AssertionError("served through ASGI")

    monkeypatch.setattr(ExtenderApp, "_serve", no_asgi)
    ((status, headers, body),) = exchange(direct, post("/filter", FILTER), 1)
    assert status == b"HTTP/1.1 200 OK"
    assert headers == [
        (b"content-length", str(len(body)).encode()),
        (b"content-type", b"application/json"),
        (b"cache-control", b"no-store"),
    ]
    assert orjson.loads(body)["NodeNames"] == ["n2", "n3"]  # n1 is too busy for 1 CPU


CASES = {
    "filter": post("/filter", FILTER),
    "prioritize": post("/prioritize", PRIORITIZE),
    "query string": post("/filter?x=1", FILTER),
    "connection close": post("/filter", FILTER, "connection: close"),
    "bad json": post("/filter", b"{not json"),
    "not extender args": post("/prioritize", b'{"NodeNames": 3}'),
    "preempt": post("/preempt", orjson.dumps({"Pod": POD, "NodeNameToMetaVictims": {"n1": {"Pods": []}}})),
    # Not taken directly, answered the same through ASGI:
    "too large": post("/filter", b"x" * 5000),
    "bad content-length": b"POST /filter HTTP/1.1\r\nhost: berth\r\ncontent-length: two\r\n\r\n{}",
    "chunked": post("/filter", chunked(FILTER), "transfer-encoding: chunked"),
    "expect 100-continue": post("/filter", FILTER, "expect: 100-continue"),
    "http/1.0": post("/filter", FILTER, version="1.0"),
    "proxied": post("/filter", FILTER, "x-forwarded-for: 10.0.0.9"),
    "bind": post("/bind", orjson.dumps({"PodName": "web"})),
    "get": b"GET /filter HTTP/1.1\r\nhost: berth\r\n\r\n",
}


@pytest.mark.parametrize("request_bytes", CASES.values(), ids=CASES.keys())
def test_direct_answers_are_byte_for_byte_the_asgi_answers(direct: int, request_bytes: bytes) -> None:
    with serving(AsgiOnly(HandlerChain(build_app(max_request_bytes=4096)))) as asgi:
        expected = exchange(asgi, request_bytes, 1)
    assert exchange(direct, request_bytes, 1) == expected


def test_pipelined_calls_are_answered_in_order(direct: int) -> None:
    requests = GET_HEALTHZ + post("/filter", FILTER) + post("/prioritize", PRIORITIZE) + GET_HEALTHZ
    health, filtered, prioritized, health_again = exchange(direct, requests, 4)
    assert health[2] == health_again[2] == b"ok"
    assert orjson.loads(filtered[2])["NodeNames"] == ["n2", "n3"]
    assert [p["Host"] for p in orjson.loads(prioritized[2])] == ["n2", "n3"]


def test_a_body_arriving_in_pieces_is_answered_once_complete(direct: int) -> None:
    request = post("/filter", FILTER)
    with connection(direct) as (sock, stream):
        for start in range(0, len(request), 100):
            sock.sendall(request[start : start + 100])
            time.sleep(0.01)
        first = read_answer(stream)
        sock.sendall(request)  # and the connection is kept for the next call
        assert read_answer(stream) == first
    assert orjson.loads(first[2])["NodeNames"] == ["n2", "n3"]


def test_a_crashing_verb_is_a_logged_500_and_the_connection_serves_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = build_app()
    assert isinstance(app, ExtenderApp)

    def boom(_: bytes) -> tuple[int, bytes]:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(app.fast_verbs["/filter"], "answer", boom)
    logs = capture_logs(3)
    capture = next(logs)
    try:
        with serving(HandlerChain(app)) as port:
            (status, headers, body), healthy = exchange(port, post("/filter", FILTER) + GET_HEALTHZ, 2)
    finally:
        logs.close()
    assert status == b"HTTP/1.1 500 Internal Server Error"
    (panic,) = capture.messages("Observed a panic")
    assert panic["err"] == "RuntimeError: kaboom" and "boom" in panic["stacktrace"]
    assert orjson.loads(body) == {"Error": f"internal server error (request ID {panic['requestID']})"}
    assert (b"cache-control", b"no-store") in headers
    assert healthy[2] == b"ok"


@pytest.fixture
def v3() -> Iterator[LogCapture]:
    yield from capture_logs(3)


def test_direct_calls_are_logged_as_any_request(direct: int, v3: LogCapture) -> None:
    exchange(direct, post("/filter?trace=1", FILTER), 1)
    deadline = time.monotonic() + 10
    while not (lines := [kv for kv in v3.messages("HTTP") if kv["URI"] == "/filter?trace=1"]):
        assert time.monotonic() < deadline, "no HTTP log line"
        time.sleep(0.01)  # the line is written once the answer is out, by the server's thread
    (line,) = lines
    assert line["verb"] == "POST" and line["resp"] == 200
    assert line["userAgent"] == "Go-http-client/1.1" and line["srcIP"].startswith("127.0.0.1:")
    assert len(line["requestID"]) == 16


def test_direct_calls_are_counted_in_the_http_and_verb_metrics(direct: int) -> None:
    def metrics() -> str:
        return exchange(direct, b"GET /metrics HTTP/1.1\r\nhost: berth\r\n\r\n", 1)[0][2].decode()

    http = 'http_requests_total{handler="/prioritize",method="POST",status="2xx"}'
    verb = 'berth_extender_requests_total{result="success",verb="prioritize"}'
    bad = 'berth_extender_requests_total{result="bad_request",verb="prioritize"}'
    before = metrics()
    exchange(direct, post("/prioritize", PRIORITIZE) * 2 + post("/prioritize", b"[]"), 3)
    after = metrics()
    assert metric(after, http) == metric(before, http) + 2
    assert metric(after, verb) == metric(before, verb) + 2
    assert metric(after, bad) == metric(before, bad) + 1


def test_only_an_unauthenticated_chain_answers_directly() -> None:
    app = build_app()
    plain = HandlerChain(app)
    assert plain.direct_route("POST", "/filter") is plain.direct_route("POST", "/filter") is not None
    assert plain.direct_route("GET", "/filter") is None
    assert plain.direct_route("POST", "/bind") is None  # it waits on the API server: ASGI
    authenticated = HandlerChain(
        app, authenticator=Authenticator(tokens=None, anonymous=True, anonymous_paths=PathSet([]))
    )
    assert authenticated.direct_route("POST", "/filter") is None


def test_shutdown_answers_a_call_still_coming_in_then_closes() -> None:
    server = HttpServer([Listener(HandlerChain(build_app()), "127.0.0.1", 0)], name="test")
    server.start()
    request = post("/filter", FILTER)
    with connection(server.port) as (sock, stream):
        sock.sendall(request[:-10])
        time.sleep(0.1)
        stopping = threading.Thread(target=server.shutdown, kwargs={"grace": 10})
        stopping.start()
        time.sleep(0.3)
        sock.sendall(request[-10:])
        status, headers, body = read_answer(stream)
        assert stream.read() == b""  # closed after the answer
    stopping.join(10)
    assert status == b"HTTP/1.1 200 OK" and (b"connection", b"close") in headers
    assert orjson.loads(body)["NodeNames"] == ["n2", "n3"]
    assert server.wait(0)


def test_the_follow_up_runs_after_the_answer_is_written() -> None:
    app = build_app()
    assert isinstance(app, ExtenderApp)
    chain = HandlerChain(app)
    inner = RecordingTransport()
    written_when_run: list[int] = []
    app.fast_verbs["/filter"].then = lambda: written_when_run.append(len(inner.writes))  # type: ignore[method-assign]

    async def scenario() -> None:
        config = uvicorn.Config(chain, log_config=None)
        config.load()
        protocol = BerthHttpProtocol.serving(chain)(config=config, server_state=ServerState(), app_state={})
        protocol.connection_made(inner)  # type: ignore[arg-type]
        protocol.data_received(post("/filter", FILTER))
        assert len(inner.writes) == 1  # answered inside data_received, before the follow-up
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert written_when_run == [1]
