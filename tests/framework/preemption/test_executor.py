"""The preemption executor (executor.go's prepareCandidate and prepareCandidateAsync): victims
evicted in parallel on the handle's VictimParallelizer, or in order without one; async preemption's
order, parallelism, errors, activation and shutdown on the handle's AsyncRunner.

The cluster actions here are fakes that record the calls and can hold them (a slow API server) or
fail them (an API server refusing the deletion); the handle is the minimum the executor reads.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from app.api.objects import Pod
from app.framework.preemption.executor import AsyncRunner, Executor
from app.framework.preemption.parallelizer import VictimParallelizer
from app.framework.status import Code, Status
from app.framework.types import PodInfo
from tests.builders import make_pod

WAIT = 10.0  # seconds a blocked test thread waits before the test fails instead of hanging


def victims(n: int) -> list[Pod]:
    return [make_pod(f"v{i}", [{"cpu": "1"}], priority=0, nodeName="n1") for i in range(n)]


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


NODE = "n1"


def pod(name: str, priority: int, **spec: object) -> Pod:
    return make_pod(name, [{"cpu": "1"}], priority=priority, **spec)


@dataclass
class FakeActions:
    """Records every call; a victim named in ``hold`` waits for ``release``, one in ``fail`` fails."""

    hold: set[str] = field(default_factory=set)
    fail: set[str] = field(default_factory=set)
    fail_clearing: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    calls: list[str] = field(default_factory=list)
    in_flight: set[str] = field(default_factory=set)
    most_in_flight: int = 0
    held: threading.Condition = field(default_factory=threading.Condition)

    def preempt_pod(self, preemptor: Pod, victim: Pod, node_name: str, plugin: str) -> Status | None:
        with self.held:
            self.calls.append(f"delete {victim.name}")
            self.in_flight.add(victim.name)
            self.most_in_flight = max(self.most_in_flight, len(self.in_flight))
            self.held.notify_all()
        if victim.name in self.hold:
            assert self.release.wait(10), "the test never released the held deletion"
        with self.held:
            self.in_flight.discard(victim.name)
        if victim.name in self.fail:
            return Status(Code.ERROR, f'pods "{victim.name}" is forbidden')
        return None

    def clear_nominated_node_name(self, pods: Sequence[Pod]) -> Status | None:
        with self.held:
            self.calls.append("clear " + ",".join(p.name for p in pods))
        return Status(Code.ERROR, "conflict") if self.fail_clearing else None

    def wait_in_flight(self, names: set[str]) -> None:
        """Until all of ``names`` are being deleted at the same time."""
        with self.held:
            assert self.held.wait_for(lambda: names <= self.in_flight, 10), self.in_flight


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


class FakeNominator:
    def __init__(self, pods: Sequence[Pod]) -> None:
        self.pods = list(pods)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return [PodInfo(p) for p in self.pods] if node_name == NODE else []


class FakeHandle:
    """What the executor reads from the framework handle, and the activations it asks for."""

    def __init__(self, actions: FakeActions, runner: AsyncRunner | None, nominated: Sequence[Pod] = ()):
        self.cluster_actions = actions
        self.preemption_runner = runner
        self.preemption_parallelizer = (
            runner.victim_parallelizer if isinstance(runner, RecordingRunner) else None
        )
        self.nominator = FakeNominator(nominated)
        self.activated: list[str] = []
        self.pods: dict[str, Pod] = {}

    def activate(self, pods: Sequence[Pod]) -> None:
        self.activated.extend(p.name for p in pods)

    def get_pod(self, uid: str) -> Pod | None:
        return self.pods.get(uid)


class RecordingRunner(AsyncRunner):
    """An AsyncRunner that keeps the futures of the preemptions it started, to wait for them."""

    def __init__(self, parallelism: int, workers: int) -> None:
        super().__init__(workers)
        self.started: list[Future[None]] = []
        # The victims' parallelizer the executor finds on the handle beside this runner.
        self.victim_parallelizer = VictimParallelizer(parallelism)

    def go(self, fn: Callable[[], None]) -> Future[None]:
        future = super().go(fn)
        self.started.append(future)
        return future

    def shutdown(self) -> None:
        """Both pools, as ``berth run``'s shutdown stops both."""
        super().shutdown()
        self.victim_parallelizer.shutdown()


