"""Actuating a preemption (``framework/preemption/executor.go``).

kube-scheduler v1.36 preempts asynchronously (SchedulerAsyncPreemption, beta and on by default):
the preemptor is marked "preempting" (DefaultPreemption's PreEnqueue then holds it back), the
lower-priority pods nominated to the node lose their nomination, every victim but the last is
evicted in parallel, then the last one (its deletion is what requeues the preemptor). berth runs
those steps in the same order, inline, through the handle's
:class:`~app.framework.interfaces.ClusterActions`; an action that fails is logged and ends the
preemption, as an error in kube-scheduler's goroutine does (the PostFilter result stays Success).
``async_preemption=False`` is the synchronous ``prepareCandidate``: all victims in parallel, a
failed eviction is the PostFilter's Error status. "In parallel" is on the handle's
:class:`~app.framework.preemption.parallelizer.VictimParallelizer` (``preemption_parallelizer``,
set by ``berth run``); without one the victims are evicted one after the other, in their order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from app import logs, metrics
from app.api.objects import Pod, pod_priority
from app.framework.interfaces import ClusterActions, PodNominator
from app.framework.preemption.parallelizer import VictimParallelizer, run_in_order
from app.framework.status import Code, Status

__all__ = ["Executor", "lower_priority_nominated_pods"]


def lower_priority_nominated_pods(nominator: PodNominator | None, priority: int, node_name: str) -> list[Pod]:
    """``getLowerPriorityNominatedPods``: pods nominated to ``node_name`` with a lower priority."""
    if nominator is None:
        return []
    return [pi.pod for pi in nominator.nominated_pods_for_node(node_name) if pod_priority(pi.pod) < priority]


class Executor:
    """Evicts a candidate's victims and tracks which preemptors are still preempting."""

    def __init__(self, handle: Any, async_preemption: bool = True) -> None:
        self.handle = handle
        self.async_preemption = async_preemption
        self._lock = threading.Lock()
        self._preempting: set[str] = set()
        self._last_victim: dict[str, Pod] = {}

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
        with self._lock:
            self._preempting.add(uid)
        # kube-scheduler's goroutine defers `...WithLabelValues(result).Observe(SinceInSeconds(startTime))`
        # and `...WithLabelValues(result).Inc()`: Go evaluates a deferred call's receiver and arguments
        # when the defer statement runs, so v1.36.3 always records result "success" and a duration
        # taken right after the start, whatever the API calls do. berth records the same.
        started = time.perf_counter()
        observed = time.perf_counter() - started
        try:
            nominated = lower_priority_nominated_pods(self.nominator, pod_priority(preemptor), node_name)
            if nominated:
                s = actions.clear_nominated_node_name(nominated)
                if s is not None and not s.is_success():
                    logs.error("Cannot clear 'NominatedNodeName' field", node=node_name, err=s.message())

            def preempt(index: int) -> Status | None:
                return actions.preempt_pod(preemptor, to_delete[index], node_name, plugin)

            # All victims but the last in parallel; the last one alone afterwards, once recorded,
            # so that PreEnqueue can tell its deletion is under way (kube-scheduler's comment).
            s = self._until(len(to_delete) - 1, preempt)
            if s is not None and not s.is_success():
                logs.error("Error occurred during async preemption", pod=preemptor.key, err=s.message())
                return
            with self._lock:
                self._last_victim[uid] = to_delete[-1]
            s = preempt(len(to_delete) - 1)
            if s is not None and not s.is_success():
                logs.error(
                    "Error occurred during async preemption of the last victim",
                    pod=preemptor.key,
                    err=s.message(),
                )
        finally:
            metrics.PREEMPTION_GOROUTINES_DURATION.labels("success").observe(observed)
            metrics.PREEMPTION_GOROUTINES_EXECUTION.labels("success").inc()
            with self._lock:
                self._preempting.discard(uid)
                self._last_victim.pop(uid, None)
            logs.info("Async Preemption finished completely", 2, preemptor=preemptor.key, node=node_name)

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
        """``IsPodRunningPreemption``: still preempting, unless its last victim is already terminating."""
        with self._lock:
            if uid not in self._preempting:
                return False
            last = self._last_victim.get(uid)
        if last is None:
            return True
        get_pod = getattr(self.handle, "get_pod", None)
        if get_pod is None:
            return True
        current = get_pod(last.uid)
        return current is not None and not current.deletion_timestamp
