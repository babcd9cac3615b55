"""POST /bind over HTTP with a fake cluster client: wire, conflicts, concurrency and the cache update."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY

from app.config import dump_config
from app.extender.bind import NO_CLUSTER_ERROR, Binder, BindingArgs, decode_binding_args
from app.extender.wire import WireError
from app.scheduler.scheduler import Engine
from app.server import create_app
from builders import make_pod, pod_dict

ARGS = {"PodName": "web", "PodNamespace": "default", "PodUID": "uid-default-web", "Node": "n2"}


class FakeKubeError(Exception):
    """The contract's ``KubeError``: status, reason, message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class FakeClient:
    """``KubeClient.bind`` / ``get_json`` over a dict of raw pods, recording every call."""

    def __init__(self, pods: list[dict[str, Any]] | None = None) -> None:
        self.pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods or []}
        self.binds: list[tuple[str, str, str, str]] = []
        self.gets: list[str] = []
        self.before_bind: Callable[[], None] = lambda: None
        self.bind_error: Exception | None = None
        self._lock = threading.Lock()

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        self.before_bind()
        with self._lock:
            self.binds.append((namespace, name, uid, node))
            if self.bind_error is not None:
                raise self.bind_error
            pod = self.pods.get((namespace, name))
            if pod is None:
                raise FakeKubeError(404, "NotFound", f'pods "{name}" not found')
            if uid and pod["metadata"]["uid"] != uid:
                raise FakeKubeError(409, "Conflict", "Operation cannot be fulfilled: UID precondition failed")
            if pod["spec"].get("nodeName"):
                raise FakeKubeError(
                    409, "Conflict", f"pod {name} is already assigned to node {pod['spec']['nodeName']!r}"
                )
            pod["spec"]["nodeName"] = node

    def get_json(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        self.gets.append(path)
        parts = path.strip("/").split("/")  # api v1 namespaces NS pods NAME
        pod = self.pods.get((parts[3], parts[5]))
        if pod is None:
            raise FakeKubeError(404, "NotFound", f'pods "{parts[5]}" not found')
        return orjson.loads(orjson.dumps(pod))  # type: ignore[no-any-return]


def web(**spec: Any) -> dict[str, Any]:
    return pod_dict("web", requests=[{"cpu": "1", "memory": "1Gi"}], **spec)


def app_for(engine: Engine, client: FakeClient | None) -> FastAPI:
    binder = None if client is None else Binder(client, engine)
    return create_app(
        engine, profile=None, config_dump=dump_config(engine.cfg), version="0.1.0", binder=binder
    )


def call(app: FastAPI, *requests: tuple[str, Any]) -> list[httpx.Response]:
    """POST the requests concurrently through the ASGI app (one event loop, as uvicorn runs it)."""

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://berth") as http:
            posts = [
                http.post(path, content=body if isinstance(body, bytes) else orjson.dumps(body))
                for path, body in requests
            ]
            return list(await asyncio.gather(*posts))

    return asyncio.run(run())


def bind_count(result: str) -> float:
    value = REGISTRY.get_sample_value("berth_extender_requests_total", {"verb": "bind", "result": result})
    return value or 0.0


# --- wire -------------------------------------------------------------------------------


def test_decode_matches_keys_case_insensitively() -> None:
    body = b'{"podname": "a", "PODNAMESPACE": "ns", "PodUid": "u", "node": "n1", "Extra": 1}'
    assert decode_binding_args(body) == BindingArgs("a", "ns", "u", "n1")


def test_decode_allows_an_empty_uid() -> None:
    assert decode_binding_args(b'{"PodName":"a","PodNamespace":"ns","Node":"n","PodUID":null}').pod_uid == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{", "request body is not valid JSON"),
        (b"[]", "request body: expected a JSON object (ExtenderBindingArgs), got array"),
        (b'{"PodNamespace":"ns","Node":"n"}', "PodName: Required value"),
        (b'{"PodName":"a","PodNamespace":"ns","Node":""}', "Node: Required value"),
        (b'{"PodName":"a","PodNamespace":7,"Node":"n"}', "PodNamespace: expected a string, got number"),
    ],
)
def test_decode_errors_name_the_field(body: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message.replace("(", r"\(").replace(")", r"\)")):
        decode_binding_args(body)


