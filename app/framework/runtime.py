"""The framework runtime: a profile's plugins per extension point and how they run
(``framework/runtime/framework.go``)."""

from __future__ import annotations

import heapq
import threading
import time
from abc import abstractmethod
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import add, attrgetter, mul
from typing import Any, overload

from app import metrics
from app.api.objects import Pod, pod_priority
from app.framework.cycle_state import CycleState
from app.framework.events import (
    ClusterEventWithHint,
    QueueingHintMap,
    build_queueing_hint_map,
    unroll_wildcard_resource,
)
from app.framework.expansion import expand
from app.framework.interfaces import (
    EXTENDER_NAME,
    MAX_NODE_SCORE,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PluginError,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from app.framework.registry import Registry
from app.framework.status import Code, NodeToStatus, Status
from app.framework.types import NodeInfo, PodInfo

MAX_PERMIT_TIMEOUT = 15 * 60.0

# The extension points whose rejections the queue remembers (``shouldHaveEnqueueExtensions``).
_CAN_REJECT = (PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, ReservePlugin, PermitPlugin)


_NODE_OBJECT_NAME = attrgetter("node.name")


def _node_names(nodes: Sequence[NodeInfo]) -> list[str]:
    """The names of ``nodes``, in order: read in C through ``node.name`` (the ``NodeInfo.name``
    property is a Python call per node), or through the property when a NodeInfo has no node."""
    try:
        return list(map(_NODE_OBJECT_NAME, nodes))
    except AttributeError:  # a ghost (pods left on a deleted node): its name is ""
        return [n.name for n in nodes]


class FrameworkError(ValueError):
    """A profile that cannot be built (kube-scheduler's NewFramework errors)."""


@dataclass(slots=True)
class PluginRef:
    """A plugin enabled at an extension point, as the configuration gives it."""

    name: str
    weight: int = 0  # 0 = unset (a Score weight of 1)


@dataclass(slots=True)
class ProfileSpec:
    """What the runtime needs from a configured profile, independent of the config module."""

    scheduler_name: str
    plugins: Mapping[str, tuple[list[PluginRef], list[str]]]  # point → (enabled, disabled)
    plugin_args: Mapping[str, Any]  # plugin name → decoded args
    percentage_of_nodes_to_score: int | None = None


class NodeScore:
    """A node's weighted total and the per-plugin normalized scores (before weight).

    Only explanations (``berth simulate``, ``/debug/pods``) read ``plugin_scores``, so a scoring
    cycle hands each node a reference to the cycle's score columns and its index in them, and the
    dict is built on first access: building one per node per cycle was a fifth of ``berth run``'s CPU.
    """

    __slots__ = ("_columns", "_index", "_plugin_scores", "name", "total")

    def __init__(
        self,
        name: str,
        total: int = 0,
        plugin_scores: dict[str, int] | None = None,
        *,
        columns: tuple[Sequence[str], Sequence[Sequence[int]]] | None = None,
        index: int = 0,
    ) -> None:
        self.name = name
        self.total = total
        self._plugin_scores = plugin_scores
        self._columns = columns  # (plugin names, per-plugin score lists aligned with the nodes)
        self._index = index

    @property
    def plugin_scores(self) -> dict[str, int]:
        """Plugin name → normalized score (before weight), in the profile's Score order."""
        if self._plugin_scores is None:
            names, columns = self._columns if self._columns is not None else ((), ())
            i = self._index
            self._plugin_scores = {name: col[i] for name, col in zip(names, columns, strict=True)}
        return self._plugin_scores

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeScore):
            return NotImplemented
        return (self.name, self.total, self.plugin_scores) == (other.name, other.total, other.plugin_scores)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        return f"NodeScore(name={self.name!r}, total={self.total!r}, plugin_scores={self.plugin_scores!r})"


class _DerivedInts(Sequence[int]):
    """A read-only sequence of integers computed from its position: subclasses give ``__len__``
    and ``_at`` (a position in ``range(len(self))``); indexes and slices read as a list's."""

    __slots__ = ()

    @abstractmethod
    def _at(self, position: int) -> int:
        """The integer at ``position`` (``0 <= position < len(self)``)."""

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        positions = range(len(self))[index]  # a negative or out-of-range index as a list's
        if isinstance(positions, range):
            return [self._at(p) for p in positions]
        return self._at(positions)


class RepeatedScore(_DerivedInts):
    """A score column whose nodes all scored the same, as that score and the node count: most of a
    Score run's columns are (TaintToleration's 100 on untainted nodes, ImageLocality's 0 without the
    image, a plugin skipped for the pod), and a kept column of 500 bytes becomes one object."""

    __slots__ = ("_length", "value")

    def __init__(self, value: int, length: int) -> None:
        self.value = value
        self._length = length

    def __len__(self) -> int:
        return self._length

    def _at(self, position: int) -> int:
        return self.value

    def __iter__(self) -> Iterator[int]:
        return repeat(self.value, self._length)

    def __repr__(self) -> str:
        return f"RepeatedScore({self.value!r}, {self._length!r})"


def _as_bytes(column: Sequence[int]) -> Sequence[int]:
    """``column`` in a byte per node, one shared :class:`RepeatedScore` when every node has the
    same score, or as it is when a score does not fit a byte (bytearray checks every value itself,
    in the same pass that copies it)."""
    try:
        packed = bytearray(column)
    except ValueError:
        return column
    # bytearray.count of a one-byte pattern runs in C: a constant column costs one more pass.
    if packed and packed.count(packed[:1]) == len(packed):
        return _repeated_score(packed[0], len(packed))
    # bytes, one block, where a bytearray keeps its buffer apart (56 bytes more); copied from the
    # bytearray, which is built from a list in half the time bytes takes.
    return bytes(packed)


