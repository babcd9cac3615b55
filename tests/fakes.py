"""A minimal in-memory Handle for unit tests of plugin logic."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from app.api.objects import Node, Pod
from app.framework.aggregate import A, ChangeFeed
from app.framework.status import Status
from app.framework.types import NodeInfo, PodInfo


class FakeSnapshot:
    """A fixed list of NodeInfos."""

    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self._nodes = list(nodes)
        self._by_name = {n.name: n for n in self._nodes}
        self._changes = ChangeFeed()

    def list(self) -> list[NodeInfo]:
        return self._nodes

    def get(self, name: str) -> NodeInfo | None:
        return self._by_name.get(name)

    def have_pods_with_affinity_list(self) -> list[NodeInfo]:
        return [n for n in self._nodes if n.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> list[NodeInfo]:
        return [n for n in self._nodes if n.pods_with_required_anti_affinity]

    def num_nodes(self) -> int:
        return len(self._nodes)

    def aggregate(
        self, key: Hashable, factory: Callable[[], A], candidates: Callable[[], list[NodeInfo]] | None = None
    ) -> A:
        return self._changes.aggregate(key, factory, self.list if candidates is None else candidates)


class FakeObjects:
    """Cluster objects by kind."""

    def __init__(self, objects: Mapping[str, list[Mapping[str, Any]]] | None = None) -> None:
        self._objects = objects or {}

    def list(self, kind: str, namespace: str) -> list[Mapping[str, Any]]:
        return [
            o
            for o in self._objects.get(kind, [])
            if o.get("metadata", {}).get("namespace", "default") == namespace
        ]

    def list_cluster(self, kind: str) -> list[Mapping[str, Any]]:
        return list(self._objects.get(kind, []))


class RecordingBinder:
    """Records binds instead of calling the API server."""

    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        self.bound.append((pod.key, node_name))
        return None


class FakeHandle:
    """A Handle over a fixed snapshot."""

    def __init__(
        self, nodes: Iterable[NodeInfo] = (), objects: FakeObjects | None = None, parallelism: int = 16
    ) -> None:
        self.snapshot = FakeSnapshot(nodes)
        self.objects = objects or FakeObjects()
        self.binder = RecordingBinder()
        self.parallelism = parallelism


def node_info(node: Node, *pods: Pod) -> NodeInfo:
    """A NodeInfo holding ``pods``."""
    return NodeInfo(node, [PodInfo(p) for p in pods])
