"""The active queue and in-flight tracking (``backend/queue/active_queue.go``).

Pods ready to be scheduled sit in a heap in QueueSort order. A popped pod is *in flight* until
``done``. While any pod is in flight, every cluster event the queue hears is appended to a log
in which each in-flight pod also has its place (kube's ``inFlightEvents`` list): when an attempt
fails, the events logged after the pod's place are exactly those it missed, and its rejecting
plugins' hints decide from them whether it may go straight back. ``done`` blanks the pod's place
and drops the events at the head of the log no in-flight pod still needs.

Not thread-safe: the scheduling queue's lock guards it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from app import logs, metrics
from app.api.objects import Pod
from app.backend.queue.heap import PodHeap, SortKey
from app.backend.queue.queued_pod_info import QueuedPodInfo, count_unschedulable_reasons
from app.framework.events import ClusterEvent

__all__ = ["ActiveQueue", "InFlightEvent"]


@dataclass(frozen=True, slots=True)
class InFlightEvent:
    """A cluster event heard while pods were in flight, with its objects."""

    event: ClusterEvent
    old_obj: object
    new_obj: object


@dataclass(frozen=True, slots=True)
class _InFlightPod:
    pod: Pod


_COMPACT_MIN = 256


class ActiveQueue:
    """The heap of pods to schedule, the in-flight pods and the event log."""

    def __init__(self, key: SortKey, track_in_flight: bool = True) -> None:
        """``track_in_flight`` False is kube's activeQueue with SchedulerQueueingHints off: popped
        pods are counted but not tracked, so no event is ever logged for them."""
        self._heap = PodHeap(key)
        self._track = track_in_flight
        # The log is a list read from ``_head``; positions are absolute (``_base`` + index).
        self._log: list[InFlightEvent | _InFlightPod | None] = []
        self._base = 0
        self._head = 0
        self._in_flight: dict[str, int] = {}
        self.scheduling_cycle = 0

    # --- the heap --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._heap)

    def __contains__(self, pod_key: str) -> bool:
        return pod_key in self._heap

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self._heap)

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        """The queued pod with ``pod_key``."""
        return self._heap.get(pod_key)

    def add(self, qpi: QueuedPodInfo, event: str) -> None:
        """Queue (or re-sort) ``qpi``, counting it under ``event``."""
        self._heap.add_or_update(qpi)
        metrics.observe_queue_incoming("active", event)
        if logs.enabled(5):
            logs.info(
                "Pod moved to an internal scheduling queue", 5, pod=qpi.pod.key, event=event, queue="Active"
            )

    def update(self, qpi: QueuedPodInfo) -> bool:
        """Re-sort ``qpi`` (its pod was updated) if it is queued here."""
        if qpi.pod.key not in self._heap:
            return False
        self._heap.add_or_update(qpi)
        return True

    def delete(self, pod_key: str) -> bool:
        """Remove the pod; False when it was not queued here."""
        return self._heap.delete(pod_key) is not None

    def pop(self) -> QueuedPodInfo | None:
        """The first pod, out of the heap (not yet in flight)."""
        return self._heap.pop()

    # --- in flight -------------------------------------------------------------------------

    def move_to_in_flight(self, qpi: QueuedPodInfo) -> bool:
        """Count the attempt and track the pod; False (the pod is discarded) if already in flight."""
        qpi.attempts += 1
        pod = qpi.pod
        if pod.uid in self._in_flight:
            logs.error(
                "The same pod is tracked in multiple places in the scheduler; discarding it", pod=pod.key
            )
            return False
        if self._track:
            self._in_flight[pod.uid] = self._append(_InFlightPod(pod))
        self.scheduling_cycle += 1
        count_unschedulable_reasons(qpi, -1)
        return True

    def is_in_flight(self, uid: str) -> bool:
        """Whether the pod with ``uid`` was popped and is not done."""
        return uid in self._in_flight

    def in_flight_pods(self) -> list[Pod]:
        """The pods in flight."""
        out = []
        for position in self._in_flight.values():
            entry = self._log[position - self._base]
            if isinstance(entry, _InFlightPod):
                out.append(entry.pod)
        return out

    def in_flight_log(self) -> list[Pod | ClusterEvent]:
        """The log from its head, pods and events in order (``listInFlightEvents``)."""
        out: list[Pod | ClusterEvent] = []
        for entry in self._log[self._head :]:
            if isinstance(entry, _InFlightPod):
                out.append(entry.pod)
            elif entry is not None:
                out.append(entry.event)
        return out

    def any_in_flight(self) -> bool:
        """Whether some pod is in flight (events are then logged for it)."""
        return bool(self._in_flight)

    def add_event_if_any_in_flight(self, old_obj: object, new_obj: object, event: ClusterEvent) -> bool:
        """Log ``event`` when some pod is in flight (``addEventIfAnyInFlight``)."""
        if not self._in_flight:
            return False
        self._append(InFlightEvent(event, old_obj, new_obj))
        return True

    def add_events_if_pod_in_flight(self, old: Pod | None, new: Pod, events: Iterable[ClusterEvent]) -> bool:
        """Log ``events`` about ``new`` when that pod is in flight (``addEventsIfPodInFlight``)."""
        if new.uid not in self._in_flight:
            return False
        for event in events:
            self._append(InFlightEvent(event, old, new))
        return True

    def cluster_events_for_pod(self, uid: str) -> list[InFlightEvent] | None:
        """The events logged since the pod was popped; None when it is not in flight."""
        position = self._in_flight.get(uid)
        if position is None:
            return None
        tail = self._log[position - self._base + 1 :]
        return [e for e in tail if isinstance(e, InFlightEvent)]

    def done(self, uid: str) -> None:
        """The pod's attempt is over: forget it, and the events only it still needed."""
        position = self._in_flight.pop(uid, None)
        if position is None:
            return
        log = self._log
        log[position - self._base] = None
        _track_in_flight(metrics.POD_POPPED_IN_FLIGHT_EVENT, -1)
        head = self._head
        while head < len(log) and not isinstance(log[head], _InFlightPod):
            entry = log[head]
            if isinstance(entry, InFlightEvent):  # an event no in-flight pod needs any more leaves the log
                _track_in_flight(entry.event.label, -1)
            head += 1
        self._head = head
        if head == len(log):
            self._base += head
            self._log, self._head = [], 0
        elif head > _COMPACT_MIN and head > len(log) // 2:
            self._base += head
            self._log, self._head = log[head:], 0

    def close(self) -> None:
        """Forget every in-flight pod (``activeQueue.close``)."""
        for uid in list(self._in_flight):
            self.done(uid)

    def _append(self, entry: InFlightEvent | _InFlightPod) -> int:
        self._log.append(entry)
        label = entry.event.label if isinstance(entry, InFlightEvent) else metrics.POD_POPPED_IN_FLIGHT_EVENT
        _track_in_flight(label, 1)
        return self._base + len(self._log) - 1


def _track_in_flight(label: str, delta: int) -> None:
    """``scheduler_inflight_events{event}``: the log's entries by event (``PodPopped`` for pods)."""
    metrics.INFLIGHT_EVENTS.add((label,), delta)
