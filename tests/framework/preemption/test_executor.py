"""The preemption executor's evictions (executor.go's prepareCandidate and prepareCandidateAsync):
victims evicted in parallel on the handle's VictimParallelizer, or in order without one."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from types import SimpleNamespace

import pytest

from app.api.objects import Pod
from app.framework.preemption.executor import Executor
from app.framework.preemption.parallelizer import VictimParallelizer
from app.framework.status import Code, Status
from builders import make_pod

WAIT = 10.0  # seconds a blocked test thread waits before the test fails instead of hanging


def victims(n: int) -> list[Pod]:
    return [make_pod(f"v{i}", [{"cpu": "1"}], priority=0, nodeName="n1") for i in range(n)]


PREEMPTOR = make_pod("p", [{"cpu": "1"}], priority=1000)


class RecordingActions:
    """ClusterActions that record the victims evicted; ``barrier`` (if set) makes each eviction of
    the victims it names wait until all of them have started, so that evicting them one after the
    other breaks it; ``failing`` names victims whose eviction fails."""

    def __init__(self, concurrent: Sequence[str] = (), failing: Sequence[str] = ()) -> None:
        self.evicted: list[str] = []
        self.concurrent = set(concurrent)
        self.barrier = threading.Barrier(len(concurrent), timeout=WAIT) if concurrent else None
        self.failing = set(failing)
        self._lock = threading.Lock()

    def preempt_pod(self, preemptor: Pod, victim: Pod, node_name: str, plugin: str) -> Status | None:
        if self.barrier is not None and victim.name in self.concurrent:
            self.barrier.wait()  # BrokenBarrierError (the piece's error) unless all run at once
        with self._lock:
            self.evicted.append(victim.name)
        if victim.name in self.failing:
            return Status(Code.ERROR, f'pods "{victim.name}" is forbidden')
        return None

    def clear_nominated_node_name(self, pods: Sequence[Pod]) -> Status | None:
        return None


@pytest.fixture
def parallelizer() -> Iterator[VictimParallelizer]:
    p = VictimParallelizer()
    yield p
    p.shutdown()


def executor(
    actions: RecordingActions, parallelizer: VictimParallelizer | None, async_preemption: bool = True
) -> Executor:
    handle = SimpleNamespace(cluster_actions=actions, nominator=None, preemption_parallelizer=parallelizer)
    return Executor(handle, async_preemption)


def test_async_preemption_evicts_all_victims_but_the_last_at_once_then_the_last(
    parallelizer: VictimParallelizer,
) -> None:
    """prepareCandidateAsync: Parallelizer().Until over the victims but the last, then the last one."""
    vs = victims(4)
    actions = RecordingActions(concurrent=["v0", "v1", "v2"])
    assert (
        executor(actions, parallelizer).actuate_pod_preemption("n1", vs, PREEMPTOR, "DefaultPreemption")
        is None
    )
    assert sorted(actions.evicted[:3]) == ["v0", "v1", "v2"]
    assert actions.evicted[3] == "v3"


def test_sync_preemption_evicts_all_victims_at_once(parallelizer: VictimParallelizer) -> None:
    """prepareCandidate: Parallelizer().Until over every victim."""
    vs = victims(3)
    actions = RecordingActions(concurrent=["v0", "v1", "v2"])
    ex = executor(actions, parallelizer, async_preemption=False)
    assert ex.actuate_pod_preemption("n1", vs, PREEMPTOR, "DefaultPreemption") is None
    assert sorted(actions.evicted) == ["v0", "v1", "v2"]


def test_a_failed_eviction_stops_later_victims_and_skips_the_last(caplog: pytest.LogCaptureFixture) -> None:
    """The first error cancels the context: pieces not started are skipped, and so is the last
    victim; the error is logged, the PostFilter result of the async path stays Success."""
    one_at_a_time = VictimParallelizer(parallelism=1)
    try:
        actions = RecordingActions(failing=["v1"])
        with caplog.at_level(logging.ERROR):
            s = executor(actions, one_at_a_time).actuate_pod_preemption("n1", victims(5), PREEMPTOR, "pl")
        assert s is None
        assert actions.evicted == ["v0", "v1"]
        assert "Error occurred during async preemption" in caplog.text
        assert "last victim" not in caplog.text
    finally:
        one_at_a_time.shutdown()


def test_a_failed_sync_eviction_is_the_error_status(parallelizer: VictimParallelizer) -> None:
    actions = RecordingActions(failing=["v2"])
    s = executor(actions, parallelizer, async_preemption=False).actuate_pod_preemption(
        "n1", victims(3), PREEMPTOR, "pl"
    )
    assert s is not None and s.code == Code.ERROR and s.reasons == ['pods "v2" is forbidden']


def test_without_a_parallelizer_victims_are_evicted_in_their_order() -> None:
    """simulate, the extender and tests over the cache: deterministic, one after the other."""
    for async_preemption in (True, False):
        actions = RecordingActions()
        ex = executor(actions, None, async_preemption)
        assert ex.actuate_pod_preemption("n1", victims(4), PREEMPTOR, "pl") is None
        assert actions.evicted == ["v0", "v1", "v2", "v3"]
    actions = RecordingActions(failing=["v1"])
    assert executor(actions, None).actuate_pod_preemption("n1", victims(4), PREEMPTOR, "pl") is None
    assert actions.evicted == ["v0", "v1"]


def test_until_turns_an_exception_into_the_piece_error(parallelizer: VictimParallelizer) -> None:
    def work(index: int) -> Status | None:
        if index == 2:
            raise ValueError("boom")
        return None

    s = parallelizer.until(3, work)
    assert s is not None and s.code == Code.ERROR and "boom" in s.message()


def test_shutdown_does_not_hang_a_preemption_waiting_for_threads() -> None:
    """Workers queued behind busy threads are dropped by shutdown(): their until() returns an
    error at once instead of waiting for them forever, and a later until() is refused."""
    p = VictimParallelizer(parallelism=2)
    release = threading.Event()
    busy = threading.Barrier(3, timeout=WAIT)

    def blocking(_index: int) -> Status | None:
        busy.wait()
        release.wait(WAIT)
        return None

    first = threading.Thread(target=p.until, args=(2, blocking))
    first.start()
    busy.wait()  # both threads are now taken by the first preemption
    results: list[Status | None] = []
    second = threading.Thread(target=lambda: results.append(p.until(3, lambda _i: None)))
    second.start()
    p.shutdown()
    second.join(WAIT)
    assert not second.is_alive()
    assert results[0] is not None and results[0].code == Code.ERROR
    assert "shutting down" in results[0].message()
    after = p.until(2, lambda _i: None)
    assert after is not None and "shutting down" in after.message()
    release.set()
    first.join(WAIT)
    assert not first.is_alive()
