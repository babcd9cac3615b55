"""The zone-interleaved node tree, ported from kube-scheduler v1.36.3
pkg/scheduler/backend/cache/node_tree_test.go."""

from __future__ import annotations

import pytest

from app.api.objects import LABEL_REGION, LABEL_REGION_BETA, LABEL_ZONE, LABEL_ZONE_BETA, Node
from app.backend.cache.node_tree import NodeTree, zone_key
from builders import make_node

_LABELS: list[dict[str, str]] = [
    {},  # node-0: no region/zone label
    {LABEL_REGION: "region-1"},  # node-1: region only
    {LABEL_ZONE: "zone-2"},  # node-2: zone only
    {LABEL_REGION: "region-1", LABEL_ZONE: "zone-2"},  # node-3
    {LABEL_REGION: "region-1", LABEL_ZONE: "zone-2"},  # node-4
    {LABEL_REGION: "region-1", LABEL_ZONE: "zone-3"},  # node-5: same region, other zone
    {LABEL_REGION: "region-2", LABEL_ZONE: "zone-2"},  # node-6: new region and zone
    {LABEL_REGION: "region-2", LABEL_ZONE: "zone-2"},  # node-7
    {LABEL_REGION: "region-2", LABEL_ZONE: "zone-2"},  # node-8
    {  # node-9: GA and deprecated labels
        LABEL_REGION: "region-2",
        LABEL_ZONE: "zone-2",
        LABEL_REGION_BETA: "region-2",
        LABEL_ZONE_BETA: "zone-2",
    },
    {LABEL_REGION_BETA: "region-2", LABEL_ZONE_BETA: "zone-3"},  # node-10: deprecated only
]
ALL_NODES: list[Node] = [make_node(f"node-{i}", labels=labels) for i, labels in enumerate(_LABELS)]


def tree_of(nodes: list[Node]) -> NodeTree:
    nt = NodeTree()
    for n in nodes:
        nt.add(n)
    return nt


def verify(nt: NodeTree, expected: dict[str, list[str]]) -> None:
    assert nt.num_nodes == sum(len(v) for v in expected.values())
    assert nt._zones == expected
    assert set(nt._zones) == set(expected)


ADD_CASES = [
    ("single node no labels", ALL_NODES[:1], {"": ["node-0"]}),
    ("same node specified twice", [ALL_NODES[0], ALL_NODES[0]], {"": ["node-0"]}),
    (
        "mix of nodes with and without proper labels",
        ALL_NODES[:4],
        {
            "": ["node-0"],
            "region-1:\x00:": ["node-1"],
            ":\x00:zone-2": ["node-2"],
            "region-1:\x00:zone-2": ["node-3"],
        },
    ),
    (
        "mix of nodes with and without proper labels and some zones with multiple nodes",
        ALL_NODES[:7],
        {
            "": ["node-0"],
            "region-1:\x00:": ["node-1"],
            ":\x00:zone-2": ["node-2"],
            "region-1:\x00:zone-2": ["node-3", "node-4"],
            "region-1:\x00:zone-3": ["node-5"],
            "region-2:\x00:zone-2": ["node-6"],
        },
    ),
    (
        "nodes also using deprecated zone/region label",
        ALL_NODES[9:],
        {"region-2:\x00:zone-2": ["node-9"], "region-2:\x00:zone-3": ["node-10"]},
    ),
]


@pytest.mark.parametrize(("nodes", "expected"), [c[1:] for c in ADD_CASES], ids=[c[0] for c in ADD_CASES])
def test_add_node(nodes: list[Node], expected: dict[str, list[str]]) -> None:
    verify(tree_of(nodes), expected)


REMOVE_CASES = [
    (
        "remove a single node with no labels",
        ALL_NODES[:7],
        ALL_NODES[:1],
        {
            "region-1:\x00:": ["node-1"],
            ":\x00:zone-2": ["node-2"],
            "region-1:\x00:zone-2": ["node-3", "node-4"],
            "region-1:\x00:zone-3": ["node-5"],
            "region-2:\x00:zone-2": ["node-6"],
        },
    ),
    (
        "remove a few nodes including one from a zone with multiple nodes",
        ALL_NODES[:7],
        ALL_NODES[1:4],
        {
            "": ["node-0"],
            "region-1:\x00:zone-2": ["node-4"],
            "region-1:\x00:zone-3": ["node-5"],
            "region-2:\x00:zone-2": ["node-6"],
        },
    ),
    ("remove all nodes", ALL_NODES[:7], ALL_NODES[:7], {}),
    ("remove non-existing node", [], ALL_NODES[:5], {}),  # an error in Go, a no-op here
]


@pytest.mark.parametrize(
    ("existing", "remove", "expected"), [c[1:] for c in REMOVE_CASES], ids=[c[0] for c in REMOVE_CASES]
)
def test_remove_node(existing: list[Node], remove: list[Node], expected: dict[str, list[str]]) -> None:
    nt = tree_of(existing)
    for n in remove:
        nt.remove(n.name)
    verify(nt, expected)


