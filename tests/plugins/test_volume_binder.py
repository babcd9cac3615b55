"""The volume binder, ported from plugins/volumebinding/binder_test.go (v1.36.3):
TestFindPodVolumesWithoutProvisioning and TestFindPodVolumesWithProvisioning (each run without a
CSIDriver, with one that tracks capacity and with one that does not), TestCapacity,
TestAssumePodVolumes, TestRevertAssumedPodVolumes, TestBindAPIUpdate's and TestCheckBindings' main
cases, and TestFindAssumeVolumes (an assumed PV is not offered to the next pod)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from app.api.objects import Node, Pod, parse_node
from app.plugins.helper.storage import StorageLister
from app.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BinderError,
    BindingInfo,
    CandidateVolumes,
    PodVolumes,
    VolumeBinder,
    find_matching_volume,
)
from app.scheduler.scheduler import ClusterObjects, ObjectsVolumeWriter
from builders import make_node
from plugins.storage_helpers import csi_node
from plugins.volumebinding_helpers import (
    BOUND,
    CLASSES,
    PROVISIONER,
    WAIT_CLASS,
    WAIT_CLASS_WITH_PROVISIONER,
    binder,
    binding,
    bound_pvc,
    capacity,
    conflicting_generic_pvc,
    correct_generic_pvc,
    csi_driver,
    immediate_bound_pvc,
    immediate_unbound_pvc,
    make_test_pod,
    make_test_pv,
    make_test_pvc,
    names,
    no_provisioner_pvc,
    node1,
    node2,
    parsed_pv,
    parsed_pvc,
    prebound_pvc,
    provisioned_pvc,
    provisioned_pvc2,
    pv_bound,
    pv_bound_generic,
    pv_bound_immediate,
    pv_bound_immediate_node2,
    pv_node1a,
    pv_node1b,
    pv_node2,
    selected_node_pvc,
    topo_mismatch_pvc,
    unbound_pvc,
    unbound_pvc2,
)


def find_pod_volumes(b: VolumeBinder, pod: Pod) -> tuple[PodVolumes, list[str]]:
    """The Go test's findPodVolumes: GetPodVolumeClaims, fail on unbound Immediate claims, FindPodVolumes."""
    claims = b.get_pod_volume_claims(pod)
    if claims.unbound_claims_immediate:
        raise BinderError("pod has unbound immediate claims")
    return b.find_pod_volumes(claims, node1)


DRIVERS: dict[str, dict[str, Any] | None] = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": csi_driver(PROVISIONER, True),
    "CSIDriver without capacity tracking": csi_driver(PROVISIONER, False),
}

