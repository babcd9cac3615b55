"""Running the pending pods of a state through an Engine, one at a time, in queue order.

All pending pods enter the queue at once (the file index is their queue timestamp) and nothing is
re-queued, so popping kube-scheduler's active-queue heap is the same as sorting by the QueueSort
plugin's ``less``. Each attempt sees the pods bound before it.

Preemption: when an attempt preempts (DefaultPreemption evicted victims and nominated a node),
the victims leave the cluster at once and the preemptor is retried right away, with
``status.nominatedNodeName`` set, so its next attempt tries the nominated node first. In
kube-scheduler the victims' deletion requeues it; the pods popped in between could not take the
room anyway, since every later pod has a lower or equal priority and filters count nominated pods
of higher or equal priority. At most :data:`MAX_PREEMPTION_RETRIES` retries are made per pod.
"""

from __future__ import annotations

import dataclasses
import functools
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.api.objects import Pod
from app.framework.interfaces import Plugin, QueuedPodInfo
from app.framework.runtime import Framework, NodeScore
from app.framework.status import Status
from app.framework.types import PodInfo
from app.scheduler.scheduler import Attempt, ClusterObjects, Engine
from app.simulate.state import ClusterState, PendingPod

__all__ = [
    "GATED",
    "MAX_PREEMPTION_RETRIES",
    "SKIPPED",
    "STATUSES",
    "PodRecord",
    "SimulationResult",
    "explain_attempt",
    "queue_order",
    "run_simulation",
]

#: How many times a preemptor is retried after preempting (each retry may preempt again).
MAX_PREEMPTION_RETRIES = 3

GATED = "Gated"
#: Pods whose schedulerName no profile serves: kube-scheduler leaves them to that scheduler.
SKIPPED = "Skipped"
#: Every record status, in the order the JSON documents them.
STATUSES = ("Scheduled", "Unschedulable", GATED, SKIPPED, "Error")


@dataclass(slots=True)
class PodRecord:
    """What happened to one pending pod."""

    pod: Pod
    status: str  # one of STATUSES
    node: str | None = None
    message: str = ""  # the FitError text, the PreEnqueue message or the error; "" when scheduled
    feasible_nodes: int = 0
    evaluated_nodes: int = 0
    filter: dict[str, Status] = field(default_factory=dict)  # nodes that failed, by name
    scores: list[NodeScore] = field(default_factory=list)  # empty when scoring was skipped
    attempt: Attempt | None = None  # None for gated pods and pods of no profile
    nominated_node: str | None = None  # the node preemption nominated for the pod, if any
    victims: list[Pod] = field(default_factory=list)  # the running pods it preempted
    volumes: list[str] = field(default_factory=list)  # what VolumeBinding did: PVs bound, claims provisioned
    # --- explanations (issue 23): filled by the run's observer, see app/simulate/explain.py, hints.py ---
    details: dict[str, list[str]] = field(default_factory=dict)  # failing node -> reasons with amounts
    weights: dict[str, int] = field(default_factory=dict)  # the profile's score plugin -> weight
    hints: list[Any] = field(default_factory=list)  # verified "fits if" hints (app.simulate.hints.Hint)

    @property
    def score(self) -> int | None:
        """The chosen node's weighted total, when nodes were scored."""
        for s in self.scores:
            if s.name == self.node:
                return s.total
        return None


@dataclass(slots=True)
class SimulationResult:
    """One record per pending pod, in scheduling (queue) order."""

    records: list[PodRecord]
    num_nodes: int
    warnings: list[str] = field(default_factory=list)  # plugins that raised, one line per pod

    def count(self, status: str) -> int:
        """How many records have ``status``."""
        return sum(1 for r in self.records if r.status == status)


def _queue_sort_framework(engine: Engine) -> Framework | None:
    # kube-scheduler has one queue for every profile, ordered by the first profile's QueueSort (config
    # validation requires all profiles to use the same one).
    first = engine.cfg.profiles[0].scheduler_name if engine.cfg.profiles else None
    if first is not None and first in engine.profiles:
        return engine.profiles[first]
    return next(iter(engine.profiles.values()), None)


def queue_order(pending: Sequence[PendingPod], engine: Engine) -> list[PendingPod]:
    """``pending`` in the order the scheduling queue pops them (QueueSort ``less``, file index as timestamp)."""
    fwk = _queue_sort_framework(engine)
    if fwk is None or not fwk.queue_sort:
        return sorted(pending, key=lambda p: p.index)
    less = fwk.queue_sort[0].less
    queued = {p.index: QueuedPodInfo(pod_info=PodInfo(p.pod), timestamp=float(p.index)) for p in pending}

    def compare(a: PendingPod, b: PendingPod) -> int:
        qa, qb = queued[a.index], queued[b.index]
        if less(qa, qb):
            return -1
        if less(qb, qa):
            return 1
        return a.index - b.index  # a plugin without a total order: file order keeps it deterministic

    return sorted(pending, key=functools.cmp_to_key(compare))


def _load_cluster(state: ClusterState, engine: Engine) -> None:
    """Put the state's nodes, running pods and other objects into the engine."""
    for node in state.nodes:
        engine.cache.add_node(node)
    for pod in state.running:
        engine.cache.add_pod(pod)
    if isinstance(engine.objects, ClusterObjects) and engine.objects is not state.objects:
        for obj in state.other_objects:
            engine.objects.add(obj)


