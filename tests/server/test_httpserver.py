"""HttpServer on real sockets: ports, TLS client certificates, one loop for all listeners, two-phase shutdown."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from server.pki import CA, client_context, request

from app.server.authn import Authenticator
from app.server.authz import Authorizer
from app.server.certs import self_signed_files, server_context
from app.server.chain import USER, HandlerChain
from app.server.health import ShutdownCheck
from app.server.httpserver import HttpServer, Listener, ListenError
from app.server.paths import PathSet

ALLOW = PathSet(["/healthz"])


def make_app(started: threading.Event | None = None) -> FastAPI:
    app = FastAPI()

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response("ok")

    @app.get("/whoami")
    async def whoami(request: Request) -> Response:
        user = request.scope.get(USER)
        body = {
            "user": user and user.name,
            "groups": user and list(user.groups),
            "thread": threading.get_ident(),
        }
        return Response(json.dumps(body), media_type="application/json")

    @app.get("/slow")
    async def slow(seconds: float) -> Response:
        if started is not None:
            started.set()
        await asyncio.sleep(seconds)
        return Response("done")

    return app


def get(url: str, ctx: ssl.SSLContext | None = None, timeout: float = 10) -> tuple[int, Any]:
    return request(url, ctx=ctx, timeout=timeout)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    d = tmp_path_factory.mktemp("pki")
    clients, other = CA.create(d, "clients"), CA.create(d, "other")
    return {
        "ca": clients.cert_file,
        "alice": clients.issue(d, "alice", ("team-a", "team-b")),
        "mallory": other.issue(d, "alice"),
    }


@pytest.fixture(scope="module")
def https(pki: dict[str, object]) -> Iterator[HttpServer]:
    """An HTTPS listener with client certificates from the test CA, and a plain one, on one loop."""
    app = make_app()
    with self_signed_files(None, "test", "127.0.0.1") as files:
        ctx = server_context(files, str(pki["ca"]))
    authn = Authenticator(tokens=None, anonymous=False, anonymous_paths=ALLOW)
    secure = HandlerChain(app, authenticator=authn, authorizer=Authorizer(always_allow=PathSet(["/*"])))
    server = HttpServer(
        [Listener(secure, "127.0.0.1", 0, ctx), Listener(HandlerChain(app), "127.0.0.1", 0)], name="test"
    )
    server.start()
    yield server
    server.shutdown()


def test_port_zero_picks_a_free_port_and_the_server_serves(https: HttpServer) -> None:
    secure, plain = https.ports
    assert https.port == secure != 0 and plain != 0
    assert get(f"http://127.0.0.1:{plain}/healthz") == (200, "ok")
    assert get(f"https://127.0.0.1:{secure}/healthz", client_context()) == (200, "ok")


def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = HttpServer([Listener(make_app(), "127.0.0.1", port)], name="test")
        with pytest.raises(ListenError) as err:
            server.start()
    assert str(err.value) == f"failed to listen on 127.0.0.1:{port}: Address already in use"


def test_a_client_certificate_from_the_client_ca_is_the_user(
    https: HttpServer, pki: dict[str, object]
) -> None:
    status, answer = get(f"https://127.0.0.1:{https.port}/whoami", client_context(pki["alice"]))  # type: ignore[arg-type]
    assert status == 200
    assert answer["user"] == "alice"
    assert answer["groups"] == ["team-a", "team-b", "system:authenticated"]


def test_no_certificate_is_401_on_the_secure_listener_only(https: HttpServer) -> None:
    secure, plain = https.ports
    assert get(f"https://127.0.0.1:{secure}/whoami", client_context())[0] == 401
    assert get(f"http://127.0.0.1:{plain}/whoami")[0] == 200  # the loopback sidecar path


def test_a_certificate_from_another_ca_fails_the_handshake(https: HttpServer, pki: dict[str, object]) -> None:
    with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)) as err:
        get(f"https://127.0.0.1:{https.port}/whoami", client_context(pki["mallory"]))  # type: ignore[arg-type]
    assert "unknown ca" in str(err.value).lower() or isinstance(err.value, ConnectionError)
    assert get(f"https://127.0.0.1:{https.port}/healthz", client_context()) == (200, "ok")  # still serving


def test_all_listeners_share_one_event_loop_thread(https: HttpServer, pki: dict[str, object]) -> None:
    secure, plain = https.ports
    over_tls = get(f"https://127.0.0.1:{secure}/whoami", client_context(pki["alice"]))[1]  # type: ignore[arg-type]
    over_http = get(f"http://127.0.0.1:{plain}/whoami")[1]
    assert over_tls["thread"] == over_http["thread"] != threading.get_ident()


def _slow_request(port: int, seconds: float, results: list[object]) -> threading.Thread:
    def run() -> None:
        try:
            results.append(get(f"http://127.0.0.1:{port}/slow?seconds={seconds}", timeout=30))
        except OSError as err:
            results.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_shutdown_fails_readiness_and_lets_in_flight_requests_finish() -> None:
    started, check = threading.Event(), ShutdownCheck()
    server = HttpServer([Listener(make_app(started), "127.0.0.1", 0)], name="test", shutdown_check=check)
    server.start()
    results: list[object] = []
    request = _slow_request(server.port, 0.5, results)
    assert started.wait(10)
    server.shutdown(grace=10)
    request.join(10)
    assert results == [(200, "done")]
    assert check() == "process is shutting down"
    assert server.wait(0)
    with pytest.raises(OSError):
        get(f"http://127.0.0.1:{server.port}/healthz", timeout=2)


def test_shutdown_cancels_requests_that_outlive_the_grace_period() -> None:
    started = threading.Event()
    server = HttpServer([Listener(make_app(started), "127.0.0.1", 0)], name="test")
    server.start()
    results: list[object] = []
    request = _slow_request(server.port, 60, results)
    assert started.wait(10)
    server.shutdown(grace=0.2)
    assert server.wait(0)
    request.join(10)
    assert results and results[0] != (200, "done")


def test_a_server_without_listeners_does_nothing(tmp_path: Path) -> None:
    server = HttpServer([], name="off")
    server.start()
    assert server.port == 0 and server.wait(0)
    server.shutdown()
