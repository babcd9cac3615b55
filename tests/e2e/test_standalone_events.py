"""``berth run`` writes a ``Scheduled`` event for every pod of a burst, as kube-scheduler does.

client-go's events broadcaster has no limiter of its own (only the client's QPS), so no event is
dropped under load: ``kubectl describe pod`` shows how each pod was placed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from e2e.cluster import TEST_LABEL, Cluster
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from kubernetes import client

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

BURST = 2000
NODES = 4
WAIT = 180.0


def _pod(name: str, label: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            scheduler_name=SCHEDULER_NAME,
            node_selector={TEST_LABEL: label},
            containers=[
                client.V1Container(
                    name="c",
                    image="registry.k8s.io/pause:3.10",
                    resources=client.V1ResourceRequirements(requests={"cpu": "10m", "memory": "16Mi"}),
                )
            ],
        ),
    )


@pytest.fixture
def roomy_cluster(kube_client: client.ApiClient, namespace: str) -> Iterator[Cluster]:
    """Nodes with room for the whole burst; the burst's pods are deleted as one collection after."""
    c = Cluster(kube_client, namespace)
    for i in range(NODES):
        c.create_node(f"n{i}", cpu="64", memory="64Gi", pods=BURST)
    try:
        yield c
    finally:
        c.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        c.cleanup()


def _scheduled_events(core: client.CoreV1Api, namespace: str) -> set[str]:
    listed = core.list_namespaced_event(namespace, field_selector="reason=Scheduled")
    return {e.involved_object.name for e in listed.items}


def test_every_pod_of_a_burst_gets_its_scheduled_event(
    control_plane: LocalControlPlane, tmp_path: Path, namespace: str, roomy_cluster: Cluster
) -> None:
    core = roomy_cluster.core
    berth = BerthScheduler.on(
        control_plane,
        tmp_path,
        namespace=namespace,
        lease_name=f"berth-{uuid.uuid4().hex[:6]}",
        name="berth-events",
    ).start()
    try:
        names = [f"burst-{i}" for i in range(BURST)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(
                pool.map(lambda n: core.create_namespaced_pod(namespace, _pod(n, roomy_cluster.label)), names)
            )
        deadline = time.monotonic() + WAIT
        seen: set[str] = set()
        while time.monotonic() < deadline and len(seen) < BURST:
            time.sleep(1.0)
            seen = _scheduled_events(core, namespace)
        bound = sum(1 for p in core.list_namespaced_pod(namespace).items if p.spec.node_name)
    finally:
        berth.stop()
    assert bound == BURST
    missing = sorted(set(names) - seen)
    assert missing == [], f"{len(missing)} pods have no Scheduled event, e.g. {missing[:5]}"