@pytest.fixture
def runner() -> Iterator[AsyncRunner]:
    r = RecordingRunner(parallelism=4, workers=2)
    yield r
    r.shutdown()


PREEMPTOR = pod("preemptor", 1000)
VICTIMS = [pod(f"v{i}", 0) for i in range(1, 5)]


def wait_done(executor: Executor) -> None:
    """Until every background preemption of ``executor`` has finished, deferred steps included."""
    runner = executor.runner
    assert isinstance(runner, RecordingRunner)
    for future in runner.started:
        if not future.cancelled():  # a preemption dropped by a shutdown never runs
            assert future.exception(timeout=10) is None


def test_the_scheduling_thread_goes_on_while_the_victims_are_deleted(runner: AsyncRunner) -> None:
    """PostFilter returns at once; the preemptor stays "preempting" (PreEnqueue holds it back)
    until the last victim's deletion returns, and success activates nobody."""
    actions = FakeActions(hold={"v1", "v2", "v3"})
    handle = FakeHandle(actions, runner)
    handle.pods.update((v.uid, v) for v in VICTIMS)
    executor = Executor(handle)
    assert executor.actuate_pod_preemption(NODE, VICTIMS, PREEMPTOR, "DefaultPreemption") is None
    assert executor.is_pod_running_preemption(PREEMPTOR.uid)
    actions.wait_in_flight({"v1", "v2", "v3"})
    assert "delete v4" not in actions.calls  # the last victim waits for all the others
    actions.release.set()
    wait_done(executor)
    assert actions.calls[-1] == "delete v4"
    assert sorted(actions.calls) == ["delete v1", "delete v2", "delete v3", "delete v4"]
    assert handle.activated == []


def test_all_victims_but_the_last_are_deleted_in_parallel(runner: AsyncRunner) -> None:
    """Parallelizer.Until over the victims but the last: three deletions are in flight together."""
    actions = FakeActions(hold={"v1", "v2", "v3"})
    executor = Executor(FakeHandle(actions, runner))
    executor.actuate_pod_preemption(NODE, VICTIMS, PREEMPTOR, "DefaultPreemption")
    actions.wait_in_flight({"v1", "v2", "v3"})
    actions.release.set()
    wait_done(executor)
    assert actions.most_in_flight == 3


def test_lower_priority_nominations_are_cleared_before_any_victim_is_deleted(runner: AsyncRunner) -> None:
    nominated = [pod("nominated-low", 10), pod("nominated-high", 2000)]
    actions = FakeActions()
    executor = Executor(FakeHandle(actions, runner, nominated))
    executor.actuate_pod_preemption(NODE, VICTIMS[:2], PREEMPTOR, "DefaultPreemption")
    wait_done(executor)
    assert actions.calls == ["clear nominated-low", "delete v1", "delete v2"]


def test_a_failed_deletion_skips_the_pieces_not_started_and_the_last_victim() -> None:
    """The first error cancels the context: with one worker the later victims are never sent, the
    last is not tried, and the deferred Activate moves the preemptor to the active queue."""
    one_worker = RecordingRunner(parallelism=1, workers=1)
    try:
        actions = FakeActions(fail={"v1"})
        handle = FakeHandle(actions, one_worker)
        executor = Executor(handle)
        executor.actuate_pod_preemption(NODE, VICTIMS, PREEMPTOR, "DefaultPreemption")
        wait_done(executor)
        assert actions.calls == ["delete v1"]
        assert handle.activated == ["preemptor"]
    finally:
        one_worker.shutdown()


def test_a_failed_nomination_clearing_still_deletes_the_victims_then_activates(runner: AsyncRunner) -> None:
    actions = FakeActions(fail_clearing=True)
    handle = FakeHandle(actions, runner, [pod("nominated-low", 10)])
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, VICTIMS[:2], PREEMPTOR, "DefaultPreemption")
    wait_done(executor)
    assert actions.calls == ["clear nominated-low", "delete v1", "delete v2"]
    assert handle.activated == ["preemptor"]


def test_a_failed_last_victim_activates_the_preemptor(runner: AsyncRunner) -> None:
    actions = FakeActions(fail={"v2"})
    handle = FakeHandle(actions, runner)
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, VICTIMS[:2], PREEMPTOR, "DefaultPreemption")
    wait_done(executor)
    assert actions.calls == ["delete v1", "delete v2"]
    assert handle.activated == ["preemptor"]


