"""Fixtures of plugins/volumebinding/binder_test.go (v1.36.3): its classes, claims and volumes."""

from __future__ import annotations

from typing import Any

from app.api.objects import Node, Pod, parse_pod
from app.api.storage import parse_persistent_volume, parse_persistent_volume_claim
from app.plugins.helper.storage import StorageLister
from app.plugins.volumebinding.binder import BindingInfo, VolumeBinder
from builders import make_node, pod_dict
from plugins.storage_helpers import objects, storage_class

NODE_LABEL_KEY = "nodeKey"
NODE_LABEL_VALUE = "node1"
PROVISIONER = "test-provisioner"
WAIT_CLASS = "waitClass"
IMMEDIATE_CLASS = "immediateClass"
WAIT_CLASS_WITH_PROVISIONER = "waitClassWithProvisioner"
TOPO_MISMATCH_CLASS = "topoMismatchClass"
UNBOUND, PREBOUND, BOUND, SELECTED_NODE = range(4)


def _topology(*values: str) -> list[dict[str, Any]]:
    return [{"matchLabelExpressions": [{"key": NODE_LABEL_KEY, "values": list(values)}]}]


CLASSES = (
    storage_class(
        WAIT_CLASS_WITH_PROVISIONER,
        "WaitForFirstConsumer",
        PROVISIONER,
        allowedTopologies=_topology(NODE_LABEL_VALUE, "reference-value"),
    ),
    storage_class(IMMEDIATE_CLASS),
    storage_class(WAIT_CLASS, "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
    storage_class(
        TOPO_MISMATCH_CLASS,
        "WaitForFirstConsumer",
        PROVISIONER,
        allowedTopologies=_topology("reference-value"),
    ),
)


def make_test_pvc(
    name: str, size: str, node: str, state: int, pv_name: str, version: str, class_name: str
) -> dict[str, Any]:
    """makeTestPVC."""
    meta: dict[str, Any] = {"name": name, "namespace": "testns", "uid": "pvc-uid", "resourceVersion": version}
    spec: dict[str, Any] = {
        "resources": {"requests": {"storage": size}},
        "storageClassName": class_name,
        "volumeMode": "Filesystem",
    }
    if state == SELECTED_NODE:
        meta["annotations"] = {"volume.kubernetes.io/selected-node": node}
    if state == BOUND:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    if state in (BOUND, PREBOUND):
        spec["volumeName"] = pv_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def make_test_pv(
    name: str, node: str, capacity: str, version: str, bound_to: dict[str, Any] | None, class_name: str
) -> dict[str, Any]:
    """makeTestPV."""
    meta: dict[str, Any] = {"name": name, "resourceVersion": version}
    spec: dict[str, Any] = {
        "capacity": {"storage": capacity},
        "storageClassName": class_name,
        "volumeMode": "Filesystem",
    }
    if node:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": NODE_LABEL_KEY, "operator": "In", "values": [node]}]}
                ]
            }
        }
    if bound_to is not None:
        bmeta = bound_to["metadata"]
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "resourceVersion": bmeta["resourceVersion"],
            "name": bmeta["name"],
            "namespace": bmeta["namespace"],
            "uid": bmeta["uid"],
        }
        meta["annotations"] = {"pv.kubernetes.io/bound-by-controller": "yes"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Available"},
    }


def generic_ephemeral_pvc(volume_name: str, owned: bool) -> dict[str, Any]:
    """makeGenericEphemeralPVC: the claim of test-pod's generic ephemeral volume."""
    pvc = make_test_pvc(f"test-pod-{volume_name}", "1G", "", BOUND, "pv-bound", "1", IMMEDIATE_CLASS)
    if owned:
        pvc["metadata"]["ownerReferences"] = [{"name": "test-pod", "uid": "test-pod-uid", "controller": True}]
    return pvc


def capacity(name: str, class_name: str, node: Node | None, size: str, max_size: str = "") -> dict[str, Any]:
    """makeCapacity."""
    raw: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "default"},
        "storageClassName": class_name,
        "nodeTopology": {}
        if node is None
        else {"matchLabels": {NODE_LABEL_KEY: node.labels[NODE_LABEL_KEY]}},
    }
    if size:
        raw["capacity"] = size
    if max_size:
        raw["maximumVolumeSize"] = max_size
    return raw


