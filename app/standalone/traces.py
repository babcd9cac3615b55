"""The last scheduling decision of each pod, for ``GET /debug/pods/{namespace}/{name}``.

The scheduling loop hands every finished attempt to :meth:`DecisionTraces.record`, which keeps
what explaining it needs: the explanation (per-node filter verdicts and per-plugin scores, in the
shape of ``berth simulate -o json``) is built when someone asks, so the hot path pays little for
it. What is kept is slimmed first: the attempt's pod without its raw object (the explanation names
the pod; the informer holds its current object) and the scores in compact arrays. Kept as they
came, 2000 traces held 44 MiB, mostly pods' raw objects the informer had already replaced.
The store is bounded (least recently scheduled pods are forgotten first).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from app.framework.runtime import NodeScores
from app.scheduler.scheduler import Attempt
from app.simulate.report import record_dict
from app.simulate.runner import explain_attempt

__all__ = ["DEFAULT_CAPACITY", "DecisionTraces"]

DEFAULT_CAPACITY = 5000


class DecisionTraces:
    """Thread-safe ``namespace/name -> last Attempt`` with the node names it needs to be explained."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._attempts: OrderedDict[str, tuple[Attempt, Sequence[str], int, float]] = OrderedDict()

    def record(self, attempt: Attempt, node_names: Callable[[], Sequence[str]], attempts: int = 1) -> None:
        """Remember ``attempt`` as its pod's latest; ``attempts`` is the pod's attempt count so far.

        ``node_names`` is called only when the explanation will need the names of nodes the
        attempt never looked at (a PreFilter rejection or narrowed node set), which is rare.
        """
        statuses = attempt.diagnosis.node_to_status.statuses
        names: Sequence[str] = ()
        if attempt.status == "Unschedulable" and attempt.num_all_nodes > len(statuses):
            names = node_names()
        key = attempt.pod.key
        slim = _slim(attempt)
        with self._lock:
            self._attempts[key] = (slim, names, attempts, time.time())
            self._attempts.move_to_end(key)
            while len(self._attempts) > self.capacity:
                self._attempts.popitem(last=False)

    def forget(self, key: str) -> None:
        """Drop the trace of a deleted pod."""
        with self._lock:
            self._attempts.pop(key, None)

    def explain(self, key: str) -> dict[str, Any] | None:
        """The trace of pod ``namespace/name``, or None if it was never attempted (or forgotten)."""
        with self._lock:
            entry = self._attempts.get(key)
        if entry is None:
            return None
        attempt, names, attempts, _ = entry
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
            for key, (attempt, _, attempts, at) in newest
        ]


def _slim(attempt: Attempt) -> Attempt:
    """``attempt`` with what its explanation reads: the pod without its raw object, no assumed copy,
    the scores compacted."""
    result = attempt.result
    if result is not None and isinstance(result.scores, NodeScores):
        result = dataclasses.replace(result, scores=result.scores.compacted())
    pod = dataclasses.replace(attempt.pod, raw={})
    return dataclasses.replace(attempt, pod=pod, assumed=None, result=result)
