"""VolumeBinding, ported from plugins/volumebinding/volume_binding_test.go (v1.36.3): TestVolumeBinding
(PreFilter, Filter, PreScore, Score; the scoring cases with StorageCapacityScoring on), the
QueueingHint tables, and VolumeBindingArgs' defaulting and validation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app import featuregates as gates
from app.api.errors import FieldError
from app.api.objects import parse_pod
from app.api.storage import (
    parse_csi_driver,
    parse_csi_node,
    parse_csi_storage_capacity,
    parse_persistent_volume_claim,
    parse_storage_class,
)
from app.framework.cycle_state import CycleState
from app.framework.events import QueueingHint
from app.framework.status import Status, skip, unresolvable
from app.framework.types import NodeInfo
from app.plugins.noderesources.args import UtilizationShapePoint
from app.plugins.volumebinding.args import VolumeBindingArgs
from app.plugins.volumebinding.binder import ERR_REASON_BIND_CONFLICT, ERR_REASON_NODE_CONFLICT
from app.plugins.volumebinding.volume_binding import VolumeBinding
from builders import make_node, make_pod, pod_dict
from plugins.storage_helpers import csi_node, handle, pod_with_claims, pv, pvc, storage_class

WAIT_SC = storage_class("wait-sc", "WaitForFirstConsumer")
IMMEDIATE_SC = storage_class("immediate-sc")
WAIT_HDD_SC = storage_class("wait-hdd-sc", "WaitForFirstConsumer")
HOSTNAME = "kubernetes.io/hostname"


def make_pvc(name: str, sc: str, bound_pv: str = "", request: str = "", phase: str = "") -> dict[str, Any]:
    """makePVC(...).withBoundPV(...).withRequestStorage(...).withPhase(...)."""
    spec: dict[str, Any] = {"storageClassName": sc}
    annotations = None
    if bound_pv:
        spec["volumeName"] = bound_pv
        annotations = {"pv.kubernetes.io/bind-completed": "true"}
    if request:
        spec["resources"] = {"requests": {"storage": request}}
    return pvc(name, annotations=annotations, phase=phase, **spec)


def make_pv(
    name: str, sc: str, capacity: str = "", node_affinity: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """makePV(...).withPhase(Available).withCapacity(...).withNodeAffinity(...)."""
    spec: dict[str, Any] = {"storageClassName": sc, "phase": "Available"}
    if capacity:
        spec["capacity"] = {"storage": capacity}
    if node_affinity:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": k, "operator": "In", "values": v} for k, v in node_affinity.items()
                        ]
                    }
                ]
            }
        }
    return pv(name, **spec)


@pytest.fixture
def capacity_scoring() -> Iterator[None]:
    gates.DEFAULT.set("StorageCapacityScoring=true")
    try:
        yield
    finally:
        gates.DEFAULT.reset()


def run(
    claims: list[str],
    objs: list[dict[str, Any]],
    nodes: list[NodeInfo],
    args: VolumeBindingArgs | None = None,
) -> tuple[Status | None, list[Status | None], Status | None, list[int]]:
    plugin = VolumeBinding(args or VolumeBindingArgs(300), handle(WAIT_SC, IMMEDIATE_SC, WAIT_HDD_SC, *objs))
    pod = pod_with_claims("pod-a", *claims)
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, nodes)
    if pre is not None:
        return pre, [], None, []
    filtered = [plugin.filter(state, pod, n) for n in nodes]
    feasible = [n for n, s in zip(nodes, filtered, strict=True) if s is None]
    pre_score = plugin.pre_score(state, pod, feasible)
    scores = [] if pre_score is not None else [plugin.score(state, pod, n) for n in feasible]
    return pre, filtered, pre_score, scores


def nodes(*names: str, labels: dict[str, str] | None = None) -> list[NodeInfo]:
    return [NodeInfo(make_node(n, labels=labels)) for n in names]


def test_pod_has_no_pvcs() -> None:
    plugin = VolumeBinding(VolumeBindingArgs(300), handle())
    state = CycleState()
    assert plugin.pre_filter(state, make_pod("pod-a"), []) == (None, skip())


@pytest.mark.parametrize(
    ("name", "claims", "objs", "want_pre"),
    [
        ("PVC does not exist", ["pvc-a"], [], unresolvable('persistentvolumeclaim "pvc-a" not found')),
        (
            "Part of PVCs do not exist",
            ["pvc-a", "pvc-b"],
            [make_pvc("pvc-a", "wait-sc", "pv-a")],
            unresolvable('persistentvolumeclaim "pvc-b" not found'),
        ),
        (
            "immediate claims not bound",
            ["pvc-a"],
            [make_pvc("pvc-a", "immediate-sc")],
            unresolvable("pod has unbound immediate PersistentVolumeClaims"),
        ),
        (
            "pv not found claim lost",
            ["pvc-a"],
            [make_pvc("pvc-a", "wait-sc", "pv-a", phase="Lost")],
            unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
        ),
        (
            "claim being deleted",
            ["pvc-a"],
            [pvc("pvc-a", deleting=True, storageClassName="wait-sc")],
            unresolvable('persistentvolumeclaim "pvc-a" is being deleted'),
        ),
        (
            "class does not exist: the claim counts as Immediate",
            ["pvc-a"],
            [make_pvc("pvc-a", "no-such-class")],
            unresolvable("pod has unbound immediate PersistentVolumeClaims"),
        ),
    ],
)
def test_pre_filter_rejections(
    name: str, claims: list[str], objs: list[dict[str, Any]], want_pre: Status
) -> None:
    assert run(claims, objs, nodes("node-a"))[0] == want_pre


@pytest.mark.parametrize(
    ("owner_uid", "want"),
    [
        ("uid-pod-a", None),
        (
            "uid-someone-else",
            unresolvable(
                "PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)"
            ),
        ),
    ],
)
def test_ephemeral_claim_must_be_owned_by_the_pod(owner_uid: str, want: Status | None) -> None:
    # Found by the parity suite: kube's podHasPVCs checks ephemeral.VolumeIsForPod in PreFilter, so a
    # generic ephemeral volume's claim that another object controls is UnschedulableAndUnresolvable.
    claim = make_pvc("pod-a-scratch", "wait-sc")
    claim["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "pod-a", "uid": owner_uid, "controller": True}
    ]
    plugin = VolumeBinding(VolumeBindingArgs(300), handle(WAIT_SC, claim))
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    pod = parse_pod(
        pod_dict(
            "pod-a",
            "default",
            uid="uid-pod-a",
            volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}],
        )
    )
    assert plugin.pre_filter(CycleState(), pod, nodes("node-a"))[1] == want


def test_all_bound() -> None:
    objs = [make_pvc("pvc-a", "wait-sc", "pv-a"), make_pv("pv-a", "wait-sc")]
    assert run(["pvc-a"], objs, nodes("node-a")) == (None, [None], skip(), [])


def test_unbound_claims_no_matches() -> None:
    got = run(["pvc-a"], [make_pvc("pvc-a", "wait-sc")], nodes("node-a"))
    assert got == (None, [unresolvable(ERR_REASON_BIND_CONFLICT)], skip(), [])


def test_bound_and_unbound_unsatisfied() -> None:
    objs = [
        make_pvc("pvc-a", "wait-sc", "pv-a"),
        make_pvc("pvc-b", "wait-sc"),
        make_pv("pv-a", "wait-sc", node_affinity={"foo": ["bar"]}),
    ]
    got = run(["pvc-a", "pvc-b"], objs, nodes("node-a", labels={"foo": "barbar"}))
    assert got[1] == [unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)]


def test_pv_not_found() -> None:
    got = run(["pvc-a"], [make_pvc("pvc-a", "wait-sc", "pv-a")], nodes("node-a"))
    assert got[1] == [
        unresolvable("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)")
    ]


LOCAL_PVS = [
    make_pv("pv-a-0", "wait-sc", "200Gi", {HOSTNAME: ["node-a"]}),
    make_pv("pv-a-1", "wait-sc", "200Gi", {HOSTNAME: ["node-a"]}),
    make_pv("pv-b-0", "wait-sc", "100Gi", {HOSTNAME: ["node-b"]}),
    make_pv("pv-b-1", "wait-sc", "100Gi", {HOSTNAME: ["node-b"]}),
]
DEFAULT_SHAPE_POINT = [UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10)]


def test_local_volumes_without_capacity_scoring_are_not_scored() -> None:
    """v1.36's default: StorageCapacityScoring is off, so PreScore skips."""
    objs = [make_pvc("pvc-a", "wait-sc", request="50Gi"), *LOCAL_PVS]
    _, filtered, pre_score, _ = run(["pvc-a"], objs, nodes("node-a", "node-b", "node-c"))
    assert filtered == [None, None, unresolvable(ERR_REASON_BIND_CONFLICT)]
    assert pre_score == skip()