def explain_attempt(attempt: Attempt, node_names: Sequence[str]) -> PodRecord:
    """Explain an attempt: feasible/evaluated counts, failing nodes and scores."""
    record = PodRecord(
        attempt.pod,
        attempt.status,
        attempt.node,
        attempt.message,
        attempt=attempt,
        volumes=list(attempt.reserved),
    )
    result = attempt.result
    diagnosis = attempt.diagnosis
    statuses = diagnosis.node_to_status.statuses
    record.filter = dict(statuses)
    if result is not None:
        # Scheduled, or filters passed but Reserve/Permit rejected the chosen host or binding failed. A
        # rejected pod reports no feasible node, like its FitError ("0/1 nodes are available"), with the
        # rejecting status recorded for the host; the scores still show why that host was picked.
        record.feasible_nodes = 0 if attempt.status == "Unschedulable" else result.feasible_nodes
        record.evaluated_nodes = result.evaluated_nodes
        record.scores = list(result.scores)
        if diagnosis.pre_filter_nodes is not None:
            # Nodes a PreFilterResult left out (NodeAffinity matchFields, NodeName) were never filtered;
            # kube-scheduler records the absent-node status for them (SetAbsentNodesStatus) whether or
            # not the pod fits elsewhere: "node(s) didn't satisfy plugin(s) [NodeAffinity]".
            absent = diagnosis.node_to_status.absent
            for name in node_names:
                if name not in diagnosis.pre_filter_nodes:
                    record.filter.setdefault(name, absent)
        if attempt.status == "Scheduled":
            record.message = ""
        return record
    if attempt.status != "Unschedulable" or attempt.num_all_nodes == 0:
        return record
    if diagnosis.pre_filter_msg:
        # PreFilter rejected the pod before any node was looked at.
        record.evaluated_nodes = len(node_names)
    else:
        record.evaluated_nodes = len(statuses)
    if attempt.num_all_nodes > len(statuses):
        # Nodes a PreFilter result excluded (all of them, on a PreFilter rejection) carry the "absent"
        # status FitError counts for them; list them too so the filter map explains every node.
        absent = diagnosis.node_to_status.absent
        for name in node_names:
            record.filter.setdefault(name, absent)
    return record


def run_simulation(
    state: ClusterState, engine: Engine, observer: Callable[[PodRecord, Engine], None] | None = None
) -> SimulationResult:
    """Schedule every pending pod of ``state`` one at a time against the evolving cluster.

    ``engine`` must be fresh: its cache receives the state's nodes and running pods here. Pods whose
    profile's PreEnqueue rejects them (SchedulingGates) are recorded as ``Gated`` without an attempt;
    pods of no profile as ``Skipped``: kube-scheduler's informer never queues them (``responsibleForPod``).
    ``observer`` sees each record right after its attempt, with the engine as that attempt left it
    (explanations read the cluster the attempt saw); it must not change the engine.
    """
    _load_cluster(state, engine)
    # The snapshot's nodes are exactly the state's (pods on unknown nodes make no node of their own).
    node_names = [n.name for n in state.nodes]
    records: list[PodRecord] = []
    warnings: list[str] = []
    for pending in queue_order(state.pending, engine):
        pod = pending.pod
        fwk = engine.framework_for(pod)
        if fwk is None:
            message = f'no profile serves schedulerName "{pod.scheduler_name}"'
            records.append(PodRecord(pod, SKIPPED, message=message))
            continue
        gate = fwk.run_pre_enqueue_plugins(pod)
        if gate is not None:
            records.append(PodRecord(pod, GATED, message=gate.message()))
            continue
        try:
            records.append(_schedule_with_preemption(engine, fwk, pod, node_names))
        except Exception as err:  # a plugin's bug costs its pod, as berth serve's verbs answer Error
            records.append(PodRecord(pod, "Error", message=crash_message(err)))
            warnings.append(f"{pod.key}: {records[-1].message}")
        if observer is not None:
            observer(records[-1], engine)
    return SimulationResult(records, len(node_names), warnings)


def crash_message(err: Exception) -> str:
    """``plugin "X" raised KeyError: 'k'``: the innermost plugin on the exception's stack, if any."""
    plugin = None
    for frame, _ in traceback.walk_tb(err.__traceback__):
        owner = frame.f_locals.get("self")
        if isinstance(owner, Plugin):
            plugin = owner.name
    raised = f"raised {type(err).__name__}: {err}"
    return f'plugin "{plugin}" {raised}' if plugin else f"internal error: {raised}"


def _schedule_with_preemption(
    engine: Engine, fwk: Framework, pod: Pod, node_names: Sequence[str]
) -> PodRecord:
    """Schedule ``pod``; after a preemption, retry it on its nominated node (see the module doc)."""
    attempt = engine.schedule_one(pod, fwk)
    victims = list(attempt.victims)
    nominated = attempt.nominated_node if attempt.victims else None
    retries = 0
    while attempt.victims and attempt.nominated_node and retries < MAX_PREEMPTION_RETRIES:
        retries += 1
        # What the status patch of kube-scheduler's failure handler gives the next attempt.
        pod = dataclasses.replace(pod, nominated_node_name=attempt.nominated_node)
        attempt = engine.schedule_one(pod, fwk)
        victims.extend(attempt.victims)
        if attempt.victims:
            nominated = attempt.nominated_node
    record = explain_attempt(attempt, node_names)
    record.nominated_node = nominated
    record.victims = victims
    return record
