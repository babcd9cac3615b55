"""SchedulingGates (``plugins/schedulinggates/scheduling_gates.go``)."""

from __future__ import annotations

from typing import ClassVar

from app.api.objects import Pod
from app.framework.events import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    as_pods,
    queueing_hints_enabled,
)
from app.framework.interfaces import EnqueueExtensions, PreEnqueuePlugin
from app.framework.status import Status, unresolvable


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    """Keeps a pod out of the active queue while ``spec.schedulingGates`` is non-empty."""

    name: ClassVar[str] = "SchedulingGates"

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """None without gates; else UnschedulableAndUnresolvable naming the gates."""
        gates = pod.scheduling_gates
        if not gates:
            return None
        # Go formats the []string with %v: "[a b]".
        return unresolvable(f"waiting for scheduling gates: [{' '.join(gates)}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Only the pod losing its last gate ungates it (nothing without QueueingHints: an update
        of a gated pod reruns PreEnqueue anyway)."""
        if not queueing_hints_enabled():
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_update_pod_scheduling_gates_eliminated,
            )
        ]

    def is_schedulable_after_update_pod_scheduling_gates_eliminated(
        self, pod: Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the updated pod is ``pod`` itself."""
        _, modified = as_pods(old, new)
        if modified is None or modified.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