def csi_driver(name: str, storage_capacity: bool) -> dict[str, Any]:
    """makeCSIDriver."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": storage_capacity},
    }


unbound_pvc = make_test_pvc("unbound-pvc", "1G", "", UNBOUND, "", "1", WAIT_CLASS)
unbound_pvc2 = make_test_pvc("unbound-pvc2", "5G", "", UNBOUND, "", "1", WAIT_CLASS)
prebound_pvc = make_test_pvc("prebound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT_CLASS)
bound_pvc = make_test_pvc("bound-pvc", "1G", "", BOUND, "pv-bound", "1", WAIT_CLASS)
immediate_unbound_pvc = make_test_pvc("immediate-unbound-pvc", "1G", "", UNBOUND, "", "1", IMMEDIATE_CLASS)
immediate_bound_pvc = make_test_pvc(
    "immediate-bound-pvc", "1G", "", BOUND, "pv-bound-immediate", "1", IMMEDIATE_CLASS
)
provisioned_pvc = make_test_pvc("provisioned-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER)
provisioned_pvc2 = make_test_pvc("provisioned-pvc2", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER)
no_provisioner_pvc = make_test_pvc("no-provisioner-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS)
topo_mismatch_pvc = make_test_pvc("topo-mismatch-pvc", "1Gi", "", UNBOUND, "", "1", TOPO_MISMATCH_CLASS)
selected_node_pvc = make_test_pvc(
    "provisioned-pvc", "1Gi", NODE_LABEL_VALUE, SELECTED_NODE, "", "1", WAIT_CLASS_WITH_PROVISIONER
)
conflicting_generic_pvc = generic_ephemeral_pvc("test-volume", False)
correct_generic_pvc = generic_ephemeral_pvc("test-volume", True)

pv_node1a = make_test_pv("pv-node1a", "node1", "5G", "1", None, WAIT_CLASS)
pv_node1b = make_test_pv("pv-node1b", "node1", "10G", "1", None, WAIT_CLASS)
pv_node2 = make_test_pv("pv-node2", "node2", "1G", "1", None, WAIT_CLASS)
pv_bound = make_test_pv("pv-bound", "node1", "1G", "1", bound_pvc, WAIT_CLASS)
pv_node1a_bound = make_test_pv("pv-node1a", "node1", "5G", "1", unbound_pvc, WAIT_CLASS)
pv_node1b_bound = make_test_pv("pv-node1b", "node1", "10G", "1", unbound_pvc2, WAIT_CLASS)
pv_bound_immediate = make_test_pv(
    "pv-bound-immediate", "node1", "1G", "1", immediate_bound_pvc, IMMEDIATE_CLASS
)
pv_bound_immediate_node2 = make_test_pv(
    "pv-bound-immediate", "node2", "1G", "1", immediate_bound_pvc, IMMEDIATE_CLASS
)
pv_bound_generic = make_test_pv("pv-bound", "node1", "1G", "1", correct_generic_pvc, WAIT_CLASS)

node1 = make_node("node1", labels={NODE_LABEL_KEY: "node1"})
node2 = make_node("node2", labels={NODE_LABEL_KEY: "node2"})


def make_test_pod(*claims: dict[str, Any], ephemeral: str = "", empty_dir: bool = False) -> Pod:
    """makePod("test-pod").withNamespace("testns").withNodeName("node1") with the claims' volumes."""
    volumes: list[dict[str, Any]] = [
        {"name": f"vol{i}", "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}}
        for i, c in enumerate(claims)
    ]
    if ephemeral:
        volumes.append({"name": ephemeral, "ephemeral": {"volumeClaimTemplate": {}}})
    if empty_dir:
        volumes.append({"name": "", "emptyDir": {}})
    raw = pod_dict("test-pod", "testns", volumes=volumes, nodeName="node1")
    raw["metadata"]["uid"] = "test-pod-uid"
    return parse_pod(raw)


def binder(*raws: dict[str, Any], timeout: float = 600.0) -> VolumeBinder:
    """A binder over the classes and ``raws``."""
    return VolumeBinder(StorageLister(objects(*CLASSES, *raws)), timeout)


def binding(pvc: dict[str, Any], pv: dict[str, Any]) -> tuple[str, str]:
    """makeBinding, compared by names."""
    return (pvc["metadata"]["name"], pv["metadata"]["name"])


def names(bindings: list[BindingInfo]) -> list[tuple[str, str]]:
    """The (claim, PV) names of bindings."""
    return [(b.pvc.name, b.pv.name) for b in bindings]


def parsed_pv(raw: dict[str, Any]) -> Any:
    """The parsed PersistentVolume."""
    return parse_persistent_volume(raw)


def parsed_pvc(raw: dict[str, Any]) -> Any:
    """The parsed claim."""
    return parse_persistent_volume_claim(raw)
