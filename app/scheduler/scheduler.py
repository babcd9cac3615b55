"""The engine: profiles over one cache, and a synchronous scheduling cycle + binding
(``schedule_one.go``'s schedulingCycle and bindingCycle) used by simulate and the extender."""

from __future__ import annotations

import copy
import dataclasses
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from app import featuregates, logs, metrics
from app.api.objects import Pod
from app.api.resource import API_VERSION as RESOURCE_API_VERSION
from app.backend.cache.cache import Cache
from app.backend.queue.nominator import MODE_NOOP, MODE_OVERRIDE, Nominator
from app.config.types import SchedulerConfiguration
from app.framework.cycle_state import CycleState
from app.framework.dra import DRA_KINDS, DRAStore
from app.framework.interfaces import (
    Binder,
    ClusterActions,
    Extender,
    ExtenderError,
    FilterPlugin,
    NodeInfoLister,
    ObjectLister,
    PodNominator,
)
from app.framework.preemption.executor import AsyncRunner
from app.framework.preemption.parallelizer import VictimParallelizer
from app.framework.registry import Registry
from app.framework.runtime import Framework, NodeScore, NodeScores, TimedFilters
from app.framework.status import Code, NodeToStatus, Status
from app.framework.types import NodeInfo, PodInfo
from app.scheduler.algorithm import Algorithm, NoNodesAvailable, ScheduleResult, SchedulingError
from app.scheduler.fit_error import Diagnosis, FitError
from app.scheduler.profile import build_profiles

PLUGIN_METRICS_SAMPLE_PERCENT = 10


#: How many changes per kind ClusterObjects remembers for incremental readers (see ``changes``).
CHANGE_LOG_SIZE = 4096


