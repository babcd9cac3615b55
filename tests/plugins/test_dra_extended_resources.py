"""DRAExtendedResource: extended resources backed by a DeviceClass.

Ported from plugins/dynamicresources/extendeddynamicresources_test.go (createRequestsAndMappings'
two tables), extendedresourcecache_test.go's mapping rules, and fit_test.go's DRA cases
(``TestEnoughRequests``' delegation, ``Test_isSchedulableAfterDeviceClassChange``); plus the
plugin's extension points on one pod and the engine's whole cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from app import featuregates
from app.api.objects import Pod, parse_pod
from app.api.resource import EXTENDED_RESOURCE_CLAIM_ANNOTATION, FINALIZER, parse_device_class
from app.config import load_config
from app.framework.cycle_state import CycleState
from app.framework.dra import DRAStore
from app.framework.events import DEVICE_CLASS, QueueingHint
from app.framework.status import Code, NodeToStatus, Status
from app.framework.types import NodeInfo
from app.plugins.dynamicresources.extended import (
    SPECIAL_CLAIM_NAME,
    pod_scalar_resources,
    requests_and_mappings,
)
from app.plugins.dynamicresources.plugin import (
    CANNOT_ALLOCATE_ALL_CLAIMS,
    DELETION_COMPLETED,
    DynamicResources,
)
from app.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from app.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from app.plugins.noderesources.fit import NodeResourcesFit
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import ClusterObjects, Engine
from builders import make_node, make_pod
from fakes import FakeHandle, FakeObjects
from plugins.dra_helpers import dev, slice_raw
from plugins.noderesources_helpers import snapshot, st_node, st_pod, util_node

EXTENDED = "example.com/gpu"
POD_UID = "1234"
DRIVER = "gpu.example.com"
WORKER = "worker"


@pytest.fixture(autouse=True)
def _gates() -> Iterator[None]:
    yield
    featuregates.DEFAULT.reset()


def device_class_raw(name: str, extended: str | None = None, created: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta, "spec": spec}


def store_with(*objects: dict[str, Any]) -> DRAStore:
    store = DRAStore()
    for obj in objects:
        store.upsert(obj["kind"], obj["metadata"]["name"], obj)
    return store


def container(name: str, requests: dict[str, str], sidecar: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "pause", "resources": {"requests": requests}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def wrapped_pod(*parts: tuple[str, dict[str, str]], name: str = "my-pod", uid: str = POD_UID) -> Pod:
    """st.MakePod's Res / InitReq / SidecarReq: containers ``con<i>``, ``init-con<i>``, ``sidecar-con<i>``."""
    containers: list[dict[str, Any]] = []
    inits: list[dict[str, Any]] = []
    for kind, requests in parts:
        if kind == "res":
            containers.append(container(f"con{len(containers)}", requests))
        elif kind == "init":
            inits.append(container(f"init-con{len(inits)}", requests))
        else:
            inits.append(container(f"sidecar-con{len(inits)}", requests, sidecar=True))
    spec: dict[str, Any] = {"containers": containers}
    if inits:
        spec["initContainers"] = inits
    return parse_pod({"metadata": {"name": name, "namespace": "default", "uid": uid}, "spec": spec})


# --- createRequestsAndMappings ------------------------------------------------------------------

ERN = "example.com/gpu"
IMPLICIT_INIT = "deviceclass.resource.kubernetes.io/classInit"
CLASSES = {
    ERN: parse_device_class({"metadata": {"name": "class"}}),
    ERN + "1": parse_device_class({"metadata": {"name": "class1"}}),
    ERN + "init": parse_device_class({"metadata": {"name": "classInit"}}),
    IMPLICIT_INIT: parse_device_class({"metadata": {"name": "classInit"}}),
}
POD1 = wrapped_pod(("res", {ERN: "1", ERN + "1": "2"}))
POD2 = wrapped_pod(("res", {ERN: "1"}), ("res", {ERN + "1": "2"}))
POD_INIT = wrapped_pod(("res", {ERN: "1"}), ("init", {ERN + "init": "2"}))
POD_INIT2 = wrapped_pod(("res", {ERN: "1"}), ("init", {ERN + "init": "1"}), ("init", {ERN + "init": "2"}))
POD_INIT3 = wrapped_pod(
    ("res", {ERN: "1"}),
    ("init", {ERN + "init": "1"}),
    ("sidecar", {ERN + "init": "1"}),
    ("init", {ERN + "init": "2"}),
)
POD1_INIT_IMPLICIT = wrapped_pod(("init", {ERN + "init": "1", IMPLICIT_INIT: "2"}))
POD_INIT_IMPLICIT = wrapped_pod(
    ("res", {ERN: "1"}), ("init", {ERN + "init": "1"}), ("init", {IMPLICIT_INIT: "2"})
)


