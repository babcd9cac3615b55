"""The last scheduling decision of each pod, for ``GET /debug/pods/{namespace}/{name}``.

The scheduling loop hands every finished attempt to :meth:`DecisionTraces.record`, which keeps
what explaining it needs: the explanation (per-node filter verdicts and per-plugin scores, in the
shape of ``berth simulate -o json``) is built when someone asks, so the hot path pays little for
it. What is kept is slimmed first: the attempt's pod without its raw object (the explanation names
the pod; the informer holds its current object) and the scores in compact arrays. Kept as they
came, 2000 traces held 44 MiB, mostly pods' raw objects the informer had already replaced.

A failed attempt's per-node statuses are kept grouped: one Status per distinct verdict and a byte per
node naming it (at 5,000 nodes a trace of "Insufficient cpu" everywhere was 820 KB as the attempt left
it, a Status and a reasons list per node in a dict; 45 KB grouped). The store is bounded twice: by
pods (:data:`DEFAULT_CAPACITY`) and by the node entries the kept traces hold (:data:`DEFAULT_NODE_ENTRIES`,
scored or filtered nodes), so its memory stays bounded however large the cluster; least recently
scheduled pods are forgotten first.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

from app.framework.status import Code, NodeToStatus, Status
from app.scheduler.scheduler import Attempt

__all__ = ["DEFAULT_CAPACITY", "DEFAULT_NODE_ENTRIES", "DecisionTraces", "PreparedTrace"]

DEFAULT_CAPACITY = 5000
"""Pods whose last attempt is kept at most."""

DEFAULT_NODE_ENTRIES = 500_000
"""Node entries (scored nodes plus nodes with a filter verdict) the kept traces hold at most, about
10 to 20 bytes each: 1,000 pods scored on 500 nodes each, or 100 pods failed on 5,000 nodes."""


class _GroupedStatuses:
    """A NodeToStatus's per-node statuses as the node names in order, one Status per distinct
    verdict (code, plugin, reasons), and the index of each node's verdict: what a dict of a Status
    per node explains, in a byte or two per node."""

    __slots__ = ("indexes", "names", "verdicts")

    def __init__(self, statuses: dict[str, Status]) -> None:
        verdicts: list[Status] = []
        seen: dict[tuple[object, str, tuple[str, ...]], int] = {}
        indexes: list[int] = []
        for status in statuses.values():
            key = (status.code, status.plugin, tuple(status.reasons))
            index = seen.get(key)
            if index is None:
                index = seen[key] = len(verdicts)
                verdicts.append(status)
            indexes.append(index)
        self.names = tuple(statuses)
        self.verdicts = tuple(verdicts)
        self.indexes = bytes(indexes) if len(verdicts) <= 256 else array("I", indexes)

    def __len__(self) -> int:
        return len(self.names)

    def expand(self) -> dict[str, Status]:
        """The statuses per node, in the original order."""
        verdicts = self.verdicts
        return {name: verdicts[i] for name, i in zip(self.names, self.indexes, strict=True)}


class DecisionTraces:
    """Thread-safe ``namespace/name -> last Attempt`` with the node names it needs to be explained."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, node_entries: int = DEFAULT_NODE_ENTRIES) -> None:
        self.capacity = capacity
        self.node_entries = node_entries
        self._lock = threading.Lock()
        # pod key -> (slim attempt, node names, attempts, time, grouped statuses, node entries held)
        self._attempts: OrderedDict[str, _Trace] = OrderedDict()
        self._entries = 0  # node entries held by the kept traces

    def record(self, attempt: Attempt, node_names: Callable[[], Sequence[str]], attempts: int = 1) -> None:
        """Remember ``attempt`` as its pod's latest; ``attempts`` is the pod's attempt count so far.

        ``node_names`` is called only when the explanation will need the names of nodes the
        attempt never looked at (a PreFilter rejection or narrowed node set), which is rare.
        """
        self.keep(self.prepare(attempt, node_names, attempts))

    @staticmethod
    def prepare(
        attempt: Attempt, node_names: Callable[[], Sequence[str]], attempts: int = 1
    ) -> PreparedTrace:
        """What :meth:`record` keeps of ``attempt``, made now and kept later with :meth:`keep`: a
        scheduled attempt is prepared before its binding cycle, which then waits without the
        attempt's per-node statuses (a dict of Status objects over thousands of nodes)."""
        statuses = attempt.diagnosis.node_to_status.statuses
        names: Sequence[str] = ()
        if attempt.status == "Unschedulable" and attempt.num_all_nodes > len(statuses):
            names = node_names()
        light = attempt.without_node_statuses()
        slim = _slim(light)
        grouped = _GroupedStatuses(statuses)
        result = slim.result
        held = len(grouped) + len(names) + (len(result.scores) if result is not None else 0)
        return PreparedTrace(slim, names, attempts, grouped, held, light)

    def keep(self, prepared: PreparedTrace) -> None:
        """Remember a prepared trace as its pod's latest, as of now."""
        slim, names, attempts, grouped, held, _ = prepared
        key = slim.pod.key
        trace = (slim, names, attempts, time.time(), grouped, held)
        with self._lock:
            previous = self._attempts.pop(key, None)
            if previous is not None:
                self._entries -= previous[5]
            self._attempts[key] = trace
            self._entries += held
            # The newest trace stays even when it alone holds more entries than the budget.
            while len(self._attempts) > self.capacity or (
                self._entries > self.node_entries and len(self._attempts) > 1
            ):
                _, dropped = self._attempts.popitem(last=False)
                self._entries -= dropped[5]

    def forget(self, key: str) -> None:
        """Drop the trace of a deleted pod."""
        with self._lock:
            dropped = self._attempts.pop(key, None)
            if dropped is not None:
                self._entries -= dropped[5]

    def __len__(self) -> int:
        """How many pods' traces are kept."""
        with self._lock:
            return len(self._attempts)

    def node_entries_held(self) -> int:
        """The node entries (scored nodes, nodes with a verdict, listed names) the kept traces hold."""
        with self._lock:
            return self._entries

    def explain(self, key: str) -> dict[str, Any] | None:
        """The trace of pod ``namespace/name``, or None if it was never attempted (or forgotten)."""
        with self._lock:
            entry = self._attempts.get(key)
        if entry is None:
            return None
        slim, names, attempts, _, grouped, _ = entry
        kept = slim.diagnosis
        diagnosis = dataclasses.replace(
            kept,
            node_to_status=NodeToStatus(grouped.expand(), kept.node_to_status.absent),
            unschedulable_plugins=set(kept.unschedulable_plugins),
            pending_plugins=set(kept.pending_plugins),
        )
        attempt = dataclasses.replace(slim, diagnosis=diagnosis)
        # The explanation's code (simulate's report, about 16 MiB with what it imports) is loaded on
        # the first /debug/pods request, not when berth run starts.
        from app.simulate.report import record_dict
        from app.simulate.runner import explain_attempt

        trace = record_dict(explain_attempt(attempt, names))
        trace["nominatedNode"] = attempt.nominated_node
        trace["attempts"] = attempts
        return trace

    def recent(self, limit: int, since: float = 0.0) -> list[dict[str, Any]]:
        """The ``limit`` most recently scheduled pods' outcomes recorded after ``since`` (epoch s),
        newest first, without explaining them (the web UI's decisions page): pod, profile, status,
        node, message, attempts, time (epoch s). A poll passing the newest time it has seen gets only
        what changed since."""
        with self._lock:
            # Entries are in recording order (record moves a re-attempted pod to the end).
            latest = itertools.takewhile(lambda item: item[1][3] > since, reversed(self._attempts.items()))
            newest = list(itertools.islice(latest, limit))
        return [
            {
                "pod": key,
                "profile": attempt.pod.scheduler_name,
                "status": attempt.status,
                "node": attempt.node,
                "message": attempt.message,
                "nominatedNode": attempt.nominated_node,
                "attempts": attempts,
                "time": at,
            }
            for key, (attempt, _, attempts, at, _, _) in newest
        ]


