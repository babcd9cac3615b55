"""The scheduler cache and incremental snapshots, ported from kube-scheduler v1.36.3
pkg/scheduler/backend/cache/cache_test.go (assume/forget/add/update/remove, ghost nodes, image
states, TestSchedulerCache_UpdateSnapshot)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from app.api.objects import LABEL_ZONE, Node, Pod
from app.backend.cache.cache import Cache, CacheError
from app.backend.cache.snapshot import Snapshot
from app.framework.types import Resource
from builders import make_node, make_pod

ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def pod(name: str, node: str, cpu: str = "100m", mem: str = "500", **spec: object) -> Pod:
    return make_pod(name, [{"cpu": cpu, "memory": mem}], nodeName=node, uid=name, **spec)


def node(name: str, cpu: str = "1000m", mem: str = "100m", **labels: str) -> Node:
    return make_node(name, {"cpu": cpu, "memory": mem}, labels=labels)


def requested(cache: Cache, node_name: str) -> Resource:
    snap = Snapshot()
    cache.update_snapshot(snap)
    info = snap.get(node_name)
    assert info is not None
    return info.requested


# --- assume / forget / add / update / remove -----------------------------------------------------


def test_assume_pod_scheduled() -> None:
    # TestAssumePodScheduled: assumed pods count on their node at once.
    cache = Cache()
    cache.add_node(node("node"))
    cache.assume_pod(pod("test", "node", "100m", "500"))
    cache.assume_pod(pod("test-1", "node", "200m", "1Ki"))
    assert requested(cache, "node") == Resource(300, 1524)
    assert cache.assumed_count == 2 and cache.pod_count == 2
    with pytest.raises(CacheError, match="is in the cache, so can't be assumed"):
        cache.assume_pod(pod("test", "node"))


def test_add_pod_will_confirm() -> None:
    # TestAddPodWillConfirm: the informer's add confirms one assumed pod; both stay counted.
    cache = Cache()
    cache.add_node(node("node"))
    a, b = pod("a", "node"), pod("b", "node", "200m", "1Ki")
    cache.assume_pod(a)
    cache.assume_pod(b)
    cache.add_pod(a)
    assert not cache.is_assumed(a) and cache.is_assumed(b)
    assert requested(cache, "node") == Resource(300, 1524)


def test_copies_of_one_template_count_their_own_requests() -> None:
    # Copies share the template's spec objects (berth capacity's replicas): each is counted with the
    # template's requests, through assume and the bound pod's confirmation; a pod of another spec
    # assumed between two copies counts its own.
    cache = Cache()
    cache.add_node(node("node", cpu="4"))
    template = pod("web", "node", "300m", "1Ki")
    copies = [dataclasses.replace(template, name=f"web-{i}", uid=f"web-{i}") for i in range(3)]
    cache.assume_pod(copies[0])
    cache.assume_pod(pod("other", "node", "50m", "7"))
    cache.assume_pod(copies[1])
    cache.assume_pod(copies[2])
    assert requested(cache, "node") == Resource(950, 3079)
    for copy in copies:
        cache.add_pod(dataclasses.replace(copy))  # the bound object, a new one
    assert requested(cache, "node") == Resource(950, 3079)
    assert cache.assumed_count == 1
    cache.remove_pod(copies[0])
    assert requested(cache, "node") == Resource(650, 2055)


def test_add_pod_will_replace_assumed_on_another_node() -> None:
    # TestAddPodWillReplaceAssumed: bound elsewhere than assumed → moved to the bound node.
    cache = Cache()
    for n in ("assumed-node", "actual-node"):
        cache.add_node(node(n))
    assumed = pod("p", "assumed-node")
    cache.assume_pod(assumed)
    cache.add_pod(dataclasses.replace(assumed, node_name="actual-node"))
    assert cache.pods_on("assumed-node") == []
    assert [p.name for p in cache.pods_on("actual-node")] == ["p"]
    assert not cache.is_assumed(assumed)


def test_add_pod_twice_counts_once() -> None:
    cache = Cache()
    cache.add_node(node("node"))
    p = pod("p", "node")
    cache.add_pod(p)
    cache.add_pod(p)
    assert requested(cache, "node") == Resource(100, 500)


def test_forget_pod() -> None:
    # TestForgetPod
    cache = Cache()
    cache.add_node(node("node"))
    p = pod("p", "node")
    cache.assume_pod(p)
    with pytest.raises(CacheError, match="was assumed on node but assigned to other"):
        cache.forget_pod(dataclasses.replace(p, node_name="other"))
    cache.forget_pod(p)
    assert cache.pod_count == 0 and cache.get_pod("p") is None
    assert requested(cache, "node") == Resource()
    cache.forget_pod(p)  # forgetting a pod the cache does not know is not an error


def test_forget_added_pod_is_an_error() -> None:
    cache = Cache()
    cache.add_node(node("node"))
    p = pod("p", "node")
    cache.add_pod(p)
    with pytest.raises(CacheError, match="wasn't assumed so cannot be forgotten"):
        cache.forget_pod(p)


def test_update_pod() -> None:
    # TestUpdatePod / TestUpdatePodAndGet: the new requests replace the old.
    cache = Cache()
    cache.add_node(node("node"))
    old = pod("p", "node", "100m", "500")
    new = pod("p", "node", "200m", "1Ki")
    cache.add_pod(old)
    cache.update_pod(old, new)
    assert requested(cache, "node") == Resource(200, 1024)
    assert cache.get_pod("p") is new
    cache.update_pod(new, old)
    assert requested(cache, "node") == Resource(100, 500)


def test_remove_pod() -> None:
    # TestRemovePod: the node stays (it has an object); requests go back to zero.
    cache = Cache()
    cache.add_node(node("node"))
    p = pod("p", "node")
    cache.add_pod(p)
    cache.remove_pod(p)
    assert cache.pod_count == 0 and cache.get_node("node") is not None
    assert requested(cache, "node") == Resource()
    cache.remove_pod(p)  # unknown: no-op


def test_ghost_node_lives_until_its_last_pod_goes() -> None:
    # TestNodeOperators / "Remove node before its pods"
    cache = Cache()
    n = node("node")
    cache.add_node(n)
    p1, p2 = pod("p1", "node"), pod("p2", "node")
    cache.add_pod(p1)
    cache.add_pod(p2)
    cache.remove_node(n)
    assert cache.node_count == 0
    assert cache.get_node("node") is None
    assert [p.name for p in cache.pods_on("node")] == ["p1", "p2"]  # a ghost NodeInfo
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.num_nodes() == 0 and snap.get("node") is None
    cache.remove_pod(p1)
    assert "node" in cache._nodes
    cache.remove_pod(p2)
    assert "node" not in cache._nodes


def test_pod_before_its_node() -> None:
    cache = Cache()
    cache.add_pod(pod("p", "late-node"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.num_nodes() == 0  # the NodeInfo has no node yet
    cache.add_node(node("late-node"))
    cache.update_snapshot(snap)
    info = snap.get("late-node")
    assert info is not None and [p.pod.name for p in info.pods] == ["p"]


def test_update_node_keeps_pods_and_changes_allocatable() -> None:
    cache = Cache()
    old = node("node", "1000m", "100m")
    cache.add_node(old)
    cache.add_pod(pod("p", "node"))
    cache.update_node(old, node("node", "2000m", "500m"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    info = snap.get("node")
    assert info is not None
    assert info.allocatable.milli_cpu == 2000 and len(info.pods) == 1


def test_remove_unknown_node_is_a_no_op() -> None:
    cache = Cache()
    cache.remove_node(node("nope"))
    assert cache.node_count == 0


def _image_node(name: str, *images: tuple[list[str], int]) -> Node:
    return make_node(name, status={"images": [{"names": names, "sizeBytes": size} for names, size in images]})


def test_image_states() -> None:
    cache = Cache()
    cache.add_node(_image_node("n1", (["img:1", "img@sha"], 100)))
    snap = Snapshot()
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1 is not None
    assert {k: (v.size, v.num_nodes) for k, v in n1.image_states.items()} == {
        "img:1": (100, 1),
        "img@sha": (100, 1),
    }

    cache.add_node(_image_node("n2", (["img:1"], 100)))
    cache.update_snapshot(snap)
    n2 = snap.get("n2")
    assert n2 is not None and n2.image_states["img:1"].num_nodes == 2
    # As in kube-scheduler, a NodeInfo's summary is computed when that node is re-snapshotted.
    assert n1.image_states["img:1"].num_nodes == 1

    cache.remove_node(_image_node("n2", (["img:1"], 100)))
    cache.add_pod(pod("p", "n1"))  # re-snapshot n1
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1 is not None and n1.image_states["img:1"].num_nodes == 1


# --- UpdateSnapshot (TestSchedulerCache_UpdateSnapshot) -----------------------------------------

NODES = [node(f"test-node{i}") for i in range(10)]
UPDATED_NODES = [node(f"test-node{i}", "2000m", "500m") for i in range(10)]
PODS = [
    make_pod(f"test-pod{i}", namespace="test-ns", uid=f"test-puid{i}", nodeName=f"test-node{i % 10}")
    for i in range(20)
]
UPDATED_PODS = [dataclasses.replace(p, priority=1000) for p in PODS]
AFFINITY_PODS = [
    dataclasses.replace(p, pod_anti_affinity=make_pod("x", affinity=ANTI).pod_anti_affinity) for p in PODS
]

Op = Callable[["Harness"], None]


class Harness:
    def __init__(self) -> None:
        self.cache = Cache()
        self.snapshot = Snapshot()


def add_node(i: int) -> Op:
    def op(h: Harness) -> None:
        h.cache.add_node(NODES[i])

    return op


def remove_node(i: int) -> Op:
    return lambda h: h.cache.remove_node(NODES[i])


def update_node(i: int) -> Op:
    def op(h: Harness) -> None:
        h.cache.update_node(NODES[i], UPDATED_NODES[i])

    return op


def add_pod(i: int) -> Op:
    return lambda h: h.cache.add_pod(PODS[i])


def add_pod_with_affinity(i: int) -> Op:
    return lambda h: h.cache.add_pod(AFFINITY_PODS[i])


def remove_pod(i: int) -> Op:
    return lambda h: h.cache.remove_pod(PODS[i])


def remove_pod_with_affinity(i: int) -> Op:
    return lambda h: h.cache.remove_pod(AFFINITY_PODS[i])


def update_pod(i: int) -> Op:
    return lambda h: h.cache.update_pod(PODS[i], UPDATED_PODS[i])


def assume_pod(i: int) -> Op:
    def op(h: Harness) -> None:
        h.cache.assume_pod(PODS[i])

    return op


def forget_pod(i: int) -> Op:
    return lambda h: h.cache.forget_pod(PODS[i])


def update_snapshot() -> Op:
    return lambda h: h.cache.update_snapshot(h.snapshot)


SNAPSHOT_CASES: list[tuple[str, list[Op], list[int], int]] = [
    ("Empty cache", [], [], 0),
    ("Single node", [add_node(1)], [1], 0),
    (
        "Add node, remove it, add it again",
        [add_node(1), update_snapshot(), remove_node(1), add_node(1)],
        [1],
        0,
    ),
    (
        "Add node and remove it in the same cycle, add it again",
        [add_node(1), update_snapshot(), add_node(2), remove_node(1)],
        [2],
        0,
    ),
    (
        "Add a few nodes, and snapshot in the middle",
        [
            add_node(0),
            update_snapshot(),
            add_node(1),
            update_snapshot(),
            add_node(2),
            update_snapshot(),
            add_node(3),
        ],
        [3, 2, 1, 0],
        0,
    ),
    (
        "Add a few nodes, and snapshot in the end",
        [add_node(0), add_node(2), add_node(5), add_node(6)],
        [6, 5, 2, 0],
        0,
    ),
    (
        "Update some nodes",
        [add_node(0), add_node(1), add_node(5), update_snapshot(), update_node(1)],
        [1, 5, 0],
        0,
    ),
    (
        "Add a few nodes, and remove all of them",
        [
            add_node(0),
            add_node(2),
            add_node(5),
            add_node(6),
            update_snapshot(),
            remove_node(0),
            remove_node(2),
            remove_node(5),
            remove_node(6),
        ],
        [],
        0,
    ),
    (
        "Add a few nodes, and remove some of them",
        [
            add_node(0),
            add_node(2),
            add_node(5),
            add_node(6),
            update_snapshot(),
            remove_node(0),
            remove_node(6),
        ],
        [5, 2],
        0,
    ),
    (
        "Add a few nodes, remove all of them, and add more",
        [
            add_node(2),
            add_node(5),
            add_node(6),
            update_snapshot(),
            remove_node(2),
            remove_node(5),
            remove_node(6),
            update_snapshot(),
            add_node(7),
            add_node(9),
        ],
        [9, 7],
        0,
    ),
    (
        "Update nodes in particular order",
        [add_node(8), update_node(2), update_node(8), update_snapshot(), add_node(1)],
        [1, 8, 2],
        0,
    ),
    (
        "Add some nodes and some pods",
        [add_node(0), add_node(2), add_node(8), update_snapshot(), add_pod(8), add_pod(2)],
        [2, 8, 0],
        0,
    ),
    (
        "Updating a pod moves its node to the head",
        [add_node(0), add_pod(0), add_node(2), add_node(4), update_pod(0)],
        [0, 4, 2],
        0,
    ),
    ("Add pod before its node", [add_node(0), add_pod(1), update_pod(1), add_node(1)], [1, 0], 0),
    (
        "Remove node before its pods",
        [
            add_node(0),
            add_node(1),
            add_pod(1),
            add_pod(11),
            update_snapshot(),
            remove_node(1),
            update_snapshot(),
            update_pod(1),
            update_pod(11),
            remove_pod(1),
            remove_pod(11),
        ],
        [0],
        0,
    ),
    (
        "Add Pods with affinity",
        [add_node(0), add_pod_with_affinity(0), update_snapshot(), add_node(1)],
        [1, 0],
        1,
    ),
    (
        "Add multiple nodes with pods with affinity",
        [
            add_node(0),
            add_pod_with_affinity(0),
            update_snapshot(),
            add_node(1),
            add_pod_with_affinity(1),
            update_snapshot(),
        ],
        [1, 0],
        2,
    ),
    (
        "Add then Remove pods with affinity",
        [
            add_node(0),
            add_node(1),
            add_pod_with_affinity(0),
            update_snapshot(),
            remove_pod_with_affinity(0),
            update_snapshot(),
        ],
        [0, 1],
        0,
    ),
    (
        "Assume and forget pods",
        [
            add_node(0),
            add_node(2),
            add_node(4),
            update_snapshot(),
            assume_pod(4),
            assume_pod(0),
            forget_pod(0),
        ],
        [0, 4, 2],
        0,
    ),
]


@pytest.mark.parametrize(
    ("operations", "expected", "with_affinity"),
    [c[1:] for c in SNAPSHOT_CASES],
    ids=[c[0] for c in SNAPSHOT_CASES],
)
def test_update_snapshot(operations: list[Op], expected: list[int], with_affinity: int) -> None:
    h = Harness()
    for op in operations:
        op(h)
    # The cache's recency list, most recently changed first.
    assert list(reversed(h.cache._nodes)) == [f"test-node{i}" for i in expected]
    assert len(h.snapshot.have_pods_with_affinity_list()) == with_affinity
    h.cache.update_snapshot(h.snapshot)
    compare_cache_with_snapshot(h.cache, h.snapshot)


def compare_cache_with_snapshot(cache: Cache, snapshot: Snapshot) -> None:
    """compareCacheWithNodeInfoSnapshot: same NodeInfos, lists in tree order, same objects."""
    live = {name: info for name, info in cache._nodes.items() if info.node is not None}
    assert set(snapshot.node_info_map) == set(live)
    for name, info in live.items():
        got = snapshot.node_info_map[name]
        assert got is not info  # a copy
        assert (got.node, got.requested, got.non_zero_requested, got.generation) == (
            info.node,
            info.requested,
            info.non_zero_requested,
            info.generation,
        )
        assert [p.pod.uid for p in got.pods] == [p.pod.uid for p in info.pods]
    order = cache._tree.list()
    assert [n.name for n in snapshot.node_info_list] == order
    assert all(snapshot.node_info_list[i] is snapshot.node_info_map[n] for i, n in enumerate(order))
    assert snapshot.have_pods_with_affinity_list() == [
        n for n in snapshot.node_info_list if n.pods_with_affinity
    ]
    assert snapshot.have_pods_with_required_anti_affinity_list() == [
        n for n in snapshot.node_info_list if n.pods_with_required_anti_affinity
    ]
    assert snapshot.num_nodes() == cache.node_count


def test_snapshot_is_incremental() -> None:
    # Only NodeInfos changed since the snapshot's generation are copied, in place.
    h = Harness()
    for i in range(3):
        h.cache.add_node(NODES[i])
    h.cache.update_snapshot(h.snapshot)
    before = {n.name: n for n in h.snapshot.list()}
    gens = {n.name: n.generation for n in h.snapshot.list()}
    h.cache.add_pod(PODS[1])
    h.cache.update_snapshot(h.snapshot)
    after = {n.name: n for n in h.snapshot.list()}
    assert all(after[k] is before[k] for k in before)  # same objects: list positions stay valid
    assert after["test-node0"].generation == gens["test-node0"]
    assert after["test-node1"].generation > gens["test-node1"]
    assert [p.pod.name for p in after["test-node1"].pods] == ["test-pod1"]
    assert h.snapshot.generation == after["test-node1"].generation


def test_snapshot_is_isolated_from_later_cache_changes() -> None:
    h = Harness()
    h.cache.add_node(NODES[0])
    h.cache.update_snapshot(h.snapshot)
    h.cache.add_pod(PODS[0])
    info = h.snapshot.get("test-node0")
    assert info is not None and info.pods == []  # not until the next update


def test_affinity_lists_follow_pods() -> None:
    h = Harness()
    for i in range(3):
        h.cache.add_node(NODES[i])
    h.cache.update_snapshot(h.snapshot)
    assert h.snapshot.have_pods_with_affinity_list() == []
    h.cache.add_pod(AFFINITY_PODS[2])
    h.cache.add_pod(AFFINITY_PODS[0])
    h.cache.update_snapshot(h.snapshot)
    assert [n.name for n in h.snapshot.have_pods_with_affinity_list()] == ["test-node0", "test-node2"]
    assert [n.name for n in h.snapshot.have_pods_with_required_anti_affinity_list()] == [
        "test-node0",
        "test-node2",
    ]
    h.cache.remove_pod(AFFINITY_PODS[0])
    h.cache.update_snapshot(h.snapshot)
    assert [n.name for n in h.snapshot.have_pods_with_affinity_list()] == ["test-node2"]


def test_node_list_follows_zone_round_robin() -> None:
    h = Harness()
    for name, zone in [("a1", "A"), ("a2", "A"), ("b1", "B"), ("a3", "A"), ("b2", "B")]:
        h.cache.add_node(node(name, **{LABEL_ZONE: zone}))
    h.cache.update_snapshot(h.snapshot)
    assert [n.name for n in h.snapshot.list()] == ["a1", "b1", "a2", "b2", "a3"]


def test_zone_change_alone_keeps_the_snapshot_order() -> None:
    # kube-scheduler re-reads the tree order only when a node was added or removed.
    h = Harness()
    for name, zone in [("a", "A"), ("b", "B"), ("c", "A")]:
        h.cache.add_node(node(name, **{LABEL_ZONE: zone}))
    h.cache.update_snapshot(h.snapshot)
    assert [n.name for n in h.snapshot.list()] == ["a", "b", "c"]
    h.cache.update_node(None, node("a", **{LABEL_ZONE: "B"}))
    h.cache.update_snapshot(h.snapshot)
    assert [n.name for n in h.snapshot.list()] == ["a", "b", "c"]
    info = h.snapshot.get("a")
    assert info is not None and info.node is not None and info.node.labels[LABEL_ZONE] == "B"
    h.cache.add_node(node("d", **{LABEL_ZONE: "C"}))
    h.cache.update_snapshot(h.snapshot)
    assert [n.name for n in h.snapshot.list()] == ["c", "b", "d", "a"]  # zones A=[c], B=[b, a], C=[d]
