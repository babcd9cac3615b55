"""NodeDeclaredFeatures (``plugins/nodedeclaredfeatures/nodedeclaredfeatures.go``, v1.36.3).

Rejects nodes that do not declare (``status.declaredFeatures``) every feature the pod needs.
Beta and on by default in v1.36 (gate ``NodeDeclaredFeatures``); with the gate off the plugin
stays in the profile and does nothing, as kube-scheduler's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from app import featuregates
from app.api.objects import Pod
from app.framework.cycle_state import CycleState, StateData
from app.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    as_nodes,
    as_pods,
)
from app.framework.interfaces import EnqueueExtensions, FilterPlugin, Handle, PreFilterPlugin, PreFilterResult
from app.framework.status import Status, error, skip, unresolvable
from app.framework.types import NodeInfo
from app.plugins.nodedeclaredfeatures.features import FeatureRegistry

NAME = "NodeDeclaredFeatures"
FEATURE_GATE = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"


class _PreFilterState(StateData):
    __slots__ = ("required",)

    def __init__(self, required: frozenset[str]) -> None:
        self.required = required


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    """Only nodes declaring every feature the pod needs fit."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any, handle: Handle, registry: FeatureRegistry | None = None) -> None:
        super().__init__(args, handle)
        self.enabled = featuregates.DEFAULT.enabled(FEATURE_GATE)
        self.registry = registry or FeatureRegistry()

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Skip pods needing no feature (nearly all); remember the others' requirements."""
        if not self.enabled:
            return None, skip()
        required = self.registry.infer_for_pod_scheduling(pod)
        if not required:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(required))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """UnschedulableAndUnresolvable when the node lacks a required feature."""
        if not self.enabled:
            return None
        data = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(data, _PreFilterState):
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found')
        node = node_info.node
        declared = node.declared_features if node is not None else frozenset()
        if not data.required <= declared:
            return unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or declaring other features; the pod's own requirements changing."""
        if not self.enabled:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE), self.is_schedulable_after_pod_update),
        ]

    def is_schedulable_after_pod_update(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the rejected pod's own feature requirements changed."""
        original, modified = as_pods(old, new)
        if modified is None or original is None or modified.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        infer = self.registry.infer_for_pod_scheduling
        return QueueingHint.QUEUE_SKIP if infer(original) == infer(modified) else QueueingHint.QUEUE

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new node, or a node whose declared features changed."""
        original, modified = as_nodes(old, new)
        if modified is None:
            return QueueingHint.QUEUE_SKIP
        if original is not None and _declared_list(original) == _declared_list(modified):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


def _declared_list(node: Any) -> list[Any]:
    """``status.declaredFeatures`` as listed (kube compares the slices, order included)."""
    status = node.raw.get("status") or {}
    return list(status.get("declaredFeatures") or [])
