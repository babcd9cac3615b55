"""Filtering many nodes at once for plugins that have nothing to check on most of them."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import FilterPlugin
from app.framework.status import Status
from app.framework.types import NodeInfo


def filter_flagged_nodes(
    plugin: FilterPlugin, field: str, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
) -> list[Status | None] | None:
    """:meth:`~FilterPlugin.filter_all` for a plugin that passes every node whose Node ``field``
    is empty (``taints``, ``unschedulable``): only the other nodes, and NodeInfos without a node,
    are asked to its ``filter``; None when there are none."""
    flagged = attrgetter(field)
    if not any(info.node is None or flagged(info.node) for info in nodes):
        return None
    verdict = plugin.filter
    return [verdict(state, pod, info) if info.node is None or flagged(info.node) else None for info in nodes]
