"""TaintToleration, ported from plugins/tainttoleration/taint_toleration_test.go (v1.36.3).

The Gt/Lt cases of the Go table that run with TaintTolerationComparisonOperators enabled are not
ported: the gate is alpha and off in v1.36 (and the pod parser rejects the operators then). The
gate-disabled case of TestTaintTolerationFilterWithFeatureGate is.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.objects import Node, Pod, Toleration, parse_node
from app.framework.cycle_state import CycleState
from app.framework.interfaces import PluginError
from app.framework.status import Code, Status, unresolvable
from app.framework.types import NodeInfo
from app.plugins.tainttoleration.taint_toleration import ERR_REASON_UNTOLERATED, TaintToleration
from builders import make_pod
from fakes import FakeHandle


def node_with_taints(name: str, taints: list[dict[str, str]]) -> Node:
    return parse_node({"metadata": {"name": name}, "spec": {"taints": taints}})


def pod_with_tolerations(tolerations: list[dict[str, str]]) -> Pod:
    return make_pod("pod1", tolerations=tolerations)


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, value: str = "", effect: str = "", operator: str = "") -> dict[str, Any]:
    t = {"key": key, "value": value, "effect": effect}
    if operator:
        t["operator"] = operator
    return t


PNS = "PreferNoSchedule"
UNTOLERATED = unresolvable(ERR_REASON_UNTOLERATED)


SCORE_CASES = [
    (
        "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
        [tol("foo", "bar", PNS, "Equal")],
        [("nodeA", [taint("foo", "bar", PNS)]), ("nodeB", [taint("foo", "blah", PNS)])],
        [100, 0],
    ),
    (
        "the nodes that all of their taints are tolerated by the pod, get the same score, "
        "no matter how many tolerable taints a node has",
        [tol("cpu-type", "arm64", PNS, "Equal"), tol("disk-type", "ssd", PNS, "Equal")],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", PNS)]),
            ("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]),
        ],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [tol("foo", "bar", PNS, "Equal")],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", PNS)]),
            ("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]),
        ],
        [100, 50, 0],
    ),
    (
        "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations priority",
        [tol("cpu-type", "arm64", "NoSchedule", "Equal"), tol("disk-type", "ssd", "NoSchedule", "Equal")],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", "NoSchedule")]),
            ("nodeC", [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]),
        ],
        [100, 100, 0],
    ),
    (
        "Default behaviour No taints and tolerations, lands on node with no taints",
        [],
        [("nodeA", []), ("nodeB", [taint("cpu-type", "arm64", PNS)])],
        [100, 0],
    ),
    # Not in the Go table: an effect-less toleration counts for PreferNoSchedule taints.
    (
        "toleration without effect tolerates PreferNoSchedule taints",
        [tol("foo", operator="Exists")],
        [("nodeA", [taint("foo", "x", PNS)]), ("nodeB", [taint("bar", "x", PNS)])],
        [100, 0],
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "nodes", "expected"), SCORE_CASES, ids=[c[0] for c in SCORE_CASES]
)
def test_taint_toleration_score(
    name: str,
    tolerations: list[dict[str, str]],
    nodes: list[tuple[str, list[dict[str, str]]]],
    expected: list[int],
) -> None:
    p = TaintToleration(None, FakeHandle())
    pod = pod_with_tolerations(tolerations)
    state = CycleState()
    infos = [NodeInfo(node_with_taints(n, t)) for n, t in nodes]
    assert p.pre_score(state, pod, infos) is None
    scores = [p.score(state, pod, ni) for ni in infos]
    assert p.normalize_score(state, pod, infos, scores) is None
    assert scores == expected


FILTER_CASES: list[tuple[str, list[dict[str, str]], list[dict[str, str]], Status | None]] = [
    (
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [],
        [taint("dedicated", "user1", "NoSchedule")],
        UNTOLERATED,
    ),
    (
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [tol("dedicated", "user1", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
        None,
    ),
    (
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        [tol("dedicated", "user2", "NoSchedule", "Equal")],
        [taint("dedicated", "user1", "NoSchedule")],
        UNTOLERATED,
    ),
    (
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints",
        [tol("foo", effect="NoSchedule", operator="Exists")],
        [taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
        [
            tol("dedicated", "user2", "NoSchedule", "Equal"),
            tol("foo", effect="NoSchedule", operator="Exists"),
        ],
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect "
        "doesn't match, can't be scheduled onto the node",
        [tol("foo", "bar", PNS, "Equal")],
        [taint("foo", "bar", "NoSchedule")],
        UNTOLERATED,
    ),
    (
        "The pod has a toleration that keys and values match the taint on the node, the effect of toleration "
        "is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
        [tol("foo", "bar", operator="Equal")],
        [taint("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "The pod has a toleration that key and value don't match the taint on the node, but the effect of "
        "taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        [tol("dedicated", "user2", "NoSchedule", "Equal")],
        [taint("dedicated", "user1", PNS)],
        None,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled",
        [],
        [taint("dedicated", "user1", PNS)],
        None,
    ),
    # Not in the Go table: NoExecute is enforced too, and only untolerated taints count.
    ("NoExecute taint untolerated", [], [taint("k", "v", "NoExecute")], UNTOLERATED),
    (
        "second taint untolerated",
        [tol("a", operator="Exists")],
        [taint("a", "1", "NoSchedule"), taint("b", "2", "NoExecute")],
        UNTOLERATED,
    ),
    (
        "empty key with Exists tolerates everything",
        [tol("", operator="Exists")],
        [taint("a", "1", "NoExecute")],
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "taints", "want"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_taint_toleration_filter(
    name: str, tolerations: list[dict[str, str]], taints: list[dict[str, str]], want: Status | None
) -> None:
    p = TaintToleration(None, FakeHandle())
    got = p.filter(
        CycleState(), pod_with_tolerations(tolerations), NodeInfo(node_with_taints("nodeA", taints))
    )
    assert got == want
    if got is not None:
        assert got.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_gt_toleration_does_not_tolerate_with_gate_disabled() -> None:
    # TestTaintTolerationFilterWithFeatureGate: "Pod with Gt toleration cannot be scheduled when feature
    # gate is disabled". The parser rejects Gt, so the toleration is set directly.
    pod = pod_with_tolerations([])
    pod.tolerations = [Toleration("node.kubernetes.io/sla", "Gt", "750", "NoSchedule")]
    node = node_with_taints("nodeA", [taint("node.kubernetes.io/sla", "950", "NoSchedule")])
    assert TaintToleration(None, FakeHandle()).filter(CycleState(), pod, NodeInfo(node)) == UNTOLERATED


def test_score_without_pre_score_is_an_error() -> None:
    with pytest.raises(PluginError):
        TaintToleration(None, FakeHandle()).score(
            CycleState(), make_pod("p"), NodeInfo(node_with_taints("n", []))
        )


def test_metadata() -> None:
    assert TaintToleration.name == "TaintToleration"
    assert TaintToleration.normalizes is True
