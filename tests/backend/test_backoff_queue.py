"""The backoff queue, ported from kube-scheduler v1.36.3 backend/queue/backoff_queue_test.go
(getBackoffTime, calculateBackoffDuration, popAllBackoffCompleted, ordering)."""

from __future__ import annotations

import math

import pytest
from backend.queue_helpers import SORT, FakeClock, qpi

from app.backend.queue.backoff_queue import BackoffQueue, calculate_backoff_duration
from app.backend.queue.queued_pod_info import QueuedPodInfo

NS = 1e-9
T0 = 1000.0


def backoff_queue(
    clock: FakeClock, initial: float = 1.0, maximum: float = 10.0, pop: bool = True
) -> BackoffQueue:
    return BackoffQueue(clock, initial, maximum, SORT.sort_key, pop)


@pytest.mark.parametrize(
    ("name", "initial", "maximum", "pod", "want"),
    [
        ("no backoff", 1.0, 32.0, qpi("p", T0), -math.inf),
        (
            "backoff is returned from the cache",
            1.0,
            32.0,
            qpi("p", T0, unschedulable_count=1, backoff_expiration=T0 + NS),
            T0 + NS,
        ),
        ("backoff by UnschedulableCount", 1.0, 32.0, qpi("p", T0, unschedulable_count=16), T0 + 32),
        (
            "backoff is calculated with ConsecutiveErrorsCount",
            1.0,
            32.0,
            qpi("p", T0, unschedulable_count=5, consecutive_errors_count=16),
            T0 + 32,
        ),
        (
            "zero maxBackoffDuration means no backoff",
            0.0,
            0.0,
            qpi("p", T0, unschedulable_count=16),
            -math.inf,
        ),
    ],
)
def test_backoff_time(name: str, initial: float, maximum: float, pod: QueuedPodInfo, want: float) -> None:
    assert backoff_queue(FakeClock(), initial, maximum).backoff_time(pod) == want


@pytest.mark.parametrize(
    ("name", "initial_ns", "max_ns", "count", "want_ns"),
    [
        ("no backoff", 1, 32, 0, 0),
        ("normal", 3, 1000, 5, 48),
        ("hitting max backoff duration", 1, 32, 16, 32),
        ("overflow_32bit", 1, 2**31 - 1, 32, 2**31 - 1),
        ("overflow_64bit", 1, 2**63 - 1, 64, 2**63 - 1),
    ],
)
def test_calculate_backoff_duration(
    name: str, initial_ns: int, max_ns: int, count: int, want_ns: int
) -> None:
    assert calculate_backoff_duration(count, initial_ns * NS, max_ns * NS) == pytest.approx(
        want_ns * NS, rel=1e-12
    )


def test_default_backoff_doubles_up_to_the_maximum() -> None:
    assert [calculate_backoff_duration(n, 1.0, 10.0) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def _pods(clock: FakeClock) -> dict[str, QueuedPodInfo]:
    return {
        "pod0": qpi("pod0", clock.now - 2, unschedulable_count=1, unschedulable={"plugin"}),
        "pod1": qpi("pod1", clock.now + 1, unschedulable_count=1, unschedulable={"plugin"}),
        "pod2": qpi("pod2", clock.now - 2, consecutive_errors_count=1),
        "pod3": qpi("pod3", clock.now + 1, consecutive_errors_count=1),
    }


@pytest.mark.parametrize("pop_from_backoff_q", [True, False])
@pytest.mark.parametrize(
    ("in_backoff", "want"),
    [
        ([], []),
        (["pod0", "pod1"], ["pod0"]),
        (["pod2", "pod3"], ["pod2"]),
        (["pod0", "pod1", "pod2", "pod3"], ["pod0", "pod2"]),
        (["pod0", "pod2"], ["pod0", "pod2"]),
        (["pod1", "pod3"], []),
    ],
)
def test_pop_all_backoff_completed(pop_from_backoff_q: bool, in_backoff: list[str], want: list[str]) -> None:
    clock = FakeClock(T0 + 0.5)
    bq = backoff_queue(clock, pop=pop_from_backoff_q)
    pods = _pods(clock)
    for name in in_backoff:
        bq.add(pods[name], "UnschedulablePodAdd")
    assert [p.pod.name for p in bq.pop_all_backoff_completed()] == want
    assert len(bq) == len(in_backoff) - len(want)


@pytest.mark.parametrize(
    ("pop_from_backoff_q", "want"),
    [
        # Same second: priority, then queue time.
        (True, ["pod5", "pod4", "pod2", "pod3"]),
        # Without it, expirations are exact and priority does not matter.
        (False, ["pod5", "pod3", "pod4", "pod2"]),
    ],
)
def test_backoff_queue_ordering(pop_from_backoff_q: bool, want: list[str]) -> None:
    clock = FakeClock(T0)
    bq = backoff_queue(clock, pop=pop_from_backoff_q)
    for name, priority, ts in [
        ("pod0", 1, T0),
        ("pod1", 1, T0 - 1),
        ("pod2", 2, T0 - 2 + 0.001),
        ("pod3", 1, T0 - 2),
        ("pod4", 2, T0 - 2),
        ("pod5", 1, T0 - 3),
    ]:
        bq.add(
            qpi(name, ts, priority, attempts=1, unschedulable_count=1, unschedulable={"plugin"}),
            "UnschedulablePodAdd",
        )
    assert [p.pod.name for p in bq.pop_all_backoff_completed()] == want


def test_a_pod_moves_between_the_two_heaps() -> None:
    bq = backoff_queue(FakeClock())
    pod = qpi("p", T0, consecutive_errors_count=1)
    bq.add(pod, "ScheduleAttemptFailure")
    pod.unschedulable_plugins.add("plugin")
    bq.add(pod, "ScheduleAttemptFailure")
    assert len(bq) == 1 and bq.len_rejected() == 1 and bq.get("default/p") is pod
    assert bq.delete("default/p") and not bq.delete("default/p") and len(bq) == 0
