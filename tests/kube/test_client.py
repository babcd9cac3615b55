"""``app.kube.client.KubeClient`` against the real control plane: raw requests, errors, bind, watch, QPS."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from app.kube.client import KubeClient, KubeError
from app.kube.ratelimit import TokenBucket
from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube


@pytest.fixture
def kc(control_plane: LocalControlPlane) -> Iterator[KubeClient]:
    client = KubeClient.from_config(str(control_plane.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def pod_body(name: str, node: str = "", cpu: str = "100m") -> dict[str, object]:
    spec: dict[str, object] = {
        "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
        ]
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_request_returns_status_and_raw_bytes(kc: KubeClient) -> None:
    status, data = kc.request("GET", "/version")
    assert status == 200
    assert orjson.loads(data)["gitVersion"] == "v1.36.3"


def test_request_never_raises_for_http_errors(kc: KubeClient, namespace: str) -> None:
    status, data = kc.request("GET", f"/api/v1/namespaces/{namespace}/pods/missing")
    assert status == 404
    assert orjson.loads(data)["reason"] == "NotFound"


def test_get_json_404_raises_with_the_status_message(kc: KubeClient, namespace: str) -> None:
    with pytest.raises(KubeError) as err:
        kc.get_json(f"/api/v1/namespaces/{namespace}/pods/missing")
    assert err.value.status == 404
    assert err.value.reason == "NotFound"
    assert err.value.message == 'pods "missing" not found'


def test_get_json_with_params_paginates(kc: KubeClient) -> None:
    page = kc.get_json("/api/v1/namespaces", {"limit": "1"})
    assert len(page["items"]) == 1
    assert page["metadata"]["continue"]  # kube-system, default, kube-public, ... : more than one


def test_post_with_body_and_bind(kc: KubeClient, namespace: str) -> None:
    status, data = kc.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod_body("p"))
    assert status == 201, data
    uid = orjson.loads(data)["metadata"]["uid"]
    kc.bind(namespace, "p", uid, "some-node")
    pod = kc.get_json(f"/api/v1/namespaces/{namespace}/pods/p")
    assert pod["spec"]["nodeName"] == "some-node"
    # A second bind of a bound pod is refused, and the Status message explains why.
    with pytest.raises(KubeError) as err:
        kc.bind(namespace, "p", uid, "other-node")
    assert err.value.status == 409
    assert "already assigned" in err.value.message


def test_bind_with_a_stale_uid_is_refused(kc: KubeClient, namespace: str) -> None:
    status, _ = kc.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod_body("q"))
    assert status == 201
    with pytest.raises(KubeError) as err:
        kc.bind(namespace, "q", str(uuid.uuid4()), "some-node")
    assert err.value.status == 409  # the UID precondition: the pod was recreated meanwhile
    assert "Precondition failed" in err.value.message


def test_patch_is_a_merge_patch(kc: KubeClient, namespace: str) -> None:
    kc.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body={"metadata": {"name": "cm"}})
    status, data = kc.request(
        "PATCH", f"/api/v1/namespaces/{namespace}/configmaps/cm", body={"data": {"k": "v"}}
    )
    assert status == 200, data
    assert orjson.loads(data)["data"] == {"k": "v"}


def test_watch_streams_decoded_events_and_closes(kc: KubeClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    rv = kc.get_json(path)["metadata"]["resourceVersion"]
    stream = kc.watch(path, {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "30"})
    kc.request("POST", path, body={"metadata": {"name": "w1"}, "data": {"a": "1"}})
    kc.request("DELETE", f"{path}/w1")
    events = []
    for event in stream:
        events.append((event["type"], event["object"]["metadata"]["name"]))
        if len(events) == 2:
            break
    stream.close()
    stream.close()  # idempotent
    assert events == [("ADDED", "w1"), ("DELETED", "w1")]


def test_watch_close_from_another_thread_ends_iteration(kc: KubeClient, namespace: str) -> None:
    stream = kc.watch(f"/api/v1/namespaces/{namespace}/secrets", {"timeoutSeconds": "60"})
    threading.Timer(0.3, stream.close).start()
    started = time.monotonic()
    events = list(stream)  # no event comes: only close() can end this before the 60 s timeout
    assert time.monotonic() - started < 10
    assert all(e["type"] == "ADDED" for e in events)  # at most the (empty) initial state


def test_watch_of_an_unknown_resource_raises(kc: KubeClient) -> None:
    with pytest.raises(KubeError) as err:
        kc.watch("/api/v1/nosuchthings", {})
    assert err.value.status == 404


def test_rate_limiter_limits_requests(control_plane: LocalControlPlane) -> None:
    n = 5
    with KubeClient.from_config(str(control_plane.kubeconfig), qps=5, burst=1) as slow:
        started = time.monotonic()
        for _ in range(n):
            assert slow.request("GET", "/version")[0] == 200
        elapsed = time.monotonic() - started
    assert elapsed >= (n - 1) / 5 - 0.05  # the first token is free; each later one waits 1/qps


def test_token_bucket_saves_up_to_burst() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    bucket = TokenBucket(10, 3, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        bucket.accept()
    assert slept == []  # the bucket starts full
    bucket.accept()
    assert slept == [pytest.approx(0.1)]
    now[0] += 10  # a long pause refills only up to burst
    for _ in range(3):
        bucket.accept()
    assert len(slept) == 1
    assert TokenBucket(0, 1).reserve() == 0.0  # qps <= 0: unlimited


def test_master_overrides_the_kubeconfig_server(control_plane: LocalControlPlane) -> None:
    with KubeClient.from_config(str(control_plane.kubeconfig), master="https://127.0.0.1:1") as kc:
        assert kc.host == "https://127.0.0.1:1"
        with pytest.raises(KubeError) as err:
            kc.request("GET", "/version", timeout=5)
        assert err.value.status == 0  # a transport failure, not an HTTP status


def test_kubeconfig_from_the_environment(
    control_plane: LocalControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    with KubeClient.from_config() as kc:
        assert kc.host == control_plane.server
        assert kc.request("GET", "/readyz")[0] == 200


def test_missing_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(KubeError) as err:
        KubeClient.from_config(str(tmp_path / "nope"))
    assert err.value.status == 0
    assert "no such file" in err.value.message


def test_no_kubeconfig_and_no_cluster_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(KubeError) as err:
        KubeClient.from_config()
    assert "in-cluster" in err.value.message
