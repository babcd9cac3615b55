"""The scheduling loop of ``berth run``: kube-scheduler's ``Scheduler.Run`` and ``ScheduleOne``.

One thread pops pods from the queue and runs the scheduling cycle (filter, score, assume,
Reserve, Permit) synchronously; the binding cycle (PreBind, Bind, PostBind) runs on a bounded pool,
so its API latency never stalls the next pod. The API write of a failure (PodScheduled condition,
nominatedNodeName) is kube's ``updatePod``: made by the thread that handles the failure before it
goes on (the scheduling thread, or the binding worker whose cycle failed), unless
SchedulerAsyncAPICalls is on, where kube's API dispatcher makes it and berth's pool does, or the
failure nominated a node for a preemption (the preemptor waits for its victims anyway). Events go
through the broadcaster, which never blocks.

Failures follow ``handleSchedulingFailure``: the pod is re-read from the informer's store (gone,
already bound, or recreated: no requeue), put back with its rejecting plugins so that only a
cluster event a QueueingHint accepts moves it again, nominated where preemption chose, and its
status and a FailedScheduling event are written. A binding failure un-reserves and forgets the
assumed pod, tells the queue an assigned pod went away (its resources are free again), then takes
the same failure path as an error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from app import featuregates, logs, metrics
from app.api.objects import Pod
from app.backend.queue.nominator import MODE_OVERRIDE
from app.backend.queue.scheduling_queue import PriorityQueue, QueuedPodInfo
from app.framework.cycle_state import CycleState
from app.framework.dra import allocates_in_flight
from app.framework.events import EVENT_ASSIGNED_POD_DELETE
from app.framework.runtime import Framework
from app.framework.types import PodInfo
from app.kube.events import truncate_note
from app.scheduler.scheduler import Attempt, Engine
from app.standalone import stats
from app.standalone.traces import DecisionTraces, PreparedTrace
from app.standalone.workers import WorkerPool

__all__ = ["EventSink", "Scheduler", "StatusSink"]

PENDING_CALLS_PER_WORKER = 16
"""How many API calls (binding cycles, status updates) may be pending per binding worker, running or
waiting for one, before the scheduling thread waits for half of them to finish to take the next pod.