@pytest.mark.usefixtures("capacity_scoring")
def test_local_volumes_with_close_capacity_are_preferred() -> None:
    objs = [make_pvc("pvc-a", "wait-sc", request="50Gi"), *LOCAL_PVS]
    _, filtered, pre_score, scores = run(
        ["pvc-a"], objs, nodes("node-a", "node-b", "node-c"), VolumeBindingArgs(300, DEFAULT_SHAPE_POINT)
    )
    assert filtered == [None, None, unresolvable(ERR_REASON_BIND_CONFLICT)]
    assert pre_score is None
    assert scores == [25, 50]


@pytest.mark.usefixtures("capacity_scoring")
def test_local_volumes_with_close_capacity_are_preferred_multiple_pvcs() -> None:
    objs = [
        make_pvc("pvc-0", "wait-sc", request="50Gi"),
        make_pvc("pvc-1", "wait-hdd-sc", request="100Gi"),
        make_pv("pv-a-0", "wait-sc", "200Gi", {HOSTNAME: ["node-a"]}),
        make_pv("pv-a-1", "wait-sc", "200Gi", {HOSTNAME: ["node-a"]}),
        make_pv("pv-a-2", "wait-hdd-sc", "200Gi", {HOSTNAME: ["node-a"]}),
        make_pv("pv-a-3", "wait-hdd-sc", "200Gi", {HOSTNAME: ["node-a"]}),
        make_pv("pv-b-0", "wait-sc", "100Gi", {HOSTNAME: ["node-b"]}),
        make_pv("pv-b-1", "wait-sc", "100Gi", {HOSTNAME: ["node-b"]}),
        make_pv("pv-b-2", "wait-hdd-sc", "100Gi", {HOSTNAME: ["node-b"]}),
        make_pv("pv-b-3", "wait-hdd-sc", "100Gi", {HOSTNAME: ["node-b"]}),
    ]
    _, filtered, _, scores = run(
        ["pvc-0", "pvc-1"],
        objs,
        nodes("node-a", "node-b", "node-c"),
        VolumeBindingArgs(300, DEFAULT_SHAPE_POINT),
    )
    assert filtered == [None, None, unresolvable(ERR_REASON_BIND_CONFLICT)]
    assert scores == [38, 75]


