"""NodeResourcesFit Filter and Score, ported from fit_test.go (kube-scheduler v1.36.3)."""

from __future__ import annotations

from dataclasses import astuple, replace
from typing import Any

import pytest

from app.api.errors import FieldError
from app.api.objects import Node, Pod, parse_node
from app.framework.cycle_state import CycleState
from app.framework.interfaces import PluginError
from app.framework.status import Code
from app.framework.types import NodeInfo, PodInfo
from app.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from app.plugins.noderesources.fit import (
    PRE_FILTER_STATE_KEY,
    NodeResourcesFit,
    PreFilterState,
    compute_pod_resource_request,
    fits_request,
    is_fit,
)
from fakes import FakeHandle
from plugins.noderesources_helpers import resource_pod, resources_list, snapshot, st_node, st_pod, usage

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
KIO_A = "kubernetes.io/something"
KIO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
EXT_DRA = "extended.resource.dra.io/something"

DEFAULT_RESOURCES = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]


def _reason(name: str) -> str:
    return f"Insufficient {name}"


def _node(allocatable: dict[str, str]) -> Node:
    return parse_node({"metadata": {"name": "node"}, "status": {"allocatable": allocatable}})


def _plugin(args: NodeResourcesFitArgs | None = None, handle: FakeHandle | None = None) -> NodeResourcesFit:
    return NodeResourcesFit(args or NodeResourcesFitArgs(), handle or FakeHandle())


U = usage
Insufficient = tuple[str, str, int, int, int, bool]  # InsufficientResource as a tuple

