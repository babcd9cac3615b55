"""Large allowed bodies: decoded off the event loop, a pod larger than any real one refused."""

from __future__ import annotations

import threading
from typing import Any

import orjson
import pytest
from server.conftest import ALLOCATABLE, build_app
from server.test_direct import exchange, post, serving

from app.extender.wire import MAX_POD_BYTES, decode_args
from app.server import verbs
from app.server.chain import HandlerChain
from builders import pod_dict

POD = pod_dict("web", requests=[{"cpu": "1", "memory": "1Gi"}])


def node(name: str, padding: int) -> dict[str, Any]:
    labels = {f"example.com/label-{i}": "x" * 50 for i in range(padding)}
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": labels},
        "status": {"allocatable": ALLOCATABLE, "capacity": ALLOCATABLE},
    }


def answer(port: int, path: str, body: bytes) -> tuple[bytes, Any]:
    ((status, _, data),) = exchange(port, post(path, body), 1)
    return status, orjson.loads(data)


def test_a_pod_larger_than_kube_apiserver_accepts_is_400() -> None:
    terms = [
        {"matchExpressions": [{"key": f"k{i}", "operator": "In", "values": ["a"]}]} for i in range(60000)
    ]
    pod = {
        **POD,
        "spec": {
            **POD["spec"],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            },
        },
    }
    body = orjson.dumps({"Pod": pod, "NodeNames": ["n1", "n2"]})
    assert len(body) > MAX_POD_BYTES
    with serving(HandlerChain(build_app(max_request_bytes=64 << 20))) as port:
        for path in ("/filter", "/prioritize"):
            status, data = answer(port, path, body)
            assert status == b"HTTP/1.1 400 Bad Request"
            assert data["Error"].startswith("Pod: ")
            assert f"more than kube-apiserver accepts for any object ({MAX_POD_BYTES})" in data["Error"]


def test_a_large_nodes_body_is_decoded_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded_on: list[str] = []

    def spy(body: bytes, *args: Any) -> Any:
        decoded_on.append(threading.current_thread().name)
        return decode_args(body, *args)

    monkeypatch.setattr(verbs, "decode_args", spy)
    nodes = [node(f"big-{i}", 40) for i in range(400)]
    big = orjson.dumps({"Pod": POD, "Nodes": {"items": nodes}})
    small = orjson.dumps({"Pod": POD, "Nodes": {"items": nodes[:2]}})
    assert len(big) > verbs.OFF_LOOP_BYTES > len(small)
    with serving(HandlerChain(build_app(max_request_bytes=64 << 20))) as port:
        status, data = answer(port, "/filter", big)
        assert status == b"HTTP/1.1 200 OK" and data["Error"] == ""
        assert [n["metadata"]["name"] for n in data["Nodes"]["items"]] == [f"big-{i}" for i in range(400)]
        status, _ = answer(port, "/filter", small)
        assert status == b"HTTP/1.1 200 OK"
    big_thread, small_thread = decoded_on
    assert big_thread != small_thread == "test-http"  # the server's loop thread decodes only the small one
