"""The per-cycle snapshot of the cache (``backend/cache/snapshot.go``)."""

from __future__ import annotations

import builtins

from app.framework.types import NodeInfo


class Snapshot:
    """NodeInfos by name and in node-tree order, plus the affinity lists."""

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: builtins.list[NodeInfo] = []
        self.have_pods_with_affinity: builtins.list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity: builtins.list[NodeInfo] = []
        self.generation = 0

    def list(self) -> builtins.list[NodeInfo]:
        """All nodes in node-tree order."""
        return self.node_info_list

    def get(self, name: str) -> NodeInfo | None:
        """One node by name."""
        return self.node_info_map.get(name)

    def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]:
        """Nodes with pods that have (anti-)affinity."""
        return self.have_pods_with_affinity

    def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]:
        """Nodes with pods that have required anti-affinity."""
        return self.have_pods_with_required_anti_affinity

    def num_nodes(self) -> int:
        """How many nodes the snapshot holds."""
        return len(self.node_info_list)