# (name, pod, pod already on the node (None: none), args, want code, want insufficient resources)
ENOUGH_CASES: list[tuple[str, Pod, Pod | None, dict[str, Any], Code | None, list[Insufficient]]] = [
    (
        "no resources requested always fits",
        st_pod(),
        resource_pod(U(10, 20)),
        {},
        None,
        [],
    ),
    (
        "too many resources fails",
        resource_pod(U(1, 1)),
        resource_pod(U(10, 20)),
        {},
        Code.UNSCHEDULABLE,
        [("cpu", _reason("cpu"), 1, 10, 10, False), ("memory", _reason("memory"), 1, 20, 20, False)],
    ),
    (
        "too many resources fails due to init container cpu",
        resource_pod(U(1, 1), inits=[U(3, 1)]),
        resource_pod(U(8, 19)),
        {},
        Code.UNSCHEDULABLE,
        [("cpu", _reason("cpu"), 3, 8, 10, False)],
    ),
    (
        "too many resources fails due to highest init container cpu",
        resource_pod(U(1, 1), inits=[U(3, 1), U(2, 1)]),
        resource_pod(U(8, 19)),
        {},
        Code.UNSCHEDULABLE,
        [("cpu", _reason("cpu"), 3, 8, 10, False)],
    ),
    (
        "too many resources fails due to init container memory",
        resource_pod(U(1, 1), inits=[U(1, 3)]),
        resource_pod(U(9, 19)),
        {},
        Code.UNSCHEDULABLE,
        [("memory", _reason("memory"), 3, 19, 20, False)],
    ),
    (
        "too many resources fails due to highest init container memory",
        resource_pod(U(1, 1), inits=[U(1, 3), U(1, 2)]),
        resource_pod(U(9, 19)),
        {},
        Code.UNSCHEDULABLE,
        [("memory", _reason("memory"), 3, 19, 20, False)],
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        resource_pod(U(1, 1), inits=[U(1, 1)]),
        resource_pod(U(9, 19)),
        {},
        None,
        [],
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        resource_pod(U(1, 1), inits=[U(1, 1), U(1, 1)]),
        resource_pod(U(9, 19)),
        {},
        None,
        [],
    ),
    ("both resources fit", resource_pod(U(1, 1)), resource_pod(U(5, 5)), {}, None, []),
    (
        "one resource memory fits",
        resource_pod(U(2, 1)),
        resource_pod(U(9, 5)),
        {},
        Code.UNSCHEDULABLE,
        [("cpu", _reason("cpu"), 2, 9, 10, False)],
    ),
    (
        "one resource cpu fits",
        resource_pod(U(1, 2)),
        resource_pod(U(5, 19)),
        {},
        Code.UNSCHEDULABLE,
        [("memory", _reason("memory"), 2, 19, 20, False)],
    ),
    ("equal edge case", resource_pod(U(5, 1)), resource_pod(U(5, 19)), {}, None, []),
    (
        "equal edge case for init container",
        resource_pod(U(4, 1), inits=[U(5, 1)]),
        resource_pod(U(5, 19)),
        {},
        None,
        [],
    ),
    ("extended resource fits", resource_pod(U(scalars={EXT_A: 1})), resource_pod(U()), {}, None, []),
    (
        "extended resource fits for init container",
        resource_pod(U(), inits=[U(scalars={EXT_A: 1})]),
        resource_pod(U()),
        {},
        None,
        [],
    ),
    (
        "extended resource capacity enforced",
        resource_pod(U(1, 1, scalars={EXT_A: 10})),
        resource_pod(U(0, 0, scalars={EXT_A: 0})),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(EXT_A, _reason(EXT_A), 10, 0, 5, True)],
    ),
    (
        "extended resource capacity enforced for init container",
        resource_pod(U(), inits=[U(1, 1, scalars={EXT_A: 10})]),
        resource_pod(U(0, 0, scalars={EXT_A: 0})),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(EXT_A, _reason(EXT_A), 10, 0, 5, True)],
    ),
    (
        "extended resource allocatable enforced",
        resource_pod(U(1, 1, scalars={EXT_A: 1})),
        resource_pod(U(0, 0, scalars={EXT_A: 5})),
        {},
        Code.UNSCHEDULABLE,
        [(EXT_A, _reason(EXT_A), 1, 5, 5, False)],
    ),
    (
        "extended resource allocatable enforced for init container",
        resource_pod(U(), inits=[U(1, 1, scalars={EXT_A: 1})]),
        resource_pod(U(0, 0, scalars={EXT_A: 5})),
        {},
        Code.UNSCHEDULABLE,
        [(EXT_A, _reason(EXT_A), 1, 5, 5, False)],
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        resource_pod(U(1, 1, scalars={EXT_A: 3}), U(1, 1, scalars={EXT_A: 3})),
        resource_pod(U(0, 0, scalars={EXT_A: 2})),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(EXT_A, _reason(EXT_A), 6, 2, 5, True)],
    ),
    (
        "extended resource allocatable admits multiple init containers",
        resource_pod(U(), inits=[U(1, 1, scalars={EXT_A: 3}), U(1, 1, scalars={EXT_A: 3})]),
        resource_pod(U(0, 0, scalars={EXT_A: 2})),
        {},
        None,
        [],
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        resource_pod(U(), inits=[U(1, 1, scalars={EXT_A: 6}), U(1, 1, scalars={EXT_A: 3})]),
        resource_pod(U(0, 0, scalars={EXT_A: 2})),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(EXT_A, _reason(EXT_A), 6, 2, 5, True)],
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        resource_pod(U(1, 1, scalars={EXT_B: 1})),
        resource_pod(U(0, 0)),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(EXT_B, _reason(EXT_B), 1, 0, 0, True)],
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        resource_pod(U(), inits=[U(1, 1, scalars={EXT_B: 1})]),
        resource_pod(U(0, 0)),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(EXT_B, _reason(EXT_B), 1, 0, 0, True)],
    ),
    (
        "kubernetes.io resource capacity enforced",
        resource_pod(U(1, 1, scalars={KIO_A: 10})),
        resource_pod(U(0, 0)),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(KIO_A, _reason(KIO_A), 10, 0, 0, True)],
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        resource_pod(U(), inits=[U(1, 1, scalars={KIO_B: 10})]),
        resource_pod(U(0, 0)),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(KIO_B, _reason(KIO_B), 10, 0, 0, True)],
    ),
    (
        "hugepages resource capacity enforced",
        resource_pod(U(1, 1, scalars={HUGE_A: 10})),
        resource_pod(U(0, 0, scalars={HUGE_A: 0})),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(HUGE_A, _reason(HUGE_A), 10, 0, 5, True)],
    ),
    (
        "hugepages resource capacity enforced for init container",
        resource_pod(U(), inits=[U(1, 1, scalars={HUGE_A: 10})]),
        resource_pod(U(0, 0, scalars={HUGE_A: 0})),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(HUGE_A, _reason(HUGE_A), 10, 0, 5, True)],
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        resource_pod(U(1, 1, scalars={HUGE_A: 3}), U(1, 1, scalars={HUGE_A: 3})),
        resource_pod(U(0, 0, scalars={HUGE_A: 2})),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(HUGE_A, _reason(HUGE_A), 6, 2, 5, True)],
    ),
    (
        "skip checking ignored extended resource",
        resource_pod(U(1, 1, scalars={EXT_B: 1})),
        resource_pod(U(0, 0)),
        {"ignored_resources": ["example.com/bbb"]},
        None,
        [],
    ),
    (
        "resources + pod overhead fits",
        resource_pod(U(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        resource_pod(U(5, 5)),
        {},
        None,
        [],
    ),
    (
        "requests + overhead does not fit for memory",
        resource_pod(U(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        resource_pod(U(5, 5)),
        {},
        Code.UNSCHEDULABLE,
        [("memory", _reason("memory"), 16, 5, 20, False)],
    ),
    (
        "skip checking ignored extended resource via resource groups",
        resource_pod(U(1, 1, scalars={EXT_B: 1, KIO_A: 1})),
        resource_pod(U(0, 0)),
        {"ignored_resource_groups": ["example.com"]},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(KIO_A, _reason(KIO_A), 1, 0, 0, True)],
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        resource_pod(U(1, 1, scalars={EXT_A: 0})),
        resource_pod(U(0, 0, scalars={EXT_A: 6})),
        {},
        None,
        [],
    ),
    (
        "skip checking resource request with quantity zero",
        resource_pod(U(scalars={EXT_A: 1})),
        resource_pod(U(20, 30, scalars={EXT_A: 1})),
        {},
        None,
        [],
    ),
    (
        "both pod-level and container-level resources fit",
        resource_pod(U(1, 1), pod_requests={"cpu": "1m", "memory": "2"}),
        resource_pod(U(5, 5)),
        {},
        None,
        [],
    ),
    (
        "pod-level cpu resource not fit",
        resource_pod(U(1, 1), pod_requests={"cpu": "7m", "memory": "2"}),
        resource_pod(U(5, 5)),
        {},
        Code.UNSCHEDULABLE,
        [("cpu", _reason("cpu"), 7, 5, 10, False)],
    ),
    (
        "pod-level memory resource not fit",
        resource_pod(U(1, 1), pod_requests={"cpu": "3m", "memory": "2"}),
        resource_pod(U(5, 19)),
        {},
        Code.UNSCHEDULABLE,
        [("memory", _reason("memory"), 2, 19, 20, False)],
    ),
    (
        "pod-level hugepages resource fit",
        resource_pod(pod_requests={"cpu": "3m", "memory": "2", HUGE_A: "5"}),
        None,
        {},
        None,
        [],
    ),
    (
        "both pod-level and container-level hugepages resource fit",
        resource_pod(U(1, 1, scalars={HUGE_A: 3}), pod_requests={"cpu": "3m", "memory": "2", HUGE_A: "5"}),
        None,
        {},
        None,
        [],
    ),
    (
        "pod-level hugepages resource not fit",
        resource_pod(pod_requests={"cpu": "3m", "memory": "2", HUGE_A: "10"}),
        None,
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(HUGE_A, _reason(HUGE_A), 10, 0, 5, True)],
    ),
    (
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        resource_pod(U(1, 1), inits=[U(1, 1)], pod_requests={"cpu": "3m", "memory": "2"}),
        resource_pod(U(5, 19)),
        {},
        Code.UNSCHEDULABLE,
        [("memory", _reason("memory"), 2, 19, 20, False)],
    ),
    # The following DRA-era cases do not depend on DRA delegation, so berth (no DRA) agrees.
    (
        "extended resource backed by device plugin",
        resource_pod(U(scalars={EXT_A: 1})),
        resource_pod(U()),
        {},
        None,
        [],
    ),
    (
        "extended resource backed by DRA, nil draManager",
        resource_pod(U(1, 1, scalars={EXT_A: 1})),
        resource_pod(U(0, 0)),
        {},
        None,
        [],
    ),
    (
        "extended resource backed by DRA not enabled",
        resource_pod(U(1, 1, scalars={EXT_DRA: 1})),
        resource_pod(U(0, 0)),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(EXT_DRA, _reason(EXT_DRA), 1, 0, 0, True)],
    ),
    (
        "extended resource NOT backed by DRA",
        resource_pod(U(1, 1, scalars={EXT_B: 1})),
        resource_pod(U(0, 0)),
        {},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [(EXT_B, _reason(EXT_B), 1, 0, 0, True)],
    ),
    (
        "extended resource was backed by Device Plugin (Allocatable: 0), global cache",
        resource_pod(U(scalars={EXT_A: 1})),
        resource_pod(U(scalars={EXT_A: 0})),
        {},
        None,
        [],
    ),
    # Skipped: "extended resource backed by DRA" and "extended resource was backed by Device Plugin
    # (Allocatable: 0)" — they need DRA extended-resource delegation, which berth does not implement.
]