def terminating(victim: Pod, grace_period: int, finalizers: Sequence[str] = ()) -> Pod:
    """``victim`` as the watch shows it once its DELETE has been accepted."""
    meta = {**victim.raw.get("metadata", {}), "deletionGracePeriodSeconds": grace_period}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return dataclasses.replace(
        victim, deletion_timestamp="2026-12-05T01:00:00Z", raw={**victim.raw, "metadata": meta}
    )


def _preempting_with_the_last_victim_in_flight(
    runner: AsyncRunner, last: Pod
) -> tuple[FakeActions, FakeHandle, Executor]:
    """A preemption of ``last`` alone (cached) whose deletion call is held in flight, the preemptor
    still held back by PreEnqueue: what is left to end the wait is the cache's view of ``last``."""
    actions = FakeActions(hold={last.name})
    handle = FakeHandle(actions, runner)
    handle.pods[last.uid] = last
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, [last], PREEMPTOR, "DefaultPreemption")
    actions.wait_in_flight({last.name})
    assert executor.is_pod_running_preemption(PREEMPTOR.uid)
    return actions, handle, executor


def test_a_terminating_last_victim_ends_the_wait_before_its_call_returns(runner: AsyncRunner) -> None:
    """lastVictimsPendingPreemption: once the last victim is terminating in the cache (a graceful
    termination, which a kubelet ends), PreEnqueue lets the preemptor in although the deletion call
    has not returned yet."""
    last = VICTIMS[0]
    actions, handle, executor = _preempting_with_the_last_victim_in_flight(runner, last)
    handle.pods[last.uid] = terminating(last, grace_period=30)
    assert not executor.is_pod_running_preemption(PREEMPTOR.uid)
    actions.release.set()


def test_the_preemptor_waits_for_the_cache_to_drop_a_victim_removed_at_once(runner: AsyncRunner) -> None:
    """A victim with a zero grace period is removed by its DELETE: the preemptor is held back after
    the preemption has finished, while the cache (trailing the API calls) still shows the victim
    running, then terminating; the victim's Delete event lets it in. Before that its cycle would
    find the victims still on the nominated node ("not eligible due to a terminating pod on the
    nominated node") or preempt a second time."""
    victims = VICTIMS[:2]
    actions = FakeActions()
    handle = FakeHandle(actions, runner)
    handle.pods.update((v.uid, v) for v in victims)
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, victims, PREEMPTOR, "DefaultPreemption")
    wait_done(executor)
    assert actions.calls == ["delete v1", "delete v2"]
    assert executor.is_pod_running_preemption(PREEMPTOR.uid)  # the cache has not seen the DELETEs
    del handle.pods[victims[0].uid]
    handle.pods[victims[1].uid] = terminating(victims[1], grace_period=0)
    assert executor.is_pod_running_preemption(PREEMPTOR.uid)  # its removal is the next event
    del handle.pods[victims[1].uid]
    assert not executor.is_pod_running_preemption(PREEMPTOR.uid)
    assert handle.activated == []


def test_a_held_preemptor_names_its_last_victim_while_only_that_deletion_can_let_it_in(
    runner: AsyncRunner,
) -> None:
    """DefaultPreemption's gated_until_deleted: the queue looks at a held preemptor only for the
    deletion of the victim its preemption deletes last, from the start (the others are deleted
    first) until the cache drops it, and on any deletion once that victim terminates gracefully."""
    victims = VICTIMS[:2]
    actions = FakeActions(hold={"v1"})
    handle = FakeHandle(actions, runner)
    handle.pods.update((v.uid, v) for v in victims)
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, victims, PREEMPTOR, "DefaultPreemption")
    actions.wait_in_flight({"v1"})
    assert executor.is_pod_running_preemption(PREEMPTOR.uid)
    assert executor.released_by(PREEMPTOR.uid) == victims[1].uid  # not deleted yet, not recorded
    actions.release.set()
    wait_done(executor)
    assert executor.released_by(PREEMPTOR.uid) == victims[1].uid  # the cache still shows it running
    handle.pods[victims[1].uid] = terminating(victims[1], grace_period=0)
    assert executor.released_by(PREEMPTOR.uid) == victims[1].uid  # its removal is due
    handle.pods[victims[1].uid] = terminating(victims[1], grace_period=30)
    assert executor.released_by(PREEMPTOR.uid) is None  # any deletion lets it in now
    assert executor.released_by(pod("never-preempted", 1000).uid) is None


