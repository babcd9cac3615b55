"""The volume plugins end to end in ``berth simulate``: the default configuration, the real engine,
state files with storage objects, and the explanation of what binding a pod's claims took."""

from __future__ import annotations

import json
from pathlib import Path

from simulate.simhelpers import default_setup, node_yaml, run_text, state_of

from app.simulate import format_json, format_table, load_state, new_engine, run_simulation
from app.simulate.hints import RecordExplainer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "simulate" / "storage.yaml"
NOT_HELPFUL = "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."


def test_storage_example() -> None:
    """WFFC local PV, no PV left, dynamic provisioning by allowedTopologies, a class that does not exist."""
    cfg, registry = default_setup()
    state = load_state(str(EXAMPLE))
    assert state.warnings == []
    result = run_simulation(state, new_engine(state, cfg, registry, 1))
    rows = {r.pod.name: r for r in result.records}
    assert (rows["db"].status, rows["db"].node) == ("Scheduled", "n2")
    assert rows["db"].volumes == ["claim default/data binds PersistentVolume local-n2"]
    assert rows["db-2"].status == "Unschedulable"
    assert rows["db-2"].message == (
        f"0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind. {NOT_HELPFUL}"
    )
    assert (rows["cache"].status, rows["cache"].node) == ("Scheduled", "n2")
    assert rows["cache"].volumes == ["claim default/scratch is provisioned on n2 (StorageClass fast)"]
    assert rows["oops"].message == (
        # VolumeBinding's PreFilter rejects before DynamicResources' PreFilter runs: kube-scheduler's
        # DynamicResources PostFilter then fails with "not found" and preemption never runs (docs/parity.md).
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
    )
    table = format_table(result)
    assert "feasible 1/2; claim default/data binds PersistentVolume local-n2" in table
    doc = json.loads(format_json(result))
    assert doc["pods"][0]["volumes"] == ["claim default/data binds PersistentVolume local-n2"]


PV = """\
apiVersion: v1
kind: PersistentVolume
metadata: {{name: {name}, labels: {labels}}}
spec:
  capacity: {{storage: 10Gi}}
  accessModes: [{mode}]
  storageClassName: "{sc}"
  {claim_ref}
status: {{phase: {phase}}}
---
"""


def pvc_yaml(name: str, sc: str = "", mode: str = "ReadWriteOnce", volume: str = "") -> str:
    bound = f", volumeName: {volume}" if volume else ""
    annotations = "annotations: {pv.kubernetes.io/bind-completed: 'yes'}, " if volume else ""
    return (
        f"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}, namespace: default, {annotations}}}\n"
        f'spec: {{storageClassName: "{sc}", accessModes: [{mode}], resources: {{requests: {{storage: 1Gi}}}}{bound}}}\n---\n'
    )


def pod_with_claim(name: str, claim: str, node: str = "") -> str:
    node_line = f"  nodeName: {node}\n" if node else ""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n{node_line}"
        "  containers: [{name: c, image: busybox}]\n"
        f"  volumes: [{{name: d, persistentVolumeClaim: {{claimName: {claim}}}}}]\n---\n"
    )


def test_zonal_pv_keeps_the_pod_in_its_zone() -> None:
    """VolumeZone: a bound PV labelled with zone b only fits nodes of zone b."""
    nodes = node_yaml("a1", extra="").replace(
        "kubernetes.io/hostname: a1", "kubernetes.io/hostname: a1, topology.kubernetes.io/zone: a"
    )
    nodes += node_yaml("b1").replace(
        "kubernetes.io/hostname: b1", "kubernetes.io/hostname: b1, topology.kubernetes.io/zone: b"
    )
    pv = PV.format(
        name="zonal",
        labels="{topology.kubernetes.io/zone: b}",
        mode="ReadWriteOnce",
        sc="",
        claim_ref="claimRef: {namespace: default, name: data}",
        phase="Bound",
    )
    result = run_text(nodes + pv + pvc_yaml("data", volume="zonal") + pod_with_claim("app", "data"))
    record = result.records[0]
    assert (record.status, record.node) == ("Scheduled", "b1")
    assert record.filter["a1"].plugin == "VolumeZone"
    assert record.filter["a1"].reasons == ["node(s) had no available volume zone"]
    assert record.volumes == []  # the claim was bound already: nothing to bind


def test_read_write_once_pod_claim_in_use() -> None:
    """VolumeRestrictions: a second pod using a ReadWriteOncePod claim waits (Unschedulable, not
    Unresolvable, so preemption may free it: the user pod has no lower-priority victim here)."""
    pv = PV.format(
        name="pv",
        labels="{}",
        mode="ReadWriteOncePod",
        sc="",
        claim_ref="claimRef: {namespace: default, name: solo}",
        phase="Bound",
    )
    state = node_yaml("n1") + node_yaml("n2") + pv + pvc_yaml("solo", mode="ReadWriteOncePod", volume="pv")
    state += pod_with_claim("first", "solo", node="n1") + pod_with_claim("second", "solo")
    record = run_text(state).records[0]
    assert record.status == "Unschedulable"
    reason = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
    assert record.message.startswith(
        f"0/2 nodes are available: 2 {reason}. no new claims to deallocate, preemption: "
    )


def csi_pv(name: str, claim: str) -> str:
    return (
        f"apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}}}\n"
        "spec: {capacity: {storage: 10Gi}, accessModes: [ReadWriteOnce], storageClassName: '', "
        f"claimRef: {{namespace: default, name: {claim}}}, csi: {{driver: ebs.csi.aws.com, volumeHandle: h-{name}}}}}\n"
        "status: {phase: Bound}\n---\n"
    )


def csi_node(name: str, limit: int) -> str:
    return (
        f"apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {{name: {name}}}\n"
        f"spec: {{drivers: [{{name: ebs.csi.aws.com, nodeID: {name}, allocatable: {{count: {limit}}}}}]}}\n---\n"
    )


def test_volume_limit_details_count_attached_and_new_volumes_per_driver() -> None:
    """NodeVolumeLimits: the details say, per driver, how many volumes the node has attached, how many
    new ones the pod brings and the node's limit."""
    state = (
        node_yaml("n1")
        + node_yaml("n2")
        + csi_node("n1", 2)
        + csi_node("n2", 1)
        + "".join(csi_pv(f"pv-{c}", c) + pvc_yaml(c, volume=f"pv-{c}") for c in ("a", "b", "c", "d"))
        + pod_with_claim("old-a", "a", node="n1")
        + pod_with_claim("old-b", "b", node="n1")
        + pod_with_claim("old-c", "c", node="n2")
        + pod_with_claim("new", "d")
    )
    cfg, registry = default_setup()
    parsed = state_of(state)
    result = run_simulation(
        parsed,
        new_engine(parsed, cfg, registry, 1),
        RecordExplainer(parsed, cfg, registry, 1, with_details=True),
    )
    [pod] = json.loads(format_json(result, 1))["pods"]
    assert pod["status"] == "Unschedulable"
    assert {node: (entry["plugin"], entry["details"]) for node, entry in pod["filter"].items()} == {
        "n1": ("NodeVolumeLimits", ["ebs.csi.aws.com: 2 volume(s) attached + 1 new, limit 2"]),
        "n2": ("NodeVolumeLimits", ["ebs.csi.aws.com: 1 volume(s) attached + 1 new, limit 1"]),
    }