class ClusterObjects:
    """Raw cluster objects other than pods and nodes, by kind (Service, ReplicaSet, ...).

    Thread-safe: informers (app.kube) write from their own threads while plugins read. Objects
    are keyed by ``namespace/name`` so that informer events can replace and delete them.
    """

    def __init__(self, objects: Mapping[str, list[Mapping[str, Any]]] | None = None) -> None:
        self._lock = threading.Lock()
        self._by_kind: dict[str, dict[str, Mapping[str, Any]]] = {}
        self._revisions: dict[str, int] = {}  # bumped on every change of a kind (see revision())
        self._change_log: dict[str, list[str]] = {}  # the keys changed, oldest first (see changes())
        self._anonymous = 0
        # DynamicResources reads resource.k8s.io objects parsed, with its in-flight allocations.
        self.dra = DRAStore()
        for objs in (objects or {}).values():
            for obj in objs:
                self.add(obj)

    @staticmethod
    def key(namespace: str, name: str) -> str:
        """The key of an object: ``namespace/name`` (``name`` for cluster-scoped ones)."""
        return f"{namespace}/{name}" if namespace else name

    def add(self, obj: Mapping[str, Any]) -> None:
        """Add a raw object under its ``kind``; a nameless one (a state file) is kept beside the others."""
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        with self._lock:
            if name:
                key = self.key(str(meta.get("namespace") or ""), name)
            else:
                self._anonymous += 1
                key = f"#{self._anonymous}"
            kind = str(obj.get("kind", ""))
            self._by_kind.setdefault(kind, {})[key] = obj
            self._changed(kind, key)
        if kind in DRA_KINDS and obj.get("apiVersion") == RESOURCE_API_VERSION:
            self.dra.upsert(kind, key, obj)

    def upsert(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        """Add or replace the object of ``kind`` at ``key`` (an informer's add or update)."""
        with self._lock:
            self._by_kind.setdefault(kind, {})[key] = obj
            self._changed(kind, key)
        if kind in DRA_KINDS:
            self.dra.upsert(kind, key, obj)

    def delete(self, kind: str, key: str) -> None:
        """Forget the object of ``kind`` at ``key`` (an informer's delete); unknown keys are ignored."""
        with self._lock:
            self._by_kind.get(kind, {}).pop(key, None)
            self._changed(kind, key)
        if kind in DRA_KINDS:
            self.dra.delete(kind, key)

    def _changed(self, kind: str, key: str) -> None:
        """Count a change of ``kind`` at ``key`` (the caller holds the lock)."""
        self._revisions[kind] = self._revisions.get(kind, 0) + 1
        log = self._change_log.setdefault(kind, [])
        log.append(key)
        if len(log) > 2 * CHANGE_LOG_SIZE:
            del log[:-CHANGE_LOG_SIZE]

    def changes(self, kind: str, since: int) -> tuple[int, dict[str, Mapping[str, Any] | None]] | None:
        """The objects of ``kind`` changed after revision ``since``, by key (None: deleted), and the
        current revision; None when the log no longer reaches back that far (read everything then)."""
        with self._lock:
            revision = self._revisions.get(kind, 0)
            log = self._change_log.get(kind, [])
            count = revision - since
            if count < 0 or count > len(log):
                return None
            objects = self._by_kind.get(kind, {})
            return revision, {key: objects.get(key) for key in log[len(log) - count :]}

    def revision(self, kind: str) -> int:
        """A number that changes whenever an object of ``kind`` is added, replaced or deleted, so that
        readers that index a kind (the storage listers) rebuild only after a change."""
        with self._lock:
            return self._revisions.get(kind, 0)

    def get(self, kind: str, key: str) -> Mapping[str, Any] | None:
        """The object of ``kind`` at ``key`` (see :meth:`key`), None when there is none."""
        with self._lock:
            return self._by_kind.get(kind, {}).get(key)

    def list_cluster(self, kind: str) -> list[Mapping[str, Any]]:
        """Cluster-scoped objects of ``kind`` (Namespaces, ...): every object of the kind."""
        with self._lock:
            return list(self._by_kind.get(kind, {}).values())

    def list(self, kind: str, namespace: str) -> list[Mapping[str, Any]]:
        """Objects of ``kind`` in ``namespace``."""
        return [
            o
            for o in self.list_cluster(kind)
            if (o.get("metadata") or {}).get("namespace", "default") == namespace
        ]


class CacheBinder:
    """Binding without an API server: the assumed pod becomes a bound pod in the cache."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        """Confirm ``pod`` on ``node_name``."""
        bound = pod if pod.node_name == node_name else dataclasses.replace(pod, node_name=node_name)
        self.cache.add_pod(bound)
        return None


# --- storage: VolumeBinding's PreBind without an API server -------------------------------------------


class ObjectsVolumeWriter:
    """VolumeBinding's writes without an API server (simulate, the extender): into the cluster objects,
    with the binding completed at once, as if the PV controller acted instantly.

    A PersistentVolume written with a claimRef becomes Bound and its claim bound to it (volumeName and
    the bind-completed annotation); a claim written with a selected node keeps it: the volume is
    provisioned there, and any other pod using the claim must go to that node too.
    """

    completes_bindings = True

    def __init__(self, objects: ClusterObjects) -> None:
        self.objects = objects

    def pod_exists(self, pod: Pod) -> bool:
        """Always: the bindings complete with the writes, PreBind never waits."""
        return True

    def update(self, kind: str, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Store ``raw`` (one resourceVersion newer) and complete the PV controller's part."""
        stored = _next_version(raw)
        self.objects.upsert(kind, _stored_key(stored), stored)
        ref = (stored.get("spec") or {}).get("claimRef")
        if kind == "PersistentVolume" and ref:
            stored["status"] = {**(stored.get("status") or {}), "phase": "Bound"}
            for claim in self.objects.list_cluster("PersistentVolumeClaim"):
                meta = claim.get("metadata") or {}
                if (meta.get("namespace") or "default", meta.get("name")) != (
                    ref.get("namespace"),
                    ref.get("name"),
                ):
                    continue
                bound = _next_version(claim)
                bound["spec"] = {**(bound.get("spec") or {}), "volumeName": stored["metadata"]["name"]}
                annotations = bound["metadata"].get("annotations") or {}
                bound["metadata"]["annotations"] = {**annotations, "pv.kubernetes.io/bind-completed": "yes"}
                bound["status"] = {**(bound.get("status") or {}), "phase": "Bound"}
                self.objects.upsert("PersistentVolumeClaim", _stored_key(bound), bound)
        return stored


def _stored_key(raw: Mapping[str, Any]) -> str:
    """The key :meth:`ClusterObjects.add` gave the object."""
    meta = raw.get("metadata") or {}
    return ClusterObjects.key(str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _next_version(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``raw`` with its resourceVersion one higher (0 when it had none)."""
    out = copy.deepcopy(dict(raw))
    meta = out.setdefault("metadata", {})
    try:
        version = int(meta.get("resourceVersion") or 0)
    except ValueError:
        version = 0
    meta["resourceVersion"] = str(version + 1)
    return out


class CacheClusterActions:
    """Preemption without an API server (simulate, the extender): victims simply leave the cache.

    Against an API server (``berth run``) a victim instead gets the DisruptionTarget condition, is
    deleted and a Preempted event is recorded; the cache then learns of it from the informer.
    """

    def __init__(self, cache: Cache, nominator: Nominator) -> None:
        self.cache = cache
        self.nominator = nominator

    def preempt_pod(self, preemptor: Pod, victim: Pod, node_name: str, plugin: str) -> Status | None:
        """Remove ``victim`` from the cache."""
        self.cache.remove_pod(victim)
        logs.info(
            "Preemptor Pod preempted victim Pod",
            2,
            preemptor=preemptor.key,
            victim=victim.key,
            node=node_name,
        )
        return None

    def clear_nominated_node_name(self, pods: Sequence[Pod]) -> Status | None:
        """Drop the nominations of ``pods`` (what the status patch does once the informer sees it)."""
        for p in pods:
            self.nominator.delete_nominated_pod_if_exists(p)
        return None


class _Handle:
    """The framework.Handle given to plugins (each profile wraps it with its own framework)."""

    def __init__(self, engine: Engine, objects: ObjectLister, binder: Binder, parallelism: int) -> None:
        self._engine = engine
        self.objects = objects
        self.binder = binder
        self.parallelism = parallelism
        # --- storage: where VolumeBinding's PreBind writes (see VolumeWriter) ---
        self.volume_writer: Any = engine.volume_writer
        # Where preemption evicts a candidate's victims in parallel (berth run sets it); None: one
        # after the other, in order (simulate, the extender, tests over the cache).
        self.preemption_parallelizer: VictimParallelizer | None = None
        # berth run's background runner of async preemption (None: preemption runs inline) and its
        # queue's Activate (None: no queue to move pods in, as in simulate and the extender).
        self.preemption_runner: AsyncRunner | None = None
        self.activator: Callable[[Sequence[Pod]], None] | None = None

    @property
    def snapshot(self) -> NodeInfoLister:
        return self._engine.algorithm.snapshot

    @property
    def nominator(self) -> PodNominator:
        """The engine's nominator."""
        return self._engine.nominator

    @property
    def extenders(self) -> Sequence[Extender]:
        """The configured extenders (preemption asks those with a preempt verb)."""
        return self._engine.algorithm.extenders

    @property
    def cluster_actions(self) -> ClusterActions:
        """Where preemption evicts victims."""
        return self._engine.cluster_actions

    @property
    def rng(self) -> random.Random:
        """The engine's seeded rng (preemption's random offset)."""
        return self._engine.rng

    def get_pod(self, uid: str) -> Pod | None:
        """The cached pod with ``uid``."""
        return self._engine.cache.get_pod(uid)

    def activate(self, pods: Sequence[Pod]) -> None:
        """``Activate``: move ``pods`` to the active queue (a no-op without a queue)."""
        if self.activator is not None:
            self.activator(pods)


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt of a pod, with what explains it."""

    pod: Pod
    status: str  # "Scheduled" | "Unschedulable" | "Error"
    node: str | None = None
    message: str = ""
    result: ScheduleResult | None = None
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    num_all_nodes: int = 0
    nominated_node: str | None = None  # the pod's nomination after the attempt (preemption's node)
    victims: list[Pod] = field(default_factory=list)  # pods preempted by this attempt
    # NominatingInfo of a failed attempt: (mode, node). The default clears the nomination.
    nominating: tuple[str, str] = (MODE_OVERRIDE, "")
    assumed: Pod | None = None  # a Scheduled attempt's pod with node_name set, as the cache assumed it
    # What Reserve plugins reserved on the node, in words (VolumeBinding: the PVs bound, the claims
    # provisioned), for explanations.
    reserved: list[str] = field(default_factory=list)

    def without_node_statuses(self) -> Attempt:
        """This attempt in less memory, for keeping (``berth run``'s decision traces, a scheduled
        attempt waiting for its binding cycle): the scores in the compact form of
        :meth:`NodeScores.compacted` (a fifth of the memory at 500 scored nodes), and the
        diagnosis without its per-node statuses (a Status per node that failed a filter), which the
        keeper takes first if it needs them. The diagnosis keeps everything else (plugins,
        messages, the absent-node status)."""
        diagnosis = self.diagnosis
        diagnosis = dataclasses.replace(
            diagnosis, node_to_status=NodeToStatus({}, diagnosis.node_to_status.absent)
        )
        result = self.result
        if result is not None:
            scores = result.scores.compacted() if isinstance(result.scores, NodeScores) else result.scores
            # The result's diagnosis is the attempt's (the same object for a scheduled attempt).
            result = dataclasses.replace(result, scores=scores, diagnosis=diagnosis)
        return dataclasses.replace(self, result=result, diagnosis=diagnosis)


@runtime_checkable
class ExplainsReservation(Protocol):
    """A Reserve plugin that can say what it reserved for the pod on a node."""

    def reservation_notes(self, state: CycleState, node_name: str) -> list[str]:
        """What was reserved on ``node_name``, one sentence each."""
        ...


def _reservations(fwk: Framework, state: CycleState, node_name: str) -> list[str]:
    # hasattr, not isinstance: a runtime-checkable Protocol's isinstance inspects the class on every
    # call (2% of a SchedulingBasic cycle), and it only checks that the method exists anyway.
    return [
        note
        for pl in fwk.reserve
        if hasattr(pl, "reservation_notes")
        for note in cast(ExplainsReservation, pl).reservation_notes(state, node_name)
    ]


@dataclass(slots=True)
class FilterOutcome:
    """Nodes that passed and the statuses of those that failed, for a given node list."""

    feasible: list[NodeInfo]
    failed: dict[str, Status]


def _log_attempt(attempt: Attempt) -> None:
    """kube-scheduler's V(2) lines for a finished attempt."""
    pod = attempt.pod.key
    if attempt.status == "Scheduled" and attempt.result is not None:
        logs.info(
            "Successfully bound pod to node",
            2,
            pod=pod,
            node=attempt.node,
            evaluatedNodes=attempt.result.evaluated_nodes,
            feasibleNodes=attempt.result.feasible_nodes,
        )
    elif attempt.status == "Unschedulable":
        logs.info("Unable to schedule pod; no fit; waiting", 2, pod=pod, err=attempt.message)
    else:
        logs.info("Error scheduling pod; retrying", 2, pod=pod, err=attempt.message)


class Engine:
    """kube-scheduler's core over one cache: profiles by schedulerName and the scheduling cycle."""

    def __init__(
        self,
        cfg: SchedulerConfiguration,
        registry: Registry,
        cache: Cache | None = None,
        objects: ObjectLister | None = None,
        binder: Binder | None = None,
        seed: int | None = None,
        cluster_actions: ClusterActions | None = None,
        extenders: Sequence[Extender] = (),
        volume_writer: Any = None,
    ) -> None:
        """``extenders`` are called by the scheduling cycle, preemption and binding (``berth run``,
        ``berth simulate``); the extender face (``berth serve``) passes none."""
        self.cfg = cfg
        self.cache = cache if cache is not None else Cache()
        self.rng = random.Random(seed)
        self.nominator = Nominator()
        self.cluster_actions: ClusterActions = (
            cluster_actions
            if cluster_actions is not None
            else CacheClusterActions(self.cache, self.nominator)
        )
        self.algorithm = Algorithm(
            self.cache,
            cfg.percentage_of_nodes_to_score,
            self.rng,
            self.nominator.nominated_pods_for_node,
            any_nominated=lambda: len(self.nominator) > 0,
            extenders=extenders,
        )
        self.objects = objects if objects is not None else ClusterObjects()
        self.binder = binder if binder is not None else CacheBinder(self.cache)
        # VolumeBinding's PreBind writes: the API server's writer under berth run, else the objects.
        self.volume_writer = volume_writer
        if volume_writer is None and isinstance(self.objects, ClusterObjects):
            self.volume_writer = ObjectsVolumeWriter(self.objects)
        self.handle = _Handle(self, self.objects, self.binder, cfg.parallelism)
        self.profiles: dict[str, Framework] = build_profiles(cfg, registry, self.handle)
        # NominatedNodeNameForExpectation: the binding cycle asks PreBindPreFlight first.
        self.nominate_for_expectation = featuregates.DEFAULT.enabled("NominatedNodeNameForExpectation")

    def framework_for(self, pod: Pod) -> Framework | None:
        """The profile named by ``spec.schedulerName``."""
        return self.profiles.get(pod.scheduler_name)

    def new_cycle_state(self) -> CycleState:
        """A fresh CycleState; about one in ten samples plugin durations, as kube-scheduler."""
        state = CycleState()
        state.record_plugin_metrics = self.rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        return state

    # --- the full cycle (simulate) -----------------------------------------------------------

    def schedule_one(self, pod: Pod, fwk: Framework | None = None) -> Attempt:
        """schedulingCycle then a synchronous bindingCycle for a pending pod."""
        fwk = fwk or self.framework_for(pod)
        if fwk is None:
            return Attempt(pod, "Error", message=f'no profile for scheduler name "{pod.scheduler_name}"')
        if pod.deletion_timestamp:
            # kube-scheduler drops a deleting pod from the queue with this FailedScheduling event.
            return Attempt(pod, "Error", message=f"skip schedule deleting pod: {pod.key}")
        if logs.enabled(3):
            logs.info("Attempting to schedule pod", 3, pod=pod.key)
        start = time.perf_counter()
        state = self.new_cycle_state()
        attempt = self.scheduling_cycle(fwk, state, pod)
        if attempt.status == "Scheduled" and attempt.node is not None:
            attempt = self.binding_cycle(fwk, state, pod, attempt)
        if attempt.status != "Scheduled":
            self.nominate(pod, attempt)
        if logs.enabled(2):
            _log_attempt(attempt)
        result = {"Scheduled": metrics.SCHEDULED, "Unschedulable": metrics.UNSCHEDULABLE}.get(
            attempt.status, metrics.ERROR
        )
        metrics.observe_attempt(result, fwk.profile_name, time.perf_counter() - start)
        return attempt

    def nominate(self, pod: Pod, attempt: Attempt) -> None:
        """handleSchedulingFailure's ``AddNominatedPod`` with the attempt's NominatingInfo."""
        mode, name = attempt.nominating
        self.nominator.add_nominated_pod(PodInfo(pod), mode, name)
        nominated = name if mode == MODE_OVERRIDE else pod.nominated_node_name
        attempt.nominated_node = nominated or None

    def scheduling_cycle(self, fwk: Framework, state: CycleState, pod: Pod) -> Attempt:
        """schedulingCycle: SchedulePod (and PostFilter on a FitError), assume, Reserve, Permit.

        A "Scheduled" attempt leaves the pod assumed on ``attempt.node`` and reserved; the caller
        then runs :meth:`binding_cycle` (at once, or on another thread as ``berth run`` does).
        """
        start = time.perf_counter()
        try:
            try:
                result = self.algorithm.schedule_pod(fwk, state, pod)
            finally:  # kube observes every attempt's algorithm (a deferred call)
                metrics.SCHEDULING_ALGORITHM_DURATION.observe((), time.perf_counter() - start)
        except NoNodesAvailable as err:
            return Attempt(pod, "Unschedulable", message=str(err))
        except SchedulingError as err:
            return Attempt(pod, "Error", message=str(err))
        except FitError as err:
            nominating = (MODE_OVERRIDE, "")  # no PostFilter plugins: clearNominatedNode
            victims: list[Pod] = []
            if fwk.post_filter:
                post_result, post_status = fwk.run_post_filter_plugins(
                    state, pod, err.diagnosis.node_to_status
                )
                err.diagnosis.post_filter_msg = post_status.message()
                if post_result is None:
                    nominating = (MODE_NOOP, "")
                else:
                    nominating = (post_result.mode, post_result.nominated_node_name or "")
                    victims = list(post_result.victims)
            return Attempt(
                pod,
                "Unschedulable",
                message=str(err),
                diagnosis=err.diagnosis,
                num_all_nodes=err.num_all_nodes,
                victims=victims,
                nominating=nominating,
            )
        host = result.suggested_host
        assumed = dataclasses.replace(pod, node_name=host)
        self.cache.assume_pod(assumed)
        # An assumed pod is no longer nominated anywhere (``assume``).
        self.nominator.delete_nominated_pod_if_exists(assumed)
        status = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if status is None:
            status, _timeout = fwk.run_permit_plugins(state, assumed, host)
            if status is not None and status.code is Code.WAIT:
                # Simulate and the extender have no waiting-pods map: a Wait ends the attempt, a
                # wait that lasted no time and ended Unschedulable (what the histogram records).
                waited = time.perf_counter()
                status = Status(Code.UNSCHEDULABLE, *status.reasons, plugin=status.plugin)
                metrics.PERMIT_WAIT_DURATION.labels(status.code.label).observe(time.perf_counter() - waited)
        if status is not None:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            if status.is_rejected():
                # A fresh diagnosis, as schedule_one.go: only the chosen host's rejection counts.
                diagnosis = Diagnosis()
                diagnosis.node_to_status.statuses[host] = status
                diagnosis.add_plugin_status(status)
                fit = FitError(pod.key, 1, diagnosis)
                return Attempt(
                    pod,
                    "Unschedulable",
                    message=str(fit),
                    result=result,
                    diagnosis=diagnosis,
                    num_all_nodes=1,
                )
            return Attempt(pod, "Error", message=status.message(), result=result)
        return Attempt(
            pod,
            "Scheduled",
            node=host,
            result=result,
            diagnosis=result.diagnosis,
            assumed=assumed,
            reserved=_reservations(fwk, state, host),
        )

    def binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        attempt: Attempt,
        nominate: Callable[[Pod, str], None] | None = None,
    ) -> Attempt:
        """bindingCycle: PreBindPreFlight, PreBind, Bind, then FinishBinding and PostBind; on
        failure Unreserve and forget the assumed pod, and return an "Error" attempt with the
        failing status's message.

        With NominatedNodeNameForExpectation (on in v1.36), when a PreBind plugin has work for the
        pod (DRA claims to write, volumes to bind), ``nominate(pod, host)`` is called before PreBind
        runs: ``berth run`` writes ``status.nominatedNodeName`` there, telling other components
        (the cluster autoscaler) where the pod is about to go, as kube-scheduler does."""
        host = attempt.node or ""
        assumed = attempt.assumed
        if assumed is None or assumed.node_name != host:
            assumed = dataclasses.replace(pod, node_name=host)
        status: Status | None = None
        if self.nominate_for_expectation:
            status = fwk.run_pre_bind_pre_flights(state, assumed, host)
            if status is None and nominate is not None:
                nominate(assumed, host)
            elif status is not None and status.code is Code.SKIP:
                status = None
        if status is None:
            status = fwk.run_pre_bind_plugins(state, assumed, host)
        if status is None:
            by_extender, status = self._extenders_binding(assumed, host)
            if not by_extender:
                bound = fwk.run_bind_plugins(state, assumed, host)
                status = None if bound.is_success() else bound
        if status is not None:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            if self.cache.is_assumed(assumed):
                self.cache.forget_pod(assumed)
            return Attempt(pod, "Error", message=status.message(), result=attempt.result)
        self.cache.finish_binding(assumed)
        fwk.run_post_bind_plugins(state, assumed, host)
        return attempt

    def _extenders_binding(self, pod: Pod, host: str) -> tuple[bool, Status | None]:
        """``extendersBinding``: the first interested binder extender binds instead of the Bind
        plugins; an ignorable one that fails is skipped (then the next, or the plugins, bind)."""
        for extender in self.algorithm.extenders:
            if not extender.is_binder() or not extender.is_interested(pod):
                continue
            try:
                extender.bind(pod, host)
            except ExtenderError as err:
                if extender.ignorable:
                    logs.info(
                        "Skipping extender in bind as it returned error and has ignorable flag set",
                        0,
                        extender=extender.name,
                        err=str(err),
                    )
                    continue
                return True, Status(Code.ERROR, str(err))
            return True, None
        return False, None

    # --- the extender's verbs --------------------------------------------------------------

    def filter_nodes(
        self, fwk: Framework, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[FilterOutcome, CycleState]:
        """PreFilter + Filter on exactly ``nodes`` (no sampling): what /filter answers."""
        state = self.new_cycle_state()
        self.cache.update_snapshot(self.algorithm.snapshot)
        failed: dict[str, Status] = {}
        pre_result, status, with_nodes = fwk.run_pre_filter_plugins(state, pod, nodes)
        if status is not None and not status.is_success():
            if not status.is_rejected():
                raise SchedulingError(status)
            return FilterOutcome([], {n.name: status for n in nodes}), state
        allowed = None if pre_result is None else pre_result.node_names
        candidates: Sequence[NodeInfo] = nodes
        if allowed is not None:
            narrowed = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(with_nodes))}]",
            )
            candidates = []
            for info in nodes:
                if info.name in allowed:
                    candidates.append(info)
                else:
                    failed[info.name] = narrowed
        filters = fwk.active_filters(state)
        if state.record_plugin_metrics:
            # A sampled cycle times each plugin on each node, as kube-scheduler: node by node.
            feasible, rejected = self._filter_timed(fwk, state, pod, candidates, filters)
        else:
            feasible, rejected = fwk.run_filter_plugins_all(state, pod, candidates, filters)
        for s in rejected.values():
            if s.code is Code.ERROR:
                raise SchedulingError(s)
        if failed and rejected:
            failed |= rejected
            failed = {info.name: failed[info.name] for info in nodes if info.name in failed}
        else:
            failed = failed or rejected
        return FilterOutcome(feasible, failed), state

    @staticmethod
    def _filter_timed(
        fwk: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], filters: list[FilterPlugin]
    ) -> tuple[list[NodeInfo], dict[str, Status]]:
        """:meth:`Framework.run_filter_plugins_all`'s answer, node by node with every call timed."""
        timed = TimedFilters(filters)
        feasible: list[NodeInfo] = []
        rejected: dict[str, Status] = {}
        try:
            for info in nodes:
                s = fwk.run_filter_plugins(state, pod, info, timed.plugins)
                if s is None:
                    feasible.append(info)
                else:
                    rejected[info.name] = s
        finally:
            timed.flush()
        return feasible, rejected

    def score_nodes(
        self, fwk: Framework, pod: Pod, nodes: Sequence[NodeInfo], state: CycleState | None = None
    ) -> Sequence[NodeScore]:
        """PreFilter (for plugins that need its state), PreScore, Score: what /prioritize answers.

        ``state`` is the CycleState of a /filter for the same pod on the snapshot as it is now
        (the caller has checked its generation; the snapshot is then not updated, so the scores
        and that state see the same cluster); its PreFilter results are reused instead of
        computed again.
        """
        if state is None:
            self.cache.update_snapshot(self.algorithm.snapshot)
            state = self.new_cycle_state()
            _, status, _ = fwk.run_pre_filter_plugins(state, pod, nodes)
            if status is not None and not status.is_success() and not status.is_rejected():
                raise SchedulingError(status)
        return self.algorithm.prioritize_nodes(fwk, state, pod, nodes)
