"""The binding workers of ``berth run``: a small thread pool without futures.

kube-scheduler runs each binding cycle in a goroutine. berth hands it to one of a few threads;
``concurrent.futures.ThreadPoolExecutor`` did that with a Future, a work item, a semaphore probe
and a done callback per task, and the scheduler kept the futures in a set to count and await
them: several microseconds of the GIL per scheduled pod that decided nothing. Here a task is a
callable on a queue, and the pool counts what it was given and has not finished.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["WorkerPool"]


class WorkerPool:
    """Up to ``size`` daemon threads running submitted callables in submission order.

    Threads are started as work arrives (one per task waiting without a thread, as the executor
    did). A task submitted with ``first=True`` runs before every queued one, at the next worker that
    is free (the order among such tasks is kept). ``on_pending`` is told the number of tasks
    submitted and not finished after every change, under the pool's lock, so that a gauge set there
    never goes backwards; ``on_error`` hears what a task raised (the task's thread goes on).
    """

    def __init__(
        self,
        size: int,
        name_prefix: str,
        *,
        on_pending: Callable[[int], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one thread")
        self.size = size
        self.name_prefix = name_prefix
        self._on_pending = on_pending
        self._on_error = on_error
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        # Tasks to run before the queued ones; each also puts _RUN_FIRST on _tasks, which wakes an
        # idle worker (a busy one takes the task from here when it finishes its own).
        self._first: deque[Callable[[], None]] = deque()
        self._threads: list[threading.Thread] = []
        self._pending = 0
        self._idle = threading.Condition(threading.Lock())
        self._waiting_for: list[int] = []  # each waiter's ``at_most``: a task's end wakes them at it
        self._closed = False
        self._cancelled = False

    @property
    def pending(self) -> int:
        """Tasks submitted and not finished (queued or running)."""
        with self._idle:
            return self._pending

    def submit(self, task: Callable[[], None], *, first: bool = False) -> None:
        """Run ``task`` on a worker thread, ``first`` before the tasks already queued; RuntimeError
        once the pool is shut down."""
        with self._idle:
            if self._closed:
                raise RuntimeError("cannot run a task after the worker pool was shut down")
            self._pending += 1
            if self._on_pending is not None:
                self._on_pending(self._pending)
            if len(self._threads) < min(self._pending, self.size):
                thread = threading.Thread(
                    target=self._work, name=f"{self.name_prefix}_{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        if first:
            self._first.append(task)
            self._tasks.put(_RUN_FIRST)
        else:
            self._tasks.put(task)

    def wait(self, timeout: float | None = None, at_most: int = 0) -> bool:
        """Wait until at most ``at_most`` submitted tasks are unfinished (by default: all finished),
        for at most ``timeout`` seconds; True if that was reached. A caller that lets a backlog drain
        to a low mark is woken once, at the mark, not at every task's end."""
        with self._idle:
            self._waiting_for.append(at_most)
            try:
                return self._idle.wait_for(lambda: self._pending <= at_most, timeout)
            finally:
                self._waiting_for.remove(at_most)

    def shutdown(self) -> None:
        """Take no more tasks, drop the queued ones (running ones finish) and let the threads end."""
        with self._idle:
            self._closed = self._cancelled = True
            threads = len(self._threads)
        for _ in range(threads):
            self._tasks.put(None)

    def _work(self) -> None:
        tasks = self._tasks
        first = self._first
        while True:
            while first:
                try:
                    urgent = first.popleft()
                except IndexError:  # another worker took the last one
                    break
                self._run(urgent)
            task = tasks.get()
            if task is None:
                return
            if task is not _RUN_FIRST:  # _RUN_FIRST: its task ran already, or runs at the loop's top
                self._run(task)

    def _run(self, task: Callable[[], None]) -> None:
        try:
            if not self._cancelled:
                task()
        except Exception as err:  # a task's failure must not end the thread
            if self._on_error is not None:
                self._on_error(err)
        finally:
            with self._idle:
                self._pending -= 1
                if self._on_pending is not None:
                    self._on_pending(self._pending)
                if self._waiting_for and self._pending <= max(self._waiting_for):
                    self._idle.notify_all()


def _run_first() -> None:
    """The marker a ``first`` task puts on the queue (never called)."""


_RUN_FIRST = _run_first