def test_reserve_then_unreserve_frees_the_pv_for_the_next_pod() -> None:
    objs = [make_pvc("pvc-a", "wait-sc"), make_pvc("pvc-b", "wait-sc"), make_pv("pv-a", "wait-sc", "1Gi")]
    plugin = VolumeBinding(VolumeBindingArgs(300), handle(WAIT_SC, *objs))
    node = NodeInfo(make_node("node-a"))
    first, second = pod_with_claims("p1", "pvc-a"), pod_with_claims("p2", "pvc-b")
    s1 = CycleState()
    plugin.pre_filter(s1, first, [node])
    assert plugin.filter(s1, first, node) is None
    assert plugin.reserve(s1, first, "node-a") is None
    # The PV is taken while the first pod's binding is in flight.
    s2 = CycleState()
    plugin.pre_filter(s2, second, [node])
    assert plugin.filter(s2, second, node) == unresolvable(ERR_REASON_BIND_CONFLICT)
    plugin.unreserve(s1, first, "node-a")
    s3 = CycleState()
    plugin.pre_filter(s3, second, [node])
    assert plugin.filter(s3, second, node) is None


# --- QueueingHints -----------------------------------------------------------------------------------------

PLUGIN = VolumeBinding(VolumeBindingArgs(), handle())
POD = pod_with_claims("pod-a", "pvc-a")


def test_hint_csi_node_change() -> None:
    old = parse_csi_node(csi_node("n", {}, {"storage.alpha.kubernetes.io/migrated-plugins": "a"}))
    same = parse_csi_node(csi_node("n", {"d": 1}, {"storage.alpha.kubernetes.io/migrated-plugins": "a"}))
    changed = parse_csi_node(csi_node("n", {}, {"storage.alpha.kubernetes.io/migrated-plugins": "a,b"}))
    assert PLUGIN.is_schedulable_after_csi_node_change(POD, None, old) is QueueingHint.QUEUE
    assert PLUGIN.is_schedulable_after_csi_node_change(POD, old, same) is QueueingHint.QUEUE_SKIP
    assert PLUGIN.is_schedulable_after_csi_node_change(POD, old, changed) is QueueingHint.QUEUE


