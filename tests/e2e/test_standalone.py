"""``berth run`` against the real control plane: binding, failures, requeue, gates, leader election."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from e2e.cluster import Cluster, two_node_cluster
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from kubernetes import client

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube


def _lease_holder(api: client.ApiClient, namespace: str, name: str) -> str:
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease(name, namespace)
    except client.ApiException:
        return ""
    return str(lease.spec.holder_identity or "")


def _scheduler(
    control_plane: LocalControlPlane, tmp_path: Path, namespace: str, lease: str, name: str = "berth-run"
) -> BerthScheduler:
    return BerthScheduler.on(control_plane, tmp_path, namespace=namespace, lease_name=lease, name=name)


@pytest.fixture
def cluster(kube_client: client.ApiClient, namespace: str) -> Iterator[Cluster]:
    """Two 4-cpu nodes for this test."""
    with two_node_cluster(kube_client, namespace) as c:
        yield c


@pytest.fixture
def berth(
    control_plane: LocalControlPlane, tmp_path: Path, namespace: str, cluster: Cluster
) -> Iterator[BerthScheduler]:
    """One ``berth run`` (leader election on, its lease in the test's namespace)."""
    proc = _scheduler(control_plane, tmp_path, namespace, f"berth-{uuid.uuid4().hex[:6]}").start()
    try:
        yield proc
    finally:
        proc.stop()


def test_binds_its_pods_ignores_others_and_explains(berth: BerthScheduler, cluster: Cluster) -> None:
    ours = [cluster.create_pod(f"ours-{i}", cpu="1", scheduler_name=SCHEDULER_NAME) for i in range(3)]
    other = cluster.create_pod("other", cpu="1", scheduler_name="someone-else")
    for name in ours:
        assert cluster.wait_bound(name) in cluster.nodes
        message = cluster.wait_event(name, "Scheduled", "Successfully assigned")
        assert message.startswith(f"Successfully assigned {cluster.namespace}/{name} to ")
    assert cluster.read_pod(other).spec.node_name is None
    trace = berth.get_json(f"/debug/pods/{cluster.namespace}/ours-0")
    assert trace["status"] == "Scheduled" and trace["node"] in cluster.nodes
    assert set(trace["scores"]) <= set(cluster.nodes)
    assert berth.get(f"/debug/pods/{cluster.namespace}/{other}")[0] == 404
    status, body = berth.get("/readyz?verbose")
    assert status == 200 and "[+]sched-handler-sync ok" in body
    status, body = berth.get("/metrics/resources")
    assert status == 200 and 'pod="ours-0"' in body and "kube_pod_resource_request" in body


def test_unschedulable_pod_gets_condition_and_event_then_binds_when_a_node_fits(
    berth: BerthScheduler, cluster: Cluster
) -> None:
    name = cluster.create_pod("big", cpu="6", scheduler_name=SCHEDULER_NAME)
    message = cluster.wait_event(name, "FailedScheduling", "Insufficient cpu")
    # Nodes of other tests may exist too: they fail the pod's node selector.
    assert message.startswith("0/") and "2 Insufficient cpu" in message and " preemption: " in message
    deadline = time.monotonic() + 30
    condition = None
    while time.monotonic() < deadline and condition is None:
        for c in cluster.read_pod(name).status.conditions or []:
            if c.type == "PodScheduled":
                condition = c
        time.sleep(0.1)
    assert condition is not None
    assert (condition.status, condition.reason) == ("False", "Unschedulable")
    assert condition.message == message
    trace = berth.get_json(f"/debug/pods/{cluster.namespace}/{name}")
    assert trace["status"] == "Unschedulable"
    assert {trace["filter"][n]["plugin"] for n in cluster.nodes} == {"NodeResourcesFit"}
    big = cluster.create_node("big", cpu="8")
    assert cluster.wait_bound(name) == big


def test_gated_pod_waits_for_its_gates(berth: BerthScheduler, cluster: Cluster) -> None:
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="gated"),
        spec=client.V1PodSpec(
            scheduler_name=SCHEDULER_NAME,
            scheduling_gates=[client.V1PodSchedulingGate(name="example.com/wait")],
            node_selector={"berth-e2e/test": cluster.label},
            containers=[client.V1Container(name="c", image="registry.k8s.io/pause:3.10")],
        ),
    )
    cluster.core.create_namespaced_pod(cluster.namespace, pod)
    cluster.pods.append("gated")
    time.sleep(1.5)
    assert cluster.read_pod("gated").spec.node_name is None
    cluster.core.patch_namespaced_pod("gated", cluster.namespace, {"spec": {"schedulingGates": None}})
    assert cluster.wait_bound("gated") in cluster.nodes


