"""The scheduling queue: kube-scheduler v1.36.3's PriorityQueue (``backend/queue/scheduling_queue.go``).

Every pending pod of our profiles is in exactly one of three places:

- the **active queue** (:mod:`.active_queue`): a heap in QueueSort order, popped by ScheduleOne;
- the **backoff queue** (:mod:`.backoff_queue`): pods that failed and wait out their backoff;
- the **unschedulable pods** (:mod:`.unschedulable_pods`): pods that failed and wait for a
  cluster event that may help them, and pods a PreEnqueue plugin gates.

Moves, as kube-scheduler makes them with QueueingHints (GA, always on):

- ``add`` runs the PreEnqueue plugins (the previous gating plugin first): a gated pod goes to
  the unschedulable pods with its gating plugin and that plugin's events, otherwise to active.
- ``pop`` blocks until a pod is ready; with SchedulerPopFromBackoffQ (beta, on in v1.36) an
  empty active queue hands out the first rejected pod of the backoff queue even before its
  backoff ends. The pod is then in flight, and every cluster event heard meanwhile is logged.
- ``add_unschedulable_if_not_present`` requeues a failed attempt: no rejecting plugin (an
  error) means backoff; otherwise the rejecting plugins' hints look at the events logged while
  the pod was in flight, and the pod goes to active (a Pending plugin said Queue), backoff
  (another rejector said Queue), or the unschedulable pods (nothing helped yet).
- ``move_all_to_active_or_backoff_queue`` (informer events) asks, for each unschedulable pod,
  the hints its rejecting plugins registered for a matching event; a Queue moves it to backoff
  (still backing off) or active. A gated pod is only looked at for its gating plugin's events,
  and, when that plugin named the one pod whose deletion alone can ungate it (DefaultPreemption's
  preemptor waiting for its last victim), only for that pod's deletion (see
  ``PreEnqueuePlugin.gated_until_deleted``). A hint registered with
  :class:`~app.framework.events.HintKeys` (DynamicResources' claim hint) is asked about a pod only
  for the events of its resource whose object the pod's keys name (the pod's claims), and for those
  about no one object (a deallocation) when the pod admits them: the calls skipped answer
  QueueSkip, so the moves are kube-scheduler's (:mod:`.unschedulable_pods`).
- The flush loop (``run``) moves pods whose backoff ended to active every whole second, and
  every 30 s moves pods unschedulable for longer than ``pod_max_in_unschedulable_pods_duration``
  (5 min) as if a wildcard event had arrived.

Design: one lock guards everything and one condition variable on it wakes ``pop``. Heaps are
:mod:`heapq` lists keyed by the QueueSort plugin's ``sort_key`` tuple when it has one (PrioritySort
does), else by its ``less``; every container is also a dict by pod key, so add, update, delete
and pop are O(log n). The hint functions matching an event are looked up once per profile and
event and cached, so a move over thousands of pods only runs the hints of each pod's rejecting
plugins. Time comes from ``clock`` (monotonic seconds), so tests drive backoff with a fake clock.

Not ported: PopSpecificPod and pod groups (GenericWorkload is off), pod signatures (no
opportunistic batching), and the API dispatcher (SchedulerAsyncAPICalls is off).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from app import featuregates, logs, metrics
from app.api.objects import Pod, PodAffinityTerm
from app.backend.queue.active_queue import ActiveQueue
from app.backend.queue.backoff_queue import ORDERING_WINDOW, BackoffQueue
from app.backend.queue.events import is_pod_updated, pod_scheduling_properties_change
from app.backend.queue.heap import LessKey, SortKey
from app.backend.queue.nominator import Nominator
from app.backend.queue.queued_pod_info import QueuedPodInfo, count_unschedulable_reasons
from app.backend.queue.unschedulable_pods import UnschedulablePods
from app.framework.events import (
    ASSIGNED_POD,
    BACKOFF_COMPLETE,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    FORCE_ACTIVATE,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    ActionType,
    ClusterEvent,
    HintKeys,
    PodHintKeys,
    QueueingHint,
    QueueingHintFunction,
    QueueingHintMap,
    match_any_cluster_event,
    match_cluster_events,
)
from app.framework.interfaces import PluginError, PreEnqueuePlugin
from app.framework.status import Code, Status
from app.framework.types import PodInfo

if TYPE_CHECKING:
    from app.framework.runtime import Framework

__all__ = [
    "DEFAULT_POD_INITIAL_BACKOFF",
    "DEFAULT_POD_MAX_BACKOFF",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION",
    "PriorityQueue",
    "QueuedPodInfo",
    "SchedulingQueue",
]

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0
POP_FROM_BACKOFF_Q_GATE = "SchedulerPopFromBackoffQ"
QUEUEING_HINTS_GATE = "SchedulerQueueingHints"
UNSCHEDULABLE_FLUSH_PERIOD = 30.0

ACTIVE_Q = "Active"
BACKOFF_Q = "Backoff"
UNSCHEDULABLE_Q = "Unschedulable"

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
PreEnqueueCheck = Callable[[Pod], bool]
"""``preCheck``: only unschedulable pods it accepts are considered for a move."""
NamespaceLabelsLookup = Callable[[str], Mapping[str, str] | None]
"""A namespace's labels by name; None when the namespace is unknown (kube's lister miss)."""


HintTimings = dict[tuple[str, str, str], list[float]]
"""Queueing hint durations by (plugin, event, hint label), gathered over one move."""


class _Strategy(IntEnum):
    """``queueingStrategy``."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