@pytest.mark.parametrize(
    ("pod", "existing", "args", "want_code", "want_insufficient"),
    [c[1:] for c in ENOUGH_CASES],
    ids=[c[0] for c in ENOUGH_CASES],
)
def test_enough_requests(
    pod: Pod,
    existing: Pod | None,
    args: dict[str, Any],
    want_code: Code | None,
    want_insufficient: list[Insufficient],
) -> None:
    node_info = NodeInfo(_node(resources_list(10, 20, 32, 5, 20, 5)), [PodInfo(existing)] if existing else [])
    p = _plugin(NodeResourcesFitArgs(**args))
    state = CycleState()
    result, status = p.pre_filter(state, pod, [])
    assert result is None and status is None
    got = p.filter(state, pod, node_info)
    if want_code is None:
        assert got is None
    else:
        assert got is not None
        assert got.code == want_code
        assert got.reasons == [w[1] for w in want_insufficient]
    request = compute_pod_resource_request(pod, p.ignored_resources, p.ignored_resource_groups)
    assert [astuple(r) for r in fits_request(request, node_info)] == want_insufficient


def test_pre_filter_disabled() -> None:
    """Filter without PreFilter state is an Error."""
    node_info = NodeInfo(_node({}))
    got = _plugin().filter(CycleState(), st_pod(), node_info)
    assert got is not None and got.code == Code.ERROR
    assert got.reasons == ['error reading "PreFilterNodeResourcesFit" from cycleState: not found']


