"""Large allowed bodies: decoded off the event loop, a pod larger than any real one refused."""

from __future__ import annotations

import threading
import time
from typing import Any

import orjson
import pytest
from server.conftest import ALLOCATABLE, build_app
from server.test_direct import GET_HEALTHZ, exchange, post, serving

from app.extender.service import ExtenderService
from app.extender.wire import MAX_POD_BYTES, ExtenderArgs, decode_args
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
            assert data["Error"] == (
                f"Pod: more than {MAX_POD_BYTES} bytes of JSON, more than kube-apiserver accepts for any object"
            )


class Paused:
    """A step of the server that stops, in its own thread, until the test lets it go on."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.go_on = threading.Event()

    def here(self) -> None:
        self.reached.set()
        assert self.go_on.wait(30)

    def wait_reached(self) -> None:
        assert self.reached.wait(30), "the large request never got there"


def test_a_large_body_stalls_no_other_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a large body is decoded and then evaluated, probes are answered; small verb calls are
    answered during its decoding and wait for its evaluation (the engine is one request's at a time)."""
    decoding, evaluating = Paused(), Paused()
    threads: set[str] = set()

    def decode_spy(body: bytes, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("chunked"):
            threads.add(threading.current_thread().name)
            decoding.here()
        return decode_args(body, *args, **kwargs)

    real_filter = ExtenderService.filter

    def filter_spy(self: ExtenderService, args: ExtenderArgs) -> Any:
        if args.nodes is not None and len(args.nodes) > 100:
            threads.add(threading.current_thread().name)
            evaluating.here()
        return real_filter(self, args)

    monkeypatch.setattr(verbs, "decode_args", decode_spy)
    monkeypatch.setattr(ExtenderService, "filter", filter_spy)
    nodes = [node(f"big-{i}", 40) for i in range(400)]
    big = orjson.dumps({"Pod": POD, "Nodes": {"items": nodes}})
    small = orjson.dumps({"Pod": POD, "Nodes": {"items": nodes[:2]}})
    assert len(big) > verbs.OFF_LOOP_BYTES > len(small)
    big_answer: list[tuple[bytes, Any]] = []
    order: list[str] = []

    def healthz() -> bytes:
        ((status, _, body),) = exchange(port, GET_HEALTHZ, 1)
        return status + b" " + body

    with serving(HandlerChain(build_app(max_request_bytes=64 << 20))) as port:
        sender = threading.Thread(target=lambda: big_answer.append(answer(port, "/filter", big)))
        sender.start()
        decoding.wait_reached()
        assert healthz() == b"HTTP/1.1 200 OK ok"
        assert answer(port, "/filter", small)[0] == b"HTTP/1.1 200 OK"
        decoding.go_on.set()
        evaluating.wait_reached()
        assert healthz() == b"HTTP/1.1 200 OK ok"
        waiter = threading.Thread(target=lambda: (answer(port, "/filter", small), order.append("small")))
        waiter.start()
        time.sleep(0.3)  # the small call is in; it must not be answered before the large one lets go
        order.append("released")
        evaluating.go_on.set()
        sender.join(30)
        waiter.join(30)
    status, data = big_answer[0]
    assert status == b"HTTP/1.1 200 OK" and data["Error"] == ""
    assert [n["metadata"]["name"] for n in data["Nodes"]["items"]] == [f"big-{i}" for i in range(400)]
    assert order == ["released", "small"]
    assert "test-http" not in threads  # neither step ran on the server's event loop thread