_repeated_scores: dict[tuple[int, int], RepeatedScore] = {}
_REPEATED_SCORES_KEPT = 4096
"""Distinct (score, node count) columns shared at most; past it the table starts again."""


def _repeated_score(value: int, length: int) -> RepeatedScore:
    """The shared :class:`RepeatedScore` for ``value`` on ``length`` nodes (they are never written)."""
    key = (value, length)
    column = _repeated_scores.get(key)
    if column is None:
        if len(_repeated_scores) >= _REPEATED_SCORES_KEPT:
            _repeated_scores.clear()
        column = _repeated_scores[key] = RepeatedScore(value, length)
    return column


_plugin_lists: dict[tuple[str, ...], tuple[str, ...]] = {}


def _shared_plugins(plugins: Sequence[str]) -> tuple[str, ...]:
    """``plugins`` (a Score run's plugin names) as a tuple shared by every kept score with the same
    plugins: one per profile and set of skipped plugins."""
    key = tuple(plugins)
    return _plugin_lists.setdefault(key, key)


def _compact_totals(totals: Sequence[int]) -> Sequence[int]:
    """``totals`` as 2-byte machine integers when every total fits (an in-tree profile's totals are
    at most 100 times the sum of its weights), else 4-byte ones (a list holds a pointer and, past
    256, a 28-byte int object per node); an extender's unchecked total that does not fit stays a
    list."""
    for typecode in "Hi":
        try:
            return array(typecode, totals)
        except OverflowError:
            continue
    return totals


class _NameTable:
    """Node names by a 2-byte index, for scores kept compact."""

    LIMIT = 65536
    """Names one table holds at most (what a 2-byte index can name); past it a new table starts,
    and the kept scores that name the old one keep it alive until they are dropped, so node churn
    never grows a table for ever."""

    __slots__ = ("index", "names")

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []


_name_table = _NameTable()
_name_table_lock = threading.Lock()


class InternedNames(Sequence[str]):
    """Node names as 2-byte indexes into a shared :class:`_NameTable` (a list of names holds an
    eight-byte pointer per node), or a ``range`` of them when they are consecutive."""

    __slots__ = ("_indexes", "_names")

    def __init__(self, names: list[str], indexes: Sequence[int]) -> None:
        self._names = names
        self._indexes = indexes

    def __len__(self) -> int:
        return len(self._indexes)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._names[i] for i in self._indexes[index]]
        return self._names[self._indexes[index]]

    def __iter__(self) -> Iterator[str]:
        return map(self._names.__getitem__, self._indexes)


def _intern(names: Sequence[str]) -> Sequence[str]:
    """``names`` as :class:`InternedNames`; more names than a table holds stay as they are."""
    global _name_table
    if len(names) > _NameTable.LIMIT:
        return names
    table = _name_table
    try:
        indexes = _run_of(table, names) or array("H", map(table.index.__getitem__, names))
        return InternedNames(table.names, indexes)
    except KeyError:  # a name not seen yet (new nodes, or a new table): add them under the lock
        pass
    with _name_table_lock:
        table = _name_table
        if len(table.names) + len(names) > _NameTable.LIMIT:
            table = _name_table = _NameTable()
        index, known = table.index, table.names
        for name in names:
            if name not in index:
                index[name] = len(known)
                known.append(name)
        return InternedNames(known, _run_of(table, names) or array("H", map(index.__getitem__, names)))


def _run_of(table: _NameTable, names: Sequence[str]) -> Sequence[int] | None:
    """The indexes of ``names`` in ``table`` as a ``range`` when the table holds them one after the
    other, or a :class:`_WrappedRun` when they run to the table's end and on from its start; None
    otherwise (or for no names). A Score run scores the nodes in the snapshot's order from where
    the last cycle stopped (percentageOfNodesToScore), and the table learnt them in that order: on a
    cluster whose nodes all pass the filters most runs are one stretch of the table, kept in 48
    bytes instead of two per node, and found by comparing two lists of the same string objects
    (faster than looking each name up)."""
    count = len(names)
    first = table.index.get(names[0]) if count else None
    if first is None:
        return None
    known = table.names
    size = len(known)  # the table only grows: what it holds now stays where it is
    if first + count <= size:
        return range(first, first + count) if known[first : first + count] == names else None
    to_end = size - first
    if known[first:] == names[:to_end] and known[: count - to_end] == names[to_end:]:
        return _WrappedRun(first, count, size)
    return None


class _WrappedRun(_DerivedInts):
    """``count`` consecutive indexes from ``first`` in a table of ``size`` names, going on from the
    table's start past its end."""

    __slots__ = ("_count", "_first", "_size")

    def __init__(self, first: int, count: int, size: int) -> None:
        self._first = first
        self._count = count
        self._size = size

    def __len__(self) -> int:
        return self._count

    def _at(self, position: int) -> int:
        return (self._first + position) % self._size

    def __iter__(self) -> Iterator[int]:
        size = self._size
        return (i % size for i in range(self._first, self._first + self._count))


