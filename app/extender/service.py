"""The extender verbs over an :class:`~app.scheduler.scheduler.Engine`: what /filter and /prioritize answer.

Which nodes are evaluated:

- ``NodeNames`` (``nodeCacheCapable: true``): the NodeInfos of berth's own snapshot. A name berth
  does not know fails /filter with :data:`UNKNOWN_NODE_REASON` (an ``Unschedulable`` failure, so
  kube-scheduler's preemption may still consider it once berth has caught up) and is left out of
  /prioritize.
- ``Nodes`` (``nodeCacheCapable: false``): exactly the node objects sent (labels, taints,
  allocatable... as sent), each with the pods berth's cache holds on a node of that name, so a
  busy node is never taken for an idle one. Passing nodes are echoed as the objects sent.

Which profile: the one named at construction, else the engine's first profile. The pod's
``spec.schedulerName`` is not consulted, because kube-scheduler calls an extender for pods of
every profile that lists it.

Engine failures (a plugin Error, no such profile) are not HTTP errors: kube-scheduler reads only
HTTP 200 bodies. /filter answers them in ``Error``; /prioritize, whose answer is a bare list and
whose errors kube-scheduler ignores anyway, answers ``[]`` and logs.

One scheduling cycle, one snapshot. kube-scheduler calls /prioritize right after /filter, for the
same pod, with the nodes /filter passed, and scores them against the cluster as it saw it at the
start of its cycle. So does berth: a /prioritize for the pod (equal JSON) and profile of the /filter
just before it scores on the snapshot that /filter used, with that filter's PreFilter state; the
cache changes that arrived in between (other pods' binds) are taken in by the next call of any
other kind. Any other /prioritize updates the snapshot first.

kube-scheduler waits for the /prioritize answer before it can schedule the next pod, so
:meth:`ExtenderService.speculate` (run by the server once the /filter answer is sent, while
kube-scheduler scores on its side) computes it ahead; /prioritize returns it when it asks for
exactly the nodes /filter passed, in the same order, and scores afresh otherwise. It only
speculates for ``NodeNames`` calls (``nodeCacheCapable: true``), and only while the client has been
following each /filter with a /prioritize, so a client without ``prioritizeVerb`` costs nothing
extra.

The service is not thread-safe: it reuses the engine's snapshot, so run one verb at a time (the
server runs them inline on its event loop, which serialises them).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client import Counter

from app.api.objects import Pod
from app.extender.decisions import ExtenderDecisions, unknown_node
from app.extender.wire import MAX_EXTENDER_PRIORITY, ExtenderArgs, FilterResult, HostPriority, encode_scores
from app.framework.cycle_state import CycleState
from app.framework.runtime import Framework, NodeScore, NodeScores
from app.framework.status import Code
from app.framework.types import NodeInfo, PodInfo
from app.scheduler.algorithm import SchedulingError
from app.scheduler.scheduler import Engine

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "SPECULATIONS",
    "UNKNOWN_NODE_REASON",
    "ExtenderService",
    "NoProfileError",
    "extender_scores",
]

log = logging.getLogger(__name__)

SPECULATIONS = Counter(
    "berth_extender_prioritize_speculations",
    "/prioritize answers computed ahead, once /filter had answered: 'used' (the /prioritize that "
    "followed asked exactly that), 'discarded' (it asked for other nodes, another pod came first, "
    "or the cluster changed in between).",
    ["result"],
)

UNKNOWN_NODE_REASON = 'node "{name}" not found in berth\'s cache'
"""The /filter failure reason for a ``NodeNames`` entry berth has no node for."""

Scored = tuple[Sequence[str], Sequence[int]]
"""Node names and their extender scores, in the same order."""


class NoProfileError(LookupError):
    """The engine has no profile to run the verbs with."""


def extender_scores(totals: Sequence[int]) -> list[int]:
    """Map the candidate nodes' framework totals onto the extender range 0..10.

    kube-scheduler's ``DefaultNormalizeScore`` over the nodes of this call: the highest total
    becomes 10 and every other ``total * 10 // highest`` (Go's integer division), so the node berth
    prefers always gets the top score and the order of the totals is kept (ties can appear only
    between totals less than a tenth of the highest apart). When no node scores above 0 (no Score
    plugins, or all of them skip), every node gets 0. kube-scheduler then multiplies each score by
    the extender's ``weight`` and by ``MaxNodeScore / MaxExtenderPriority`` (10).
    """
    highest = max(totals, default=0)
    if highest <= 0:
        return [0] * len(totals)
    top = MAX_EXTENDER_PRIORITY
    return [max(0, total * top // highest) for total in totals]


class ExtenderService:
    """Filter and prioritize for one profile of ``engine``; what they decide is recorded in
    ``decisions`` (for the web UI; :mod:`app.extender.decisions`)."""

    def __init__(
        self, engine: Engine, profile: str | None = None, decisions: ExtenderDecisions | None = None
    ) -> None:
        self.engine = engine
        self.profile = profile
        self.decisions = ExtenderDecisions() if decisions is None else decisions
        self._last_filter: _LastFilter | None = None
        self._prioritize_follows = False
        """Whether the last /filter that passed several nodes was followed by its /prioritize."""

    def _same_cycle(self, fwk: Framework, args: ExtenderArgs) -> _LastFilter | None:
        """The last /filter if it was for this pod and profile and the snapshot is still the one it
        used (taken: a filter's state serves one /prioritize)."""
        last, self._last_filter = self._last_filter, None
        if last is None:
            return None
        pod = args.pod
        if (
            (pod is not last.pod and pod.raw != last.pod.raw)
            or last.fwk is not fwk
            or last.generation != self.engine.algorithm.snapshot.generation
        ):
            _discard(last)
            return None
        return last

    def received(self, pod: Pod) -> None:
        """Called with the pod of every /filter and /prioritize before it runs (nothing here; a
        subclass may keep it)."""

    def framework(self) -> Framework:
        """The profile the verbs run; raise :class:`NoProfileError` if there is none."""
        profiles = self.engine.profiles
        if self.profile is not None:
            fwk = profiles.get(self.profile)
            if fwk is None:
                raise NoProfileError(f'no profile named "{self.profile}"')
            return fwk
        for fwk in profiles.values():
            return fwk
        raise NoProfileError("the scheduler has no profiles")

    # --- verbs ---------------------------------------------------------------------------

    def filter(self, args: ExtenderArgs) -> FilterResult:
        """PreFilter + Filter on the given nodes; failures by code, errors in ``Error``."""
        self.received(args.pod)
        fwk: Framework | None = None
        try:
            fwk = self.framework()
            infos, unknown = self._node_infos(args)
            outcome, state = self.engine.filter_nodes(fwk, args.pod, infos)
            previous = self._last_filter
            if previous is not None and previous.expects_prioritize:
                self._prioritize_follows = False  # its /prioritize never came
                _discard(previous)
            # kube-scheduler calls /prioritize right after /filter for the same pod in the same
            # cycle: keep the PreFilter state so that call need not recompute it.
            names = [info.name for info in outcome.feasible] if args.node_names is not None else []
            self._last_filter = _LastFilter(
                args.pod,
                fwk,
                self.engine.algorithm.snapshot.generation,
                state,
                outcome.feasible if args.node_names is not None else None,
                names,
            )
        except (NoProfileError, SchedulingError) as err:
            self.decisions.failed(fwk, args.pod, _error_text(err))
            return FilterResult(error=_error_text(err))
        statuses = outcome.failed
        if unknown:
            statuses = {**statuses, **{n: unknown_node(UNKNOWN_NODE_REASON.format(name=n)) for n in unknown}}
        passed = names if args.node_names is not None else [info.name for info in outcome.feasible]
        self.decisions.filtered(fwk, args.pod, passed, statuses)
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        for name, status in outcome.failed.items():
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                unresolvable[name] = status.message()
            else:
                failed[name] = status.message()
        for name in unknown:
            failed[name] = UNKNOWN_NODE_REASON.format(name=name)
        if args.nodes is not None:
            passing = [info.node for info in outcome.feasible if info.node is not None]
            return FilterResult(nodes=passing, failed=failed, unresolvable=unresolvable)
        return FilterResult(node_names=list(names), failed=failed, unresolvable=unresolvable)

    def prioritize(self, args: ExtenderArgs) -> tuple[list[HostPriority], str]:
        """PreScore + Score on the given nodes, mapped by :func:`extender_scores`.

        Returns the priorities and an error message ("" on success). On error the list is empty.
        """
        (names, scores), error, _ = self._prioritize(args)
        return [HostPriority(name, score) for name, score in zip(names, scores, strict=True)], error

    def prioritize_encoded(self, args: ExtenderArgs) -> tuple[bytes, str]:
        """:meth:`prioritize` as the ``HostPriorityList`` body (an answer computed ahead was encoded
        then too) and the error message."""
        scored, error, body = self._prioritize(args)
        return (encode_scores(*scored) if body is None else body), error

    def _prioritize(self, args: ExtenderArgs) -> tuple[Scored, str, bytes | None]:
        """The names and extender scores, the error and, for an answer computed ahead, its encoding."""
        self.received(args.pod)
        fwk: Framework | None = None
        try:
            fwk = self.framework()
            last = self._same_cycle(fwk, args)
            if last is not None and last.expects_prioritize:
                self._prioritize_follows = True
                if last.answer is not None and last.names == args.node_names:
                    SPECULATIONS.labels("used").inc()
                    scored, body, scores = last.answer
                    self.decisions.scored(fwk, args.pod, scores)
                    return scored, "", body
                _discard(last)
            infos, _unknown = self._node_infos(args, update=last is None)
            scores = (
                self.engine.score_nodes(fwk, args.pod, infos, None if last is None else last.state)
                if infos
                else []
            )
        except (NoProfileError, SchedulingError) as err:
            self.decisions.failed(fwk, args.pod, _error_text(err))
            return ([], []), _error_text(err), None
        self.decisions.scored(fwk, args.pod, scores)
        return self._extender_scores(fwk, scores), "", None

    def speculate(self) -> None:
        """Compute the /prioritize answer for the last /filter ahead of its call (module docstring),
        then settle the decisions the verbs recorded (:meth:`ExtenderDecisions.settle`): both run
        once the /filter answer is sent, while kube-scheduler works on its side."""
        self._speculate()
        self.decisions.settle()

    def _speculate(self) -> None:
        """Does nothing unless the last /filter was a ``NodeNames`` call passing several nodes, the
        client has been calling /prioritize after /filter, and the snapshot is unchanged since. An
        engine error is left for /prioritize to meet and answer.
        """
        last = self._last_filter
        if last is None or not last.expects_prioritize or not self._prioritize_follows or last.answer:
            return
        engine = self.engine
        if last.generation != engine.algorithm.snapshot.generation:
            return  # another call has updated the snapshot since: /prioritize will score afresh
        assert last.feasible is not None
        try:
            scores = engine.score_nodes(last.fwk, last.pod, last.feasible, last.state)
        except SchedulingError:
            return
        scored = self._extender_scores(last.fwk, scores)
        last.answer = (scored, encode_scores(*scored), scores)

    @staticmethod
    def _extender_scores(fwk: Framework, scores: Sequence[NodeScore]) -> Scored:
        """The nodes' names and framework totals mapped by :func:`extender_scores`; all 0 for a
        profile without Score plugins (whose every node totals 1: no preference to pass on)."""
        # Names and totals as the plain lists of a NodeScores: no NodeScore object per node.
        if isinstance(scores, NodeScores):
            names, totals = scores.names, scores.totals
        else:
            names, totals = [s.name for s in scores], [s.total for s in scores]
        if not fwk.has_score_plugins():
            return names, [0] * len(names)
        return names, extender_scores(totals)

    # --- nodes ---------------------------------------------------------------------------

    def _node_infos(self, args: ExtenderArgs, *, update: bool = True) -> tuple[list[NodeInfo], list[str]]:
        """The NodeInfos to evaluate, and the requested names berth does not know; with ``update``
        the snapshot first takes in the cache's changes."""
        engine = self.engine
        snapshot = engine.algorithm.snapshot
        if update:
            engine.cache.update_snapshot(snapshot)
        if args.nodes is None:
            return _lookup(snapshot.node_info_map, args.node_names or ())
        infos = []
        for node in args.nodes:
            cached = snapshot.node_info_map.get(node.name)
            if cached is not None:
                # berth's view of the node (its pods, their aggregated requests and ports, image
                # summaries) with the object sent swapped in: a clone, as the snapshot's entry must
                # not change, and far cheaper than re-adding every pod.
                info = cached.clone()
                if cached.node is not None and cached.node.allocatable == node.allocatable:
                    info.node = node  # same allocatable: keep the computed Resource
                else:
                    info.set_node(node)
            else:
                # Not in the snapshot: unknown to berth, or a node object deleted while its pods
                # remain (a ghost); the cache still knows those pods.
                info = NodeInfo(node, [PodInfo(p) for p in engine.cache.pods_on(node.name)])
            infos.append(info)
        return infos, []


def _lookup(by_name: dict[str, NodeInfo], names: Sequence[str]) -> tuple[list[NodeInfo], list[str]]:
    infos: list[NodeInfo] = []
    unknown: list[str] = []
    for name in names:
        info = by_name.get(name)
        if info is None:
            unknown.append(name)
        else:
            infos.append(info)
    return infos, unknown


def _error_text(err: Exception) -> str:
    if isinstance(err, SchedulingError) and err.status.plugin:
        return f'running plugin "{err.status.plugin}": {err}'
    return str(err)


def _discard(last: _LastFilter) -> None:
    """Count a speculated answer that no /prioritize took."""
    if last.answer is not None:
        SPECULATIONS.labels("discarded").inc()


@dataclass(slots=True, eq=False)
class _LastFilter:
    """What the last /filter computed, for the /prioritize of the same cycle."""

    pod: Pod
    fwk: Framework
    generation: int
    """The snapshot's generation the filter ran on."""
    state: CycleState
    feasible: list[NodeInfo] | None
    """The passing nodes of a ``NodeNames`` call (the snapshot's entries); None for ``Nodes``."""
    names: list[str]
    """The passing nodes' names of a ``NodeNames`` call, in the order /filter answered them."""
    answer: tuple[Scored, bytes, Sequence[NodeScore]] | None = None
    """The /prioritize answer for exactly ``feasible`` (names and scores, their encoding, and the
    framework's scores behind them), once :meth:`ExtenderService.speculate` ran."""

    @property
    def expects_prioritize(self) -> bool:
        """Whether kube-scheduler calls /prioritize next: it skips scoring a single feasible node."""
        return self.feasible is not None and len(self.feasible) > 1
