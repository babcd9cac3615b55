"""What an informer update means to the queue (``framework/events.go``), and the event constants.

An update is turned into the specific events it amounts to, so that only the hints of plugins
interested in that kind of change run: a node whose labels and taints changed gives
``Node/UpdateNodeLabel`` and ``Node/UpdateNodeTaint``; a node update that changed nothing the
scheduler looks at gives no event at all. A pod update with no specific change gives the generic
``Update``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.api.objects import Node, Pod
from app.api.quantity import milli_value_of
from app.api.resources import pod_requests
from app.framework.events import (
    ASSIGNED_POD,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_ASSIGNED_POD_UPDATE,
    EVENT_FORCE_ACTIVATE,
    EVENT_NODE_ADD,
    EVENT_NODE_DELETE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_DELETE,
    EVENT_UNSCHEDULED_POD_UPDATE,
    NODE,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
)

__all__ = [
    "EVENT_ASSIGNED_POD_ADD",
    "EVENT_ASSIGNED_POD_DELETE",
    "EVENT_ASSIGNED_POD_UPDATE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_NODE_ADD",
    "EVENT_NODE_DELETE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EVENT_UNSCHEDULED_POD_ADD",
    "EVENT_UNSCHEDULED_POD_DELETE",
    "EVENT_UNSCHEDULED_POD_UPDATE",
    "is_pod_updated",
    "node_scheduling_properties_change",
    "node_update_action",
    "pod_scheduling_properties_change",
]


def _section(obj: Node | Pod, name: str) -> Mapping[str, Any]:
    value = obj.raw.get(name)
    return value if isinstance(value, Mapping) else {}


# --- pods ------------------------------------------------------------------------------------


def _pod_scaled_down(new: Pod, old: Pod) -> bool:
    """A request of the old pod is gone or smaller (``extractPodScaleDown``)."""
    new_requests = pod_requests(new)
    for name, old_q in pod_requests(old).items():
        new_q = new_requests.get(name)
        if new_q is None or milli_value_of(old_q) > milli_value_of(new_q):
            return True
    return False


def _generated_claims_changed(new: Pod, old: Pod) -> bool:
    """``status.resourceClaimStatuses`` / ``extendedResourceClaimStatus`` differ (empty equals absent)."""
    new_status, old_status = _section(new, "status"), _section(old, "status")
    return any((new_status.get(k) or None) != (old_status.get(k) or None) for k in _CLAIM_STATUS_FIELDS)


_CLAIM_STATUS_FIELDS = ("resourceClaimStatuses", "extendedResourceClaimStatus")

_POD_CHANGES: tuple[tuple[Callable[[Pod, Pod], bool], ActionType], ...] = (
    (lambda new, old: new.labels != old.labels, ActionType.UPDATE_POD_LABEL),
    (_pod_scaled_down, ActionType.UPDATE_POD_SCALE_DOWN),
    (
        lambda new, old: not new.scheduling_gates and bool(old.scheduling_gates),
        ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    ),
    # The API only lets tolerations be added, so a different count is the change.
    (lambda new, old: len(new.tolerations) != len(old.tolerations), ActionType.UPDATE_POD_TOLERATION),
    (_generated_claims_changed, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
)


def pod_scheduling_properties_change(new: Pod, old: Pod) -> list[ClusterEvent]:
    """The events a pod update amounts to (``PodSchedulingPropertiesChange``).

    The resource is AssignedPod when the new pod has a node, UnschedulablePod otherwise; with no
    specific change the event is the generic Update.
    """
    resource = ASSIGNED_POD if new.node_name else UNSCHEDULED_POD
    events = [ClusterEvent(resource, action) for changed, action in _POD_CHANGES if changed(new, old)]
    return events or [ClusterEvent(resource, ActionType.UPDATE)]


_IGNORED_METADATA = ("resourceVersion", "generation", "managedFields", "finalizers")


def _without_noise(pod: Pod) -> dict[str, Any]:
    """The pod as ``isPodUpdated`` compares it: no resourceVersion, generation, managed fields,
    finalizers, and of the status only the generated claims' statuses."""
    stripped = dict(pod.raw)
    metadata = _section(pod, "metadata")
    stripped["metadata"] = {k: v for k, v in metadata.items() if k not in _IGNORED_METADATA}
    status = _section(pod, "status")
    stripped["status"] = {k: status[k] for k in _CLAIM_STATUS_FIELDS if status.get(k)}
    return stripped


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """``isPodUpdated``: the pod changed beyond its status and bookkeeping metadata (the queue's
    test, with SchedulerQueueingHints off, of whether an update may make the pod schedulable)."""
    return _without_noise(old) != _without_noise(new)


# --- nodes -----------------------------------------------------------------------------------


def _taints(node: Node) -> list[Any]:
    return _section(node, "spec").get("taints") or []


def _condition_statuses(node: Node) -> dict[Any, Any]:
    conditions = _section(node, "status").get("conditions") or []
    return {c.get("type"): c.get("status") for c in conditions if isinstance(c, Mapping)}


def _annotations(node: Node) -> Mapping[str, Any]:
    return _section(node, "metadata").get("annotations") or {}


def _declared_features(node: Node) -> list[Any]:
    return _section(node, "status").get("declaredFeatures") or []


_NODE_CHANGES: tuple[tuple[Callable[[Node, Node], bool], ActionType], ...] = (
    # Uncordoning counts as a taint change; cordoning is not an event (it helps no pod).
    (lambda new, old: old.unschedulable and not new.unschedulable, ActionType.UPDATE_NODE_TAINT),
    (lambda new, old: new.allocatable != old.allocatable, ActionType.UPDATE_NODE_ALLOCATABLE),
    (lambda new, old: new.labels != old.labels, ActionType.UPDATE_NODE_LABEL),
    (lambda new, old: _taints(new) != _taints(old), ActionType.UPDATE_NODE_TAINT),
    (lambda new, old: _condition_statuses(new) != _condition_statuses(old), ActionType.UPDATE_NODE_CONDITION),
    (lambda new, old: _annotations(new) != _annotations(old), ActionType.UPDATE_NODE_ANNOTATION),
    # NodeDeclaredFeatures is beta and on in v1.36.
    (
        lambda new, old: _declared_features(new) != _declared_features(old),
        ActionType.UPDATE_NODE_DECLARED_FEATURE,
    ),
)


def node_scheduling_properties_change(new: Node, old: Node) -> list[ClusterEvent]:
    """The events a node update amounts to, in kube's order (``NodeSchedulingPropertiesChange``).

    An uncordon together with a taint change gives UpdateNodeTaint twice, as in kube-scheduler.
    """
    return [ClusterEvent(NODE, action) for changed, action in _NODE_CHANGES if changed(new, old)]


def node_update_action(new: Node, old: Node) -> ActionType:
    """The node update's changes as one ActionType (NONE when nothing the scheduler uses changed)."""
    action = ActionType.NONE
    for event in node_scheduling_properties_change(new, old):
        action |= event.action_type
    return action
