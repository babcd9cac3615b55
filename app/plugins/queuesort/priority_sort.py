"""PrioritySort: the default queue order (``plugins/queuesort/priority_sort.go``)."""

from __future__ import annotations

from typing import ClassVar

from app.api.objects import pod_priority
from app.framework.interfaces import QueuedPodInfo, QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    """Higher priority first; among equal priorities, the pod queued earlier first."""

    name: ClassVar[str] = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """True when ``a`` should be popped before ``b``."""
        p1 = pod_priority(a.pod_info.pod)
        p2 = pod_priority(b.pod_info.pod)
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[int, float]:
        """A key whose ``<`` is :meth:`less`, so the scheduling queue's heaps compare tuples in C."""
        return (-pod_priority(qpi.pod_info.pod), qpi.timestamp)