def resolver(*names: str) -> Any:
    return lambda resource: CLASSES.get(resource) if resource in names else None


@dataclass(frozen=True)
class RequestsCase:
    """One input of ``createRequestsAndMappings`` and what each of kube's two tables expects of it.

    ``requests``: (name, device class, count) of the ExactCount requests, in order (the _requests table);
    ``mappings``: sorted (request, container, resource) (the _mappings table). A case only one table
    has leaves the other None; a case both have (same pod, same resources) carries both names.
    """

    name: str
    pod: Pod
    needed: dict[str, int]
    resolvable: tuple[str, ...]
    requests: list[tuple[str, str, int]] | None = None
    mappings: list[tuple[str, str, str]] | None = None


REQUESTS_AND_MAPPINGS = [
    RequestsCase("nil", POD1, {}, (), requests=[]),
    RequestsCase(
        "one resource match", POD1, {ERN: 1}, (ERN,), requests=[("container-0-request-0", "class", 1)]
    ),
    RequestsCase(
        "one resource match, one resource not match",
        POD1,
        {ERN: 1, ERN + "1": 2},
        (ERN,),
        requests=[("container-0-request-0", "class", 1)],
    ),
    RequestsCase(
        "two resources match | one container, two requests",
        POD1,
        {ERN: 1, ERN + "1": 2},
        (ERN, ERN + "1"),
        requests=[("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
        mappings=[("container-0-request-0", "con0", ERN), ("container-0-request-1", "con0", ERN + "1")],
    ),
    RequestsCase(
        "one container, one explicit and one implicit request",
        POD1_INIT_IMPLICIT,
        {ERN: 1, ERN + "init": 2, IMPLICIT_INIT: 2},
        tuple(CLASSES),
        mappings=[
            ("container-0-request-0", "init-con0", IMPLICIT_INIT),
            ("container-0-request-1", "init-con0", ERN + "init"),
        ],
    ),
    RequestsCase(
        "two containers match | two containers, two requests",
        POD2,
        {ERN: 1, ERN + "1": 2},
        (ERN, ERN + "1"),
        requests=[("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
        mappings=[("container-0-request-0", "con0", ERN), ("container-1-request-0", "con1", ERN + "1")],
    ),
    RequestsCase(
        "one init container, one regular container | one init container, one regular container, one request",
        POD_INIT,
        {ERN: 1, ERN + "init": 2},
        (ERN, ERN + "init"),
        requests=[("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
        mappings=[
            ("container-0-request-0", "init-con0", ERN + "init"),
            ("container-1-request-0", "con0", ERN),
        ],
    ),
    RequestsCase(
        "two init containers, one regular container | three containers (two are init container), two requests",
        POD_INIT2,
        {ERN: 1, ERN + "init": 2},
        (ERN, ERN + "init"),
        requests=[("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
        mappings=[
            ("container-1-request-0", "init-con0", ERN + "init"),
            ("container-1-request-0", "init-con1", ERN + "init"),
            ("container-2-request-0", "con0", ERN),
        ],
    ),
    RequestsCase(
        "three containers (two are init container), both explicit and implicit resources",
        POD_INIT_IMPLICIT,
        {ERN: 1, ERN + "init": 2, IMPLICIT_INIT: 2},
        tuple(CLASSES),
        mappings=[
            ("container-0-request-0", "init-con0", ERN + "init"),
            ("container-1-request-0", "init-con1", IMPLICIT_INIT),
            ("container-2-request-0", "con0", ERN),
        ],
    ),
    RequestsCase(
        "three init containers, one sidecar, one regular container"
        " | four containers (two are init container, one sidecar), three requests",
        POD_INIT3,
        {ERN: 1, ERN + "init": 2},
        (ERN, ERN + "init"),
        requests=[
            ("container-1-request-0", "classInit", 1),
            ("container-2-request-0", "classInit", 2),
            ("container-3-request-0", "class", 1),
        ],
        mappings=[
            ("container-1-request-0", "init-con0", ERN + "init"),
            ("container-1-request-0", "sidecar-con1", ERN + "init"),
            ("container-2-request-0", "init-con2", ERN + "init"),
            ("container-3-request-0", "con0", ERN),
        ],
    ),
]


@pytest.mark.parametrize("case", REQUESTS_AND_MAPPINGS, ids=lambda c: c.name)
def test_create_requests_and_mappings(case: RequestsCase) -> None:
    requests, mappings = requests_and_mappings(case.pod, case.needed, resolver(*case.resolvable))
    if case.requests is not None:
        assert [
            (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
            for r in requests
            if r["exactly"]["allocationMode"] == "ExactCount"
        ] == case.requests
        assert len(requests) == len(case.requests)
    if case.mappings is not None:
        got = sorted((m["requestName"], m["containerName"], m["resourceName"]) for m in mappings)
        assert got == case.mappings


# --- the extended resource cache ------------------------------------------------------------------


def _with_overhead(pod: Pod, overhead: dict[str, str]) -> Pod:
    raw = dict(pod.raw)
    raw["spec"] = {**raw["spec"], "overhead": overhead}
    return parse_pod(raw)


SCALAR_CASES = [
    ("cpu-only", wrapped_pod(("res", {"cpu": "1"})), None),
    ("unbacked-extended", wrapped_pod(("res", {"other.example.com/fpga": "1"})), None),
    ("zero-request", wrapped_pod(("res", {ERN: "0", "cpu": "1"})), None),
    ("container", wrapped_pod(("res", {ERN: "1", "cpu": "1"})), {ERN: 1}),
    ("init-container", wrapped_pod(("res", {"cpu": "1"}), ("init", {ERN: "2"})), {ERN: 2}),
    ("sidecar", wrapped_pod(("res", {"cpu": "1"}), ("sidecar", {IMPLICIT_INIT: "1"})), {IMPLICIT_INIT: 1}),
    ("overhead", _with_overhead(wrapped_pod(("res", {"cpu": "1"})), {ERN: "1"}), {ERN: 1}),
]


@pytest.mark.parametrize(("name", "pod", "want"), SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
def test_a_pod_needs_a_special_claim_only_for_a_non_zero_request_a_class_backs(
    name: str, pod: Pod, want: dict[str, int] | None
) -> None:
    """``hasDeviceClassMappedExtendedResource``: wherever the pod requests such a resource (a
    container, an init container or sidecar, the overhead), its scalar requests come back; a pod
    requesting none, or zero of it, needs nothing."""
    scalars = pod_scalar_resources(pod, resolver(ERN, IMPLICIT_INIT))
    assert scalars == want


def test_a_class_backs_its_explicit_and_its_implicit_name() -> None:
    store = store_with(device_class_raw("gpus", EXTENDED))
    for name in (EXTENDED, "deviceclass.resource.kubernetes.io/gpus"):
        found = store.class_for_extended_resource(name)
        assert found is not None and found.name == "gpus"
    assert store.class_for_extended_resource("example.com/other") is None


def test_the_older_class_keeps_a_shared_extended_resource_name() -> None:
    store = store_with(
        device_class_raw("newer", EXTENDED, "2026-01-02T00:00:00Z"),
        device_class_raw("older", EXTENDED, "2026-01-01T00:00:00Z"),
        device_class_raw("same-time-later-name", EXTENDED, "2026-01-01T00:00:00Z"),
    )
    found = store.class_for_extended_resource(EXTENDED)
    assert found is not None and found.name == "older"
    # kube's quirk: the class that lost the contest did not even get its implicit name.
    assert (
        store.class_for_extended_resource("deviceclass.resource.kubernetes.io/same-time-later-name") is None
    )
    assert store.class_for_extended_resource("deviceclass.resource.kubernetes.io/newer") is not None
    # Deleting a class that lost still removes the shared name (extendedresourcecache's removal).
    store.delete("DeviceClass", "newer")
    assert store.class_for_extended_resource(EXTENDED) is None


def test_an_update_moves_the_explicit_name() -> None:
    store = store_with(device_class_raw("gpus", EXTENDED))
    store.upsert("DeviceClass", "gpus", device_class_raw("gpus", "example.com/renamed"))
    assert store.class_for_extended_resource(EXTENDED) is None
    assert store.class_for_extended_resource("example.com/renamed") is not None


def test_with_the_gate_off_no_class_backs_anything() -> None:
    store = store_with(device_class_raw("gpus", EXTENDED))
    featuregates.DEFAULT.set("DRAExtendedResource=false")
    assert store.class_for_extended_resource(EXTENDED) is None
    assert not store.maps_extended_resources()


# --- NodeResourcesFit (fit_test.go) -------------------------------------------------------------


class _Objects(FakeObjects):
    def __init__(self, store: DRAStore) -> None:
        super().__init__()
        self.dra = store


def fit_plugin(store: DRAStore) -> NodeResourcesFit:
    return NodeResourcesFit(None, FakeHandle(objects=_Objects(store)))


def fit_filter(plugin: NodeResourcesFit, pod: Pod, node_info: NodeInfo) -> Status | None:
    state = CycleState()
    plugin.pre_filter(state, pod, [node_info])
    return plugin.filter(state, pod, node_info)


NODE_WITH_DEVICE_PLUGIN = {"cpu": "10", "memory": "20", "pods": "32", "example.com/aaa": "5"}
DRA_RESOURCE = "extended.resource.dra.io/something"


@pytest.mark.parametrize(
    ("name", "gate", "resource", "want"),
    [
        ("extended resource backed by device plugin", True, "example.com/aaa", None),
        ("extended resource backed by DRA", True, DRA_RESOURCE, None),
        (
            "extended resource backed by DRA not enabled",
            False,
            DRA_RESOURCE,
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"Insufficient {DRA_RESOURCE}"),
        ),
        (
            "extended resource NOT backed by DRA",
            True,
            "example.com/bbb",
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient example.com/bbb"),
        ),
    ],
)
def test_fit_delegates_to_dra(name: str, gate: bool, resource: str, want: Status | None) -> None:
    featuregates.DEFAULT.set(f"DRAExtendedResource={str(gate).lower()}")
    plugin = fit_plugin(store_with(device_class_raw("device-class-name", DRA_RESOURCE)))
    pod = make_pod("p", [{"cpu": "1m", "memory": "1", resource: "1"}])
    assert fit_filter(plugin, pod, NodeInfo(make_node("n", NODE_WITH_DEVICE_PLUGIN))) == want


def test_fit_checks_a_resource_the_node_provides_itself_even_when_a_class_backs_it() -> None:
    plugin = fit_plugin(store_with(device_class_raw("device-class-name", DRA_RESOURCE)))
    pod = make_pod("p", [{DRA_RESOURCE: "3"}])
    node = make_node("n", {"cpu": "1", "memory": "1Gi", "pods": "10", DRA_RESOURCE: "2"})
    assert fit_filter(plugin, pod, NodeInfo(node)) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"Insufficient {DRA_RESOURCE}"
    )


def test_fit_registers_the_device_class_event_only_with_the_gate() -> None:
    store = store_with()
    assert DEVICE_CLASS in [e.event.resource for e in fit_plugin(store).events_to_register()]
    featuregates.DEFAULT.set("DRAExtendedResource=false")
    assert DEVICE_CLASS not in [e.event.resource for e in fit_plugin(store).events_to_register()]


def _class(name: str = "", extended: str | None = None) -> Any:
    raw: dict[str, Any] = {"metadata": {"name": name or "unnamed"}, "spec": {}}
    if extended:
        raw["spec"]["extendedResourceName"] = extended
    return parse_device_class(raw)


GPU_POD = make_pod("p", [{"example.com/gpu": "1"}])
IMPLICIT_POD = make_pod("p", [{"deviceclass.resource.kubernetes.io/gpuclass": "1"}])
MEMORY_POD = make_pod("p", [{"memory": "2"}])


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        (
            "skip-queue-on-class-nil-extended-resource-name",
            MEMORY_POD,
            _class(),
            _class(),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "skip-queue-on-class-same-extended-resource-name",
            MEMORY_POD,
            _class("", "example.com/gpu"),
            _class("", "example.com/gpu"),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "queue-on-class-add-with-implicit-extended-resource-name",
            IMPLICIT_POD,
            None,
            _class("gpuclass", "example.com/gpu"),
            QueueingHint.QUEUE,
        ),
        (
            "skip-on-class-add-with-implicit-extended-resource-name-not-matching",
            IMPLICIT_POD,
            None,
            _class("myclass", "example.com/gpu"),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "skip-on-class-add-with-explicit-extended-resource-name-not-matching",
            make_pod("p", [{"example.com/othergpu": "1"}]),
            None,
            _class("myclass", "example.com/gpu"),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "skip-on-class-update-with-implicit-extended-resource-name",
            IMPLICIT_POD,
            _class("gpuclass"),
            _class("gpuclass", "example.com/gpu"),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "queue-on-class-add-with-extended-resource-name",
            GPU_POD,
            None,
            _class("", "example.com/gpu"),
            QueueingHint.QUEUE,
        ),
        (
            "queue-on-class-update-with-extended-resource-name",
            GPU_POD,
            _class("", "example.com/gpu1"),
            _class("", "example.com/gpu"),
            QueueingHint.QUEUE,
        ),
    ],
)
def test_fit_device_class_hint(name: str, pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert fit_plugin(store_with()).is_schedulable_after_device_class_event(pod, old, new) == want


# --- DynamicResources, one extension point after another ---------------------------------------------


def gpu_pod(count: str = "1", name: str = "my-pod", uid: str = POD_UID) -> Pod:
    return wrapped_pod(("res", {EXTENDED: count}), name=name, uid=uid)


def worker_slice(*devices: str, node: str = WORKER) -> dict[str, Any]:
    return slice_raw(f"{node}-gpus", node, node, DRIVER, *(dev(d) for d in devices))


def dra(store: DRAStore) -> DynamicResources:
    return DynamicResources(None, FakeHandle(), store)


def test_a_pod_gets_its_extended_resource_from_devices_and_the_claim_is_written_as_kube_does() -> None:
    store = store_with(device_class_raw("gpus", EXTENDED), worker_slice("gpu-0", "gpu-1"))
    plugin, state, pod = dra(store), CycleState(), gpu_pod("2")
    assert plugin.pre_filter(state, pod, []) == (None, None)
    assert plugin.filter(state, pod, NodeInfo(make_node(WORKER))) is None
    assert plugin.reserve(state, pod, WORKER) is None
    assert plugin.pre_bind(state, pod, WORKER) is None

    [claim] = store.list_claims()
    assert (
        claim.name.startswith("my-pod-extended-resources-")
        and len(claim.name) == len("my-pod-extended-resources-") + 5
    )
    meta = claim.raw["metadata"]
    assert meta["annotations"] == {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": POD_UID, "controller": True}
    ]
    assert claim.raw["spec"] == {
        "devices": {
            "requests": [
                {
                    "name": "container-0-request-0",
                    "exactly": {"deviceClassName": "gpus", "allocationMode": "ExactCount", "count": 2},
                }
            ]
        }
    }
    assert FINALIZER in claim.finalizers
    assert claim.allocation is not None
    assert sorted(r.device for r in claim.allocation.results) == ["gpu-0", "gpu-1"]
    assert {r.request for r in claim.allocation.results} == {"container-0-request-0"}
    assert [(r.name, r.uid) for r in claim.reserved_for] == [("my-pod", POD_UID)]
    assert store.writer.extended_resource_claims["default/my-pod"] == {  # type: ignore[attr-defined]
        "requestMappings": [
            {"containerName": "con0", "resourceName": EXTENDED, "requestName": "container-0-request-0"}
        ],
        "resourceClaimName": claim.name,
    }


def test_a_node_whose_device_plugin_provides_the_resource_needs_no_claim() -> None:
    store = store_with(device_class_raw("gpus", EXTENDED))
    plugin, state, pod = dra(store), CycleState(), gpu_pod()
    node = NodeInfo(make_node(WORKER, {"cpu": "1", "memory": "1Gi", "pods": "10", EXTENDED: "4"}))
    plugin.pre_filter(state, pod, [])
    assert plugin.filter(state, pod, node) is None
    assert plugin.reserve(state, pod, WORKER) is None
    assert plugin.pre_bind(state, pod, WORKER) is None
    assert store.list_claims() == []


def test_a_node_without_matching_devices_cannot_allocate() -> None:
    store = store_with(device_class_raw("gpus", EXTENDED), worker_slice("gpu-0"))
    plugin, state, pod = dra(store), CycleState(), gpu_pod("2")
    plugin.pre_filter(state, pod, [])
    assert plugin.filter(state, pod, NodeInfo(make_node(WORKER))) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CANNOT_ALLOCATE_ALL_CLAIMS
    )
    assert plugin.filter(state, pod, NodeInfo(make_node("elsewhere"))) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CANNOT_ALLOCATE_ALL_CLAIMS
    )


def test_a_claim_left_from_an_earlier_cycle_is_deleted_by_post_filter() -> None:
    stale = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "my-pod-extended-resources-abcde",
            "namespace": "default",
            "uid": "stale-uid",
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": POD_UID, "controller": True}
            ],
        },
        "spec": {
            "devices": {
                "requests": [{"name": "container-0-request-0", "exactly": {"deviceClassName": "gpus"}}]
            }
        },
    }
    store = store_with(device_class_raw("gpus", EXTENDED), worker_slice("gpu-0"), stale)
    plugin, state, pod = dra(store), CycleState(), gpu_pod()
    assert plugin.pre_filter(state, pod, []) == (None, None)
    assert plugin.filter(state, pod, NodeInfo(make_node(WORKER))) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot schedule extended resource claim"
    )
    assert plugin.post_filter(state, pod, NodeToStatus())[1] == Status(Code.UNSCHEDULABLE, DELETION_COMPLETED)
    assert store.list_claims() == []


def test_unreserve_after_prebind_created_the_claim_deletes_it() -> None:
    store = store_with(device_class_raw("gpus", EXTENDED), worker_slice("gpu-0"))
    plugin, state, pod = dra(store), CycleState(), gpu_pod()
    plugin.pre_filter(state, pod, [])
    plugin.filter(state, pod, NodeInfo(make_node(WORKER)))
    plugin.reserve(state, pod, WORKER)
    assert plugin.pre_bind(state, pod, WORKER) is None
    assert len(store.list_claims()) == 1
    plugin.unreserve(state, pod, WORKER)  # a later PreBind plugin or the binding failed
    assert store.list_claims() == []


def test_the_special_claim_name_stays_in_memory_until_prebind() -> None:
    store = store_with(device_class_raw("gpus", EXTENDED), worker_slice("gpu-0"))
    plugin, state, pod = dra(store), CycleState(), gpu_pod()
    plugin.pre_filter(state, pod, [])
    plugin.filter(state, pod, NodeInfo(make_node(WORKER)))
    plugin.reserve(state, pod, WORKER)
    assert store.list_claims() == []  # nothing written before PreBind
    plugin.unreserve(state, pod, WORKER)
    assert store.allocated_state().allocated_devices == set()  # the in-flight devices are released
    assert SPECIAL_CLAIM_NAME.startswith("<")


# --- the engine: the whole cycle, kube's default profile ------------------------------------------------


def engine(*objects: dict[str, Any], nodes: tuple[Any, ...] = ()) -> Engine:
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, objects=ClusterObjects({"x": list(objects)}), seed=1)
    for node in nodes or (make_node(WORKER),):
        e.cache.add_node(node)
    return e