class PriorityQueue:
    """kube-scheduler's scheduling queue; thread-safe."""

    def __init__(
        self,
        less: Less,
        *,
        sort_key: SortKey | None = None,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable_pods_duration: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        pre_enqueue: Mapping[str, Sequence[PreEnqueuePlugin]] | None = None,
        queueing_hints: Mapping[str, QueueingHintMap] | None = None,
        clock: Callable[[], float] = time.monotonic,
        nominator: Nominator | None = None,
        pop_from_backoff_q: bool = True,
        queueing_hints_enabled: bool = True,
        namespace_labels: NamespaceLabelsLookup | None = None,
    ) -> None:
        """``less`` orders the active queue (the QueueSort plugin's); ``sort_key``, when given, must
        order pods as ``less`` does and is used instead (it is much faster).

        ``pre_enqueue`` and ``queueing_hints`` are per profile (scheduler name); see
        :meth:`for_profiles` to build them from the profiles' frameworks.

        ``queueing_hints_enabled`` False is kube-scheduler with SchedulerQueueingHints off (its
        default at 1.33): every registered hint is replaced by one that answers Queue (kube's
        ``defaultQueueingHintFn``), popped pods are not tracked in flight, and a failed attempt
        goes to backoff when a move request arrived since its cycle began (``moveRequestCycle``).

        ``namespace_labels`` (kube's namespace lister) gives a namespace's labels, None for a
        namespace it does not know; the hints-off AssignedPod pre-filter matches the unschedulable
        pods' affinity terms with a namespaceSelector against them.
        """
        if pod_initial_backoff < 0 or pod_max_backoff < 0 or pod_max_in_unschedulable_pods_duration < 0:
            raise ValueError("queue durations must not be negative")
        active_key: SortKey = sort_key if sort_key is not None else (lambda qpi: LessKey(qpi, less))
        self._clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._queueing_hints = queueing_hints_enabled
        self._move_request_cycle = -1
        self._active = ActiveQueue(active_key, track_in_flight=queueing_hints_enabled)
        self._backoff = BackoffQueue(
            clock, pod_initial_backoff, pod_max_backoff, active_key, pop_from_backoff_q
        )
        self._unschedulable = UnschedulablePods(self._pod_key_filters)
        self._pop_from_backoff_q = pop_from_backoff_q
        self._max_in_unschedulable = pod_max_in_unschedulable_pods_duration
        self._pre_enqueue = {name: list(plugins) for name, plugins in (pre_enqueue or {}).items()}
        self._hints: dict[str, QueueingHintMap] = dict(queueing_hints or {})
        if not queueing_hints_enabled:
            self._hints = {name: _always_queue(hint_map) for name, hint_map in self._hints.items()}
        self._plugin_events = _events_per_plugin(self._hints)
        self._matching: dict[tuple[str, ClusterEvent], list[QueueingHintFunction] | None] = {}
        self._interesting: dict[ClusterEvent, bool] = {}
        self._event_plugins: dict[ClusterEvent, frozenset[str]] = {}
        self._keyed_hints: dict[str, dict[str, list[QueueingHintFunction]]] = {}
        self._nominator = nominator
        self._namespace_labels = namespace_labels
        self._closed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_profiles(cls, profiles: Mapping[str, Framework], **options: Any) -> PriorityQueue:
        """A queue for the engine's profiles: the first profile's QueueSort (they must all have the
        same one), each profile's PreEnqueue plugins and hint map, and the process's
        SchedulerPopFromBackoffQ gate. ``options`` are the other constructor arguments."""
        if not profiles:
            raise ValueError("the scheduling queue needs at least one profile")
        queue_sort = next(iter(profiles.values())).queue_sort[0]
        options.setdefault("pop_from_backoff_q", featuregates.DEFAULT.enabled(POP_FROM_BACKOFF_Q_GATE))
        options.setdefault("queueing_hints_enabled", featuregates.DEFAULT.enabled(QUEUEING_HINTS_GATE))
        return cls(
            queue_sort.less,
            sort_key=getattr(queue_sort, "sort_key", None),
            pre_enqueue={name: fwk.pre_enqueue for name, fwk in profiles.items()},
            queueing_hints={name: fwk.queueing_hint_map() for name, fwk in profiles.items()},
            **options,
        )

    @property
    def queueing_hints_enabled(self) -> bool:
        """Whether the queue asks the plugins' QueueingHints (SchedulerQueueingHints on)."""
        return self._queueing_hints

    # --- informer-driven operations --------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A pending pod of ours appeared (``Add``)."""
        with self._cond:
            qpi = self._new_queued_pod_info(pod)
            if self._move_to_active_q(qpi, EVENT_UNSCHEDULED_POD_ADD.label, False):
                self._cond.notify_all()
            self._record_pending()

    def update(self, old: Pod, new: Pod) -> None:
        """A pending pod of ours changed (``Update``).

        An in-flight pod only has the change logged; a queued one is updated in place; an
        unschedulable one is requeued if a hint says the change may help (an ungating update
        goes through SchedulingGates' hint); an unknown one is added.
        """
        with self._cond:
            try:
                self._update(old, new)
            finally:
                self._record_pending()

    def _update(self, old: Pod, new: Pod) -> None:
        events = pod_scheduling_properties_change(new, old) if self._queueing_hints else []
        if self._active.add_events_if_pod_in_flight(old, new, events):
            if logs.enabled(6):
                logs.info(
                    "The pod doesn't need to be queued for now because it's being scheduled", 6, pod=new.key
                )
            return
        for container in (self._active, self._backoff):
            qpi = container.get(old.key)
            if qpi is not None:
                self._set_pod(qpi, old, new)
                container.update(qpi)
                return
        qpi = self._unschedulable.get(new.key)
        if qpi is None:
            if self._move_to_active_q(
                self._new_queued_pod_info(new), EVENT_UNSCHEDULED_POD_UPDATE.label, False
            ):
                self._cond.notify_all()
            return
        self._set_pod(qpi, old, new)
        self._unschedulable.reindex(qpi)  # its key filters are the new pod's
        if not self._queueing_hints:
            if is_pod_updated(old, new):
                # Without hints any real change may help: requeue as an UnscheduledPod/Update.
                strategy = (
                    _Strategy.AFTER_BACKOFF if self._backoff.is_backing_off(qpi) else _Strategy.IMMEDIATELY
                )
                queue = self._requeue(qpi, strategy, EVENT_UNSCHEDULED_POD_UPDATE.label)
                if queue == ACTIVE_Q or (self._pop_from_backoff_q and queue == BACKOFF_Q):
                    self._cond.notify_all()
            return
        for event in events:
            queue = self._requeue(qpi, self._worth_requeuing(qpi, event, old, new), event.label)
            if queue != UNSCHEDULABLE_Q and logs.enabled(5):
                logs.info(
                    "Pod moved to an internal scheduling queue because the Pod is updated",
                    5,
                    pod=new.key,
                    event=event.label,
                    queue=queue,
                )
            if queue == ACTIVE_Q or (self._pop_from_backoff_q and queue == BACKOFF_Q):
                self._cond.notify_all()
                break

    def _set_pod(self, qpi: QueuedPodInfo, old: Pod, new: Pod) -> None:
        qpi.pod_info = PodInfo(new)
        if self._nominator is not None:
            self._nominator.update_nominated_pod(old, qpi.pod_info)

    def delete(self, pod: Pod) -> None:
        """A pending pod of ours is gone (deleted, or bound) (``Delete``)."""
        with self._cond:
            if self._nominator is not None:
                self._nominator.delete_nominated_pod_if_exists(pod)
            key = pod.key
            if not self._active.delete(key) and not self._backoff.delete(key):
                qpi = self._unschedulable.get(key)
                if qpi is not None:
                    self._unschedulable.delete(key, qpi.gated)
                    count_unschedulable_reasons(qpi, -1)
            self._record_pending()

    def activate(self, pods: Iterable[Pod] | Mapping[str, Pod]) -> None:
        """Move these pods to the active queue now (``Activate``; plugins' PodsToActivate).

        A pod in flight gets a ForceActivate event logged instead, which its next requeue heeds.
        """
        with self._cond:
            activated = False
            for pod in pods.values() if isinstance(pods, Mapping) else pods:
                if self._activate(pod):
                    activated = True
                else:
                    # In flight: with hints the ForceActivate event is logged for its requeue,
                    # without them the move request cycle makes the requeue go to backoff.
                    self._active.add_events_if_pod_in_flight(None, pod, (EVENT_FORCE_ACTIVATE,))
                    self._move_request_cycle = self._active.scheduling_cycle
            if activated:
                self._cond.notify_all()
            self._record_pending()

    def _activate(self, pod: Pod) -> bool:
        key = pod.key
        qpi = self._unschedulable.get(key)
        from_backoff = False
        if qpi is None:
            qpi = self._backoff.get(key)
            if qpi is None or not self._backoff.delete(key):
                return False
            from_backoff = True
        return self._move_to_active_q(qpi, FORCE_ACTIVATE, from_backoff)

    def move_all_to_active_or_backoff_queue(
        self, event: ClusterEvent, old_obj: object, new_obj: object, pre_check: PreEnqueueCheck | None = None
    ) -> None:
        """A cluster event: requeue the unschedulable pods (passing ``pre_check``) a hint says it may help."""
        with self._cond:
            if not self._unschedulable and not self._active.any_in_flight():
                # Nothing to move and nothing to log it for: the informers' initial lists (every
                # bound pod an AssignedPod/Add) pass here once per object. Without hints the
                # event still counts as a move request for the pods being scheduled.
                if not self._queueing_hints and self._is_event_of_interest(event):
                    self._move_request_cycle = self._active.scheduling_cycle
                return
            if self._is_event_of_interest(event):
                if event.is_wildcard() or logs.enabled(5):
                    # Every pod: a wildcard concerns all, and -v=5 logs each pod the event skips.
                    pods: Iterable[QueuedPodInfo] = self._unschedulable
                else:
                    pods = self._unschedulable.candidates(
                        self._plugins_with_hints(event), _deleted_uid(event, old_obj), event, old_obj, new_obj
                    )
                if pre_check is not None:
                    pods = [q for q in pods if pre_check(q.pod)]
                else:
                    pods = list(pods)
                self._move_pods_to_active_or_backoff_queue(pods, event, old_obj, new_obj)
            self._record_pending()

    def assigned_pod_added(self, pod: Pod) -> None:
        """An assigned pod appeared (``addPodToCache``'s move). With hints, an AssignedPod/Add
        event for every unschedulable pod; without them (``AssignedPodAdded``) only for the pods
        this pod may help across topology: rejected by PodTopologySpread in its namespace, or
        with a required pod-affinity term it matches (its namespace's labels from the
        ``namespace_labels`` lookup)."""
        if self._queueing_hints:
            self.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_ADD, None, pod)
            return
        with self._cond:
            if not self._unschedulable and not self._active.any_in_flight():
                # Nothing to move, to log the event for, or to recount (every bound pod of the
                # informers' initial list passes here): only the move request is recorded.
                if self._is_event_of_interest(EVENT_ASSIGNED_POD_ADD):
                    self._move_request_cycle = self._active.scheduling_cycle
                return
            pods = self._with_cross_topology_term(pod)
            self._move_pods_to_active_or_backoff_queue(pods, EVENT_ASSIGNED_POD_ADD, None, pod)
            self._record_pending()

    def assigned_pod_updated(self, old: Pod, new: Pod) -> None:
        """An assigned pod changed: one move per specific change (``updateAssignedPodInCache``).
        Without hints (``AssignedPodUpdated``) a scale-down concerns every unschedulable pod and
        any other change only those :meth:`assigned_pod_added` would pick."""
        if self._unschedulable.awaits_deletion_of(new.uid):
            self._ask_gates_again(new.uid)
        for event in pod_scheduling_properties_change(new, old):
            if self._queueing_hints or match_cluster_events(_SCALE_DOWN, event):
                self.move_all_to_active_or_backoff_queue(event, old, new)
                continue
            with self._cond:
                pods = self._with_cross_topology_term(new)
                self._move_pods_to_active_or_backoff_queue(pods, event, old, new)
                self._record_pending()

    def _ask_gates_again(self, uid: str) -> None:
        """The pod with ``uid``, whose deletion alone could ungate some gated pods, changed: ask
        their gating plugins again whether it still is the only way (a victim now terminating
        gracefully lets its preemptor in on any deletion, as in kube-scheduler)."""
        with self._cond:
            for qpi in self._unschedulable.waiting_for(uid):
                pod = qpi.pod
                plugin = next(
                    (
                        pl
                        for pl in self._pre_enqueue.get(pod.scheduler_name, ())
                        if pl.name == qpi.gating_plugin
                    ),
                    None,
                )
                released_by = (
                    plugin.gated_until_deleted(pod) if isinstance(plugin, PreEnqueuePlugin) else None
                )
                if released_by != uid:
                    qpi.released_by = released_by
                    self._unschedulable.reindex(qpi)

    def _with_cross_topology_term(self, pod: Pod) -> list[QueuedPodInfo]:
        """``getUnschedulablePodsWithCrossTopologyTerm``."""
        if not self._unschedulable:
            return []  # (kube reads the namespace's labels first; nothing to match them against)
        lookup = self._namespace_labels
        namespace_labels = lookup(pod.namespace) if lookup is not None else None
        return [
            qpi
            for qpi in self._unschedulable
            if (POD_TOPOLOGY_SPREAD in qpi.unschedulable_plugins and qpi.pod.namespace == pod.namespace)
            or any(
                _affinity_term_matches(term, qpi.pod.namespace, pod, namespace_labels)
                for term in _required_affinity_terms(qpi.pod)
            )
        ]

    # --- the scheduling cycle's side -------------------------------------------------------

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        """The next pod to schedule, now in flight; blocks until one is ready.

        None once the queue is closed, or when ``timeout`` seconds pass first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                while not self._closed and not self._active and not self._can_pop_from_backoff():
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return None
                    self._cond.wait(remaining)
                if self._closed:
                    if logs.enabled(2):
                        logs.info("Scheduling queue is closed", 2)
                    return None
                qpi = self._active.pop()
                if qpi is None:
                    qpi = self._backoff.pop_rejected()
                    if qpi is None:
                        continue
                    metrics.observe_queue_incoming("active", POP_FROM_BACKOFF_Q)
                moved = self._active.move_to_in_flight(qpi)
                self._record_pending()
                if moved:
                    return qpi

    def _can_pop_from_backoff(self) -> bool:
        return self._pop_from_backoff_q and self._backoff.len_rejected() > 0

    def done(self, uid: str) -> None:
        """The pod's scheduling cycle is over (``Done``): stop logging events for it (nothing is
        logged without hints)."""
        with self._cond:
            self._active.done(uid)

    def scheduling_cycle(self) -> int:
        """Pods popped so far (``SchedulingCycle``)."""
        with self._cond:
            return self._active.scheduling_cycle

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, scheduling_cycle: int) -> str | None:
        """Requeue a failed attempt (``AddUnschedulableIfNotPresent``); the pod is done either way.

        Set ``qpi.unschedulable_plugins`` / ``pending_plugins`` from the attempt first (both empty
        means an error). Returns None, or why the pod was not requeued (it is already queued; the
        error is also logged). ``scheduling_cycle`` is accepted for kube's signature; with
        QueueingHints the in-flight events decide instead.
        """
        with self._cond:
            try:
                err = self._add_unschedulable(qpi, scheduling_cycle)
            finally:
                self._active.done(qpi.pod.uid)
                self._record_pending()
        if err is not None:
            logs.error(err, pod=qpi.pod.key)
        return err

    def _add_unschedulable(self, qpi: QueuedPodInfo, scheduling_cycle: int) -> str | None:
        key = qpi.pod.key
        for container, name in (
            (self._unschedulable, "unschedulable queue"),
            (self._active, "active queue"),
            (self._backoff, "backoff queue"),
        ):
            if key in container:
                return f"Pod {key} is already present in the {name}"
        if qpi.has_rejectors():
            qpi.unschedulable_count += 1
            qpi.consecutive_errors_count = 0
        else:
            qpi.consecutive_errors_count += 1
        qpi.timestamp = self._clock()
        qpi.backoff_expiration = None
        qpi.was_flushed_from_unschedulable = False
        count_unschedulable_reasons(qpi, 1)
        if not self._queueing_hints:
            self._add_unschedulable_without_hints(qpi, scheduling_cycle)
            return None
        hint = self._hint_for_in_flight_pod(qpi)
        queue = self._requeue(qpi, hint, SCHEDULE_ATTEMPT_FAILURE)
        if logs.enabled(3):
            logs.info(
                "Pod moved to an internal scheduling queue",
                3,
                pod=key,
                event=SCHEDULE_ATTEMPT_FAILURE,
                queue=queue,
                schedulingCycle=scheduling_cycle,
                hint=int(hint),
                unschedulablePlugins=sorted(qpi.unschedulable_plugins | qpi.pending_plugins),
            )
        if queue == ACTIVE_Q or (self._pop_from_backoff_q and queue == BACKOFF_Q):
            self._cond.notify_all()
        return None

    def _add_unschedulable_without_hints(self, qpi: QueuedPodInfo, scheduling_cycle: int) -> None:
        """``addUnschedulableWithoutQueueingHint``: backoff when the attempt failed with an error
        or a move request came after its cycle began (that event may have helped), else the
        unschedulable pods. Every rejector, Pending ones too, counts as unschedulable here."""
        if self._move_request_cycle >= scheduling_cycle or not qpi.has_rejectors():
            if self._move_to_backoff_q(qpi, SCHEDULE_ATTEMPT_FAILURE) and self._pop_from_backoff_q:
                self._cond.notify_all()
            return
        self._unschedulable.add_or_update(qpi, False, SCHEDULE_ATTEMPT_FAILURE)
        if logs.enabled(5):
            logs.info(
                "Pod moved to an internal scheduling queue",
                5,
                pod=qpi.pod.key,
                event=SCHEDULE_ATTEMPT_FAILURE,
                queue=UNSCHEDULABLE_Q,
            )

    def _hint_for_in_flight_pod(self, qpi: QueuedPodInfo) -> _Strategy:
        """``determineSchedulingHintForInFlightPod``: what the events missed while in flight say."""
        if not qpi.has_rejectors():
            return _Strategy.AFTER_BACKOFF
        events = self._active.cluster_events_for_pod(qpi.pod.uid)
        if events is None:
            logs.error("In flight Pod isn't found in the scheduling queue", pod=qpi.pod.key)
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        for e in events:
            s = self._worth_requeuing(qpi, e.event, e.old_obj, e.new_obj)
            if s is _Strategy.IMMEDIATELY:
                return s
            if s is _Strategy.AFTER_BACKOFF:
                strategy = s
                if not qpi.pending_plugins:
                    return s
        return strategy

    # --- flushes -----------------------------------------------------------------------------

    def flush_backoff_q_completed(self) -> None:
        """Move every pod whose backoff ended to the active queue (``flushBackoffQCompleted``)."""
        with self._cond:
            activated = False
            for qpi in self._backoff.pop_all_backoff_completed():
                activated = self._move_to_active_q(qpi, BACKOFF_COMPLETE, True) or activated
            if activated:
                self._cond.notify_all()
            self._record_pending()

    def flush_unschedulable_pods_leftover(self) -> None:
        """Requeue pods unschedulable for longer than the maximum (``flushUnschedulablePodsLeftover``)."""
        with self._cond:
            now = self._clock()
            leftover = [q for q in self._unschedulable if now - q.timestamp > self._max_in_unschedulable]
            for qpi in leftover:
                qpi.was_flushed_from_unschedulable = True
            if leftover:
                self._move_pods_to_active_or_backoff_queue(leftover, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)
            self._record_pending()

    def run(self) -> None:
        """Start the flush loop in a daemon thread: the backoff flush on every whole second, the
        unschedulable flush at once and then every 30 s (``Run``)."""
        with self._cond:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(
                target=self._flush_loop, name="scheduling-queue-flush", daemon=True
            )
            self._thread.start()

    def _flush_loop(self) -> None:
        now = time.monotonic()
        queue_now = self._clock()
        next_backoff = now + (self._backoff.align_to_window(queue_now + ORDERING_WINDOW) - queue_now)
        next_leftover = now
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_leftover:
                _guarded(self.flush_unschedulable_pods_leftover)
                next_leftover = time.monotonic() + UNSCHEDULABLE_FLUSH_PERIOD
            if now >= next_backoff:
                _guarded(self.flush_backoff_q_completed)
                # A ticker drops the ticks it missed.
                next_backoff += ORDERING_WINDOW * max(1, math.ceil((now - next_backoff) / ORDERING_WINDOW))
            self._stop.wait(max(0.0, min(next_backoff, next_leftover) - time.monotonic()))

    def close(self) -> None:
        """Stop the flush loop, forget the in-flight pods and wake every ``pop`` (it returns None)."""
        with self._cond:
            self._stop.set()
            self._active.close()
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)

    # --- views ---------------------------------------------------------------------------------

    def pending_pods(self) -> tuple[list[Pod], str]:
        """Every queued pod (active, backoff, unschedulable) and a summary (``PendingPods``)."""
        with self._cond:
            active = [q.pod for q in self._active]
            backoff = [q.pod for q in self._backoff]
            unschedulable = [q.pod for q in self._unschedulable]
        summary = f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(unschedulable)}"
        return active + backoff + unschedulable, summary

    def counts(self) -> dict[str, int]:
        """Pods per ``scheduler_pending_pods`` queue label."""
        with self._cond:
            return self._counts()

    def _counts(self) -> dict[str, int]:
        u = self._unschedulable
        return {
            "active": len(self._active),
            "backoff": len(self._backoff),
            "unschedulable": u.ungated,
            "gated": u.gated,
        }

    def pods_in_active_q(self) -> list[Pod]:
        """Pods in the active queue (``PodsInActiveQ``)."""
        with self._cond:
            return [q.pod for q in self._active]

    def pods_in_backoff_q(self) -> list[Pod]:
        """Pods in the backoff queue (``PodsInBackoffQ``)."""
        with self._cond:
            return [q.pod for q in self._backoff]

    def unschedulable_pods(self) -> list[Pod]:
        """Unschedulable and gated pods (``UnschedulablePods``)."""
        with self._cond:
            return [q.pod for q in self._unschedulable]

    def in_flight_pods(self) -> list[Pod]:
        """Pods popped and not done (``InFlightPods``)."""
        with self._cond:
            return self._active.in_flight_pods()

    def in_flight_events(self) -> list[Pod | ClusterEvent]:
        """In-flight pods and the events logged since the oldest of them, in order."""
        with self._cond:
            return self._active.in_flight_log()

    def get_pod(self, name: str, namespace: str) -> QueuedPodInfo | None:
        """The queued pod ``namespace/name`` wherever it waits (``GetPod``)."""
        key = f"{namespace}/{name}"
        with self._cond:
            for container in (self._backoff, self._unschedulable, self._active):
                qpi = container.get(key)
                if qpi is not None:
                    return qpi
        return None

    # --- moves ---------------------------------------------------------------------------------

    def _new_queued_pod_info(self, pod: Pod) -> QueuedPodInfo:
        return QueuedPodInfo(pod_info=PodInfo(pod), timestamp=self._clock())

    def _move_to_active_q(self, qpi: QueuedPodInfo, event: str, from_backoff: bool) -> bool:
        """``moveToActiveQ``: PreEnqueue (unless it already ran when the pod entered backoff), then
        active, or the unschedulable pods when gated."""
        gated_before = qpi.gated
        if not (self._pop_from_backoff_q and from_backoff):
            self._run_pre_enqueue_plugins(qpi)
        key = qpi.pod.key
        if qpi.gated:
            if key in self._active or key in self._backoff:
                return False
            if key not in self._unschedulable and logs.enabled(5):
                logs.info(
                    "Pod moved to an internal scheduling queue, because the pod is gated",
                    5,
                    pod=key,
                    event=event,
                )
            self._unschedulable.add_or_update(qpi, gated_before, event)
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock()
        self._unschedulable.delete(key, gated_before)
        self._backoff.delete(key)
        self._active.add(qpi, event)
        if self._nominator is not None and event in _NOMINATING_EVENTS:
            self._nominator.add_nominated_pod(qpi.pod_info)
        return True

    def _move_to_backoff_q(self, qpi: QueuedPodInfo, event: str) -> bool:
        """``moveToBackoffQ``; with SchedulerPopFromBackoffQ PreEnqueue runs here (Pop may take the
        pod straight from backoff)."""
        gated_before = qpi.gated
        if self._pop_from_backoff_q:
            self._run_pre_enqueue_plugins(qpi)
            if qpi.gated:
                self._unschedulable.add_or_update(qpi, gated_before, event)
                return False
        self._unschedulable.delete(qpi.pod.key, gated_before)
        self._backoff.add(qpi, event)
        return True

    def _requeue(self, qpi: QueuedPodInfo, strategy: _Strategy, event: str) -> str:
        """``requeuePodWithQueueingStrategy``: where the pod went."""
        if strategy is _Strategy.SKIP:
            self._unschedulable.add_or_update(qpi, qpi.gated, event)
            return UNSCHEDULABLE_Q
        if strategy is _Strategy.AFTER_BACKOFF and self._backoff.is_backing_off(qpi):
            return BACKOFF_Q if self._move_to_backoff_q(qpi, event) else UNSCHEDULABLE_Q
        return ACTIVE_Q if self._move_to_active_q(qpi, event, False) else UNSCHEDULABLE_Q

    def _move_pods_to_active_or_backoff_queue(
        self, pods: Iterable[QueuedPodInfo], event: ClusterEvent, old_obj: object, new_obj: object
    ) -> None:
        if not self._is_event_of_interest(event):
            return
        activated = False
        label = event.label
        # Whether the event matches what the gating plugin registered, per plugin: the same for
        # every pod it gates (hundreds wait for their claims while a claim controller catches up).
        ungates: dict[str | None, bool] = {}
        deleted = _deleted_uid(event, old_obj)
        # The hints' durations, recorded into their histogram once per move instead of once per
        # pod (the same observations; a claim event asks a hint about every gated pod).
        timings: HintTimings = {}
        try:
            for qpi in pods:
                if qpi.gated:
                    gate = qpi.gating_plugin
                    matches = ungates.get(gate)
                    if matches is None:
                        matches = ungates[gate] = match_any_cluster_event(event, qpi.gating_plugin_events)
                    if not matches:
                        continue
                    if qpi.released_by is not None and qpi.released_by != deleted:
                        # Only that pod's deletion can ungate it: the hints and PreEnqueue would run
                        # to put it back where it is.
                        continue
                strategy = self._worth_requeuing(qpi, event, old_obj, new_obj, timings)
                if strategy is _Strategy.SKIP:
                    if logs.enabled(5):
                        logs.info("Event is not making pod schedulable", 5, pod=qpi.pod.key, event=label)
                    continue
                self._unschedulable.delete(qpi.pod.key, qpi.gated)
                queue = self._requeue(qpi, strategy, label)
                activated = (
                    activated or queue == ACTIVE_Q or (self._pop_from_backoff_q and queue == BACKOFF_Q)
                )
        finally:
            metrics.observe_queueing_hints(timings)
        self._move_request_cycle = self._active.scheduling_cycle
        if self._active.add_event_if_any_in_flight(old_obj, new_obj, event) and logs.enabled(5):
            logs.info("Event received while pods are in flight", 5, event=label)
        if activated:
            self._cond.notify_all()

    # --- hints -----------------------------------------------------------------------------

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Some profile registered a matching event (``isEventOfInterest``)."""
        interesting = self._interesting.get(event)
        if interesting is None:
            interesting = event.is_wildcard() or any(
                match_cluster_events(registered, event)
                for hints in self._hints.values()
                for registered in hints
            )
            self._interesting[event] = interesting
            if not interesting and logs.enabled(6):
                logs.info(
                    "receive an event that isn't interested by any enabled plugins", 6, event=event.label
                )
        return interesting

    def _plugins_with_hints(self, event: ClusterEvent) -> frozenset[str]:
        """The plugins, of any profile, with a hint registered for an event matching ``event``:
        only pods one of them rejected can be moved by it (besides gated and errored pods)."""
        plugins = self._event_plugins.get(event)
        if plugins is None:
            plugins = frozenset(
                f.plugin_name for profile in self._hints for f in self._matching_hints(profile, event) or ()
            )
            self._event_plugins[event] = plugins
        return plugins

    def _matching_hints(self, profile: str, event: ClusterEvent) -> list[QueueingHintFunction] | None:
        """The profile's hint functions registered for an event matching ``event`` (None: no such profile)."""
        cache_key = (profile, event)
        try:
            return self._matching[cache_key]
        except KeyError:
            pass
        hint_map = self._hints.get(profile)
        fns = (
            None
            if hint_map is None
            else [
                f
                for registered, hints in hint_map.items()
                if match_cluster_events(registered, event)
                for f in hints
            ]
        )
        self._matching[cache_key] = fns
        return fns

    def _pod_key_filters(self, qpi: QueuedPodInfo) -> list[tuple[str, HintKeys, PodHintKeys]]:
        """For an unschedulable pod: (resource, keys, the pod's keys) for each resource whose every
        hint that the pod's rejecting plugins registered, for events that may be of that resource,
        came with :class:`HintKeys`; the queue then asks those hints about the pod only for the
        events its keys admit (:meth:`UnschedulablePods.candidates`). A key function that raises
        narrows nothing."""
        pod = qpi.pod
        profile = pod.scheduler_name
        by_resource = self._keyed_hints.get(profile)
        if by_resource is None:
            by_resource = self._keyed_hints[profile] = _keyed_hints(self._hints.get(profile, {}))
        if not by_resource:
            return []
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        out: list[tuple[str, HintKeys, PodHintKeys]] = []
        for resource, fns in by_resource.items():
            relevant = [f for f in fns if f.plugin_name in rejectors]
            if not relevant:
                continue
            if any(f.keys is None for f in relevant):
                continue  # a hint without keys: the pod is asked about every event of the resource
            pod_keys: dict[HintKeys, PodHintKeys] = {}
            try:
                for f in relevant:
                    assert f.keys is not None
                    if f.keys not in pod_keys:
                        pod_keys[f.keys] = f.keys.for_pod(pod)
            except Exception:  # a failing key function narrows nothing either
                continue
            out.extend((resource, hint_keys, keys) for hint_keys, keys in pod_keys.items())
        return out

    def _worth_requeuing(
        self,
        qpi: QueuedPodInfo,
        event: ClusterEvent,
        old_obj: object,
        new_obj: object,
        timings: HintTimings | None = None,
    ) -> _Strategy:
        """``isPodWorthRequeuing``: ask the rejecting plugins' hints about ``event`` (their
        durations go into ``timings`` when given, for the caller to record, else at once)."""
        if not qpi.has_rejectors():
            return _Strategy.AFTER_BACKOFF
        pod = qpi.pod
        if event.is_wildcard():
            # A wildcard event naming a pod (ForceActivate) is for that pod only.
            if new_obj is not None and (not isinstance(new_obj, Pod) or new_obj.uid != pod.uid):
                return _Strategy.SKIP
            return _Strategy.AFTER_BACKOFF
        fns = self._matching_hints(pod.scheduler_name, event)
        if fns is None:
            logs.error(
                "No QueueingHintMap is registered for this profile", profile=pod.scheduler_name, pod=pod.key
            )
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        pending = qpi.pending_plugins
        for f in fns:
            if not qpi.rejected_by(f.plugin_name):
                continue
            if self._run_hint(f, pod, event, old_obj, new_obj, timings) is QueueingHint.QUEUE_SKIP:
                continue
            if f.plugin_name in pending:
                return _Strategy.IMMEDIATELY
            if not pending:
                return _Strategy.AFTER_BACKOFF
            strategy = _Strategy.AFTER_BACKOFF
        return strategy

    def _run_hint(
        self,
        f: QueueingHintFunction,
        pod: Pod,
        event: ClusterEvent,
        old_obj: object,
        new_obj: object,
        timings: HintTimings | None = None,
    ) -> QueueingHint:
        """One hint call; a hint that raises counts as Queue (and is logged). Its duration goes
        into ``timings`` when given (the caller records them), else into the histogram at once."""
        start = time.perf_counter()
        try:
            hint = f.hint_fn(pod, old_obj, new_obj)
            label = hint.label
        except Exception as err:  # a hint's failure must not lose the pod: kube takes Queue
            logs.error(
                "QueueingHintFn returns error",
                event=event.label,
                plugin=f.plugin_name,
                pod=pod.key,
                err=str(err),
            )
            hint, label = QueueingHint.QUEUE, "Error"
        if self._queueing_hints:
            # kube-scheduler registers scheduler_queueing_hint_execution_duration_seconds only with
            # SchedulerQueueingHints on: without it the default hints' timings are never exposed.
            seconds = time.perf_counter() - start
            if timings is None:
                metrics.observe_queueing_hint(f.plugin_name, event.label, label, seconds)
            else:
                key = (f.plugin_name, event.label, label)
                durations = timings.get(key)
                if durations is None:
                    timings[key] = [seconds]
                else:
                    durations.append(seconds)
        return hint

    # --- PreEnqueue ----------------------------------------------------------------------------

    def _run_pre_enqueue_plugins(self, qpi: QueuedPodInfo) -> None:
        """``runPreEnqueuePlugins``: the gating plugin first, then the others, stopping at a rejection."""
        pod = qpi.pod
        profile = pod.scheduler_name
        plugins = self._pre_enqueue.get(profile, ())
        start = time.perf_counter()
        status: Status | None = None
        try:
            gating = qpi.gating_plugin
            ordered = sorted(plugins, key=lambda pl: pl.name != gating) if gating is not None else plugins
            for pl in ordered:
                status = self._run_pre_enqueue_plugin(pl, qpi)
                if status is not None:
                    return
            qpi.set_gating_plugin(None)
        finally:
            code = "Success" if status is None else status.code.label
            metrics.observe_extension_point("PreEnqueue", code, profile, time.perf_counter() - start)

    def _run_pre_enqueue_plugin(self, pl: PreEnqueuePlugin, qpi: QueuedPodInfo) -> Status | None:
        pod = qpi.pod
        try:
            status = pl.pre_enqueue(pod)
        except PluginError as err:
            status = Status(Code.ERROR, str(err))
        if status is None or status.is_success():
            return None
        status.plugin = pl.name
        if not qpi.rejected_by(pl.name):
            metrics.add_unschedulable_pods(pl.name, pod.scheduler_name, 1)
        qpi.unschedulable_plugins.add(pl.name)
        released_by = pl.gated_until_deleted(pod) if isinstance(pl, PreEnqueuePlugin) else None
        qpi.set_gating_plugin(pl.name, self._plugin_events.get(pl.name, ()), released_by)
        if status.code is Code.ERROR:
            logs.error(
                "Unexpected error running PreEnqueue plugin",
                pod=pod.key,
                plugin=pl.name,
                err=status.message(),
            )
        elif logs.enabled(4):
            logs.info(
                "Status after running PreEnqueue plugin",
                4,
                pod=pod.key,
                plugin=pl.name,
                status=status.message(),
            )
        return status

    def _record_pending(self) -> None:
        u = self._unschedulable
        metrics.set_pending_pods(len(self._active), len(self._backoff), u.ungated, u.gated)


