"""The events of the plugins that reject nodes by taint (NodeUnschedulable, TaintToleration)."""

from __future__ import annotations

from app.framework.events import (
    NODE,
    NODE_ADD_TAINT_LABEL,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHintFn,
    queueing_hints_enabled,
)


def taint_events(node_hint: QueueingHintFn, toleration_hint: QueueingHintFn) -> list[ClusterEventWithHint]:
    """A node added or its taints (or ``spec.unschedulable``) changed; the pod given a toleration.
    Without QueueingHints: node labels too, and no pod event (an update of an unschedulable pod
    retries it anyway)."""
    if not queueing_hints_enabled():
        return [ClusterEventWithHint(ClusterEvent(NODE, NODE_ADD_TAINT_LABEL), node_hint)]
    return [
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), node_hint),
        ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), toleration_hint),
    ]