class NodeScores(Sequence[NodeScore]):
    """The scores of one Score run: node names and weighted totals as plain lists, and the
    :class:`NodeScore` objects made only if someone indexes or iterates (explanations, the
    extender's /prioritize). Picking the host needs just the totals, so a scheduling cycle never
    builds an object per node."""

    __slots__ = ("_columns", "_items", "names", "totals")

    def __init__(
        self,
        names: Sequence[str],
        totals: Sequence[int],
        columns: tuple[Sequence[str], Sequence[Sequence[int]]],
    ) -> None:
        self.names = names
        self.totals = totals
        self._columns = columns  # (plugin names, per-plugin score lists aligned with the nodes)
        self._items: list[NodeScore] | None = None

    def compacted(self) -> NodeScores:
        """The same scores in less memory, for keeping (``berth run``'s decision traces): a
        normalized score (0 to 100, checked before a NodeScores is made) takes a byte instead of an
        eight-byte pointer (a column of one score for every node, one object), a total two or four
        bytes instead of a pointer to an int object, a node's name a two-byte index into a table of
        names instead of a pointer (consecutive indexes, one range). Already compact scores are
        returned as they are."""
        if isinstance(self.totals, array):
            return self
        plugins, columns = self._columns
        # An extender's column (its score * weight * 10, unchecked as in kube-scheduler) may not fit
        # a byte and stays a list.
        return NodeScores(
            _intern(self.names),
            _compact_totals(self.totals),
            (_shared_plugins(plugins), tuple(map(_as_bytes, columns))),
        )

    def best(self, count: int) -> list[NodeScore]:
        """The ``count`` highest totals, best first, each a NodeScore with its own plugin scores:
        for keeping a few (``berth serve``'s decisions for its UI) without this run's columns."""
        totals = self.totals
        plugins, columns = self._columns
        top = heapq.nlargest(count, range(len(totals)), key=totals.__getitem__)
        return [
            NodeScore(self.names[i], totals[i], {p: c[i] for p, c in zip(plugins, columns, strict=True)})
            for i in top
        ]

    def plus(self, names: Sequence[str], columns: Sequence[Sequence[int]]) -> NodeScores:
        """These scores with more (already weighted) columns, the extenders', added to the totals."""
        plugins, own = self._columns
        totals = list(self.totals)
        for column in columns:
            totals = [t + c for t, c in zip(totals, column, strict=True)]
        return NodeScores(self.names, totals, ([*plugins, *names], [*own, *columns]))

    def _materialize(self) -> list[NodeScore]:
        items = self._items
        if items is None:
            columns = self._columns
            items = self._items = [
                NodeScore(name, total, columns=columns, index=i)
                for i, (name, total) in enumerate(zip(self.names, self.totals, strict=True))
            ]
        return items

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> NodeScore: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeScore]: ...

    def __getitem__(self, index: int | slice) -> NodeScore | list[NodeScore]:
        return self._materialize()[index]

    def __iter__(self) -> Iterator[NodeScore]:
        return iter(self._materialize())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NodeScores({self._materialize()!r})"


class _TimedFilter(FilterPlugin):
    """A Filter plugin of a sampled cycle: every call is timed, the durations kept by status code."""

    def __init__(self, plugin: FilterPlugin) -> None:
        # Not Plugin.__init__: the wrapper has no args or handle. ``name`` is a ClassVar of plugins;
        # the wrapper's, in its instance dict, is its plugin's (what failure statuses are marked with).
        vars(self)["name"] = plugin.name
        self._filter = plugin.filter
        self.successes: list[float] = []  # calls that returned None
        self.others: list[tuple[str, float]] = []  # (status code, seconds) of the rest

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """The plugin's verdict, its duration noted under the status code it returned."""
        start = time.perf_counter()
        try:
            s = self._filter(state, pod, node_info)
        except PluginError:
            self.others.append(("Error", time.perf_counter() - start))
            raise
        seconds = time.perf_counter() - start
        if s is None:
            self.successes.append(seconds)
        else:
            self.others.append((s.code.label, seconds))
        return s


class TimedFilters:
    """The Filter plugins of a cycle that samples plugin metrics (one in ten, as kube-scheduler),
    each call timed as kube-scheduler times it, the durations recorded in one batch by :meth:`flush`.

    Recording each call as it happens (a histogram lookup and a lock per plugin per node) made a
    sampled cycle's filtering cost three times an unsampled one's.
    """

    def __init__(self, plugins: Sequence[FilterPlugin]) -> None:
        self._timed = [_TimedFilter(pl) for pl in plugins]
        self.plugins: list[FilterPlugin] = list(self._timed)

    def flush(self) -> None:
        """Record the noted durations in ``scheduler_plugin_execution_duration_seconds``."""
        for pl in self._timed:
            if pl.successes:
                metrics.observe_plugin_many(pl.name, "Filter", "Success", pl.successes)
                pl.successes.clear()
            for code, seconds in pl.others:
                metrics.observe_plugin(pl.name, "Filter", code, seconds)
            pl.others.clear()


class ProfileHandle:
    """The Handle a profile's plugins get: the engine's handle plus ``framework``, the profile itself.

    In kube-scheduler the Handle *is* the profile's framework, so a plugin (DefaultPreemption) can
    run the profile's filters and PreFilter extensions; berth's engine handle is shared by every
    profile, so each profile wraps it. Any other attribute of the engine's handle (the nominator,
    the cluster actions, the rng) is reached through it unchanged.
    """

    def __init__(self, base: Handle, framework: Framework) -> None:
        self._base = base
        self.framework = framework

    @property
    def snapshot(self) -> Any:
        """The snapshot of the current cycle."""
        return self._base.snapshot

    @property
    def objects(self) -> Any:
        """Other cluster objects."""
        return self._base.objects

    @property
    def binder(self) -> Any:
        """The binding backend."""
        return self._base.binder

    @property
    def parallelism(self) -> int:
        """Configured parallelism."""
        return self._base.parallelism

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


