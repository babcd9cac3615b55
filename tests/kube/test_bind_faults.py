"""/bind against a real kube-apiserver frozen with SIGSTOP: answers bounded by the bind timeout, truthful
afterwards, and no pod bound twice."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client
from server.conftest import build_app, cluster_engine
from server.test_direct import exchange, post, serving

from app.extender.bind import Binder
from app.kube.client import KubeClient
from app.server.chain import HandlerChain
from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

BIND_TIMEOUT = 2.0


@pytest.fixture
def berth(control_plane: LocalControlPlane) -> Iterator[int]:
    kube = KubeClient.from_config(str(control_plane.kubeconfig))
    app = build_app(cluster_engine(), binder=Binder(kube, None), bind_timeout=BIND_TIMEOUT)
    try:
        with serving(HandlerChain(app)) as port:
            yield port
    finally:
        kube.close()


def pending_pod(core: client.CoreV1Api, namespace: str) -> tuple[str, str]:
    name = f"web-{uuid.uuid4().hex[:6]}"
    pod = core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause"}]},
        },
    )
    return name, pod.metadata.uid


def bind(port: int, namespace: str, name: str, uid: str, node: str) -> tuple[float, str]:
    """POST /bind; seconds taken and the answer's Error."""
    body = orjson.dumps({"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node})
    start = time.monotonic()
    ((status, _, answer),) = exchange(port, post("/bind", body), 1)
    assert status == b"HTTP/1.1 200 OK"
    error: Any = orjson.loads(answer)["Error"]
    return time.monotonic() - start, error


def node_of(core: client.CoreV1Api, namespace: str, name: str, wait: float = 30) -> str:
    deadline = time.monotonic() + wait
    while True:
        node = core.read_namespaced_pod(name, namespace).spec.node_name or ""
        if node or time.monotonic() > deadline:
            return node
        time.sleep(0.2)


@contextlib.contextmanager
def frozen_for(control_plane: LocalControlPlane, seconds: float) -> Iterator[None]:
    """The API server frozen now and thawed ``seconds`` later, whatever the block is waiting on."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(control_plane.frozen_apiserver())
        timer = threading.Timer(seconds, stack.pop_all().close)
        timer.start()
        try:
            yield
        finally:
            timer.join()


def test_a_bind_while_the_api_server_is_frozen_answers_in_time_and_the_retry_tells_the_truth(
    control_plane: LocalControlPlane, kube_client: client.ApiClient, namespace: str, berth: int
) -> None:
    core = client.CoreV1Api(kube_client)
    name, uid = pending_pod(core, namespace)
    with frozen_for(control_plane, 2 * BIND_TIMEOUT + 1):
        took, error = bind(berth, namespace, name, uid, "node-a")
        assert took < BIND_TIMEOUT + 1.5
        assert "no answer from the API server within 2s" in error
        # kube-scheduler's retry while the first bind is still in flight: no second Binding is sent.
        took, error = bind(berth, namespace, name, uid, "node-a")
        assert took < BIND_TIMEOUT + 1.5 and "no answer from the API server" in error
    assert node_of(core, namespace, name) == "node-a"  # the first bind was applied after the thaw
    took, error = bind(berth, namespace, name, uid, "node-a")
    assert error == ""  # the retry reports the bind that happened
    took, error = bind(berth, namespace, name, uid, "node-b")
    assert error == f'binding pod {namespace}/{name} to node node-b: already bound to node "node-a"'
    assert node_of(core, namespace, name) == "node-a"


def test_a_bind_in_flight_when_retried_for_another_node_is_not_bound_twice(
    control_plane: LocalControlPlane, kube_client: client.ApiClient, namespace: str, berth: int
) -> None:
    core = client.CoreV1Api(kube_client)
    name, uid = pending_pod(core, namespace)
    with frozen_for(control_plane, 2 * BIND_TIMEOUT + 1):
        _, first = bind(berth, namespace, name, uid, "node-a")
        assert "no answer from the API server" in first
        # The retry for another node waits for the first bind instead of racing it with a second
        # Binding, which the thawed API server could apply first.
        _, second = bind(berth, namespace, name, uid, "node-b")
        assert "no answer from the API server" in second
    assert node_of(core, namespace, name) == "node-a"
    _, third = bind(berth, namespace, name, uid, "node-b")
    assert third == f'binding pod {namespace}/{name} to node node-b: already bound to node "node-a"'
