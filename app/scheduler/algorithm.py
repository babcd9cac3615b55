"""schedulePod: find the nodes that fit, score them and pick one (``schedule_one.go``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.api.objects import Pod
from app.backend.cache.cache import Cache
from app.backend.cache.snapshot import Snapshot
from app.framework.cycle_state import CycleState
from app.framework.interfaces import FilterPlugin, PluginError
from app.framework.runtime import (
    Framework,
    NodeScore,
    NodeScores,
    TimedFilters,
    filter_failure,
    filter_plugin_error,
)
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, PodInfo
from app.scheduler.fit_error import ERR_NO_NODES_AVAILABLE, Diagnosis, FitError

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0

NominatedPods = Callable[[str], Sequence[PodInfo]]
"""Pods nominated to a node name (the queue's nominator); empty without preemption."""


class NoNodesAvailable(Exception):
    """The snapshot has no nodes (``ErrNoNodesAvailable``)."""

    def __str__(self) -> str:
        return ERR_NO_NODES_AVAILABLE


class SchedulingError(Exception):
    """An Error status from a plugin: the attempt failed for a reason other than fit."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


@dataclass(slots=True)
class ScheduleResult:
    """The chosen host and what the attempt looked at (``ScheduleResult`` plus explanations)."""

    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    scores: Sequence[NodeScore] = field(default_factory=list)


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before stopping (adaptive when percentage is 0)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class Algorithm:
    """The scheduling algorithm over a cache, with kube-scheduler's rotating start index."""

    def __init__(
        self,
        cache: Cache,
        percentage_of_nodes_to_score: int | None = None,
        rng: random.Random | None = None,
        nominated_pods: NominatedPods | None = None,
        any_nominated: Callable[[], bool] | None = None,
    ) -> None:
        self.cache = cache
        self.snapshot = Snapshot()
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self.rng = rng or random.Random()
        self.nominated_pods = nominated_pods
        # Whether any pod is nominated at all: when none is (the common case), filtering skips the
        # per-node lookup of nominated pods.
        self.any_nominated = any_nominated

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        """Pick a node for ``pod``; raise FitError, NoNodesAvailable or SchedulingError."""
        self.cache.update_snapshot(self.snapshot)
        if self.snapshot.num_nodes() == 0:
            raise NoNodesAvailable()
        feasible, diagnosis = self.find_nodes_that_fit_pod(fwk, state, pod)
        if not feasible:
            raise FitError(pod.key, self.snapshot.num_nodes(), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1, diagnosis)
        scores = self.prioritize_nodes(fwk, state, pod, feasible)
        return ScheduleResult(self.select_host(scores), evaluated, len(feasible), diagnosis, scores)

    # --- filtering -----------------------------------------------------------------------

    def find_nodes_that_fit_pod(
        self, fwk: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo] | None = None
    ) -> tuple[list[NodeInfo], Diagnosis]:
        """PreFilter, then Filter over the candidate nodes (``findNodesThatFitPod``).

        ``nodes`` restricts the search to given nodes (the extender's ``Nodes`` body); the
        default is every node of the snapshot.
        """
        diagnosis = Diagnosis()
        all_nodes = self.snapshot.list() if nodes is None else list(nodes)
        pre_result, status, plugins_with_nodes = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(plugins_with_nodes)
        if status is not None and not status.is_success():
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.node_to_status.absent = status
            diagnosis.pre_filter_msg = status.message()
            diagnosis.add_plugin_status(status)
            return [], diagnosis

        if nodes is None and pod.nominated_node_name:
            nominated_fit = self._evaluate_nominated_node(fwk, state, pod, diagnosis)
            if nominated_fit:
                return nominated_fit, diagnosis

        candidates = all_nodes
        if pre_result is not None and pre_result.node_names is not None:
            by_name = {n.name: n for n in all_nodes}
            candidates = [by_name[n] for n in sorted(pre_result.node_names) if n in by_name]
            diagnosis.pre_filter_nodes = frozenset(pre_result.node_names)
            names = " ".join(sorted(plugins_with_nodes))
            diagnosis.node_to_status.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) didn't satisfy plugin(s) [{names}]"
            )
        feasible: list[NodeInfo] = []
        try:
            self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, candidates, feasible)
        finally:
            # As kube-scheduler, advance the start index even when a Filter errored.
            if all_nodes:
                processed = len(feasible) + len(diagnosis.node_to_status)
                self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        return feasible, diagnosis

    def _evaluate_nominated_node(
        self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> list[NodeInfo]:
        node = self.snapshot.get(pod.nominated_node_name)
        if node is None:
            return []
        feasible = self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, [node])
        return feasible

    def _find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        feasible: list[NodeInfo] | None = None,
    ) -> list[NodeInfo]:
        """Filter ``nodes`` from the start index; feasible nodes are appended to ``feasible``."""
        if feasible is None:
            feasible = []
        n = len(nodes)
        if n == 0:
            return feasible
        percentage = (
            fwk.percentage_of_nodes_to_score
            if fwk.percentage_of_nodes_to_score is not None
            else self.percentage_of_nodes_to_score
        )
        to_find = num_feasible_nodes_to_find(percentage, n)
        if not fwk.has_score_plugins():
            to_find = 1
        start = self.next_start_node_index % n
        order = [*nodes[start:], *nodes[:start]] if start else nodes
        filters = fwk.active_filters(state)
        if not filters:
            feasible.extend(order[:to_find])
            return feasible
        if not state.record_plugin_metrics:
            return self._filter_nodes(fwk, state, pod, diagnosis, order, filters, to_find, feasible)
        timed = TimedFilters(filters)
        try:
            return self._filter_nodes(fwk, state, pod, diagnosis, order, timed.plugins, to_find, feasible)
        finally:
            timed.flush()

    def _filter_nodes(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        order: Sequence[NodeInfo],
        filters: Sequence[FilterPlugin],
        to_find: int,
        feasible: list[NodeInfo],
    ) -> list[NodeInfo]:
        """Run ``filters`` on ``order`` until ``to_find`` nodes fit."""
        statuses = diagnosis.node_to_status.statuses
        nominated = self.nominated_pods
        if nominated is not None and self.any_nominated is not None and not self.any_nominated():
            nominated = None
        run = fwk.run_filter_plugins
        success = Code.SUCCESS
        for info in order:
            status: Status | None = None
            if nominated is None:
                # The common case: run_filter_plugins' loop inline (a call per node costs a fifth
                # of SchedulingBasic's filtering), with the same statuses.
                pl = None
                try:
                    for pl in filters:
                        s = pl.filter(state, pod, info)
                        if s is not None and s.code is not success:
                            status = filter_failure(pl.name, s)
                            break
                except PluginError as err:
                    assert pl is not None
                    status = filter_plugin_error(pl.name, err)
            else:
                extra = nominated(info.name)
                status = (
                    fwk.run_filter_plugins_with_nominated_pods(state, pod, info, extra, filters)
                    if extra
                    else run(state, pod, info, filters)
                )
            if status is None:
                feasible.append(info)
                if len(feasible) >= to_find:
                    break
                continue
            if status.code is Code.ERROR:
                raise SchedulingError(status)
            statuses[info.name] = status
            diagnosis.add_plugin_status(status)
        return feasible

    # --- scoring -------------------------------------------------------------------------

    def prioritize_nodes(
        self, fwk: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Sequence[NodeScore]:
        """PreScore + Score; without score plugins every node scores 1 (``prioritizeNodes``)."""
        if not fwk.has_score_plugins():
            return [NodeScore(n.name, 1) for n in nodes]
        status = fwk.run_pre_score_plugins(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        scores, status = fwk.run_score_plugins(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        return scores

    def select_host(self, scores: Sequence[NodeScore]) -> str:
        """A node with the highest total, chosen uniformly at random among ties."""
        if isinstance(scores, NodeScores):  # the plain lists: no NodeScore object is made
            best = max(scores.totals)
            top = [name for name, total in zip(scores.names, scores.totals, strict=True) if total == best]
        else:
            best = max(s.total for s in scores)
            top = [s.name for s in scores if s.total == best]
        return top[0] if len(top) == 1 else self.rng.choice(top)