NOT_ENOUGH_CASES = [
    (
        "even without specified resources, predicate fails when there's no space for additional pod",
        st_pod(),
        U(10, 20),
    ),
    (
        "even if both resources fit, predicate fails when there's no space for additional pod",
        resource_pod(U(1, 1)),
        U(5, 5),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod",
        resource_pod(U(5, 1)),
        U(5, 19),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod due to init container",
        resource_pod(U(5, 1), inits=[U(5, 1)]),
        U(5, 19),
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing"), [c[1:] for c in NOT_ENOUGH_CASES], ids=[c[0] for c in NOT_ENOUGH_CASES]
)
def test_not_enough_requests(pod: Pod, existing: dict[str, str]) -> None:
    """A full node says only "Too many pods", and that is never Unresolvable."""
    node_info = NodeInfo(_node(resources_list(10, 20, 1, 0, 0, 0)), [PodInfo(resource_pod(existing))])
    p = _plugin()
    state = CycleState()
    p.pre_filter(state, pod, [])
    got = p.filter(state, pod, node_info)
    assert got is not None
    assert (got.code, got.reasons) == (Code.UNSCHEDULABLE, ["Too many pods"])


STORAGE_CASES = [
    ("empty storage requested, and pod fits", resource_pod(U(1, 1)), U(2, 10), None),
    (
        "storage ephemeral local storage request exceeds allocatable",
        resource_pod(U(storage=25)),
        U(2, 2),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [_reason("ephemeral-storage")]),
    ),
    # newResourceInitPod without init usages: just the one regular container.
    ("ephemeral local storage is sufficient", resource_pod(U(storage=5)), U(2, 2, storage=10), None),
    ("pod fits", resource_pod(U(storage=10)), U(2, 2), None),
]


@pytest.mark.parametrize(
    ("pod", "existing", "want"), [c[1:] for c in STORAGE_CASES], ids=[c[0] for c in STORAGE_CASES]
)
def test_storage_requests(pod: Pod, existing: dict[str, str], want: tuple[Code, list[str]] | None) -> None:
    node_info = NodeInfo(_node(resources_list(10, 20, 32, 5, 20, 5)), [PodInfo(resource_pod(existing))])
    p = _plugin()
    state = CycleState()
    p.pre_filter(state, pod, [])
    got = p.filter(state, pod, node_info)
    assert (None if got is None else (got.code, got.reasons)) == want


