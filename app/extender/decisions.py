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

A verb pays for its record only references to what it computed anyway: the pod, the statuses
/filter built, the passing nodes' names, the framework's scores. Making the record small enough to
keep (the pod without its raw object, the scores compacted as ``berth run``'s decision traces keep
them: a byte per normalized score) is left to :meth:`ExtenderDecisions.settle`, which the service
calls once a /filter's answer is on its way (where it speculates), so no verb waits for it; more
than :data:`MAX_UNSETTLED` records waiting are settled at once. The explanation is built when the UI
asks for it. The store is bounded as ``/debug/pods``' is: the :data:`DEFAULT_CAPACITY` most recently
seen pods; older ones are forgotten first.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.api.objects import Pod
from app.framework.runtime import Framework, NodeScore, NodeScores
from app.framework.status import Code, NodeToStatus, Status, fit_error_message

__all__ = [
    "DEFAULT_CAPACITY",
    "ERROR",
    "FILTERED",
    "MAX_UNSETTLED",
    "SCHEDULED",
    "UNSCHEDULABLE",
    "ExtenderDecisions",
]

DEFAULT_CAPACITY = 5000
"""Pods remembered, as ``berth run``'s ``/debug/pods`` remembers."""

SCORED_NODES_KEPT = 20
REJECTED_NODES_KEPT = 50
"""Per pod, as the offline report keeps them (app/ui/report.py): the best-scored nodes and the
rejected ones (by name) a settled record lists; it counts the others."""

MAX_UNSETTLED = 64
"""Records kept as the verbs made them (full pod, scores as computed) before they are settled anyway."""

FILTERED, SCHEDULED, UNSCHEDULABLE, ERROR = "Filtered", "Scheduled", "Unschedulable", "Error"


