"""PodTopologySpread: queueing hints (plugins/podtopologyspread/plugin_test.go, v1.36.3),
helper.DefaultSelector (plugins/helper/spread_test.go) and the plugin's wiring.

berth's queue does not consult queueing hints yet; the hint functions are ported with the plugin and
tested here so they are ready when it does. The hint tables are the Go ones, translated literally.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.config import load_config
from app.framework.cycle_state import CycleState
from app.framework.status import Code
from app.framework.types import NodeInfo, PodInfo
from app.plugins.podtopologyspread.args import PodTopologySpreadArgs
from app.plugins.podtopologyspread.common import default_selector
from app.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY
from app.plugins.podtopologyspread.plugin import PodTopologySpread
from app.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY, go_round
from app.plugins.registry import in_tree_registry
from fakes import FakeHandle, FakeObjects
from plugins.podtopologyspread_helpers import (
    barSelector,
    fooSelector,
    ptr_To,
    st_MakeNode,
    st_MakePod,
)

# Test_isSchedulableAfterNodeChange (plugin_test.go)
NODE_CHANGE_CASES: list[dict[str, Any]] = [
    {
        "name": "node updates label which matches topologyKey",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("zone", "zone2").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "node that doesn't match topologySpreadConstraints updates non-related label",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode().Name("node-a").Label("foo", "bar1").Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("foo", "bar2").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "node that match topologySpreadConstraints adds non-related label",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Label("foo", "bar")
        .Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "create node with non-related labels",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("foo", "bar").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "create node with related labels",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "delete node with non-related labels",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode().Name("node-a").Label("foo", "bar").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "delete node with related labels",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "add node with related labels that only match one of topologySpreadConstraints",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "add node with related labels that match all topologySpreadConstraints",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "update node with related labels that only match one of topologySpreadConstraints",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "update node with related labels that match all topologySpreadConstraints",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        "newNode": st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node2").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "update node with different taints that match all topologySpreadConstraints",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Taints([{"Key": "aaa", "Value": "bbb", "Effect": "NoSchedule"}])
        .Obj(),
        "newNode": st_MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Taints([{"Key": "ccc", "Value": "bbb", "Effect": "NoSchedule"}])
        .Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "update node with different taints that only match one of topologySpreadConstraints",
        "pod": st_MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldNode": st_MakeNode()
        .Name("node-a")
        .Label("node", "node1")
        .Taints([{"Key": "aaa", "Value": "bbb", "Effect": "NoSchedule"}])
        .Obj(),
        "newNode": st_MakeNode()
        .Name("node-a")
        .Label("node", "node1")
        .Taints([{"Key": "ccc", "Value": "bbb", "Effect": "NoSchedule"}])
        .Obj(),
        "expectedHint": "QueueSkip",
    },
]

# Test_isSchedulableAfterPodChange (plugin_test.go)
POD_CHANGE_CASES: list[dict[str, Any]] = [
    {
        "name": "add pod with labels match topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "add un-scheduled pod",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newPod": st_MakePod().UID("p2").Label("foo", "").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "update un-scheduled pod",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newPod": st_MakePod().UID("p2").Label("foo", "").Obj(),
        "oldPod": st_MakePod().UID("p2").Label("bar", "").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "delete un-scheduled pod",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Label("foo", "").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "add pod with different namespace",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Namespace("fake-namespace").Label("foo", "").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "add pod with labels don't match topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("bar", "").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "delete pod with labels that match topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "delete nominated pod with labels that don't match topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").NominatedNodeName("fake-node").Label("bar", "").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "delete nominated pod with labels that match topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").NominatedNodeName("fake-node").Label("foo", "").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "delete pod with labels that don't match topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("bar", "").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "update pod's non-related label",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar1").Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "add pod's label that matches topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "delete pod label that matches topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "change pod's label that matches topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "foo1").Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "foo2").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "change pod's label that doesn't match topologySpreadConstraints selector",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar1").Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("baz", "").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "").Obj(),
        "newPod": st_MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new toleration",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, ptr_To("Honor"), None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        "newPod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .Obj(),
        "expectedHint": "Queue",
        "enableNodeInclusionPolicyInPodTopologySpread": True,
    },
    {
        "name": "the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new toleration",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, ptr_To("Ignore"), None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        "newPod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .Obj(),
        "expectedHint": "QueueSkip",
    },
    {
        "name": "the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector of the constraint",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, ptr_To("Ignore"), None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p").Name("p").Obj(),
        "newPod": st_MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        "expectedHint": "Queue",
    },
    {
        "name": "the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        "pod": st_MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, ptr_To("Ignore"), None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "oldPod": st_MakePod().UID("p").Name("p").Obj(),
        "newPod": st_MakePod().UID("p").Name("p").Label("unrelated", "").Obj(),
        "expectedHint": "QueueSkip",
    },
]


def _ids(cases: list[dict[str, Any]]) -> list[Any]:
    return [pytest.param(c, id=c["name"]) for c in cases]


def _plugin(node_inclusion: bool = False) -> PodTopologySpread:
    p = PodTopologySpread(PodTopologySpreadArgs([], "List"), FakeHandle())
    p.enable_node_inclusion_policy = node_inclusion
    p.enable_match_label_keys = False
    return p


@pytest.mark.parametrize("tc", _ids(NODE_CHANGE_CASES))
def test_is_schedulable_after_node_change(tc: dict[str, Any]) -> None:
    got = _plugin().is_schedulable_after_node_change(tc["pod"], tc.get("oldNode"), tc.get("newNode"))
    assert got == tc["expectedHint"]


@pytest.mark.parametrize("tc", _ids(POD_CHANGE_CASES))
def test_is_schedulable_after_pod_change(tc: dict[str, Any]) -> None:
    p = _plugin(tc.get("enableNodeInclusionPolicyInPodTopologySpread", False))
    got = p.is_schedulable_after_pod_change(tc["pod"], tc.get("oldPod"), tc.get("newPod"))
    assert got == tc["expectedHint"]


# --- helper.DefaultSelector (plugins/helper/spread_test.go: TestGetPodServices, TestDefaultSelector) ---


def _service(name: str, namespace: str, selector: dict[str, str] | None) -> dict[str, Any]:
    spec = {} if selector is None else {"selector": selector}
    return {"kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


@pytest.mark.parametrize(
    ("i", "want"), [(0, {"app": "test-0"}), (1, {"app": "test-1"}), (2, {"app": "test-2"}), (3, {}), (4, {})]
)
def test_get_pod_services(i: int, want: dict[str, str]) -> None:
    """Only the Services whose selector matches the pod contribute (GetPodServices)."""
    services = [_service(f"service-{j}", "test", {"app": f"test-{j}"}) for j in range(3)]
    pod = (
        st_MakePod()
        .Name(f"test-pod-{i}")
        .Namespace("test")
        .Label("app", f"test-{i}")
        .Label("label", f"label-{i}")
        .Obj()
    )
    sel = default_selector(pod, FakeObjects({"Service": services}))
    assert {r.key: next(iter(r.values)) for r in sel.requirements} == want


def _default_selector_objects() -> dict[str, list[dict[str, Any]]]:
    meta = {"namespace": "test"}
    return {
        "Service": [_service("test-service", "test", {"podLabelKey": "podLabelVal"})],
        "ReplicaSet": [
            {
                "kind": "ReplicaSet",
                "metadata": {**meta, "name": "test-replicaset"},
                "spec": {"selector": {"matchLabels": {"replicaSetLabelKey": "replicaSetLabelVal"}}},
            }
        ],
        "ReplicationController": [
            {
                "kind": "ReplicationController",
                "metadata": {**meta, "name": "test-replicationcontroller"},
                "spec": {"selector": {"replicationLabelKey": "replicationLabelVal"}},
            }
        ],
        "StatefulSet": [
            {
                "kind": "StatefulSet",
                "metadata": {**meta, "name": "test-statefulset"},
                "spec": {"selector": {"matchLabels": {"statefulSetLabelKey": "statefulSetLabelVal"}}},
            }
        ],
    }


@pytest.mark.parametrize(
    ("name", "owner", "kinds", "want"),
    [
        ("default case", None, [], {}),
        ("no OwnerReference pod case", None, ["Service"], {"podLabelKey": "podLabelVal"}),
        (
            "ReplicaSet OwnerReference pod case",
            ("test-replicaset", ("apps/v1", "ReplicaSet")),
            ["Service", "ReplicaSet"],
            {"podLabelKey": "podLabelVal", "replicaSetLabelKey": "replicaSetLabelVal"},
        ),
        (
            "ReplicationController OwnerReference pod case",
            ("test-replicationcontroller", ("v1", "ReplicationController")),
            ["Service", "ReplicationController"],
            {"podLabelKey": "podLabelVal", "replicationLabelKey": "replicationLabelVal"},
        ),
        (
            "StatefulSet OwnerReference pod case",
            ("test-statefulset", ("apps/v1", "StatefulSet")),
            ["Service", "StatefulSet"],
            {"podLabelKey": "podLabelVal", "statefulSetLabelKey": "statefulSetLabelVal"},
        ),
        # Not a supported controller kind (a Deployment does not own pods directly), or a wrong group.
        ("unsupported owner", ("test-statefulset", ("apps/v1", "Deployment")), ["StatefulSet"], {}),
        ("wrong group", ("test-statefulset", ("v1", "StatefulSet")), ["StatefulSet"], {}),
    ],
)
def test_default_selector(name: str, owner: Any, kinds: list[str], want: dict[str, str]) -> None:
    builder = st_MakePod().Name("test-pod").Namespace("test").Label("podLabelKey", "podLabelVal")
    if owner is not None:
        builder = builder.OwnerReference(*owner)
    objects = {k: v for k, v in _default_selector_objects().items() if k in kinds}
    sel = default_selector(builder.Obj(), FakeObjects(objects))
    assert {r.key: next(iter(r.values)) for r in sel.requirements} == want


def test_default_selector_ignores_nil_service_selectors_and_other_namespaces() -> None:
    pod = st_MakePod().Name("p").Namespace("test").Label("a", "1").Obj()
    objects = FakeObjects(
        {"Service": [_service("nil", "test", None), _service("other", "elsewhere", {"a": "1"})]}
    )
    assert default_selector(pod, objects).empty


# --- plugin wiring ------------------------------------------------------------------------------------


def test_registered_at_kube_scheduler_position_with_weight_2() -> None:
    cfg = load_config(None, in_tree_registry())
    enabled = [(p.name, p.weight) for p in cfg.profiles[0].plugins.multi_point.enabled]
    names = [n for n, _ in enabled]
    # kube-scheduler's order: NodeResourcesFit, the four volume plugins, then PodTopologySpread.
    assert names.index("PodTopologySpread") == names.index("VolumeZone") + 1
    assert dict(enabled)["PodTopologySpread"] == 2


def test_system_defaults_are_soft_only() -> None:
    """System defaulting: PreFilter skips (no DoNotSchedule default); PreScore uses both soft defaults."""
    objs = FakeObjects(
        {
            "StatefulSet": [
                {
                    "kind": "StatefulSet",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"selector": {"matchLabels": {"app": "web"}}},
                }
            ]
        }
    )
    node = st_MakeNode().Name("n").Label("kubernetes.io/hostname", "n").Obj()
    h = FakeHandle([NodeInfo(node)], objects=objs)
    p = PodTopologySpread(PodTopologySpreadArgs([], "System"), h)
    pod = (
        st_MakePod().Name("web-0").Label("app", "web").OwnerReference("web", ("apps/v1", "StatefulSet")).Obj()
    )
    _, s = p.pre_filter(CycleState(), pod, h.snapshot.list())
    assert s is not None and s.is_skip()
    cs = CycleState()
    assert p.pre_score(cs, pod, h.snapshot.list()) is None
    state = cs.read(PRE_SCORE_STATE_KEY)
    assert [(c.max_skew, c.topology_key) for c in state.constraints] == [
        (3, "kubernetes.io/hostname"),
        (5, "topology.kubernetes.io/zone"),
    ]
    # The zone-less node is not ignored under system defaults (requireAllTopologies is false).
    assert state.ignored_nodes == set()


def test_list_defaulting_parses_default_constraints() -> None:
    args = PodTopologySpreadArgs(
        [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2}], "List"
    )
    p = PodTopologySpread(args, FakeHandle())
    assert not p.system_defaulted
    assert [(c.max_skew, c.topology_key, c.min_domains) for c in p.default_constraints] == [(1, "zone", 2)]


def test_pre_filter_state_clone_is_independent() -> None:
    """AddPod on a clone (nominated pods, preemption dry runs) must leave the original untouched."""
    nodes = [st_MakeNode().Name(n).Label("zone", z).Obj() for n, z in (("a", "z1"), ("b", "z2"))]
    h = FakeHandle([NodeInfo(n) for n in nodes])
    p = PodTopologySpread(PodTopologySpreadArgs([], "List"), h)
    pod = (
        st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj()
    )
    cs = CycleState()
    assert p.pre_filter(cs, pod, h.snapshot.list()) == (None, None)
    clone = cs.clone()
    node_a = h.snapshot.get("a")
    assert node_a is not None
    added = st_MakePod().Name("x").Node("a").Label("foo", "").Obj()
    assert p.add_pod(clone, pod, PodInfo(added), node_a) is None
    assert p.filter(clone, pod, node_a) is not None  # skew 2 on the clone
    assert p.filter(cs, pod, node_a) is None
    assert cs.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [{"z1": 0, "z2": 0}]
    assert clone.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [{"z1": 1, "z2": 0}]
    assert p.remove_pod(clone, pod, PodInfo(added), node_a) is None
    assert p.filter(clone, pod, node_a) is None


def test_extensions_and_filter_need_pre_filter_state() -> None:
    p = PodTopologySpread(PodTopologySpreadArgs([], "List"), FakeHandle())
    pod = st_MakePod().Name("p").Obj()
    info = NodeInfo(st_MakeNode().Name("n").Obj())
    want = f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
    for status in (
        p.add_pod(CycleState(), pod, PodInfo(pod), info),
        p.remove_pod(CycleState(), pod, PodInfo(pod), info),
    ):
        assert status is not None and status.code is Code.ERROR and status.message() == want


@pytest.mark.parametrize(
    ("x", "want"), [(0.5, 1), (1.5, 2), (2.5, 3), (2.4999, 2), (0.49999999999999994, 0), (7.0, 7)]
)
def test_go_round_is_half_away_from_zero(x: float, want: int) -> None:
    assert go_round(x) == want