WITHOUT_PROVISIONING: dict[str, dict[str, Any]] = {
    "no-volumes": dict(pod=make_test_pod()),
    "no-pvcs": dict(pod=make_test_pod(empty_dir=True)),
    "pvc-not-found": dict(cache_pvcs=[], pod_pvcs=[bound_pvc], fail=True),
    "bound-pvc": dict(pod_pvcs=[bound_pvc], pvs=[pv_bound]),
    "bound-pvc,pv-not-exists": dict(pod_pvcs=[bound_pvc], reasons=[ERR_REASON_PV_NOT_EXIST]),
    "prebound-pvc": dict(pod_pvcs=[prebound_pvc], pvs=[pv_node1a], fail=True),
    "unbound-pvc,pv-same-node": dict(
        pod_pvcs=[unbound_pvc],
        pvs=[pv_node2, pv_node1a, pv_node1b],
        bindings=[binding(unbound_pvc, pv_node1a)],
    ),
    "unbound-pvc,pv-different-node": dict(
        pod_pvcs=[unbound_pvc], pvs=[pv_node2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "two-unbound-pvcs": dict(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        pvs=[pv_node1a, pv_node1b],
        bindings=[binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)],
    ),
    "two-unbound-pvcs,order-by-size": dict(
        pod_pvcs=[unbound_pvc2, unbound_pvc],
        pvs=[pv_node1a, pv_node1b],
        bindings=[binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)],
    ),
    "two-unbound-pvcs,partial-match": dict(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        pvs=[pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
        reasons=[ERR_REASON_BIND_CONFLICT],
    ),
    "one-bound,one-unbound": dict(
        pod_pvcs=[unbound_pvc, bound_pvc],
        pvs=[pv_bound, pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
    ),
    "one-bound,one-unbound,no-match": dict(
        pod_pvcs=[unbound_pvc, bound_pvc], pvs=[pv_bound, pv_node2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "one-prebound,one-unbound": dict(
        pod_pvcs=[unbound_pvc, prebound_pvc], pvs=[pv_node1a, pv_node1b], fail=True
    ),
    "immediate-bound-pvc": dict(pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate]),
    "immediate-bound-pvc-wrong-node": dict(
        pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate_node2], reasons=[ERR_REASON_NODE_CONFLICT]
    ),
    "immediate-unbound-pvc": dict(pod_pvcs=[immediate_unbound_pvc], fail=True),
    "immediate-unbound-pvc,delayed-mode-bound": dict(
        pod_pvcs=[immediate_unbound_pvc, bound_pvc], pvs=[pv_bound], fail=True
    ),
    "immediate-unbound-pvc,delayed-mode-unbound": dict(
        pod_pvcs=[immediate_unbound_pvc, unbound_pvc], fail=True
    ),
    "generic-ephemeral,no-pvc": dict(pod=make_test_pod(ephemeral="no-such-pvc"), fail=True),
    "generic-ephemeral,with-pvc": dict(
        pod=make_test_pod(ephemeral="test-volume"), cache_pvcs=[correct_generic_pvc], pvs=[pv_bound_generic]
    ),
    "generic-ephemeral,wrong-pvc": dict(
        pod=make_test_pod(ephemeral="test-volume"),
        cache_pvcs=[conflicting_generic_pvc],
        pvs=[pv_bound_generic],
        fail=True,
    ),
}


def _run_find(
    scenario: dict[str, Any], driver: dict[str, Any] | None
) -> tuple[PodVolumes | None, list[str], bool]:
    pod_pvcs = scenario.get("pod_pvcs", [])
    cache_pvcs = scenario.get("cache_pvcs", pod_pvcs)
    pod = scenario.get("pod") or make_test_pod(*pod_pvcs)
    b = binder(*scenario.get("pvs", []), *cache_pvcs, *([driver] if driver else []))
    try:
        volumes, reasons = find_pod_volumes(b, pod)
    except BinderError:
        return None, [], True
    return volumes, reasons, False


@pytest.mark.parametrize("driver", list(DRIVERS))
@pytest.mark.parametrize("name", list(WITHOUT_PROVISIONING))
def test_find_pod_volumes_without_provisioning(name: str, driver: str) -> None:
    scenario = WITHOUT_PROVISIONING[name]
    volumes, reasons, failed = _run_find(scenario, DRIVERS[driver])
    assert failed == scenario.get("fail", False)
    assert reasons == scenario.get("reasons", [])
    if volumes is not None:
        assert names(volumes.static_bindings) == scenario.get("bindings", [])
        assert volumes.dynamic_provisions == []


WITH_PROVISIONING: dict[str, dict[str, Any]] = {
    "one-provisioned": dict(pod_pvcs=[provisioned_pvc], provisions=["provisioned-pvc"], needs_capacity=True),
    "two-unbound-pvcs,one-matched,one-provisioned": dict(
        pod_pvcs=[unbound_pvc, provisioned_pvc],
        pvs=[pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
        provisions=["provisioned-pvc"],
        needs_capacity=True,
    ),
    "one-bound,one-provisioned": dict(
        pod_pvcs=[bound_pvc, provisioned_pvc],
        pvs=[pv_bound],
        provisions=["provisioned-pvc"],
        needs_capacity=True,
    ),
    "one-binding,one-selected-node": dict(
        pod_pvcs=[bound_pvc, selected_node_pvc],
        pvs=[pv_bound],
        provisions=["provisioned-pvc"],
        needs_capacity=True,
    ),
    "immediate-unbound-pvc": dict(pod_pvcs=[immediate_unbound_pvc], fail=True),
    "one-immediate-bound,one-provisioned": dict(
        pod_pvcs=[immediate_bound_pvc, provisioned_pvc],
        pvs=[pv_bound_immediate],
        provisions=["provisioned-pvc"],
        needs_capacity=True,
    ),
    "invalid-provisioner": dict(pod_pvcs=[no_provisioner_pvc], reasons=[ERR_REASON_BIND_CONFLICT]),
    "volume-topology-unsatisfied": dict(pod_pvcs=[topo_mismatch_pvc], reasons=[ERR_REASON_BIND_CONFLICT]),
}


@pytest.mark.parametrize("driver", list(DRIVERS))
@pytest.mark.parametrize("name", list(WITH_PROVISIONING))
def test_find_pod_volumes_with_provisioning(name: str, driver: str) -> None:
    scenario = WITH_PROVISIONING[name]
    volumes, reasons, failed = _run_find(scenario, DRIVERS[driver])
    assert failed == scenario.get("fail", False)
    want_reasons = list(scenario.get("reasons", []))
    want_provisions = scenario.get("provisions", [])
    if scenario.get("needs_capacity") and driver == "CSIDriver with capacity tracking":
        # Without CSIStorageCapacity objects, provisioning is blocked.
        want_reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        want_provisions = []
    assert reasons == want_reasons
    if volumes is not None:
        assert names(volumes.static_bindings) == scenario.get("bindings", [])
        assert [p.pvc.name for p in volumes.dynamic_provisions] == want_provisions


NETWORK_ATTACHED = capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Gi")
NODE1_CAPACITY = capacity("net", WAIT_CLASS_WITH_PROVISIONER, node1, "1Gi")
NODE2_CAPACITY = capacity("net", WAIT_CLASS_WITH_PROVISIONER, node2, "1Gi")

CAPACITY_CASES: dict[str, dict[str, Any]] = {
    "network-attached": dict(capacities=[NETWORK_ATTACHED]),
    "local-storage": dict(capacities=[NODE1_CAPACITY]),
    "other-node": dict(capacities=[NODE2_CAPACITY], reasons=[ERR_REASON_NOT_ENOUGH_SPACE]),
    "too-small": dict(
        capacities=[capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "maximum-volume-size-too-small": dict(
        capacities=[capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Gi", "1Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "wrong-storage-class": dict(
        capacities=[capacity("net", "waitClass", None, "1Gi")], reasons=[ERR_REASON_NOT_ENOUGH_SPACE]
    ),
    "no-storage": dict(reasons=[ERR_REASON_NOT_ENOUGH_SPACE]),
}


@pytest.mark.parametrize("tracking", [True, False], ids=["with tracking", "without tracking"])
@pytest.mark.parametrize("name", list(CAPACITY_CASES))
def test_capacity(name: str, tracking: bool) -> None:
    """TestCapacity: a provisioned claim needs a matching CSIStorageCapacity only when the driver asks."""
    scenario = CAPACITY_CASES[name]
    b = binder(provisioned_pvc, csi_driver(PROVISIONER, tracking), *scenario.get("capacities", []))
    volumes, reasons = find_pod_volumes(b, make_test_pod(provisioned_pvc))
    want = scenario.get("reasons", []) if tracking else []
    assert reasons == want
    assert [p.pvc.name for p in volumes.dynamic_provisions] == ([] if want else ["provisioned-pvc"])


# --- Assume / Revert / Bind --------------------------------------------------------------------------------


def _assume(b: VolumeBinder, pod: Pod) -> tuple[PodVolumes, bool]:
    volumes, reasons = find_pod_volumes(b, pod)
    assert reasons == []
    return volumes, b.assume_pod_volumes(pod, "node1", volumes)


def test_assume_sets_claim_refs_and_selected_node() -> None:
    """TestAssumePodVolumes: bindings get claimRef (and bound-by-controller), provisions the annotation."""
    b = binder(unbound_pvc, unbound_pvc2, provisioned_pvc, pv_node1a, pv_node1b)
    pod = make_test_pod(unbound_pvc, unbound_pvc2, provisioned_pvc)
    volumes, all_bound = _assume(b, pod)
    assert not all_bound
    for name, claim in (("pv-node1a", "unbound-pvc"), ("pv-node1b", "unbound-pvc2")):
        pv = b.pv_cache.get(name)
        assert pv is not None and pv.claim_ref is not None
        assert (pv.claim_ref.name, pv.claim_ref.uid) == (claim, "pvc-uid")
        assert pv.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert b.pv_cache.get_api(name).claim_ref is None  # type: ignore[union-attr]
    pvc = b.pvc_cache.get("testns/provisioned-pvc")
    assert pvc is not None and pvc.annotations["volume.kubernetes.io/selected-node"] == "node1"
    assert [
        p.pvc.annotations.get("volume.kubernetes.io/selected-node") for p in volumes.dynamic_provisions
    ] == ["node1"]


def test_assume_all_bound() -> None:
    b = binder(bound_pvc, pv_bound)
    _, all_bound = _assume(b, make_test_pod(bound_pvc))
    assert all_bound


def test_revert_restores_the_informer_objects() -> None:
    """TestRevertAssumedPodVolumes."""
    b = binder(unbound_pvc, provisioned_pvc, pv_node1a)
    volumes, _ = _assume(b, make_test_pod(unbound_pvc, provisioned_pvc))
    b.revert_assumed_pod_volumes(volumes)
    pv = b.pv_cache.get("pv-node1a")
    assert pv is not None and pv.claim_ref is None
    pvc = b.pvc_cache.get("testns/provisioned-pvc")
    assert pvc is not None and "volume.kubernetes.io/selected-node" not in pvc.annotations


def test_find_assume_volumes_two_pods_never_share_a_pv() -> None:
    """TestFindAssumeVolumes, across pods: once pod 1 assumed pv-node1a, pod 2's claim gets pv-node1b."""
    other = make_test_pvc_like(unbound_pvc, "unbound-pvc-other", "other-uid")
    b = binder(unbound_pvc, other, pv_node1a, pv_node1b)
    _assume(b, make_test_pod(unbound_pvc))
    volumes, reasons = find_pod_volumes(b, make_test_pod(other))
    assert reasons == []
    assert names(volumes.static_bindings) == [("unbound-pvc-other", "pv-node1b")]
    # With no PV left on the node, a third claim has nothing to bind.
    third = make_test_pvc_like(unbound_pvc, "unbound-pvc-third", "third-uid")
    b2 = binder(unbound_pvc, other, third, pv_node1a, pv_node1b)
    _assume(b2, make_test_pod(unbound_pvc))
    _assume(b2, make_test_pod(other))
    _, reasons = find_pod_volumes(b2, make_test_pod(third))
    assert reasons == [ERR_REASON_BIND_CONFLICT]


def make_test_pvc_like(raw: dict[str, Any], name: str, uid: str) -> dict[str, Any]:
    out = {**raw, "metadata": {**raw["metadata"], "name": name, "uid": uid}}
    return out


class RecordingWriter:
    """A VolumeWriter that records writes and fails on a chosen object."""

    completes_bindings = True

    def __init__(self, fail_on: str = "") -> None:
        self.writes: list[tuple[str, str]] = []
        self.fail_on = fail_on
        self.deleted_pods: set[str] = set()

    def pod_exists(self, pod: Pod) -> bool:
        return pod.key not in self.deleted_pods

    def update(self, kind: str, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        name = raw["metadata"]["name"]
        if name == self.fail_on:
            raise RuntimeError(f'{kind.lower()} "{name}" update failed')
        self.writes.append((kind, name))
        return raw


def test_bind_api_update_writes_pvs_then_claims() -> None:
    """TestBindAPIUpdate: PVs first, then the claims to provision."""
    b = binder(unbound_pvc, provisioned_pvc, pv_node1a)
    pod = make_test_pod(unbound_pvc, provisioned_pvc)
    volumes, _ = _assume(b, pod)
    writer = RecordingWriter()
    b.bind_pod_volumes(pod, node1, volumes, writer)
    assert writer.writes == [("PersistentVolume", "pv-node1a"), ("PersistentVolumeClaim", "provisioned-pvc")]


def test_bind_api_update_failure_reverts_the_rest() -> None:
    """TestBindAPIUpdate "pv-update-fail": the error is returned and unwritten assumptions reverted."""
    b = binder(unbound_pvc, unbound_pvc2, pv_node1a, pv_node1b)
    pod = make_test_pod(unbound_pvc, unbound_pvc2)
    volumes, _ = _assume(b, pod)
    with pytest.raises(BinderError, match='persistentvolume "pv-node1a" update failed'):
        b.bind_pod_volumes(pod, node1, volumes, RecordingWriter(fail_on="pv-node1a"))
    assert b.pv_cache.assumed_keys() == []


class SilentWriter(RecordingWriter):
    """An API server where no PV controller ever binds anything."""

    completes_bindings = False


def test_bind_times_out_when_the_claims_never_bind() -> None:
    """TestBindPodVolumes "timeout": the claims stay unbound, so the wait ends at bindTimeoutSeconds."""
    b = binder(provisioned_pvc, timeout=0.2)
    pod = make_test_pod(provisioned_pvc)
    volumes, _ = _assume(b, pod)
    with pytest.raises(BinderError, match="binding volumes: context deadline exceeded"):
        b.bind_pod_volumes(pod, node1, volumes, SilentWriter())


def test_bind_stops_waiting_when_the_pod_is_deleted() -> None:
    """checkBindings: a pod gone from the pod lister cancels the wait long before bindTimeoutSeconds."""
    b = binder(provisioned_pvc, timeout=60)
    pod = make_test_pod(provisioned_pvc)
    volumes, _ = _assume(b, pod)
    writer = SilentWriter()
    writer.deleted_pods.add(pod.key)
    # The error names the deletion, not "context deadline exceeded": the wait ended on the first poll.
    with pytest.raises(
        BinderError, match=f'binding volumes: pod does not exist any more: pod "{pod.name}" not found'
    ):
        b.bind_pod_volumes(pod, node1, volumes, writer)


def test_objects_writer_completes_static_binding() -> None:
    """Without an API server the PV controller's part happens at once: PV Bound, claim bound to it."""
    objects = ClusterObjects({"": [*CLASSES, unbound_pvc, pv_node1a]})
    storage = StorageLister(objects)
    b = VolumeBinder(storage, 600)
    pod = make_test_pod(unbound_pvc)
    volumes, _ = _assume(b, pod)
    b.bind_pod_volumes(pod, node1, volumes, ObjectsVolumeWriter(objects))
    pv = storage.pvs()["pv-node1a"]
    pvc = storage.pvcs()["testns/unbound-pvc"]
    assert pv.phase == "Bound" and pv.claim_ref is not None and pv.claim_ref.name == "unbound-pvc"
    assert pvc.volume_name == "pv-node1a" and pvc.fully_bound()
    assert b.are_pod_volumes_bound(pod)


def test_check_bindings_errors() -> None:
    """TestCheckBindings: a claimRef reset or a selected node changed fail the binding."""
    b = binder(unbound_pvc, pv_node1a, provisioned_pvc2)
    pod = make_test_pod(unbound_pvc, provisioned_pvc2)
    volumes, _ = _assume(b, pod)
    # The informer still has pv-node1a without a claimRef: "ClaimRef got reset".
    with pytest.raises(BinderError, match='ClaimRef got reset for pv "pv-node1a"'):
        b._check_bindings(
            pod,
            node1,
            volumes.static_bindings,
            [p.pvc for p in volumes.dynamic_provisions],
            RecordingWriter(),
        )
    # A claim to provision whose selected-node annotation is not the pod's node.
    b2 = binder(provisioned_pvc2)
    pod2 = make_test_pod(provisioned_pvc2)
    volumes2, _ = _assume(b2, pod2)
    with pytest.raises(BinderError, match='provisioning failed for PVC "provisioned-pvc2"'):
        b2._check_bindings(pod2, node1, [], [p.pvc for p in volumes2.dynamic_provisions], RecordingWriter())


def test_candidates_per_node_give_the_full_scans_answer() -> None:
    """The hostname index of local PVs: for every node and claim, the PV chosen from the node's
    candidates is the one FindMatchingVolume picks from every PV of the class."""
    rng = random.Random(7)
    raws = []
    for i in range(60):
        host = f"h{rng.randrange(6)}"
        raw = make_test_pv(f"pv-{i}", "", f"{rng.randrange(1, 6)}G", "1", None, WAIT_CLASS)
        if i % 5:  # most are local to one host; the rest have no affinity or another key
            raw["spec"]["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}
                            ]
                        }
                    ]
                }
            }
        if i % 17 == 0:
            raw["spec"]["claimRef"] = {"namespace": "testns", "name": "unbound-pvc", "uid": "pvc-uid"}
        elif i % 13 == 0:
            raw["spec"]["claimRef"] = {"namespace": "testns", "name": "someone-else", "uid": "x"}
        raws.append(raw)
    volumes = [parsed_pv(r) for r in raws]
    index = CandidateVolumes(volumes)
    claims = [parsed_pvc(unbound_pvc), parsed_pvc(unbound_pvc2)]
    for h in range(7):
        node = parse_node({"metadata": {"name": f"h{h}", "labels": {"kubernetes.io/hostname": f"h{h}"}}})
        for claim in claims:
            full = find_matching_volume(claim, volumes, node, {}, True)
            indexed = find_matching_volume(claim, index.for_node(node, claim), node, {}, True)
            assert (full and full.name) == (indexed and indexed.name)


# --- migrated in-tree PVs: tryTranslatePVToCSI ------------------------------------------------------------

GCE_ZONE_KEY = "topology.gke.io/zone"
ZONE1_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1a",
}
node1_zone1 = make_node("node1", labels={GCE_ZONE_KEY: "us-east-1"})
node1_zone2 = make_node("node1", labels={GCE_ZONE_KEY: "us-east-2"})
csi_node1_migrated = csi_node(
    "node1", {}, {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"}
)
csi_node1_not_migrated = csi_node("node1", {}, {"storage.alpha.kubernetes.io/migrated-plugins": ""})
bound_migration_pvc = make_test_pvc(
    "pvc-migration-bound", "1G", "", BOUND, "pv-migration-bound", "1", WAIT_CLASS
)
prov_migration_pvc_bound = make_test_pvc(
    "pvc-migration-provisioned", "1Gi", "", BOUND, "pv-migration-bound", "1", WAIT_CLASS_WITH_PROVISIONER
)


def make_test_pv_for_csi_migration(bound_to: dict[str, Any], migrated: bool) -> dict[str, Any]:
    """makeTestPVForCSIMigration: no node affinity (the translation writes it), the beta zone labels, a GCE
    PD source (migrated) or an RBD one (a plugin kube-scheduler does not migrate)."""
    raw = make_test_pv("pv-migration-bound", "node1", "1G", "1", bound_to, WAIT_CLASS)
    raw["spec"].pop("nodeAffinity")
    raw["metadata"]["labels"] = dict(ZONE1_LABELS)
    if migrated:
        raw["spec"]["gcePersistentDisk"] = {"pdName": "test-disk", "fsType": "ext4", "partition": 0}
    else:
        raw["spec"]["rbd"] = {"image": "test-disk"}
    return raw


migration_pv_bound = make_test_pv_for_csi_migration(bound_migration_pvc, True)
migration_pv_bound_to_unbound = make_test_pv_for_csi_migration(unbound_pvc, True)
nonmigration_pv_bound_to_unbound = make_test_pv_for_csi_migration(unbound_pvc, False)


@pytest.mark.parametrize(
    ("node", "csi_nodes", "want"),
    [
        pytest.param(node1_zone1, [csi_node1_migrated], [], id="pvc-bound"),
        pytest.param(node1_zone1, [csi_node1_not_migrated], [], id="pvc-bound,csinode-not-migrated"),
        pytest.param(node1_zone1, [], [], id="pvc-bound,missing-csinode"),
        pytest.param(
            node1_zone2, [csi_node1_migrated], [ERR_REASON_NODE_CONFLICT], id="pvc-bound,node-different-zone"
        ),
    ],
)
def test_find_pod_volumes_with_csi_migration(
    node: Node, csi_nodes: list[dict[str, Any]], want: list[str]
) -> None:
    """TestFindPodVolumesWithCSIMigration: a bound GCE PD PV's zone label becomes CSI topology
    (topology.gke.io/zone) on nodes whose CSINode says the plugin migrated."""
    b = binder(bound_migration_pvc, migration_pv_bound, *csi_nodes)
    claims = b.get_pod_volume_claims(make_test_pod(bound_migration_pvc))
    assert b.find_pod_volumes(claims, node)[1] == want


@pytest.mark.parametrize(
    ("pv", "claim", "node", "csi_nodes", "provisioned", "want"),
    [
        pytest.param(
            migration_pv_bound,
            prov_migration_pvc_bound,
            node1_zone1,
            [csi_node1_migrated],
            True,
            True,
            id="provisioning-pvc-bound",
        ),
        pytest.param(
            migration_pv_bound_to_unbound,
            unbound_pvc,
            node1_zone1,
            [csi_node1_migrated],
            False,
            False,
            id="binding-node-pv-same-zone",
        ),
        pytest.param(
            migration_pv_bound_to_unbound,
            unbound_pvc,
            node1_zone1,
            [],
            False,
            False,
            id="binding-without-csinode",
        ),
        pytest.param(
            migration_pv_bound_to_unbound,
            unbound_pvc,
            node1_zone1,
            [csi_node1_not_migrated],
            False,
            False,
            id="binding-non-migrated-plugin",
        ),
        pytest.param(
            migration_pv_bound_to_unbound,
            unbound_pvc,
            node1_zone2,
            [csi_node1_migrated],
            False,
            None,
            id="binding-node-pv-in-different-zones",
        ),
        pytest.param(
            nonmigration_pv_bound_to_unbound,
            unbound_pvc,
            node1_zone2,
            [csi_node1_migrated],
            False,
            False,
            id="binding-node-pv-different-zones-migration-off",
        ),
    ],
)
def test_check_bindings_with_csi_migration(
    pv: dict[str, Any],
    claim: dict[str, Any],
    node: Node,
    csi_nodes: list[dict[str, Any]],
    provisioned: bool,
    want: bool | None,
) -> None:
    """TestCheckBindingsWithCSIMigration (want None: checkBindings fails)."""
    if provisioned:
        claim = make_test_pvc_like(claim, claim["metadata"]["name"], claim["metadata"]["uid"])
        claim["metadata"]["annotations"] = {
            **claim["metadata"]["annotations"],
            "volume.kubernetes.io/selected-node": "node1",
        }
    b = binder(pv, claim, *csi_nodes)
    pod = make_test_pod()
    bindings = [] if provisioned else [BindingInfo(parsed_pvc(claim), parsed_pv(pv))]
    claims = [parsed_pvc(claim)] if provisioned else []
    if want is None:
        with pytest.raises(
            BinderError, match='pv "pv-migration-bound" node affinity doesn\'t match node "node1"'
        ):
            b._check_bindings(pod, node, bindings, claims, RecordingWriter())
    else:
        assert b._check_bindings(pod, node, bindings, claims, RecordingWriter()) is want


def test_translation_error_is_the_filter_error() -> None:
    """tryTranslatePVToCSI's error (a GCE PD labelled with zones of no single region) fails the node."""
    pv = make_test_pv_for_csi_migration(bound_migration_pvc, True)
    pv["metadata"]["labels"] = {"topology.kubernetes.io/zone": "zone-a__zone-b"}
    b = binder(bound_migration_pvc, pv, csi_node1_migrated)
    claims = b.get_pod_volume_claims(make_test_pod(bound_migration_pvc))
    with pytest.raises(
        BinderError,
        match=r"^could not translate pv: failed to get region from zones: zone in unexpected format, "
        r"expected: \{locale\}-\{region\}-\{zone\}, got: zone-a$",
    ):
        b.find_pod_volumes(claims, node1_zone1)


def test_volume_attributes_class_off_as_kube_find_matching_volume() -> None:
    """``FindMatchingVolume`` with VolumeAttributesClass off (its default at 1.33): a PV naming a
    class is never matched, and a claim naming one is an error; on, the classes must be equal."""
    import copy

    from plugins.volumebinding_helpers import NODE_LABEL_KEY, parsed_pv, parsed_pvc, pv_node1a, unbound_pvc

    node = parse_node({"metadata": {"name": "node1", "labels": {NODE_LABEL_KEY: "node1"}}})
    with_class = copy.deepcopy(pv_node1a)
    with_class["spec"]["volumeAttributesClassName"] = "gold"
    plain_pv, class_pv = parsed_pv(pv_node1a), parsed_pv(with_class)
    claim = parsed_pvc(unbound_pvc)
    assert find_matching_volume(claim, [class_pv, plain_pv], node, {}, True, False) is plain_pv
    assert find_matching_volume(claim, [class_pv], node, {}, True, False) is None
    gold_raw = copy.deepcopy(unbound_pvc)
    gold_raw["spec"]["volumeAttributesClassName"] = "gold"
    gold = parsed_pvc(gold_raw)
    assert find_matching_volume(gold, [class_pv, plain_pv], node, {}, True, True) is class_pv
    with pytest.raises(BinderError, match="feature-gate VolumeAttributesClass is disabled"):
        find_matching_volume(gold, [class_pv], node, {}, True, False)
