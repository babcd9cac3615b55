"""The verbs' ASGI fast path answers exactly as their FastAPI routes; the event-loop bind client."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s_client
from server.chainkit import LogCapture, capture_logs
from server.conftest import build_app

from app.kube.client import KubeClient, KubeError
from app.server.chain import HandlerChain
from app.server.fastpath import ExtenderApp, HttpSeries
from app.server.loopbind import LoopBindingClient
from builders import pod_dict

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


@pytest.fixture
def v3() -> Iterator[LogCapture]:
    yield from capture_logs(3)


def web_pod() -> dict[str, Any]:
    return pod_dict("web", requests=[{"cpu": "1", "memory": "1Gi"}])


REQUESTS: list[tuple[str, bytes, dict[str, str]]] = [
    ("/filter", orjson.dumps({"Pod": web_pod(), "NodeNames": ["n1", "n2", "gone"]}), {}),
    ("/prioritize", orjson.dumps({"Pod": web_pod(), "NodeNames": ["n2", "n3"]}), {}),
    ("/filter", b"{not json", {}),
    ("/prioritize", orjson.dumps({"NodeNames": ["n1"]}), {}),
    ("/filter", b"{}", {"content-length": "two"}),
    ("/filter", b"x" * 2048, {}),  # over the 1 KiB limit below
    ("/preempt", orjson.dumps({"Pod": web_pod(), "NodeNameToMetaVictims": {"n1": {"Pods": []}}}), {}),
    ("/bind", orjson.dumps({"PodName": "web", "PodNamespace": "default", "Node": "n2"}), {}),
    ("/bind", orjson.dumps({"PodName": "web"}), {}),
]


@pytest.mark.parametrize(("path", "body", "headers"), REQUESTS)
def test_the_fast_path_answers_as_the_route(path: str, body: bytes, headers: dict[str, str]) -> None:
    app = build_app(max_request_bytes=1024)
    assert isinstance(app, ExtenderApp) and path in app.fast_verbs
    fast = TestClient(app).post(path, content=body, headers=headers)
    # Under a root path the fast path steps aside and FastAPI routes the call.
    routed = TestClient(build_app(max_request_bytes=1024), root_path="/x").post(
        f"/x{path}", content=body, headers=headers
    )
    assert (fast.status_code, fast.content) == (routed.status_code, routed.content)
    assert fast.headers["content-type"] == routed.headers["content-type"] == "application/json"
    assert fast.headers["content-length"] == routed.headers["content-length"]


def test_other_methods_and_paths_still_go_to_fastapi() -> None:
    client = TestClient(build_app())
    assert client.get("/filter").status_code == 405
    assert client.post("/filter/", follow_redirects=False).status_code == 307  # redirect_slashes
    assert client.post("/nope").json() == {"Error": "Not Found"}
    assert client.get("/healthz").status_code == 200


def test_an_exception_escaping_a_verb_is_a_logged_500_with_the_request_id(
    v3: LogCapture, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = build_app()
    assert isinstance(app, ExtenderApp)

    async def boom(*_: object) -> tuple[int, bytes]:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(app.fast_verbs["/filter"], "handle", boom)
    client = TestClient(HandlerChain(app), raise_server_exceptions=False)
    r = client.post("/filter", json={"Pod": web_pod(), "NodeNames": ["n1"]})
    assert r.status_code == 500
    request_id = v3.messages("Observed a panic")[0]["requestID"]
    assert r.json() == {"Error": f"internal server error (request ID {request_id})"}
    assert client.post("/prioritize", json={"Pod": web_pod(), "NodeNames": ["n1"]}).status_code == 200
    text = client.get("/metrics").text
    assert 'http_requests_total{handler="/filter",method="POST",status="5xx"}' in text


def test_http_metrics_use_the_instrumentators_collectors() -> None:
    app = build_app()
    assert isinstance(app, ExtenderApp)
    assert isinstance(app.http_metrics, HttpSeries)  # not the slower Info-building fallback


def metric(text: str, prefix: str) -> float:
    return next(
        (float(line.rpartition(" ")[2]) for line in text.splitlines() if line.startswith(prefix)), 0.0
    )


def test_a_bad_content_length_counts_the_request_only() -> None:
    client = TestClient(build_app())
    before = client.get("/metrics").text
    client.post("/prioritize", content=b"{}", headers={"content-length": "x"})
    after = client.get("/metrics").text
    total = 'http_requests_total{handler="/prioritize",method="POST",status="4xx"}'
    assert metric(after, total) == metric(before, total) + 1
    size = 'http_request_size_bytes_count{handler="/prioritize"}'
    assert metric(after, size) == metric(before, size)


# --- work after the answer -------------------------------------------------------------------


def asgi_post(app: Any, path: str, body: bytes, events: list[str]) -> Any:
    """POST through the raw ASGI interface, noting each message sent in ``events``."""

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        events.append(message["type"])

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "root_path": "",
        "headers": [(b"content-length", str(len(body)).encode())],
        "query_string": b"",
    }
    return app(scope, receive, send)


def test_a_verbs_follow_up_runs_after_its_answer_is_sent() -> None:
    app = build_app()
    assert isinstance(app, ExtenderApp)
    events: list[str] = []
    verb = app.fast_verbs["/filter"]
    verb.then = lambda: events.append("then")  # type: ignore[method-assign]

    async def call() -> None:
        await asgi_post(app, "/filter", REQUESTS[0][1], events)
        assert events == ["http.response.start", "http.response.body"]  # not yet: after this step
        await asyncio.sleep(0)

    run(call)
    assert events == ["http.response.start", "http.response.body", "then"]


def test_a_failing_follow_up_is_logged_and_the_server_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    app = build_app()
    assert isinstance(app, ExtenderApp)

    def broken() -> None:
        raise RuntimeError("speculation went wrong")

    app.fast_verbs["/filter"].then = broken  # type: ignore[method-assign]
    events: list[str] = []

    async def call() -> None:
        await asgi_post(app, "/filter", REQUESTS[0][1], events)
        await asyncio.sleep(0)
        await asgi_post(app, "/filter", REQUESTS[0][1], events)

    run(call)
    assert events.count("http.response.body") == 2
    assert "extender filter: the follow-up work failed" in caplog.text
    assert "speculation went wrong" in caplog.text


def test_filter_then_prioritize_over_http_uses_the_answer_computed_ahead() -> None:
    client = TestClient(build_app())
    plain = TestClient(build_app())
    used = 'berth_extender_prioritize_speculations_total{result="used"}'
    before = metric(client.get("/metrics").text, used)
    for i in range(3):
        pod = pod_dict(f"web-{i}", requests=[{"cpu": f"{100 * (i + 1)}m", "memory": "1Gi"}])
        filtered = client.post("/filter", json={"Pod": pod, "NodeNames": ["n1", "n2", "n3"]}).json()
        assert filtered["NodeNames"] == ["n1", "n2", "n3"]
        args = {"Pod": pod, "NodeNames": filtered["NodeNames"]}
        assert client.post("/prioritize", json=args).json() == plain.post("/prioritize", json=args).json()
    # The first cycle shows berth that this client prioritizes after filtering.
    assert metric(client.get("/metrics").text, used) == before + 2


# --- the event-loop bind client ----------------------------------------------------------------


class FakeApiServer:
    """An HTTP/1.1 server on loopback answering each request with the next of ``answers``; an
    answer None closes the connection once the request is read (a server dying with it applied)."""

    def __init__(self, answers: list[tuple[int, bytes] | None], close_after: int = 0) -> None:
        self.answers = answers
        self.close_after = close_after  # close each connection after this many answers (0: never)
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        while True:
            head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
            if not head:
                break
            lines = head.decode("latin-1").split("\r\n")
            headers = {
                k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.requests.append((lines[0], headers, body))
            reply = self.answers.pop(0)
            if reply is None:
                break
            status, payload = reply
            writer.write(
                f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
            served += 1
            if self.close_after and served >= self.close_after:
                break
        writer.close()


def kube_client(port: int) -> KubeClient:
    conf = k8s_client.Configuration()
    conf.host = f"http://127.0.0.1:{port}"
    api = k8s_client.ApiClient(conf)
    api.user_agent = "berth-test"
    return KubeClient(api, qps=0, burst=1)


def run(coro_fn: Callable[[], Any]) -> Any:
    return asyncio.run(coro_fn())


async def loop_client_of(fake: FakeApiServer) -> LoopBindingClient:
    """``fake`` started, and a loop client for berth's kube client pointed at it."""
    client = LoopBindingClient.for_client(kube_client(await fake.start()))
    assert client is not None
    return client