kube-scheduler starts a goroutine per binding cycle and never waits: Go runs them on every core
beside the scheduling loop. berth's workers share one interpreter lock with the scheduling thread,
which takes most of it, so on a 5,000-node cluster binds fell behind by thousands of pods, each
keeping its cycle state and attempt (RSS grew by about 30 KiB per waiting pod). A call waiting for
a worker overlaps nothing, so a few per worker keep every worker busy; past that the scheduling
thread lets them catch up, to half the bound, so that it is not woken for every finished call.
Decisions do not change: the pods wait in the active queue instead of after their scheduling cycle."""

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


class EventSink(Protocol):
    """Where events go (``app.kube.events.EventRecorder``)."""

    def eventf(
        self,
        regarding: object,
        related: object | None,
        type: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        """Record an event; never blocks."""
        ...


class StatusSink(Protocol):
    """Where pod status writes go (``app.kube.podstatus.PodStatusWriter``)."""

    def update_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        """PodScheduled=False with ``reason``/``message``; set (or with "" clear) the nomination."""
        ...

    def nominate_for_binding(self, pod: Pod, node_name: str) -> None:
        """Set ``status.nominatedNodeName`` to ``node_name`` before PreBind; failures only logged."""
        ...


class Scheduler:
    """ScheduleOne in a loop over an engine and a queue, with asynchronous binding."""

    def __init__(
        self,
        engine: Engine,
        queue: PriorityQueue,
        *,
        lookup_pod: Callable[[str], Pod | None],
        recorders: Mapping[str, EventSink],
        status: StatusSink,
        traces: DecisionTraces | None = None,
        bind_workers: int = 16,
    ) -> None:
        self.engine = engine
        self.queue = queue
        self.lookup_pod = lookup_pod
        self.recorders = recorders
        self.status = status
        self.traces = traces if traces is not None else DecisionTraces()
        self._max_pending = bind_workers * PENDING_CALLS_PER_WORKER
        self._async_api_calls = featuregates.DEFAULT.enabled("SchedulerAsyncAPICalls")
        self._pool = WorkerPool(
            bind_workers,
            "binding",
            on_pending=self._record_pending_bindings if self._async_api_calls else None,
            on_error=_log_binding_error,
        )
        self._loop: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lifecycle = threading.Lock()

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the queue's flush loops and the ScheduleOne thread (never the caller's thread).

        A no-op once :meth:`stop` has been called: leadership can arrive while a signal is
        already shutting the process down.
        """
        with self._lifecycle:
            if self._stopping.is_set():
                return
            self.queue.run()
            self._loop = threading.Thread(target=self._run, name="schedule-one", daemon=True)
            self._loop.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.schedule_one()
            except Exception as err:  # the loop must survive anything a plugin does
                logs.error("Unhandled error in the scheduling loop", err=repr(err))

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop taking pods and async preemptions, then wait up to ``timeout`` for in-flight
        bindings; True if all finished."""
        with self._lifecycle:  # so that start() either finished or will not start
            self._stopping.set()
            loop = self._loop
        self.queue.close()
        if loop is not None:
            loop.join(timeout)
        # Async preemptions not started are dropped (their preemptors are this process's no more);
        # running ones end with their API call, never waited for.
        runner = self.engine.handle.preemption_runner
        if runner is not None:
            runner.shutdown()
        done = self._pool.wait(timeout)
        self._pool.shutdown()
        return done

    def _submit(self, fn: Callable[[], None], *, first: bool = False) -> None:
        self._pool.submit(fn, first=first)

    @staticmethod
    def _record_pending_bindings(pending: int) -> None:
        """``scheduler_pending_async_api_calls{call_type="pod_binding"}`` under SchedulerAsyncAPICalls:
        the binding cycles handed to the workers and not finished (called under the pool's lock)."""
        metrics.PENDING_ASYNC_API_CALLS.labels("pod_binding").set(pending)

    # --- ScheduleOne -------------------------------------------------------------------------

    def schedule_one(self, timeout: float | None = None) -> bool:
        """Pop one pod and schedule it; False when the queue is closed (or ``timeout`` passed).

        While the API calls handed to the binding workers lag behind (PENDING_CALLS_PER_WORKER per
        worker), the next pod waits in the queue until half of them have finished."""
        self._wait_for_workers()
        qpi = self.queue.pop(timeout)
        if qpi is None:
            return False
        pod = qpi.pod
        fwk = self.engine.framework_for(pod)
        if fwk is None:
            # Pods of other schedulers never enter the queue; one whose schedulerName changed might.
            logs.error("Unable to get profile for pod", pod=pod.key, schedulerName=pod.scheduler_name)
            self.queue.done(pod.uid)
            return True
        if pod.deletion_timestamp:
            self._event(
                fwk,
                pod,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                f"skip schedule deleting pod: {pod.key}",
            )
            self.queue.done(pod.uid)
            return True
        if self.engine.cache.is_assumed(pod):
            self.queue.done(pod.uid)
            return True
        logs.info("Attempting to schedule pod", 3, pod=pod.key)
        start = time.perf_counter()
        state = self.engine.new_cycle_state()
        attempt = self.engine.scheduling_cycle(fwk, state, pod)
        if attempt.status != "Scheduled":
            self.traces.record(attempt, self._node_names, qpi.attempts)
            self._scheduling_failed(fwk, qpi, attempt, start)
            return True
        # A binding cycle can wait for a worker (up to _max_pending): its trace is prepared now, and
        # it waits with the attempt in less memory (compact scores, no per-node statuses), the one
        # the trace was made from.
        trace = self.traces.prepare(attempt, self._node_names, qpi.attempts)
        waiting = trace.light
        self._submit(
            lambda: self._binding_cycle(fwk, state, qpi, waiting, start, trace),
            first=binding_goes_first(qpi, state),
        )
        return True

    def _wait_for_workers(self) -> None:
        """With ``_max_pending`` calls pending, wait until half of them finished, but not past a
        stop. Only the scheduling thread waits: a binding cycle that fails writes its status itself
        or hands it over without waiting (waiting there could leave every worker waiting for the others)."""
        if self._pool.pending < self._max_pending:
            return
        while not self._stopping.is_set() and not self._pool.wait(0.5, at_most=self._max_pending // 2):
            pass

    def _node_names(self) -> list[str]:
        return [n.name for n in self.engine.algorithm.snapshot.list()]

    def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        attempt: Attempt,
        start: float,
        trace: PreparedTrace,
    ) -> None:
        pod = qpi.pod
        # After Done, no failure makes the pod "unschedulable": it is retried with backoff.
        self.queue.done(pod.uid)
        binding = metrics.GOROUTINES.labels(metrics.BINDING)  # a binding worker busy: kube's goroutine
        binding.inc()
        try:
            bound = self.engine.binding_cycle(fwk, state, pod, attempt, self.status.nominate_for_binding)
        finally:
            binding.dec()
        if bound is attempt:  # bound as scheduled: the trace prepared before the binding cycle
            self.traces.keep(trace)
        else:
            self.traces.record(bound, self._node_names, qpi.attempts)
        if bound.status == "Scheduled":
            seconds = time.perf_counter() - start
            metrics.observe_attempt(metrics.SCHEDULED, fwk.profile_name, seconds)
            stats.observe_scheduled(qpi, time.monotonic())
            if qpi.was_flushed_from_unschedulable:
                logs.info("Pod scheduled after flush from unschedulablePods", 4, pod=pod.key)
                metrics.POD_SCHEDULED_AFTER_FLUSH.inc()
            node = bound.node or ""
            self._event(
                fwk, pod, "Normal", "Scheduled", "Binding", f"Successfully assigned {pod.key} to {node}"
            )
            logs.info(
                "Successfully bound pod to node",
                2,
                pod=pod.key,
                node=node,
                evaluatedNodes=attempt.result.evaluated_nodes if attempt.result else 0,
                feasibleNodes=attempt.result.feasible_nodes if attempt.result else 0,
            )
            return
        # handleBindingCycleError: the assumed pod was forgotten, so its resources are free again.
        self.queue.move_all_to_active_or_backoff_queue(
            EVENT_ASSIGNED_POD_DELETE, attempt.pod, None, lambda p: p.uid != pod.uid
        )
        self._scheduling_failed(fwk, qpi, bound, start, clear_nomination=True)

    # --- failures ----------------------------------------------------------------------------

    def _scheduling_failed(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        attempt: Attempt,
        start: float,
        *,
        clear_nomination: bool = False,
    ) -> None:
        """handleSchedulingFailure."""
        pod = qpi.pod
        unschedulable = attempt.status == "Unschedulable"
        reason = REASON_UNSCHEDULABLE if unschedulable else REASON_SCHEDULER_ERROR
        metrics.observe_attempt(
            metrics.UNSCHEDULABLE if unschedulable else metrics.ERROR,
            fwk.profile_name,
            time.perf_counter() - start,
        )
        qpi.unschedulable_plugins = set(attempt.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(attempt.diagnosis.pending_plugins)
        if unschedulable:
            logs.info("Unable to schedule pod; no fit; waiting", 2, pod=pod.key, err=attempt.message)
        else:
            logs.error("Error scheduling pod; retrying", pod=pod.key, err=attempt.message)
        cached = self.lookup_pod(pod.key)
        if cached is None:
            logs.info("Pod doesn't exist in informer cache", pod=pod.key)
            self.queue.done(pod.uid)
        elif cached.node_name:
            logs.info("Pod has been assigned to node. Abort adding it back to queue.", pod=pod.key)
            self.queue.done(pod.uid)
        elif cached.uid != pod.uid:
            logs.info("Pod was recreated while handling scheduling failure", 2, pod=pod.key)
            self.queue.done(pod.uid)
            return
        else:
            qpi.pod_info = PodInfo(cached)
            pod = cached
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle())
        if clear_nomination:
            attempt.nominating = (MODE_OVERRIDE, "")
        self.engine.nominate(pod, attempt)
        self._event(fwk, pod, "Warning", "FailedScheduling", "Scheduling", truncate_note(attempt.message))
        mode, node = attempt.nominating
        nominated = node if mode == MODE_OVERRIDE and node != pod.nominated_node_name else None

        def update_status() -> None:
            self.status.update_pod_scheduled_condition(
                pod, reason=reason, message=attempt.message, nominated_node_name=nominated
            )

        if self._async_api_calls or nominated:
            # With the API dispatcher kube's goroutine goes on at once. So does berth after a
            # preemption that nominated a node: the preemptor waits for its victims anyway, so the
            # round trip would save no attempt, and berth's dry run, serial where kube's spreads
            # over 16 goroutines, would pay it on every preemptor (docs/scheduler-perf.md).
            self._submit(update_status)
        else:
            # kube's updatePod without the API dispatcher: the scheduling goroutine waits for the
            # PATCH before it pops the next pod. Meanwhile the binding cycles (a shared claim's
            # write among them) have the API server and the interpreter; the pods sharing a claim
            # come later, after its write more often (docs/dra.md, "Failure status writes").
            update_status()

    def _event(self, fwk: Framework, pod: Pod, type_: str, reason: str, action: str, note: str) -> None:
        recorder = self.recorders.get(fwk.profile_name)
        if recorder is not None:
            recorder.eventf(pod.raw, None, type_, reason, action, note)


def binding_goes_first(qpi: QueuedPodInfo, state: CycleState) -> bool:
    """Whether the pod's binding cycle runs before the calls already waiting for a binding worker.

    One that writes a claim's allocation does: until it has, every pod sharing the claim is rejected
    ("is in the process of being allocated"), and kube-scheduler starts each binding cycle at once.
    Only on the pod's first attempt, so that it never overtakes the status update of the pod's own
    earlier failure, still waiting for a worker (that PATCH would land after the binding)."""
    return qpi.attempts == 1 and allocates_in_flight(state)


def _log_binding_error(err: BaseException) -> None:
    logs.error("Unhandled error in a binding cycle", err=repr(err))
