"""The ScheduleOne loop's lifecycle (a shutdown can come before leadership starts the loop) and its
hand-over of binding cycles to the workers."""

from __future__ import annotations

import threading

import pytest

from app import featuregates
from app.api.objects import Pod
from app.backend.queue.queued_pod_info import QueuedPodInfo
from app.backend.queue.scheduling_queue import PriorityQueue
from app.config import load_config
from app.framework.cycle_state import CycleState
from app.framework.dra import IN_FLIGHT_ALLOCATION_KEY
from app.framework.types import PodInfo
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from app.standalone.scheduler import PENDING_CALLS_PER_WORKER, Scheduler, binding_goes_first
from tests.builders import make_node, make_pod


class _NoStatus:
    def update_pod_scheduled_condition(
        self, pod: object, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        raise AssertionError("no pod is scheduled in these tests")

    def nominate_for_binding(self, pod: object, node_name: str) -> None:
        raise AssertionError("no pod is bound in these tests")


def _scheduler() -> Scheduler:
    return _scheduler_with()


def _scheduler_with(**kwargs: int) -> Scheduler:
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    queue = PriorityQueue.for_profiles(engine.profiles, nominator=engine.nominator)
    return Scheduler(engine, queue, lookup_pod=lambda key: None, recorders={}, status=_NoStatus(), **kwargs)


def test_stop_before_start_and_a_late_start_runs_no_loop() -> None:
    # A SIGTERM can arrive while leadership is still starting the loop (kube's "Started leading" and
    # the signal race): stop() must not fail, and the late start() must not start the loop.
    s = _scheduler()
    assert s.stop(timeout=1.0)
    s.start()
    assert not any(t.name == "schedule-one" for t in threading.enumerate())


def test_stop_ends_a_started_loop() -> None:
    s = _scheduler()
    s.start()
    assert any(t.name == "schedule-one" for t in threading.enumerate())
    assert s.stop(timeout=5.0)
    assert not any(t.name == "schedule-one" and t.is_alive() for t in threading.enumerate())


def test_a_stop_racing_the_start_never_joins_an_unstarted_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # The race seen on a SIGTERM right after "Started leading": stop() ran between the creation of the
    # ScheduleOne thread and its start, and join() raised "cannot join thread before it is started".
    s = _scheduler()
    errors: list[BaseException] = []
    stoppers: list[threading.Thread] = []
    original = threading.Thread

    def stop() -> None:
        try:
            s.stop(timeout=5.0)
        except BaseException as err:
            errors.append(err)

    class RacingThread(original):
        def start(self) -> None:
            if self.name == "schedule-one" and not stoppers:
                stopper = original(target=stop)
                stoppers.append(stopper)
                stopper.start()
                stopper.join(0.3)  # without the lifecycle lock, stop() runs to its end in here
            super().start()

    monkeypatch.setattr(threading, "Thread", RacingThread)
    s.start()
    stoppers[0].join(5.0)
    assert not errors
    assert not any(t.name == "schedule-one" and t.is_alive() for t in threading.enumerate())


class _RecordedStatus:
    def __init__(self) -> None:
        self.updates: list[str] = []
        self.writers: list[str] = []  # the thread that wrote each update
        self.nominations: list[str | None] = []

    def update_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        self.updates.append(f"{pod.name}: {reason}")
        self.writers.append(threading.current_thread().name)
        self.nominations.append(nominated_node_name)

    def nominate_for_binding(self, pod: object, node_name: str) -> None:
        raise AssertionError("no pod is bound in these tests")


def _blocked_calls(s: Scheduler, count: int, release: threading.Event) -> None:
    def blocked() -> None:
        release.wait(10)

    for _ in range(count):
        s._submit(blocked)


def test_the_next_pod_waits_in_the_queue_while_binding_workers_lag_behind() -> None:
    # One binding worker: PENDING_CALLS_PER_WORKER calls may be pending; the scheduling thread takes
    # the next pod only once half of them finished, instead of piling up cycles that each keep
    # their state (thousands of them on a 5,000-node cluster).
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    queue = PriorityQueue.for_profiles(engine.profiles, nominator=engine.nominator)
    status = _RecordedStatus()
    s = Scheduler(engine, queue, lookup_pod=lambda key: None, recorders={}, status=status, bind_workers=1)
    release = threading.Event()
    _blocked_calls(s, PENDING_CALLS_PER_WORKER, release)
    queue.add(make_pod("waiting"))
    taken = threading.Event()
    one = threading.Thread(target=lambda: (s.schedule_one(timeout=5), taken.set()))
    one.start()
    assert not taken.wait(0.3)
    assert [p.name for p in queue.pending_pods()[0]] == ["waiting"]
    release.set()
    assert taken.wait(5)
    one.join(5)
    assert s.stop(timeout=5.0)
    assert status.updates == ["waiting: Unschedulable"]  # no nodes: it was attempted, and failed


def test_a_stop_ends_the_wait_for_the_binding_workers() -> None:
    s = _scheduler_with(bind_workers=1)
    release = threading.Event()
    _blocked_calls(s, PENDING_CALLS_PER_WORKER, release)
    returned = threading.Event()
    one = threading.Thread(target=lambda: (s.schedule_one(timeout=0.1), returned.set()))
    one.start()
    assert not returned.wait(0.3)
    stopper = threading.Thread(target=s.stop, kwargs={"timeout": 0.1})
    stopper.start()
    assert returned.wait(5)
    release.set()
    stopper.join(5)
    one.join(5)


def test_a_first_attempt_writing_a_claim_allocation_binds_before_the_backlog_and_a_retry_does_not() -> None:
    """The binding cycle that writes a shared claim's allocation goes before the calls waiting for a
    worker (the pods sharing the claim are rejected until it has); a pod that failed before keeps
    its place behind the status update of that failure, which must land before its binding."""
    allocating = CycleState()
    allocating.write(IN_FLIGHT_ALLOCATION_KEY, True)
    first_attempt = QueuedPodInfo(PodInfo(make_pod("allocates")), attempts=1)
    retried = QueuedPodInfo(PodInfo(make_pod("retried")), attempts=2)
    assert binding_goes_first(first_attempt, allocating)
    assert not binding_goes_first(retried, allocating)
    assert not binding_goes_first(first_attempt, CycleState())  # an allocated claim, or none


@pytest.mark.parametrize("async_api_calls", [False, True])
def test_a_failure_status_is_written_before_the_next_pod_unless_api_calls_are_async(
    async_api_calls: bool,
) -> None:
    """kube's updatePod: with SchedulerAsyncAPICalls off (the default) the scheduling thread writes
    a failed pod's PodScheduled=False itself before it pops the next pod; with it on, kube's API
    dispatcher writes it, and berth's binding workers do."""
    featuregates.DEFAULT.set(f"SchedulerAsyncAPICalls={str(async_api_calls).lower()}")
    try:
        registry = in_tree_registry()
        engine = Engine(load_config(None, registry), registry, seed=1)
        queue = PriorityQueue.for_profiles(engine.profiles, nominator=engine.nominator)
        status = _RecordedStatus()
        lookup = {"default/unplaceable": make_pod("unplaceable")}
        s = Scheduler(engine, queue, lookup_pod=lookup.get, recorders={}, status=status, bind_workers=1)
        queue.add(lookup["default/unplaceable"])
        assert s.schedule_one(timeout=5)  # no nodes: the attempt fails
        if not async_api_calls:
            assert status.updates == ["unplaceable: Unschedulable"]
            assert status.writers == [threading.current_thread().name]
        assert s.stop(timeout=5.0)
        assert status.updates == ["unplaceable: Unschedulable"]
        if async_api_calls:
            assert status.writers != [threading.current_thread().name]
    finally:
        featuregates.DEFAULT.reset()


def test_a_preemptors_failure_status_with_its_nomination_is_written_by_a_worker() -> None:
    """After a preemption that nominated a node the scheduling thread goes on without waiting for
    the status write (the preemptor waits for its victims anyway, so waiting saves no attempt):
    a binding worker writes PodScheduled=False with the nominated node."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    engine.cache.add_node(make_node("n1", {"cpu": "1", "memory": "1Gi", "pods": "10"}))
    engine.cache.add_pod(make_pod("victim", [{"cpu": "1"}], nodeName="n1", priority=0))
    queue = PriorityQueue.for_profiles(engine.profiles, nominator=engine.nominator)
    status = _RecordedStatus()
    preemptor = make_pod("preemptor", [{"cpu": "1"}], priority=100)
    s = Scheduler(
        engine, queue, lookup_pod={preemptor.key: preemptor}.get, recorders={}, status=status, bind_workers=1
    )
    queue.add(preemptor)
    assert s.schedule_one(timeout=5)
    assert s.stop(timeout=5.0)
    assert status.updates == ["preemptor: Unschedulable"]
    assert status.nominations == ["n1"]
    assert status.writers != [threading.current_thread().name]
