"""Actuating a preemption (``framework/preemption/executor.go``).

kube-scheduler v1.36 preempts asynchronously (SchedulerAsyncPreemption, beta and on by default):
the preemptor is marked "preempting" (DefaultPreemption's PreEnqueue then holds it back), the
lower-priority pods nominated to the node lose their nomination, every victim but the last is
evicted in parallel, then the last one (its deletion is what requeues the preemptor), all of it in
a goroutine while the scheduling cycle goes on. berth runs those steps in the same order through
the handle's :class:`~app.framework.interfaces.ClusterActions`: under ``berth run`` on the
handle's :class:`AsyncRunner` (``preemption_runner``), in the background; without one (simulate,
the extender, tests over the cache) inline. An action that fails is logged and ends the
preemption, as an error in kube-scheduler's goroutine does (the PostFilter result stays Success),
and the preemptor is activated (the handle's ``activate``) so that it does not wait in the
unschedulable pool for an event that never comes. ``async_preemption=False`` is the synchronous
``prepareCandidate``: all victims in parallel, a failed eviction is the PostFilter's Error status.
"In parallel" is on the handle's :class:`~app.framework.preemption.parallelizer.VictimParallelizer`
(``preemption_parallelizer``, set by ``berth run``, shared by both paths as kube-scheduler's
``fh.Parallelizer()`` is); without one the victims are evicted one after the other, in their order,
so that the result is deterministic.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from app import logs, metrics
from app.api.objects import Pod, pod_priority
from app.framework.interfaces import ClusterActions, PodNominator
from app.framework.preemption.parallelizer import VictimParallelizer, run_in_order
from app.framework.status import Code, Status

__all__ = ["AsyncRunner", "Executor", "lower_priority_nominated_pods"]


def lower_priority_nominated_pods(nominator: PodNominator | None, priority: int, node_name: str) -> list[Pod]:
    """``getLowerPriorityNominatedPods``: pods nominated to ``node_name`` with a lower priority."""
    if nominator is None:
        return []
    return [pi.pod for pi in nominator.nominated_pods_for_node(node_name) if pod_priority(pi.pod) < priority]


class AsyncRunner:
    """Where ``berth run`` runs asynchronous preemption: kube-scheduler's goroutine per preemption.

    :meth:`go` runs a preemption on one of ``workers`` threads (a goroutine each in kube-scheduler,
    unbounded; here a preemption beyond ``workers`` waits its turn, its preemptor held back by
    PreEnqueue meanwhile). Its victims are evicted on the handle's
    :class:`~app.framework.preemption.parallelizer.VictimParallelizer`, as kube-scheduler's goroutine
    uses ``fh.Parallelizer()``. :meth:`shutdown` never waits: what has not started is dropped, what
    runs ends with its API call.
    """

    def __init__(self, workers: int = 16) -> None:
        self._goroutines = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="preemption")

    def go(self, fn: Callable[[], None]) -> Future[None]:
        """Run ``fn`` in the background; RuntimeError once shut down."""
        future = self._goroutines.submit(fn)
        future.add_done_callback(_log_crash)
        return future

    def shutdown(self) -> None:
        """Stop taking work and drop what has not started; never waits for running API calls."""
        self._goroutines.shutdown(wait=False, cancel_futures=True)


def _log_crash(future: Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        logs.error("Unhandled error in an async preemption", err=repr(future.exception()))


class Executor:
    """Evicts a candidate's victims and tracks which preemptors are still preempting."""

    def __init__(self, handle: Any, async_preemption: bool = True) -> None:
        self.handle = handle
        self.async_preemption = async_preemption
        # Re-entrant: PreEnqueue's answer and the record of it are one step under it (see _running).
        self._lock = threading.RLock()
        self._preempting: set[str] = set()
        self._last_victim: dict[str, Pod] = {}
        # The victim each preemption deletes last, known from its start (_last_victim is recorded
        # only once the others are deleted): its removal from the cache is what lets the preemptor in.
        self._final_victim: dict[str, Pod] = {}
        # Preemptors whose background preemption has finished, still held back until the cache has
        # caught up with the deletion of their last victim (see is_pod_running_preemption).
        self._awaiting_cache: set[str] = set()
        # Preemptors whose last PreEnqueue answer was "still preempting": gated in the queue until a
        # pod deletion looks at them again.
        self._held: set[str] = set()

    @property
    def actions(self) -> ClusterActions | None:
        """The handle's cluster actions (None for a handle without them)."""
        return getattr(self.handle, "cluster_actions", None)

    @property
    def parallelizer(self) -> VictimParallelizer | None:
        """The handle's parallelizer for victims (``berth run``); None: victims are evicted in order."""
        return getattr(self.handle, "preemption_parallelizer", None)

    def _until(self, pieces: int, work: Callable[[int], Status | None]) -> Status | None:
        """``Parallelizer().Until`` over ``pieces`` stopping at the first failure, which it returns."""
        parallelizer = self.parallelizer
        if parallelizer is None:
            return run_in_order(pieces, work)
        return parallelizer.until(pieces, work)

    @property
    def runner(self) -> AsyncRunner | None:
        """The handle's background runner (``berth run``); None: preemption runs inline."""
        return getattr(self.handle, "preemption_runner", None)

    @property
    def nominator(self) -> PodNominator | None:
        """The handle's nominator (None: nothing is nominated)."""
        return getattr(self.handle, "nominator", None)

    def actuate_pod_preemption(
        self, node_name: str, victims: Sequence[Pod], preemptor: Pod, plugin: str
    ) -> Status | None:
        """Evict ``victims`` from ``node_name`` for ``preemptor``; None on success."""
        actions = self.actions
        if actions is None:
            return Status(Code.ERROR, "preemption: the scheduler has no cluster actions to evict victims")
        if self.async_preemption:
            self._prepare_candidate_async(actions, node_name, victims, preemptor, plugin)
            return None
        return self._prepare_candidate(actions, node_name, victims, preemptor, plugin)

    def _prepare_candidate_async(
        self, actions: ClusterActions, node_name: str, victims: Sequence[Pod], preemptor: Pod, plugin: str
    ) -> None:
        to_delete = [v for v in victims if not v.deletion_timestamp]
        if not to_delete:
            return
        metrics.PREEMPTION_VICTIMS.observe(len(victims))
        uid = preemptor.uid
        self._forget_caught_up()
        # Marked before the work starts, so that PreEnqueue holds the preemptor back from now on.
        with self._lock:
            self._preempting.add(uid)
            self._final_victim[uid] = to_delete[-1]
            self._last_victim.pop(uid, None)
            self._awaiting_cache.discard(uid)
        # kube-scheduler's goroutine defers `...WithLabelValues(result).Observe(SinceInSeconds(startTime))`
        # and `...WithLabelValues(result).Inc()`: Go evaluates a deferred call's receiver and arguments
        # when the defer statement runs, so v1.36.3 always records result "success" and a duration
        # taken right after the start, whatever the API calls do. berth records the same.
        runner = self.runner
        if runner is None:
            self._preempt_victims(actions, node_name, to_delete, preemptor, plugin, None)
            return
        try:
            future = runner.go(
                lambda: self._preempt_victims(actions, node_name, to_delete, preemptor, plugin, runner)
            )
        except RuntimeError:  # the runner is shut down (shutdown or leader loss): nothing is deleted
            self._forget(uid)
            logs.info("Async preemption not started: the scheduler is stopping", 2, pod=preemptor.key)
            return
        # Dropped before it started by a shutdown: the preemptor is not left marked as preempting.
        future.add_done_callback(lambda f: self._forget(uid) if f.cancelled() else None)

    def _forget(self, uid: str) -> None:
        with self._lock:
            self._preempting.discard(uid)
            self._final_victim.pop(uid, None)
            self._last_victim.pop(uid, None)
            self._awaiting_cache.discard(uid)
            self._held.discard(uid)

    def _forget_caught_up(self) -> None:
        """Drop the finished preemptions whose last victim the cache no longer holds back: those of
        preemptors that left the queue (deleted, or bound elsewhere) before PreEnqueue saw them again."""
        with self._lock:
            finished = [(uid, self._last_victim[uid]) for uid in self._awaiting_cache]
        for uid, victim in finished:
            if not self._deletion_pending(victim):
                self._forget(uid)

    def _preempt_victims(
        self,
        actions: ClusterActions,
        node_name: str,
        to_delete: Sequence[Pod],
        preemptor: Pod,
        plugin: str,
        runner: AsyncRunner | None,
    ) -> None:
        """The goroutine of ``prepareCandidateAsync``: clear the lower-priority nominations, delete
        all victims but the last in parallel (the first error skips the rest and the last victim),
        then the last one; any error activates the preemptor. Without ``runner`` all of it runs on
        the caller's thread, the victims one after the other (simulate, the extender, tests)."""
        started = time.perf_counter()
        observed = time.perf_counter() - started
        uid = preemptor.uid
        failed = False
        try:
            logs.info(
                "Start the preemption asynchronously",
                2,
                preemptor=preemptor.key,
                node=node_name,
                numVictimsToDelete=len(to_delete),
            )
            nominated = lower_priority_nominated_pods(self.nominator, pod_priority(preemptor), node_name)
            if nominated:
                s = actions.clear_nominated_node_name(nominated)
                if s is not None and not s.is_success():
                    logs.error("Cannot clear 'NominatedNodeName' field", node=node_name, err=s.message())
                    failed = True  # not critical: the victims are still deleted

            def preempt(index: int) -> Status | None:
                return actions.preempt_pod(preemptor, to_delete[index], node_name, plugin)

            # All victims but the last in parallel; the last one alone afterwards, once recorded,
            # so that PreEnqueue can tell its deletion is under way (kube-scheduler's comment).
            rest = len(to_delete) - 1
            s = self._until(rest, preempt)
            if s is not None and not s.is_success():
                logs.error("Error occurred during async preemption", pod=preemptor.key, err=s.message())
                failed = True
                return
            with self._lock:
                self._last_victim[uid] = to_delete[-1]
            s = preempt(rest)
            if s is not None and not s.is_success():
                logs.error(
                    "Error occurred during async preemption of the last victim",
                    pod=preemptor.key,
                    err=s.message(),
                )
                failed = True
        finally:
            with self._lock:
                kept = runner is not None and getattr(self.handle, "get_pod", None) is not None
                last = self._last_victim.get(uid)
                # PreEnqueue last held the preemptor back, and the deletion that would look at it
                # again has already been heard (the cache dropped the last victim before it was
                # recorded: one the API server had removed before the dry run chose it). Without a
                # wake-up it would wait for an unrelated deletion, or the 5-minute flush.
                # kube-scheduler's informer is never that far behind; berth's can be (see _running).
                stranded = (
                    not failed and last is not None and uid in self._held and not self._deletion_pending(last)
                )
                if failed or last is None or not kept:
                    self._preempting.discard(uid)
                    self._final_victim.pop(uid, None)
                    self._last_victim.pop(uid, None)
                    self._held.discard(uid)
                else:
                    self._awaiting_cache.add(uid)
            logs.info(
                "Async Preemption finished completely",
                2,
                preemptor=preemptor.key,
                node=node_name,
                result="error" if failed else "success",
            )
            if failed or stranded:
                # The preemptor could otherwise wait in the unschedulable pool for an event that
                # never comes: kube-scheduler's deferred fh.Activate.
                activate = getattr(self.handle, "activate", None)
                if activate is not None:
                    activate([preemptor])
            metrics.PREEMPTION_GOROUTINES_EXECUTION.labels("success").inc()
            metrics.PREEMPTION_GOROUTINES_DURATION.labels("success").observe(observed)

    def _prepare_candidate(
        self, actions: ClusterActions, node_name: str, victims: Sequence[Pod], preemptor: Pod, plugin: str
    ) -> Status | None:
        metrics.PREEMPTION_VICTIMS.observe(len(victims))
        # A victim whose graceful deletion has already started needs no API call.
        to_delete = [v for v in victims if not v.deletion_timestamp]
        s = self._until(
            len(to_delete), lambda index: actions.preempt_pod(preemptor, to_delete[index], node_name, plugin)
        )
        if s is not None and not s.is_success():
            return Status(Code.ERROR, *s.reasons)
        nominated = lower_priority_nominated_pods(self.nominator, pod_priority(preemptor), node_name)
        if nominated:
            s = actions.clear_nominated_node_name(nominated)
            if s is not None and not s.is_success():
                logs.error("Cannot clear 'NominatedNodeName' field", node=node_name, err=s.message())
        return None

    def is_pod_running_preemption(self, uid: str) -> bool:
        """``IsPodRunningPreemption``, see :meth:`_running`; remembers which preemptors it held back."""
        with self._lock:  # one step, so that a preemption ending meanwhile sees the answer recorded
            running = self._running(uid)
            if running and uid in self._preempting:
                self._held.add(uid)
            else:
                self._held.discard(uid)
        return running

    def _running(self, uid: str) -> bool:
        """``IsPodRunningPreemption``: the preemptor waits while its preemption runs, and then until
        the cache has seen its last victim go.

        kube-scheduler lets the preemptor in once the last victim is terminating, or once the
        goroutine has finished, and relies on its informer: a victim deleted with a zero grace
        period (scheduler_perf's, and any pod without a kubelet to stop it) is written terminating
        and removed in two consecutive watch events, which client-go's informer applies within
        microseconds, so the preemptor's next scheduling cycle in practice always sees the victim
        gone. berth's informer decodes in Python and can trail the API calls by many events; letting
        the preemptor in on kube's literal condition then runs its cycle against a cache where the
        victims still occupy the nominated node: a failed attempt ("not eligible due to a
        terminating pod on the nominated node", a status PATCH, an Event, a backoff) or, while the
        cache has not even seen the victim terminating, a second preemption. So berth holds the
        preemptor back while the cache still has a last victim that is not terminating, or one
        whose removal is already due (terminating with a zero grace period and no finalizers); the
        victim's Delete event, which DefaultPreemption's PreEnqueue registers for, then lets it in.
        A victim that terminates gracefully (a kubelet stops it) lets the preemptor in as soon as it
        is terminating, as in kube-scheduler.
        """
        with self._lock:
            if uid not in self._preempting:
                return False
            last = self._last_victim.get(uid)
            finished = uid in self._awaiting_cache
        if last is None:
            return True
        if self._deletion_pending(last):
            return True
        if finished:
            self._forget(uid)
        return False

    def released_by(self, uid: str) -> str | None:
        """Asked while PreEnqueue holds the preemptor ``uid`` back: the UID of the victim whose removal
        from the cache alone can let it in, or None when any pod deletion may.

        Every other way out activates the preemptor: a failed preemption, and one that ends after the
        cache already dropped (or saw terminating gracefully) the last victim (the stranded case of
        :meth:`_preempt_victims`). While the last victim is still in the cache, not terminating or with
        its removal due, only its own Delete event can change :meth:`_running`'s answer; once it
        terminates gracefully, any deletion lets the preemptor in (kube-scheduler's condition), so
        the queue asks again when that victim is updated. Without a background runner or a cache to
        look at (simulate, the extender, tests) there is no such victim to name.
        """
        with self._lock:
            if uid not in self._preempting or self.runner is None:
                return None
            final = self._final_victim.get(uid)
            last = self._last_victim.get(uid)
        if final is None or getattr(self.handle, "get_pod", None) is None:
            return None
        if last is not None and not self._deletion_pending(last):
            return None
        return final.uid

    def waiting_preemptors(self) -> set[str]:
        """The UIDs of the preemptors PreEnqueue may still hold back (their preemption runs, or the
        cache has not yet seen their last victim go)."""
        with self._lock:
            return set(self._preempting)

    def _deletion_pending(self, victim: Pod) -> bool:
        """The cache still has ``victim`` and will see it removed: not terminating yet, or
        terminating with its removal already due (zero grace period, no finalizers)."""
        get_pod = getattr(self.handle, "get_pod", None)
        if get_pod is None:
            return True  # nothing to look at: running until the preemption itself ends
        current = get_pod(victim.uid)
        if current is None:
            return False
        if not current.deletion_timestamp:
            return True
        meta = current.raw.get("metadata") or {}
        return meta.get("deletionGracePeriodSeconds") == 0 and not meta.get("finalizers")