def test_loop_client_only_stands_in_for_berths_kube_client() -> None:
    assert LoopBindingClient.for_client(object()) is None
    assert isinstance(LoopBindingClient.for_client(kube_client(1)), LoopBindingClient)


def test_loop_client_binds_and_keeps_the_connection() -> None:
    status_409 = orjson.dumps({"kind": "Status", "reason": "Conflict", "message": "already assigned"})
    fake = FakeApiServer([(201, b"{}"), (201, b"{}"), (409, status_409)])

    async def scenario() -> KubeError:
        client = await loop_client_of(fake)
        await client.bind("ns", "p-1", "uid-1", "n1")
        await client.bind("ns", "p 2", "", "n2")
        with pytest.raises(KubeError) as err:
            await client.bind("ns", "p-3", "uid-3", "n3")
        client.close()
        return err.value

    err = run(scenario)
    assert (err.status, err.reason, err.message) == (409, "Conflict", "already assigned")
    assert fake.connections == 1  # kept alive across the three binds
    line, headers, body = fake.requests[0]
    assert line == "POST /api/v1/namespaces/ns/pods/p-1/binding HTTP/1.1"
    assert headers["content-type"] == "application/json" and headers["user-agent"] == "berth-test"
    assert orjson.loads(body) == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p-1", "namespace": "ns", "uid": "uid-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }
    assert fake.requests[1][0] == "POST /api/v1/namespaces/ns/pods/p%202/binding HTTP/1.1"


