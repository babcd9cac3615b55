"""NodeName (``plugins/nodename/node_name.go``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.events import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    node_actions,
)
from app.framework.interfaces import EnqueueExtensions, FilterPlugin
from app.framework.status import Status, unresolvable
from app.framework.types import NodeInfo

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """``nodename.Fits``: the pod names no node, or names this one."""
    return not pod.node_name or pod.node_name == node_info.name


class NodeName(FilterPlugin, EnqueueExtensions):
    """Rejects every node but the one in ``spec.nodeName``, when set."""

    name: ClassVar[str] = "NodeName"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """UnschedulableAndUnresolvable when the pod asks for another node."""
        wanted = pod.node_name
        if not wanted or wanted == node_info.name:
            return None
        return unresolvable(ERR_REASON)

    def filter_all(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> list[Status | None] | None:
        """Nothing to check for a pod that names no node."""
        wanted = pod.node_name
        if not wanted:
            return None
        return [None if info.name == wanted else unresolvable(ERR_REASON) for info in nodes]

    def passes_every_node(self, pod: Pod) -> bool:
        """A pod that names no node fits every node; kube's NodeName has no PreFilter to Skip with, so
        it calls Filter on every node and gets Success, which no result can tell from not calling it."""
        return not pod.node_name

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Only a node added can be the one the pod names; no hint: retried after backoff."""
        return [ClusterEventWithHint(ClusterEvent(NODE, node_actions(ActionType.ADD)))]
