"""The binding workers' pool: tasks run on named threads, are counted until they finish, and a
shut-down pool drops what was still queued."""

from __future__ import annotations

import threading

import pytest

from app.standalone.workers import WorkerPool


def test_tasks_run_on_at_most_size_named_threads_and_are_counted_until_done() -> None:
    seen: list[int] = []
    release = threading.Event()
    names: set[str] = set()
    lock = threading.Lock()

    def task() -> None:
        release.wait(5)
        with lock:
            names.add(threading.current_thread().name)

    pool = WorkerPool(2, "binding", on_pending=seen.append)
    for _ in range(5):
        pool.submit(task)
    assert pool.pending == 5
    assert not pool.wait(0.05)
    release.set()
    assert pool.wait(5)
    assert pool.pending == 0
    assert names <= {"binding_0", "binding_1"} and names
    # The gauge hears every submission and every end, never a stale count.
    assert seen[:5] == [1, 2, 3, 4, 5]
    assert seen[5:] == [4, 3, 2, 1, 0]
    pool.shutdown()


def test_a_backlog_can_be_waited_down_to_a_low_mark() -> None:
    gates = [threading.Event() for _ in range(6)]
    pool = WorkerPool(1, "binding")
    for gate in gates:
        pool.submit(lambda gate=gate: gate.wait(5))
    assert not pool.wait(0.05, at_most=3)
    for gate in gates[:3]:
        gate.set()
    assert pool.wait(5, at_most=3)
    assert pool.pending <= 3
    for gate in gates[3:]:
        gate.set()
    assert pool.wait(5)
    pool.shutdown()


def test_a_failing_task_is_reported_and_the_thread_goes_on() -> None:
    errors: list[BaseException] = []
    ran = threading.Event()

    def boom() -> None:
        raise ValueError("bind exploded")

    pool = WorkerPool(1, "binding", on_error=errors.append)
    pool.submit(boom)
    pool.submit(ran.set)
    assert pool.wait(5)
    assert ran.is_set()
    assert [str(e) for e in errors] == ["bind exploded"]
    pool.shutdown()


def busy_single_worker(ran: list[str]) -> tuple[WorkerPool, threading.Event]:
    """A one-worker pool whose worker is busy until the returned event is set (its task then adds
    "running" to ``ran``)."""
    started = threading.Event()
    release = threading.Event()

    def slow() -> None:
        started.set()
        release.wait(5)
        ran.append("running")

    pool = WorkerPool(1, "binding")
    pool.submit(slow)
    assert started.wait(5)
    return pool, release


def test_shutdown_drops_queued_tasks_lets_running_ones_finish_and_refuses_new_ones() -> None:
    ran: list[str] = []
    pool, release = busy_single_worker(ran)
    pool.submit(lambda: ran.append("queued"))
    pool.shutdown()
    release.set()
    assert pool.wait(5)
    assert ran == ["running"]
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)


def test_a_pool_needs_a_thread() -> None:
    with pytest.raises(ValueError):
        WorkerPool(0, "binding")


def test_a_task_submitted_first_runs_before_the_queued_ones_at_the_next_free_worker() -> None:
    """A binding cycle that others wait for (a claim allocation in flight) does not wait behind the
    backlog: the busy worker takes it as soon as its own task ends; the rest keep their order."""
    ran: list[str] = []
    pool, release = busy_single_worker(ran)
    for name in ("queued 1", "queued 2"):
        pool.submit(lambda name=name: ran.append(name))
    pool.submit(lambda: ran.append("first 1"), first=True)
    pool.submit(lambda: ran.append("first 2"), first=True)
    assert pool.pending == 5
    release.set()
    assert pool.wait(5)
    assert ran == ["running", "first 1", "first 2", "queued 1", "queued 2"]
    assert pool.pending == 0
    pool.shutdown()


def test_an_idle_pool_runs_a_first_task_at_once_and_shutdown_drops_queued_first_tasks() -> None:
    done = threading.Event()
    pool = WorkerPool(2, "binding")
    pool.submit(done.set, first=True)
    assert done.wait(5)
    assert pool.wait(5)

    ran: list[str] = []
    single, release = busy_single_worker(ran)
    single.submit(lambda: ran.append("first"), first=True)
    single.shutdown()
    release.set()
    assert single.wait(5)
    assert ran == ["running"]
    pool.shutdown()
