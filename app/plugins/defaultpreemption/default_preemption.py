"""DefaultPreemption (``plugins/defaultpreemption/default_preemption.go``): PostFilter and PreEnqueue.

PostFilter runs the preemption Evaluator and prefixes its message with ``"preemption: "``; every
call counts in ``scheduler_preemption_attempts_total``. PreEnqueue (async preemption, on in
v1.36) keeps a pod out of the active queue while its own preemption is still evicting victims.

The handle must carry the profile's framework (``handle.framework``, as berth's per-profile
handle does); the engine's nominator, cluster actions and rng are used when present.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from app import featuregates, metrics
from app.api.objects import Pod, pod_priority
from app.framework.cycle_state import CycleState
from app.framework.events import POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from app.framework.interfaces import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PodNominator,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    PreFilterExtensions,
)
from app.framework.preemption.executor import Executor
from app.framework.preemption.pdb import PodDisruptionBudget, filter_pods_with_pdb_violation
from app.framework.preemption.preemption import Evaluator, ScoreFunc, Victims
from app.framework.preemption.util import importance_key
from app.framework.runtime import Framework
from app.framework.status import Code, NodeToStatus, Status
from app.framework.types import NodeInfo, PodInfo
from app.plugins.defaultpreemption.args import DefaultPreemptionArgs

__all__ = [
    "NAME",
    "NOT_ELIGIBLE_NEVER",
    "NOT_ELIGIBLE_TERMINATING",
    "NO_VICTIMS_MSG",
    "DefaultPreemption",
    "pod_terminating_by_preemption",
]

NAME = "DefaultPreemption"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS_MSG = "No preemption victims found for incoming pod"
WAITING_MSG = "waiting for the preemption for this pod to be finished"
ASYNC_PREEMPTION_GATE = "SchedulerAsyncPreemption"

IsEligiblePod = Callable[[NodeInfo, PodInfo, Pod], bool]


def pod_terminating_by_preemption(pod: Pod) -> bool:
    """Deleting, with the DisruptionTarget condition True for reason PreemptionByScheduler."""
    if not pod.deletion_timestamp:
        return False
    status = pod.raw.get("status") if isinstance(pod.raw, dict) else None
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == "DisruptionTarget":
            return c.get("status") == "True" and c.get("reason") == "PreemptionByScheduler"
    return False


class _NoNominator:
    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return []


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    """kube-scheduler's preemption: evict the fewest, least important lower-priority pods."""

    name = NAME
    args_type = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        super().__init__(args or DefaultPreemptionArgs(), handle)
        self.args: DefaultPreemptionArgs = self.args
        # SchedulerAsyncPreemption (beta, on from 1.33; settable off at every emulated version):
        # off, the victims are evicted inside PostFilter and nothing is held back at PreEnqueue.
        self.async_preemption = featuregates.DEFAULT.enabled(ASYNC_PREEMPTION_GATE)
        self.executor = Executor(handle, self.async_preemption)
        self.evaluator = Evaluator(NAME, handle, self, self.executor)
        # kube-scheduler's customisation hooks, with their defaults.
        self.is_eligible_pod: IsEligiblePod = lambda node_info, victim, preemptor: True
        rng = getattr(handle, "rng", None)
        self.rng: random.Random = rng if isinstance(rng, random.Random) else random.Random()
        # The dry run's per-cycle lookups (PreFilter extensions, active filters), made for the first
        # node it walks and reused for the others: the cycle state they derive from is the same.
        self._cycle_lookups: tuple[CycleState, DryRunLookups] | None = None

    # --- collaborators from the handle ----------------------------------------------------------

    @property
    def framework(self) -> Framework:
        """The profile's framework (its filters and PreFilter extensions)."""
        fwk = getattr(self.handle, "framework", None)
        if not isinstance(fwk, Framework):
            raise RuntimeError("DefaultPreemption needs a handle with the profile's framework")
        return fwk

    @property
    def nominator(self) -> PodNominator:
        """The engine's nominator (an empty one when the handle has none)."""
        nominator: Any = getattr(self.handle, "nominator", None)
        return nominator if nominator is not None else _NoNominator()

    # --- extension points ------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Preempt; a message gets the ``"preemption: "`` prefix."""
        try:
            result, status = self.evaluator.preempt(state, pod, NodeToStatus.of(filtered_node_status))
        finally:
            metrics.PREEMPTION_ATTEMPTS.inc()
        msg = status.message()
        if msg:
            return result, Status(status.code, "preemption: " + msg)
        return result, status

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Hold a pod back while its own (async) preemption is still running; without async
        preemption there is none to wait for."""
        if self.async_preemption and self.executor.is_pod_running_preemption(pod.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_MSG)
        return None

    def gated_until_deleted(self, pod: Pod) -> str | None:
        """A preemptor held back by :meth:`pre_enqueue` is let in only once the cache has dropped its
        last victim (or by an activation when its preemption fails): that victim's UID, so that the
        queue looks at it on that deletion alone. None when any pod deletion may let it in."""
        return self.executor.released_by(pod.uid) if self.async_preemption else None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod deletions, so that a pod held back by PreEnqueue is looked at again; the hint always
        skips because the plugins whose rejections preemption resolves decide when to requeue.
        None without async preemption: PreEnqueue then never rejects a pod."""
        if not self.async_preemption:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE), self.is_pod_schedulable_after_pod_deletion
            )
        ]

    def is_pod_schedulable_after_pod_deletion(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Always QueueSkip (``isPodSchedulableAfterPodDeletion``)."""
        return QueueingHint.QUEUE_SKIP

    # --- preemption.Interface -------------------------------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """``max(n * percentage / 100, absolute)``, never more than ``n``."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset (the engine's seeded rng) and the number of candidates."""
        return self.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Victims]) -> list[ScoreFunc] | None:
        """None: pickOneNodeForPreemption's default criteria."""
        return None

    def is_preemption_allowed(self, node_info: NodeInfo, victim: PodInfo, preemptor: Pod) -> bool:
        """A lower priority than the preemptor's, and ``is_eligible_pod``."""
        return pod_priority(victim.pod) < pod_priority(preemptor) and self.is_eligible_pod(
            node_info, victim, preemptor
        )

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status) -> tuple[bool, str]:
        """Never for preemptionPolicy Never, nor while lower-priority pods on its nominated node terminate."""
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nom = pod.nominated_node_name
        if nom:
            # A nominated node now rejected as unresolvable: try preempting elsewhere.
            if nominated_node_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            info = self.handle.snapshot.get(nom)
            if info is not None:
                for p in info.pods:
                    if self.is_preemption_allowed(info, p, pod) and pod_terminating_by_preemption(p.pod):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status | None]:
        """Remove every lower-priority pod; if the pod then fits, add back (reprieve) as many as
        possible: PDB-violating victims first, then the others, most important first.

        ``state`` and ``node_info`` are the cycle's own and are copied before the dry run changes
        them, and only then: a node with no lower-priority pod fails without a copy (on a cluster
        where preemption cannot help, most of the nodes the dry run walks).
        """
        # is_preemption_allowed inline: this runs for every pod of every node the dry run walks.
        priority = pod_priority(pod)
        eligible = self.is_eligible_pod
        potential = [
            pi for pi in node_info.pods if pod_priority(pi.pod) < priority and eligible(node_info, pi, pod)
        ]
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS_MSG)
        cached = self._cycle_lookups
        if cached is not None and cached[0] is state:
            lookups = cached[1]
        else:
            lookups = dry_run_lookups(self.framework, state)
            self._cycle_lookups = (state, lookups)
        return select_victims(
            self.framework, self.nominator, state.clone(), pod, node_info, potential, pdbs, lookups
        )