def test_malformed_body_is_400(engine: Engine) -> None:
    before = bind_count("bad_request")
    (r,) = call(app_for(engine, FakeClient()), ("/bind", {"PodName": "a"}))
    assert r.status_code == 400
    assert r.json() == {"Error": "PodNamespace: Required value"}
    assert bind_count("bad_request") == before + 1


def test_too_large_body_is_413(engine: Engine) -> None:
    binder = Binder(FakeClient(), engine)
    app = create_app(engine, profile=None, config_dump={}, version="0", binder=binder, max_request_bytes=64)
    (r,) = call(app, ("/bind", {**ARGS, "PodName": "x" * 100}))
    assert r.status_code == 413
    assert "larger than the limit of 64 bytes" in r.json()["Error"]


def test_without_a_cluster_connection_bind_answers_an_error(engine: Engine) -> None:
    (r,) = call(app_for(engine, None), ("/bind", ARGS))
    assert r.status_code == 200
    assert r.json() == {"Error": NO_CLUSTER_ERROR}


# --- binding ------------------------------------------------------------------------------


def test_bind_creates_the_binding_and_assumes_the_pod(engine: Engine) -> None:
    client = FakeClient([web()])
    app = app_for(engine, client)
    before = bind_count("success")
    (r,) = call(app, ("/bind", ARGS))
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.content == b'{"Error":""}'
    assert client.binds == [("default", "web", "uid-default-web", "n2")]
    assert bind_count("success") == before + 1
    cached = engine.cache.get_pod("uid-default-web")
    assert cached is not None and cached.node_name == "n2"
    assert engine.cache.is_assumed(cached)


def test_the_next_filter_counts_the_bound_pod(engine: Engine) -> None:
    """n2 has 2 CPUs: after binding a 1-CPU pod there, a 1500m pod no longer fits on it."""
    app = app_for(engine, FakeClient([web()]))
    names = ["n2"]
    (f1,) = call(app, ("/filter", {"Pod": web(), "NodeNames": names}))
    assert f1.json()["NodeNames"] == ["n2"]
    (b,) = call(app, ("/bind", ARGS))
    assert b.json() == {"Error": ""}
    big = pod_dict("big", requests=[{"cpu": "1500m"}])
    (f2,) = call(app, ("/filter", {"Pod": big, "NodeNames": names}))
    assert f2.json()["FailedNodes"] == {"n2": "Insufficient cpu"}


def test_the_informer_add_confirms_without_double_counting(engine: Engine) -> None:
    client = FakeClient([web()])
    (r,) = call(app_for(engine, client), ("/bind", ARGS))
    assert r.json() == {"Error": ""}
    pods_before = engine.cache.pod_count
    bound = engine.cache.get_pod("uid-default-web")
    assert bound is not None
    engine.cache.add_pod(bound)  # what the pod informer does when the bound pod arrives
    assert engine.cache.pod_count == pods_before
    assert not engine.cache.is_assumed(bound)
    assert [p.name for p in engine.cache.pods_on("n2")] == ["web"]


@pytest.mark.parametrize("verb", ["/filter", "/prioritize"])  # prioritize may be the only verb configured
def test_the_pod_from_filter_or_prioritize_is_used_without_a_get(engine: Engine, verb: str) -> None:
    client = FakeClient([web()])
    app = app_for(engine, client)
    call(app, (verb, {"Pod": web(), "NodeNames": ["n2", "n3"]}))
    (r,) = call(app, ("/bind", ARGS))
    assert r.json() == {"Error": ""}
    assert client.gets == []
    assert engine.cache.get_pod("uid-default-web") is not None


def test_a_pod_not_seen_before_is_read_back(engine: Engine) -> None:
    client = FakeClient([web()])
    (r,) = call(app_for(engine, client), ("/bind", ARGS))
    assert r.json() == {"Error": ""}
    assert client.gets == ["/api/v1/namespaces/default/pods/web"]


