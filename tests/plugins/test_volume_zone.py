"""VolumeZone, ported from plugins/volumezone/volume_zone_test.go (v1.36.3).

Two deliberate differences from the Go tables: a missing object's message is the informer lister's
(``storageclass.storage.k8s.io "x" not found``, what kube-scheduler prints in a cluster) where the Go
test's fake lister says ``storageclasses...``; and a StorageClass without volumeBindingMode is
Immediate, as the API server defaults it (the Go table's "VolumeBindingMode not set" cannot happen with
an object read from the API).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.objects import Pod
from app.api.storage import parse_persistent_volume, parse_persistent_volume_claim, parse_storage_class
from app.framework.cycle_state import CycleState
from app.framework.events import HintError, QueueingHint
from app.framework.status import Status, skip, unresolvable
from app.framework.types import NodeInfo
from app.plugins.volumezone.volume_zone import ERR_REASON_CONFLICT, VolumeZone
from builders import make_node, make_pod
from plugins.storage_helpers import handle, pod_with_claims, pv, pvc, storage_class

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = unresolvable(ERR_REASON_CONFLICT)

SINGLE_ZONE_OBJECTS = (
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
    pvc("PVC_1", volumeName="Vol_1"),
    pvc("PVC_2", volumeName="Vol_2"),
    pvc("PVC_3", volumeName="Vol_3"),
    pvc("PVC_4", volumeName="Vol_not_exist"),
    pvc("PVC_Stable_1", volumeName="Vol_Stable_1"),
    pvc("PVC_Stable_2", volumeName="Vol_Stable_2"),
    pvc("PVC_Stable_3", volumeName="Vol_Stable_3"),
)


def node(labels: dict[str, str]) -> NodeInfo:
    info = NodeInfo(make_node("host1"))
    assert info.node is not None
    info.node.labels.clear()
    info.node.labels.update(labels)
    return info


def run(
    objs: tuple[dict[str, Any], ...], pod: Pod, labels: dict[str, str]
) -> tuple[Status | None, Status | None]:
    plugin = VolumeZone(None, handle(*objs))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [])
    return pre, plugin.filter(state, pod, node(labels))


SINGLE_ZONE = [
    ("pod without volume", make_pod("pod_1"), {BETA_ZONE: "us-west1-a"}, skip(), None),
    ("node without labels", pod_with_claims("pod_1", "PVC_1"), {}, None, None),
    (
        "beta zone label matched",
        pod_with_claims("pod_1", "PVC_1"),
        {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
        None,
        None,
    ),
    ("beta region label matched", pod_with_claims("pod_1", "PVC_2"), {BETA_REGION: "us-west1"}, None, None),
    (
        "beta region label doesn't match",
        pod_with_claims("pod_1", "PVC_2"),
        {BETA_REGION: "no_us-west1"},
        None,
        CONFLICT,
    ),
    (
        "beta zone label doesn't match",
        pod_with_claims("pod_1", "PVC_1"),
        {BETA_ZONE: "no_us-west1-a"},
        None,
        CONFLICT,
    ),
    ("zone label matched", pod_with_claims("pod_1", "PVC_Stable_1"), {ZONE: "us-west1-a"}, None, None),
    ("region label matched", pod_with_claims("pod_1", "PVC_Stable_2"), {REGION: "us-west1"}, None, None),
    (
        "region label doesn't match",
        pod_with_claims("pod_1", "PVC_Stable_2"),
        {REGION: "no_us-west1"},
        None,
        CONFLICT,
    ),
    (
        "zone label doesn't match",
        pod_with_claims("pod_1", "PVC_Stable_1"),
        {ZONE: "no_us-west1-a"},
        None,
        CONFLICT,
    ),
    (
        "pv with zone and region, node with only zone",
        pod_with_claims("pod_1", "PVC_Stable_3"),
        {ZONE: "us-west1-a"},
        None,
        CONFLICT,
    ),
    (
        "pv with zone,node with beta zone",
        pod_with_claims("pod_1", "PVC_Stable_1"),
        {BETA_ZONE: "us-west1-a"},
        None,
        CONFLICT,
    ),
    (
        "pv with beta label,node with ga label, matched",
        pod_with_claims("pod_1", "PVC_1"),
        {ZONE: "us-west1-a"},
        None,
        None,
    ),
    (
        "pv with beta label,node with ga label, don't match",
        pod_with_claims("pod_1", "PVC_1"),
        {ZONE: "us-west1-b"},
        None,
        CONFLICT,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "labels", "want_pre", "want_filter"), SINGLE_ZONE, ids=[c[0] for c in SINGLE_ZONE]
)
def test_single_zone(
    name: str, pod: Pod, labels: dict[str, str], want_pre: Status | None, want_filter: Status | None
) -> None:
    assert run(SINGLE_ZONE_OBJECTS, pod, labels) == (want_pre, want_filter)


MULTI_ZONE_OBJECTS = (
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", volumeName="Vol_1"),
    pvc("PVC_2", volumeName="Vol_2"),
    pvc("PVC_3", volumeName="Vol_3"),
    pvc("PVC_Stable_1", volumeName="Vol_Stable_1"),
    pvc("PVC_Stable_2", volumeName="Vol_Stable_2"),
)

MULTI_ZONE = [
    ("node without labels", "PVC_3", {}, None),
    ("beta zone label matched", "PVC_3", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None),
    ("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "us-west1-b"}, CONFLICT),
    ("zone label matched", "PVC_Stable_2", {ZONE: "us-west1-a"}, None),
    ("zone label doesn't match", "PVC_Stable_1", {ZONE: "us-west1-b"}, CONFLICT),
]


@pytest.mark.parametrize(("name", "claim", "labels", "want"), MULTI_ZONE, ids=[c[0] for c in MULTI_ZONE])
def test_multi_zone(name: str, claim: str, labels: dict[str, str], want: Status | None) -> None:
    assert run(MULTI_ZONE_OBJECTS, pod_with_claims("pod_1", claim), labels) == (None, want)


BINDING_OBJECTS = (
    storage_class("Class_Immediate"),
    storage_class("Class_Wait", "WaitForFirstConsumer"),
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", volumeName="Vol_1"),
    pvc("PVC_NoSC", storageClassName="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", storageClassName="Class_Wait"),
    pvc("PVC_ImmediateSC", storageClassName="Class_Immediate"),
)
NO_SC_NAME = unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
NO_CLASS = unresolvable('storageclass.storage.k8s.io "Class_0" not found')
NO_PV_NAME = unresolvable("PersistentVolume had no name")

WITH_BINDING = [
    ("label zone failure domain matched", "PVC_1", None, None),
    ("unbound volume empty storage class", "PVC_EmptySC", NO_SC_NAME, NO_SC_NAME),
    ("unbound volume no storage class", "PVC_NoSC", NO_CLASS, NO_CLASS),
    ("unbound volume immediate binding mode", "PVC_ImmediateSC", NO_PV_NAME, NO_PV_NAME),
    ("unbound volume wait binding mode", "PVC_WaitSC", skip(), None),
    ("missing claim", "PVC_missing", unresolvable('persistentvolumeclaim "PVC_missing" not found'), None),
    ("claim bound to a missing volume", "PVC_4", None, None),
]


@pytest.mark.parametrize(
    ("name", "claim", "want_pre", "want_filter"), WITH_BINDING, ids=[c[0] for c in WITH_BINDING]
)
def test_with_binding(name: str, claim: str, want_pre: Status | None, want_filter: Status | None) -> None:
    objs = (*BINDING_OBJECTS, pvc("PVC_4", volumeName="Vol_not_exist"))
    pod = pod_with_claims("pod_1", claim)
    pre, filtered = run(objs, pod, {BETA_ZONE: "us-west1-a", "uselessLabel": "none"})
    if name == "claim bound to a missing volume":
        # Not in the Go table: PreFilter reports the lister's NotFound.
        assert pre == unresolvable('persistentvolume "Vol_not_exist" not found')
        return
    if name == "missing claim":
        assert pre == want_pre
        return
    assert (pre, filtered) == (want_pre, want_filter)


PLUGIN = VolumeZone(None, handle())


def test_hint_claim_change() -> None:
    pod = pod_with_claims("pod_1", "PVC_1")
    mine = parse_persistent_volume_claim(pvc("PVC_1"))
    other = parse_persistent_volume_claim(pvc("PVC_2"))
    elsewhere = parse_persistent_volume_claim(pvc("PVC_1", namespace="ns"))
    assert PLUGIN.is_schedulable_after_claim_change(pod, None, mine) is QueueingHint.QUEUE
    assert PLUGIN.is_schedulable_after_claim_change(pod, None, other) is QueueingHint.QUEUE_SKIP
    assert PLUGIN.is_schedulable_after_claim_change(pod, None, elsewhere) is QueueingHint.QUEUE_SKIP
    with pytest.raises(HintError):
        PLUGIN.is_schedulable_after_claim_change(pod, None, "not-a-pvc")


def test_hint_storage_class_added() -> None:
    pod = pod_with_claims("pod_1", "PVC_1")
    wait = parse_storage_class(storage_class("w", "WaitForFirstConsumer"))
    immediate = parse_storage_class(storage_class("i"))
    assert PLUGIN.is_schedulable_after_storage_class_added(pod, None, wait) is QueueingHint.QUEUE
    assert PLUGIN.is_schedulable_after_storage_class_added(pod, None, immediate) is QueueingHint.QUEUE_SKIP


def test_hint_volume_change() -> None:
    pod = pod_with_claims("pod_1", "PVC_1")
    zoned = parse_persistent_volume(pv("Vol_1", {ZONE: "us-west1-a"}))
    moved = parse_persistent_volume(pv("Vol_1", {ZONE: "us-west1-b"}))
    relabelled = parse_persistent_volume(pv("Vol_1", {ZONE: "us-west1-a", "other": "x"}))
    assert PLUGIN.is_schedulable_after_volume_change(pod, None, zoned) is QueueingHint.QUEUE
    assert PLUGIN.is_schedulable_after_volume_change(pod, zoned, moved) is QueueingHint.QUEUE
    assert PLUGIN.is_schedulable_after_volume_change(pod, zoned, relabelled) is QueueingHint.QUEUE_SKIP