@dataclass(slots=True)
class _Decision:
    """berth's part in one pod's latest scheduling cycle."""

    pod: Pod
    profile: str
    weights: Mapping[str, int]
    evaluated: int = 0
    feasible: int = 0
    failed: Mapping[str, Status] = field(default_factory=dict)
    scores: Sequence[NodeScore] = ()
    fit_error: str = ""
    """The FitError over every evaluated node, worked out when the record is settled (it counts
    the rejections the settled record no longer lists)."""
    failed_summary: list[tuple[str, str, int]] | None = None
    """Every rejection grouped: (plugin, reason, nodes), most nodes first; None until settled."""
    failed_omitted: int = 0
    scores_omitted: int = 0
    node: str | None = None
    error: str = ""
    victims: dict[str, list[str]] = field(default_factory=dict)
    """Preemption: each candidate node /preempt kept, with the victims berth agreed to there."""
    filters: int = 0
    """How many /filter calls the pod has had (kube-scheduler's attempts, as berth saw them)."""
    time: float = 0.0
    settled: bool = False
    """Whether the pod and scores are the slim copies kept for long (:meth:`ExtenderDecisions.settle`)."""

    def settle(self) -> None:
        """Shrink the record to what stays bounded whatever the cluster's size: the pod without its
        raw object, the :data:`SCORED_NODES_KEPT` best-scored nodes, :data:`REJECTED_NODES_KEPT`
        rejected ones and the grouped counts of all (as the offline report keeps them)."""
        if self.pod.raw:
            self.pod = dataclasses.replace(self.pod, raw={})
        failed = self.failed
        if self.failed_summary is None:
            if self.filters and not self.feasible and failed:
                self.fit_error = fit_error_message(self.evaluated, NodeToStatus(dict(failed)), "", "")
            counts: Counter[tuple[str, str]] = Counter()
            for status in failed.values():
                for reason in status.reasons or [status.code.label]:
                    counts[(status.plugin, reason)] += 1
            self.failed_summary = [(plugin, reason, n) for (plugin, reason), n in counts.most_common()]
            if len(failed) > REJECTED_NODES_KEPT:
                kept = sorted(failed)[:REJECTED_NODES_KEPT]
                self.failed = {name: failed[name] for name in kept}
                self.failed_omitted = len(failed) - len(kept)
        scores = self.scores
        if isinstance(scores, NodeScores) or len(scores) > SCORED_NODES_KEPT:
            if isinstance(scores, NodeScores):
                # Detached copies: a kept NodeScore would hold the whole cycle's score columns.
                self.scores = scores.best(SCORED_NODES_KEPT)
            else:
                self.scores = heapq.nlargest(SCORED_NODES_KEPT, scores, key=lambda s: s.total)
            self.scores_omitted += len(scores) - len(self.scores)
        self.settled = True

    @property
    def status(self) -> str:
        if self.error:
            return ERROR
        if self.node is not None:
            return SCHEDULED
        if self.filters and not self.feasible:
            return UNSCHEDULABLE
        return FILTERED

    @property
    def message(self) -> str:
        if self.error:
            return self.error
        if self.status == UNSCHEDULABLE:
            return self.fit_error or fit_error_message(
                self.evaluated, NodeToStatus(dict(self.failed)), "", ""
            )
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
        self._unsettled: list[_Decision] = []

    # --- recording (the verbs) -----------------------------------------------------------------

    def filtered(self, fwk: Framework, pod: Pod, passed: Sequence[str], failed: Mapping[str, Status]) -> None:
        """A /filter answered: ``passed`` nodes, ``failed`` ones with their statuses. A new cycle
        for the pod: what earlier verbs recorded about it is replaced."""
        with self._lock:
            previous = self._decisions.get(pod.key)
            decision = _Decision(
                pod, fwk.profile_name, fwk.score_weights, len(passed) + len(failed), len(passed), failed
            )
            decision.filters = 1 if previous is None or previous.pod.uid != pod.uid else previous.filters + 1
            self._put(pod.key, decision)

    def scored(self, fwk: Framework, pod: Pod, scores: Sequence[NodeScore]) -> None:
        """A /prioritize answered with the framework's ``scores`` (per plugin, before weights)."""
        with self._lock:
            decision = self._current(pod, fwk)
            if not decision.filters:  # no /filter before it (a prioritize-only extender)
                decision.feasible = decision.evaluated = len(scores)
            decision.scores = scores
            decision.scores_omitted = 0
            decision.settled = False
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
            decision = _Decision(pod, profile, {} if fwk is None else fwk.score_weights)
        return decision

    def _put(self, key: str, decision: _Decision) -> None:
        """Store ``decision`` as the newest (locked): the UI's polls ask for what changed since."""
        decision.time = time.time()
        self._decisions[key] = decision
        self._decisions.move_to_end(key)
        while len(self._decisions) > self.capacity:
            self._decisions.popitem(last=False)
        if not decision.settled:
            self._unsettled.append(decision)
            if len(self._unsettled) > MAX_UNSETTLED:
                self._settle()

    def settle(self) -> None:
        """Make the records the verbs left since the last call small enough to keep (module doc)."""
        with self._lock:
            self._settle()

    def _settle(self) -> None:
        for decision in self._unsettled:
            if not decision.settled:
                decision.settle()
        self._unsettled.clear()

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
        # simulate's report, imported on the first request: the app is also berth run's, whose
        # start-up should not load the simulator for an explanation nobody may ask for.
        from app.simulate.report import record_dict
        from app.simulate.runner import PodRecord

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
            feasible_nodes=d.feasible,
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
        # A settled record lists some of the nodes; the page says how many it left out, and groups
        # every rejection (``berth simulate --html``'s fields).
        if d.failed_summary is not None:
            out["filterSummary"] = [{"plugin": p, "reason": r, "nodes": n} for p, r, n in d.failed_summary]
        if d.failed_omitted:
            out["filterOmitted"] = d.failed_omitted
        if d.scores_omitted:
            out["scoresOmitted"] = d.scores_omitted
        return out


def unknown_node(reason: str) -> Status:
    """The status of a /filter node berth has no node for (the answer's reason, no plugin)."""
    return Status(Code.UNSCHEDULABLE, reason)
