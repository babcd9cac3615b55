"""DynamicResources, ported from plugins/dynamicresources/dynamicresources_test.go (v1.36.3):
the extension points one after another on one pod, as TestPlugin runs them, plus the engine's
whole cycle (simulate's path) with claims written back to the store."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from app.api.objects import Pod, parse_pod
from app.api.resource import FINALIZER, ResourceClaim, claim_with_status, parse_resource_claim
from app.config import load_config
from app.framework.cycle_state import CycleState
from app.framework.dra import ClaimWriteError, DRAStore, allocates_in_flight
from app.framework.events import HintScope, PodHintKeys, QueueingHint
from app.framework.status import Code, NodeToStatus, Status
from app.framework.types import NodeInfo
from app.plugins.dynamicresources.plugin import (
    CANNOT_ALLOCATE_ALL_CLAIMS,
    DEALLOCATION_COMPLETED,
    NO_NEW_CLAIMS_TO_DEALLOCATE,
    NOT_AVAILABLE_ON_NODE,
    STILL_NOT_SCHEDULABLE,
    DynamicResources,
    claim_event_key,
    claim_hint_keys,
    format_time,
)
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import ClusterObjects, Engine
from builders import make_node, make_pod
from fakes import FakeHandle
from plugins.dra_helpers import (
    claim_raw,
    dev,
    exact,
    first_available,
    local_node_selector,
    slice_raw,
    sub,
)

DRIVER = "some-driver"
CLASS = "my-resource-class"
POD_UID = "1234"
CLAIM = "my-pod-my-resource"
WORKER = "worker"


def pod(
    name: str = "my-pod", uid: str = POD_UID, claims: list[dict[str, Any]] | None = None, **status: Any
) -> Pod:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    if claims is not None:
        raw["spec"]["resourceClaims"] = claims
    if status:
        raw["status"] = status
    return parse_pod(raw)


def pod_with_claim_name(**kw: Any) -> Pod:
    return pod(claims=[{"name": "my-resource", "resourceClaimName": CLAIM}], **kw)


def pod_with_claim_template(in_status: bool, **kw: Any) -> Pod:
    statuses = (
        {"resourceClaimStatuses": [{"name": "my-resource", "resourceClaimName": CLAIM}]} if in_status else {}
    )
    return pod(claims=[{"name": "my-resource", "resourceClaimTemplateName": "my-template"}], **statuses, **kw)


def device_class_raw(selector: str | None = None) -> dict[str, Any]:
    spec = {"selectors": [{"cel": {"expression": selector}}]} if selector else {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": spec,
    }


def pending_claim(
    *selectors: str, name: str = CLAIM, uid: str = "claim-uid", owner: str | None = None
) -> dict[str, Any]:
    return claim_raw(name, exact("req-1", CLASS, 1, *selectors), uid=uid, owner_uid=owner)


def allocation(node: str | None = WORKER, device: str = "instance-1") -> dict[str, Any]:
    out: dict[str, Any] = {
        "devices": {"results": [{"request": "req-1", "driver": DRIVER, "pool": WORKER, "device": device}]}
    }
    if node:
        out["nodeSelector"] = local_node_selector(node)
    return out


def allocated_claim(
    name: str = CLAIM,
    uid: str = "claim-uid",
    node: str | None = WORKER,
    device: str = "instance-1",
    **status: Any,
) -> dict[str, Any]:
    raw = pending_claim(name=name, uid=uid)
    raw["metadata"]["finalizers"] = [FINALIZER]
    raw["status"] = {"allocation": allocation(node, device), **status}
    return raw


def worker_slice(*names: str) -> dict[str, Any]:
    return slice_raw(
        f"{WORKER}-{DRIVER}", WORKER, WORKER, DRIVER, *(dev(n) for n in names or ("instance-1",))
    )


def store_with(*objects: dict[str, Any]) -> DRAStore:
    store = DRAStore()
    for obj in objects:
        store.upsert(obj["kind"], obj["metadata"]["name"], obj)
    return store


def plugin(store: DRAStore) -> DynamicResources:
    return DynamicResources(None, FakeHandle(), store)


def worker() -> NodeInfo:
    return NodeInfo(make_node(WORKER))


# --- PreEnqueue ---------------------------------------------------------------------------------

PRE_ENQUEUE_CASES = [
    (
        "missing-claim",
        pod_with_claim_template(False),
        [],
        'pod "default/my-pod": ResourceClaim not created yet',
    ),
    (
        "missing-claim-object",
        pod_with_claim_name(),
        [],
        'could not find ResourceClaim "default/my-pod-my-resource"',
    ),
    (
        "deleted-claim",
        pod_with_claim_template(True),
        [
            {
                **pending_claim(owner=POD_UID),
                "metadata": {
                    **pending_claim(owner=POD_UID)["metadata"],
                    "deletionTimestamp": "2026-01-01T00:00:00Z",
                },
            }
        ],
        'resourceclaim "my-pod-my-resource" is being deleted',
    ),
    (
        "wrong-claim",
        pod_with_claim_template(True),
        [pending_claim(owner=POD_UID + "123")],
        "ResourceClaim default/my-pod-my-resource was not created for Pod default/my-pod (Pod is not owner)",
    ),
    (
        "unsupported",
        pod(claims=[{"name": "my-resource"}]),
        [],
        'pod "default/my-pod", spec.resourceClaim "my-resource": none of the supported fields are set',
    ),
]


@pytest.mark.parametrize(
    ("name", "the_pod", "claims", "want"), PRE_ENQUEUE_CASES, ids=[c[0] for c in PRE_ENQUEUE_CASES]
)
def test_pre_enqueue(name: str, the_pod: Pod, claims: list[dict[str, Any]], want: str) -> None:
    status = plugin(store_with(*claims)).pre_enqueue(the_pod)
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, want)


def test_pre_enqueue_admits_template_pod_with_its_claim() -> None:
    assert plugin(store_with(pending_claim(owner=POD_UID))).pre_enqueue(pod_with_claim_template(True)) is None


# --- the cycle ------------------------------------------------------------------------------------


def test_empty_pod_skips_and_postfilter_has_no_claims_to_deallocate() -> None:
    pl, state = plugin(DRAStore()), CycleState()
    assert pl.pre_filter(state, pod(), [])[1] == Status(Code.SKIP)
    _, status = pl.post_filter(state, pod(), NodeToStatus())
    assert status == Status(Code.UNSCHEDULABLE, NO_NEW_CLAIMS_TO_DEALLOCATE)


def test_postfilter_without_prefilter_state_is_not_found() -> None:
    _, status = plugin(DRAStore()).post_filter(CycleState(), pod(), NodeToStatus())
    assert status == Status(Code.ERROR, "not found")


def test_no_resources() -> None:
    pl, state, p = (
        plugin(store_with(pending_claim(), device_class_raw())),
        CycleState(),
        pod_with_claim_name(),
    )
    assert pl.pre_filter(state, p, []) == (None, None)
    assert pl.filter(state, p, worker()) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CANNOT_ALLOCATE_ALL_CLAIMS
    )
    assert pl.post_filter(state, p, NodeToStatus())[1] == Status(Code.UNSCHEDULABLE, STILL_NOT_SCHEDULABLE)


def test_with_resources_reserves_in_flight_then_prebind_writes_allocation_and_reservation() -> None:
    store = store_with(pending_claim(), device_class_raw(), worker_slice())
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    assert pl.pre_filter(state, p, []) == (None, None)
    assert pl.filter(state, p, worker()) is None
    assert not allocates_in_flight(state)
    assert pl.reserve(state, p, WORKER) is None
    in_flight = store.pending_allocation("claim-uid")
    assert in_flight is not None and in_flight.allocation is not None
    # berth run starts this pod's binding cycle before the backlog: the sharers wait for it.
    assert allocates_in_flight(state)
    assert [r.device for r in in_flight.allocation.results] == ["instance-1"]
    # Another pod's claim cannot have the in-flight device.
    other = plugin(store)
    store.upsert("ResourceClaim", "other", pending_claim(name="other-claim", uid="other-uid"))
    other_pod = pod("other", "5678", claims=[{"name": "r", "resourceClaimName": "other-claim"}])
    other_state = CycleState()
    other.pre_filter(other_state, other_pod, [])
    assert other.filter(other_state, other_pod, worker()) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CANNOT_ALLOCATE_ALL_CLAIMS
    )

    assert pl.pre_bind(state, p, WORKER) is None
    stored = store.get_claim("default", CLAIM)
    assert stored is not None and stored.allocation is not None
    assert FINALIZER in stored.finalizers
    assert [(r.resource, r.name, r.uid) for r in stored.reserved_for] == [("pods", "my-pod", POD_UID)]
    assert stored.allocation.raw["nodeSelector"] == local_node_selector(WORKER)
    assert stored.allocation.allocation_timestamp  # DRADeviceBindingConditions is on: the timestamp is set
    assert store.pending_allocation("claim-uid") is None


def test_a_claim_the_pod_owns_is_not_one_other_pods_wait_for() -> None:
    """A claim made from the pod's template is the pod's alone: its binding cycle keeps its place
    (only a claim other pods may share marks the attempt, see allocates_in_flight)."""
    store = store_with(pending_claim(owner=POD_UID), device_class_raw(), worker_slice())
    pl, state, p = plugin(store), CycleState(), pod_with_claim_template(in_status=True)
    assert pl.pre_filter(state, p, []) == (None, None)
    assert pl.filter(state, p, worker()) is None
    assert pl.reserve(state, p, WORKER) is None
    assert store.pending_allocation("claim-uid") is not None
    assert not allocates_in_flight(state)


def test_exhausted_resources_in_informer_cache() -> None:
    store = store_with(
        pending_claim(), allocated_claim("other-claim", "other-uid"), device_class_raw(), worker_slice()
    )
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    pl.pre_filter(state, p, [])
    assert pl.filter(state, p, worker()) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CANNOT_ALLOCATE_ALL_CLAIMS
    )
    assert pl.post_filter(state, p, NodeToStatus())[1] == Status(Code.UNSCHEDULABLE, STILL_NOT_SCHEDULABLE)


def test_claim_being_allocated_for_another_pod_waits() -> None:
    store = store_with(pending_claim(), device_class_raw(), worker_slice())
    store.signal_pending_allocation(parse_resource_claim(allocated_claim()))
    _, status = plugin(store).pre_filter(CycleState(), pod_with_claim_name(), [])
    assert status == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "resource claim default/my-pod-my-resource is in the process of being allocated",
    )


def test_missing_class() -> None:
    pl, state, p = plugin(store_with(pending_claim())), CycleState(), pod_with_claim_name()
    assert pl.pre_filter(state, p, [])[1] == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"request req-1: device class {CLASS} does not exist"
    )
    assert pl.post_filter(state, p, NodeToStatus())[1] == Status(
        Code.UNSCHEDULABLE, NO_NEW_CLAIMS_TO_DEALLOCATE
    )


def test_wrong_topology_is_deallocated_by_postfilter() -> None:
    store = store_with(allocated_claim(node="other-node"))
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    assert pl.pre_filter(state, p, []) == (None, None)
    assert pl.filter(state, p, worker()) == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_AVAILABLE_ON_NODE)
    assert pl.post_filter(state, p, NodeToStatus())[1] == Status(Code.UNSCHEDULABLE, DEALLOCATION_COMPLETED)
    stored = store.get_claim("default", CLAIM)
    assert stored is not None and stored.allocation is None


def test_good_topology_reserves_an_allocated_claim() -> None:
    store = store_with(allocated_claim())
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    pl.pre_filter(state, p, [])
    assert pl.filter(state, p, worker()) is None
    assert pl.reserve(state, p, WORKER) is None
    assert not allocates_in_flight(state)  # only the reservation to write: no pod waits for it
    assert pl.pre_bind(state, p, WORKER) is None
    stored = store.get_claim("default", CLAIM)
    assert stored is not None and [r.uid for r in stored.reserved_for] == [POD_UID]


def _pod_with_claims(*names: str) -> Pod:
    return pod(claims=[{"name": f"res-{i}", "resourceClaimName": n} for i, n in enumerate(names)])


@pytest.mark.parametrize(
    ("filtered", "deallocated"),
    [((WORKER,), "on-other-node"), (("other-node",), "on-worker"), ((WORKER, "other-node"), "on-worker")],
)
def test_allocated_claims_on_two_nodes_fit_neither_and_postfilter_frees_one_a_node_rejected(
    filtered: tuple[str, ...], deallocated: str
) -> None:
    """A pod whose claims are all allocated (a pod sharing claims others allocated) is decided by
    the claims' node selectors alone: each node rejects it while one claim is elsewhere, and
    PostFilter deallocates the first of the claims some filtered node could not reach."""
    store = store_with(
        allocated_claim("on-worker", "uid-w", node=WORKER),
        allocated_claim("on-other-node", "uid-o", node="other-node"),
    )
    pl, state, p = plugin(store), CycleState(), _pod_with_claims("on-worker", "on-other-node")
    assert pl.pre_filter(state, p, []) == (None, None)
    for name in filtered:
        status = pl.filter(state, p, NodeInfo(make_node(name)))
        assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_AVAILABLE_ON_NODE)
    assert pl.post_filter(state, p, NodeToStatus())[1] == Status(Code.UNSCHEDULABLE, DEALLOCATION_COMPLETED)
    freed = store.get_claim("default", deallocated)
    kept = store.get_claim("default", "on-worker" if deallocated == "on-other-node" else "on-other-node")
    assert freed is not None and freed.allocation is None
    assert kept is not None and kept.allocation is not None


def test_an_allocated_claim_and_a_pending_one_are_checked_and_allocated_on_each_node() -> None:
    """Node selectors and the allocator together: the allocated claim's node gets the pending
    claim's device, another node is rejected for the allocated claim, and Reserve puts only the
    pending claim in flight."""
    store = store_with(
        allocated_claim("on-worker", "uid-w", node=WORKER, device="instance-1"),
        pending_claim(name="pending", uid="uid-p"),
        device_class_raw(),
        worker_slice("instance-1", "instance-2"),
    )
    pl, state, p = plugin(store), CycleState(), _pod_with_claims("on-worker", "pending")
    assert pl.pre_filter(state, p, []) == (None, None)
    # No device there either: the allocator's verdict comes first, as in kube's Filter.
    assert pl.filter(state, p, NodeInfo(make_node("other-node"))) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CANNOT_ALLOCATE_ALL_CLAIMS
    )
    assert pl.filter(state, p, worker()) is None
    assert pl.reserve(state, p, WORKER) is None
    in_flight = store.pending_allocation("uid-p")
    assert in_flight is not None and in_flight.allocation is not None
    assert [r.device for r in in_flight.allocation.results] == ["instance-2"]
    assert store.pending_allocation("uid-w") is None


def test_claim_parameters_cel_runtime_error() -> None:
    store = store_with(
        pending_claim(f'device.attributes["{DRIVER}"].healthy'), device_class_raw(), worker_slice()
    )
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    pl.pre_filter(state, p, [])
    assert pl.filter(state, p, worker()) == Status(
        Code.ERROR, "claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy"
    )


def test_class_parameters_cel_runtime_error() -> None:
    store = store_with(
        pending_claim(), device_class_raw(f'device.attributes["{DRIVER}"].healthy'), worker_slice()
    )
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    pl.pre_filter(state, p, [])
    assert pl.filter(state, p, worker()) == Status(
        Code.ERROR, f"class {CLASS}: selector #0: CEL runtime error: no such key: healthy"
    )


def test_unreserve_releases_the_in_flight_allocation() -> None:
    store = store_with(pending_claim(), device_class_raw(), worker_slice())
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    pl.pre_filter(state, p, [])
    pl.filter(state, p, worker())
    pl.reserve(state, p, WORKER)
    pl.unreserve(state, p, WORKER)
    assert store.pending_allocation("claim-uid") is None
    assert not allocates_in_flight(state)
    assert store.allocated_state().allocated_devices == set()


def test_prioritized_list_scoring() -> None:
    """single-claim-prioritized-list-scoring: the earlier subrequest scores 8 - index."""
    raw = claim_raw(
        CLAIM, first_available("req-1", sub("sub-0", CLASS, 2), sub("sub-1", CLASS, 1)), uid="claim-uid"
    )
    store = store_with(raw, device_class_raw(), worker_slice("instance-1"))
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    pl.pre_filter(state, p, [])
    assert pl.filter(state, p, worker()) is None
    assert pl.score(state, p, worker()) == 8 - 1  # only one device: the second subrequest
    assert pl.score_nodes(state, p, [worker()]) == [8 - 1]


def test_a_pod_without_claims_scores_zero_everywhere() -> None:
    """kube-scheduler's DynamicResources has no PreScore: it scores every pod (0 without claims), so
    it appears in each node's score breakdown."""
    pl, state, p = plugin(store_with()), CycleState(), make_pod("plain")
    pl.pre_filter(state, p, [])
    assert pl.score_nodes(state, p, [worker(), worker()]) == [0, 0]


