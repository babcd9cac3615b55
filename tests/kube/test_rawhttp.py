"""``app.kube.rawhttp``: KubeClient's requests over kept-alive connections, against a fake server."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from typing import BinaryIO

import orjson
import pytest
from kubernetes import client as k8s_client

from app.kube import rawhttp
from app.kube.client import KubeClient, KubeError
from app.kube.rawhttp import BlockingHttp, ResponseParser, Target, replayable
from tests.server.pki import CA


class FakeServer:
    """A threaded HTTP/1.1 server on loopback answering each request with the next raw answer.

    ``close_after``: close each connection after that many answers (0: keep it). An answer None
    closes the connection once the request is read, without answering (the API server dying with
    the request applied, or not); ``reset`` closes connections with a TCP reset instead of a FIN.
    """

    def __init__(
        self,
        answers: list[bytes | None],
        close_after: int = 0,
        reset: bool = False,
        delay: float = 0.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.answers = answers
        self.tls = tls  # a server context: the connections speak TLS, as the API server's
        self.delay = delay  # seconds before each answer
        self.close_after = close_after
        self.reset = reset
        self.closed = threading.Event()  # a connection was closed by the server
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        if self.reset:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            with conn, conn.makefile("rb") as reader:
                self._answer(conn, reader)
        except OSError:
            pass  # the client went away mid-handshake or mid-answer
        finally:
            self.closed.set()

    def _answer(self, conn: socket.socket, reader: BinaryIO) -> None:
        served = 0
        while True:
            line = reader.readline()
            if not line:
                return
            headers: dict[str, str] = {}
            while (h := reader.readline()) not in (b"\r\n", b""):
                key, _, value = h.decode("latin-1").partition(":")
                headers[key.lower()] = value.strip()
            body = reader.read(int(headers.get("content-length", "0")))
            self.requests.append((line.decode("latin-1").strip(), headers, body))
            reply = self.answers.pop(0)
            if reply is None:
                return
            time.sleep(self.delay)
            conn.sendall(reply)
            served += 1
            if self.close_after and served >= self.close_after:
                return

    def close(self) -> None:
        self._sock.close()


def answer(status: int, body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


@pytest.fixture
def make_client() -> Iterator[list[KubeClient]]:
    made: list[KubeClient] = []
    yield made
    for c in made:
        c.close()


def kube_client(
    port: int, made: list[KubeClient], token: str = "", *, urllib3_only: bool = False, tls: bool = False
) -> KubeClient:
    conf = k8s_client.Configuration()
    conf.host = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    conf.verify_ssl = False  # the TLS servers' throwaway certificates
    if urllib3_only:
        conf.assert_hostname = False  # a configuration rawhttp does not take (and plain HTTP ignores)
    if token:
        conf.api_key = {"authorization": f"Bearer {token}"}
    api = k8s_client.ApiClient(conf)
    api.user_agent = "berth-test"
    client = KubeClient(api, qps=0, burst=1)
    made.append(client)
    return client


def test_requests_share_one_kept_alive_connection(make_client: list[KubeClient]) -> None:
    server = FakeServer([answer(201, b'{"a":1}'), answer(200, b"{}"), answer(404, b"{}")])
    kc = kube_client(server.port, make_client, token="s3cret")
    assert kc.request("POST", "/api/v1/namespaces/ns/pods", body={"x": 1}) == (201, b'{"a":1}')
    assert kc.get_json("/api/v1/pods", {"limit": "1", "q": "a b"}) == {}
    assert kc.request("DELETE", "api/v1/namespaces/ns/pods/p")[0] == 404
    server.close()
    assert server.connections == 1
    (post, headers, body), (get, get_headers, _), (delete, _, _) = server.requests
    assert post == "POST /api/v1/namespaces/ns/pods HTTP/1.1"
    assert orjson.loads(body) == {"x": 1}
    assert headers["content-type"] == "application/json" and headers["accept"] == "application/json"
    assert headers["user-agent"] == "berth-test" and headers["authorization"] == "Bearer s3cret"
    assert headers["host"] == f"127.0.0.1:{server.port}"
    assert get == "GET /api/v1/pods?limit=1&q=a+b HTTP/1.1" and "content-type" not in get_headers
    assert delete == "DELETE /api/v1/namespaces/ns/pods/p HTTP/1.1"


def test_patch_is_a_merge_patch_unless_told(make_client: list[KubeClient]) -> None:
    server = FakeServer([answer(200, b"{}"), answer(200, b"{}")])
    kc = kube_client(server.port, make_client)
    kc.request("PATCH", "/x", body={"a": 1})
    kc.request("PATCH", "/x", body=b"{}", content_type="application/strategic-merge-patch+json")
    server.close()
    assert [r[1]["content-type"] for r in server.requests] == [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ]


def test_a_chunked_answer_is_read_whole(make_client: list[KubeClient]) -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    server = FakeServer([chunked, answer(200, b"ok")])
    kc = kube_client(server.port, make_client)
    assert kc.request("GET", "/a") == (200, b"abcde")
    assert kc.request("GET", "/b") == (200, b"ok")
    server.close()
    assert server.connections == 1


def test_a_connection_the_server_closed_while_idle_is_replaced(make_client: list[KubeClient]) -> None:
    server = FakeServer([answer(200, b"1"), answer(200, b"2")], close_after=1)
    kc = kube_client(server.port, make_client)
    assert kc.request("GET", "/a") == (200, b"1")
    assert kc.request("GET", "/b") == (200, b"2")  # the kept connection is gone: a new one
    server.close()
    assert server.connections == 2 and [r[0] for r in server.requests] == [
        "GET /a HTTP/1.1",
        "GET /b HTTP/1.1",
    ]


def test_connection_close_is_honoured(make_client: list[KubeClient]) -> None:
    server = FakeServer([answer(200, b"1", "Connection: close\r\n"), answer(200, b"2")], close_after=1)
    kc = kube_client(server.port, make_client)
    assert kc.request("GET", "/a") == (200, b"1")
    assert kc.request("GET", "/b") == (200, b"2")
    server.close()
    assert server.connections == 2


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",  # cut short
        b"NOT HTTP AT ALL\r\n\r\n",  # malformed
    ],
)
def test_a_broken_answer_is_a_status_0_kube_error(make_client: list[KubeClient], raw: bytes) -> None:
    server = FakeServer([raw], close_after=1)
    kc = kube_client(server.port, make_client)
    with pytest.raises(KubeError) as err:
        kc.request("GET", "/a")
    server.close()
    assert err.value.status == 0 and err.value.reason == "TransportError"


def test_no_server_is_a_status_0_kube_error(make_client: list[KubeClient]) -> None:
    sock = socket.create_server(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    with pytest.raises(KubeError) as err:
        kube_client(port, make_client).request("POST", "/api/v1/namespaces/ns/pods/p/binding", body={})
    assert err.value.status == 0 and err.value.reason == "TransportError"
    assert err.value.message.startswith("POST /api/v1/namespaces/ns/pods/p/binding: ")


def test_a_read_timeout_is_a_status_0_kube_error(make_client: list[KubeClient]) -> None:
    sock = socket.create_server(("127.0.0.1", 0))  # accepts (the backlog) but never answers
    try:
        with pytest.raises(KubeError) as err:
            kube_client(int(sock.getsockname()[1]), make_client).request("GET", "/a", timeout=0.2)
    finally:
        sock.close()
    assert err.value.status == 0 and err.value.reason == "TransportError"


def test_only_a_plain_configuration_gets_the_raw_path() -> None:
    conf = k8s_client.Configuration()
    assert Target.of(conf, "https://10.0.0.1:6443/prefix/") is not None
    assert Target.of(conf, "unix:///run/k8s.sock") is None
    conf.proxy = "http://proxy:3128"
    assert Target.of(conf, "https://10.0.0.1:6443") is None
    conf.proxy = None
    conf.assert_hostname = "other"
    assert Target.of(conf, "https://10.0.0.1:6443") is None
    api = k8s_client.ApiClient(conf)
    conf.host = "https://10.0.0.1:6443"
    assert KubeClient(api)._raw is None  # requests go through urllib3


def test_the_server_path_prefix_is_kept(make_client: list[KubeClient]) -> None:
    server = FakeServer([answer(200, b"{}")])
    target = Target.of(k8s_client.Configuration(), f"http://127.0.0.1:{server.port}/base/")
    assert target is not None
    http = BlockingHttp(target)
    assert http.request("GET", "/api", {}, b"", 5.0) == (200, b"{}")
    http.close()
    server.close()
    assert server.requests[0][0] == "GET /base/api HTTP/1.1"


def test_the_parser_lets_go_of_itself_once_the_answer_is_in() -> None:
    response = ResponseParser()
    response.feed(answer(201, b"{}"))
    # No reference cycle left for the cyclic collector: parser -> callbacks -> parser.
    assert response.complete and response.parser is None
    assert (response.status, response.body, response.keep_alive) == (201, [b"{}"], True)


def _settled(server: FakeServer) -> None:
    """Until the server has closed a connection and its FIN or reset has reached the client."""
    assert server.closed.wait(5)
    time.sleep(0.05)


@pytest.mark.parametrize("reset", [False, True], ids=["fin", "reset"])
def test_a_post_goes_on_a_new_connection_when_the_kept_one_was_closed_while_idle(
    make_client: list[KubeClient], reset: bool
) -> None:
    server = FakeServer([answer(201, b"1"), answer(201, b"2")], close_after=1, reset=reset)
    kc = kube_client(server.port, make_client)
    assert kc.request("POST", "/api/v1/namespaces/ns/pods/a/binding", body={}) == (201, b"1")
    _settled(server)
    # Seen closed before a byte was written: nothing can have been applied, the POST goes out once.
    assert kc.request("POST", "/api/v1/namespaces/ns/pods/b/binding", body={}) == (201, b"2")
    server.close()
    assert server.connections == 2 and [r[0] for r in server.requests] == [
        "POST /api/v1/namespaces/ns/pods/a/binding HTTP/1.1",
        "POST /api/v1/namespaces/ns/pods/b/binding HTTP/1.1",
    ]


@pytest.mark.parametrize("reset", [False, True], ids=["fin", "reset"])
def test_a_written_post_without_an_answer_is_not_resent(make_client: list[KubeClient], reset: bool) -> None:
    # The server reads the Binding and dies before answering: it may have applied it, so berth
    # reports the lost answer (as client-go does) rather than binding again into a 409.
    server = FakeServer([answer(200, b"{}"), None, answer(201, b"never")], reset=reset)
    kc = kube_client(server.port, make_client)
    assert kc.request("GET", "/api/v1/pods") == (200, b"{}")
    with pytest.raises(KubeError) as err:
        kc.request("POST", "/api/v1/namespaces/ns/pods/p/binding", body={})
    server.close()
    assert err.value.status == 0 and err.value.reason == "TransportError"
    assert err.value.message.startswith("POST /api/v1/namespaces/ns/pods/p/binding: [Errno 104]")
    assert server.connections == 1 and len(server.requests) == 2


@pytest.mark.parametrize("reset", [False, True], ids=["fin", "reset"])
def test_a_written_get_without_an_answer_is_resent_on_a_new_connection(
    make_client: list[KubeClient], reset: bool
) -> None:
    server = FakeServer([answer(200, b"1"), None, answer(200, b"2")], reset=reset)
    kc = kube_client(server.port, make_client)
    assert kc.request("GET", "/a") == (200, b"1")
    assert kc.request("GET", "/b") == (200, b"2")
    server.close()
    assert server.connections == 2 and [r[0] for r in server.requests] == [
        "GET /a HTTP/1.1",
        "GET /b HTTP/1.1",
        "GET /b HTTP/1.1",
    ]


def test_a_post_whose_connection_closed_unseen_is_resent_only_if_nothing_was_written(
    make_client: list[KubeClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race the idle check cannot close: the server's close arrives as the request is written.
    # A reset already in: the first write fails, nothing went out, the POST goes on a new connection.
    monkeypatch.setattr(rawhttp, "_closed_while_idle", lambda sock: False)
    server = FakeServer([answer(201, b"1"), answer(201, b"2")], close_after=1, reset=True)
    kc = kube_client(server.port, make_client)
    assert kc.request("POST", "/a", body={}) == (201, b"1")
    _settled(server)
    assert kc.request("POST", "/b", body={}) == (201, b"2")
    server.close()
    assert server.connections == 2 and [r[0] for r in server.requests] == [
        "POST /a HTTP/1.1",
        "POST /b HTTP/1.1",
    ]

    # Only a FIN: the write succeeds into the closed connection, so the POST may have gone out and
    # its error goes to the caller.
    server = FakeServer([answer(201, b"1"), answer(201, b"2")], close_after=1)
    kc = kube_client(server.port, make_client)
    assert kc.request("POST", "/a", body={}) == (201, b"1")
    _settled(server)
    with pytest.raises(KubeError) as err:
        kc.request("POST", "/b", body={})
    server.close()
    assert err.value.message.startswith("POST /b: [Errno 104]")
    assert server.connections == 1


def test_only_idempotent_requests_are_replayable() -> None:
    assert replayable("GET", {}) and replayable("HEAD", {}) and replayable("OPTIONS", {})
    assert not replayable("POST", {}) and not replayable("PATCH", {}) and not replayable("PUT", {})
    assert not replayable("DELETE", {})
    assert replayable("POST", {"Idempotency-Key": "k"})


def test_as_many_connections_are_kept_as_requests_were_sent_at_once() -> None:
    # berth run's 16 binding workers and its status writers share one client: a connection closed
    # after its answer because too many were idle would cost a new TCP and TLS handshake next time.
    senders = 24
    server = FakeServer([answer(201, b"{}")] * (2 * senders), delay=0.3)
    target = Target.of(k8s_client.Configuration(), f"http://127.0.0.1:{server.port}")
    assert target is not None
    http = BlockingHttp(target)

    def send_at_once() -> None:
        threads = [
            threading.Thread(target=http.request, args=("POST", "/b", {}, b"{}", 5.0)) for _ in range(senders)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    send_at_once()
    opened = server.connections
    send_at_once()
    http.close()
    server.close()
    assert len(server.requests) == 2 * senders
    assert opened == senders and server.connections == senders  # the second round reused them all


def _chunked(*pieces: bytes, end: bool = True) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
    return head + body + (b"0\r\n\r\n" if end else b"")


@pytest.mark.parametrize("urllib3_only", [False, True], ids=["rawhttp", "urllib3"])
def test_a_watch_yields_each_line_however_the_chunks_cut_them(
    make_client: list[KubeClient], urllib3_only: bool
) -> None:
    events = [
        orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": f"p{i}"}}}) + b"\n" for i in range(3)
    ]
    stream = b"".join(events)
    # One chunk holding two events and half a third, the rest of it in the next chunk.
    cut = len(events[0]) + len(events[1]) + 5
    server = FakeServer([_chunked(stream[:cut], stream[cut:])])
    kc = kube_client(server.port, make_client, token="s3cret", urllib3_only=urllib3_only)
    assert (kc._raw is None) == urllib3_only
    names = [e["object"]["metadata"]["name"] for e in kc.watch("/api/v1/pods", {"timeoutSeconds": "5"})]
    server.close()
    assert names == ["p0", "p1", "p2"]
    ((line, headers, _),) = server.requests
    assert line == "GET /api/v1/pods?timeoutSeconds=5&watch=1 HTTP/1.1"
    assert headers["authorization"] == "Bearer s3cret" and headers["accept"] == "application/json"


@pytest.mark.parametrize("urllib3_only", [False, True], ids=["rawhttp", "urllib3"])
def test_a_watch_the_server_drops_mid_stream_is_a_broken_stream(
    make_client: list[KubeClient], urllib3_only: bool
) -> None:
    event = orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": "p0"}}}) + b"\n"
    server = FakeServer([_chunked(event, end=False)], close_after=1)
    kc = kube_client(server.port, make_client, urllib3_only=urllib3_only)
    stream = kc.watch("/api/v1/pods", {})
    assert next(stream)["object"]["metadata"]["name"] == "p0"
    with pytest.raises(KubeError) as err:
        next(stream)
    server.close()
    assert err.value.status == 0 and err.value.reason == "TransportError"


def test_a_watch_refused_raises_the_answers_status(make_client: list[KubeClient]) -> None:
    status = b'{"kind":"Status","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}'
    server = FakeServer([answer(410, status)])
    kc = kube_client(server.port, make_client)
    with pytest.raises(KubeError) as err:
        kc.watch("/api/v1/pods", {"resourceVersion": "1"})
    server.close()
    assert err.value.status == 410 and "too old resource version" in err.value.message


def test_a_watch_closed_from_another_thread_ends_quietly(make_client: list[KubeClient]) -> None:
    server = FakeServer([_chunked(end=False)])  # the headers, then nothing
    kc = kube_client(server.port, make_client)
    stream = kc.watch("/api/v1/pods", {"timeoutSeconds": "60"})
    threading.Timer(0.2, stream.close).start()
    started = time.monotonic()
    assert list(stream) == []
    assert time.monotonic() - started < 10
    server.close()


@pytest.fixture(scope="module")
def server_tls(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    """A serving context with a throwaway certificate for 127.0.0.1."""
    directory = tmp_path_factory.mktemp("pki")
    cert, key = CA.create(directory, "ca").issue(directory, "apiserver", server=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    return ctx


def test_over_tls_a_late_answer_in_pieces_is_read_whole(
    make_client: list[KubeClient], server_tls: ssl.SSLContext
) -> None:
    # The answer comes after the client started waiting for it, its body after its headers.
    body = b'{"kind":"Pod","metadata":{"name":"p"}}'
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    server = FakeServer([head], close_after=1, delay=0.2, tls=server_tls)
    original = server._answer

    def answer_then_body(conn: socket.socket, reader: BinaryIO) -> None:
        original(conn, reader)  # the headers, 0.2 s late; then the body, later still
        time.sleep(0.2)
        conn.sendall(body)
        reader.readline()  # keep the connection until the client is done with it

    server._answer = answer_then_body  # type: ignore[method-assign]
    kc = kube_client(server.port, make_client, tls=True)
    assert kc.request("GET", "/api/v1/namespaces/ns/pods/p") == (200, body)
    server.close()


def test_over_tls_a_read_timeout_is_a_status_0_kube_error_in_time(
    make_client: list[KubeClient], server_tls: ssl.SSLContext
) -> None:
    server = FakeServer([answer(200, b"{}")], delay=5.0, tls=server_tls)  # answers too late
    started = time.monotonic()
    with pytest.raises(KubeError) as err:
        kube_client(server.port, make_client, tls=True).request("GET", "/a", timeout=0.3)
    assert err.value.status == 0 and err.value.reason == "TransportError"
    assert "timed out" in err.value.message
    assert time.monotonic() - started < 3  # the timeout bounds the wait once, not twice
    server.close()


def test_over_tls_a_watch_yields_its_events_and_ends_when_closed_from_another_thread(
    make_client: list[KubeClient], server_tls: ssl.SSLContext
) -> None:
    server = FakeServer(
        [_chunked(b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n', end=False)], tls=server_tls
    )
    kc = kube_client(server.port, make_client, tls=True)
    stream = kc.watch("/api/v1/pods", {"timeoutSeconds": "60"})
    threading.Timer(0.5, stream.close).start()
    started = time.monotonic()
    assert [e["object"]["metadata"]["name"] for e in stream] == ["a"]
    assert time.monotonic() - started < 10
    server.close()