def test_engine_places_extended_resource_pods_on_nodes_with_devices_until_they_run_out() -> None:
    e = engine(
        device_class_raw("gpus", EXTENDED),
        worker_slice("gpu-0", "gpu-1"),
        nodes=(make_node(WORKER), make_node("no-gpus")),
    )
    placed = [e.schedule_one(gpu_pod("1", f"p{i}", f"uid-{i}")) for i in range(3)]
    assert [(r.status, r.node) for r in placed[:2]] == [("Scheduled", WORKER), ("Scheduled", WORKER)]
    assert placed[2].status == "Unschedulable"
    assert placed[2].message == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_engine_without_the_gate_says_insufficient() -> None:
    featuregates.DEFAULT.set("DRAExtendedResource=false")
    e = engine(device_class_raw("gpus", EXTENDED), worker_slice("gpu-0"))
    result = e.schedule_one(gpu_pod())
    assert result.status == "Unschedulable"
    assert result.message.startswith(f"0/1 nodes are available: 1 Insufficient {EXTENDED}.")


# --- scoring DRA-backed extended resources (fit_test.go, balanced_allocation_test.go) ---------------


def scoring_store() -> DRAStore:
    """``deviceClassWithExtendResourceName`` (no selectors: every device is of the class) and slices."""
    return store_with(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "device-class-name"},
            "spec": {"extendedResourceName": DRA_RESOURCE},
        },
        slice_raw("node1-slice", "node1", "node1", "test-driver", *(dev(f"device-{i}") for i in range(1, 4))),
        slice_raw("node2-slice", "node2", "node2", "test-driver", dev("device-1"), dev("device-2")),
    )