ZONE_1_2 = {LABEL_REGION: "region-1", LABEL_ZONE: "zone-2"}
UPDATE_CASES = [
    (
        "update a node without label",
        ALL_NODES[:7],
        make_node("node-0", labels=ZONE_1_2),
        {
            "region-1:\x00:": ["node-1"],
            ":\x00:zone-2": ["node-2"],
            "region-1:\x00:zone-2": ["node-3", "node-4", "node-0"],
            "region-1:\x00:zone-3": ["node-5"],
            "region-2:\x00:zone-2": ["node-6"],
        },
    ),
    (
        "update the only existing node",
        ALL_NODES[:1],
        make_node("node-0", labels=ZONE_1_2),
        {"region-1:\x00:zone-2": ["node-0"]},
    ),
    (
        "update non-existing node",
        ALL_NODES[:1],
        make_node("node-new", labels=ZONE_1_2),
        {"": ["node-0"], "region-1:\x00:zone-2": ["node-new"]},
    ),
    (
        "update keeping the zone keeps the position",
        ALL_NODES[3:5],
        make_node("node-3", labels={**ZONE_1_2, "other": "label"}),
        {"region-1:\x00:zone-2": ["node-3", "node-4"]},
    ),
]


@pytest.mark.parametrize(
    ("existing", "new", "expected"), [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES]
)
def test_update_node(existing: list[Node], new: Node, expected: dict[str, list[str]]) -> None:
    nt = tree_of(existing)
    old = next((n for n in ALL_NODES if n.name == new.name), None)
    nt.update(old, new)
    verify(nt, expected)


LIST_CASES = [
    ("empty tree", [], []),
    ("one node", ALL_NODES[:1], ["node-0"]),
    ("four nodes", ALL_NODES[:4], ["node-0", "node-1", "node-2", "node-3"]),
    (
        "all nodes",
        ALL_NODES[:9],
        ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"],
    ),
]


@pytest.mark.parametrize(("nodes", "expected"), [c[1:] for c in LIST_CASES], ids=[c[0] for c in LIST_CASES])
def test_list(nodes: list[Node], expected: list[str]) -> None:
    assert tree_of(nodes).list() == expected


MULTI_CASES = [
    ("add and remove all nodes", ALL_NODES[2:9], ALL_NODES[2:9], ["add"] * 3 + ["remove"] * 3, []),
    (
        "add and remove some nodes",
        ALL_NODES[2:9],
        ALL_NODES[2:9],
        ["add"] * 3 + ["remove"],
        ["node-3", "node-4"],
    ),
    (
        "remove three nodes",
        ALL_NODES[2:9],
        ALL_NODES[2:9],
        ["add"] * 3 + ["remove"] * 3 + ["add"],
        ["node-5"],
    ),
    (
        "add more nodes to an exhausted zone",
        [*ALL_NODES[4:9], ALL_NODES[3]],
        [],
        ["add"] * 6,
        ["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"],
    ),
    (
        "remove zone and add new",
        [*ALL_NODES[3:5], *ALL_NODES[6:8]],
        ALL_NODES[3:5],
        ["add", "add", "remove", "add", "add", "remove"],
        ["node-6", "node-7"],
    ),
]


@pytest.mark.parametrize(
    ("to_add", "to_remove", "operations", "expected"),
    [c[1:] for c in MULTI_CASES],
    ids=[c[0] for c in MULTI_CASES],
)
def test_multi_operations(
    to_add: list[Node], to_remove: list[Node], operations: list[str], expected: list[str]
) -> None:
    nt = NodeTree()
    adds, removes = iter(to_add), iter(to_remove)
    for op in operations:
        if op == "add":
            nt.add(next(adds))
        else:
            nt.remove(next(removes).name)
    assert nt.list() == expected


def test_round_robin_example_from_the_spec() -> None:
    # zones A=[a1,a2,a3], B=[b1] → [a1, b1, a2, a3]
    a = {LABEL_ZONE: "A"}
    b = {LABEL_ZONE: "B"}
    nodes = [
        make_node("a1", labels=a),
        make_node("b1", labels=b),
        make_node("a2", labels=a),
        make_node("a3", labels=a),
    ]
    assert tree_of(nodes).list() == ["a1", "b1", "a2", "a3"]


@pytest.mark.parametrize(
    ("labels", "key"),
    [
        ({}, ""),
        ({LABEL_REGION: "r", LABEL_ZONE: "z"}, "r:\x00:z"),
        ({LABEL_REGION_BETA: "r", LABEL_ZONE_BETA: "z"}, "r:\x00:z"),
        # GetZoneKey reads the deprecated failure-domain labels first, when present
        (
            {
                LABEL_REGION: "r-ga",
                LABEL_ZONE: "z-ga",
                LABEL_REGION_BETA: "r-beta",
                LABEL_ZONE_BETA: "z-beta",
            },
            "r-beta:\x00:z-beta",
        ),
        ({LABEL_ZONE: "z-ga", LABEL_ZONE_BETA: ""}, ""),  # present but empty still wins
        ({LABEL_ZONE: "z-ga", LABEL_REGION_BETA: "r-beta"}, "r-beta:\x00:z-ga"),
    ],
)
def test_zone_key(labels: dict[str, str], key: str) -> None:
    assert zone_key(make_node("n", labels=labels)) == key