def test_storage_exceeding_free_but_not_allocatable_is_resolvable() -> None:
    """Unresolvable only when the request exceeds allocatable, not merely what is free."""
    node_info = NodeInfo(_node(resources_list(10, 20, 32, 5, 20, 5)), [PodInfo(resource_pod(U(storage=15)))])
    pod = resource_pod(U(storage=10))
    p = _plugin()
    state = CycleState()
    p.pre_filter(state, pod, [])
    got = p.filter(state, pod, node_info)
    assert got is not None and (got.code, got.reasons) == (Code.UNSCHEDULABLE, [_reason("ephemeral-storage")])


# TestRestartableInitContainers: the "SidecarContainers disabled" cases are skipped (the gate is
# locked on in v1.36); the enabled ones follow.
SIDECAR_CASES = [
    (
        "allow pod without restartable init containers if sidecar containers is enabled",
        st_pod(empty_containers=1),
        None,
    ),
    (
        "allow pod with restartable init containers if sidecar containers is enabled",
        st_pod(empty_containers=1, sidecars=[{"memory": "0"}]),
        None,
    ),
    (
        "allow pod if the total requested resources do not exceed the node's allocatable resources",
        st_pod({"cpu": "1m"}, sidecars=[{"cpu": "1m"}]),
        None,
    ),
    (
        "not allow pod if the total requested resources do exceed the node's allocatable resources",
        st_pod({"cpu": "1m"}, sidecars=[{"cpu": "2m"}]),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [_reason("cpu")]),
    ),
]


@pytest.mark.parametrize(("pod", "want"), [c[1:] for c in SIDECAR_CASES], ids=[c[0] for c in SIDECAR_CASES])
def test_restartable_init_containers(pod: Pod, want: tuple[Code, list[str]] | None) -> None:
    node_info = NodeInfo(_node(resources_list(2, 0, 1, 0, 0, 0)))
    p = _plugin()
    state = CycleState()
    assert p.pre_filter(state, pod, []) == (None, None)
    got = p.filter(state, pod, node_info)
    assert (None if got is None else (got.code, got.reasons)) == want


def test_reasons_keep_kube_order() -> None:
    """Pods first, then cpu, memory, ephemeral-storage, then scalars (sorted by name in berth)."""
    node_info = NodeInfo(_node(resources_list(10, 20, 1, 5, 20, 5)), [PodInfo(resource_pod(U(5, 5)))])
    pod = resource_pod(U(6, 16, storage=21, scalars={EXT_B: 1, EXT_A: 6}))
    p = _plugin()
    state = CycleState()
    p.pre_filter(state, pod, [])
    got = p.filter(state, pod, node_info)
    assert got is not None
    assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert got.reasons == [
        "Too many pods",
        _reason("cpu"),
        _reason("memory"),
        _reason("ephemeral-storage"),
        _reason(EXT_A),
        _reason(EXT_B),
    ]


def test_ignored_groups_do_not_apply_to_non_extended_resources() -> None:
    """ignoredResourceGroups only skip extended resources: kubernetes.io/* is still checked."""
    pod = resource_pod(U(scalars={KIO_B: 1, "example.com/x": 1}))
    state = compute_pod_resource_request(
        pod, frozenset(), frozenset({"subdomain.kubernetes.io", "example.com"})
    )
    assert state.scalars == ((KIO_B, 1),)


def test_prefilter_state_is_immutable_and_shared_on_clone() -> None:
    state = CycleState()
    _plugin().pre_filter(state, resource_pod(U(1, 1)), [])
    clone = state.clone()
    assert isinstance(clone.read("PreFilterNodeResourcesFit"), PreFilterState)
    assert clone.read("PreFilterNodeResourcesFit") is state.read("PreFilterNodeResourcesFit")
    assert _plugin().pre_filter_extensions() is None


IS_FIT_CASES = [
    ("nil node", st_pod(), None, False),
    ("insufficient resource", st_pod({"cpu": "2"}), st_node("n", {"cpu": "1"}), False),
    ("sufficient resource", st_pod({"cpu": "1"}), st_node("n", {"cpu": "2"}), True),
    ("insufficient pod-level resource", st_pod(pod_requests={"cpu": "2"}), st_node("n", {"cpu": "1"}), False),
    ("sufficient pod-level resource", st_pod(pod_requests={"cpu": "2"}), st_node("n", {"cpu": "2"}), True),
    (
        "sufficient pod-level resource hugepages",
        st_pod(pod_requests={HUGE_A: "2Mi"}),
        st_node("n", {HUGE_A: "2Mi"}),
        True,
    ),
    (
        "insufficient pod-level resource hugepages",
        st_pod(pod_requests={HUGE_A: "4Mi"}),
        st_node("n", {HUGE_A: "2Mi"}),
        False,
    ),
]


