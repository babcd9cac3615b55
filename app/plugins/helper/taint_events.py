"""The events of the plugins that reject nodes by taint (NodeUnschedulable, TaintToleration)."""

from __future__ import annotations

from app.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHintFn


def taint_events(node_hint: QueueingHintFn, toleration_hint: QueueingHintFn) -> list[ClusterEventWithHint]:
    """A node added or its taints (or ``spec.unschedulable``) changed; the pod given a toleration."""
    return [
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), node_hint),
        ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), toleration_hint),
    ]