SchedulingQueue = PriorityQueue
"""kube's interface name; berth has the one implementation."""

_NOMINATING_EVENTS = frozenset((EVENT_UNSCHEDULED_POD_ADD.label, EVENT_UNSCHEDULED_POD_UPDATE.label))


POD_TOPOLOGY_SPREAD = "PodTopologySpread"
_SCALE_DOWN = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
"""kube matches the event against Pod/UpdatePodScaleDown: a wildcard-free resource match."""


def _deleted_uid(event: ClusterEvent, old_obj: object) -> str | None:
    """The UID of the pod a Pod deletion event removes (None for any other event)."""
    if event.action_type == ActionType.DELETE and isinstance(old_obj, Pod):
        return old_obj.uid
    return None


def _required_affinity_terms(pod: Pod) -> list[PodAffinityTerm]:
    affinity = pod.pod_affinity
    return affinity.required if affinity is not None else []


def _affinity_term_matches(
    term: PodAffinityTerm, owner_namespace: str, pod: Pod, namespace_labels: Mapping[str, str] | None
) -> bool:
    """``AffinityTerm.Matches`` for a term of a pod in ``owner_namespace`` (no namespaces and no
    namespace selector: the owner's namespace; a nil selector selects nothing)."""
    namespaces = term.namespaces or ([] if term.namespace_selector is not None else [owner_namespace])
    selected = pod.namespace in namespaces or (
        term.namespace_selector is not None and term.namespace_selector.matches(namespace_labels or {})
    )
    return selected and term.label_selector is not None and term.label_selector.matches(pod.labels)