class Framework:
    """One profile's plugins, in order per extension point, and the Run* methods."""

    def __init__(self, spec: ProfileSpec, registry: Registry, handle: Handle) -> None:
        self.profile_name = spec.scheduler_name
        self.percentage_of_nodes_to_score = spec.percentage_of_nodes_to_score
        self.handle = handle
        # scheduler_plugin_evaluation_total's tables of this profile, incremented in place
        self.evaluations = {
            point: metrics.PLUGIN_EVALUATION_TOTAL.table(self.profile_name, point)
            for point in ("PreFilter", "Filter", "PreScore", "Score")
        }
        self._point_series: dict[tuple[str, str], tuple[list[int], list[float]]] = {}
        plugin_handle = ProfileHandle(handle, self)
        self.plugins: dict[str, Plugin] = {}
        needed = _needed_plugins(spec)
        for name in needed:
            if not registry.has(name):
                raise FrameworkError(f'plugin "{name}" does not exist')
            cls = registry.get(name)
            args = spec.plugin_args.get(name)
            if args is None and cls.args_type is not None:
                args = cls.args_type.decode(None, f"{name}.args")
            try:
                self.plugins[name] = cls(args, plugin_handle)
            except Exception as err:  # user plugins may fail in arbitrary ways
                raise FrameworkError(f'initializing plugin "{name}": {err}') from err
        expansion = expand(spec.plugins, lambda n: registry.extension_points(n) if registry.has(n) else None)
        if expansion.errors:
            raise FrameworkError(expansion.errors[0].message)
        lists = {point: [self.plugins[n] for n in names] for point, names in expansion.points.items()}
        self.pre_enqueue: list[PreEnqueuePlugin] = lists["preEnqueue"]  # type: ignore[assignment]
        self.queue_sort: list[QueueSortPlugin] = lists["queueSort"]  # type: ignore[assignment]
        self.pre_filter: list[PreFilterPlugin] = lists["preFilter"]  # type: ignore[assignment]
        self.filter: list[FilterPlugin] = lists["filter"]  # type: ignore[assignment]
        self.post_filter: list[PostFilterPlugin] = lists["postFilter"]  # type: ignore[assignment]
        self.pre_score: list[PreScorePlugin] = lists["preScore"]  # type: ignore[assignment]
        self.score: list[ScorePlugin] = lists["score"]  # type: ignore[assignment]
        self.reserve: list[ReservePlugin] = lists["reserve"]  # type: ignore[assignment]
        self.permit: list[PermitPlugin] = lists["permit"]  # type: ignore[assignment]
        self.pre_bind: list[PreBindPlugin] = lists["preBind"]  # type: ignore[assignment]
        self.bind: list[BindPlugin] = lists["bind"]  # type: ignore[assignment]
        self.post_bind: list[PostBindPlugin] = lists["postBind"]  # type: ignore[assignment]
        if len(self.queue_sort) != 1:
            raise FrameworkError(
                f'only one queue sort plugin required for profile with scheduler name "{self.profile_name}", '
                f"but got {len(self.queue_sort)}"
            )
        if not self.bind:
            raise FrameworkError(
                f'at least one bind plugin is needed for profile with scheduler name "{self.profile_name}"'
            )
        self.score_weights = expansion.weights
        # The last cycle state's PreFilter extensions, for the nominated pods added on every node a
        # Filter pass walks (the state keeps its skipped plugins for the whole cycle).
        self._extensions_memo: tuple[CycleState, list[tuple[str, PreFilterExtensions]]] | None = None

    # --- PreEnqueue / QueueSort ----------------------------------------------------------

    def run_pre_enqueue_plugins(self, pod: Pod) -> Status | None:
        """The first non-success PreEnqueue status (with its plugin), or None."""
        for pl in self.pre_enqueue:
            status = pl.pre_enqueue(pod)
            if status is not None and not status.is_success():
                status.plugin = pl.name
                return status
        return None

    def enqueue_extensions(self) -> list[tuple[str, list[ClusterEventWithHint]]]:
        """Each plugin's registered cluster events (``fillEnqueueExtensions``), in plugin order.

        Only PreEnqueue, PreFilter, Filter, Reserve and Permit plugins can reject a pod, so only
        they are asked; one of them without :class:`EnqueueExtensions` registers every resource
        with every action. Plugins registering nothing are left out.
        """
        out: list[tuple[str, list[ClusterEventWithHint]]] = []
        for name, pl in self.plugins.items():
            if not isinstance(pl, _CAN_REJECT):
                continue
            events = (
                pl.events_to_register() if isinstance(pl, EnqueueExtensions) else unroll_wildcard_resource()
            )
            if events:
                out.append((name, events))
        if getattr(self.handle, "extenders", ()):
            # defaultEnqueueExtension: extenders have no hints, so a pod they rejected (its
            # unschedulable plugins name "Extender") is moved by any cluster event.
            out.append((EXTENDER_NAME, unroll_wildcard_resource()))
        return out

    def queueing_hint_map(self) -> QueueingHintMap:
        """The profile's registered events and hint functions, for the scheduling queue."""
        return build_queueing_hint_map(self.enqueue_extensions())

    # --- PreFilter -------------------------------------------------------------------------

    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Run PreFilter plugins; returns (merged result, status, plugins that narrowed nodes)."""
        start = time.perf_counter()
        skip = state.skip_filter_plugins
        skip.clear()
        self._extensions_memo = None  # a state's extensions change with its skipped plugins
        result: PreFilterResult | None = None
        with_nodes: set[str] = set()
        return_status: Status | None = None
        ran: list[str] = []
        try:
            for pl in self.pre_filter:
                ran.append(pl.name)
                r, s = self._call(state, "PreFilter", pl.name, pl.pre_filter, state, pod, nodes)
                if s is not None and s.code is Code.SKIP:
                    skip.add(pl.name)
                    continue
                if s is not None and s.code is not Code.SUCCESS:
                    s.plugin = pl.name
                    if s.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return None, s, set()
                    if s.code is Code.UNSCHEDULABLE:
                        return_status = s
                        continue
                    return (
                        None,
                        Status(
                            Code.ERROR, f'running PreFilter plugin "{pl.name}": {s.message()}', plugin=pl.name
                        ),
                        set(),
                    )
                if r is not None and not r.all_nodes():
                    with_nodes.add(pl.name)
                    result = r if result is None else result.merge(r)
                    if result.node_names is not None and not result.node_names:
                        names = sorted(with_nodes)
                        msg = (
                            f"node(s) didn't satisfy plugin {names[0]}"
                            if len(names) == 1
                            else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                        )
                        return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg), with_nodes
            return result, return_status, with_nodes
        finally:
            metrics.count_evaluations(self.evaluations["PreFilter"], ran, 1)
            self._observe_point("PreFilter", return_status, start)

    def pre_filter_extensions_for(self, state: CycleState) -> list[tuple[str, PreFilterExtensions]]:
        """(plugin name, extensions) of the PreFilter plugins whose AddPod/RemovePod run in this
        cycle: those with extensions, not skipped by their PreFilter, in order. A dry run that adds
        and removes many pods on the cycle's state (or its copies) looks them up once."""
        skip = state.skip_filter_plugins
        return [
            (pl.name, ext)
            for pl in self.pre_filter
            if (ext := pl.pre_filter_extensions()) is not None and pl.name not in skip
        ]

    def run_pre_filter_extension_add_pod(
        self,
        state: CycleState,
        pod: Pod,
        pod_to_add: PodInfo,
        node_info: NodeInfo,
        extensions: Sequence[tuple[str, PreFilterExtensions]] | None = None,
    ) -> Status | None:
        """AddPod on every PreFilter plugin with extensions (not skipped; ``extensions``: the
        :meth:`pre_filter_extensions_for` of this state, when the caller has them)."""
        return self._run_extension(state, pod, pod_to_add, node_info, True, extensions)

    def run_pre_filter_extension_remove_pod(
        self,
        state: CycleState,
        pod: Pod,
        pod_to_remove: PodInfo,
        node_info: NodeInfo,
        extensions: Sequence[tuple[str, PreFilterExtensions]] | None = None,
    ) -> Status | None:
        """RemovePod on every PreFilter plugin with extensions (not skipped; ``extensions`` as
        for :meth:`run_pre_filter_extension_add_pod`)."""
        return self._run_extension(state, pod, pod_to_remove, node_info, False, extensions)

    def _run_extension(
        self,
        state: CycleState,
        pod: Pod,
        other: PodInfo,
        node_info: NodeInfo,
        add: bool,
        extensions: Sequence[tuple[str, PreFilterExtensions]] | None,
    ) -> Status | None:
        if extensions is None:
            extensions = self.pre_filter_extensions_for(state)
        for name, ext in extensions:
            s = (
                ext.add_pod(state, pod, other, node_info)
                if add
                else ext.remove_pod(state, pod, other, node_info)
            )
            if s is not None and not s.is_success():
                verb = "AddPod" if add else "RemovePod"
                return Status(
                    Code.ERROR,
                    f'running {verb} on PreFilter plugin "{name}": {s.message()}',
                    plugin=name,
                )
        return None

    # --- Filter --------------------------------------------------------------------------

    def active_filters(self, state: CycleState) -> list[FilterPlugin]:
        """Filter plugins not skipped by their PreFilter, in order."""
        skip = state.skip_filter_plugins
        return [pl for pl in self.filter if pl.name not in skip] if skip else self.filter

    def run_filter_plugins(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, plugins: Sequence[FilterPlugin] | None = None
    ) -> Status | None:
        """The first non-success Filter status (plugin set), or None when the node fits.

        ``plugins`` are run as given: a caller filtering many nodes passes :meth:`active_filters`,
        wrapped in :class:`TimedFilters` in a cycle that samples plugin metrics. Without them, the
        active filters are used, and timed here in such a cycle.
        """
        if plugins is None:
            plugins = self.active_filters(state)
            if state.record_plugin_metrics:
                timed = TimedFilters(plugins)
                try:
                    return self.run_filter_plugins(state, pod, node_info, timed.plugins)
                finally:
                    timed.flush()
        for pl in plugins:
            try:
                s = pl.filter(state, pod, node_info)
            except PluginError as err:
                return filter_plugin_error(pl.name, err)
            if s is not None and s.code is not Code.SUCCESS:
                return filter_failure(pl.name, s)
        return None

    def run_filter_plugins_all(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], plugins: Sequence[FilterPlugin]
    ) -> tuple[list[NodeInfo], dict[str, Status]]:
        """:meth:`run_filter_plugins` on every node of ``nodes``, plugin by plugin.

        Returns the nodes that fit, in order, and for each other node the status
        :meth:`run_filter_plugins` would give it (its first non-success, marked with the plugin),
        in the order of ``nodes``. Each plugin decides the nodes left by the plugins before it in
        one :meth:`~FilterPlugin.filter_all` call, so a node that failed is not asked again, as
        node by node; what changes is the per-node call overhead, paid once per plugin instead.
        """
        start = time.perf_counter()
        feasible = list(nodes)
        failed: dict[str, Status] = {}
        interleaved = False  # failures from more than one plugin: put them back in node order
        for pl in plugins:
            if not feasible:
                break
            metrics.count_evaluations(self.evaluations["Filter"], (pl.name,), len(feasible))
            try:
                verdicts = pl.filter_all(state, pod, feasible)
                final = False
            except PluginError:
                # Which node raised, and the statuses of the others: node by node, as filter().
                verdicts = [self.run_filter_plugins(state, pod, info, (pl,)) for info in feasible]
                final = True
            if verdicts is None:
                continue
            kept: list[NodeInfo] = []
            earlier = len(failed)
            for info, s in zip(feasible, verdicts, strict=True):
                if s is None or s.code is Code.SUCCESS:
                    kept.append(info)
                else:
                    failed[info.name] = s if final else filter_failure(pl.name, s)
            feasible = kept
            interleaved = interleaved or (earlier > 0 and len(failed) > earlier)
        if interleaved:
            failed = {info.name: failed[info.name] for info in nodes if info.name in failed}
        if nodes:
            per_node = (time.perf_counter() - start) / len(nodes)
            if feasible:
                self.observe_point("Filter", "Success", per_node, len(feasible))
            if failed:
                self.observe_point("Filter", "Unschedulable", per_node, len(failed))
        return feasible, failed

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        nominated: Sequence[PodInfo],
        plugins: Sequence[FilterPlugin] | None = None,
        extensions: Sequence[tuple[str, PreFilterExtensions]] | None = None,
    ) -> Status | None:
        """Two passes: with higher-or-equal priority pods nominated to the node added, then without.

        ``extensions`` are :meth:`pre_filter_extensions_for` ``state`` when the caller has them (the
        preemption dry run); otherwise they are looked up once per cycle state, not once per node
        and nominated pod (a pass over every node while preemptors are nominated everywhere)."""
        if not nominated:
            return self.run_filter_plugins(state, pod, node_info, plugins)
        priority = pod_priority(pod)
        added = [p for p in nominated if p.pod.uid != pod.uid and pod_priority(p.pod) >= priority]
        if not added:
            return self.run_filter_plugins(state, pod, node_info, plugins)
        if extensions is None:
            memo = self._extensions_memo
            if memo is not None and memo[0] is state:
                extensions = memo[1]
            else:
                extensions = self.pre_filter_extensions_for(state)
                self._extensions_memo = (state, extensions)
        state_with = state.clone()
        info_with = node_info.snapshot()
        for p in added:
            info_with.add_pod_info(p)
            s = self.run_pre_filter_extension_add_pod(state_with, pod, p, info_with, extensions)
            if s is not None:
                return s
        s = self.run_filter_plugins(state_with, pod, info_with, plugins)
        if s is not None:
            return s
        return self.run_filter_plugins(state, pod, node_info, plugins)

    # --- PostFilter ----------------------------------------------------------------------

    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus | Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """Run PostFilter (preemption) plugins as kube-scheduler does.

        ``statuses`` is the FitError's NodeToStatus; a plain mapping means absent nodes are
        UnschedulableAndUnresolvable.
        """
        start = time.perf_counter()
        statuses = NodeToStatus.of(statuses)
        reasons: list[str] = []
        rejector = ""
        result: PostFilterResult | None = None
        final: Status
        for pl in self.post_filter:
            r, s = self._call(state, "PostFilter", pl.name, pl.post_filter, state, pod, statuses)
            if s.is_success():
                self._observe_point("PostFilter", s, start)
                return r, s
            if s.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                s.plugin = pl.name
                self._observe_point("PostFilter", s, start)
                return r, s
            if not s.is_rejected():
                final = Status(Code.ERROR, *s.reasons, plugin=pl.name)
                self._observe_point("PostFilter", final, start)
                return None, final
            if r is not None and r.mode != "noop":
                result = r
            reasons.extend(s.reasons)
            rejector = rejector or pl.name
        final = Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)
        self._observe_point("PostFilter", final, start)
        return result, final

    # --- PreScore / Score ------------------------------------------------------------------

    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Run PreScore; Skip marks the plugin's Score skipped."""
        start = time.perf_counter()
        skip = state.skip_score_plugins
        skip.clear()
        status: Status | None = None
        ran: list[str] = []
        for pl in self.pre_score:
            ran.append(pl.name)
            s = self._call(state, "PreScore", pl.name, pl.pre_score, state, pod, nodes)
            if s is not None and s.code is Code.SKIP:
                skip.add(pl.name)
                continue
            if s is not None and s.code is not Code.SUCCESS:
                status = Status(
                    Code.ERROR, f'running PreScore plugin "{pl.name}": {s.message()}', plugin=pl.name
                )
                break
        metrics.count_evaluations(self.evaluations["PreScore"], ran, 1)
        self._observe_point("PreScore", status, start)
        return status

    def active_scorers(self, state: CycleState) -> list[ScorePlugin]:
        """Score plugins not skipped in PreScore."""
        skip = state.skip_score_plugins
        return [pl for pl in self.score if pl.name not in skip] if skip else self.score

    def run_score_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[Sequence[NodeScore], Status | None]:
        """Score, normalize and weight; scores outside [0, 100] are an Error."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            # As RunScorePlugins: every plugin's Score first, then every NormalizeScore, then the
            # range check and weights, so a Score failure wins over another plugin's bad range.
            plugins = self.active_scorers(state)
            all_scores: list[list[int]] = []
            metrics.count_evaluations(self.evaluations["Score"], [pl.name for pl in plugins], len(nodes))
            for pl in plugins:
                try:
                    if state.record_plugin_metrics:
                        scores = self._timed_scores(pl, state, pod, nodes)
                    else:
                        scores = pl.score_nodes(state, pod, nodes)
                except PluginError as err:
                    status = Status(
                        Code.ERROR,
                        f'running Score plugins: plugin "{pl.name}" failed with: {err}',
                        plugin=pl.name,
                    )
                    return [], status
                all_scores.append(scores)
            for pl, scores in zip(plugins, all_scores, strict=True):
                if pl.normalizes:
                    s = pl.normalize_score(state, pod, nodes, scores)
                    if s is not None and not s.is_success():
                        status = Status(
                            Code.ERROR,
                            f'running Normalize on Score plugins: plugin "{pl.name}" '
                            f"failed with: {s.message()}",
                            plugin=pl.name,
                        )
                        return [], status
            # Weighted totals, a whole plugin at a time: map over operator.add/mul runs the
            # per-node arithmetic in C (a comprehension per plugin cost as much as a scorer).
            count = len(nodes)
            totals: list[int] | None = None
            for pl, scores in zip(plugins, all_scores, strict=True):
                if len(scores) != count:
                    raise ValueError(
                        f"Score plugin {pl.name} returned {len(scores)} scores for {count} nodes"
                    )
                name = pl.name
                if scores and (max(scores) > MAX_NODE_SCORE or min(scores) < 0):
                    sc = next(sc for sc in scores if sc > MAX_NODE_SCORE or sc < 0)  # the first, as kube
                    status = Status(
                        Code.ERROR,
                        f'applying score defaultWeights on Score plugins: plugin "{name}" returns an invalid '
                        f"score {sc}, it should in the range of [0, {MAX_NODE_SCORE}] after normalizing",
                        plugin=name,
                    )
                    return [], status
                weight = self.score_weights[name]
                weighted = scores if weight == 1 else map(mul, scores, repeat(weight, count))
                totals = list(weighted) if totals is None else list(map(add, totals, weighted))
            return NodeScores(
                _node_names(nodes),
                totals if totals is not None else [0] * count,
                ([pl.name for pl in plugins], all_scores),
            ), None
        finally:
            self._observe_point("Score", status, start)

    # --- Reserve / Permit / Bind ---------------------------------------------------------

    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """The first failing Reserve status, or None."""
        return self._first_failure(
            state, "Reserve", [(pl.name, pl.reserve) for pl in self.reserve], pod, node_name
        )

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve in reverse order."""
        start = time.perf_counter()
        for pl in reversed(self.reserve):
            pl.unreserve(state, pod, node_name)
        self._observe_point("Unreserve", None, start)

    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Permit, with its extension-point duration recorded (see :meth:`_run_permit_plugins`)."""
        start = time.perf_counter()
        status, wait = self._run_permit_plugins(state, pod, node_name)
        self._observe_point("Permit", status, start)
        return status, wait

    def _run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Permit: a rejection returns at once; Wait returns the shortest timeout (capped at 15 min).

        As kube-scheduler, the Wait status is the last waiting plugin's, with the reason
        "one or more plugins asked to wait and no plugin rejected pod" appended.
        """
        wait: float | None = None
        wait_status: Status | None = None
        for pl in self.permit:
            s, timeout = self._call(state, "Permit", pl.name, pl.permit, state, pod, node_name)
            if s is None or s.is_success():
                continue
            if s.is_rejected():
                s.plugin = pl.name
                return s, 0.0
            if s.code is Code.WAIT:
                t = min(timeout, MAX_PERMIT_TIMEOUT)
                wait = t if wait is None else min(wait, t)
                wait_status = s
                continue
            return Status(
                Code.ERROR, f'running Permit plugin "{pl.name}": {s.message()}', plugin=pl.name
            ), 0.0
        if wait_status is not None and wait is not None:
            wait_status.reasons.append("one or more plugins asked to wait and no plugin rejected pod")
            return wait_status, wait
        return None, 0.0

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """``RunPreBindPreFlights``: None (Success) when any PreBind plugin has work for ``pod`` on
        ``node_name``, Skip when none has (also when there are no PreBind plugins), or an Error.

        The plugins that said Skip are remembered in ``state``: :meth:`run_pre_bind_plugins` leaves
        them out, as kube-scheduler does."""
        start = time.perf_counter()
        status: Status | None = Status(Code.SKIP)
        skipped: set[str] = set()
        for pl in self.pre_bind:
            s = self._call(state, "PreBindPreFlight", pl.name, pl.pre_bind_pre_flight, state, pod, node_name)
            if s is None or s.is_success():
                status = None
            elif s.code is Code.SKIP:
                skipped.add(pl.name)
            elif s.code is Code.ERROR:
                status = Status(
                    Code.ERROR, f'running PreBindPreFlight "{pl.name}": {s.message()}', plugin=pl.name
                )
                break
            else:
                status = Status(
                    Code.ERROR,
                    f'PreBindPreFlight {pl.name} returned "{s.code.label}", which is unsupported. '
                    "It is supposed to return Success, Skip, or Error status",
                    plugin=pl.name,
                )
                break
        else:
            state.skip_pre_bind_plugins = skipped
        self._observe_point("PreBindPreFlight", status, start)
        return status

    def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """The first failing PreBind status, or None; plugins whose PreBindPreFlight said Skip are
        not called."""
        skipped = state.skip_pre_bind_plugins
        return self._first_failure(
            state,
            "PreBind",
            [(pl.name, pl.pre_bind) for pl in self.pre_bind if pl.name not in skipped],
            pod,
            node_name,
        )

    def _first_failure(
        self, state: CycleState, point: str, calls: list[tuple[str, Any]], pod: Pod, node_name: str
    ) -> Status | None:
        """Reserve and PreBind: the plugins in order until one fails; a rejection as it is, anything
        else an Error naming the plugin; the extension point's duration recorded."""
        start = time.perf_counter()
        status: Status | None = None
        for name, method in calls:
            s = self._call(state, point, name, method, state, pod, node_name)
            if s is not None and not s.is_success():
                s.plugin = name
                status = (
                    s
                    if s.is_rejected()
                    else Status(Code.ERROR, f'running {point} plugin "{name}": {s.message()}', plugin=name)
                )
                break
        self._observe_point(point, status, start)
        return status

    def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Bind plugins in order until one does not Skip."""
        start = time.perf_counter()
        status = Status(Code.SKIP)
        for pl in self.bind:
            s = self._call(state, "Bind", pl.name, pl.bind, state, pod, node_name)
            if s is not None and s.code is Code.SKIP:
                continue
            if s is None or s.is_success():
                status = Status(Code.SUCCESS, plugin=pl.name)
            elif s.is_rejected():
                status = s.with_plugin(pl.name)
            else:
                status = Status(Code.ERROR, f'running Bind plugin "{pl.name}": {s.message()}', plugin=pl.name)
            break
        self._observe_point("Bind", status, start)
        return status

    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """PostBind; results are ignored."""
        start = time.perf_counter()
        for pl in self.post_bind:
            pl.post_bind(state, pod, node_name)
        self._observe_point("PostBind", None, start)

    # --- helpers -------------------------------------------------------------------------

    def has_filter_plugins(self) -> bool:
        """Any Filter plugin configured."""
        return bool(self.filter)

    def has_score_plugins(self) -> bool:
        """Any Score plugin configured."""
        return bool(self.score)

    def _call(self, state: CycleState, point: str, plugin: str, fn: Any, *args: Any) -> Any:
        """Call a plugin method, recording its duration when the attempt samples plugin metrics."""
        if not state.record_plugin_metrics:
            try:
                return fn(*args)
            except PluginError as err:
                return _error_result(point, plugin, err)
        start = time.perf_counter()
        try:
            out = fn(*args)
        except PluginError as err:
            out = _error_result(point, plugin, err)
        s = out[-1] if isinstance(out, tuple) else out
        code = "Success" if s is None or not isinstance(s, Status) else s.code.label
        metrics.observe_plugin(plugin, point, code, time.perf_counter() - start)
        return out

    def _timed_scores(
        self, pl: ScorePlugin, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> list[int]:
        """Score every node with one timed ``score_nodes`` call, recorded as one observation per
        node of the mean per node: kube-scheduler times each node's Score call, and berth scores
        the nodes in one call, whose per-node cost is that mean. Calling ``score`` node by node to
        time each would make a sampled cycle's scoring twice as slow as the others'."""
        start = time.perf_counter()
        try:
            scores = pl.score_nodes(state, pod, nodes)
        except PluginError:
            metrics.observe_plugin(pl.name, "Score", "Error", time.perf_counter() - start)
            raise
        if nodes:
            mean = (time.perf_counter() - start) / len(nodes)
            metrics.observe_plugin_repeated(pl.name, "Score", "Success", mean, len(nodes))
        return scores

    def _observe_point(self, point: str, status: Status | None, start: float) -> None:
        code = "Success" if status is None else status.code.label
        self.observe_point(point, code, time.perf_counter() - start)

    def observe_point(self, point: str, code: str, seconds: float, times: int = 1) -> None:
        """``scheduler_framework_extension_point_duration_seconds`` of this profile (``times``
        observations of ``seconds``), through a kept series handle."""
        series = self._point_series.get((point, code))
        if series is None:
            series = self._point_series[(point, code)] = metrics.FRAMEWORK_EXTENSION_POINT_DURATION.series(
                (point, code, self.profile_name)
            )
        if times == 1:
            metrics.FRAMEWORK_EXTENSION_POINT_DURATION.observe_series(series, seconds)
        else:
            metrics.FRAMEWORK_EXTENSION_POINT_DURATION.observe_series_repeated(series, seconds, times)


def filter_failure(plugin: str, status: Status) -> Status:
    """What a Filter plugin's non-success ``status`` makes of the node: the status itself (marked
    with the plugin) for a rejection, an Error naming the plugin for anything else."""
    status.plugin = plugin
    if status.code not in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING):
        return Status(Code.ERROR, f'running "{plugin}" filter plugin: {status.message()}', plugin=plugin)
    return status


def filter_plugin_error(plugin: str, err: PluginError) -> Status:
    """The Error status of a Filter plugin that raised ``err``."""
    return Status(Code.ERROR, f'running "{plugin}" filter plugin: {err}', plugin=plugin)


def _error_result(point: str, plugin: str, err: Exception) -> Any:
    status = Status(Code.ERROR, f"{err}", plugin=plugin)
    if point in ("PreFilter", "PostFilter"):
        return None, status
    if point == "Permit":
        return status, 0.0
    return status


def _needed_plugins(spec: ProfileSpec) -> list[str]:
    """Every plugin enabled at some extension point, in first-seen order."""
    seen: dict[str, None] = {}
    for enabled, _ in spec.plugins.values():
        for ref in enabled:
            seen.setdefault(ref.name, None)
    return list(seen)
