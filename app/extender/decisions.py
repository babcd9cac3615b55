"""What ``berth serve``'s verbs decided about each pod, for its web UI (``/ui/``).

kube-scheduler makes the decisions when berth is its extender; berth sees its part of each one:
``/filter`` (the nodes it was asked about, which passed, and each rejection's plugin and reasons),
``/prioritize`` (every Score plugin's normalized score per node, and the profile's weights),
``/preempt`` (the victims berth agreed to on each candidate node) and ``/bind`` (the node
kube-scheduler chose, or the error binding met). :class:`ExtenderDecisions` keeps the latest of
these per pod, in the shape ``berth simulate -o json`` gives a pod (so the UI's pod page draws both
alike), with the outcome in berth's words:

=============  ==================================================================================
Filtered       /filter passed some nodes (and /prioritize may have scored them); kube-scheduler
               picks the node, and binds it itself unless berth serves its ``bindVerb``
Scheduled      /bind bound the pod to ``node``
Unschedulable  /filter passed none of the nodes it was asked about: ``message`` is the FitError
               over them (kube-scheduler's own has its plugins' rejections too)
Error          a verb failed (a plugin Error, no such profile) or the Binding did: ``message``
=============  ==================================================================================

The verbs pay for a record only what they hold anyway: a reference to the statuses /filter built,
the names of the passing nodes, the scores compacted as ``berth run``'s decision traces keep them
(a byte per normalized score), and the pod without its raw object. The explanation is built when
the UI asks for it. The store is bounded as ``/debug/pods``' is: the
:data:`DEFAULT_CAPACITY` most recently seen pods; older ones are forgotten first.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.api.objects import Pod
from app.framework.runtime import Framework, NodeScore, NodeScores
from app.framework.status import Code, NodeToStatus, Status, fit_error_message
from app.simulate.report import record_dict
from app.simulate.runner import PodRecord

__all__ = ["DEFAULT_CAPACITY", "ERROR", "FILTERED", "SCHEDULED", "UNSCHEDULABLE", "ExtenderDecisions"]

DEFAULT_CAPACITY = 5000
"""Pods remembered, as ``berth run``'s ``/debug/pods`` remembers."""

FILTERED, SCHEDULED, UNSCHEDULABLE, ERROR = "Filtered", "Scheduled", "Unschedulable", "Error"


@dataclass(slots=True)
class _Decision:
    """berth's part in one pod's latest scheduling cycle."""

    pod: Pod
    profile: str
    weights: Mapping[str, int]
    evaluated: int = 0
    passed: Sequence[str] = ()
    failed: Mapping[str, Status] = field(default_factory=dict)
    scores: Sequence[NodeScore] = ()
    node: str | None = None
    error: str = ""
    victims: dict[str, list[str]] = field(default_factory=dict)
    """Preemption: each candidate node /preempt kept, with the victims berth agreed to there."""
    filters: int = 0
    """How many /filter calls the pod has had (kube-scheduler's attempts, as berth saw them)."""
    time: float = 0.0

    @property
    def status(self) -> str:
        if self.error:
            return ERROR
        if self.node is not None:
            return SCHEDULED
        if self.filters and not self.passed:
            return UNSCHEDULABLE
        return FILTERED

    @property
    def message(self) -> str:
        if self.error:
            return self.error
        if self.status == UNSCHEDULABLE:
            return fit_error_message(self.evaluated, NodeToStatus(dict(self.failed)), "", "")
        return ""


