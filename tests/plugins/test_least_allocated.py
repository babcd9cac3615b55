"""LeastAllocated scoring of NodeResourcesFit, ported from least_allocated_test.go (v1.36.3)."""

from __future__ import annotations

import pytest

from app.api.errors import FieldError
from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, PluginError
from app.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from app.plugins.noderesources.fit import NodeResourcesFit
from app.plugins.noderesources.resource_allocation import least_requested_score
from fakes import FakeHandle
from plugins.noderesources_helpers import (
    DEFAULT,
    EXTENDED,
    EXTENDED_SET,
    capacity_node,
    snapshot,
    st_node,
    st_pod,
    two_container_pod,
)

CASES: list[tuple[str, Pod, list[Node], list[Pod], list[ResourceSpec], list[int]]] = [
    (
        "nothing scheduled, nothing requested",
        st_pod(),
        [capacity_node("node1", "4000", "10000"), capacity_node("node2", "4000", "10000")],
        [],
        DEFAULT,
        [MAX_NODE_SCORE, MAX_NODE_SCORE],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        two_container_pod(),
        [capacity_node("node1", "4000", "10000"), capacity_node("node2", "6000", "10000")],
        [],
        DEFAULT,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        st_pod(),
        [capacity_node("node1", "4000", "10000"), capacity_node("node2", "4000", "10000")],
        [st_pod(node="node1"), st_pod(node="node1"), st_pod(node="node2"), st_pod(node="node2")],
        DEFAULT,
        [MAX_NODE_SCORE, MAX_NODE_SCORE],
    ),
    (
        "no resources requested, pods scheduled with resources",
        st_pod(),
        [capacity_node("node1", "10000", "20000"), capacity_node("node2", "10000", "20000")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "0"}, node="node2"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        two_container_pod(),
        [capacity_node("node1", "10000", "20000"), capacity_node("node2", "10000", "20000")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        two_container_pod(),
        [capacity_node("node1", "10000", "20000"), capacity_node("node2", "10000", "50000")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        st_pod({"cpu": "3000", "memory": "0"}),
        [capacity_node("node1", "4000", "10000"), capacity_node("node2", "4000", "10000")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        st_pod(),
        [st_node("node1"), st_node("node2")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [MIN_NODE_SCORE, MIN_NODE_SCORE],
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
        two_container_pod(),
        [capacity_node("node1", "4000", "10000"), capacity_node("node2", "6000", "10000")],
        [],
        [ResourceSpec("memory", 2), ResourceSpec("cpu", 1)],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        two_container_pod(),
        [capacity_node("node1", "6000", "10000"), capacity_node("node2", "6000", "10000", ext="4")],
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        st_pod({"cpu": "3000", "memory": "5000", EXTENDED: "2"}),
        [capacity_node("node1", "6000", "10000", ext="4"), capacity_node("node2", "6000", "10000", ext="10")],
        [],
        EXTENDED_SET,
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        st_pod({"cpu": "3000", "memory": "4000"}),
        [capacity_node("node1", "6000", "10000"), capacity_node("node2", "6000", "10000", ext="4")],
        [],
        [ResourceSpec(EXTENDED, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1)],
        [55, 55],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "resources", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_least_allocated_scoring_strategy(
    pod: Pod, nodes: list[Node], existing: list[Pod], resources: list[ResourceSpec], expected: list[int]
) -> None:
    handle, infos = snapshot(existing, nodes)
    p = NodeResourcesFit(
        NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(LEAST_ALLOCATED, resources)), handle
    )
    state = CycleState()
    assert p.pre_score(state, pod, infos) is None
    assert [p.score(state, pod, info) for info in infos] == expected


def test_resources_not_set_is_an_error() -> None:
    """ "Resources not set, pods scheduled with error": Score fails (kube returns 0 with an Error status)."""
    handle, infos = snapshot(
        [], [capacity_node("node1", "4000", "10000"), capacity_node("node2", "6000", "10000")]
    )
    p = NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(LEAST_ALLOCATED, [])), handle)
    state = CycleState()
    p.pre_score(state, two_container_pod(), infos)
    for info in infos:
        with pytest.raises(PluginError, match="resources not found"):
            p.score(state, two_container_pod(), info)


@pytest.mark.parametrize(
    ("name", "resources", "path"),
    [
        (
            "resource with negative weight",
            [ResourceSpec("memory", -1), ResourceSpec("cpu", 1)],
            "scoringStrategy.resources[0].weight",
        ),
        (
            "resource with zero weight",
            [ResourceSpec("memory", 1), ResourceSpec("cpu", 0)],
            "scoringStrategy.resources[1].weight",
        ),
        (
            "resource weight larger than MaxNodeScore",
            [ResourceSpec("memory", 1), ResourceSpec("cpu", 101)],
            "scoringStrategy.resources[1].weight",
        ),
    ],
)
def test_invalid_weights(name: str, resources: list[ResourceSpec], path: str) -> None:
    args = NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(LEAST_ALLOCATED, resources))
    with pytest.raises(FieldError) as err:
        NodeResourcesFit(args, FakeHandle())
    assert err.value.path == path
    assert err.value.message.startswith("Invalid value")


def test_least_requested_score() -> None:
    assert least_requested_score(0, 0) == 0
    assert least_requested_score(5, 4) == 0
    assert least_requested_score(1, 3) == 66
    assert least_requested_score(3000, 4000) == 25


def test_score_ignores_pod_level_resources() -> None:
    """kube-scheduler v1.36.3 builds Fit's scorer (nodeResourceStrategyTypeMap) without
    enablePodLevelResources: a pod is scored by its containers' requests, with the 100m/200Mi non-zero
    defaults for the ones that request nothing, whatever ``spec.resources`` says. Derived from
    least_allocated_test.go's "nothing scheduled, resources requested, differently sized nodes"."""
    nodes = [capacity_node("node1", "4000", "10000"), capacity_node("node2", "6000", "10000")]
    by_containers = two_container_pod()
    with_pod_level = st_pod(
        {"cpu": "1000", "memory": "2000"},
        {"cpu": "2000", "memory": "3000"},
        pod_requests={"cpu": "3500", "memory": "9000"},
    )
    empty_with_pod_level = st_pod(empty_containers=1, pod_requests={"cpu": "3000", "memory": "9000"})
    handle, infos = snapshot([], nodes)
    p = NodeResourcesFit(
        NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(LEAST_ALLOCATED, DEFAULT)), handle
    )

    def scores(pod: Pod) -> list[int]:
        state = CycleState()
        assert p.pre_score(state, pod, infos) is None
        return [p.score(state, pod, info) for info in infos]

    assert scores(with_pod_level) == scores(by_containers) == [37, 50]
    # The non-zero defaults (100m, 200Mi) stand in for the empty container, not the pod-level requests.
    assert (
        scores(empty_with_pod_level)
        == scores(st_pod(empty_containers=1))
        != scores(st_pod({"cpu": "3000", "memory": "9000"}))
    )
