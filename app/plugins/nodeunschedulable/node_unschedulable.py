"""NodeUnschedulable (``plugins/nodeunschedulable/node_unschedulable.go``)."""

from __future__ import annotations

from typing import ClassVar

from app.api.objects import TAINT_NODE_UNSCHEDULABLE, Pod, Taint
from app.framework.cycle_state import CycleState
from app.framework.interfaces import FilterPlugin
from app.framework.status import Status, error, unresolvable
from app.framework.types import NodeInfo

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"

# The taint a pod must tolerate to land on a cordoned node (kube-scheduler builds it per call).
_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")


class NodeUnschedulable(FilterPlugin):
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