class ExtenderDecisions:
    """Thread-safe ``namespace/name -> berth's part in its latest cycle``, bounded (module doc).

    The verbs call :meth:`filtered`, :meth:`scored`, :meth:`preempted`, :meth:`bound` and
    :meth:`failed`; the UI reads :meth:`recent` and :meth:`explain`.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._decisions: OrderedDict[str, _Decision] = OrderedDict()

    # --- recording (the verbs) -----------------------------------------------------------------

    def filtered(self, fwk: Framework, pod: Pod, passed: Sequence[str], failed: Mapping[str, Status]) -> None:
        """A /filter answered: ``passed`` nodes, ``failed`` ones with their statuses. A new cycle
        for the pod: what earlier verbs recorded about it is replaced."""
        with self._lock:
            previous = self._decisions.get(pod.key)
            decision = _Decision(
                _slim(pod), fwk.profile_name, fwk.score_weights, len(passed) + len(failed), passed, failed
            )
            decision.filters = 1 if previous is None or previous.pod.uid != pod.uid else previous.filters + 1
            self._put(pod.key, decision)

    def scored(self, fwk: Framework, pod: Pod, scores: Sequence[NodeScore]) -> None:
        """A /prioritize answered with the framework's ``scores`` (per plugin, before weights)."""
        kept = scores.compacted() if isinstance(scores, NodeScores) else list(scores)
        with self._lock:
            decision = self._current(pod, fwk)
            if not decision.filters:  # no /filter before it (a prioritize-only extender)
                decision.passed = [s.name for s in kept]
                decision.evaluated = len(kept)
            decision.scores = kept
            self._put(pod.key, decision)

    def preempted(self, fwk: Framework, pod: Pod, victims: Mapping[str, list[str]]) -> None:
        """A /preempt answered: the candidate nodes berth kept, each with its victims' keys."""
        with self._lock:
            decision = self._current(pod, fwk)
            decision.victims = dict(victims)
            self._put(pod.key, decision)

    def bound(self, key: str, node: str, error: str = "") -> None:
        """A /bind finished for pod ``namespace/name``: bound to ``node``, or ``error``."""
        with self._lock:
            decision = self._decisions.get(key)
            if decision is None:
                return  # never filtered here (berth restarted, or forgot it): nothing to explain
            if error:
                decision.error = error
            else:
                decision.node = node
            self._put(key, decision)

    def failed(self, fwk: Framework | None, pod: Pod, error: str) -> None:
        """A verb answered ``error`` for ``pod`` (a plugin Error, no such profile)."""
        with self._lock:
            decision = self._current(pod, fwk)
            decision.error = error
            self._put(pod.key, decision)

    def _current(self, pod: Pod, fwk: Framework | None) -> _Decision:
        """The pod's decision of this cycle (locked), or a new one when there is none for this pod."""
        decision = self._decisions.get(pod.key)
        if decision is None or decision.pod.uid != pod.uid:
            profile = "" if fwk is None else fwk.profile_name
            decision = _Decision(_slim(pod), profile, {} if fwk is None else fwk.score_weights)
        return decision

    def _put(self, key: str, decision: _Decision) -> None:
        """Store ``decision`` as the newest (locked): the UI's polls ask for what changed since."""
        decision.time = time.time()
        self._decisions[key] = decision
        self._decisions.move_to_end(key)
        while len(self._decisions) > self.capacity:
            self._decisions.popitem(last=False)

    # --- reading (the UI) ----------------------------------------------------------------------

    def recent(self, limit: int, since: float = 0.0) -> list[dict[str, Any]]:
        """The ``limit`` most recently updated pods' outcomes updated after ``since`` (epoch s),
        newest first: the fields of ``berth run``'s decision list."""
        with self._lock:
            latest = itertools.takewhile(lambda item: item[1].time > since, reversed(self._decisions.items()))
            newest = [(key, d, d.status, d.message) for key, d in itertools.islice(latest, limit)]
        return [
            {
                "pod": key,
                "profile": d.profile,
                "status": status,
                "node": d.node,
                "message": message,
                "nominatedNode": None,
                "attempts": d.filters,
                "time": d.time,
            }
            for key, d, status, message in newest
        ]

    def explain(self, key: str) -> dict[str, Any] | None:
        """Pod ``namespace/name``'s latest decision in ``berth simulate -o json``'s shape, plus
        ``profile``, ``attempts`` and ``preemption`` (candidate node -> victims); None if unknown."""
        with self._lock:
            decision = self._decisions.get(key)
            if decision is None:
                return None
            d = dataclasses.replace(decision)  # the verbs may update it while this one is explained
        status = d.status
        record = PodRecord(
            d.pod,
            status,
            d.node,
            d.message,
            feasible_nodes=len(d.passed),
            evaluated_nodes=d.evaluated,
            filter=dict(d.failed),
            scores=list(d.scores),
            weights=dict(d.weights),
        )
        out = record_dict(record)
        out["profile"] = d.profile
        out["nominatedNode"] = None
        out["attempts"] = d.filters
        out["preemption"] = d.victims
        return out


def unknown_node(reason: str) -> Status:
    """The status of a /filter node berth has no node for (the answer's reason, no plugin)."""
    return Status(Code.UNSCHEDULABLE, reason)


def _slim(pod: Pod) -> Pod:
    """``pod`` without its raw object: the explanation names the pod, and 5,000 raw pods would be
    most of the store's memory (as ``berth run``'s traces found)."""
    return dataclasses.replace(pod, raw={}) if pod.raw else pod
