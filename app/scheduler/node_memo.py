"""Filter verdicts and raw scores remembered per node between the cycles of identical pods.

``berth capacity`` schedules thousands of copies of one pod, ``berth simulate`` the replicas of a
workload, and ``berth run`` the replicas of Deployments, Jobs and StatefulSets (scheduler_perf's
workloads are thousands of copies of one template): between two cycles of copies, only the nodes
the cache changed differ, usually the one that took the last copy. For the plugins whose Filter and
Score, for such a pod, read nothing but the pod and the node's NodeInfo (declared below, plugin by
plugin: never guessed), a node's verdict and raw score are the same as last cycle's as long as its
NodeInfo's generation is. So they are kept, keyed by that generation, and only changed nodes are
asked again.

What stays per cycle, exactly as without the memo: PreFilter and PreScore, the sampling from the
rotating start index until ``numFeasibleNodesToFind`` nodes fit, the normalization of scores over
the sampled nodes, the weights, and the selection (with the same random stream). The memo is not
used (the full path runs) whenever something in the cycle is not node-local: an active Filter or
Score plugin not declared node-local for the pod (inter-pod affinity, topology spread including
default constraints, volumes, DRA claims, out-of-tree plugins), extenders, a PreFilter result that
narrows the nodes, or nominated pods (their filters add other pods to the nodes).

Online (``berth run``) the snapshot changes between cycles through informer events and the binding
threads (assume, forget, FinishBinding, node and pod updates and deletes); all of them reach the
snapshot only in the scheduling thread's ``UpdateSnapshot``, which bumps the generation of each
NodeInfo it overwrites and logs it (or replaces the node list, which resets the memos). Preemption
neither reads nor writes the memo: its dry runs filter copies of NodeInfos through the framework,
never through the algorithm's memoized loop, and the async preemption's evictions come back as
informer events.

What it costs where it cannot help: a shape's first cycle is a lookup among the kept shapes (a tuple
comparison each, a few µs in all: ``bench/node_memo.py``) and nothing per node; a memo follows the
snapshot from its shape's second cycle, asking its window's nodes lazily (never more than the full
path would) until every node has a verdict. Memory: one index of the node list shared by the memos,
and per memo a verdict, two generations, a total and a 64-bit raw score per scorer and node: at
5000 nodes 0.38 MiB shared and 0.36 MiB per shape followed, at most 8 shapes.

Metrics, as kube-scheduler's: plugin evaluations count remembered verdicts and scores as if the
plugins ran; extension-point durations are observed in every cycle. In ``berth run``
(``Algorithm.time_sampled_cycles_in_full``) a cycle that samples plugin durations (one in ten,
``pluginMetricsSamplePercent``) runs the full path, every plugin called and timed, so
``scheduler_plugin_execution_duration_seconds`` means what kube's does. The offline faces export no
metrics and use the memo in those cycles too. ``berth serve`` leaves it off: the extender's
``/filter`` and ``/prioritize`` get their nodes in each request (or, nodeCacheCapable, names to look
up) and filter exactly those, all of them, without the algorithm's sampled loop the memo serves.
"""

from __future__ import annotations

import dataclasses
import operator
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.api.objects import Pod
from app.api.resources import pod_requests
from app.backend.cache.snapshot import Snapshot
from app.framework.aggregate import NodeAggregate
from app.framework.cycle_state import CycleState
from app.framework.interfaces import MAX_NODE_SCORE, FilterPlugin, Plugin, PluginError, ScorePlugin
from app.framework.runtime import Framework, NodeScores
from app.framework.status import Code, Status
from app.framework.types import NodeInfo
from app.metrics import count_evaluations

#: How many (profile, pod shape) memos an algorithm keeps, least recently used out first.
MAX_MEMOS = 8

#: Resources that are a node's own (no device driver, no DRA object decides them).
_NATIVE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})

