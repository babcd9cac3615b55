"""Metrics only the standalone scheduler records: leadership and per-pod scheduling SLIs.

Names, buckets and labels are kube-scheduler's (``pkg/scheduler/metrics``) and component-base's
``leader_election_master_status{name="kube-scheduler"}`` (1 on the leader, 0 on a follower): kube
labels it with the LeaderElectionConfig's Name, which kube-scheduler hard-codes, not the Lease's.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import Gauge, Histogram

from app.metrics import exponential_buckets

__all__ = ["LEADER", "LEADER_ELECTION_NAME", "observe_scheduled", "set_leader"]

LEADER_ELECTION_NAME = "kube-scheduler"
"""``leaderelection.LeaderElectionConfig.Name`` in kube-scheduler's makeLeaderElectionConfig."""


POD_SCHEDULING_SLI_DURATION = Histogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might "
    "involve multiple scheduling attempts.",
    ["attempts"],
    buckets=exponential_buckets(0.01, 2, 20),
)
POD_SCHEDULING_ATTEMPTS = Histogram(
    "scheduler_pod_scheduling_attempts",
    "Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5),
)
LEADER = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. "
    "'name' is the string used to identify the lease.",
    ["name"],
)


class _Queued(Protocol):
    attempts: int
    initial_attempt_timestamp: float | None


def observe_scheduled(qpi: _Queued, now: float) -> None:
    """A pod bound after ``qpi.attempts`` attempts; its SLI runs from its first attempt."""
    POD_SCHEDULING_ATTEMPTS.observe(qpi.attempts)
    if qpi.initial_attempt_timestamp is not None:
        label = str(qpi.attempts) if qpi.attempts < 15 else "15+"
        POD_SCHEDULING_SLI_DURATION.labels(label).observe(now - qpi.initial_attempt_timestamp)


def set_leader(lease: str, leading: bool) -> None:
    """Record whether this instance holds ``lease``."""
    LEADER.labels(lease).set(1 if leading else 0)
