"""The backoff queue (``backend/queue/backoff_queue.go``): pods waiting out their backoff.

The backoff doubles per failed attempt from ``pod_initial_backoff`` up to ``pod_max_backoff``
(1, 2, 4, 8, 10, 10, ... seconds by default). It counts consecutive errors while the pod keeps
failing with errors, and unschedulable attempts otherwise, so an API error streak does not
inherit the backoff earned by rejections. It ends at ``timestamp + duration`` (the time of the
failed attempt), and is 0 for a pod that never failed, or with ``pod_max_backoff`` 0.

Two heaps ordered by backoff expiration: pods rejected by plugins, and pods that failed with an
error. With SchedulerPopFromBackoffQ (beta, on in v1.36) expirations are truncated to whole
seconds, the flush runs on whole seconds, and pods expiring in the same second are ordered by the
active queue's order, because Pop may take the first rejected pod before its backoff ends when
the active queue is empty.

Not thread-safe: the scheduling queue's lock guards it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from app import logs, metrics
from app.backend.queue.heap import PodHeap, SortKey
from app.backend.queue.queued_pod_info import QueuedPodInfo

__all__ = ["BackoffQueue", "calculate_backoff_duration"]

ORDERING_WINDOW = 1.0
"""``backoffQOrderingWindowDuration``: the flush period, and the expiration granularity."""

_NS = 1_000_000_000
_NOT_BACKING_OFF = -math.inf


def calculate_backoff_duration(count: int, initial: float, maximum: float) -> float:
    """``initial * 2**(count-1)`` capped at ``maximum``, in seconds; 0 for count 0.

    Computed on integer nanoseconds as Go's ``time.Duration`` shifts are.
    """
    if count == 0:
        return 0.0
    initial_ns, max_ns = round(initial * _NS), round(maximum * _NS)
    shift = count - 1
    if initial_ns > max_ns >> shift:
        return max_ns / _NS
    return (initial_ns << shift) / _NS


class BackoffQueue:
    """Pods in backoff, by expiration; the pod key is unique across both heaps."""

    def __init__(
        self,
        clock: Callable[[], float],
        pod_initial_backoff: float,
        pod_max_backoff: float,
        active_key: SortKey,
        pop_from_backoff_q: bool,
    ) -> None:
        self._clock = clock
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self._pop_from_backoff_q = pop_from_backoff_q
        if pop_from_backoff_q:
            # Same second: the active queue's order (priority, then queue time, for PrioritySort).
            self._rejected = PodHeap(lambda qpi: (self.backoff_time(qpi), active_key(qpi)))
        else:
            self._rejected = PodHeap(self.backoff_time)
        self._errored = PodHeap(self.backoff_time)

    # --- backoff arithmetic --------------------------------------------------------------------

    def align_to_window(self, t: float) -> float:
        """Whole seconds with SchedulerPopFromBackoffQ (``alignToWindow``)."""
        return math.floor(t) if self._pop_from_backoff_q else t

    def backoff_time(self, qpi: QueuedPodInfo) -> float:
        """When the pod's backoff ends (``getBackoffTime``), cached in ``backoff_expiration``.

        ``-inf`` stands for Go's zero time: the pod does not back off.
        """
        if self.pod_max_backoff == 0:
            return _NOT_BACKING_OFF
        count = qpi.consecutive_errors_count or qpi.unschedulable_count
        if count == 0:
            return _NOT_BACKING_OFF
        if qpi.backoff_expiration is None:
            duration = calculate_backoff_duration(count, self.pod_initial_backoff, self.pod_max_backoff)
            qpi.backoff_expiration = self.align_to_window(qpi.timestamp + duration)
        return qpi.backoff_expiration

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        """The backoff has not ended by the current (aligned) time (``isPodBackingoff``)."""
        return not self.backoff_time(qpi) < self.align_to_window(self._clock())

    # --- contents ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rejected) + len(self._errored)

    def __contains__(self, pod_key: str) -> bool:
        return pod_key in self._rejected or pod_key in self._errored

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        """Rejected pods, then errored ones."""
        yield from self._rejected
        yield from self._errored

    def len_rejected(self) -> int:
        """Pods backing off after a rejection (``lenBackoff``): the ones Pop may take early."""
        return len(self._rejected)

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        """The pod with ``pod_key`` in either heap."""
        qpi = self._rejected.get(pod_key)
        return qpi if qpi is not None else self._errored.get(pod_key)

    def add(self, qpi: QueuedPodInfo, event: str) -> None:
        """Queue ``qpi`` in the heap its last failure calls for, out of the other one."""
        into, other = (
            (self._rejected, self._errored) if qpi.has_rejectors() else (self._errored, self._rejected)
        )
        pod_key = qpi.pod.key
        into.add_or_update(qpi)
        if other.delete(pod_key) is not None:
            logs.error(
                "BackoffQueue add() was called with a pod that was already in the other heap", pod=pod_key
            )
            return
        metrics.observe_queue_incoming("backoff", event)
        if logs.enabled(5):
            logs.info(
                "Pod moved to an internal scheduling queue", 5, pod=pod_key, event=event, queue="Backoff"
            )

    def update(self, qpi: QueuedPodInfo) -> bool:
        """Re-sort ``qpi`` (its pod was updated) if it is queued here."""
        pod_key = qpi.pod.key
        for heap in (self._rejected, self._errored):
            if pod_key in heap:
                heap.add_or_update(qpi)
                return True
        return False

    def delete(self, pod_key: str) -> bool:
        """Remove the pod from whichever heap holds it."""
        return self._rejected.delete(pod_key) is not None or self._errored.delete(pod_key) is not None

    def pop_all_backoff_completed(self) -> list[QueuedPodInfo]:
        """Every pod whose backoff has ended: rejected ones first, then errored ones."""
        return self._pop_completed(self._rejected) + self._pop_completed(self._errored)

    def _pop_completed(self, heap: PodHeap) -> list[QueuedPodInfo]:
        out: list[QueuedPodInfo] = []
        while True:
            qpi = heap.peek()
            if qpi is None or self.is_backing_off(qpi):
                return out
            heap.pop()
            out.append(qpi)

    def pop_rejected(self) -> QueuedPodInfo | None:
        """The first rejected pod, backoff over or not (``popBackoff``)."""
        return self._rejected.pop()
