"""The preemption Evaluator (``framework/preemption/preemption.go``).

``Evaluator.preempt`` is kube-scheduler's ``Preempt``: check the preemptor is eligible, dry-run
preemption on the nodes whose failure was plain Unschedulable (never UnschedulableAndUnresolvable),
pick the best candidate (``pickOneNodeForPreemption``) and actuate it through the
:class:`~app.framework.preemption.executor.Executor`.

The plugin-specific parts (eligibility, victim selection, candidate counts) come from a
:class:`PreemptionInterface`, as kube-scheduler's ``preemption.Interface``; DefaultPreemption is
the in-tree implementation. berth runs the dry run sequentially in node order from the random
offset and stops exactly where kube-scheduler's parallel run would be cancelled. Step 3
(``callExtenders``) hands the candidates to the extenders with a preempt verb, through the
handle's ``extenders``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from app import logs
from app.api.objects import Pod, pod_priority
from app.framework.cycle_state import CycleState
from app.framework.interfaces import Extender, ExtenderError, ExtenderVictims, Handle, PostFilterResult
from app.framework.preemption.executor import Executor
from app.framework.preemption.pdb import PodDisruptionBudget, list_pdbs
from app.framework.preemption.util import earliest_pod_start_time
from app.framework.status import Code, NodeToStatus, Status, fit_error_message
from app.framework.types import NodeInfo

__all__ = [
    "NOT_HELPFUL_MSG",
    "Candidate",
    "Evaluator",
    "PreemptionInterface",
    "Victims",
    "aggregate_errors",
    "pick_one_node_for_preemption",
]

NOT_HELPFUL_MSG = "Preemption is not helpful for scheduling"
MAX_INT32 = 2**31 - 1

ScoreFunc = Callable[[str], int]


@dataclass(slots=True)
class Victims:
    """``extenderv1.Victims``: the pods to evict on a node, most important first."""

    pods: list[Pod] = field(default_factory=list)
    num_pdb_violations: int = 0


@dataclass(slots=True)
class Candidate:
    """A node where preemption makes the pod fit, with its victims."""

    name: str
    victims: Victims


class PreemptionInterface(Protocol):
    """What a preemption plugin supplies to the Evaluator (``preemption.Interface``)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset into the potential nodes and how many candidates to shortlist."""
        ...

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status) -> tuple[bool, str]:
        """Whether ``pod`` may preempt, and why not."""
        ...

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status | None]:
        """The fewest pods to evict on ``node_info`` so that ``pod`` fits; None status = success.

        ``state`` and ``node_info`` are the cycle's and the snapshot's own: the implementation
        copies them before changing them (kube's DryRunPreemption copies first; copying only where
        a dry run happens saves the copy on nodes that fail at once).
        """
        ...

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Victims]) -> list[ScoreFunc] | None:
        """Score functions for pickOneNodeForPreemption; None for the default criteria."""
        ...


def aggregate_errors(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as is, several as ``[a, b]``; a
    message repeated is written once (its ``seenerrs`` set), so several nodes failing alike read as
    that one message, without brackets."""
    if len(messages) == 1:
        return messages[0]
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