#: Pod fields that do not change what a node-local plugin decides: the identity of a copy.
_IDENTITY_FIELDS = frozenset({"uid", "name", "creation_timestamp", "raw"})
_IDENTITY_METADATA = ("name", "uid", "creationTimestamp", "resourceVersion", "generateName")

Locality = Callable[[Plugin, Pod], bool]
"""Whether a plugin's Filter (or Score) of ``pod`` on a node reads only the pod and that NodeInfo."""


def _always(plugin: Plugin, pod: Pod) -> bool:
    return True


def _native(name: str) -> bool:
    return name in _NATIVE_RESOURCES or name.startswith("hugepages-")


def _native_requests(plugin: Plugin, pod: Pod) -> bool:
    """Requests (and the plugin's scoring resources) only of the node's own resources: an extended
    resource may be backed by DRA devices, whose allocations are cluster objects, not NodeInfo."""
    scorer = getattr(plugin, "scorer", None)
    if scorer is not None and not all(_native(n) for n in scorer.names):
        return False
    return all(_native(n) for n in pod_requests(pod))


def _no_claims(plugin: Plugin, pod: Pod) -> bool:
    """DynamicResources scores 0 everywhere for a pod without claims (its own or for extended
    resources); with claims, allocation reads ResourceSlices and claims of other pods."""
    return not pod.resource_claims.claims and all(_native(n) for n in pod_requests(pod))


#: Filter plugins whose verdict reads only (pod, NodeInfo), and for which pods.
NODE_LOCAL_FILTERS: Mapping[str, Locality] = {
    "NodeUnschedulable": _always,  # node.spec.unschedulable and the pod's tolerations
    "NodeName": _always,  # spec.nodeName against the node's name
    "TaintToleration": _always,  # the node's taints, the pod's tolerations
    "NodeAffinity": _always,  # node labels/fields; a PreFilter result narrowing nodes is excluded apart
    "NodePorts": _always,  # the host ports used on the node
    "NodeResourcesFit": _native_requests,  # requested against allocatable on the node
    "NodeDeclaredFeatures": _always,  # the node's declared features, the pod's requirements
}

#: Score plugins whose raw score (before normalization) reads only (pod, NodeInfo), and for which pods.
#: ImageLocality also reads the snapshot's node count; the memo is dropped whenever the node list changes.
NODE_LOCAL_SCORES: Mapping[str, Locality] = {
    "TaintToleration": _always,
    "NodeAffinity": _always,
    "NodeResourcesFit": _native_requests,
    "NodeResourcesBalancedAllocation": _native_requests,
    "ImageLocality": _always,
    "DynamicResources": _no_claims,
}


def _node_local(plugins: Sequence[Plugin], declared: Mapping[str, Locality], pod: Pod) -> bool:
    for pl in plugins:
        locality = declared.get(pl.name)
        if locality is None or not locality(pl, pod):
            return False
    return True


def filters_are_node_local(filters: Sequence[FilterPlugin], pod: Pod) -> bool:
    """Every active Filter plugin is declared node-local for ``pod``."""
    return _node_local(filters, NODE_LOCAL_FILTERS, pod)


def scorers_are_node_local(scorers: Sequence[ScorePlugin], pod: Pod) -> bool:
    """Every active Score plugin is declared node-local for ``pod``."""
    return _node_local(scorers, NODE_LOCAL_SCORES, pod)


