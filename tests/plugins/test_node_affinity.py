"""NodeAffinity, ported from plugins/nodeaffinity/node_affinity_test.go (v1.36.3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from app.api.errors import FieldError
from app.api.objects import Node, Pod, parse_node
from app.framework.cycle_state import CycleState
from app.framework.interfaces import PluginError, PreFilterResult
from app.framework.status import Code, Status, skip, unresolvable
from app.framework.types import NodeInfo
from app.plugins.nodeaffinity.args import NodeAffinityArgs
from app.plugins.nodeaffinity.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
)
from builders import make_pod
from fakes import FakeHandle

NAME_FIELD = "metadata.name"


def node(name: str = "node", labels: dict[str, str] | None = None) -> Node:
    """A node with exactly ``labels`` (builders.make_node adds a hostname label)."""
    return parse_node({"metadata": {"name": name, "labels": labels or {}}})


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def term(
    exprs: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if fields is not None:
        t["matchFields"] = fields
    return t


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def affinity_pod(node_affinity: dict[str, Any] | None = None, **spec: Any) -> Pod:
    if node_affinity is not None:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return make_pod("p", **spec)


def plugin(added: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity(NodeAffinityArgs(added), FakeHandle())


@dataclass
class FilterCase:
    name: str
    pod: Pod
    labels: dict[str, str] | None = None
    node_name: str = "node"
    want_status: Status | None = None
    want_pre_filter_status: Status | None = None
    want_pre_filter_result: PreFilterResult | None = None
    added: dict[str, Any] | None = None
    run_pre_filter: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def _pod_reason() -> Status:
    return unresolvable(ERR_REASON_POD)


FILTER_CASES = [
    FilterCase("missing labels", make_pod("p", nodeSelector={"foo": "bar"}), want_status=_pod_reason()),
    FilterCase("same labels", make_pod("p", nodeSelector={"foo": "bar"}), labels={"foo": "bar"}),
    FilterCase(
        "node labels are superset",
        make_pod("p", nodeSelector={"foo": "bar"}),
        labels={"foo": "bar", "baz": "blah"},
    ),
    FilterCase(
        "node labels are subset",
        make_pod("p", nodeSelector={"foo": "bar", "baz": "blah"}),
        labels={"foo": "bar"},
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Pod with matchExpressions using In operator that matches the existing node",
        affinity_pod(required(term([req("foo", "In", "bar", "value2")]))),
        labels={"foo": "bar"},
    ),
    FilterCase(
        "Pod with matchExpressions using Gt operator that matches the existing node",
        affinity_pod(required(term([req("kernel-version", "Gt", "0204")]))),
        labels={"kernel-version": "0206"},
    ),
    FilterCase(
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        affinity_pod(required(term([req("mem-type", "NotIn", "DDR", "DDR2")]))),
        labels={"mem-type": "DDR3"},
    ),
    FilterCase(
        "Pod with matchExpressions using Exists operator that matches the existing node",
        affinity_pod(required(term([req("GPU", "Exists")]))),
        labels={"GPU": "NVIDIA-GRID-K1"},
    ),
    FilterCase(
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        affinity_pod(required(term([req("foo", "In", "value1", "value2")]))),
        labels={"foo": "bar"},
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
        affinity_pod(required(term([]))),
        labels={"foo": "bar"},
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Pod with no Affinity will schedule onto a node",
        make_pod("p"),
        labels={"foo": "bar"},
        want_pre_filter_status=skip(),
    ),
    FilterCase(
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        affinity_pod({"requiredDuringSchedulingIgnoredDuringExecution": None}),
        labels={"foo": "bar"},
        want_pre_filter_status=skip(),
    ),
    FilterCase(
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        affinity_pod(required(term([req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER")]))),
        labels={"GPU": "NVIDIA-GRID-K1"},
    ),
    FilterCase(
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        affinity_pod(required(term([req("GPU", "Exists"), req("GPU", "In", "AMD", "INTER")]))),
        labels={"GPU": "NVIDIA-GRID-K1"},
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
        affinity_pod(
            required(
                term([req("foo", "In", "bar", "value2")]), term([req("diffkey", "In", "wrong", "value2")])
            )
        ),
        labels={"foo": "bar"},
    ),
    FilterCase(
        "Pod with an Affinity and a PodSpec.NodeSelector both are satisfied, will schedule onto the node",
        affinity_pod(required(term([req("foo", "Exists")])), nodeSelector={"foo": "bar"}),
        labels={"foo": "bar"},
    ),
    FilterCase(
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied, won't schedule",
        affinity_pod(required(term([req("foo", "Exists")])), nodeSelector={"foo": "bar"}),
        labels={"foo": "barrrrrr"},
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        affinity_pod(required(term([req("foo", "NotIn", "invalid value: ___@#$%^")]))),
        labels={"foo": "bar"},
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Pod with matchFields using In operator that matches the existing node",
        affinity_pod(required(term(fields=[req(NAME_FIELD, "In", "node1")]))),
        node_name="node1",
        want_pre_filter_result=PreFilterResult({"node1"}),
    ),
    FilterCase(
        "Pod with matchFields using In operator that does not match the existing node",
        affinity_pod(required(term(fields=[req(NAME_FIELD, "In", "node1")]))),
        node_name="node2",
        want_status=_pod_reason(),
        want_pre_filter_result=PreFilterResult({"node1"}),
    ),
    FilterCase(
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        affinity_pod(
            required(
                term(fields=[req(NAME_FIELD, "In", "node1"), req(NAME_FIELD, "In", "node2")]),
                term([req("foo", "In", "bar")]),
            )
        ),
        node_name="node2",
        labels={"foo": "bar"},
    ),
    FilterCase(
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        affinity_pod(required(term([req("foo", "In", "bar")], [req(NAME_FIELD, "In", "node1")]))),
        node_name="node2",
        labels={"foo": "bar"},
        want_pre_filter_result=PreFilterResult({"node1"}),
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Pod with one term: both matchFields and matchExpressions match",
        affinity_pod(required(term([req("foo", "In", "bar")], [req(NAME_FIELD, "In", "node1")]))),
        node_name="node1",
        labels={"foo": "bar"},
        want_pre_filter_result=PreFilterResult({"node1"}),
    ),
    FilterCase(
        "Pod with two terms: both matchFields and matchExpressions do not match",
        affinity_pod(
            required(
                term(fields=[req(NAME_FIELD, "In", "node1")]), term([req("foo", "In", "not-match-to-bar")])
            )
        ),
        node_name="node2",
        labels={"foo": "bar"},
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Pod with two terms of node.Name affinity",
        affinity_pod(
            required(
                term(fields=[req(NAME_FIELD, "In", "node1")]), term(fields=[req(NAME_FIELD, "In", "node2")])
            )
        ),
        node_name="node2",
        want_pre_filter_result=PreFilterResult({"node1", "node2"}),
    ),
    FilterCase(
        "Pod with two conflicting mach field requirements",
        affinity_pod(required(term(fields=[req(NAME_FIELD, "In", "node1"), req(NAME_FIELD, "In", "node2")]))),
        node_name="node2",
        labels={"foo": "bar"},
        want_pre_filter_status=unresolvable(ERR_REASON_CONFLICT),
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Matches added affinity and Pod's node affinity",
        affinity_pod(required(term([req("zone", "In", "foo")]))),
        node_name="node2",
        labels={"zone": "foo"},
        added=required(term(fields=[req(NAME_FIELD, "In", "node2")])),
    ),
    FilterCase(
        "Matches added affinity but not Pod's node affinity",
        affinity_pod(required(term([req("zone", "In", "bar")]))),
        node_name="node2",
        labels={"zone": "foo"},
        added=required(term(fields=[req(NAME_FIELD, "In", "node2")])),
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Doesn't match added affinity",
        make_pod("p"),
        node_name="node2",
        labels={"zone": "foo"},
        added=required(term([req("zone", "In", "bar")])),
        want_status=unresolvable(ERR_REASON_ENFORCED),
    ),
    FilterCase(
        "Matches node selector correctly even if PreFilter is not called",
        make_pod("p", nodeSelector={"foo": "bar"}),
        labels={"foo": "bar", "baz": "blah"},
        run_pre_filter=False,
    ),
    FilterCase(
        "Matches node affinity correctly even if PreFilter is not called",
        affinity_pod(required(term([req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER")]))),
        labels={"GPU": "NVIDIA-GRID-K1"},
        run_pre_filter=False,
    ),
    # Not in the Go table: the negative counterparts of the two cases above.
    FilterCase(
        "Rejects on node selector even if PreFilter is not called",
        make_pod("p", nodeSelector={"foo": "bar"}),
        labels={"foo": "baz"},
        run_pre_filter=False,
        want_status=_pod_reason(),
    ),
    FilterCase(
        "Rejects on added affinity even if PreFilter is not called",
        make_pod("p"),
        labels={"zone": "foo"},
        added=required(term([req("zone", "In", "bar")])),
        run_pre_filter=False,
        want_status=unresolvable(ERR_REASON_ENFORCED),
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=lambda c: c.name)
def test_node_affinity_filter(case: FilterCase) -> None:
    p = plugin(case.added)
    state = CycleState()
    ni = NodeInfo(node(case.node_name, case.labels))
    if case.run_pre_filter:
        result, status = p.pre_filter(state, case.pod, [ni])
        assert status == case.want_pre_filter_status
        assert result == case.want_pre_filter_result
    assert p.filter(state, case.pod, ni) == case.want_status


def test_pre_filter_not_skipped_with_added_affinity_only() -> None:
    p = plugin(required(term([req("zone", "In", "bar")])))
    result, status = p.pre_filter(CycleState(), make_pod("p"), [])
    assert (result, status) == (None, None)


def test_pre_filter_matchfields_notin_does_not_narrow() -> None:
    p = plugin()
    pod = affinity_pod(required(term(fields=[req(NAME_FIELD, "NotIn", "node1")])))
    state = CycleState()
    assert p.pre_filter(state, pod, []) == (None, None)
    assert p.filter(state, pod, NodeInfo(node("node1"))) == _pod_reason()
    assert p.filter(state, pod, NodeInfo(node("node2"))) is None


def test_pre_filter_empty_terms_list_no_narrowing_and_no_match() -> None:
    p = plugin()
    pod = affinity_pod(required())
    state = CycleState()
    assert p.pre_filter(state, pod, []) == (None, None)
    assert p.filter(state, pod, NodeInfo(node("n", {"a": "b"}))) == _pod_reason()


def test_added_affinity_with_no_terms_rejects_every_node() -> None:
    # NewNodeSelector of an empty nodeSelectorTerms list matches nothing.
    p = plugin({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}})
    assert p.filter(CycleState(), make_pod("p"), NodeInfo(node("n"))) == unresolvable(ERR_REASON_ENFORCED)


def test_filter_codes() -> None:
    st = plugin().filter(CycleState(), make_pod("p", nodeSelector={"a": "b"}), NodeInfo(node("n")))
    assert st is not None and st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# --- Score (TestNodeAffinityPriority) ----------------------------------------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def pref(weight: int, *exprs: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": list(exprs)}}


AFFINITY1 = {"preferredDuringSchedulingIgnoredDuringExecution": [pref(2, req("foo", "In", "bar"))]}
AFFINITY2 = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        pref(2, req("foo", "In", "bar")),
        pref(4, req("key", "In", "value")),
        pref(5, req("foo", "In", "bar"), req("key", "In", "value"), req("az", "In", "az1")),
    ]
}

INVALID_KEY_MESSAGE = (
    '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric '
    "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
    "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    nodes: list[tuple[str, dict[str, str]]]
    expected: list[int] = field(default_factory=list)
    added: dict[str, Any] | None = None
    run_pre_score: bool = False
    want_pre_score_status: Status | None = None


SCORE_CASES = [
    ScoreCase(
        "all nodes are same priority as NodeAffinity is nil",
        make_pod("p"),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
    ),
    ScoreCase(
        "Skip is returned in PreScore when NodeAffinity is nil",
        make_pod("p"),
        [("node1", LABEL1)],
        run_pre_score=True,
        want_pre_score_status=skip(),
    ),
    ScoreCase(
        "PreScore returns error when an incoming Pod has a broken affinity",
        affinity_pod(
            {"preferredDuringSchedulingIgnoredDuringExecution": [pref(2, req("invalid key", "In", "bar"))]}
        ),
        [("node1", LABEL1)],
        run_pre_score=True,
        want_pre_score_status=Status(Code.ERROR, INVALID_KEY_MESSAGE),
    ),
    ScoreCase(
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
        affinity_pod(AFFINITY1),
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
        run_pre_score=True,
    ),
    ScoreCase(
        "only node1 matches the preferred scheduling requirements of pod",
        affinity_pod(AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [100, 0, 0],
        run_pre_score=True,
    ),
    ScoreCase(
        "all nodes matches the preferred scheduling requirements of pod but with different priorities",
        affinity_pod(AFFINITY2),
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, 100, 36],
        run_pre_score=True,
    ),
    ScoreCase(
        "added affinity",
        make_pod("p"),
        [("node1", LABEL1), ("node2", LABEL2)],
        [100, 0],
        added=AFFINITY1,
        run_pre_score=True,
    ),
    ScoreCase(
        "added affinity and pod has default affinity",
        affinity_pod(AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        [40, 60, 100],
        added={"preferredDuringSchedulingIgnoredDuringExecution": [pref(3, req("key", "In", "value"))]},
        run_pre_score=True,
    ),
    ScoreCase(
        "calculate the priorities correctly even if PreScore is not called",
        affinity_pod(AFFINITY2),
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, 100, 36],
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_node_affinity_score(case: ScoreCase) -> None:
    p = plugin(case.added)
    state = CycleState()
    infos = [NodeInfo(node(n, labels)) for n, labels in case.nodes]
    if case.run_pre_score:
        status = p.pre_score(state, case.pod, infos)
        assert status == case.want_pre_score_status
        if status is not None:
            return
    scores = [p.score(state, case.pod, ni) for ni in infos]
    assert p.normalize_score(state, case.pod, infos, scores) is None
    assert scores == case.expected


def test_score_without_pre_score_raises_for_broken_affinity() -> None:
    pod = affinity_pod(
        {"preferredDuringSchedulingIgnoredDuringExecution": [pref(2, req("invalid key", "In", "x"))]}
    )
    with pytest.raises(PluginError, match="invalid key"):
        plugin().score(CycleState(), pod, NodeInfo(node("n")))


def test_broken_preferred_term_with_zero_weight_is_ignored() -> None:
    # NewPreferredSchedulingTerms drops weight-0 terms before looking at their errors.
    pod = affinity_pod(
        {"preferredDuringSchedulingIgnoredDuringExecution": [pref(0, req("invalid key", "In", "x"))]}
    )
    p = plugin()
    state = CycleState()
    assert p.pre_score(state, pod, []) is None
    assert p.score(state, pod, NodeInfo(node("n", {"invalid key": "x"}))) == 0


def test_match_fields_preferred_term_scores() -> None:
    pod = affinity_pod(
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "preference": term(fields=[req(NAME_FIELD, "In", "a")])}
            ]
        }
    )
    p = plugin()
    state = CycleState()
    assert p.pre_score(state, pod, []) is None
    assert [p.score(state, pod, NodeInfo(node(n))) for n in ("a", "b")] == [5, 0]


def test_added_affinity_parse_errors_fail_construction() -> None:
    with pytest.raises(FieldError, match=r"addedAffinity\.requiredDuringSchedulingIgnoredDuringExecution"):
        plugin(required(term([req("invalid key", "In", "x")])))
    with pytest.raises(FieldError, match=r"addedAffinity\.preferredDuringSchedulingIgnoredDuringExecution"):
        plugin({"preferredDuringSchedulingIgnoredDuringExecution": [pref(1, req("k", "Gt", "x"))]})


def test_plugin_metadata() -> None:
    assert NodeAffinity.name == "NodeAffinity"
    assert NodeAffinity.args_type is NodeAffinityArgs
    assert NodeAffinity.normalizes is True
    # No args at all behaves like empty args.
    p = NodeAffinity(None, FakeHandle())
    assert p.pre_filter(CycleState(), make_pod("p"), []) == (None, skip())


IN_SHAPES = {
    "one In": required(term([req("zone", "In", "z1", "z2")])),
    "two In": required(term([req("zone", "In", "z1", "z2"), req("disk", "In", "ssd")])),
    "In and NotIn": required(term([req("zone", "In", "z1"), req("disk", "NotIn", "hdd")])),
    "two terms": required(term([req("zone", "In", "z1")]), term([req("disk", "In", "ssd")])),
    "In and a field": required(term([req("zone", "In", "z1")], fields=[req(NAME_FIELD, "In", "node")])),
    "empty term": required(term([])),
}
NODE_LABELS = [
    {},
    {"zone": "z1"},
    {"zone": "z2", "disk": "ssd"},
    {"zone": "z3", "disk": "ssd"},
    {"disk": "hdd"},
]


@pytest.mark.parametrize("shape", IN_SHAPES, ids=str)
def test_filter_agrees_with_the_selector_for_every_shape(shape: str) -> None:
    """Filter's inline test of one term of In expressions rejects exactly the nodes the selector
    does not match, and any other shape goes through the selector."""
    pod = affinity_pod(IN_SHAPES[shape])
    assert pod.node_affinity is not None and pod.node_affinity.required is not None
    p, state = plugin(), CycleState()
    p.pre_filter(state, pod, [])
    for labels in NODE_LABELS:
        matches = pod.node_affinity.required.matches("node", labels)
        got = p.filter(state, pod, NodeInfo(node("node", labels)))
        assert got == (None if matches else _pod_reason()), labels
