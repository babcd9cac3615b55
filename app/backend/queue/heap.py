"""A heap of queued pods addressable by pod key (``backend/heap``), on :mod:`heapq`.

Entries are ``[sort_key, sequence, qpi]`` lists, so heapq compares the sort keys in C and the
insertion sequence breaks ties (equal keys pop first-in first-out). Deletion and update are
lazy: the old entry is blanked in place and skipped when it surfaces, and the heap is rebuilt
once blanks outnumber live entries. Add, update, delete and pop are O(log n) amortized; lookup
by key is a dict access.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from app.backend.queue.queued_pod_info import QueuedPodInfo

__all__ = ["LessKey", "PodHeap", "SortKey"]

SortKey = Callable[[QueuedPodInfo], Any]
"""A pod's position in the heap: any value ordered by ``<`` (tuples are fastest)."""

_COMPACT_MIN = 64


class LessKey:
    """Adapts a ``less(a, b)`` function to a sort key, for QueueSort plugins without ``sort_key``.

    Two pods neither of which is less compare equal, so the heap's insertion sequence orders them.
    """

    __slots__ = ("less", "qpi")

    def __init__(self, qpi: QueuedPodInfo, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]) -> None:
        self.qpi = qpi
        self.less = less

    def __lt__(self, other: LessKey) -> bool:
        return self.less(self.qpi, other.qpi)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LessKey):
            return NotImplemented
        return not self.less(self.qpi, other.qpi) and not self.less(other.qpi, self.qpi)

    __hash__ = None  # type: ignore[assignment]


class PodHeap:
    """Queued pods ordered by ``key``, at most one per pod key (``namespace/name``)."""

    def __init__(self, key: SortKey) -> None:
        self._key = key
        self._heap: list[list[Any]] = []
        self._entries: dict[str, list[Any]] = {}
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, pod_key: str) -> bool:
        return pod_key in self._entries

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        """The queued pods in no particular order."""
        return (entry[2] for entry in self._entries.values())

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        """The queued pod with ``pod_key``, or None."""
        entry = self._entries.get(pod_key)
        return entry[2] if entry is not None else None

    def add_or_update(self, qpi: QueuedPodInfo) -> None:
        """Insert ``qpi``, replacing (and re-sorting) a queued pod with the same key."""
        pod_key = qpi.pod.key
        old = self._entries.get(pod_key)
        if old is not None:
            old[2] = None
        entry = [self._key(qpi), next(self._sequence), qpi]
        self._entries[pod_key] = entry
        heapq.heappush(self._heap, entry)
        self._maybe_compact()

    def delete(self, pod_key: str) -> QueuedPodInfo | None:
        """Remove and return the queued pod with ``pod_key`` (None when absent)."""
        entry = self._entries.pop(pod_key, None)
        if entry is None:
            return None
        qpi: QueuedPodInfo = entry[2]
        entry[2] = None
        self._maybe_compact()
        return qpi

    def peek(self) -> QueuedPodInfo | None:
        """The first pod, left in place."""
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
        return heap[0][2] if heap else None

    def pop(self) -> QueuedPodInfo | None:
        """Remove and return the first pod, or None when empty."""
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            qpi: QueuedPodInfo | None = entry[2]
            if qpi is not None:
                del self._entries[qpi.pod.key]
                return qpi
        return None

    def _maybe_compact(self) -> None:
        heap = self._heap
        if len(heap) > _COMPACT_MIN and len(heap) > 2 * len(self._entries):
            self._heap = [e for e in heap if e[2] is not None]
            heapq.heapify(self._heap)