def _queue(pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
    """kube's ``defaultQueueingHintFn``: every registered event may help."""
    return QueueingHint.QUEUE


def _always_queue(hint_map: QueueingHintMap) -> QueueingHintMap:
    """``buildQueueingHintMap`` with SchedulerQueueingHints off: each registration keeps its
    event and plugin, its hint becomes the default Queue."""
    return {
        event: [QueueingHintFunction(f.plugin_name, _queue) for f in fns] for event, fns in hint_map.items()
    }


def _keyed_hints(hint_map: QueueingHintMap) -> dict[str, list[QueueingHintFunction]]:
    """For each resource some hint of ``hint_map`` was registered for with :class:`HintKeys`: every
    hint function whose registered event may match an event of that resource (wildcards too)."""
    resources = {
        registered.resource
        for registered, fns in hint_map.items()
        if not registered.is_wildcard() and any(f.keys is not None for f in fns)
    }
    return {
        resource: [
            f
            for registered, fns in hint_map.items()
            if match_cluster_events(registered, ClusterEvent(resource, registered.action_type))
            for f in fns
        ]
        for resource in resources
    }


def _events_per_plugin(hints: Mapping[str, QueueingHintMap]) -> dict[str, list[ClusterEvent]]:
    """Each plugin's registered events over every profile (``buildEventMap``)."""
    out: dict[str, list[ClusterEvent]] = {}
    for hint_map in hints.values():
        for event, fns in hint_map.items():
            for f in fns:
                out.setdefault(f.plugin_name, []).append(event)
    return out


def _guarded(flush: Callable[[], None]) -> None:
    """Run one flush; a failure is logged so that the loop keeps running."""
    try:
        flush()
    except Exception as err:  # the flush thread must survive a plugin's bug
        logs.error("Scheduling queue flush failed", err=repr(err))