def test_no_victim_is_named_without_a_runner_or_after_a_failure(runner: AsyncRunner) -> None:
    inline = Executor(FakeHandle(FakeActions(hold=set()), None))
    inline.actuate_pod_preemption(NODE, VICTIMS[:2], PREEMPTOR, "DefaultPreemption")
    assert inline.released_by(PREEMPTOR.uid) is None
    handle = FakeHandle(FakeActions(fail={"v1"}), runner)
    handle.pods.update((v.uid, v) for v in VICTIMS[:2])
    failing = Executor(handle)
    failing.actuate_pod_preemption(NODE, VICTIMS[:2], PREEMPTOR, "DefaultPreemption")
    wait_done(failing)
    assert failing.released_by(PREEMPTOR.uid) is None
    assert handle.activated == ["preemptor"]


@pytest.mark.parametrize(
    "last_victim",
    [terminating(VICTIMS[1], grace_period=30), terminating(VICTIMS[1], 0, ["example.com/keep"])],
    ids=["grace-period", "finalizer"],
)
def test_a_victim_that_stays_terminating_lets_the_preemptor_in(runner: AsyncRunner, last_victim: Pod) -> None:
    """A victim a kubelet stops, or one a finalizer keeps, stays terminating: the preemptor goes in
    as in kube-scheduler (its attempt then waits for the victim's removal as an unschedulable pod)."""
    handle = FakeHandle(FakeActions(), runner)
    handle.pods[last_victim.uid] = VICTIMS[1]
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, VICTIMS[:2], PREEMPTOR, "DefaultPreemption")
    wait_done(executor)
    assert executor.is_pod_running_preemption(PREEMPTOR.uid)
    handle.pods[last_victim.uid] = last_victim
    assert not executor.is_pod_running_preemption(PREEMPTOR.uid)


def test_a_failed_preemption_lets_the_preemptor_in_at_once(runner: AsyncRunner) -> None:
    """After an error nothing is left to wait for: kube-scheduler's goroutine forgets the
    preemptor and activates it, whatever the cache shows."""
    actions = FakeActions(fail={"v2"})
    handle = FakeHandle(actions, runner)
    handle.pods.update((v.uid, v) for v in VICTIMS[:2])
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, VICTIMS[:2], PREEMPTOR, "DefaultPreemption")
    wait_done(executor)
    assert not executor.is_pod_running_preemption(PREEMPTOR.uid)
    assert handle.activated == ["preemptor"]


def test_a_preemptor_gone_from_the_queue_is_forgotten_once_its_victim_is(runner: AsyncRunner) -> None:
    """A preemptor deleted while held back is never asked about again: the next preemption drops
    its record once the cache has dropped its victim, so a long-running scheduler keeps none."""
    handle = FakeHandle(FakeActions(), runner)
    handle.pods[VICTIMS[0].uid] = VICTIMS[0]
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, VICTIMS[:1], PREEMPTOR, "DefaultPreemption")
    wait_done(executor)
    del handle.pods[VICTIMS[0].uid]
    other = pod("other-preemptor", 1000)
    handle.pods[VICTIMS[1].uid] = VICTIMS[1]
    executor.actuate_pod_preemption(NODE, VICTIMS[1:2], other, "DefaultPreemption")
    wait_done(executor)
    assert executor.waiting_preemptors() == {other.uid}


def test_without_a_runner_the_victims_are_deleted_inline_in_order() -> None:
    """simulate, the extender and the cache-backed tests: done when PostFilter returns, in order."""
    actions = FakeActions()
    handle = FakeHandle(actions, None, [pod("nominated-low", 10)])
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, VICTIMS, PREEMPTOR, "DefaultPreemption")
    assert actions.calls == ["clear nominated-low", "delete v1", "delete v2", "delete v3", "delete v4"]
    assert not executor.is_pod_running_preemption(PREEMPTOR.uid)