#: What the dry run looks up once per cycle: the PreFilter extensions to run, and the Filter plugins
#: (None in a cycle that samples plugin metrics: Filter then goes through the framework's timed path).
DryRunLookups = tuple[list[tuple[str, PreFilterExtensions]], list[FilterPlugin] | None]


def dry_run_lookups(fwk: Framework, state: CycleState) -> DryRunLookups:
    """The :data:`DryRunLookups` of ``state`` (or of any copy of it: a copy has its skipped plugins)."""
    extensions = fwk.pre_filter_extensions_for(state)
    filters = None if state.record_plugin_metrics else fwk.active_filters(state)
    return extensions, filters


def select_victims(
    fwk: Framework,
    nominator: PodNominator,
    state: CycleState,
    pod: Pod,
    node_info: NodeInfo,
    potential: list[PodInfo],
    pdbs: Sequence[PodDisruptionBudget],
    lookups: DryRunLookups | None = None,
) -> tuple[list[Pod], int, Status | None]:
    """The body of SelectVictimsOnNode over given ``potential`` victims (the extender's /preempt reuses it).

    ``state`` is a copy and is modified; ``node_info`` is not: the dry run works on a copy of it.
    Without PreFilter extensions to tell (the pod has no inter-pod affinity or spread constraints,
    the usual case) that copy leaves the potential victims out at once, which is what removing
    them one by one would give; with extensions each removal goes through them as in
    kube-scheduler. Returns (victims most important first,
    how many of them violate a PDB, None) or a failure status.

    The PreFilter extensions and the Filter plugins to run (``lookups``) are looked up once per cycle
    by a caller walking many nodes, or here for the node; never per pod added or removed (the
    state's skipped plugins do not change during the dry run). In a cycle that samples plugin
    metrics Filter goes through the framework's timed path as before. The pods
    nominated to the node are read once too: the dry run of one node sees one nominator state.
    """
    if not potential:
        return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS_MSG)
    extensions, filters = lookups if lookups is not None else dry_run_lookups(fwk, state)
    nominated = nominator.nominated_pods_for_node(node_info.name)
    if not extensions:
        node_info = node_info.snapshot_without(potential)
    else:
        node_info = node_info.snapshot()

    def remove(pi: PodInfo) -> Status | None:
        node_info.remove_pod(pi.pod)
        return fwk.run_pre_filter_extension_remove_pod(state, pod, pi, node_info, extensions)

    def add(pi: PodInfo) -> Status | None:
        node_info.add_pod_info(pi)
        return fwk.run_pre_filter_extension_add_pod(state, pod, pi, node_info, extensions)

    def fits() -> Status | None:
        return fwk.run_filter_plugins_with_nominated_pods(
            state, pod, node_info, nominated, filters, extensions
        )

    if extensions:
        for pi in potential:
            s = remove(pi)
            if s is not None:
                return [], 0, s
    # The pod does not fit even without every lower-priority pod: this node cannot help (pod
    # affinity to a victim is deliberately not considered, as in kube-scheduler).
    s = fits()
    if s is not None:
        return [], 0, s
    key = importance_key(time.time())
    potential = sorted(potential, key=lambda pi: key(pi.pod))
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    victims: list[PodInfo] = []
    num_violating = 0

    def reprieve(pi: PodInfo) -> tuple[bool, Status | None]:
        s = add(pi)
        if s is not None:
            return False, s
        if fits() is None:
            return True, None
        node_info.undo_add_pod_info(pi)
        s = fwk.run_pre_filter_extension_remove_pod(state, pod, pi, node_info, extensions)
        if s is not None:
            return False, s
        victims.append(pi)
        return False, None

    for pi in violating:
        kept, err = reprieve(pi)
        if err is not None:
            return [], 0, err
        if not kept:
            num_violating += 1
    for pi in non_violating:
        _, err = reprieve(pi)
        if err is not None:
            return [], 0, err
    if violating and non_violating:
        victims.sort(key=lambda pi: key(pi.pod))
    return [pi.pod for pi in victims], num_violating, None