def test_only_the_leader_schedules_and_a_follower_takes_over_after_sigkill(
    control_plane: LocalControlPlane,
    kube_client: client.ApiClient,
    tmp_path: Path,
    namespace: str,
    cluster: Cluster,
) -> None:
    lease = f"berth-{uuid.uuid4().hex[:6]}"
    replicas = [_scheduler(control_plane, tmp_path, namespace, lease, name=f"berth-{i}") for i in range(2)]
    for r in replicas:
        r.start()
    try:
        deadline = time.monotonic() + 30
        holder = ""
        while not holder and time.monotonic() < deadline:
            holder = _lease_holder(kube_client, namespace, lease)
            time.sleep(0.1)
        assert holder, "no replica acquired the lease"
        leaders = [r for r in replicas if r.get("/metrics/resources")[0] == 200]
        followers = [r for r in replicas if r.get("/metrics/resources")[0] == 503]
        assert len(leaders) == 1 and len(followers) == 1
        first = cluster.create_pod("before", cpu="1", scheduler_name=SCHEDULER_NAME)
        cluster.wait_bound(first)
        leaders[0].stop(signal.SIGKILL)
        killed_at = time.monotonic()
        last_renew = (
            client.CoordinationV1Api(kube_client).read_namespaced_lease(lease, namespace).spec.renew_time
        )
        second = cluster.create_pod("after", cpu="1", scheduler_name=SCHEDULER_NAME)
        cluster.wait_bound(second, timeout=30)
        took = time.monotonic() - killed_at
        spec = client.CoordinationV1Api(kube_client).read_namespaced_lease(lease, namespace).spec
        assert spec.holder_identity not in ("", holder)
        # The follower waited the lease out (Lease timestamps, one clock); how long it took is
        # reported, not asserted: the machine is shared.
        assert spec.acquire_time >= last_renew + timedelta(seconds=4)
        print(f"\n[failover] pod created after the SIGKILL bound {took:.2f}s after it")
    finally:
        for r in replicas:
            r.stop()


def test_copies_of_one_pod_see_pod_deletes_and_node_updates(berth: BerthScheduler, cluster: Cluster) -> None:
    # Copies of one pod: from the second, berth run answers unchanged nodes from its node memo.
    # Each change below comes after a FitError, so the pod can only bind once berth has seen it.
    copies = [cluster.create_pod(f"copy-{i}", cpu="1", scheduler_name=SCHEDULER_NAME) for i in range(8)]
    placed = {name: cluster.wait_bound(name) for name in copies}
    a, b = cluster.nodes
    assert sorted(placed.values()) == [a] * 4 + [b] * 4
    waiting = cluster.create_pod("copy-8", cpu="1", scheduler_name=SCHEDULER_NAME)
    message = cluster.wait_event(waiting, "FailedScheduling", "Insufficient cpu")
    assert "2 Insufficient cpu" in message
    on_b = next(name for name, node in placed.items() if node == b)
    cluster.core.delete_namespaced_pod(on_b, cluster.namespace, grace_period_seconds=0)
    assert cluster.wait_bound(waiting) == b  # the deletion freed b: its verdict was asked again
    later = cluster.create_pod("copy-9", cpu="1", scheduler_name=SCHEDULER_NAME)
    cluster.wait_event(later, "FailedScheduling", "2 Insufficient cpu")
    grown = {"cpu": "8", "memory": "4Gi", "pods": "110"}
    cluster.core.patch_node_status(a, {"status": {"allocatable": grown, "capacity": grown}})
    assert cluster.wait_bound(later) == a  # the node update: a's verdict was asked again
    trace = berth.get_json(f"/debug/pods/{cluster.namespace}/{later}")
    assert trace["status"] == "Scheduled" and trace["node"] == a
