"""What an informer update amounts to: kube-scheduler v1.36.3 framework/events_test.go
(TestNodeSchedulingPropertiesChange, the extract* tables, Test_podSchedulingPropertiesChange)."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.objects import Node, Pod, parse_node, parse_pod
from app.backend.queue.events import (
    node_scheduling_properties_change,
    node_update_action,
    pod_scheduling_properties_change,
)
from app.framework.events import NODE, UNSCHEDULED_POD, ActionType
from builders import node_dict, pod_dict

A = ActionType
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def node(
    labels: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    conditions: list[dict[str, str]] | None = None,
    **spec: Any,
) -> Node:
    raw = node_dict("n", allocatable, labels, **spec)
    if annotations:
        raw["metadata"]["annotations"] = annotations
    if conditions is not None:
        raw["status"]["conditions"] = conditions
    return parse_node(raw)


NODE_CASES: list[tuple[str, Node, Node, list[ActionType]]] = [
    ("no specific changed applied", node(unschedulable=False), node(unschedulable=False), []),
    (
        "only node spec unavailable changed",
        node(unschedulable=False),
        node(unschedulable=True),
        [A.UPDATE_NODE_TAINT],
    ),
    ("cordoning is no event", node(unschedulable=True), node(unschedulable=False), []),
    (
        "only node allocatable changed",
        node(allocatable={"cpu": "1000m", "memory": "100m", "example.com/foo": "1"}),
        node(allocatable={"cpu": "1000m", "memory": "100m", "example.com/foo": "2"}),
        [A.UPDATE_NODE_ALLOCATABLE],
    ),
    (
        "the same allocatable spelled differently is no change",
        node(allocatable={"cpu": "1", "memory": "1Gi"}),
        node(allocatable={"cpu": "1000m", "memory": "1073741824"}),
        [],
    ),
    (
        "only node label changed",
        node(labels={"foo": "bar"}),
        node(labels={"foo": "fuz"}),
        [A.UPDATE_NODE_LABEL],
    ),
    (
        "only node taint changed",
        node(taints=[{**UNSCHEDULABLE_TAINT, "value": ""}]),
        node(taints=[{**UNSCHEDULABLE_TAINT, "value": "foo"}]),
        [A.UPDATE_NODE_TAINT],
    ),
    (
        "only node annotation changed",
        node(annotations={"foo": "bar"}),
        node(annotations={"foo": "fuz"}),
        [A.UPDATE_NODE_ANNOTATION],
    ),
    (
        "only node condition changed",
        node(),
        node(conditions=[{"type": "Ready", "status": "True", "reason": "Ready"}]),
        [A.UPDATE_NODE_CONDITION],
    ),
    (
        "only LastHeartbeatTime changed",
        node(
            conditions=[
                {"type": "DiskPressure", "status": "True", "lastHeartbeatTime": "2024-01-01T00:00:01Z"}
            ]
        ),
        node(
            conditions=[
                {"type": "DiskPressure", "status": "True", "lastHeartbeatTime": "2024-01-01T00:00:02Z"}
            ]
        ),
        [],
    ),
    (
        "both node label and node taint changed",
        node(labels={"foo": "bar"}, taints=[{**UNSCHEDULABLE_TAINT, "value": ""}]),
        node(taints=[{**UNSCHEDULABLE_TAINT, "value": "foo"}]),
        [A.UPDATE_NODE_LABEL, A.UPDATE_NODE_TAINT],
    ),
]


@pytest.mark.parametrize(("name", "new", "old", "want"), NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_node_scheduling_properties_change(name: str, new: Node, old: Node, want: list[ActionType]) -> None:
    events = node_scheduling_properties_change(new, old)
    assert [e.action_type for e in events] == want
    assert all(e.resource == NODE for e in events)
    combined = A.NONE
    for action in want:
        combined |= action
    assert node_update_action(new, old) == combined


def pod(**spec: Any) -> Pod:
    status = spec.pop("status", None)
    raw = pod_dict("p", **spec)
    if status is not None:
        raw["status"] = status
    return parse_pod(raw)


TOLERATION = {"key": "foo", "operator": "Exists"}
POD_CASES: list[tuple[str, Pod, Pod, list[ActionType]]] = [
    ("only label is updated", pod(labels={"foo": "bar"}), pod(labels={"foo": "baz"}), [A.UPDATE_POD_LABEL]),
    (
        "pod's resource request is scaled down",
        pod(requests=[{"cpu": "100m"}]),
        pod(requests=[{"cpu": "200m"}]),
        [A.UPDATE_POD_SCALE_DOWN],
    ),
    (
        "pod's resource request is scaled up",
        pod(requests=[{"cpu": "200m"}]),
        pod(requests=[{"cpu": "100m"}]),
        [A.UPDATE],
    ),
    (
        "a request is removed",
        pod(requests=[{}]),
        pod(requests=[{"memory": "1Gi"}]),
        [A.UPDATE_POD_SCALE_DOWN],
    ),
    (
        "both pod's resource request and label are updated",
        pod(labels={"foo": "bar"}, requests=[{"cpu": "100m"}]),
        pod(labels={"foo": "baz"}, requests=[{"cpu": "200m"}]),
        [A.UPDATE_POD_LABEL, A.UPDATE_POD_SCALE_DOWN],
    ),
    (
        "untracked properties of pod is updated",
        pod(priorityClassName="a"),
        pod(priorityClassName="b"),
        [A.UPDATE],
    ),
    (
        "scheduling gate is eliminated",
        pod(),
        pod(schedulingGates=[{"name": "foo"}]),
        [A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED],
    ),
    (
        "one of scheduling gates is eliminated",
        pod(schedulingGates=[{"name": "a"}]),
        pod(schedulingGates=[{"name": "a"}, {"name": "b"}]),
        [A.UPDATE],
    ),
    ("pod's tolerations are updated", pod(tolerations=[TOLERATION]), pod(), [A.UPDATE_POD_TOLERATION]),
    (
        "the pod's generated resource claims changed",
        pod(status={"resourceClaimStatuses": [{"name": "my-claim", "resourceClaimName": "claim"}]}),
        pod(),
        [A.UPDATE_POD_GENERATED_RESOURCE_CLAIM],
    ),
]


@pytest.mark.parametrize(("name", "new", "old", "want"), POD_CASES, ids=[c[0] for c in POD_CASES])
def test_pod_scheduling_properties_change(name: str, new: Pod, old: Pod, want: list[ActionType]) -> None:
    events = pod_scheduling_properties_change(new, old)
    assert [e.action_type for e in events] == want
    assert {e.resource for e in events} == {UNSCHEDULED_POD}


def test_pod_update_of_an_assigned_pod_is_an_assigned_pod_event() -> None:
    old, new = pod(nodeName="n", labels={"a": "1"}), pod(nodeName="n", labels={"a": "2"})
    assert [e.label for e in pod_scheduling_properties_change(new, old)] == ["AssignedPodUpdatePodLabel"]