_Trace = tuple[Attempt, Sequence[str], int, float, _GroupedStatuses, int]


class PreparedTrace(NamedTuple):
    """An attempt as the store keeps it (:meth:`DecisionTraces.prepare`), not yet kept."""

    attempt: Attempt
    names: Sequence[str]
    attempts: int
    grouped: _GroupedStatuses
    held: int
    #: ``attempt.without_node_statuses()``, the pod and its assumed copy kept: what a scheduled
    #: attempt waits for its binding cycle with (made once here, for the trace and the wait).
    light: Attempt


_NO_PLUGINS = cast("set[str]", frozenset())
"""What a kept diagnosis holds for an empty plugin set, shared (an empty set is 216 bytes, and most
attempts' are empty): frozen, so nothing can add to it, and :meth:`DecisionTraces.explain` gives
the explanation sets of its own."""

_UNRESOLVABLE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
"""The absent-node status most diagnoses keep (NodeToStatus's default), shared by the kept traces;
explanations only read it."""


def _slim(light: Attempt) -> Attempt:
    """What an explanation reads of an attempt already without its per-node statuses (kept grouped
    beside it) and with compact scores: the pod without its raw object, no assumed copy, and the
    diagnosis's empty plugin sets and default absent-node status shared with every other trace."""
    # The diagnosis and its NodeToStatus are copies without_node_statuses made for ``light``, which
    # nothing writes to after the scheduling cycle (a failed binding cycle makes a new attempt):
    # shared parts are set in place, without copying them again (2.7 µs a copy).
    diagnosis = light.diagnosis
    if not diagnosis.unschedulable_plugins:
        diagnosis.unschedulable_plugins = _NO_PLUGINS
    if not diagnosis.pending_plugins:
        diagnosis.pending_plugins = _NO_PLUGINS
    node_to_status = diagnosis.node_to_status
    absent = node_to_status.absent
    if absent.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE and not absent.reasons and not absent.plugin:
        node_to_status.absent = _UNRESOLVABLE
    return dataclasses.replace(light, pod=dataclasses.replace(light.pod, raw={}), assumed=None)
