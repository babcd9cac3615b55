"""A pod in the scheduling queue, with what the queue tracks about it (``framework.QueuedPodInfo``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app import metrics
from app.framework.events import ClusterEvent
from app.framework.interfaces import QueuedPodInfo as FrameworkQueuedPodInfo

__all__ = ["QueuedPodInfo", "count_unschedulable_reasons"]


@dataclass(slots=True)
class QueuedPodInfo(FrameworkQueuedPodInfo):
    """The framework's QueuedPodInfo (what QueueSort compares) plus the queue's bookkeeping.

    - ``timestamp``: when the pod was added, reset after every failed attempt; the backoff and
      the five-minute flush count from it.
    - ``attempts``: pops so far. ``unschedulable_count``: attempts that ended with rejecting
      plugins. ``consecutive_errors_count``: attempts in a row that ended in an error (no
      rejecting plugin); the backoff grows with this one while it is non-zero.
    - ``unschedulable_plugins`` / ``pending_plugins``: who rejected the last attempt (set by the
      failure handler); only their hints are asked about cluster events.
    - ``gating_plugin`` / ``gating_plugin_events``: the PreEnqueue plugin keeping the pod out of
      the active queue and the events it registered (only those can ungate the pod);
      ``gated`` mirrors ``gating_plugin is not None``.
    - ``released_by``: with a gating plugin, the UID of the one pod whose deletion alone can
      ungate the pod (the plugin's ``gated_until_deleted``), or None when any of its events may.
    - ``backoff_expiration``: the cached end of the backoff (None until computed).
    """

    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    gating_plugin: str | None = None
    gating_plugin_events: Sequence[ClusterEvent] = ()
    released_by: str | None = None
    backoff_expiration: float | None = None
    was_flushed_from_unschedulable: bool = False

    def set_gating_plugin(
        self, plugin: str | None, events: Sequence[ClusterEvent] = (), released_by: str | None = None
    ) -> None:
        """Record the PreEnqueue plugin gating the pod (and the UID of the pod whose deletion alone can
        ungate it, if the plugin named one), or None once every PreEnqueue plugin passes."""
        self.gating_plugin = plugin
        self.gating_plugin_events = events
        self.released_by = released_by if plugin is not None else None
        self.gated = plugin is not None

    def has_rejectors(self) -> bool:
        """Some plugin rejected the last attempt (as opposed to an error)."""
        return bool(self.unschedulable_plugins or self.pending_plugins)

    def rejected_by(self, plugin: str) -> bool:
        """``plugin`` is among the unschedulable or pending plugins."""
        return plugin in self.unschedulable_plugins or plugin in self.pending_plugins


def count_unschedulable_reasons(qpi: QueuedPodInfo, delta: int) -> None:
    """Move ``scheduler_unschedulable_pods`` of each plugin that rejected ``qpi`` by ``delta``."""
    profile = qpi.pod.scheduler_name
    for plugin in qpi.unschedulable_plugins | qpi.pending_plugins:
        metrics.add_unschedulable_pods(plugin, profile, delta)