def test_shutdown_does_not_wait_for_a_running_deletion_and_refuses_new_preemptions() -> None:
    """Shutdown or a lost lease: a deletion in flight is not waited for, a new preemption is not
    started (its preemptor is not left "preempting")."""
    stopping = RecordingRunner(parallelism=2, workers=1)
    actions = FakeActions(hold={"v1"})
    executor = Executor(FakeHandle(actions, stopping))
    executor.actuate_pod_preemption(NODE, VICTIMS[:1], PREEMPTOR, "DefaultPreemption")
    actions.wait_in_flight({"v1"})
    stopping.shutdown()  # returns although v1's deletion is still held
    other = pod("other-preemptor", 1000)
    executor.actuate_pod_preemption(NODE, VICTIMS[1:2], other, "DefaultPreemption")
    assert not executor.is_pod_running_preemption(other.uid)
    actions.release.set()
    wait_done(executor)
    assert actions.calls == ["delete v1"]


def test_a_preemption_dropped_by_the_shutdown_does_not_leave_its_preemptor_marked() -> None:
    """One worker busy with a held deletion, a second preemption queued behind it: the shutdown
    drops the queued one before it starts, and PreEnqueue no longer holds its preemptor back."""
    stopping = RecordingRunner(parallelism=2, workers=1)
    actions = FakeActions(hold={"v1"})
    executor = Executor(FakeHandle(actions, stopping))
    executor.actuate_pod_preemption(NODE, VICTIMS[:1], PREEMPTOR, "DefaultPreemption")
    actions.wait_in_flight({"v1"})
    queued = pod("queued-preemptor", 1000)
    executor.actuate_pod_preemption(NODE, VICTIMS[1:2], queued, "DefaultPreemption")
    assert executor.is_pod_running_preemption(queued.uid)
    stopping.shutdown()
    assert not executor.is_pod_running_preemption(queued.uid)
    actions.release.set()
    wait_done(executor)
    assert actions.calls == ["delete v1"]


def test_a_shutdown_during_the_parallel_deletions_ends_the_preemption_as_an_error() -> None:
    """The victim pool's only thread busy elsewhere, the preemption's victim worker queued behind
    it: the shutdown drops that worker, and the preemption ends (no hang) as a failure: no victim
    deleted, the last one skipped, the preemptor activated."""
    stopping = RecordingRunner(parallelism=1, workers=1)
    actions = FakeActions()
    handle = FakeHandle(actions, stopping)
    executor = Executor(handle)
    blocker = threading.Event()
    stopping.victim_parallelizer._threads.submit(blocker.wait, 10)
    executor.actuate_pod_preemption(NODE, VICTIMS, PREEMPTOR, "DefaultPreemption")
    queued = threading.Event()
    while not queued.wait(0.01):  # until the goroutine has queued its victim worker
        if stopping.victim_parallelizer._threads._work_queue.qsize() > 0:
            queued.set()
    stopping.shutdown()
    blocker.set()
    wait_done(executor)
    assert actions.calls == []
    assert handle.activated == ["preemptor"]


def test_a_held_preemptor_whose_victim_the_cache_already_dropped_is_activated(runner: AsyncRunner) -> None:
    """The dry run chose a victim the API server had already removed (the cache was behind), and its
    Delete event was heard while the preemption ran, before the last victim was recorded: PreEnqueue
    held the preemptor back then, and no deletion is left to look at it again. The preemption's end
    activates it instead of leaving it to the 5-minute flush."""
    actions = FakeActions(hold={"v1"})
    handle = FakeHandle(actions, runner)  # the cache holds neither victim any more
    executor = Executor(handle)
    executor.actuate_pod_preemption(NODE, VICTIMS[:2], PREEMPTOR, "DefaultPreemption")
    actions.wait_in_flight({"v1"})
    assert executor.is_pod_running_preemption(PREEMPTOR.uid)  # gated, on v2's Delete event
    actions.release.set()
    wait_done(executor)
    assert handle.activated == ["preemptor"]
    assert not executor.is_pod_running_preemption(PREEMPTOR.uid)


def test_a_preemptor_already_let_in_is_not_activated(runner: AsyncRunner) -> None:
    """The usual order: the victim's Delete event lets the preemptor in before the preemption ends;
    nothing is left to wake."""
    last = VICTIMS[0]
    actions, handle, executor = _preempting_with_the_last_victim_in_flight(runner, last)
    del handle.pods[last.uid]
    assert not executor.is_pod_running_preemption(PREEMPTOR.uid)
    actions.release.set()
    wait_done(executor)
    assert handle.activated == []
