"""Evicting a candidate's victims in parallel: kube-scheduler's ``Parallelizer().Until`` for preemption.

kube-scheduler's executor deletes the victims of a candidate through ``fh.Parallelizer().Until``
(16 workers by default) with a context that the first error cancels: pieces not yet started are
skipped, API calls already sent finish. :class:`VictimParallelizer` is that for ``berth run``, where
each victim costs two round trips to the API server (the DisruptionTarget PATCH and the DELETE) that
would otherwise be waited for one after the other on the scheduling thread. It is the handle's
``preemption_parallelizer``; without one (``berth simulate``, the extender's engine, tests over the
cache) the executor evicts the victims in order, so that their outcome is deterministic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from app.framework.status import Code, Status

__all__ = ["DEFAULT_VICTIM_PARALLELISM", "VictimParallelizer", "run_in_order"]

DEFAULT_VICTIM_PARALLELISM = 16  # kube-scheduler's parallelize.DefaultParallelism

Work = Callable[[int], Status | None]


def run_in_order(pieces: int, work: Work) -> Status | None:
    """``work(0)``, ``work(1)``, ... until one fails; that failure, or None when all succeeded."""
    for index in range(pieces):
        s = work(index)
        if s is not None and not s.is_success():
            return s
    return None


class VictimParallelizer:
    """Runs the pieces of one preemption on up to ``parallelism`` threads, stopping at the first failure.

    Threads are shared by all preemptions of the scheduler. :meth:`shutdown` never waits: what has
    not started is dropped, what runs ends with its API call.
    """

    def __init__(self, parallelism: int = DEFAULT_VICTIM_PARALLELISM) -> None:
        if parallelism < 1:
            raise ValueError(f"parallelism must be at least 1, got {parallelism}")
        self._parallelism = parallelism
        self._threads = ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="preemption-victim")

    def until(self, pieces: int, work: Work) -> Status | None:
        """``work(i)`` for every ``i < pieces`` in parallel; the first failure (pieces not started by
        then are skipped, as kube-scheduler's cancelled context skips them), or None when all
        succeeded. An exception in ``work`` is that piece's Error status. Once :meth:`shutdown` has
        dropped pieces, the answer is an Error status saying so."""
        if pieces <= 1:
            return run_in_order(pieces, work)
        lock = threading.Lock()
        failure: list[Status] = []
        next_piece = iter(range(pieces))

        def worker() -> None:
            while True:
                with lock:
                    if failure:
                        return
                    index = next(next_piece, None)
                if index is None:
                    return
                try:
                    s = work(index)
                except Exception as err:  # the piece's error, as a failed API call would be
                    s = Status(Code.ERROR, f"preemption: {err!r}")
                if s is not None and not s.is_success():
                    with lock:
                        if not failure:
                            failure.append(s)
                    return

        finished = threading.Semaphore(0)
        submitted = 0
        try:
            for _ in range(min(pieces, self._parallelism)):
                # A done callback, not concurrent.futures.wait: a worker that shutdown() cancels is
                # "done" for its callbacks, while wait() would wait for it forever.
                self._threads.submit(worker).add_done_callback(lambda _f: finished.release())
                submitted += 1
        except RuntimeError:  # shut down meanwhile: wait only for the workers already submitted
            pass
        for _ in range(submitted):
            finished.acquire()
        with lock:
            if failure:
                return failure[0]
            dropped = next(next_piece, None) is not None
        if dropped:
            return Status(Code.ERROR, "preemption: the scheduler is shutting down")
        return None

    def shutdown(self) -> None:
        """Stop taking work and drop what has not started; never waits for running API calls."""
        self._threads.shutdown(wait=False, cancel_futures=True)