@pytest.mark.parametrize("run_pre_score", [True, False])
def test_least_allocated_scores_a_dra_backed_resource_on_its_devices(run_pre_score: bool) -> None:
    args = NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(resources=[ResourceSpec(DRA_RESOURCE, 1)]))
    plugin = NodeResourcesFit(args, FakeHandle(objects=_Objects(scoring_store())))
    _, infos = snapshot([], [st_node("node1"), st_node("node2")])
    pod = st_pod({DRA_RESOURCE: "1"})
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, pod, infos) is None
    assert [plugin.score(state, pod, info) for info in infos] == [66, 50]
    assert plugin.score_nodes(state, pod, infos) == [66, 50]


@pytest.mark.parametrize("run_pre_score", [True, False])
def test_balanced_allocation_counts_a_dra_backed_resource(run_pre_score: bool) -> None:
    store = scoring_store()
    store.delete("ResourceSlice", "node2-slice")
    store.upsert(
        "ResourceSlice",
        "node1-slice",
        slice_raw("node1-slice", "node1", "node1", "test-driver", *(dev(f"device-{i}") for i in range(1, 9))),
    )
    args = NodeResourcesBalancedAllocationArgs(
        resources=[ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(DRA_RESOURCE, 1)]
    )
    plugin = NodeResourcesBalancedAllocation(args, FakeHandle(objects=_Objects(store)))
    existing = [
        st_pod({"cpu": "1000m"}, {"cpu": "2000m"}, node="node1"),
        st_pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}, node="node2"),
    ]
    _, infos = snapshot(existing, [util_node("node1", 3500, 40000), util_node("node2", 3500, 40000)])
    pod = st_pod({DRA_RESOURCE: "1"})
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, pod, infos) is None
    assert [plugin.score(state, pod, info) for info in infos] == [76, 75]


def test_without_the_gate_a_dra_backed_resource_is_left_out_of_scoring() -> None:
    featuregates.DEFAULT.set("DRAExtendedResource=false")
    args = NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(resources=[ResourceSpec(DRA_RESOURCE, 1)]))
    plugin = NodeResourcesFit(args, FakeHandle(objects=_Objects(scoring_store())))
    _, infos = snapshot([], [st_node("node1"), st_node("node2")])
    state = CycleState()
    pod = st_pod({DRA_RESOURCE: "1"})
    plugin.pre_score(state, pod, infos)
    assert plugin.score_nodes(state, pod, infos) == [0, 0]
