"""Helpers shared by the leader-election and lease-candidate tests."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client as k8s_client

from app.kube.client import KubeClient
from app.kube.leaderelection import LeaderElectionConfig, LeaderElector
from kube.controlplane import LocalControlPlane

#: Short durations (lease, renew deadline, retry period) that keep the timing tests fast.
FAST = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.3}
LOCK = "berth"
MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def admin_client(cp: LocalControlPlane) -> Iterator[KubeClient]:
    """For a fixture: an admin KubeClient for ``cp``, closed afterwards."""
    client = KubeClient.from_config(str(cp.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def offline_client() -> KubeClient:
    """A client for a port nothing listens on, for tests that must fail before any request."""
    return KubeClient(k8s_client.ApiClient(k8s_client.Configuration(host="http://127.0.0.1:9")))


def new_namespace(kc: KubeClient) -> str:
    """Create a fresh namespace."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    status, data = kc.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
    assert status == 201, data
    return name


def eventually(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait until ``check()`` holds, failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def lease_path(namespace: str, name: str = LOCK) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"


def get_lease(kc: KubeClient, namespace: str, name: str = LOCK) -> dict[str, Any]:
    return kc.get_json(lease_path(namespace, name))


def lease_spec(kc: KubeClient, namespace: str, name: str = LOCK) -> dict[str, Any]:
    spec: dict[str, Any] = get_lease(kc, namespace, name)["spec"]
    return spec


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Callbacks:
    """Records what an elector reports."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.stopped_at = 0.0
        self.leaders: list[str] = []

    def on_started_leading(self) -> None:
        self.started.set()

    def on_stopped_leading(self) -> None:
        self.stopped_at = time.monotonic()
        self.stopped.set()

    def on_new_leader(self, identity: str) -> None:
        self.leaders.append(identity)


def make_elector(
    kc: KubeClient,
    namespace: str,
    identity: str,
    callbacks: Callbacks | None = None,
    clock: Callable[[], float] = time.monotonic,
    **options: Any,
) -> LeaderElector:
    """An elector on the ``berth`` Lease of ``namespace`` with the :data:`FAST` timings unless overridden."""
    cb = callbacks or Callbacks()
    config = LeaderElectionConfig(
        namespace,
        LOCK,
        identity,
        on_started_leading=cb.on_started_leading,
        on_stopped_leading=cb.on_stopped_leading,
        on_new_leader=cb.on_new_leader,
        **{**FAST, **options},
    )
    return LeaderElector(kc, config, clock=clock)


class Running:
    """An elector's :meth:`~LeaderElector.run` in a thread, stopped (and joined) on exit."""

    def __init__(self, elector: LeaderElector) -> None:
        self.elector = elector
        self.stop_event = threading.Event()
        self.thread = elector.start(self.stop_event)

    def stop(self, release: bool = True, timeout: float = 10.0) -> None:
        """Stop; ``release=False`` simulates a crash: the Lease is left as it was last renewed."""
        self.elector.config.release_on_cancel = release
        self.stop_event.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the elector did not stop"

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread.is_alive():
            self.stop()
