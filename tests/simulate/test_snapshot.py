"""What ``berth snapshot`` keeps of each object (the listing itself is tested on the control plane in
test_snapshot_cluster.py): the state file simulate reads, without the API server's noise."""

from __future__ import annotations

from app.simulate import parse_state
from app.simulate.snapshot import SNAPSHOT_RESOURCES, Snapshot, clean, format_snapshot

NODE = {
    "metadata": {
        "name": "n1",
        "uid": "u1",
        "resourceVersion": "42",
        "labels": {"kubernetes.io/hostname": "n1"},
        "managedFields": [{"manager": "kubelet"}],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
    },
    "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
    "status": {
        "allocatable": {"cpu": "4", "pods": "110"},
        "capacity": {"cpu": "4", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
        "nodeInfo": {"kubeletVersion": "v1.36.3"},
        "images": [{"names": ["app:1"], "sizeBytes": 1000}],
    },
}
POD = {
    "metadata": {"name": "web", "namespace": "shop", "annotations": {"team": "a"}},
    "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "app:1"}]},
    "status": {
        "phase": "Running",
        "podIP": "10.0.0.1",
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
        ],
        "containerStatuses": [{"name": "c", "ready": True}],
    },
}


def test_clean_drops_the_noise_and_keeps_what_plugins_read() -> None:
    node = clean("Node", "v1", NODE)
    assert node == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "uid": "u1", "labels": {"kubernetes.io/hostname": "n1"}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "4", "pods": "110"},
            "allocatable": {"cpu": "4", "pods": "110"},
            "images": [{"names": ["app:1"], "sizeBytes": 1000}],
        },
    }
    pod = clean("Pod", "v1", POD)
    assert pod["metadata"] == {"name": "web", "namespace": "shop", "annotations": {"team": "a"}}
    assert pod["status"] == {
        "phase": "Running",
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
    }
    claim = clean(
        "ResourceClaim", "resource.k8s.io/v1", {"metadata": {"name": "c"}, "status": {"allocation": {}}}
    )
    assert claim["status"] == {"allocation": {}}  # scheduling state: kept whole


def test_the_snapshot_is_a_state_simulate_reads() -> None:
    snap = Snapshot([clean("Node", "v1", NODE), clean("Pod", "v1", POD)], {"Node": 1, "Pod": 1})
    for as_json in (False, True):
        state = parse_state(format_snapshot(snap, as_json=as_json), "cluster.yaml")
        assert [n.name for n in state.nodes] == ["n1"]
        assert [p.key for p in state.running] == ["shop/web"]


def test_every_kind_berth_reads_is_listed() -> None:
    kinds = {r.kind for r in SNAPSHOT_RESOURCES}
    assert kinds == {
        "PriorityClass", "Namespace", "Node", "Pod", "Service", "ReplicationController", "ReplicaSet",
        "StatefulSet", "PodDisruptionBudget", "PersistentVolume", "PersistentVolumeClaim", "StorageClass",
        "CSINode", "CSIDriver", "CSIStorageCapacity", "VolumeAttachment", "DeviceClass", "ResourceClaim",
        "ResourceClaimTemplate", "ResourceSlice",
    }  # fmt: skip
