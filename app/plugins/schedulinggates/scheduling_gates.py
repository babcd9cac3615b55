"""SchedulingGates (``plugins/schedulinggates/scheduling_gates.go``)."""

from __future__ import annotations

from typing import ClassVar

from app.api.objects import Pod
from app.framework.interfaces import PreEnqueuePlugin
from app.framework.status import Status, unresolvable


class SchedulingGates(PreEnqueuePlugin):
    """Keeps a pod out of the active queue while ``spec.schedulingGates`` is non-empty."""

    name: ClassVar[str] = "SchedulingGates"

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """None without gates; else UnschedulableAndUnresolvable naming the gates."""
        gates = pod.scheduling_gates
        if not gates:
            return None
        # Go formats the []string with %v: "[a b]".
        return unresolvable(f"waiting for scheduling gates: [{' '.join(gates)}]")