# --- queueing hints --------------------------------------------------------------------------------


def test_claim_change_hints() -> None:
    store = store_with(pending_claim())
    pl, p = plugin(store), pod_with_claim_name()
    mine = parse_resource_claim(pending_claim())
    unrelated = parse_resource_claim(pending_claim(name="x", uid="x-uid"))
    allocated_other = parse_resource_claim(allocated_claim("x", "x-uid"))
    assert pl.is_schedulable_after_claim_change(p, None, mine) == QueueingHint.QUEUE  # queue-on-add
    assert pl.is_schedulable_after_claim_change(p, None, unrelated) == QueueingHint.QUEUE_SKIP
    assert pl.is_schedulable_after_claim_change(p, mine, mine) == QueueingHint.QUEUE_SKIP
    assert (
        pl.is_schedulable_after_claim_change(p, mine, parse_resource_claim(allocated_claim()))
        == QueueingHint.QUEUE
    )
    # claim-deallocate: any claim losing its allocation frees devices.
    assert pl.is_schedulable_after_claim_change(p, allocated_other, unrelated) == QueueingHint.QUEUE


def _with(raw: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """A copy of ``raw`` with metadata fields replaced (``None`` drops one)."""
    out = {**raw, "metadata": {**raw["metadata"], **meta}}
    out["metadata"] = {k: v for k, v in out["metadata"].items() if v is not None}
    return out


def _deallocated(raw: dict[str, Any]) -> dict[str, Any]:
    return {**raw, "status": {}}


OTHER_ALLOCATED = allocated_claim("other", "other-uid", device="instance-2")

# TestIsSchedulableAfterClaimChange (dynamicresources_test.go), with the claims the informer holds
# (the new object is in the store too, as the hint runs after the informer took it in); then
# berth's cases for the pods that wait for their own claims while other claims change.
CLAIM_CHANGE_HINT_CASES = [
    (
        "skip-wrong-claim",
        pod_with_claim_template(False),
        [],
        None,
        allocated_claim() | {"metadata": {**allocated_claim()["metadata"], "ownerReferences": []}},
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-unrelated-claim",
        pod_with_claim_template(False),
        [allocated_claim()],
        None,
        _with(allocated_claim(), name=CLAIM + "-foo", uid="claim-uid123"),
        QueueingHint.QUEUE_SKIP,
    ),
    ("queue-on-add", pod_with_claim_name(), [], None, pending_claim(), QueueingHint.QUEUE),
    (
        "skip-adding-finalizer",
        pod_with_claim_name(),
        [pending_claim()],
        pending_claim(),
        _with(pending_claim(), finalizers=["foo"]),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-status-change",
        pod_with_claim_name(),
        [pending_claim()],
        pending_claim(),
        {**pending_claim(), "status": {"allocation": {}}},
        QueueingHint.QUEUE,
    ),
    (
        "claim-deallocate",
        pod_with_claim_name(),
        [pending_claim(), OTHER_ALLOCATED],
        OTHER_ALLOCATED,
        _deallocated(OTHER_ALLOCATED),
        QueueingHint.QUEUE,
    ),
    (
        "waiting pod, another pod's claim added",
        pod_with_claim_template(False),
        [],
        None,
        pending_claim(name="other", uid="other-uid"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "waiting pod, another pod's claim deallocated: its own claim is missing",
        pod_with_claim_template(False),
        [OTHER_ALLOCATED],
        OTHER_ALLOCATED,
        _deallocated(OTHER_ALLOCATED),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "a claim of the same name in another namespace",
        pod_with_claim_name(),
        [pending_claim()],
        None,
        _with(pending_claim(), namespace="elsewhere", uid="elsewhere-uid"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "generated claim named in the pod's status",
        pod_with_claim_template(True),
        [],
        None,
        pending_claim(owner=POD_UID),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "p", "claims", "old", "new", "want"),
    CLAIM_CHANGE_HINT_CASES,
    ids=[c[0] for c in CLAIM_CHANGE_HINT_CASES],
)
def test_is_schedulable_after_claim_change(
    name: str,
    p: Pod,
    claims: list[dict[str, Any]],
    old: dict[str, Any] | None,
    new: dict[str, Any],
    want: QueueingHint,
) -> None:
    store = store_with(*claims)
    store.upsert("ResourceClaim", new["metadata"]["name"], new)
    pl = plugin(store)
    old_claim = parse_resource_claim(old) if old is not None else None
    assert pl.is_schedulable_after_claim_change(p, old_claim, parse_resource_claim(new)) is want


def test_pod_change_hints() -> None:
    pl = plugin(store_with(pending_claim(owner=POD_UID)))
    waiting, complete = pod_with_claim_template(False), pod_with_claim_template(True)
    assert pl.is_schedulable_after_pod_change(waiting, waiting, complete) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_change(waiting, None, waiting) == QueueingHint.QUEUE_SKIP  # incomplete
    assert pl.is_schedulable_after_pod_change(waiting, None, pod("other", "9")) == QueueingHint.QUEUE_SKIP


# --- the engine: what berth simulate does -----------------------------------------------------------


def engine(*objects: dict[str, Any]) -> Engine:
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, objects=ClusterObjects({"x": list(objects)}), seed=1)
    e.cache.add_node(make_node(WORKER))
    return e


def test_engine_allocates_reserves_and_a_second_pod_waits() -> None:
    e = engine(
        pending_claim(),
        pending_claim(name="second-claim", uid="second-uid"),
        device_class_raw(),
        worker_slice(),
    )
    first = e.schedule_one(pod_with_claim_name())
    assert (first.status, first.node) == ("Scheduled", WORKER)
    objects = e.objects
    assert isinstance(objects, ClusterObjects)
    stored = objects.dra.get_claim("default", CLAIM)
    assert (
        stored is not None
        and stored.allocation is not None
        and [r.uid for r in stored.reserved_for] == [POD_UID]
    )

    second = e.schedule_one(
        pod("second", "5678", claims=[{"name": "r", "resourceClaimName": "second-claim"}])
    )
    assert second.status == "Unschedulable"
    assert second.message == (
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_shared_claim_allocated_and_reserved_for_another_pod_is_used_and_reserved_again() -> None:
    """A claim two pods share: allocated and reserved for the first pod, the second pod only fits
    the allocation's node and is added to ``reservedFor``."""
    first_ref = {"resource": "pods", "name": "first", "uid": "first-uid"}
    store = store_with(allocated_claim(reservedFor=[first_ref]))
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    assert pl.pre_filter(state, p, []) == (None, None)
    assert pl.filter(state, p, NodeInfo(make_node("elsewhere"))) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_AVAILABLE_ON_NODE
    )
    assert pl.filter(state, p, worker()) is None
    assert pl.reserve(state, p, WORKER) is None
    assert pl.pre_bind(state, p, WORKER) is None
    stored = store.get_claim("default", CLAIM)
    assert stored is not None and [r.uid for r in stored.reserved_for] == ["first-uid", POD_UID]
    # Reserved for someone else too: PostFilter does not deallocate it.
    assert pl.post_filter(state, p, NodeToStatus())[1] == Status(Code.UNSCHEDULABLE, STILL_NOT_SCHEDULABLE)


def test_binding_cycle_nominates_a_pod_whose_claims_prebind_writes_and_not_a_plain_one() -> None:
    # NominatedNodeNameForExpectation (on in v1.36): DynamicResources' PreBindPreFlight says it has
    # work, so berth run writes status.nominatedNodeName before PreBind; a pod without claims
    # makes every PreBind plugin skip and is bound without it.
    e = engine(pending_claim(), device_class_raw(), worker_slice())
    nominated: list[tuple[str, str]] = []

    def bind(p: Pod) -> str:
        fw = e.framework_for(p)
        assert fw is not None
        state = e.new_cycle_state()
        attempt = e.scheduling_cycle(fw, state, p)
        bound = e.binding_cycle(fw, state, p, attempt, lambda q, node: nominated.append((q.name, node)))
        return bound.status

    assert bind(pod_with_claim_name()) == "Scheduled"
    assert bind(pod("plain", "9999")) == "Scheduled"
    assert nominated == [(pod_with_claim_name().name, WORKER)]


# --- PreBind of a claim several pods share --------------------------------------------------------


class ApiServerClaims:
    """The API server's side of the claim writes, as ``berth run`` meets it: numeric
    resourceVersions, a 409 for a write from an older version, and the store hears of a write only
    through PreBind's assume (no informer here). Counts what a user sees in the audit log."""

    def __init__(self, store: DRAStore, write_seconds: float = 0.0) -> None:
        self.store = store
        self.write_seconds = write_seconds
        self.stored: dict[str, ResourceClaim] = {c.key: c for c in store.list_claims()}
        self.lock = threading.Lock()
        self.requests: dict[str, int] = {"get": 0, "put": 0, "conflict": 0}
        self.writing: dict[str, int] = {}
        self.most_writing_one_claim = 0

    def update_status(
        self, claim: ResourceClaim, status: Mapping[str, Any], finalizers: list[str] | None = None
    ) -> ResourceClaim:
        with self.lock:
            self.writing[claim.key] = self.writing.get(claim.key, 0) + 1
            self.most_writing_one_claim = max(self.most_writing_one_claim, self.writing[claim.key])
        time.sleep(self.write_seconds)  # the round trip, during which other binding cycles run
        try:
            with self.lock:
                self.requests["put"] += 1
                current = self.stored[claim.key]
                if claim.resource_version != current.resource_version:
                    self.requests["conflict"] += 1
                    raise ClaimWriteError(f"conflict on {claim.key}", conflict=True)
                raw = dict(claim_with_status(current, status, finalizers).raw)
                version = str(int(current.resource_version) + 1)
                raw["metadata"] = {**raw["metadata"], "resourceVersion": version}
                self.stored[claim.key] = parse_resource_claim(raw)
                return self.stored[claim.key]
        finally:
            with self.lock:
                self.writing[claim.key] -= 1

    def get(self, namespace: str, name: str) -> ResourceClaim:
        with self.lock:
            self.requests["get"] += 1
            return self.stored[f"{namespace}/{name}"]

    def replace(self, raw: dict[str, Any]) -> ResourceClaim:
        """Someone else (the claim controller, a user) wrote the claim; berth has not heard yet."""
        with self.lock:
            current = self.stored[f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"]
            version = str(int(current.resource_version) + 1)
            self.stored[current.key] = parse_resource_claim(_with(raw, resourceVersion=version))
            return self.stored[current.key]


def sharer(i: int) -> Pod:
    return pod(f"sharer-{i}", f"sharer-uid-{i}", claims=[{"name": "my-resource", "resourceClaimName": CLAIM}])


def through_reserve(pl: DynamicResources, p: Pod) -> CycleState:
    state = CycleState()
    assert pl.pre_filter(state, p, []) == (None, None)
    assert pl.filter(state, p, worker()) is None
    assert pl.reserve(state, p, WORKER) is None
    return state


def test_sharers_past_prefilter_together_write_the_claim_without_a_conflict() -> None:
    """Two pods found the claim allocated in the same version; the first PreBind adds its pod to
    ``reservedFor``. kube's second PreBind writes from its PreFilter copy, gets a 409, re-reads the
    claim and writes again; berth's starts from the version the first one wrote (assumed), so the
    claim ends the same with one request fewer and no conflict."""
    first_ref = {"resource": "pods", "name": "first", "uid": "first-uid"}
    store = store_with(allocated_claim(reservedFor=[first_ref]))
    api = ApiServerClaims(store)
    store.writer = api
    pl = plugin(store)
    states = [(through_reserve(pl, p), p) for p in (sharer(1), sharer(2))]
    for state, p in states:
        assert pl.pre_bind(state, p, WORKER) is None
    written = api.stored[f"default/{CLAIM}"]
    assert [r.uid for r in written.reserved_for] == ["first-uid", "sharer-uid-1", "sharer-uid-2"]
    assert api.requests == {"get": 0, "put": 2, "conflict": 0}
    assert store.get_claim("default", CLAIM) == written


def test_a_write_berth_did_not_make_still_conflicts_and_is_re_read_as_kube_does() -> None:
    """The newest version berth knows is only a better start: when someone else wrote the claim
    meanwhile, PreBind's update conflicts, re-reads the claim and keeps that writer's change."""
    store = store_with(allocated_claim())
    api = ApiServerClaims(store)
    store.writer = api
    pl, p = plugin(store), sharer(1)
    state = through_reserve(pl, p)
    other = {"resource": "pods", "name": "other", "uid": "other-uid"}
    api.replace(allocated_claim(reservedFor=[other]))
    assert pl.pre_bind(state, p, WORKER) is None
    written = api.stored[f"default/{CLAIM}"]
    assert [r.uid for r in written.reserved_for] == ["other-uid", "sharer-uid-1"]
    assert api.requests == {"get": 1, "put": 2, "conflict": 1}


def test_prebind_checks_the_newest_claim_as_kube_checks_the_one_it_re_reads() -> None:
    """bindClaim's checks on a re-read claim apply to the newest version berth knows: deleted
    meanwhile, or allocated elsewhere while this pod's allocation was in flight; no write is sent."""
    store = store_with(allocated_claim())
    api = ApiServerClaims(store)
    store.writer = api
    pl, p = plugin(store), sharer(1)
    state = through_reserve(pl, p)
    deleted = api.replace(_with(allocated_claim(), deletionTimestamp="2026-01-01T00:00:00Z"))
    store.put("ResourceClaim", deleted)  # the informer delivers it before the binding cycle's PreBind
    status = pl.pre_bind(state, p, WORKER)
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == [f"claim default/{CLAIM} got deleted in the meantime"]
    assert api.requests == {"get": 0, "put": 0, "conflict": 0}

    store = store_with(pending_claim(), device_class_raw(), worker_slice("instance-1", "instance-2"))
    api = ApiServerClaims(store)
    store.writer = api
    pl, p = plugin(store), sharer(2)
    state = through_reserve(pl, p)
    store.put("ResourceClaim", api.replace(allocated_claim(device="instance-2")))
    status = pl.pre_bind(state, p, WORKER)
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == [f"claim default/{CLAIM} got allocated elsewhere in the meantime"]
    assert store.pending_allocation("claim-uid") is None
    assert api.requests == {"get": 0, "put": 0, "conflict": 0}


def test_concurrent_sharers_write_the_claim_one_at_a_time() -> None:
    """berth run's binding workers run the sharers' PreBinds at once: the claim's writes take turns,
    each from the previous one's result, so none conflicts and every pod is reserved."""
    store = store_with(allocated_claim())
    api = ApiServerClaims(store, write_seconds=0.01)
    store.writer = api
    pl = plugin(store)
    pods = [sharer(i) for i in range(6)]
    states = [(through_reserve(pl, p), p) for p in pods]
    results: list[Status | None] = []
    threads = [
        threading.Thread(target=lambda s=s, p=p: results.append(pl.pre_bind(s, p, WORKER))) for s, p in states
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [None] * len(pods)
    written = api.stored[f"default/{CLAIM}"]
    assert sorted(r.uid for r in written.reserved_for) == sorted(p.uid for p in pods)
    assert api.requests == {"get": 0, "put": len(pods), "conflict": 0}
    assert api.most_writing_one_claim == 1


def _without_finalizer(raw: dict[str, Any]) -> dict[str, Any]:
    return {**raw, "metadata": {k: v for k, v in raw["metadata"].items() if k != "finalizers"}}


def _with_finalizer(raw: dict[str, Any]) -> dict[str, Any]:
    return _with(raw, finalizers=[FINALIZER])


@pytest.mark.parametrize("informer_delivered", [True, False], ids=["newest-known", "conflict-and-re-read"])
@pytest.mark.parametrize(
    ("initial", "change", "want_error"),
    [
        # kube's TestPlugin "with-resources-finalizer-gets-removed": the finalizer is set again.
        (_with_finalizer(pending_claim()), _without_finalizer, None),
        # "with-resources-finalizer-gets-added": nothing more to add, the allocation is written.
        (pending_claim(), _with_finalizer, None),
        # "claim deallocated before PreBind" (binding conditions on): kube's error.
        (allocated_claim(), _deallocated, f"claim default/{CLAIM} got deallocated elsewhere in the meantime"),
    ],
    ids=["finalizer-gets-removed", "finalizer-gets-added", "deallocated-elsewhere"],
)
def test_claim_changed_between_prefilter_and_prebind(
    initial: dict[str, Any],
    change: Any,
    want_error: str | None,
    informer_delivered: bool,
) -> None:
    """kube's TestPlugin cases that change the claim in the API server before PreBind: the outcome is
    the same whether berth has heard of the change (it writes from that version) or not (its write
    conflicts and it re-reads the claim, kube's path)."""
    store = store_with(initial, device_class_raw(), worker_slice())
    api = ApiServerClaims(store)
    store.writer = api
    pl, p = plugin(store), pod_with_claim_name()
    state = through_reserve(pl, p)
    changed = api.replace(change(initial))
    if informer_delivered:
        store.put("ResourceClaim", changed)
    status = pl.pre_bind(state, p, WORKER)
    written = api.stored[f"default/{CLAIM}"]
    if want_error is not None:
        assert status is not None and status.reasons == [want_error]
        assert written.resource_version == "2"  # nothing written
        return
    assert status is None
    assert FINALIZER in written.finalizers
    assert written.allocation is not None
    assert [r.uid for r in written.reserved_for] == [POD_UID]
    assert store.get_claim("default", CLAIM) == written
    conflicts = 0 if informer_delivered else 1
    assert api.requests == {"get": conflicts, "put": 1 + conflicts, "conflict": conflicts}


@pytest.mark.parametrize(
    ("name", "p", "claims", "old", "new", "want"),
    CLAIM_CHANGE_HINT_CASES,
    ids=[c[0] for c in CLAIM_CHANGE_HINT_CASES],
)
def test_claim_hint_keys_leave_out_only_events_the_hint_skips(
    name: str,
    p: Pod,
    claims: list[dict[str, Any]],
    old: dict[str, Any] | None,
    new: dict[str, Any],
    want: QueueingHint,
) -> None:
    """The queue does not ask the claim hint about an event the pod's keys leave out: the hint
    must answer QueueSkip to every such event, and every Queue must be for an admitted one."""
    old_claim = parse_resource_claim(old) if old is not None else None
    new_claim = parse_resource_claim(new)
    pod_keys = claim_hint_keys(p)
    scope = claim_event_key(old_claim, new_claim)
    admitted = (
        scope is HintScope.EVERY_POD
        or (scope is HintScope.UNKEYED and pod_keys.unkeyed)
        or (isinstance(scope, str) and scope in pod_keys.keys)
    )
    if want is QueueingHint.QUEUE:
        assert admitted
    if name == "claim-deallocate":
        assert scope is HintScope.UNKEYED
    if not admitted:
        store = store_with(*claims)
        store.upsert("ResourceClaim", new["metadata"]["name"], new)
        assert (
            plugin(store).is_schedulable_after_claim_change(p, old_claim, new_claim)
            is QueueingHint.QUEUE_SKIP
        )


def test_claim_hint_keys_of_pods() -> None:
    assert claim_hint_keys(pod_with_claim_name()).keys == {f"default/{CLAIM}"}
    assert claim_hint_keys(pod_with_claim_template(True)) == PodHintKeys(frozenset({f"default/{CLAIM}"}))
    # Without its status entry no claim event can help: only the pod's update.
    assert claim_hint_keys(pod_with_claim_template(False)) == PodHintKeys(frozenset(), unkeyed=False)
    assert claim_event_key(None, "not a claim") is HintScope.EVERY_POD


# --- Filter of a claim allocated with binding conditions ---------------------------------------------


def _claim_with_binding_conditions(allocated_ago: float, *conditions: tuple[str, str]) -> dict[str, Any]:
    """Allocated on the worker ``allocated_ago`` seconds ago; its device waits for "attached" and
    fails on "failed"; ``conditions`` are the device's (type, status) in ``status.devices``."""
    raw = allocated_claim()
    result = raw["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = ["attached"]
    result["bindingFailureConditions"] = ["failed"]
    raw["status"]["allocation"]["allocationTimestamp"] = format_time(time.time() - allocated_ago)
    if conditions:
        raw["status"]["devices"] = [
            {
                "driver": DRIVER,
                "pool": WORKER,
                "device": "instance-1",
                "conditions": [
                    {
                        "type": t,
                        "status": s,
                        "reason": "Test",
                        "message": "m",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                    for t, s in conditions
                ],
            }
        ]
    return raw


@pytest.mark.parametrize(
    ("allocated_ago", "conditions", "fits_worker"),
    [
        (1.0, (), True),  # still waiting for its binding conditions, not timed out
        (1.0, (("attached", "True"),), True),  # ready
        (1.0, (("failed", "True"),), False),  # binding failed: unusable anywhere
        (1000.0, (), False),  # waited longer than bindingTimeout (600 s)
        (1000.0, (("attached", "True"),), True),  # ready, however old
    ],
)
def test_filter_of_a_claim_with_binding_conditions_on_its_node_and_elsewhere(
    allocated_ago: float, conditions: tuple[tuple[str, str], ...], fits_worker: bool
) -> None:
    """On the allocation's node the claim fits unless its binding failed or timed out; on any other
    node it is not available, whatever its conditions say (PreFilter lists which claims need which
    check once; each node gets the same verdict as checking every claim there)."""
    store = store_with(_claim_with_binding_conditions(allocated_ago, *conditions))
    pl, state, p = plugin(store), CycleState(), pod_with_claim_name()
    assert pl.pre_filter(state, p, []) == (None, None)
    unavailable = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_AVAILABLE_ON_NODE)
    assert pl.filter(state, p, worker()) == (None if fits_worker else unavailable)
    assert pl.filter(state, p, NodeInfo(make_node("elsewhere"))) == unavailable
    # Unreachable or unusable, the claim is the pod's own: PostFilter deallocates it.
    assert pl.post_filter(state, p, NodeToStatus())[1] == Status(Code.UNSCHEDULABLE, DEALLOCATION_COMPLETED)