@pytest.mark.parametrize(
    ("pod", "node", "expected"), [c[1:] for c in IS_FIT_CASES], ids=[c[0] for c in IS_FIT_CASES]
)
def test_is_fit(pod: Pod, node: Node | None, expected: bool) -> None:
    assert is_fit(pod, node) is expected


# --- TestFitScore ---------------------------------------------------------------------------


def _rtcr(shape: list[tuple[int, int]]) -> ScoringStrategy:
    return ScoringStrategy(
        REQUESTED_TO_CAPACITY_RATIO,
        DEFAULT_RESOURCES,
        RequestedToCapacityRatioParam([UtilizationShapePoint(u, s) for u, s in shape]),
    )


def _score_nodes() -> list[Node]:
    return [
        st_node("node1", {"cpu": "4000", "memory": "10000"}),
        st_node("node2", {"cpu": "6000", "memory": "10000"}),
    ]


def _score_pods() -> list[Pod]:
    return [
        st_pod({"cpu": "2000", "memory": "4000"}, node="node1"),
        st_pod({"cpu": "1000", "memory": "2000"}, node="node2"),
    ]


def _same_nodes() -> list[Node]:
    return [
        st_node("node1", {"cpu": "4000", "memory": "10000"}),
        st_node("node2", {"cpu": "4000", "memory": "10000"}),
    ]


def _sidecar_pods() -> list[Pod]:
    return [
        st_pod({"cpu": "1000", "memory": "2000"}, node="node1", sidecars=[{"cpu": "1000", "memory": "2000"}]),
        st_pod({"cpu": "1000", "memory": "2000"}, node="node2"),
    ]


FIT_SCORE_CASES: list[tuple[str, Pod, list[Node], list[Pod], ScoringStrategy, list[int], bool]] = []
for _pre in (True, False):
    _suffix = "" if _pre else " if PreScore is not called"
    FIT_SCORE_CASES += [
        (
            f"RequestedToCapacityRatio case1{_suffix}",
            st_pod({"cpu": "3000", "memory": "5000"}),
            _score_nodes(),
            _score_pods(),
            _rtcr([(0, 10), (100, 0)]),
            [10, 32],
            _pre,
        ),
        (
            f"MostAllocated{_suffix}",
            st_pod({"cpu": "1000", "memory": "2000"}),
            _score_nodes(),
            _score_pods(),
            ScoringStrategy(MOST_ALLOCATED, DEFAULT_RESOURCES),
            [67, 36],
            _pre,
        ),
        (
            f"LeastAllocated{_suffix}",
            st_pod({"cpu": "1000", "memory": "2000"}),
            _score_nodes(),
            _score_pods(),
            ScoringStrategy(LEAST_ALLOCATED, DEFAULT_RESOURCES),
            [32, 63],
            _pre,
        ),
    ]
FIT_SCORE_CASES += [
    (
        "RequestedToCapacityRatio case2",
        st_pod({"cpu": "3000", "memory": "5000"}),
        _score_nodes(),
        _score_pods(),
        _rtcr([(0, 0), (100, 10)]),
        [95, 68],
        True,
    ),
    (
        "MostAllocated with sidecar container",
        st_pod({"cpu": "1000", "memory": "2000"}),
        _same_nodes(),
        _sidecar_pods(),
        ScoringStrategy(MOST_ALLOCATED, DEFAULT_RESOURCES),
        [67, 45],
        True,
    ),
    (
        "LeastAllocated with sidecar container",
        st_pod({"cpu": "1000", "memory": "2000"}),
        _same_nodes(),
        _sidecar_pods(),
        ScoringStrategy(LEAST_ALLOCATED, DEFAULT_RESOURCES),
        [32, 55],
        True,
    ),
    # Skipped: "LeastAllocated with Extended resources" (with and without PreScore) score
    # DRA-backed extended resources from ResourceSlices, which berth does not implement.
]


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "strategy", "expected", "run_pre_score"),
    [c[1:] for c in FIT_SCORE_CASES],
    ids=[c[0] for c in FIT_SCORE_CASES],
)
def test_fit_score(
    pod: Pod,
    nodes: list[Node],
    existing: list[Pod],
    strategy: ScoringStrategy,
    expected: list[int],
    run_pre_score: bool,
) -> None:
    handle, infos = snapshot(existing, nodes)
    p = NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=strategy), handle)
    state = CycleState()
    if run_pre_score:
        assert p.pre_score(state, pod, infos) is None
    # Without PreScore state, Score computes the pod's request itself.
    assert [p.score(state, pod, info) for info in infos] == expected


