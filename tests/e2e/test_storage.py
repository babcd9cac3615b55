"""The volume plugins under ``berth run`` on the real control plane, with kube-controller-manager's
PersistentVolume binder controller completing the bindings that VolumeBinding's PreBind starts, and a
small dynamic provisioner (in this file) playing an external CSI provisioner's part.

- WaitForFirstConsumer local PVs on two nodes: each pod lands where its PV is; the PV ends bound.
- A zonal PV keeps its pod in its zone (VolumeZone).
- An Immediate claim nobody binds keeps its pod pending with kube-scheduler's message.
- Two pods sharing a ReadWriteOncePod claim: the second waits with kube-scheduler's reason.
- A CSI attach limit (CSINode allocatable count) reached on one node sends the next pod elsewhere.
- Dynamic provisioning: the claim gets the selected-node annotation, the test provisioner creates a PV
  there, the PV controller binds it, the pod binds.
- A bind timeout (no PV ever appears): PreBind fails after bindTimeoutSeconds, the claims are
  unreserved, the pod is requeued and binds once a provisioner appears.
- A pod deleted while PreBind waits: the wait ends with kube-scheduler's "pod does not exist any more".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from e2e.cluster import WAIT, Cluster, _ignore_missing
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from kubernetes import client

from kube.controlplane import LocalControlPlane

# Every test runs under the module's berth_run with the PV binder controller completing bindings.
pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("pv_controller")]

BIND_TIMEOUT = 8
#: The module's ``berth_run`` (tests/e2e/conftest.py): bindTimeoutSeconds short for the timeout test.
BERTH_PROFILE = f"""\
  pluginConfig:
  - name: VolumeBinding
    args: {{bindTimeoutSeconds: {BIND_TIMEOUT}}}
"""
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"


@pytest.fixture(scope="module")
def pv_controller(control_plane: LocalControlPlane) -> Iterator[None]:
    """kube-controller-manager with the PV binder only, for this module's tests."""
    with control_plane.controller_manager(["persistentvolume-binder-controller"]):
        yield


