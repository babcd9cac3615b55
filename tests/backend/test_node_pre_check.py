"""The hints-off node pre-check, ported from kube-scheduler v1.36.3 eventhandlers_test.go:
TestPreCheckForNode (which unschedulable pods a Node/Add or Node/Update may move) and
TestAdmissionCheck (the failures, first or all)."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.objects import Pod, parse_node, parse_pod
from app.backend.queue.node_pre_check import AdmissionResult, admission_check, pre_check_for_node
from app.framework.types import NodeInfo
from app.plugins.noderesources.fit import InsufficientResource
from builders import pod_dict

NODE_AFFINITY_ERROR = AdmissionResult("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
NODE_NAME_ERROR = AdmissionResult("NodeName", "node(s) didn't match the requested node name")
NODE_PORTS_ERROR = AdmissionResult("NodePorts", "node(s) didn't have free ports for the requested pod ports")


def node(
    capacity: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """``st.MakeNode().Name("fake-node")``: capacity and allocatable of 32 pods plus ``capacity``."""
    resources = {"pods": "32", **(capacity or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "fake-node", "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {"capacity": resources, "allocatable": resources},
    }


def pod(
    name: str,
    *requests: dict[str, str],
    host_port: int | None = None,
    node_name: str = "",
    affinity: tuple[str, str] | None = None,
    tolerations: tuple[str, ...] = (),
    **spec: Any,
) -> Pod:
    """A pod as ``st.MakePod()`` builds it: one container per request (``Req``) and one more for
    ``HostPort``, ``NodeAffinityIn``/``NodeAffinityNotIn`` on the ``hostname`` label, and
    ``Toleration(key)`` (operator Exists, any effect)."""
    raw = pod_dict(name, requests=list(requests) or None, **spec)
    containers = raw["spec"]["containers"] if requests else []
    if host_port is not None:
        containers.append({"name": "container", "image": "pause", "ports": [{"hostPort": host_port}]})
    raw["spec"]["containers"] = containers or [{"name": "c", "image": "pause"}]
    if node_name:
        raw["spec"]["nodeName"] = node_name
    if affinity is not None:
        operator, value = affinity
        expression = {"key": "hostname", "operator": operator, "values": [value]}
        raw["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expression]}]
                }
            }
        }
    if tolerations:
        raw["spec"]["tolerations"] = [{"key": key, "operator": "Exists"} for key in tolerations]
    return parse_pod(raw)


def node_info(node_raw: dict[str, Any], *existing: Pod) -> NodeInfo:
    info = NodeInfo(parse_node(node_raw))
    for p in existing:
        info.add_pod(p)
    return info


CPU4, CPU8, CPU16 = {"cpu": "4"}, {"cpu": "8"}, {"cpu": "16"}
REGULAR = node(CPU8, {"hostname": "fake-node"})
ON_PORT_80 = (pod("p", host_port=80),)
TAINTED = node(taints=[{"key": "foo", "effect": "NoSchedule"}, {"key": "bar", "effect": "PreferNoSchedule"}])
TAINTED_WITH_CPU = node(
    CPU8,
    {"hostname": "fake-node"},
    [{"key": "foo", "effect": "NoSchedule"}, {"key": "bar", "effect": "PreferNoSchedule"}],
)
NO_EXECUTE = node(
    CPU8,
    {"hostname": "fake-node"},
    [{"key": "foo", "effect": "PreferNoSchedule"}, {"key": "baz", "effect": "NoExecute"}],
)
SINGLE_CONSTRAINTS = [
    pod("p1", CPU4),
    pod("p2", CPU16),
    pod("p3", CPU4, CPU8),
    pod("p4", affinity=("In", "fake-node")),
    pod("p5", affinity=("NotIn", "fake-node")),
    pod("p6"),
    pod("p7", node_name="invalid-node"),
    pod("p8", host_port=8080),
    pod("p9", host_port=80),
]

PRE_CHECK_CASES = [
    pytest.param(
        REGULAR,
        ON_PORT_80,
        SINGLE_CONSTRAINTS,
        False,
        [True, False, False, True, False, True, False, True, False],
        id="regular node, pods with a single constraint",
    ),
    pytest.param(
        REGULAR,
        ON_PORT_80,
        SINGLE_CONSTRAINTS,
        True,
        [True] * 9,
        id="no filtering when QHint is enabled",
    ),
    pytest.param(
        TAINTED,
        (),
        [
            pod("p1"),
            pod("p2", tolerations=("foo",)),
            pod("p3", tolerations=("bar",)),
            pod("p4", tolerations=("bar", "foo")),
        ],
        False,
        [False, True, False, True],
        id="tainted node, pods with a single constraint",
    ),
    pytest.param(
        REGULAR,
        ON_PORT_80,
        [
            pod("p1", CPU4, affinity=("NotIn", "fake-node")),
            pod("p2", CPU16, affinity=("In", "fake-node")),
            pod("p3", CPU8, affinity=("In", "fake-node")),
            pod("p4", host_port=8080, node_name="invalid-node"),
            pod("p5", CPU4, affinity=("In", "fake-node"), host_port=80),
        ],
        False,
        [False, False, True, False, False],
        id="regular node, pods with multiple constraints",
    ),
    pytest.param(
        TAINTED_WITH_CPU,
        (),
        [
            pod("p1", CPU4, tolerations=("bar",)),
            pod("p2", CPU4, tolerations=("bar", "foo")),
            pod("p3", CPU16, tolerations=("foo",)),
            pod("p3", CPU16, tolerations=("bar",)),
        ],
        False,
        [False, True, False, False],
        id="tainted node, pods with multiple constraints",
    ),
    pytest.param(
        NO_EXECUTE,
        (),
        [
            pod("p1"),
            pod("p2"),
            pod("p3", tolerations=("foo",)),
            pod("p4", tolerations=("baz",)),
            pod("p5"),
            pod("p6", tolerations=("bar", "baz")),
        ],
        False,
        [False, False, False, True, False, True],
        id="tainted node with NoExecute effect, pods with tolerations",
    ),
]


@pytest.mark.parametrize(("node_raw", "existing", "pods", "hints", "want"), PRE_CHECK_CASES)
def test_pre_check_for_node(
    node_raw: dict[str, Any], existing: tuple[Pod, ...], pods: list[Pod], hints: bool, want: list[bool]
) -> None:
    check = pre_check_for_node(node_info(node_raw, *existing), hints)
    assert (check is None) is hints
    assert [check is None or check(p) for p in pods] == want


ADMISSION_CASES = [
    pytest.param(
        node(labels={"foo": "bar"}),
        (pod("pod1", host_port=80),),
        pod("pod2", host_port=80, nodeSelector={"foo": "bar1"}),
        [NODE_AFFINITY_ERROR, NODE_PORTS_ERROR],
        [NODE_AFFINITY_ERROR],
        id="check nodeAffinity and nodeports, nodeAffinity need fail quickly if includeAllFailures is false",
    ),
    pytest.param(
        node({"cpu": "8"}, {"foo": "bar"}),
        (pod("pod1", {"cpu": "7"}, node_name="fake-node"),),
        pod("pod2", {"cpu": "1"}, overhead={"cpu": "1"}, nodeSelector={"foo": "bar1"}),
        [
            AdmissionResult(
                insufficient_resource=InsufficientResource("cpu", "Insufficient cpu", 2000, 7000, 8000)
            ),
            NODE_AFFINITY_ERROR,
        ],
        [
            AdmissionResult(
                insufficient_resource=InsufficientResource("cpu", "Insufficient cpu", 2000, 7000, 8000)
            )
        ],
        id="check PodOverhead and nodeAffinity, PodOverhead need fail quickly if includeAllFailures is false",
    ),
    pytest.param(
        node(),
        (pod("pod1", host_port=80, node_name="fake-node"),),
        pod("pod2", host_port=80, node_name="fake-node1"),
        [NODE_NAME_ERROR, NODE_PORTS_ERROR],
        [NODE_NAME_ERROR],
        id="check nodename and nodeports, nodename need fail quickly if includeAllFailures is false",
    ),
    pytest.param(
        node(),
        (),
        pod("pod1", {"foo.com/bar": "1"}),
        [
            AdmissionResult(
                insufficient_resource=InsufficientResource(
                    "foo.com/bar", "Insufficient foo.com/bar", 1, 0, 0, True
                )
            )
        ],
        [
            AdmissionResult(
                insufficient_resource=InsufficientResource(
                    "foo.com/bar", "Insufficient foo.com/bar", 1, 0, 0, True
                )
            )
        ],
        id="check extended resource handling when node Allocatable doesn't have the resource",
    ),
]


@pytest.mark.parametrize(("node_raw", "existing", "incoming", "want_all", "want_first"), ADMISSION_CASES)
def test_admission_check(
    node_raw: dict[str, Any],
    existing: tuple[Pod, ...],
    incoming: Pod,
    want_all: list[AdmissionResult],
    want_first: list[AdmissionResult],
) -> None:
    info = node_info(node_raw, *existing)
    assert admission_check(incoming, info, True) == want_all
    assert admission_check(incoming, info, False) == want_first
