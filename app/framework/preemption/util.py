"""Pod ordering helpers of preemption (``pkg/scheduler/util``): start times and MoreImportantPod."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from app.api.objects import Pod, pod_priority

__all__ = ["earliest_pod_start_time", "importance_key", "more_important_pod", "pod_start_time"]


def _parse_time(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    return _parse_timestamp(text)


@functools.lru_cache(maxsize=4096)
def _parse_timestamp(text: str) -> float | None:
    """An RFC 3339 time in seconds; remembered, as a dry run orders the same pods over and over
    (one-second resolution: many pods share a start time)."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pod_start_time(pod: Pod, now: float | None = None) -> float:
    """``GetPodStartTime``: ``status.startTime`` in seconds, or ``now`` for a pod not started yet.

    kube-scheduler takes ``time.Now()`` on every call; berth takes ``now`` once per comparison
    batch so that two unstarted pods compare equal instead of by call order.
    """
    status = pod.raw.get("status") if isinstance(pod.raw, dict) else None
    started = _parse_time(status.get("startTime")) if isinstance(status, dict) else None
    if started is not None:
        return started
    return time.time() if now is None else now


def more_important_pod(a: Pod, b: Pod, now: float | None = None) -> bool:
    """``MoreImportantPod``: higher priority, then the earlier start time."""
    pa, pb = pod_priority(a), pod_priority(b)
    if pa != pb:
        return pa > pb
    now = time.time() if now is None else now
    return pod_start_time(a, now) < pod_start_time(b, now)


def importance_key(now: float) -> Callable[[Pod], tuple[int, float]]:
    """A sort key putting the most important pods first (MoreImportantPod as a key, stable for ties)."""

    def key(pod: Pod) -> tuple[int, float]:
        return (-pod_priority(pod), pod_start_time(pod, now))

    return key


def earliest_pod_start_time(pods: Sequence[Pod], now: float) -> float | None:
    """``GetEarliestPodStartTime``: the earliest start among the highest-priority pods."""
    if not pods:
        return None
    earliest = pod_start_time(pods[0], now)
    top = pod_priority(pods[0])
    for p in pods:
        prio = pod_priority(p)
        if prio == top:
            earliest = min(earliest, pod_start_time(p, now))
        elif prio > top:
            top = prio
            earliest = pod_start_time(p, now)
    return earliest
