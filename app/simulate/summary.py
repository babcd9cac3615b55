"""What a whole ``berth simulate`` run comes to: counts by status, the reasons grouped, and each
scheduled pod's winner and runner-up."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from app.framework.runtime import NodeScore
from app.simulate.runner import GATED, SKIPPED, STATUSES, PodRecord, SimulationResult

__all__ = ["Summary", "pod_reasons", "summarize", "winner_and_runner_up"]


@dataclass(slots=True)
class Summary:
    """Pods per status (every status of :data:`STATUSES`, zeros included) and the reasons that kept
    pods off nodes, each with how many pods it held back, most frequent first."""

    counts: dict[str, int]
    reasons: list[tuple[str, int]]
    pending: int
    nodes: int


def pod_reasons(record: PodRecord) -> list[str]:
    """The distinct reasons a pod was not scheduled: its failing nodes' filter reasons (as kube-scheduler's
    FitError aggregates them), else its message (no nodes, a gate, an unserved scheduler name)."""
    if record.status == "Scheduled":
        return []
    reasons = {reason for status in record.filter.values() for reason in status.reasons}
    if reasons and record.status not in (GATED, SKIPPED):
        return sorted(reasons)
    return [record.message] if record.message else []


def summarize(result: SimulationResult) -> Summary:
    """Count ``result``'s pods by status and group the reasons of those not scheduled."""
    counts = {status: result.count(status) for status in STATUSES}
    reasons: Counter[str] = Counter()
    for record in result.records:
        reasons.update(pod_reasons(record))
    grouped = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    return Summary(counts, grouped, len(result.records), result.num_nodes)


def winner_and_runner_up(record: PodRecord) -> tuple[NodeScore | None, NodeScore | None]:
    """The chosen node's score and the best other node's (ties: the first by name); None when the
    pod was not scored (not scheduled, or the only feasible node: kube-scheduler skips Score then)."""
    if record.status != "Scheduled" or not record.scores:
        return None, None
    winner = next((s for s in record.scores if s.name == record.node), None)
    others = sorted((s for s in record.scores if s.name != record.node), key=lambda s: (-s.total, s.name))
    return winner, (others[0] if others else None)
