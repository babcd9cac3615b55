"""schedulePod: find the nodes that fit, score them and pick one (``schedule_one.go``)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import chain
from typing import cast

from app import logs, metrics
from app.api.extenderv1 import MAX_EXTENDER_PRIORITY
from app.api.objects import Pod
from app.backend.cache.cache import Cache
from app.backend.cache.snapshot import Snapshot
from app.framework.cycle_state import CycleState
from app.framework.interfaces import (
    EXTENDER_NAME,
    MAX_NODE_SCORE,
    Extender,
    ExtenderError,
    FilterPlugin,
    PluginError,
)
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
from app.scheduler.node_memo import NodeMemo, NodeMemos

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
        extenders: Sequence[Extender] = (),
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
        # kube-scheduler's order: non-ignorable extenders first (see app.kube.extender.build_extenders).
        self.extenders = list(extenders)
        self._prioritizing: ThreadPoolExecutor | None = None
        # Node-local verdicts and raw scores kept between cycles of identical pods (see
        # app.scheduler.node_memo): on for berth run and the offline faces, which schedule many
        # copies of a pod.
        self.memoize_node_local = False
        # Whether a cycle that samples plugin durations (one in ten) runs the full path, every
        # plugin called and timed, as kube-scheduler's metrics mean: berth run's. The offline faces
        # export no metrics and keep the memo in those cycles too.
        self.time_sampled_cycles_in_full = False
        self._memos = NodeMemos()

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        """Pick a node for ``pod``; raise FitError, NoNodesAvailable or SchedulingError."""
        self.cache.update_snapshot(self.snapshot)
        if self.snapshot.num_nodes() == 0:
            raise NoNodesAvailable()
        memo = None
        if self.memoize_node_local and not self.extenders:
            memo = self._memos.for_pod(fwk, pod, self.snapshot)
            if state.record_plugin_metrics and self.time_sampled_cycles_in_full:
                memo = None  # the memo still followed the snapshot's changes for the next cycle
        feasible, diagnosis = self.find_nodes_that_fit_pod(fwk, state, pod, memo=memo)
        if not feasible:
            raise FitError(pod.key, self.snapshot.num_nodes(), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1, diagnosis)
        scores = self.prioritize_nodes(fwk, state, pod, feasible, memo=memo)
        return ScheduleResult(self.select_host(scores), evaluated, len(feasible), diagnosis, scores)

    # --- filtering -----------------------------------------------------------------------

    def find_nodes_that_fit_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo] | None = None,
        memo: NodeMemo | None = None,
    ) -> tuple[list[NodeInfo], Diagnosis]:
        """PreFilter, then Filter over the candidate nodes (``findNodesThatFitPod``).

        ``nodes`` restricts the search to given nodes (the extender's ``Nodes`` body); the
        default is every node of the snapshot. ``memo``: verdicts kept from earlier cycles of the
        same pod shape, used when every node is a candidate and the active filters are node-local.
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
        if memo is not None and candidates is not memo.nodes:
            memo = None  # nodes given by the caller: not the snapshot's list the memo follows
        if pre_result is not None and pre_result.node_names is not None:
            memo = None  # the candidates are a PreFilter result, not the list the memo follows
            by_name = {n.name: n for n in all_nodes}
            candidates = [by_name[n] for n in sorted(pre_result.node_names) if n in by_name]
            diagnosis.pre_filter_nodes = frozenset(pre_result.node_names)
            names = " ".join(sorted(plugins_with_nodes))
            diagnosis.node_to_status.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) didn't satisfy plugin(s) [{names}]"
            )
        feasible: list[NodeInfo] = []
        try:
            self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, candidates, feasible, memo)
        finally:
            # As kube-scheduler, advance the start index even when a Filter errored.
            if all_nodes:
                processed = len(feasible) + len(diagnosis.node_to_status)
                self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        if not self.extenders:
            return feasible, diagnosis
        after = self.find_nodes_that_pass_extenders(pod, feasible, diagnosis)
        if len(after) != len(feasible):
            # Extenders have no queueing hints: a pod they rejected is moved by any cluster event.
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return after, diagnosis

    def find_nodes_that_pass_extenders(
        self, pod: Pod, feasible: list[NodeInfo], diagnosis: Diagnosis
    ) -> list[NodeInfo]:
        """``findNodesThatPassExtenders``: each interested extender filters what the previous left.

        An ignorable extender's failure is logged and skipped; any other's fails the attempt with
        its message. Failed nodes get Unschedulable statuses with the extender's message,
        FailedAndUnresolvableNodes UnschedulableAndUnresolvable ones (those win for a node in both).
        """
        statuses = diagnosis.node_to_status.statuses
        for extender in self.extenders:
            if not feasible:
                break
            if not extender.is_interested(pod):
                continue
            try:
                passed, failed, unresolvable = extender.filter(pod, feasible)
            except ExtenderError as err:
                if extender.ignorable:
                    logs.info(
                        "Skipping extender as it returned error and has ignorable flag set",
                        0,
                        extender=extender.name,
                        err=str(err),
                    )
                    continue
                raise SchedulingError(Status(Code.ERROR, str(err))) from None
            for name, message in unresolvable.items():
                statuses[name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
            for name, message in failed.items():
                if name not in unresolvable:
                    statuses[name] = Status(Code.UNSCHEDULABLE, message)
            feasible = passed
        return feasible

    def _evaluate_nominated_node(
        self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> list[NodeInfo]:
        node = self.snapshot.get(pod.nominated_node_name)
        if node is None:
            return []
        feasible = self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, [node])
        if self.extenders:
            feasible = self.find_nodes_that_pass_extenders(pod, feasible, diagnosis)
        return feasible

    def _find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        feasible: list[NodeInfo] | None = None,
        memo: NodeMemo | None = None,
    ) -> list[NodeInfo]:
        """Filter ``nodes`` from the start index; feasible nodes are appended to ``feasible``.

        With ``memo`` (``nodes`` is the snapshot's list it follows), node-local filters are asked
        only about nodes changed since they last were."""
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
        if not fwk.has_score_plugins() and not any(
            e.is_filter() or e.is_prioritizer() for e in self.extenders
        ):
            to_find = 1
        start = self.next_start_node_index % n
        filters = fwk.active_filters(state)
        if not filters:
            feasible.extend(nodes[start : start + to_find])
            if len(feasible) < to_find and start:
                feasible.extend(nodes[: min(start, to_find - len(feasible))])
            return feasible
        if memo is not None and (self._nominated_lookup() is not None or not memo.filters_local(filters)):
            memo = None
        if memo is not None:
            memo.use_filters(filters)
        began = time.perf_counter()
        found = len(feasible)
        failed_by: dict[tuple[str, str], int] = {}  # (rejecting plugin, status code) -> nodes
        try:
            if not state.record_plugin_metrics:
                if memo is not None:
                    return self._filter_remembered(
                        fwk, state, pod, diagnosis, memo, start, filters, to_find, feasible, failed_by
                    )
                # Plugins that pass every node for this pod are not called; the metrics below are
                # derived from ``filters``, so they count them as kube-scheduler's calls do. A
                # cycle that samples plugin durations calls them all, to time them.
                deciding = _filters_that_can_reject(filters, pod)
                return self._filter_nodes(
                    fwk, state, pod, diagnosis, nodes, start, deciding, to_find, feasible, failed_by
                )
            timed = TimedFilters(filters)
            try:
                if memo is not None:
                    return self._filter_remembered(
                        fwk, state, pod, diagnosis, memo, start, timed.plugins, to_find, feasible, failed_by
                    )
                return self._filter_nodes(
                    fwk, state, pod, diagnosis, nodes, start, timed.plugins, to_find, feasible, failed_by
                )
            finally:
                timed.flush()
        finally:
            _record_filter_metrics(
                fwk, filters, len(feasible) - found, failed_by, time.perf_counter() - began
            )

    def _filter_nodes(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        start: int,
        filters: Sequence[FilterPlugin],
        to_find: int,
        feasible: list[NodeInfo],
        failed_by: dict[tuple[str, str], int],
    ) -> list[NodeInfo]:
        """Run ``filters`` on ``nodes`` from index ``start`` round to ``start - 1`` until ``to_find``
        nodes fit; rejections are counted in ``failed_by`` by plugin and status code (for the
        Filter metrics).

        The nodes are read by index rather than from a rotated copy: a copy of a 5000-node list
        per pod touches every NodeInfo (its reference count) while the loop usually stops after a
        tenth of them."""
        nominated = self._nominated_lookup()
        run = fwk.run_filter_plugins
        success = Code.SUCCESS
        for index in chain(range(start, len(nodes)), range(start)):
            info = nodes[index]
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
            _reject(status, info.name, diagnosis, failed_by)
        return feasible

    def _filter_remembered(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        memo: NodeMemo,
        start: int,
        filters: Sequence[FilterPlugin],
        to_find: int,
        feasible: list[NodeInfo],
        failed_by: dict[tuple[str, str], int],
    ) -> list[NodeInfo]:
        """:meth:`_filter_nodes` over the memo's node list from ``start``: a node whose NodeInfo
        did not change since its verdict was kept gets that verdict without running ``filters``.

        The nodes are taken a window at a time (grown until it holds ``to_find`` feasible nodes or
        every node), with list operations rather than a loop per node; verdicts of nodes past the
        last one kube-scheduler's loop would have reached are kept but not reported."""
        nodes, names, ring = memo.index.nodes, memo.index.names, memo.index.ring
        verdicts = memo.verdicts

        def ask(info: NodeInfo) -> Status | None:
            return fwk.run_filter_plugins(state, pod, info, filters)

        lazy = memo.catch_up(ask)  # True: some node has no verdict yet; the window's are checked
        n = len(nodes)
        size = min(n, to_find + to_find // 8 + 16)
        checked = 0
        while True:
            window = ring[start : start + size]
            if lazy:
                memo.check(window[checked:], ask)
                checked = size
            fit = [i for i in window if verdicts[i] is None]
            if len(fit) >= to_find or size == n:
                break
            size = min(n, 2 * size)
        if len(fit) > to_find:
            fit = fit[:to_find]
            window = window[: (fit[-1] - start) % n + 1]
        if memo.errors:
            # An Error among this cycle's verdicts: the nodes one by one, in order, as the full
            # path's loop (the feasible nodes before the Error count for the start index).
            for i in window:
                status = verdicts[i]
                if status is None:
                    feasible.append(nodes[i])
                else:
                    _reject(status, names[i], diagnosis, failed_by)  # raises at the first Error
            memo.found(feasible, fit)
            return feasible
        rejected = [i for i in window if verdicts[i] is not None]
        found = cast("list[Status]", [verdicts[i] for i in rejected])
        if rejected:
            diagnosis.node_to_status.statuses.update(zip([names[i] for i in rejected], found, strict=True))
            # Rejections counted per (plugin, code), each kind noted in the diagnosis once.
            kinds: dict[tuple[str, str], Status] = {}
            for status in found:
                key = (status.plugin or "", status.code.label)
                failed_by[key] = failed_by.get(key, 0) + 1
                kinds.setdefault(key, status)
            for status in kinds.values():
                diagnosis.add_plugin_status(status)
        feasible.extend([nodes[i] for i in fit])
        memo.found(feasible, fit)
        return feasible

    def _nominated_lookup(self) -> NominatedPods | None:
        """The nominator's lookup, or None when no pod is nominated anywhere (nothing to add)."""
        if self.nominated_pods is not None and self.any_nominated is not None and not self.any_nominated():
            return None
        return self.nominated_pods

    # --- scoring -------------------------------------------------------------------------

    def prioritize_nodes(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        memo: NodeMemo | None = None,
    ) -> Sequence[NodeScore]:
        """PreScore + Score, plus the extenders' weighted scores; without score plugins and
        extenders every node scores 1 (``prioritizeNodes``).

        With ``memo`` (``nodes`` are entries of the snapshot's list it follows) and node-local
        active scorers, raw scores of unchanged nodes come from the memo; normalization over
        ``nodes``, the range check and the weights run as always."""
        if not self.extenders and not fwk.has_score_plugins():
            return [NodeScore(n.name, 1) for n in nodes]
        status = fwk.run_pre_score_plugins(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        scores: Sequence[NodeScore] | None = None
        if memo is not None:
            scorers = fwk.active_scorers(state)
            if memo.scorers_local(scorers):
                scores = memo.score(fwk, state, pod, nodes, scorers)
        if scores is None:
            scores, status = fwk.run_score_plugins(state, pod, nodes)
            if status is not None:
                raise SchedulingError(status)
        if self.extenders and nodes:
            return self._add_extender_scores(pod, nodes, scores)
        return scores

    def _add_extender_scores(
        self, pod: Pod, nodes: Sequence[NodeInfo], scores: Sequence[NodeScore]
    ) -> Sequence[NodeScore]:
        """Each interested extender's ``score * weight * MaxNodeScore/MaxExtenderPriority`` added to
        the nodes' totals, as a score column named by the extender's URL prefix.

        The extenders are asked at once, as kube-scheduler's goroutines; a failing one (ignorable
        or not) gives no score. Hosts an extender names twice add up; hosts it names that were not
        asked about are dropped.
        """
        interested = [e for e in self.extenders if e.is_interested(pod)]
        if not interested:
            return scores
        if len(interested) == 1:
            answers = [self._prioritize(interested[0], pod, nodes)]
        else:
            if self._prioritizing is None:
                self._prioritizing = ThreadPoolExecutor(
                    max_workers=len(self.extenders), thread_name_prefix="prioritizing-extender"
                )
            pool = self._prioritizing
            answers = list(pool.map(lambda e: self._prioritize(e, pod, nodes), interested))
        index = {n.name: i for i, n in enumerate(nodes)}
        scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
        names, columns = [], []
        for extender, answer in zip(interested, answers, strict=True):
            if answer is None:
                continue
            column = [0] * len(nodes)
            for host, score in answer:
                i = index.get(host)
                if i is not None:
                    column[i] += score * extender.weight * scale
            names.append(extender.name)
            columns.append(column)
        if not isinstance(scores, NodeScores):  # run_score_plugins always makes one; kept general
            plugins = list(scores[0].plugin_scores) if scores else []
            scores = NodeScores(
                [s.name for s in scores],
                [s.total for s in scores],
                (plugins, [[s.plugin_scores.get(p, 0) for s in scores] for p in plugins]),
            )
        return scores.plus(names, columns)

    @staticmethod
    def _prioritize(extender: Extender, pod: Pod, nodes: Sequence[NodeInfo]) -> list[tuple[str, int]] | None:
        # kube-scheduler asks each extender from a goroutine of its own, counted while it runs
        running = metrics.GOROUTINES.labels(metrics.PRIORITIZING_EXTENDER)
        running.inc()
        try:
            return extender.prioritize(pod, nodes)
        except ExtenderError as err:
            logs.info(
                "Failed to run extender's priority function. No score given by this extender.",
                5,
                error=str(err),
                pod=pod.key,
                extender=extender.name,
            )
            return None
        finally:
            running.dec()

    def select_host(self, scores: Sequence[NodeScore]) -> str:
        """A node with the highest total, chosen uniformly at random among ties."""
        if isinstance(scores, NodeScores):  # the plain lists: no NodeScore object is made
            totals = scores.totals
            best = max(totals)
            if totals.count(best) == 1:  # the usual case, found in C without a loop over the nodes
                return scores.names[totals.index(best)]
            top = [name for name, total in zip(scores.names, totals, strict=True) if total == best]
        else:
            best = max(s.total for s in scores)
            top = [s.name for s in scores if s.total == best]
        return top[0] if len(top) == 1 else self.rng.choice(top)


def _filters_that_can_reject(filters: Sequence[FilterPlugin], pod: Pod) -> Sequence[FilterPlugin]:
    """``filters`` without those that pass every node for ``pod``
    (:meth:`FilterPlugin.passes_every_node`), in order; ``filters`` itself when none can be left out."""
    passing = [pl for pl in filters if pl.passes_every_node(pod)]
    if not passing:
        return filters
    return [pl for pl in filters if pl not in passing]


def _reject(
    status: Status, node_name: str, diagnosis: Diagnosis, failed_by: dict[tuple[str, str], int]
) -> None:
    """A node's non-success Filter status: counted for the metrics, an Error fails the attempt,
    a rejection goes into the diagnosis."""
    key = (status.plugin or "", status.code.label)
    failed_by[key] = failed_by.get(key, 0) + 1
    if status.code is Code.ERROR:
        raise SchedulingError(status)
    diagnosis.node_to_status.statuses[node_name] = status
    diagnosis.add_plugin_status(status)


def _record_filter_metrics(
    fwk: Framework,
    filters: Sequence[FilterPlugin],
    passed: int,
    failed_by: dict[tuple[str, str], int],
    seconds: float,
) -> None:
    """kube times the Filter extension point per node checked and counts every Filter call
    (``plugin_evaluation_total``); berth's loop is inlined for speed, so both are derived once per
    cycle: a node that passed ran every plugin, one rejected by plugin *k* ran plugins 1..k."""
    failed = sum(failed_by.values())
    checked = passed + failed
    if not checked:
        return
    per_node = seconds / checked
    if passed:
        fwk.observe_point("Filter", "Success", per_node, passed)
    by_plugin: dict[str, int] = {}
    by_code: dict[str, int] = {}
    for (plugin, code), n in failed_by.items():
        by_plugin[plugin] = by_plugin.get(plugin, 0) + n
        by_code[code] = by_code.get(code, 0) + n
    for code, n in by_code.items():
        fwk.observe_point("Filter", code, per_node, n)
    table = fwk.evaluations["Filter"]
    remaining = checked  # nodes that reached the current plugin
    for pl in filters:
        if remaining <= 0:
            break
        table[pl.name] = table.get(pl.name, 0.0) + remaining
        remaining -= by_plugin.get(pl.name, 0)
