"""Shared pieces of the scheduling-queue tests: a fake clock, queued pods and a queue factory."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from prometheus_client import REGISTRY

from app.api.objects import Pod
from app.backend.queue.scheduling_queue import PriorityQueue, QueuedPodInfo
from app.framework.events import ClusterEvent, QueueingHint, QueueingHintFunction, QueueingHintMap
from app.framework.interfaces import PreEnqueuePlugin
from app.framework.types import PodInfo
from app.plugins.queuesort.priority_sort import PrioritySort
from builders import make_pod
from fakes import FakeHandle

PROFILE = "default-scheduler"
SORT = PrioritySort(None, FakeHandle())


class FakeClock:
    """Monotonic seconds that move only when told (``testingclock.FakeClock``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds


def queue_hint(pod: Pod, old: object, new: object) -> QueueingHint:
    return QueueingHint.QUEUE


def skip_hint(pod: Pod, old: object, new: object) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP


def hints(*entries: tuple[ClusterEvent, str, Any]) -> dict[str, QueueingHintMap]:
    """A per-profile hint map from (event, plugin, hint function) triples, for PROFILE."""
    hint_map: QueueingHintMap = {}
    for event, plugin, fn in entries:
        hint_map.setdefault(event, []).append(QueueingHintFunction(plugin, fn))
    return {PROFILE: hint_map}


def new_queue(
    clock: FakeClock | None = None,
    queueing_hints: Mapping[str, QueueingHintMap] | None = None,
    pre_enqueue: Sequence[PreEnqueuePlugin] = (),
    **options: Any,
) -> PriorityQueue:
    """A PriorityQueue with PrioritySort, a fake clock and the given hints / PreEnqueue plugins."""
    return PriorityQueue(
        SORT.less,
        sort_key=SORT.sort_key,
        clock=clock or FakeClock(),
        queueing_hints=queueing_hints if queueing_hints is not None else {PROFILE: {}},
        pre_enqueue={PROFILE: list(pre_enqueue)},
        **options,
    )


def qpi(
    name: str,
    timestamp: float = 0.0,
    priority: int | None = None,
    unschedulable: Iterable[str] = (),
    pending: Iterable[str] = (),
    **fields: Any,
) -> QueuedPodInfo:
    """A QueuedPodInfo for pod ``name``."""
    spec: dict[str, Any] = {} if priority is None else {"priority": priority}
    return QueuedPodInfo(
        pod_info=PodInfo(make_pod(name, **spec)),
        timestamp=timestamp,
        unschedulable_plugins=set(unschedulable),
        pending_plugins=set(pending),
        **fields,
    )


def names(pods: Iterable[Pod]) -> list[str]:
    return sorted(p.name for p in pods)


def sample(name: str, **labels: str) -> float:
    """A metric sample's value (0 when never recorded)."""
    value = REGISTRY.get_sample_value(name, labels)
    return value if value is not None else 0.0