class Storage:
    """The storage objects one test creates (cluster-scoped ones named after the test), deleted after it."""

    def __init__(self, api: client.ApiClient, cluster: Cluster) -> None:
        self.core = client.CoreV1Api(api)
        self.storage = client.StorageV1Api(api)
        self.cluster = cluster
        self.namespace = cluster.namespace
        self.label = cluster.label
        self.pvs: list[str] = []
        self.classes: list[str] = []
        self.csi_nodes: list[str] = []

    def name(self, suffix: str) -> str:
        """A cluster-scoped name unique to this test."""
        return f"{suffix}-{self.label}"

    def storage_class(
        self, suffix: str, provisioner: str, mode: str = "WaitForFirstConsumer", **extra: Any
    ) -> str:
        name = self.name(suffix)
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": mode,
            **extra,
        }
        self.storage.create_storage_class(body)
        self.classes.append(name)
        return name

    def pv(
        self,
        suffix: str,
        storage_class: str,
        *,
        node: str = "",
        labels: dict[str, str] | None = None,
        modes: tuple[str, ...] = ("ReadWriteOnce",),
        csi_driver: str = "",
    ) -> str:
        name = self.name(suffix)
        spec: dict[str, Any] = {
            "capacity": {"storage": "1Gi"},
            "accessModes": list(modes),
            "storageClassName": storage_class,
            "persistentVolumeReclaimPolicy": "Retain",
        }
        if csi_driver:
            spec["csi"] = {"driver": csi_driver, "volumeHandle": name}
        else:
            spec["local"] = {"path": "/mnt/disk"}
        if node or not csi_driver:
            host = node or self.cluster.nodes[0]
            spec["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [host]}]}
                    ]
                }
            }
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": spec,
        }
        self.core.create_persistent_volume(body)
        self.pvs.append(name)
        return name

    def claim(self, name: str, storage_class: str, modes: tuple[str, ...] = ("ReadWriteOnce",)) -> str:
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "storageClassName": storage_class,
                "accessModes": list(modes),
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        self.core.create_namespaced_persistent_volume_claim(self.namespace, body)
        return name

    def csi_node(self, node: str, driver: str, count: int) -> None:
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": node},
            "spec": {"drivers": [{"name": driver, "nodeID": node, "allocatable": {"count": count}}]},
        }
        self.storage.create_csi_node(body)
        self.csi_nodes.append(node)

    def pod(self, name: str, *claims: str) -> str:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "schedulerName": SCHEDULER_NAME,
                "nodeSelector": {"berth-e2e/test": self.label},
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                "volumes": [
                    {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
                ],
            },
        }
        self.core.create_namespaced_pod(self.namespace, body)
        self.cluster.pods.append(name)
        return name

    def read_claim(self, name: str) -> Any:
        return self.core.read_namespaced_persistent_volume_claim(name, self.namespace)

    def wait_claim_bound(self, name: str, timeout: float = WAIT) -> str:
        """The PV ``name`` is bound to (phase Bound), once the PV controller has bound it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            claim = self.read_claim(name)
            if claim.status.phase == "Bound" and claim.spec.volume_name:
                return str(claim.spec.volume_name)
            time.sleep(0.2)
        pytest.fail(
            f"claim {self.namespace}/{name} not bound after {timeout:.0f}s: {self.read_claim(name).status}"
        )

    def cleanup(self) -> None:
        for pv in self.pvs:
            _ignore_missing(lambda n=pv: self.core.delete_persistent_volume(n))
        for sc in self.classes:
            _ignore_missing(lambda n=sc: self.storage.delete_storage_class(n))
        for node in self.csi_nodes:
            _ignore_missing(lambda n=node: self.storage.delete_csi_node(n))


@pytest.fixture
def storage(kube_client: client.ApiClient, cluster: Cluster) -> Iterator[Storage]:
    s = Storage(kube_client, cluster)
    try:
        yield s
    finally:
        s.cleanup()


class Provisioner:
    """A dynamic provisioner, as an external CSI provisioner behaves for the scheduler: for each claim of
    its classes that the PV controller handed to it (``volume.kubernetes.io/storage-provisioner``) and
    the scheduler gave a node (``volume.kubernetes.io/selected-node``), create a PV on that node, pre-bound
    to the claim; the PV controller then binds the claim."""

    def __init__(self, storage: Storage, name: str) -> None:
        self.storage = storage
        self.name = name
        self.created: dict[str, str] = {}  # claim -> PV
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"provisioner-{name}", daemon=True)

    def __enter__(self) -> Provisioner:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        core = self.storage.core
        while not self._stop.wait(0.2):
            for claim in core.list_namespaced_persistent_volume_claim(self.storage.namespace).items:
                annotations = claim.metadata.annotations or {}
                node = annotations.get(SELECTED_NODE)
                if annotations.get(STORAGE_PROVISIONER) != self.name or not node:
                    continue
                if claim.metadata.name in self.created or claim.spec.volume_name:
                    continue
                pv = self.storage.name(f"pvc-{claim.metadata.uid[:8]}")
                body = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": pv, "annotations": {"pv.kubernetes.io/provisioned-by": self.name}},
                    "spec": {
                        "capacity": {"storage": claim.spec.resources.requests["storage"]},
                        "accessModes": claim.spec.access_modes,
                        "storageClassName": claim.spec.storage_class_name,
                        "persistentVolumeReclaimPolicy": "Retain",
                        "csi": {"driver": self.name, "volumeHandle": pv},
                        "claimRef": {
                            "namespace": claim.metadata.namespace,
                            "name": claim.metadata.name,
                            "uid": claim.metadata.uid,
                        },
                        "nodeAffinity": {
                            "required": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": HOSTNAME, "operator": "In", "values": [node]}
                                        ]
                                    }
                                ]
                            }
                        },
                    },
                }
                core.create_persistent_volume(body)
                self.storage.pvs.append(pv)
                self.created[claim.metadata.name] = pv


def _node_of(core: client.CoreV1Api, pv: str) -> str:
    affinity = core.read_persistent_volume(pv).spec.node_affinity
    return str(affinity.required.node_selector_terms[0].match_expressions[0].values[0])


def test_wait_for_first_consumer_local_pvs_on_two_nodes(
    berth_run: BerthScheduler, cluster: Cluster, storage: Storage
) -> None:
    a, b = cluster.create_node("a"), cluster.create_node("b")
    local = storage.storage_class("local", "kubernetes.io/no-provisioner")
    storage.pv("pv-a", local, node=a)
    storage.pv("pv-b", local, node=b)
    storage.claim("data-0", local)
    storage.claim("data-1", local)
    placed = {}
    for i in range(2):
        pod = storage.pod(f"db-{i}", f"data-{i}")
        node = cluster.wait_bound(pod)
        pv = storage.wait_claim_bound(f"data-{i}")
        assert _node_of(storage.core, pv) == node  # the pod is where its PV is
        claim_ref = storage.core.read_persistent_volume(pv).spec.claim_ref
        assert (claim_ref.namespace, claim_ref.name) == (cluster.namespace, f"data-{i}")
        placed[pod] = node
    assert sorted(placed.values()) == sorted([a, b])  # two PVs, two nodes: one each


def test_zonal_pv_keeps_the_pod_in_its_zone(
    berth_run: BerthScheduler, cluster: Cluster, storage: Storage
) -> None:
    cluster.create_node("a", labels={ZONE: "zone-a"})
    b = cluster.create_node("b", labels={ZONE: "zone-b"})
    manual = storage.storage_class("manual", "kubernetes.io/no-provisioner", mode="Immediate")
    storage.pv("zonal", manual, labels={ZONE: "zone-b"}, csi_driver="csi.example.com")
    storage.claim("data", manual)
    storage.wait_claim_bound("data")  # Immediate: the PV controller binds it before any pod
    pod = storage.pod("app", "data")
    assert cluster.wait_bound(pod) == b


def test_immediate_claim_left_unbound_keeps_the_pod_pending(
    berth_run: BerthScheduler, cluster: Cluster, storage: Storage
) -> None:
    cluster.create_node("a")
    manual = storage.storage_class("manual", "kubernetes.io/no-provisioner", mode="Immediate")
    storage.claim("orphan", manual)  # no PV will ever match
    pod = storage.pod("app", "orphan")
    message = cluster.wait_event(pod, "FailedScheduling", "pod has unbound immediate PersistentVolumeClaims")
    assert (
        message.startswith("0/")
        # kube-scheduler's text: DynamicResources' PostFilter finds no state of its own (docs/parity.md)
        and message.endswith(
            "nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
        )
    )
    condition = next(c for c in cluster.read_pod(pod).status.conditions if c.type == "PodScheduled")
    assert (condition.status, condition.reason) == ("False", "Unschedulable")
    assert "pod has unbound immediate PersistentVolumeClaims" in condition.message


def test_read_write_once_pod_claim_used_by_two_pods(
    berth_run: BerthScheduler, cluster: Cluster, storage: Storage
) -> None:
    cluster.create_node("a")
    cluster.create_node("b")
    manual = storage.storage_class("manual", "kubernetes.io/no-provisioner", mode="Immediate")
    storage.pv("solo", manual, modes=("ReadWriteOncePod",), csi_driver="csi.example.com")
    storage.claim("solo", manual, modes=("ReadWriteOncePod",))
    storage.wait_claim_bound("solo")
    first = storage.pod("first", "solo")
    cluster.wait_bound(first)
    second = storage.pod("second", "solo")
    reason = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
    message = cluster.wait_event(second, "FailedScheduling", reason)
    assert f"2 {reason}" in message
    assert cluster.read_pod(second).spec.node_name is None


def test_csi_attach_limit_reached_on_one_node(
    berth_run: BerthScheduler, cluster: Cluster, storage: Storage
) -> None:
    a, b = cluster.create_node("a"), cluster.create_node("b")
    driver = f"csi-{storage.label}.example.com"
    storage.csi_node(a, driver, 1)
    storage.csi_node(b, driver, 1)
    manual = storage.storage_class("manual", driver, mode="Immediate")
    for i in range(3):
        storage.pv(f"disk-{i}", manual, csi_driver=driver)
        storage.claim(f"disk-{i}", manual)
    for i in range(3):
        storage.wait_claim_bound(f"disk-{i}")
    nodes = {cluster.wait_bound(storage.pod(f"app-{i}", f"disk-{i}")) for i in range(2)}
    assert nodes == {a, b}  # one attachable volume per node
    third = storage.pod("app-2", "disk-2")
    message = cluster.wait_event(third, "FailedScheduling", "node(s) exceed max volume count")
    assert "2 node(s) exceed max volume count" in message


def test_dynamic_provisioning_through_the_test_provisioner(
    berth_run: BerthScheduler, cluster: Cluster, storage: Storage
) -> None:
    cluster.create_node("a", labels={ZONE: "zone-a"})
    b = cluster.create_node("b", labels={ZONE: "zone-b"})
    name = f"provisioner-{storage.label}.example.com"
    topology = [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-b"]}]}]
    fast = storage.storage_class("fast", name, allowedTopologies=topology)
    storage.claim("scratch", fast)
    with Provisioner(storage, name) as provisioner:
        pod = storage.pod("cache", "scratch")
        assert cluster.wait_bound(pod) == b  # allowedTopologies: zone b only
        assert storage.read_claim("scratch").metadata.annotations[SELECTED_NODE] == b
        pv = storage.wait_claim_bound("scratch")
        assert provisioner.created == {"scratch": pv}
        assert _node_of(storage.core, pv) == b


def test_bind_timeout_unreserves_and_requeues(
    berth_run: BerthScheduler, cluster: Cluster, storage: Storage
) -> None:
    node = cluster.create_node("a")
    name = f"late-{storage.label}.example.com"
    slow = storage.storage_class("slow", name)
    storage.claim("data", slow)
    pod = storage.pod("app", "data")
    # No provisioner: PreBind waits bindTimeoutSeconds, then fails with kube-scheduler's error.
    message = cluster.wait_event(
        pod, "FailedScheduling", "binding volumes: context deadline exceeded", timeout=BIND_TIMEOUT + WAIT
    )
    assert 'running PreBind plugin "VolumeBinding"' in message
    assert cluster.read_pod(pod).spec.node_name is None
    assert storage.read_claim("data").metadata.annotations[SELECTED_NODE] == node
    # Unreserved and requeued: once a provisioner serves the class, a later attempt binds the pod.
    with Provisioner(storage, name):
        assert cluster.wait_bound(pod, timeout=BIND_TIMEOUT + 2 * WAIT) == node
    storage.wait_claim_bound("data")


def test_prebind_wait_ends_when_the_pod_is_deleted(
    berth_run: BerthScheduler, cluster: Cluster, storage: Storage
) -> None:
    node = cluster.create_node("a")
    slow = storage.storage_class("gone", f"never-{storage.label}.example.com")
    storage.claim("data", slow)
    pod = storage.pod("doomed", "data")
    # PreBind wrote the selected node and now waits for a provisioner that never comes.
    deadline = time.monotonic() + WAIT
    while (storage.read_claim("data").metadata.annotations or {}).get(SELECTED_NODE) != node:
        assert time.monotonic() < deadline, "PreBind never selected the node"
        time.sleep(0.2)
    cluster.core.delete_namespaced_pod(pod, cluster.namespace, grace_period_seconds=0)
    # checkBindings sees the pod gone from the informer and stops, instead of waiting out the timeout.
    message = cluster.wait_event(pod, "FailedScheduling", "pod does not exist any more", timeout=BIND_TIMEOUT)
    assert message == (
        'running PreBind plugin "VolumeBinding": binding volumes: pod does not exist any more: '
        f'pod "{pod}" not found'
    )
