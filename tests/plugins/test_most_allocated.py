"""MostAllocated scoring of NodeResourcesFit, ported from most_allocated_test.go (v1.36.3)."""

from __future__ import annotations

import pytest

from app.api.errors import FieldError
from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import MIN_NODE_SCORE, PluginError
from app.plugins.noderesources.args import MOST_ALLOCATED, NodeResourcesFitArgs, ResourceSpec, ScoringStrategy
from app.plugins.noderesources.fit import NodeResourcesFit
from app.plugins.noderesources.resource_allocation import most_requested_score
from fakes import FakeHandle
from plugins.noderesources_helpers import (
    DEFAULT,
    EXTENDED,
    EXTENDED_SET,
    capacity_node,
    snapshot,
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
        [MIN_NODE_SCORE, MIN_NODE_SCORE],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        two_container_pod(),
        [capacity_node("node1", "4000", "10000"), capacity_node("node2", "6000", "10000")],
        [],
        DEFAULT,
        [62, 50],
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
        [30, 42],
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
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        st_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [capacity_node("node1", "5000", "10000"), capacity_node("node2", "10000", "9000")],
        [],
        DEFAULT,
        [95, 75],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (weighted)",
        two_container_pod(),
        [capacity_node("node1", "4000", "10000"), capacity_node("node2", "6000", "10000")],
        [],
        [ResourceSpec("memory", 2), ResourceSpec("cpu", 1)],
        [58, 50],
    ),
    (
        # Containers without requests count as 100m cpu / 200Mi memory (non-zero defaults).
        "no resources requested, pods scheduled, nonzero request for resource",
        st_pod(empty_containers=1),
        [capacity_node("node1", "250m", "1000Mi"), capacity_node("node2", "250m", "1000Mi")],
        [st_pod(node="node1", empty_containers=1), st_pod(node="node1", empty_containers=1)],
        DEFAULT,
        [80, 30],
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
        "honor extended resource if the pod request",
        st_pod({"cpu": "3000", "memory": "5000", EXTENDED: "2"}),
        [capacity_node("node1", "6000", "10000", ext="4"), capacity_node("node2", "6000", "10000", ext="10")],
        [],
        EXTENDED_SET,
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        st_pod({"cpu": "3000", "memory": "4000"}),
        [capacity_node("node1", "6000", "10000"), capacity_node("node2", "6000", "10000", ext="4")],
        [],
        [ResourceSpec(EXTENDED, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1)],
        [45, 45],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "resources", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_most_allocated_scoring_strategy(
    pod: Pod, nodes: list[Node], existing: list[Pod], resources: list[ResourceSpec], expected: list[int]
) -> None:
    handle, infos = snapshot(existing, nodes)
    p = NodeResourcesFit(
        NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(MOST_ALLOCATED, resources)), handle
    )
    state = CycleState()
    assert p.pre_score(state, pod, infos) is None
    assert [p.score(state, pod, info) for info in infos] == expected


def test_resources_not_set_is_an_error() -> None:
    """ "Resources not set, pods scheduled with error"."""
    handle, infos = snapshot(
        [], [capacity_node("node1", "4000", "10000"), capacity_node("node2", "6000", "10000")]
    )
    p = NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(MOST_ALLOCATED, [])), handle)
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
            [ResourceSpec("memory", 101)],
            "scoringStrategy.resources[0].weight",
        ),
    ],
)
def test_invalid_weights(name: str, resources: list[ResourceSpec], path: str) -> None:
    args = NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(MOST_ALLOCATED, resources))
    with pytest.raises(FieldError) as err:
        NodeResourcesFit(args, FakeHandle())
    assert err.value.path == path


def test_most_requested_score_caps_at_capacity() -> None:
    assert most_requested_score(0, 0) == 0
    assert most_requested_score(500, 250) == 100
    assert most_requested_score(1, 3) == 33
