"""PrioritySort, ported from plugins/queuesort/priority_sort_test.go (v1.36.3)."""

from __future__ import annotations

import pytest

from app.api.objects import pod_priority
from app.framework.interfaces import QueuedPodInfo
from app.framework.types import PodInfo
from app.plugins.queuesort.priority_sort import PrioritySort
from builders import make_pod
from fakes import FakeHandle

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


def qpi(priority: int | None, timestamp: float = 0.0) -> QueuedPodInfo:
    pod = make_pod("p") if priority is None else make_pod("p", priority=priority)
    return QueuedPodInfo(PodInfo(pod), timestamp=timestamp)


CASES = [
    ("p1.priority less than p2.priority", qpi(LOW), qpi(HIGH), False),
    ("p1.priority greater than p2.priority", qpi(HIGH), qpi(LOW), True),
    ("equal priority. p1 is added to schedulingQ earlier than p2", qpi(HIGH, T1), qpi(HIGH, T2), True),
    ("equal priority. p2 is added to schedulingQ earlier than p1", qpi(HIGH, T2), qpi(HIGH, T1), False),
    # Not in the Go table: an unset priority counts as 0; equal timestamps are not "less".
    ("unset priority below a positive one", qpi(None), qpi(1), False),
    ("unset priority above a negative one", qpi(None), qpi(-1), True),
    ("same priority and timestamp", qpi(HIGH, T1), qpi(HIGH, T1), False),
]


@pytest.mark.parametrize(("name", "p1", "p2", "expected"), CASES, ids=[c[0] for c in CASES])
def test_less(name: str, p1: QueuedPodInfo, p2: QueuedPodInfo, expected: bool) -> None:
    assert PrioritySort(None, FakeHandle()).less(p1, p2) is expected


def test_pod_priority() -> None:
    # component-helpers TestPodPriority: nil priority → 0, else the value.
    assert pod_priority(make_pod("p")) == 0
    assert pod_priority(make_pod("p", priority=0)) == 0
    assert pod_priority(make_pod("p", priority=1000)) == 1000
