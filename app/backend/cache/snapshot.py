"""The per-cycle snapshot of the cache (``backend/cache/snapshot.go``)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Hashable

from app.framework.aggregate import A, ChangeFeed
from app.framework.types import NodeInfo


class Snapshot:
    """NodeInfos by name and in node-tree order, plus the affinity lists.

    ``changes`` logs the entries the cache overwrote in place, so that plugins can keep per-node
    sums across cycles (:meth:`aggregate`).
    """

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: builtins.list[NodeInfo] = []
        # Built on first use after a change (None until then): in most cycles no plugin asks.
        self._with_affinity: builtins.list[NodeInfo] | None = []
        self._with_required_anti_affinity: builtins.list[NodeInfo] | None = []
        self.generation = 0
        self.changes = ChangeFeed()

    def list(self) -> builtins.list[NodeInfo]:
        """All nodes in node-tree order."""
        return self.node_info_list

    def get(self, name: str) -> NodeInfo | None:
        """One node by name."""
        return self.node_info_map.get(name)

    def affinity_changed(self, affinity: bool, required_anti_affinity: bool) -> None:
        """Whether some node gained its first or lost its last pod with affinity, with required
        anti-affinity: the lists of such nodes are rebuilt when next asked for."""
        if affinity:
            self._with_affinity = None
        if required_anti_affinity:
            self._with_required_anti_affinity = None

    def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]:
        """Nodes with pods that have (anti-)affinity, in node-tree order."""
        if self._with_affinity is None:
            self._with_affinity = [n for n in self.node_info_list if n.pods_with_affinity]
        return self._with_affinity

    def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]:
        """Nodes with pods that have required anti-affinity, in node-tree order."""
        if self._with_required_anti_affinity is None:
            self._with_required_anti_affinity = [
                n for n in self.node_info_list if n.pods_with_required_anti_affinity
            ]
        return self._with_required_anti_affinity

    def num_nodes(self) -> int:
        """How many nodes the snapshot holds."""
        return len(self.node_info_list)

    def aggregate(
        self,
        key: Hashable,
        factory: Callable[[], A],
        candidates: Callable[[], builtins.list[NodeInfo]] | None = None,
    ) -> A:
        """The per-node sum named ``key`` over every node, kept across cycles (:class:`ChangeFeed`).

        ``candidates``: lists the only nodes contributing now (such as
        :meth:`have_pods_with_affinity_list`), to build the sum from instead of every node.
        """
        return self.changes.aggregate(key, factory, self.list if candidates is None else candidates)