def test_loop_client_retries_on_a_connection_the_server_closed_while_idle() -> None:
    fake = FakeApiServer([(201, b"{}"), (201, b"{}")], close_after=1)

    async def scenario() -> None:
        client = await loop_client_of(fake)
        await client.bind("ns", "a", "", "n1")
        await asyncio.sleep(0.05)  # the server has closed the kept connection by now
        await client.bind("ns", "b", "", "n1")

    run(scenario)
    assert [r[0].split()[1] for r in fake.requests] == [
        "/api/v1/namespaces/ns/pods/a/binding",
        "/api/v1/namespaces/ns/pods/b/binding",
    ]
    assert fake.connections == 2


def test_loop_client_never_sends_a_written_binding_again() -> None:
    # The server reads the second Binding and closes without answering: it may have bound the pod,
    # so the bind fails (kube-scheduler retries the pod) instead of binding again into a 409.
    fake = FakeApiServer([(201, b"{}"), None, (201, b"{}")])

    async def scenario() -> KubeError:
        client = await loop_client_of(fake)
        await client.bind("ns", "a", "", "n1")
        with pytest.raises(KubeError) as err:
            await client.bind("ns", "b", "", "n1")
        client.close()
        return err.value

    err = run(scenario)
    assert (err.status, err.reason) == (0, "TransportError")
    assert err.message == "POST /api/v1/namespaces/ns/pods/b/binding: connection closed by the server"
    assert [r[0].split()[1] for r in fake.requests] == [
        "/api/v1/namespaces/ns/pods/a/binding",
        "/api/v1/namespaces/ns/pods/b/binding",
    ]
    assert fake.connections == 1


def test_loop_client_transport_failure_is_a_status_0_kube_error() -> None:
    async def scenario() -> KubeError:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = int(server.sockets[0].getsockname()[1])
        server.close()
        await server.wait_closed()
        client = LoopBindingClient.for_client(kube_client(port))
        assert client is not None
        with pytest.raises(KubeError) as err:
            await client.bind("ns", "a", "", "n1")
        return err.value

    err = run(scenario)
    assert err.status == 0 and err.reason == "TransportError"
