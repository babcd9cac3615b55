"""RequestedToCapacityRatio scoring of NodeResourcesFit, ported from requested_to_capacity_ratio_test.go (v1.36.3)."""

from __future__ import annotations

import pytest

from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import MAX_NODE_SCORE
from app.framework.types import NodeInfo
from app.plugins.noderesources.args import (
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from app.plugins.noderesources.fit import NodeResourcesFit
from app.plugins.noderesources.resource_allocation import build_broken_linear_function, go_div, shape_table
from plugins.noderesources_helpers import snapshot, st_node, st_pod, util_node

DEFAULT = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
SHAPE = [(0, 10), (100, 0)]
MI = 1024 * 1024


def _plugin(
    resources: list[ResourceSpec], shape: list[tuple[int, int]], nodes: list[Node], existing: list[Pod]
) -> tuple[NodeResourcesFit, list[NodeInfo]]:
    handle, infos = snapshot(existing, nodes)
    strategy = ScoringStrategy(
        REQUESTED_TO_CAPACITY_RATIO,
        resources,
        RequestedToCapacityRatioParam([UtilizationShapePoint(u, s) for u, s in shape]),
    )
    return NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=strategy), handle), infos


def _scores(p: NodeResourcesFit, infos: list[NodeInfo], pod: Pod) -> list[int]:
    state = CycleState()
    assert p.pre_score(state, pod, infos) is None
    return [p.score(state, pod, info) for info in infos]


