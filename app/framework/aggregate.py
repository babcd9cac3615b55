"""Sums over the snapshot's nodes, kept current from one scheduling cycle to the next.

kube-scheduler recomputes PodTopologySpread's matching-pod counts and InterPodAffinity's topology
scores over every node, and every pod on it, in each attempt. Between two attempts only the nodes
the cache changed differ, usually one: the node the previous pod went to. So berth keeps such sums
across cycles: a :class:`NodeAggregate` remembers what each node contributed, and the next time it
is asked for, it swaps in the contributions of the nodes changed since. The sum is the same as a
full pass; an attempt costs O(changed nodes) instead of O(nodes x pods).

The snapshot feeds the changes (:meth:`ChangeFeed.record`, :meth:`ChangeFeed.reset`); plugins ask
for an aggregate by a key naming everything its contributions depend on besides the node
(:meth:`ChangeFeed.aggregate`). A key seen once is summed without being kept, so that pods whose
keys never repeat (every pod with unique labels) do not pay for bookkeeping they cannot reuse.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

from app.framework.types import NodeInfo

C = TypeVar("C")
A = TypeVar("A", bound="NodeAggregate[Any]")

#: How many aggregates a snapshot keeps (least recently used first out), and how many keys it
#: remembers having seen once.
MAX_AGGREGATES = 32
MAX_SEEN_KEYS = 256


class NodeAggregate(Generic[C]):
    """A sum of per-node contributions; subclasses say what a node contributes and how to (un)add it.

    A contribution must be computed from the NodeInfo alone (and the aggregate's own parameters),
    since it is replayed when the node changes: :meth:`subtract` must undo exactly what :meth:`add`
    did with the same contribution.
    """

    __slots__ = ()

    def contribution(self, node_info: NodeInfo) -> C | None:
        """What ``node_info`` adds to the sum, or None for nothing."""
        raise NotImplementedError

    def add(self, contribution: C) -> None:
        """Add one node's contribution."""
        raise NotImplementedError

    def subtract(self, contribution: C) -> None:
        """Take back a contribution added before."""
        raise NotImplementedError

    def add_all(self, nodes: Sequence[NodeInfo], kept: dict[str, C] | None = None) -> None:
        """Add every node's contribution, recording them by node name in ``kept`` if given."""
        contribution, add = self.contribution, self.add
        for node_info in nodes:
            c = contribution(node_info)
            if c is not None:
                add(c)
                if kept is not None:
                    kept[node_info.name] = c


class _Kept:
    """An aggregate with its per-node contributions and how far into the change log it has read."""

    __slots__ = ("aggregate", "by_node", "position")

    def __init__(self, aggregate: NodeAggregate[Any], by_node: dict[str, Any], position: int) -> None:
        self.aggregate = aggregate
        self.by_node = by_node
        self.position = position

    def catch_up(self, log: Sequence[NodeInfo]) -> None:
        """Replace the contributions of the nodes logged since ``position``."""
        agg, by_node = self.aggregate, self.by_node
        for node_info in log[self.position :]:
            name = node_info.name
            old = by_node.pop(name, None)
            if old is not None:
                agg.subtract(old)
            new = agg.contribution(node_info)
            if new is not None:
                agg.add(new)
                by_node[name] = new
        self.position = len(log)


class ChangeFeed:
    """The snapshot's log of NodeInfos changed in place, and the aggregates kept over its nodes.

    Not thread-safe, like the snapshot it belongs to: one scheduling cycle at a time.
    """

    __slots__ = ("_kept", "_log", "_seen")

    def __init__(self) -> None:
        self._log: list[NodeInfo] = []
        self._kept: OrderedDict[Hashable, _Kept] = OrderedDict()
        self._seen: OrderedDict[Hashable, None] = OrderedDict()

    def record(self, node_info: NodeInfo, num_nodes: int) -> None:
        """``node_info`` (an entry of the snapshot's node list) was overwritten with newer content.

        The log is bounded: once it outgrows the node list, replaying it would cost more than
        summing afresh, so everything is forgotten instead.
        """
        self._log.append(node_info)
        if len(self._log) > 2 * num_nodes + 64:
            self.reset()

    def reset(self) -> None:
        """Nodes were added, removed or reordered: every aggregate is summed afresh when next asked for."""
        self._log.clear()
        self._kept.clear()

    def aggregate(
        self, key: Hashable, factory: Callable[[], A], nodes: Callable[[], Sequence[NodeInfo]]
    ) -> A:
        """The aggregate for ``key`` over the nodes ``nodes()`` lists, up to date.

        ``nodes()`` gives the snapshot's nodes, or those of them that contribute now (a node outside
        them that starts contributing later is changed, so logged); it is only called to build a sum. ``key`` must name everything
        the contributions depend on other than the NodeInfo, and ``factory`` build an empty
        aggregate for it. The caller may read the result but not change it.
        """
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            kept.catch_up(self._log)
            return kept.aggregate  # type: ignore[return-value]
        aggregate = factory()
        if key not in self._seen:
            self._seen[key] = None
            if len(self._seen) > MAX_SEEN_KEYS:
                self._seen.popitem(last=False)
            aggregate.add_all(nodes())
            return aggregate
        by_node: dict[str, Any] = {}
        aggregate.add_all(nodes(), by_node)
        self._kept[key] = _Kept(aggregate, by_node, len(self._log))
        if len(self._kept) > MAX_AGGREGATES:
            self._kept.popitem(last=False)
        return aggregate