def test_score_without_resources_is_an_error() -> None:
    """An empty resource list (only possible in code, not via decode) fails Score like kube."""
    handle, infos = snapshot([], _score_nodes())
    p = NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(LEAST_ALLOCATED, [])), handle)
    state = CycleState()
    p.pre_score(state, st_pod(), infos)
    with pytest.raises(PluginError, match="resources not found"):
        p.score(state, st_pod(), infos[0])


def test_invalid_args_are_rejected_at_construction() -> None:
    """NewFit validates its args."""
    bad = NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(LEAST_ALLOCATED, [ResourceSpec("cpu", 0)]))
    with pytest.raises(FieldError) as err:
        NodeResourcesFit(bad, FakeHandle())
    assert err.value.path == "scoringStrategy.resources[0].weight"


def test_decoded_default_args() -> None:
    """Default args (as decoded from nothing) score with LeastAllocated over cpu and memory."""
    p = NodeResourcesFit(NodeResourcesFitArgs.decode(None, ""), FakeHandle())
    assert p.scorer.strategy == LEAST_ALLOCATED
    assert p.scorer.names == ("cpu", "memory")


def test_filter_reads_each_cycles_own_request() -> None:
    """Filter remembers the request of the last PreFilter next to its cycle state; a node checked
    for another cycle (a dry run's clone, an earlier state) gets that cycle's own request."""
    p = _plugin()
    node_info = NodeInfo(_node(resources_list(10, 20, 32, 5, 20, 5)))
    small, large = CycleState(), CycleState()
    p.pre_filter(small, resource_pod(U(1, 1)), [])
    p.pre_filter(large, resource_pod(U(11, 1)), [])
    assert p.filter(small, resource_pod(U(1, 1)), node_info) is None
    assert p.filter(small.clone(), resource_pod(U(1, 1)), node_info) is None
    rejected = p.filter(large, resource_pod(U(11, 1)), node_info)
    assert rejected is not None and rejected.reasons == ["Insufficient cpu"]
    assert p.filter_all(large, resource_pod(U(11, 1)), [node_info, node_info]) == [rejected, rejected]
    assert p.filter_all(small, resource_pod(U(1, 1)), [node_info]) is None


def test_copies_of_one_pod_reuse_its_request_and_other_pods_get_their_own() -> None:
    """PreFilter and PreScore remember the last pod's request by its very spec objects: copies made
    from one template (berth capacity's replicas) reuse it; a pod with another spec, even one that
    comes between two copies, is computed afresh, and so is the next copy after it."""
    template = resource_pod(U(2, 3))
    other = resource_pod(U(5, 7))
    node_info = NodeInfo(_node(resources_list(4, 20, 32, 5, 20, 5)))
    p = _plugin()
    seen = []
    for pod in (template, replace(template, name="b", uid="b"), other, replace(template, name="c", uid="c")):
        state = CycleState()
        p.pre_filter(state, pod, [])
        p.pre_score(state, pod, [node_info])
        request = state.read(PRE_FILTER_STATE_KEY)
        seen.append((request.milli_cpu, request.memory, p.filter(state, pod, node_info) is None))
    assert seen == [(2, 3, True), (2, 3, True), (5, 7, False), (2, 3, True)]
    # The scores follow the pod too: the template's copies leave more room than the other pod.
    scores = []
    for pod in (template, other, replace(template, name="d", uid="d")):
        state = CycleState()
        p.pre_score(state, pod, [node_info])
        scores.append(p.score(state, pod, node_info))
    fresh = _plugin()
    state = CycleState()
    fresh.pre_score(state, other, [node_info])
    assert scores[0] == scores[2] != scores[1] == fresh.score(state, other, node_info)