def test_hint_claim_change() -> None:
    assert (
        PLUGIN.is_schedulable_after_claim_change(POD, None, parse_persistent_volume_claim(pvc("pvc-a")))
        is QueueingHint.QUEUE
    )
    assert (
        PLUGIN.is_schedulable_after_claim_change(POD, None, parse_persistent_volume_claim(pvc("pvc-b")))
        is QueueingHint.QUEUE_SKIP
    )
    assert (
        PLUGIN.is_schedulable_after_claim_change(
            POD, None, parse_persistent_volume_claim(pvc("pvc-a", "other"))
        )
        is QueueingHint.QUEUE_SKIP
    )


def test_hint_storage_class_change() -> None:
    topo = [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]
    old = parse_storage_class(storage_class("sc", "WaitForFirstConsumer"))
    new_topology = parse_storage_class(storage_class("sc", "WaitForFirstConsumer", allowedTopologies=topo))
    relabelled = parse_storage_class(storage_class("sc", "WaitForFirstConsumer", parameters={"a": "b"}))
    assert PLUGIN.is_schedulable_after_storage_class_change(POD, None, old) is QueueingHint.QUEUE
    assert PLUGIN.is_schedulable_after_storage_class_change(POD, old, new_topology) is QueueingHint.QUEUE
    assert PLUGIN.is_schedulable_after_storage_class_change(POD, old, relabelled) is QueueingHint.QUEUE_SKIP


def _capacity(size: str | None, max_size: str | None = None) -> Any:
    raw: dict[str, Any] = {"metadata": {"name": "c", "namespace": "default"}, "storageClassName": "sc"}
    if size:
        raw["capacity"] = size
    if max_size:
        raw["maximumVolumeSize"] = max_size
    return parse_csi_storage_capacity(raw)


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, _capacity("1Gi"), QueueingHint.QUEUE),
        (_capacity("1Gi"), _capacity("2Gi"), QueueingHint.QUEUE),
        (_capacity("2Gi"), _capacity("1Gi"), QueueingHint.QUEUE_SKIP),
        (_capacity(None), _capacity("1Gi"), QueueingHint.QUEUE),
        (_capacity("1Gi", "1Gi"), _capacity("2Gi", "1Gi"), QueueingHint.QUEUE_SKIP),
        (_capacity("1Gi", "1Gi"), _capacity("1Gi", "2Gi"), QueueingHint.QUEUE),
    ],
)
def test_hint_capacity_change(old: Any, new: Any, want: QueueingHint) -> None:
    assert PLUGIN.is_schedulable_after_capacity_change(POD, old, new) is want


def test_hint_csi_driver_change() -> None:
    inline = make_pod("p", volumes=[{"name": "v", "csi": {"driver": "d"}}])

    def driver(capacity: bool) -> Any:
        return parse_csi_driver({"metadata": {"name": "d"}, "spec": {"storageCapacity": capacity}})

    assert (
        PLUGIN.is_schedulable_after_csi_driver_change(inline, driver(True), driver(False))
        is QueueingHint.QUEUE
    )
    assert (
        PLUGIN.is_schedulable_after_csi_driver_change(inline, driver(False), driver(True))
        is QueueingHint.QUEUE_SKIP
    )
    assert (
        PLUGIN.is_schedulable_after_csi_driver_change(POD, driver(True), driver(False))
        is QueueingHint.QUEUE_SKIP
    )


# --- VolumeBindingArgs ------------------------------------------------------------------------------------


def test_args_defaults_and_v1_form() -> None:
    args = VolumeBindingArgs.decode(None, "")
    assert args == VolumeBindingArgs(600, None)
    assert args.to_dict() == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "VolumeBindingArgs",
        "bindTimeoutSeconds": 600,
    }


def test_args_negative_timeout() -> None:
    with pytest.raises(FieldError, match="invalid BindTimeoutSeconds, should not be a negative value"):
        VolumeBindingArgs.decode({"bindTimeoutSeconds": -1}, "args")


def test_args_shape_needs_the_gate() -> None:
    with pytest.raises(FieldError, match="turn on the feature gate StorageCapacityScoring"):
        VolumeBindingArgs.decode({"shape": [{"utilization": 0, "score": 10}]}, "args")


@pytest.mark.usefixtures("capacity_scoring")
def test_args_shape_with_the_gate() -> None:
    args = VolumeBindingArgs.decode(None, "")
    assert args.shape == [UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0)]
    assert args.to_dict()["shape"] == [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
    with pytest.raises(FieldError, match="values must be sorted in increasing order"):
        VolumeBindingArgs.decode(
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]}, ""
        )
