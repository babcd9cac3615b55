"""Scoring extended resources backed by DRA (DRAExtendedResource, ``resource_allocation.go``).

A node that lists an extended resource in its allocatable is scored on it as always. A node that
does not, for a resource a DeviceClass backs, is scored on the class's devices instead: its
"allocatable" is how many devices published for the node match the class's selectors, its
"allocated" how many of those are in use (``calculateDRAResourceTotals``). Only reachable when
``scoringStrategy.resources`` (or BalancedAllocation's ``resources``) lists such a resource.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.api.objects import Node
from app.api.resource import Device, DeviceClass, ResourceSlice
from app.framework.dra import AllocatedState, DRAStore
from app.plugins.dynamicresources.allocator import node_matches
from app.plugins.dynamicresources.cel import CelCache, device_verdict

ClassResolver = Callable[[str], DeviceClass | None]


class DRAScoreState:
    """``draPreScoreState``: the devices in use and every ResourceSlice, gathered once per cycle."""

    __slots__ = ("_cel", "_failed", "_resolve", "_totals", "allocated", "slices")

    def __init__(
        self, allocated: AllocatedState, slices: list[ResourceSlice], resolve: ClassResolver, cel: CelCache
    ):
        self.allocated = allocated
        self.slices = slices
        self._resolve = resolve
        self._cel = cel
        self._totals: dict[tuple[str, str], tuple[int, int]] = {}
        self._failed = False

    def totals(self, node: Node | None, resource: str) -> tuple[int, int]:
        """``calculateDRAExtendedResourceAllocatableRequest``: (devices, devices in use) of the class
        backing ``resource`` on ``node``; (0, 0) when none backs it or a selector fails."""
        device_class = self._resolve(resource)
        if device_class is None or node is None:
            return 0, 0
        key = (node.name, device_class.name)
        found = self._totals.get(key)
        if found is None:
            self._failed = False
            found = self._totals[key] = self._count(node, device_class)
        return found

    def _count(self, node: Node, device_class: DeviceClass) -> tuple[int, int]:
        capacity = allocated = 0
        for resource_slice in self.slices:
            if resource_slice.per_device_node_selection:
                devices = [
                    d
                    for d in resource_slice.devices
                    if d.all_nodes
                    or (d.node_name and d.node_name == node.name)
                    or (
                        d.node_selector is not None
                        and node_matches(node, d.node_name, d.all_nodes, d.node_selector)
                    )
                ]
            else:
                if (
                    not resource_slice.all_nodes
                    and resource_slice.node_name != node.name
                    and resource_slice.node_selector is not None
                ):
                    if not node_matches(
                        node, resource_slice.node_name, resource_slice.all_nodes, resource_slice.node_selector
                    ):
                        continue
                elif (
                    not resource_slice.all_nodes
                    and resource_slice.node_name
                    and resource_slice.node_name != node.name
                ):
                    continue
                devices = resource_slice.devices
            for device in devices:
                if not self._matches(resource_slice.driver, device, device_class.selectors):
                    if self._failed:
                        return 0, 0  # kube logs the selector's error and leaves the resource out
                    continue
                capacity += 1
                if self.allocated.is_allocated((resource_slice.driver, resource_slice.pool, device.name)):
                    allocated += 1
        return capacity, allocated

    def _matches(self, driver: str, device: Device, selectors: Sequence[str]) -> bool:
        """``deviceMatchesClass``: every selector true; a compile or runtime error sets ``_failed``."""
        for expression in selectors:
            verdict = device_verdict(self._cel, expression, driver, device)
            if isinstance(verdict, str):
                self._failed = True
                return False
            if not verdict:
                return False
        return True


def dra_score_state(
    store: DRAStore | None, resolve: ClassResolver | None, names: Sequence[str], cel: CelCache
) -> DRAScoreState | None:
    """``getDRAPreScoredParams``: the state when one of the scored resources is backed by a class."""
    if store is None or resolve is None or not any(resolve(name) is not None for name in names):
        return None
    return DRAScoreState(store.allocated_state(), store.list_slices(), resolve, cel)
