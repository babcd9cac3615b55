"""The pods set aside until a cluster event may help them (``backend/queue/unschedulable_pods.go``).

Holds both pods that failed an attempt and pods a PreEnqueue plugin gates; the two are counted
apart (``scheduler_pending_pods{queue="unschedulable"|"gated"}``). Not thread-safe: the
scheduling queue's lock guards it.
"""

from __future__ import annotations

from collections.abc import Iterator

from app import metrics
from app.backend.queue.queued_pod_info import QueuedPodInfo

__all__ = ["UnschedulablePods"]


class UnschedulablePods:
    """Pods by key (``namespace/name``), with the number of gated ones."""

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self.gated = 0

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, pod_key: str) -> bool:
        return pod_key in self._pods

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self._pods.values())

    @property
    def ungated(self) -> int:
        """Pods that were attempted and failed."""
        return len(self._pods) - self.gated

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        """The pod with ``pod_key``, or None."""
        return self._pods.get(pod_key)

    def add_or_update(self, qpi: QueuedPodInfo, gated_before: bool, event: str) -> None:
        """Insert or replace ``qpi``; ``gated_before`` is whether the stored copy was counted gated."""
        pod_key = qpi.pod.key
        if pod_key in self._pods:
            self.gated += int(qpi.gated) - int(gated_before)
        else:
            self.gated += int(qpi.gated)
            metrics.observe_queue_incoming("unschedulable", event)
        self._pods[pod_key] = qpi

    def delete(self, pod_key: str, gated: bool) -> None:
        """Remove the pod; ``gated`` is how it was counted."""
        if self._pods.pop(pod_key, None) is not None and gated:
            self.gated -= 1