STRATEGY_CASES = [
    (
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        st_pod(),
        [
            st_node("node1", {"cpu": "4000", "memory": "10000"}),
            st_node("node2", {"cpu": "4000", "memory": "10000"}),
        ],
        [st_pod(node="node1"), st_pod(node="node1")],
        [MAX_NODE_SCORE, MAX_NODE_SCORE],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have priority)",
        st_pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}),
        [
            st_node("node1", {"cpu": "4000", "memory": "10000"}),
            st_node("node2", {"cpu": "6000", "memory": "10000"}),
        ],
        [st_pod(node="node1"), st_pod(node="node1")],
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
        st_pod(),
        [
            st_node("node1", {"cpu": "4000", "memory": "10000"}),
            st_node("node2", {"cpu": "6000", "memory": "10000"}),
        ],
        [
            st_pod({"cpu": "3000", "memory": "5000"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [38, 50],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "expected"),
    [c[1:] for c in STRATEGY_CASES],
    ids=[c[0] for c in STRATEGY_CASES],
)
def test_requested_to_capacity_ratio_scoring_strategy(
    pod: Pod, nodes: list[Node], existing: list[Pod], expected: list[int]
) -> None:
    p, infos = _plugin(DEFAULT, SHAPE, nodes, existing)
    assert _scores(p, infos, pod) == expected


BROKEN_LINEAR_CASES = [
    (
        [(10, 1), (90, 9)],
        [
            (-10, 1),
            (0, 1),
            (9, 1),
            (10, 1),
            (15, 1),
            (19, 1),
            (20, 2),
            (89, 8),
            (90, 9),
            (99, 9),
            (100, 9),
            (110, 9),
        ],
    ),
    (
        [(0, 2), (40, 10), (100, 0)],
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
    ),
    (
        [(0, 2), (40, 2), (100, 2)],
        [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
    ),
]


@pytest.mark.parametrize(("points", "assertions"), BROKEN_LINEAR_CASES, ids=["case_0", "case_1", "case_2"])
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    for p, expected in assertions:
        assert build_broken_linear_function(points, p) == expected, (points, p)


def test_broken_linear_function_truncates_toward_zero() -> None:
    """A falling segment uses Go's truncating division, not Python's floor."""
    # 100 + (0-100)*(33-0)/(40-0) = 100 - 82.5 → Go: 100 - 82 = 18 (floor would give 17).
    assert build_broken_linear_function([(0, 100), (40, 0)], 33) == 18
    assert go_div(-7, 2) == -3 and go_div(7, -2) == -3 and go_div(-7, -2) == 3 and go_div(7, 2) == 3


def test_shape_table_is_scaled_to_max_node_score() -> None:
    table = shape_table([UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0)])
    assert len(table) == 101
    assert (table[0], table[37], table[100]) == (100, 63, 0)


SINGLE_EXTENDED = [
    ("nothing scheduled, nothing requested", st_pod(), [], [0, 0]),
    (
        "resources requested, pods scheduled with less resources",
        st_pod({"intel.com/foo": "2"}),
        [st_pod()],
        [2, 5],
    ),
    (
        "resources requested, pods scheduled with resources, on node with existing pod running ",
        st_pod({"intel.com/foo": "2"}),
        [st_pod({"intel.com/foo": "2"}, node="node2")],
        [2, 10],
    ),
    (
        "resources requested, pods scheduled with more resources",
        st_pod({"intel.com/foo": "4"}),
        [st_pod()],
        [5, 10],
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "expected"), [c[1:] for c in SINGLE_EXTENDED], ids=[c[0] for c in SINGLE_EXTENDED]
)
def test_resource_bin_packing_single_extended(pod: Pod, existing: list[Pod], expected: list[int]) -> None:
    nodes = [
        util_node("node1", 4000, 10000 * MI, {"intel.com/foo": 8}),
        util_node("node2", 4000, 10000 * MI, {"intel.com/foo": 4}),
    ]
    p, infos = _plugin([ResourceSpec("intel.com/foo", 1)], [(0, 0), (100, 1)], nodes, existing)
    assert _scores(p, infos, pod) == expected


POD1 = {"intel.com/foo": "2", "intel.com/bar": "2"}
POD2 = {"intel.com/foo": "4", "intel.com/bar": "2"}
MULTIPLE_EXTENDED = [
    ("nothing scheduled, nothing requested", st_pod(), [], [0, 0]),
    ("resources requested, pods scheduled with less resources", st_pod(POD1), [st_pod()], [4, 3]),
    (
        "resources requested, pods scheduled with resources, on node with existing pod running ",
        st_pod(POD1),
        [st_pod(POD2, node="node2")],
        [4, 7],
    ),
    ("resources requested, pods scheduled with more resources", st_pod(POD2), [st_pod()], [5, 5]),
]


@pytest.mark.parametrize(
    ("pod", "existing", "expected"), [c[1:] for c in MULTIPLE_EXTENDED], ids=[c[0] for c in MULTIPLE_EXTENDED]
)
def test_resource_bin_packing_multiple_extended(pod: Pod, existing: list[Pod], expected: list[int]) -> None:
    nodes = [
        util_node("node1", 4000, 10000 * MI, {"intel.com/foo": 8, "intel.com/bar": 4}),
        util_node("node2", 4000, 10000 * MI, {"intel.com/foo": 4, "intel.com/bar": 8}),
    ]
    resources = [ResourceSpec("intel.com/foo", 3), ResourceSpec("intel.com/bar", 5)]
    p, infos = _plugin(resources, [(0, 0), (100, 1)], nodes, existing)
    assert _scores(p, infos, pod) == expected


def test_round_half_up() -> None:
    """math.Round of the weighted mean rounds halves up (Python's round() would go to even)."""
    nodes = [st_node("node1", {"cpu": "100", "memory": "100"})]
    # With shape (0,0)-(100,10) the score equals the utilization: cpu 25, memory 20 → mean 22.5 → 23.
    p, infos = _plugin(DEFAULT, [(0, 0), (100, 10)], nodes, [])
    assert _scores(p, infos, st_pod({"cpu": "25", "memory": "20"})) == [23]
    # Otherwise to the nearest: (25 + 2*20) / 3 = 21.67 → 22; and (21 + 20) / 2 = 20.5 → 21 (even would be 20).
    p, infos = _plugin([ResourceSpec("cpu", 1), ResourceSpec("memory", 2)], [(0, 0), (100, 10)], nodes, [])
    assert _scores(p, infos, st_pod({"cpu": "25", "memory": "20"})) == [22]
    p, infos = _plugin(DEFAULT, [(0, 0), (100, 10)], nodes, [])
    assert _scores(p, infos, st_pod({"cpu": "21", "memory": "20"})) == [21]