def _same_document(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two pod documents are equal but for their identity metadata (compared in place:
    this runs on every cycle's lookup)."""
    if a is b:
        return True
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        other = b[key]
        if value is other:
            continue
        if key == "metadata" and isinstance(value, Mapping) and isinstance(other, Mapping):
            if {k for k in value if k not in _IDENTITY_METADATA} != {
                k for k in other if k not in _IDENTITY_METADATA
            }:
                return False
            if any(v != other[k] for k, v in value.items() if k not in _IDENTITY_METADATA):
                return False
        elif value != other:
            return False
    return True


_shape_fields = operator.attrgetter(
    *(f.name for f in dataclasses.fields(Pod) if f.name not in _IDENTITY_FIELDS)
)


def same_shape(a: Pod, b: Pod) -> bool:
    """Whether ``a`` and ``b`` differ at most in identity (name, uid, creation time): copies of one pod."""
    return a is b or _same_fields(_shape_fields(a), a, _shape_fields(b), b)


def _same_fields(a_fields: tuple[Any, ...], a: Pod, b_fields: tuple[Any, ...], b: Pod) -> bool:
    # Tuple equality compares element by element, identical objects first: copies share theirs.
    return a_fields == b_fields and _same_document(a.raw, b.raw)


#: Normalizing node-local Score plugins whose NormalizeScore is ``DefaultNormalizeScore``: a
#: function of each score and the sampled nodes' maximum, so a column of equal raw scores
#: normalizes as that one value does.
NORMALIZES_BY_MAX = frozenset({"TaintToleration", "NodeAffinity", "DynamicResources"})


class _Changes(NodeAggregate[NodeInfo]):
    """A subscription to the snapshot's change log: the NodeInfos changed since last drained.

    Built on the aggregates the snapshot keeps (app/framework/aggregate.py): the "sum" is the list
    of nodes contributed, and there is nothing to subtract. A fresh subscription (the first, or
    after the log was reset or the aggregate evicted) lists every node, so nothing is missed.
    Only the memos' registry (:class:`NodeMemos`), under a key of its own, reads it.
    """

    __slots__ = ("nodes",)

    def __init__(self) -> None:
        self.nodes: list[NodeInfo] = []

    def contribution(self, node_info: NodeInfo) -> NodeInfo:
        """The node itself."""
        return node_info

    def add(self, contribution: NodeInfo) -> None:
        """Note a changed node."""
        self.nodes.append(contribution)

    def subtract(self, contribution: NodeInfo) -> None:
        """Nothing: the node's new contribution is noted by :meth:`add`."""

    def drain(self) -> list[NodeInfo]:
        """The nodes noted since the last drain."""
        out, self.nodes = self.nodes, []
        return out


class _NodeIndex:
    """The snapshot's node list as the memos read it, built once per list and shared by them."""

    __slots__ = ("_index_of", "names", "nodes", "ring")

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes
        self.names = [n.name for n in nodes]
        positions = list(range(len(nodes)))
        self.ring = positions + positions  # a rotated window is one slice; one int object per position
        self._index_of: dict[int, int] | None = None

    def positions(self, changed: Sequence[NodeInfo]) -> Sequence[int] | None:
        """The positions of ``changed`` in the list, or None if one is not of this list."""
        index_of = self._index_of
        if index_of is None:
            index_of = self._index_of = dict(zip(map(id, self.nodes), self.ring, strict=False))
        out = [index_of.get(id(n), -1) for n in changed]
        return None if -1 in out else out


_NO_NODES = _NodeIndex([])


class NodeMemo:
    """What one profile's node-local plugins said about each node of the snapshot for one pod shape.

    Lists aligned with the snapshot's node list; an entry is valid while its generation equals the
    NodeInfo's (-1: never asked, or the answer was an Error). Reset when the node list is replaced
    (nodes added or removed), or when the active plugins differ from those the entries were
    computed with.

    Filter verdicts are asked for lazily: while some node has none (``known`` < the node count),
    only the nodes of the window a cycle reads are checked, by generation, so the first cycles of a
    shape cost what the full path costs. Once every node has one, a cycle re-asks only about the
    nodes the snapshot's change log names (``_changed``; None when more changed than there are
    nodes: then every generation is compared once).
    """

    __slots__ = (
        "_changed",
        "_feasible",
        "_locality",
        "_scorer_names",
        "_statics",
        "cycles",
        "errors",
        "filter_generations",
        "filter_names",
        "fwk",
        "index",
        "known",
        "pod",
        "score_columns",
        "score_generations",
        "shape",
        "verdicts",
    )

    def __init__(self, fwk: Framework, pod: Pod) -> None:
        self.fwk = fwk
        self.pod = pod
        self.shape = _shape_fields(pod)  # the fields compared to find copies
        self.index = _NO_NODES
        self.filter_names: tuple[str, ...] = ()
        self.filter_generations: list[int] = []
        self.verdicts: list[Status | None] = []
        self.known = 0  # nodes whose verdict was asked for (generation not -1)
        self.errors = False  # an Error verdict was asked for this cycle
        self._scorer_names: tuple[str, ...] = ()
        self.score_generations: list[int] = []
        self.score_columns: list[array[int]] = []  # per active scorer, a raw score per node
        self._statics: array[int] = array("q")
        self._feasible: tuple[list[NodeInfo], list[int]] | None = None
        self._locality: dict[tuple[int | str, ...], bool] = {}
        self._changed: list[NodeInfo] | None = []  # nodes changed since the verdicts were caught up
        self.cycles = 0  # cycles of this shape: the memo is used from the second

    @property
    def nodes(self) -> list[NodeInfo]:
        """The snapshot's node list the entries are aligned with."""
        return self.index.nodes

    def filters_local(self, filters: Sequence[FilterPlugin]) -> bool:
        """:func:`filters_are_node_local` for this memo's pod shape, worked out once per filter set."""
        return self._local(filters, NODE_LOCAL_FILTERS)

    def scorers_local(self, scorers: Sequence[ScorePlugin]) -> bool:
        """:func:`scorers_are_node_local` for this memo's pod shape, worked out once per scorer set."""
        return self._local(scorers, NODE_LOCAL_SCORES)

    def _local(self, plugins: Sequence[Plugin], declared: Mapping[str, Locality]) -> bool:
        key: tuple[int | str, ...] = (id(declared), *(pl.name for pl in plugins))
        local = self._locality.get(key)
        if local is None:
            local = self._locality[key] = _node_local(plugins, declared, self.pod)
        return local

    def follow(self, index: _NodeIndex) -> None:
        """Align with the snapshot's node list (everything is forgotten when it was replaced)."""
        self._feasible = None
        self.errors = False
        if index is not self.index:
            self.index = index
            self.filter_names = ()
            self._scorer_names = ()
            self._changed = []

    def note_changes(self, changes: Sequence[NodeInfo]) -> None:
        """Nodes the snapshot changed in place since the last cycle."""
        changed = self._changed
        if changed is not None:
            if len(changed) + len(changes) > len(self.index.nodes):
                self._changed = None  # compare every generation once instead
            else:
                changed.extend(changes)

    def use_filters(self, filters: Sequence[FilterPlugin]) -> None:
        """Verdicts are those of ``filters``: forget them when the active filters differ."""
        names = tuple(pl.name for pl in filters)
        if names != self.filter_names:
            n = len(self.index.nodes)
            self.filter_names = names
            self.filter_generations = [-1] * n
            self.verdicts = [None] * n
            self.known = 0
            self._changed = []

    def catch_up(self, verdict: Callable[[NodeInfo], Status | None]) -> bool:
        """When every node has a verdict, re-ask about the nodes changed since the last cycle and
        return False; else return True: the caller checks the nodes of its window (:meth:`check`)."""
        nodes = self.index.nodes
        if self.known < len(nodes):
            return True
        positions: Sequence[int] | None = None
        if self._changed is not None:
            positions = self.index.positions(self._changed)
        if positions is None:  # too many changes, or a node not of this list: compare them all
            positions = range(len(nodes))
        self._changed = []
        generations = self.filter_generations
        self._ask([i for i in positions if generations[i] != nodes[i].generation], verdict)
        return False

    def check(self, window: Sequence[int], verdict: Callable[[NodeInfo], Status | None]) -> None:
        """Ask about the nodes of ``window`` whose verdict is missing or older than the node."""
        nodes, generations = self.index.nodes, self.filter_generations
        stale = [i for i in window if generations[i] != nodes[i].generation]
        if stale:
            self._ask(stale, verdict)

    def _ask(self, positions: Sequence[int], verdict: Callable[[NodeInfo], Status | None]) -> None:
        """New verdicts for ``positions``. An Error is not a verdict to keep: it is reported this
        cycle (:attr:`errors`) and its node asked again the next time it is read."""
        nodes, generations, verdicts = self.index.nodes, self.filter_generations, self.verdicts
        known = self.known
        for i in positions:
            info = nodes[i]
            status = verdicts[i] = verdict(info)
            if status is not None and status.code is Code.ERROR:
                if generations[i] != -1:
                    known -= 1
                generations[i] = -1
                self.errors = True
            else:
                if generations[i] == -1:
                    known += 1
                generations[i] = info.generation
        self.known = known

    def found(self, feasible: list[NodeInfo], positions: list[int]) -> None:
        """This cycle's feasible nodes and their positions in the node list (for scoring them)."""
        self._feasible = (feasible, positions)

    def score(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        scorers: Sequence[ScorePlugin],
    ) -> NodeScores | None:
        """:meth:`Framework.run_score_plugins` of ``nodes`` (this cycle's feasible nodes) with raw
        scores of unchanged nodes from the memo; None when this cycle cannot use it (the caller
        runs the full path, which also words any error: a plugin failing, a score out of range)."""
        feasible = self._feasible
        if feasible is None or feasible[0] is not nodes:
            return None
        positions = feasible[1]
        weights = fwk.score_weights
        names = tuple(pl.name for pl in scorers)
        if names != self._scorer_names:
            self._scorer_names = names
            n = len(self.index.nodes)
            self.score_generations = [-1] * n
            self.score_columns = [array("q", bytes(8 * n)) for _ in scorers]
            self._statics = array("q", bytes(8 * n))  # a machine integer per node, not an object
        all_nodes, generations = self.index.nodes, self.score_generations
        stale = [i for i in positions if generations[i] != all_nodes[i].generation]
        if stale and not self._rescore(state, pod, stale, scorers):
            return None
        started = time.perf_counter()
        # The memo's entries of this cycle's nodes, copied out in C (the memo changes next cycle).
        pick: Callable[[Sequence[int]], Sequence[int]] = (
            operator.itemgetter(*positions) if len(positions) > 1 else lambda kept: (kept[positions[0]],)
        )
        totals = list(pick(self._statics))
        columns: list[Sequence[int]] = []
        offset = 0  # the weighted scores of columns that normalized to one value, added once
        for j, pl in enumerate(scorers):
            if not pl.normalizes:
                columns.append(pick(self.score_columns[j]))
                continue
            raw = list(pick(self.score_columns[j]))
            lowest, highest = min(raw), max(raw)
            if lowest == highest and pl.name in NORMALIZES_BY_MAX:
                one = [lowest]
                if (
                    pl.normalize_score(state, pod, nodes[:1], one) is not None
                    or not 0 <= one[0] <= MAX_NODE_SCORE
                ):
                    return None
                column: Sequence[int] = [one[0]] * len(raw)
                offset += one[0] * weights[pl.name]
            else:
                if pl.normalize_score(state, pod, nodes, raw) is not None:
                    return None
                if raw and (min(raw) < 0 or max(raw) > MAX_NODE_SCORE):
                    return None
                column = raw
                weight = weights[pl.name]
                totals = [t + sc * weight for t, sc in zip(totals, raw, strict=True)]
            columns.append(column)
        if offset:
            totals = [t + offset for t in totals]
        count_evaluations(fwk.evaluations["Score"], names, len(nodes))
        fwk.observe_point("Score", "Success", time.perf_counter() - started)
        node_names = self.index.names
        return NodeScores([node_names[i] for i in positions], totals, (list(names), columns))

    def _rescore(self, state: CycleState, pod: Pod, stale: list[int], scorers: Sequence[ScorePlugin]) -> bool:
        """Ask the plugins about the ``stale`` nodes; False if one fails or a score that is not
        normalized is out of range (the full path reports it)."""
        all_nodes = self.index.nodes
        stale_nodes = [all_nodes[i] for i in stale]
        try:
            columns = [pl.score_nodes(state, pod, stale_nodes) for pl in scorers]
        except PluginError:
            return False
        weights = self.fwk.score_weights
        fixed = [(j, weights[pl.name]) for j, pl in enumerate(scorers) if not pl.normalizes]
        for j, _ in fixed:
            if columns[j] and (min(columns[j]) < 0 or max(columns[j]) > MAX_NODE_SCORE):
                return False
        statics, generations = self._statics, self.score_generations
        try:
            for kept, column in zip(self.score_columns, columns, strict=True):
                for i, score in zip(stale, column, strict=True):
                    kept[i] = score
            for i, node, row in zip(stale, stale_nodes, zip(*columns, strict=True), strict=True):
                statics[i] = sum(row[j] * w for j, w in fixed)
                generations[i] = node.generation
        except OverflowError:  # a raw score beyond 64 bits: the full path, its generation stays stale
            return False
        return True


class NodeMemos:
    """The memos of an algorithm: one per (profile, pod shape), the most recently used kept.

    A shape's first cycle costs a lookup only (no memo follows the snapshot for it), so a stream of
    pods that are all different pays next to nothing. The memos that follow the snapshot share one
    index of its node list and one subscription to its change log, read once per cycle.
    """

    __slots__ = ("_index", "_memos", "_subscription")

    def __init__(self) -> None:
        self._memos: list[NodeMemo] = []
        self._index: _NodeIndex | None = None  # set once a memo follows the snapshot
        self._subscription = ("node-memos", object())  # this registry's key in the snapshot's change log

    def for_pod(self, fwk: Framework, pod: Pod, snapshot: Snapshot) -> NodeMemo | None:
        """The memo of ``pod``'s shape on ``fwk``, aligned with ``snapshot`` for this cycle; None for a
        shape's first cycle (keeping every node's verdict for a pod seen once would not pay)."""
        memos = self._memos
        memo = None
        shape = _shape_fields(pod)
        for i, m in enumerate(memos):
            if m.fwk is fwk and _same_fields(m.shape, m.pod, shape, pod):
                memo = m
                if i:
                    memos.insert(0, memos.pop(i))
                break
        if memo is None:
            memo = NodeMemo(fwk, pod)
            memos.insert(0, memo)
            if len(memos) > MAX_MEMOS:
                # Out goes the least recently used shape seen once, else the least recently used:
                # a stream of distinct pods does not push out the memos that pay.
                once = [m for m in memos if m.cycles < 2 and m is not memo]
                memos.remove(once[-1] if once else memos[-1])
        memo.cycles += 1
        if memo.cycles < 2 and self._index is None:
            return None
        index = self._follow(snapshot)
        if memo.cycles < 2:
            return None
        memo.follow(index)
        return memo

    def _follow(self, snapshot: Snapshot) -> _NodeIndex:
        """Hand the nodes changed since the last cycle to the memos following the node list."""
        changes = snapshot.aggregate(self._subscription, _Changes).drain()
        nodes = snapshot.list()
        index = self._index
        if index is None or index.nodes is not nodes:
            # A new list: the memos of the old one are reset when next used.
            index = self._index = _NodeIndex(nodes)
        elif changes:
            for memo in self._memos:
                if memo.index is index:
                    memo.note_changes(changes)
        return index
