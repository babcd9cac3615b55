"""NodeUnschedulable (``plugins/nodeunschedulable/node_unschedulable.go``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from app.api.objects import TAINT_NODE_UNSCHEDULABLE, Pod, Taint
from app.framework.cycle_state import CycleState
from app.framework.events import ClusterEventWithHint, QueueingHint, as_nodes, as_pods
from app.framework.interfaces import EnqueueExtensions, FilterPlugin
from app.framework.status import Status, error, unresolvable
from app.framework.types import NodeInfo
from app.plugins.helper.node_filters import filter_flagged_nodes
from app.plugins.helper.taint_events import taint_events

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"

# The taint a pod must tolerate to land on a cordoned node (kube-scheduler builds it per call).
_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")


class NodeUnschedulable(FilterPlugin, EnqueueExtensions):
    """Rejects nodes with ``spec.unschedulable`` unless the pod tolerates the unschedulable taint."""

    name: ClassVar[str] = "NodeUnschedulable"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """UnschedulableAndUnresolvable for a cordoned node the pod does not tolerate."""
        node = node_info.node
        if node is None:
            return error("node not found")
        if not node.unschedulable:
            return None
        for toleration in pod.tolerations:
            if toleration.tolerates(_UNSCHEDULABLE_TAINT):
                return None
        return unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_all(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> list[Status | None] | None:
        """Only cordoned nodes (and missing ones) to check."""
        return filter_flagged_nodes(self, "unschedulable", state, pod, nodes)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or uncordoned; the pod getting a toleration."""
        return taint_events(
            self.is_schedulable_after_node_change, self.is_schedulable_after_pod_toleration_change
        )

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when ``pod`` itself now tolerates the unschedulable taint.

        Tolerations can only be added, and a pod this plugin rejected did not tolerate it before.
        """
        _, modified = as_pods(old, new)
        if modified is None or modified.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        if any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in modified.tolerations):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a schedulable node added, or a node uncordoned."""
        original, modified = as_nodes(old, new)
        if modified is None:
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE_SKIP if modified.unschedulable else QueueingHint.QUEUE
        if original.unschedulable and not modified.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