def test_a_pod_the_informer_already_added_is_left_alone(engine: Engine) -> None:
    client = FakeClient([web()])
    app = app_for(engine, client)
    call(app, ("/filter", {"Pod": web(), "NodeNames": ["n2"]}))
    engine.cache.add_pod(make_pod("web", [{"cpu": "1", "memory": "1Gi"}], nodeName="n2"))
    (r,) = call(app, ("/bind", ARGS))
    assert r.json() == {"Error": ""}
    assert [p.name for p in engine.cache.pods_on("n2")] == ["web"]


def test_already_bound_to_the_same_node_is_success(engine: Engine) -> None:
    """The timed-out-reply race: kube-scheduler retries a bind that went through."""
    client = FakeClient([web(nodeName="n2")])
    (r,) = call(app_for(engine, client), ("/bind", ARGS))
    assert r.json() == {"Error": ""}
    cached = engine.cache.get_pod("uid-default-web")
    assert cached is not None and cached.node_name == "n2"


def test_already_bound_elsewhere_is_an_error(engine: Engine) -> None:
    before = bind_count("error")
    client = FakeClient([web(nodeName="n3")])
    (r,) = call(app_for(engine, client), ("/bind", ARGS))
    assert r.status_code == 200
    assert r.json() == {"Error": 'binding pod default/web to node n2: already bound to node "n3"'}
    assert bind_count("error") == before + 1
    assert engine.cache.get_pod("uid-default-web") is None


def test_a_recreated_pod_is_not_bound(engine: Engine) -> None:
    client = FakeClient([web(uid="uid-new")])
    (r,) = call(app_for(engine, client), ("/bind", ARGS))
    assert r.json() == {
        "Error": 'binding pod default/web to node n2: the pod has UID "uid-new", not "uid-default-web" '
        "(it was deleted and re-created)"
    }


def test_a_missing_pod_is_an_error(engine: Engine) -> None:
    (r,) = call(app_for(engine, FakeClient()), ("/bind", ARGS))
    assert r.json() == {"Error": 'binding pod default/web to node n2: pods "web" not found'}


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (FakeKubeError(403, "Forbidden", "pods/binding is forbidden"), "pods/binding is forbidden"),
        (ConnectionRefusedError("connection refused"), "connection refused"),
    ],
)
def test_api_and_transport_errors_are_reported(engine: Engine, error: Exception, message: str) -> None:
    client = FakeClient([web()])
    client.bind_error = error
    (r,) = call(app_for(engine, client), ("/bind", ARGS))
    assert r.status_code == 200
    assert r.json() == {"Error": f"binding pod default/web to node n2: {message}"}
    assert engine.cache.get_pod("uid-default-web") is None


def test_binds_run_concurrently_and_filter_is_served_meanwhile(engine: Engine) -> None:
    """Three binds wait for each other inside the client: they only finish if they run in parallel
    (worker threads), and a /filter sent with them is answered on the loop meanwhile."""
    pods = [pod_dict(f"p{i}", requests=[{"cpu": "100m"}]) for i in range(3)]
    client = FakeClient(pods)
    barrier = threading.Barrier(3, timeout=10)
    finished: list[float] = []

    def wait_for_the_others() -> None:
        barrier.wait()
        time.sleep(0.2)
        finished.append(time.monotonic())

    client.before_bind = wait_for_the_others
    app = app_for(engine, client)
    binds = [("/bind", {**ARGS, "PodName": f"p{i}", "PodUID": f"uid-default-p{i}"}) for i in range(3)]
    started = time.monotonic()
    responses = call(app, *binds, ("/filter", {"Pod": web(), "NodeNames": ["n2"]}))
    assert [r.json() for r in responses[:3]] == [{"Error": ""}] * 3
    assert responses[3].json()["NodeNames"] == ["n2"]
    assert len(client.binds) == 3
    assert time.monotonic() - started < 5
    assert sorted(p.name for p in engine.cache.pods_on("n2")) == ["p0", "p1", "p2"]
