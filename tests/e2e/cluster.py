"""What one end-to-end test creates through the API, and waiting on what kube-scheduler does with it."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

WAIT = 30.0
"""Seconds any single wait may take before the test fails."""

PREFERRED_LABEL = "example.com/fast-disk"
TEST_LABEL = "berth-e2e/test"


class Cluster:
    """What one test creates through the API: nodes and pods, deleted again by :meth:`cleanup`."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.label = uuid.uuid4().hex[:10]
        self.nodes: list[str] = []
        self.pods: list[str] = []

    def node_name(self, suffix: str) -> str:
        """A node name unique to this test."""
        return f"{suffix}-{self.label}"

    def create_node(
        self,
        suffix: str,
        cpu: str = "2",
        memory: str = "4Gi",
        labels: dict[str, str] | None = None,
        pods: int = 110,
    ) -> str:
        """A Ready node with allocatable, the test's label and ``labels``, no taints."""
        name = self.node_name(suffix)
        resources = {"cpu": cpu, "memory": memory, "pods": str(pods)}
        all_labels = {"kubernetes.io/hostname": name, TEST_LABEL: self.label, **(labels or {})}
        self.core.create_node(
            client.V1Node(
                metadata=client.V1ObjectMeta(name=name, labels=all_labels),
                status=client.V1NodeStatus(
                    capacity=resources,
                    allocatable=resources,
                    conditions=[client.V1NodeCondition(type="Ready", status="True")],
                ),
            )
        )
        self.nodes.append(name)
        return name

    def create_pod(
        self,
        name: str,
        cpu: str = "100m",
        node_name: str | None = None,
        annotations: dict[str, str] | None = None,
        scheduler_name: str | None = None,
        extended: dict[str, str] | None = None,
    ) -> str:
        """A pod selecting the test's nodes; ``node_name`` creates it already bound (no scheduler)."""
        requests = {"cpu": cpu, "memory": "64Mi", **(extended or {})}
        limits = dict(extended or {})  # extended resources need limits equal to requests
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(name=name, annotations=annotations),
            spec=client.V1PodSpec(
                containers=[
                    client.V1Container(
                        name="c",
                        image="registry.k8s.io/pause:3.10",
                        resources=client.V1ResourceRequirements(requests=requests, limits=limits or None),
                    )
                ],
                node_selector={TEST_LABEL: self.label},
                node_name=node_name,
                scheduler_name=scheduler_name,
            ),
        )
        self.core.create_namespaced_pod(self.namespace, pod)
        self.pods.append(name)
        return name

    def read_pod(self, name: str) -> Any:
        """The pod as the API server has it."""
        return self.core.read_namespaced_pod(name, self.namespace)

    def wait_bound(self, name: str, timeout: float = WAIT) -> str:
        """The node ``name`` gets bound to; fail after ``timeout`` with the pod's events."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            node = self.read_pod(name).spec.node_name
            if node:
                return str(node)
            time.sleep(0.1)
        pytest.fail(
            f"pod {self.namespace}/{name} not bound after {timeout:.0f}s; events: {self.events(name)}"
        )

    def events(self, pod: str) -> list[tuple[str, str]]:
        """``(reason, message)`` of the core/v1 Events about ``pod`` (kube-scheduler records them)."""
        listed = self.core.list_namespaced_event(self.namespace, field_selector=f"involvedObject.name={pod}")
        return [(e.reason or "", e.message or "") for e in listed.items]

    def wait_event(self, pod: str, reason: str, contains: str, timeout: float = WAIT) -> str:
        """The message of the first ``reason`` event about ``pod`` containing ``contains``."""
        deadline = time.monotonic() + timeout
        seen: list[tuple[str, str]] = []
        while time.monotonic() < deadline:
            seen = self.events(pod)
            for got_reason, message in seen:
                if got_reason == reason and contains in message:
                    return message
            time.sleep(0.2)
        pytest.fail(
            f"no {reason} event containing {contains!r} for pod {pod} after {timeout:.0f}s; got {seen}"
        )

    def cleanup(self) -> None:
        """Force-delete the pods (no kubelet would confirm a graceful deletion), then the nodes."""
        for name in self.pods:
            _ignore_missing(
                lambda n=name: self.core.delete_namespaced_pod(n, self.namespace, grace_period_seconds=0)
            )
        for name in self.nodes:
            _ignore_missing(lambda n=name: self.core.delete_node(n))


def _ignore_missing(call: Callable[[], object]) -> None:
    try:
        call()
    except ApiException as err:
        if err.status != 404:
            raise


@contextlib.contextmanager
def two_node_cluster(
    api: client.ApiClient, namespace: str, cpu: str = "4", memory: str = "4Gi"
) -> Iterator[Cluster]:
    """Nodes ``a`` and ``b`` of ``cpu``/``memory`` for one test, pods in ``namespace``, all deleted after."""
    c = Cluster(api, namespace)
    c.create_node("a", cpu=cpu, memory=memory)
    c.create_node("b", cpu=cpu, memory=memory)
    try:
        yield c
    finally:
        c.cleanup()
