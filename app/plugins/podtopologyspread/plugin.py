"""PodTopologySpread (``plugins/podtopologyspread/plugin.go``).

Filter enforces the pod's DoNotSchedule ``topologySpreadConstraints``; Score prefers the nodes whose
domains hold the fewest matching pods under its ScheduleAnyway constraints. A pod without
constraints gets the args' default constraints (System: kube's two soft defaults), selecting pods
through ``helper.DefaultSelector``. The matching pods per domain, which PreFilter and PreScore count
over every node, are kept by the snapshot across cycles (:mod:`.counting`).

Not ported: SignPod (berth has no opportunistic batching). The queueing hints answer the strings
``Queue``/``QueueSkip`` (as kube's test tables spell them); :meth:`PodTopologySpread.events_to_register`
hands them to the scheduling queue.
"""

from __future__ import annotations

from typing import Any, ClassVar

from app.api.objects import Node, Pod, parse_topology_spread_constraint
from app.api.validation import raise_errors
from app.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    as_nodes,
    as_pods,
    queueing_hints_enabled,
)
from app.framework.interfaces import EnqueueExtensions, Handle
from app.plugins.podtopologyspread.args import SYSTEM_DEFAULTING, PodTopologySpreadArgs
from app.plugins.podtopologyspread.common import (
    HONOR,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SpreadConstraint,
    node_labels_match_spread_constraints,
    pod_labels_match_spread_constraints,
)
from app.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    Filtering,
)
from app.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY, Scoring

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "QUEUE",
    "QUEUE_SKIP",
    "PodTopologySpread",
]

#: ``fwk.Queue`` / ``fwk.QueueSkip``.
QUEUE = "Queue"
QUEUE_SKIP = "QueueSkip"


def _hint(answer: str) -> QueueingHint:
    return QueueingHint.QUEUE if answer == QUEUE else QueueingHint.QUEUE_SKIP


def _involved_in_topology_spreading(incoming: Pod, pod_with_spreading: Pod) -> bool:
    """``involvedInTopologySpreading``: the pod itself, or an assigned/nominated pod of its namespace."""
    if incoming.uid == pod_with_spreading.uid:
        return True
    if not incoming.node_name and not incoming.nominated_node_name:
        return False
    return incoming.namespace == pod_with_spreading.namespace


def _has_constraint_with_node_taints_policy_honor(constraints: list[SpreadConstraint]) -> bool:
    return any(c.node_taints_policy == HONOR for c in constraints)


def _check_topology_key_labels_changed(
    original: dict[str, str], modified: dict[str, str], constraints: list[SpreadConstraint]
) -> bool:
    return any(original.get(c.topology_key, "") != modified.get(c.topology_key, "") for c in constraints)


class PodTopologySpread(Filtering, Scoring, EnqueueExtensions):
    """Spreads pods over topology domains (``topologySpreadConstraints`` and cluster defaults)."""

    name: ClassVar[str] = NAME
    args_type: ClassVar[Any] = PodTopologySpreadArgs
    normalizes: ClassVar[bool] = True

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        if args is None:
            args = PodTopologySpreadArgs()
        self.args = args
        raise_errors(args.validate(""))
        if args.defaulting_type == SYSTEM_DEFAULTING:
            self.default_constraints = SYSTEM_DEFAULT_CONSTRAINTS
            self.system_defaulted = True
        else:
            self.default_constraints = tuple(
                parse_topology_spread_constraint(c, f"defaultConstraints[{i}]")
                for i, c in enumerate(args.default_constraints)
            )

    # --- queueing hints (``isSchedulableAfterPodChange`` / ``isSchedulableAfterNodeChange``) -------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pods added, relabelled, deleted or (the pod itself) given a toleration; nodes added,
        deleted, relabelled or retainted."""
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        if queueing_hints_enabled():  # without hints any update of the pod itself retries it
            pod_actions |= ActionType.UPDATE_POD_TOLERATION
        node_actions = (
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(ClusterEvent(POD, pod_actions), self._pod_hint),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions), self._node_hint),
        ]

    def _pod_hint(self, pod: Pod, old: object, new: object) -> QueueingHint:
        original, modified = as_pods(old, new)
        return _hint(self.is_schedulable_after_pod_change(pod, original, modified))

    def _node_hint(self, pod: Pod, old: object, new: object) -> QueueingHint:
        original, modified = as_nodes(old, new)
        return _hint(self.is_schedulable_after_node_change(pod, original, modified))

    def is_schedulable_after_pod_change(self, pod: Pod, old_pod: Pod | None, new_pod: Pod | None) -> str:
        """Whether an added/updated/deleted pod may make ``pod`` (rejected by this plugin) schedulable."""
        if (new_pod is not None and not _involved_in_topology_spreading(new_pod, pod)) or (
            old_pod is not None and not _involved_in_topology_spreading(old_pod, pod)
        ):
            return QUEUE_SKIP
        constraints = self.get_constraints(pod)
        if new_pod is not None and old_pod is not None:
            if (
                pod.uid == new_pod.uid
                and new_pod.tolerations != old_pod.tolerations
                and _has_constraint_with_node_taints_policy_honor(constraints)
            ):
                # A new toleration may admit a tainted node into the spreading.
                return QUEUE
            if new_pod.labels == old_pod.labels:
                return QUEUE_SKIP
            for c in constraints:
                if c.matches_pod(old_pod.labels) != c.matches_pod(new_pod.labels):
                    return QUEUE
            return QUEUE_SKIP
        if new_pod is not None:
            return QUEUE if pod_labels_match_spread_constraints(constraints, new_pod.labels) else QUEUE_SKIP
        assert old_pod is not None
        return QUEUE if pod_labels_match_spread_constraints(constraints, old_pod.labels) else QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old_node: Node | None, new_node: Node | None) -> str:
        """Whether an added/updated/deleted node may make ``pod`` schedulable (its topology keys matter)."""
        constraints = self.get_constraints(pod)
        old_matching = old_node is not None and node_labels_match_spread_constraints(
            old_node.labels, constraints
        )
        new_matching = new_node is not None and node_labels_match_spread_constraints(
            new_node.labels, constraints
        )
        if old_node is not None and new_node is not None:
            if old_matching != new_matching:
                return QUEUE
            if new_matching and (
                _check_topology_key_labels_changed(old_node.labels, new_node.labels, constraints)
                or old_node.taints != new_node.taints
            ):
                return QUEUE
            return QUEUE_SKIP
        if new_node is not None:
            return QUEUE if new_matching else QUEUE_SKIP
        return QUEUE if old_matching else QUEUE_SKIP
