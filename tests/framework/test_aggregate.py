"""Per-node sums kept across cycles: a key seen twice is kept, kept sums follow the change log, and
anything that reorders the nodes (or a log longer than replaying is worth) starts them afresh."""

from __future__ import annotations

from app.framework.aggregate import MAX_AGGREGATES, ChangeFeed, NodeAggregate
from app.framework.types import NodeInfo
from builders import make_node, make_pod


class PodsPerZone(NodeAggregate[tuple[str, int]]):
    """Pods per zone label, counting how often a node's contribution is computed."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.computed = 0

    def contribution(self, node_info: NodeInfo) -> tuple[str, int] | None:
        self.computed += 1
        node = node_info.node
        zone = node.labels.get("zone") if node is not None else None
        return None if zone is None else (zone, len(node_info.pods))

    def add(self, contribution: tuple[str, int]) -> None:
        zone, n = contribution
        self.counts[zone] = self.counts.get(zone, 0) + n

    def subtract(self, contribution: tuple[str, int]) -> None:
        zone, n = contribution
        self.counts[zone] -= n


def infos(*zones: str | None) -> list[NodeInfo]:
    out = []
    for i, zone in enumerate(zones):
        labels = {"zone": zone} if zone is not None else {}
        out.append(NodeInfo(make_node(f"n{i}", labels=labels)))
    return out


def overwrite(info: NodeInfo, zone: str | None = None, pods: int = 0) -> None:
    """What the cache does to a snapshot entry: new content in the same NodeInfo."""
    labels = {"zone": zone} if zone is not None else {}
    fresh = NodeInfo(make_node(info.name, labels=labels), [])
    for j in range(pods):
        fresh.add_pod(make_pod(f"{info.name}-p{j}", nodeName=info.name))
    for slot in NodeInfo.__slots__:
        setattr(info, slot, getattr(fresh, slot))


def test_a_key_seen_once_is_summed_but_not_kept() -> None:
    feed, nodes = ChangeFeed(), infos("a", "b", "a")
    first = feed.aggregate("k", PodsPerZone, lambda: nodes)
    assert first.counts == {"a": 0, "b": 0}
    second = feed.aggregate("k", PodsPerZone, lambda: nodes)
    assert second is not first  # summed again, and kept from now on
    assert feed.aggregate("k", PodsPerZone, lambda: nodes) is second


def test_a_kept_sum_recomputes_only_the_nodes_changed_since() -> None:
    feed, nodes = ChangeFeed(), infos("a", "b", "a", None)
    feed.aggregate("k", PodsPerZone, lambda: nodes)
    kept = feed.aggregate("k", PodsPerZone, lambda: nodes)
    assert kept.computed == 4
    overwrite(nodes[0], "a", pods=2)
    feed.record(nodes[0], len(nodes))
    overwrite(nodes[3], "b", pods=1)  # a node gains the label: it counts from now on
    feed.record(nodes[3], len(nodes))
    overwrite(nodes[1], None)  # and one loses it
    feed.record(nodes[1], len(nodes))
    listed: list[int] = []

    def listing() -> list[NodeInfo]:
        listed.append(1)
        return nodes

    assert feed.aggregate("k", PodsPerZone, listing).counts == {"a": 2, "b": 1}
    assert kept.computed == 4 + 3
    assert not listed  # a kept sum does not list the nodes
    # Nothing changed since: nothing recomputed.
    assert feed.aggregate("k", PodsPerZone, lambda: nodes).counts == {"a": 2, "b": 1}
    assert kept.computed == 7


def test_reset_and_a_long_log_start_sums_afresh() -> None:
    feed, nodes = ChangeFeed(), infos("a", "b")
    feed.aggregate("k", PodsPerZone, lambda: nodes)
    kept = feed.aggregate("k", PodsPerZone, lambda: nodes)
    feed.reset()
    after_reset = feed.aggregate("k", PodsPerZone, lambda: nodes)
    assert after_reset is not kept
    assert feed.aggregate("k", PodsPerZone, lambda: nodes) is after_reset  # still seen: kept again at once
    for _ in range(2 * len(nodes) + 65):
        overwrite(nodes[0], "a", pods=1)
        feed.record(nodes[0], len(nodes))
    fresh = feed.aggregate("k", PodsPerZone, lambda: nodes)
    assert fresh is not after_reset and fresh.counts == {"a": 1, "b": 0}


def test_least_recently_used_sums_are_dropped_first() -> None:
    feed, nodes = ChangeFeed(), infos("a")
    for key in range(MAX_AGGREGATES + 1):
        feed.aggregate(key, PodsPerZone, lambda: nodes)
    kept = {key: feed.aggregate(key, PodsPerZone, lambda: nodes) for key in range(MAX_AGGREGATES + 1)}
    # Key 0 was kept first and used least recently: dropped when the last one came in.
    assert feed.aggregate(0, PodsPerZone, lambda: nodes) is not kept[0]
    assert feed.aggregate(MAX_AGGREGATES, PodsPerZone, lambda: nodes) is kept[MAX_AGGREGATES]
