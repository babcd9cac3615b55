"""Helpers shared by the tests of berth's API writes (events, pod status, preemption, binding)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest

from app.api.objects import Pod, parse_pod
from app.kube.client import KubeClient
from kube.controlplane import LocalControlPlane


@pytest.fixture(name="kc")
def raw_client(control_plane: LocalControlPlane) -> Iterator[KubeClient]:
    """``kc``: berth's raw client, as the admin (import ``raw_client`` to use it)."""
    client = KubeClient.from_config(str(control_plane.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def make_pod(kc: KubeClient, namespace: str, name: str, node: str = "", nominated: str = "") -> Pod:
    """Create a pod (bound to ``node`` if given, nominated to ``nominated`` if given)."""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    if node:
        spec["nodeName"] = node
    path = f"/api/v1/namespaces/{namespace}/pods"
    status, data = kc.request("POST", path, body={"metadata": {"name": name}, "spec": spec})
    assert status == 201, data
    if nominated:
        status, data = kc.request(
            "PATCH", f"{path}/{name}/status", body={"status": {"nominatedNodeName": nominated}}
        )
        assert status == 200, data
    return parse_pod(orjson.loads(data))


def get_pod(kc: KubeClient, pod: Pod) -> Pod | None:
    """The pod as the API server has it now, or None when it is gone."""
    status, data = kc.request("GET", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}")
    return parse_pod(orjson.loads(data)) if status == 200 else None


def list_events(kc: KubeClient, namespace: str) -> list[dict[str, Any]]:
    """The events.k8s.io/v1 Events of ``namespace``, oldest first."""
    items: list[dict[str, Any]] = kc.get_json(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")[
        "items"
    ]
    return sorted(items, key=lambda e: e["eventTime"])


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``predicate`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)
