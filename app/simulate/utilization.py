"""Per-node utilization after a ``berth simulate`` run: requested against allocatable, from the
engine's cache (running pods plus every pod the run placed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.api.objects import Node
from app.backend.cache.snapshot import Snapshot
from app.framework.types import NodeInfo
from app.scheduler.scheduler import Engine

__all__ = ["CPU", "MEMORY", "PODS", "NodeUsage", "ResourceUsage", "node_usage", "node_utilization"]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"


@dataclass(slots=True, frozen=True)
class ResourceUsage:
    """One resource of one node: cpu in millicores, memory in bytes, pods and extended ones as counts."""

    requested: int
    allocatable: int

    @property
    def fraction(self) -> float:
        """requested / allocatable (0 when nothing is allocatable; above 1 for an overcommitted node)."""
        return self.requested / self.allocatable if self.allocatable else 0.0


@dataclass(slots=True)
class NodeUsage:
    """A node's cpu, memory, pods and extended resources (those its allocatable lists), in that order."""

    name: str
    resources: dict[str, ResourceUsage]


def _usage(info: NodeInfo) -> dict[str, ResourceUsage]:
    requested, allocatable = info.requested, info.allocatable
    resources = {
        CPU: ResourceUsage(requested.milli_cpu, allocatable.milli_cpu),
        MEMORY: ResourceUsage(requested.memory, allocatable.memory),
        PODS: ResourceUsage(len(info.pods), allocatable.allowed_pod_number),
    }
    for name in sorted(allocatable.scalar):
        resources[name] = ResourceUsage(requested.scalar.get(name, 0), allocatable.scalar[name])
    return resources


def node_usage(name: str, info: NodeInfo) -> NodeUsage:
    """The usage of one node as ``info`` (a cache or snapshot NodeInfo) holds it."""
    return NodeUsage(name, _usage(info))


def node_utilization(engine: Engine, nodes: Sequence[Node]) -> list[NodeUsage]:
    """The usage of ``nodes`` (in their order) as ``engine``'s cache holds it now."""
    snapshot = Snapshot()
    engine.cache.update_snapshot(snapshot)
    usages = []
    for node in nodes:
        info = snapshot.get(node.name)
        if info is not None:
            usages.append(node_usage(node.name, info))
    return usages