class _CandidateList:
    """``candidateList``: at most ``capacity`` candidates; later adds are dropped."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: list[Candidate] = []

    def add(self, c: Candidate) -> None:
        if len(self.items) < self.capacity:
            self.items.append(c)

    def size(self) -> int:
        return len(self.items)


class Evaluator:
    """Runs preemption for a plugin (``preemption.Evaluator``)."""

    def __init__(
        self, plugin_name: str, handle: Handle, iface: PreemptionInterface, executor: Executor
    ) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.iface = iface
        self.executor = executor

    def preempt(self, state: CycleState, pod: Pod, m: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        """``Preempt``: (None, Error) transient; (None, Unschedulable) keep the nomination;
        (result, Unschedulable) preemption cannot help, the result clears the nomination;
        (result, Success) victims evicted and ``result`` nominates the node.
        """
        ok, msg = self.iface.pod_eligible_to_preempt_others(pod, m.get(pod.nominated_node_name))
        if not ok:
            logs.info("Pod is not eligible for preemption", 5, pod=pod.key, reason=msg)
            return None, Status(Code.UNSCHEDULABLE, msg)

        all_nodes = self.handle.snapshot.list()
        candidates, node_to_status, err = self.find_candidates(state, all_nodes, pod, m)
        if err and not candidates:
            return None, Status(Code.ERROR, err)
        if not candidates:
            logs.info(
                "No preemption candidate is found; preemption is not helpful for scheduling", 2, pod=pod.key
            )
            node_to_status.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL_MSG)
            message = fit_error_message(len(all_nodes), node_to_status)
            return PostFilterResult("", "override"), Status(Code.UNSCHEDULABLE, message)

        candidates, status = self.call_extenders(pod, candidates)
        if status is not None:
            return None, status

        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, "no candidate node for preemption")
        logs.info("the target node for the preemption is determined", 2, node=best.name, pod=pod.key)
        status = self.executor.actuate_pod_preemption(best.name, best.victims.pods, pod, self.plugin_name)
        if status is not None and not status.is_success():
            return None, status
        return PostFilterResult(best.name, "override", victims=list(best.victims.pods)), Status(Code.SUCCESS)

    def call_extenders(self, pod: Pod, candidates: list[Candidate]) -> tuple[list[Candidate], Status | None]:
        """``callExtenders``: each interested extender with a preempt verb narrows the candidates.

        An extender's answer replaces the candidates for the next one; a kept node without victims
        is dropped for an ignorable extender and an error otherwise, as is a failed call.
        """
        extenders: Sequence[Extender] = getattr(self.handle, "extenders", ())
        if not extenders:
            return candidates, None
        victims: ExtenderVictims = {
            c.name: (c.victims.pods, c.victims.num_pdb_violations) for c in candidates
        }
        if not victims:
            return candidates, None
        for extender in extenders:
            if not extender.supports_preemption() or not extender.is_interested(pod):
                continue
            try:
                answer = extender.process_preemption(pod, victims, self.handle.snapshot)
            except ExtenderError as err:
                if extender.ignorable:
                    logs.info(
                        "Skipped extender as it returned error and has ignorable flag set",
                        2,
                        extender=extender.name,
                        err=str(err),
                    )
                    continue
                return [], Status(Code.ERROR, str(err))
            for node, (pods, _) in list(answer.items()):
                if pods:
                    continue
                if not extender.ignorable:
                    return [], Status(Code.ERROR, f'expected at least one victim pod on node "{node}"')
                del answer[node]
                logs.info(
                    "Ignored node for which the extender didn't report victims",
                    2,
                    node=node,
                    extender=extender.name,
                )
            victims = answer
            if not victims:
                break
        return [Candidate(node, Victims(list(pods), n)) for node, (pods, n) in victims.items()], None

    def find_candidates(
        self, state: CycleState, all_nodes: Sequence[NodeInfo], pod: Pod, m: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, str]:
        """``findCandidates``: dry-run preemption on the Unschedulable nodes."""
        if not all_nodes:
            return [], NodeToStatus(), "no nodes available"
        potential = m.nodes_for_status_code(self.handle.snapshot, Code.UNSCHEDULABLE)
        if not potential:
            logs.info("Preemption will not help schedule pod on any node", 3, pod=pod.key)
            return [], NodeToStatus(), ""
        pdbs = list_pdbs(self.handle.objects)
        offset, num = self.iface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: Pod,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, str]:
        """``DryRunPreemption``: candidates (non-violating first, then violating), failed nodes, errors.

        Each node is tried on a copy of its NodeInfo and of the CycleState (made by the
        interface's ``select_victims_on_node``). The run stops once there is a non-violating
        candidate and ``num_candidates`` candidates in all.
        """
        non_violating = _CandidateList(num_candidates)
        violating = _CandidateList(num_candidates)
        statuses = NodeToStatus()
        errors: list[str] = []
        n = len(potential)
        for i in range(n):
            info = potential[(offset + i) % n]
            pods, num_violations, status = self.iface.select_victims_on_node(state, pod, info, pdbs)
            if (status is None or status.is_success()) and pods:
                c = Candidate(info.name, Victims(pods, num_violations))
                (non_violating if num_violations == 0 else violating).add(c)
                nv, v = non_violating.size(), violating.size()
                if nv > 0 and nv + v >= num_candidates:
                    break
                continue
            if status is None or status.is_success():
                status = Status(Code.ERROR, f'expected at least one victim pod on node "{info.name}"')
            if status.code is Code.ERROR:
                errors.append(status.message())
            statuses.set(info.name, status)
        return non_violating.items + violating.items, statuses, aggregate_errors(errors) if errors else ""

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        """``SelectCandidate``: the only candidate, or pickOneNodeForPreemption's choice."""
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims = {c.name: c.victims for c in candidates}
        chosen = pick_one_node_for_preemption(victims, self.iface.ordered_score_funcs(victims))
        for c in candidates:
            if c.name == chosen:
                return c
        return candidates[0]  # unreachable, as kube-scheduler's fallback


def pick_one_node_for_preemption(
    nodes_to_victims: dict[str, Victims],
    score_funcs: Sequence[ScoreFunc] | None = None,
    now: float | None = None,
) -> str:
    """``pickOneNodeForPreemption``: apply each criterion, keeping the ties, until one node is left.

    Default criteria, in order: fewest PDB violations; lowest highest-victim priority (victims are
    most important first); smallest sum of (priority + 2^31); fewest victims; latest earliest start
    time among the highest-priority victims. Still tied: the first candidate (kube-scheduler's
    order there is Go map order; berth's is the candidates' order).
    """
    if not nodes_to_victims:
        return ""
    now = time.time() if now is None else now
    nodes = list(nodes_to_victims)
    if not score_funcs:

        def min_pdb(node: str) -> int:
            return -nodes_to_victims[node].num_pdb_violations

        def min_highest_priority(node: str) -> int:
            return -pod_priority(nodes_to_victims[node].pods[0])

        def min_sum_priorities(node: str) -> int:
            return -sum(pod_priority(p) + MAX_INT32 + 1 for p in nodes_to_victims[node].pods)

        def min_num_pods(node: str) -> int:
            return -len(nodes_to_victims[node].pods)

        def latest_start_time(node: str) -> int:
            earliest = earliest_pod_start_time(nodes_to_victims[node].pods, now)
            return -(2**63) if earliest is None else int(earliest * 1e9)

        score_funcs = [min_pdb, min_highest_priority, min_sum_priorities, min_num_pods, latest_start_time]
    for f in score_funcs:
        best: int | None = None
        selected: list[str] = []
        for node in nodes:
            score = f(node)
            if best is None or score > best:
                best, selected = score, [node]
            elif score == best:
                selected.append(node)
        if len(selected) == 1:
            return selected[0]
        nodes = selected
    return nodes[0]
