"""InterPodAffinity PreFilter/Filter, ported from plugins/interpodaffinity/filtering_test.go (v1.36.3).

Upstream's default namespace "" is berth's "default" (parse_pod defaults it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState
from app.framework.status import Code, Status, error, skip, unresolvable, unschedulable
from app.framework.types import NodeInfo, PodInfo
from app.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PreFilterState,
    TopologyCounts,
    incoming_affinity_anti_affinity_counts,
)
from app.plugins.interpodaffinity.plugin import InterPodAffinity
from app.plugins.interpodaffinity.terms import parse_pod_terms
from plugins.interpodaffinity_helpers import (
    NAMESPACES,
    Raw,
    affinity,
    exists_term,
    expr,
    in_term,
    node,
    not_in_term,
    plugin,
    pod,
    selector,
    snapshot,
    term,
)

AFFINITY = unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)

BAD_VALUE_MSG = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid label '
    "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def run_pre_filter(
    pl_pod: Pod, pods: list[Pod], nodes: list[Node], namespaces: list[Raw] | None = None
) -> tuple[CycleState, Status | None, list[NodeInfo], InterPodAffinity]:
    infos = snapshot(pods, nodes)
    pl = plugin(infos, NAMESPACES if namespaces is None else namespaces)
    state = CycleState()
    _, status = pl.pre_filter(state, pl_pod, infos)
    return state, status, infos, pl


# --- TestRequiredAffinitySingleNode -----------------------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = node("node1", {"region": "r1", "zone": "z11"})


def _existing() -> Pod:
    return pod(POD_LABEL, "node1")


def _team_ns_term(topology_key: str) -> Raw:
    return term(
        selector(expr("service", "In", "securityscan", "value2")),
        topology_key,
        namespace_selector=selector(expr("team", "In", "team1")),
    )


@dataclass
class SingleCase:
    name: str
    pod: Pod
    pods: list[Pod] = field(default_factory=list)
    want_pre_filter: Status | None = None
    want_filter: Status | None = None


SINGLE_NODE_CASES = [
    SingleCase(
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
        pod(),
        want_pre_filter=skip(),
    ),
    SingleCase(
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
        "matches the existing pod",
        pod(POD_LABEL2, aff=affinity([in_term("service", "region", "securityscan", "value2")])),
        [_existing()],
    ),
    SingleCase(
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in "
        "operator in labelSelector that matches the existing pod",
        pod(POD_LABEL2, aff=affinity([not_in_term("service", "region", "securityscan3", "value3")])),
        [_existing()],
    ),
    SingleCase(
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        pod(
            POD_LABEL2,
            aff=affinity(
                [
                    term(
                        selector(expr("service", "In", "securityscan", "value2")),
                        namespaces=["DiffNameSpace"],
                    )
                ],
                [],
            ),
        ),
        [pod({"service": "securityscan"}, "node1", namespace="ns")],
        want_filter=AFFINITY,
    ),
    SingleCase(
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        pod(POD_LABEL, aff=affinity([in_term("service", "", "antivirusscan", "value2")])),
        [_existing()],
        want_filter=AFFINITY,
    ),
    SingleCase(
        "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
        pod(
            POD_LABEL2,
            aff=affinity(
                [
                    term(selector(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
                    term(
                        selector(
                            expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue")
                        ),
                        "region",
                    ),
                ]
            ),
        ),
        [_existing()],
    ),
    SingleCase(
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the "
        "node because one of the matchExpression item don't match.",
        pod(
            POD_LABEL2,
            aff=affinity(
                [
                    term(selector(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
                    term(
                        selector(
                            expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue")
                        ),
                        "region",
                    ),
                ]
            ),
        ),
        [_existing()],
        want_filter=AFFINITY,
    ),
    SingleCase(
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        pod(
            POD_LABEL2,
            aff=affinity(
                [in_term("service", "region", "securityscan", "value2")],
                [in_term("service", "node", "antivirusscan", "value2")],
            ),
        ),
        [_existing()],
    ),
    SingleCase(
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        pod(
            POD_LABEL2,
            aff=affinity(
                [in_term("service", "region", "securityscan", "value2")],
                [in_term("service", "node", "antivirusscan", "value2")],
            ),
        ),
        [pod(POD_LABEL, "node1", aff=affinity(anti=[in_term("service", "node", "antivirusscan", "value2")]))],
    ),
    SingleCase(
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        pod(
            POD_LABEL2,
            aff=affinity(
                [in_term("service", "region", "securityscan", "value2")],
                [in_term("service", "zone", "securityscan", "value2")],
            ),
        ),
        [_existing()],
        want_filter=ANTI,
    ),
    SingleCase(
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the "
        "existing pod",
        pod(
            POD_LABEL,
            aff=affinity(
                [in_term("service", "region", "securityscan", "value2")],
                [in_term("service", "node", "antivirusscan", "value2")],
            ),
        ),
        [pod(POD_LABEL, "node1", aff=affinity(anti=[in_term("service", "zone", "securityscan", "value2")]))],
        want_filter=EXISTING,
    ),
    SingleCase(
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        pod(POD_LABEL, aff=affinity([not_in_term("service", "region", "securityscan", "value2")])),
        [pod({"service": "securityscan"}, "node2")],
        want_filter=AFFINITY,
    ),
    SingleCase(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
        "doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        pod(POD_LABEL),
        [pod(POD_LABEL, "node1", aff=affinity(anti=[in_term("service", "zone", "securityscan", "value2")]))],
        want_filter=EXISTING,
    ),
    SingleCase(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
        "satisfy PodAntiAffinity symmetry with the existing pod",
        pod(POD_LABEL),
        [
            pod(
                POD_LABEL,
                "node1",
                aff=affinity(anti=[not_in_term("service", "zone", "securityscan", "value2")]),
            )
        ],
        want_pre_filter=skip(),
    ),
    SingleCase(
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with "
        "incoming pod",
        pod(
            POD_LABEL,
            aff=affinity(anti=[exists_term("service", "region"), exists_term("security", "region")]),
        ),
        [pod(POD_LABEL2, "node1", aff=affinity(anti=[exists_term("security", "zone")]))],
        want_filter=ANTI,
    ),
    SingleCase(
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        pod(POD_LABEL, aff=affinity(anti=[exists_term("service", "zone"), exists_term("security", "zone")])),
        [pod(POD_LABEL2, "node1", aff=affinity(anti=[exists_term("security", "zone")]))],
        want_filter=ANTI,
    ),
    SingleCase(
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        pod(POD_LABEL2, aff=affinity(anti=[exists_term("security", "zone")])),
        [
            pod(
                POD_LABEL,
                "node1",
                aff=affinity(anti=[exists_term("service", "zone"), exists_term("security", "zone")]),
            )
        ],
        want_filter=EXISTING,
    ),
    SingleCase(
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        pod(
            {"abc": "", "xyz": ""},
            aff=affinity(anti=[exists_term("abc", "zone"), exists_term("def", "zone")]),
        ),
        [
            pod(
                {"def": "", "xyz": ""},
                "node1",
                aff=affinity(anti=[exists_term("abc", "zone"), exists_term("def", "zone")]),
            )
        ],
        want_filter=ANTI,
    ),
    SingleCase(
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        pod(
            {"def": "", "xyz": ""},
            aff=affinity(anti=[exists_term("abc", "zone"), exists_term("def", "zone")]),
        ),
        [
            pod(
                {"abc": "", "xyz": ""},
                "node1",
                aff=affinity(anti=[exists_term("abc", "zone"), exists_term("def", "zone")]),
            )
        ],
        want_filter=ANTI,
    ),
    SingleCase(
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        pod(
            POD_LABEL,
            aff=affinity(
                [
                    in_term("service", "region", "{{.bad-value.}}"),
                    in_term("service", "node", "antivirusscan", "value2"),
                ]
            ),
        ),
        want_pre_filter=unresolvable(BAD_VALUE_MSG),
    ),
    SingleCase(
        # Upstream's case puts the bad value in a second affinity term (not anti-affinity) too.
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        pod(
            POD_LABEL,
            aff=affinity(
                [in_term("service", "region", "foo"), in_term("service", "node", "{{.bad-value.}}")]
            ),
        ),
        want_pre_filter=unresolvable(BAD_VALUE_MSG),
    ),
    SingleCase(
        "affinity with NamespaceSelector",
        pod(POD_LABEL2, aff=affinity([_team_ns_term("region")])),
        [pod(POD_LABEL, "node1", namespace="subteam1.team1")],
    ),
    SingleCase(
        "affinity with non-matching NamespaceSelector",
        pod(POD_LABEL2, aff=affinity([_team_ns_term("region")])),
        [pod(POD_LABEL, "node1", namespace="subteam1.team2")],
        want_filter=AFFINITY,
    ),
    SingleCase(
        "anti-affinity with matching NamespaceSelector",
        pod(POD_LABEL2, namespace="subteam1.team1", aff=affinity(anti=[_team_ns_term("zone")])),
        [pod(POD_LABEL, "node1", namespace="subteam2.team1")],
        want_filter=ANTI,
    ),
    SingleCase(
        "anti-affinity with matching all NamespaceSelector",
        pod(
            POD_LABEL2,
            namespace="subteam1.team1",
            aff=affinity(
                anti=[
                    term(
                        selector(expr("service", "In", "securityscan", "value2")),
                        "zone",
                        namespace_selector={},
                    )
                ]
            ),
        ),
        [pod(POD_LABEL, "node1", namespace="subteam2.team1")],
        want_filter=ANTI,
    ),
    SingleCase(
        "anti-affinity with non-matching NamespaceSelector",
        pod(POD_LABEL2, namespace="subteam1.team1", aff=affinity(anti=[_team_ns_term("zone")])),
        [pod(POD_LABEL, "node1", namespace="subteam1.team2")],
    ),
]


@pytest.mark.parametrize("case", SINGLE_NODE_CASES, ids=lambda c: c.name)
def test_required_affinity_single_node(case: SingleCase) -> None:
    state, status, infos, pl = run_pre_filter(case.pod, case.pods, [NODE1])
    assert status == case.want_pre_filter
    if status is not None:
        return
    assert pl.filter(state, case.pod, infos[0]) == case.want_filter


# --- TestRequiredAffinityMultipleNodes --------------------------------------------------------------

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def _rzh(name: str, zone: str = "z1") -> Node:
    return node(name, {"region": "r1", "zone": zone, "hostname": name})


@dataclass
class MultiCase:
    name: str
    pod: Pod
    pods: list[Pod]
    nodes: list[Node]
    want_filter: list[Status | None]
    want_pre_filter: Status | None = None


MULTI_NODE_CASES = [
    MultiCase(
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them "
        "has an existing pod that matches the affinity rules",
        pod(aff=affinity([in_term("foo", "region", "bar")])),
        [pod({"foo": "bar"}, "node1", name="p1")],
        [node("node1", RG_CHINA), node("node2", RG_CHINA_AZ1), node("node3", RG_INDIA)],
        [None, None, AFFINITY],
    ),
    MultiCase(
        "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of "
        "the collection should not be blocked from being scheduled onto any node, even there's no existing pod "
        "that matches the rule anywhere.",
        pod(
            {"foo": "bar", "service": "securityscan"},
            aff=affinity([in_term("foo", "zone", "bar"), in_term("service", "zone", "securityscan")]),
        ),
        [pod({"foo": "bar"}, "nodeA", name="p1")],
        [node("nodeA", {"zone": "az1", "hostname": "h1"}), node("nodeB", {"zone": "az2", "hostname": "h2"})],
        [None, None],
    ),
    MultiCase(
        "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
        pod(
            {"foo": "bar", "service": "securityscan"},
            aff=affinity([in_term("foo", "zone", "bar"), in_term("service", "zone", "securityscan")]),
        ),
        [pod({"foo": "bar"}, "nodeA", name="p1")],
        [
            node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            node("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        [AFFINITY, AFFINITY],
    ),
    MultiCase(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        pod(aff=affinity(anti=[in_term("foo", "region", "abc")])),
        [pod({"foo": "abc"}, "nodeA")],
        [
            node("nodeA", {"region": "r1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ],
        [ANTI, ANTI],
    ),
    MultiCase(
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
        pod(aff=affinity(anti=[in_term("foo", "region", "abc"), in_term("service", "zone", "securityscan")])),
        [pod({"foo": "abc", "service": "securityscan"}, "nodeA")],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2")],
        [ANTI, ANTI],
    ),
    MultiCase(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
        pod(aff=affinity(anti=[in_term("foo", "region", "abc")])),
        [pod({"foo": "abc"}, "nodeA")],
        [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
        [ANTI, ANTI, None],
    ),
    MultiCase(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC "
        "(NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        pod({"foo": "123"}, namespace="NS1", aff=affinity(anti=[in_term("foo", "region", "bar")])),
        [
            pod({"foo": "bar"}, "nodeA", namespace="NS1"),
            pod(node="nodeC", namespace="NS2", aff=affinity(anti=[in_term("foo", "region", "123")])),
        ],
        [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
        [ANTI, ANTI, None],
    ),
    MultiCase(
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector "
        "of the term is firstly checked, and then topologyKey of the term is also checked",
        pod({"foo": ""}),
        [pod(node="nodeA", aff=affinity(anti=[exists_term("foo", "invalid-node-label")]))],
        [_rzh("nodeA"), _rzh("nodeB")],
        [None, None],
        want_pre_filter=skip(),
    ),
    MultiCase(
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
        pod(node="nodeA", aff=affinity(anti=[exists_term("foo", "invalid-node-label")])),
        [pod({"foo": ""}, "nodeA")],
        [_rzh("nodeA"), _rzh("nodeB")],
        [None, None],
    ),
    MultiCase(
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
        "existingPod's terms on all nodes",
        pod({"foo": "", "bar": ""}),
        [
            pod(node="nodeA", aff=affinity(anti=[exists_term("foo", "zone")])),
            pod(node="nodeA", aff=affinity(anti=[exists_term("bar", "region")])),
        ],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2")],
        [EXISTING, EXISTING],
    ),
    MultiCase(
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
        "anti-affinity rule of existingPod",
        pod(aff=affinity(anti=[exists_term("foo", "zone"), exists_term("bar", "region")])),
        [pod({"foo": ""}, "nodeA"), pod({"bar": ""}, "nodeB")],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2")],
        [ANTI, ANTI],
    ),
    MultiCase(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when one term has invalid topologyKey",
        pod({"foo": "", "bar": ""}),
        [
            pod(
                node="nodeA",
                aff=affinity(anti=[exists_term("foo", "invalid-node-label"), exists_term("bar", "zone")]),
            )
        ],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2")],
        [EXISTING, None],
    ),
    MultiCase(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when one term has invalid topologyKey",
        pod(aff=affinity(anti=[exists_term("foo", "invalid-node-label"), exists_term("bar", "zone")])),
        [pod({"foo": "", "bar": ""}, "nodeA", name="podA")],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2")],
        [ANTI, None],
    ),
    MultiCase(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when all terms have valid topologyKey",
        pod({"foo": "", "bar": ""}),
        [pod(node="nodeA", aff=affinity(anti=[exists_term("foo", "region"), exists_term("bar", "zone")]))],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2")],
        [EXISTING, EXISTING],
    ),
    MultiCase(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when all terms have valid topologyKey",
        pod(aff=affinity(anti=[exists_term("foo", "region"), exists_term("bar", "zone")])),
        [pod({"foo": "", "bar": ""}, "nodeA")],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2")],
        [ANTI, ANTI],
    ),
    MultiCase(
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term "
        "matches incoming pod, so incoming pod can only be scheduled to nodeC",
        pod({"foo": "", "bar": ""}),
        [
            pod(node="nodeA", aff=affinity(anti=[exists_term("foo", "zone"), exists_term("labelA", "zone")])),
            pod(node="nodeB", aff=affinity(anti=[exists_term("bar", "zone"), exists_term("labelB", "zone")])),
        ],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2"), _rzh("nodeC", "z3")],
        [EXISTING, EXISTING, None],
    ),
    MultiCase(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match",
        pod(aff=affinity([exists_term("foo", "region"), exists_term("bar", "zone")])),
        [pod({"foo": "", "bar": ""}, "nodeA", name="pod1")],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z1")],
        [None, None],
    ),
    MultiCase(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match, and the match logic should be satisfied on the same pod",
        pod(aff=affinity([exists_term("foo", "region"), exists_term("bar", "zone")])),
        [pod({"foo": ""}, "nodeA", name="pod1"), pod({"bar": ""}, "nodeB", name="pod2")],
        [_rzh("nodeA", "z1"), _rzh("nodeB", "z2")],
        [AFFINITY, AFFINITY],
    ),
]


@pytest.mark.parametrize("case", MULTI_NODE_CASES, ids=lambda c: c.name)
def test_required_affinity_multiple_nodes(case: MultiCase) -> None:
    ns1: list[Raw] = [{"kind": "Namespace", "metadata": {"name": "NS1"}}]
    state, status, infos, pl = run_pre_filter(case.pod, case.pods, case.nodes, ns1)
    assert status == case.want_pre_filter
    if status is not None:
        return
    got = [pl.filter(state, case.pod, info) for info in infos]
    assert got == case.want_filter


def test_pre_filter_disabled() -> None:
    """Filter without PreFilter state is an Error (``fwk.ErrNotFound``)."""
    got = plugin().filter(CycleState(), pod(), NodeInfo(node("n")))
    assert got == error('error reading "PreFilterInterPodAffinity" from cycleState: not found')
    assert got is not None and got.code is Code.ERROR


# --- TestPreFilterStateAddRemovePod -----------------------------------------------------------------

LABEL1 = {"region": "r1", "zone": "z11"}
LABEL2 = {"region": "r1", "zone": "z12"}
LABEL3 = {"region": "r2", "zone": "z21"}
SELECTOR1 = {"foo": "bar"}
ANTI_FOO_BAR = [in_term("foo", "region", "bar")]
COMPLEX = [in_term("foo", "region", "bar", "buzz"), not_in_term("service", "zone", "bar", "security", "test")]


@dataclass
class AddRemoveCase:
    name: str
    pending: Pod
    existing: list[Pod]
    added: Pod
    want_anti: TopologyCounts
    want_affinity: TopologyCounts


def _abc_nodes() -> list[Node]:
    return [node("nodeA", LABEL1), node("nodeB", LABEL2), node("nodeC", LABEL3)]


ADD_REMOVE_CASES = [
    AddRemoveCase(
        "preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
        pod(SELECTOR1, name="pending", aff=affinity(anti=ANTI_FOO_BAR)),
        [pod(SELECTOR1, "nodeA", name="p1"), pod(node="nodeC", name="p2", aff=affinity(anti=ANTI_FOO_BAR))],
        pod(SELECTOR1, "nodeB", name="addedPod", aff=affinity(anti=ANTI_FOO_BAR)),
        {("region", "r1"): 2},
        {},
    ),
    AddRemoveCase(
        "preFilterState anti-affinity terms are updated correctly after adding and removing a pod (complex)",
        pod(SELECTOR1, name="pending", aff=affinity(anti=COMPLEX)),
        [pod(SELECTOR1, "nodeA", name="p1"), pod(node="nodeC", name="p2", aff=affinity(anti=ANTI_FOO_BAR))],
        pod(SELECTOR1, "nodeA", name="addedPod", aff=affinity(anti=COMPLEX)),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
    ),
    AddRemoveCase(
        "preFilterState matching pod affinity and anti-affinity are updated correctly after adding and removing a pod",
        pod(SELECTOR1, name="pending", aff=affinity(COMPLEX)),
        [
            pod(SELECTOR1, "nodeA", name="p1"),
            pod(node="nodeC", name="p2", aff=affinity(COMPLEX, ANTI_FOO_BAR)),
        ],
        pod(SELECTOR1, "nodeA", name="addedPod", aff=affinity(anti=COMPLEX)),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
]


def _state_tuple(s: PreFilterState) -> tuple[TopologyCounts, TopologyCounts, TopologyCounts]:
    return s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts


@pytest.mark.parametrize("case", ADD_REMOVE_CASES, ids=lambda c: c.name)
def test_pre_filter_state_add_remove_pod(case: AddRemoveCase) -> None:
    def get_state(pods: list[Pod]) -> tuple[InterPodAffinity, CycleState, PreFilterState, list[NodeInfo]]:
        cycle, status, infos, pl = run_pre_filter(case.pending, pods, _abc_nodes(), [])
        assert status is None
        s = cycle.read(PRE_FILTER_STATE_KEY)
        assert isinstance(s, PreFilterState)
        return pl, cycle, s, infos

    _, _, all_pods_state, _ = get_state([*case.existing, case.added])
    pl, cycle, state, infos = get_state(case.existing)
    original = state.clone()
    node_info = next(i for i in infos if i.name == case.added.node_name)
    ext = pl.pre_filter_extensions()
    assert ext.add_pod(cycle, case.pending, PodInfo(case.added), node_info) is None
    new_state = cycle.read(PRE_FILTER_STATE_KEY)
    assert new_state.anti_affinity_counts == case.want_anti
    assert new_state.affinity_counts == case.want_affinity
    assert _state_tuple(state) == _state_tuple(all_pods_state)
    assert ext.remove_pod(cycle, case.pending, PodInfo(case.added), node_info) is None
    assert _state_tuple(state) == _state_tuple(original)


def test_pre_filter_state_clone() -> None:
    source = PreFilterState(
        pod(),
        (),
        (),
        {},
        {("name", "node1"): 1, ("name", "node2"): 1},
        {("name", "nodeA"): 1, ("name", "nodeC"): 2},
        {("name", "nodeN"): 3, ("name", "nodeM"): 1},
    )
    clone = source.clone()
    assert clone is not source
    assert _state_tuple(clone) == _state_tuple(source)
    # Deep enough for preemption dry runs: mutating the clone leaves the source alone.
    for copied, original in zip(_state_tuple(clone), _state_tuple(source), strict=True):
        assert copied is not original
        copied.clear()
    assert source.affinity_counts == {("name", "nodeA"): 1, ("name", "nodeC"): 2}


# --- TestGetTPMapMatchingIncomingAffinityAntiAffinity -----------------------------------------------


def _normal(*labels: str) -> Pod:
    return pod(dict.fromkeys(labels, ""), "nodeA", name="normal")


NODE_A = node("nodeA", {"hostname": "nodeA"})


@dataclass
class IncomingCase:
    name: str
    existing: list[Pod]
    pod: Pod
    want_affinity: TopologyCounts
    want_anti: TopologyCounts


INCOMING_CASES = [
    IncomingCase("nil test", [], pod(name="aaa-normal"), {}, {}),
    IncomingCase(
        "incoming pod without affinity/anti-affinity causes a no-op",
        [_normal("aaa")],
        pod(name="aaa-normal"),
        {},
        {},
    ),
    IncomingCase(
        "no pod has label that violates incoming pod's affinity and anti-affinity",
        [_normal("bbb")],
        pod(
            name="aaa-anti", aff=affinity([exists_term("aaa", "hostname")], [exists_term("aaa", "hostname")])
        ),
        {},
        {},
    ),
    IncomingCase(
        "existing pod matches incoming pod's affinity and anti-affinity - single term case",
        [_normal("aaa")],
        pod(
            name="affi-antiaffi",
            aff=affinity([exists_term("aaa", "hostname")], [exists_term("aaa", "hostname")]),
        ),
        {("hostname", "nodeA"): 1},
        {("hostname", "nodeA"): 1},
    ),
    IncomingCase(
        "existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
        [_normal("aaa", "bbb")],
        pod(
            name="affi-antiaffi",
            aff=affinity(
                [exists_term("aaa", "hostname"), exists_term("bbb", "hostname")],
                [exists_term("aaa", "hostname")],
            ),
        ),
        {("hostname", "nodeA"): 2},  # one for each term
        {("hostname", "nodeA"): 1},
    ),
    IncomingCase(
        "existing pod not match incoming pod's affinity but matches anti-affinity",
        [_normal("aaa")],
        pod(
            name="affi-antiaffi",
            aff=affinity(
                [exists_term("aaa", "hostname"), exists_term("bbb", "hostname")],
                [exists_term("aaa", "hostname"), exists_term("bbb", "hostname")],
            ),
        ),
        {},
        {("hostname", "nodeA"): 1},
    ),
    IncomingCase(
        "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
        [_normal("aaa", "bbb")],
        pod(
            name="anaffi-antiaffiti",
            aff=affinity(
                [exists_term("aaa", "hostname"), exists_term("ccc", "hostname")],
                [exists_term("aaa", "hostname"), exists_term("ccc", "hostname")],
            ),
        ),
        {},
        {("hostname", "nodeA"): 1},
    ),
    IncomingCase(
        "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
        [_normal("bbb")],
        pod(
            name="affi-antiaffi",
            aff=affinity(
                [exists_term("aaa", "hostname"), exists_term("bbb", "hostname")],
                [exists_term("aaa", "hostname"), exists_term("bbb", "hostname")],
            ),
        ),
        {},
        {("hostname", "nodeA"): 1},
    ),
]


@pytest.mark.parametrize("case", INCOMING_CASES, ids=lambda c: c.name)
def test_incoming_affinity_anti_affinity_counts(case: IncomingCase) -> None:
    terms = parse_pod_terms(case.pod)
    got = incoming_affinity_anti_affinity_counts(
        terms.required_affinity, terms.required_anti_affinity, snapshot(case.existing, [NODE_A])
    )
    assert got == (case.want_affinity, case.want_anti)


# --- berth additions ---------------------------------------------------------------------------------


def test_pre_filter_aggregates_errors_of_several_term_lists() -> None:
    """NewPodInfo aggregates the failing lists' errors as ``[a, b]``, each list stopping at its first bad term."""
    bad = pod(
        aff=affinity(
            [in_term("service", "region", "{{bad}}")],
            [term(selector(expr("a/b/c", "Exists")), "zone")],
        )
    )
    _, status, _, _ = run_pre_filter(bad, [], [NODE1])
    assert status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    msg = status.message()
    assert msg.startswith('parsing pod: [requiredAffinityTerms: values[0][service]: Invalid value: "{{bad}}"')
    assert ', requiredAntiAffinityTerms: key: Invalid value: "a/b/c": a valid label key' in msg
    assert msg.endswith("]")


def test_nil_label_selector_matches_nothing() -> None:
    """A term without labelSelector is ``labels.Nothing()``: never matched, so the first-pod rule fails too."""
    p = pod({"app": "x"}, aff=affinity([term(None, "region")]))
    state, status, infos, pl = run_pre_filter(p, [pod({"app": "x"}, "node1")], [NODE1])
    assert status is None
    assert pl.filter(state, p, infos[0]) == AFFINITY


def test_namespace_selector_uses_implicit_metadata_name_label() -> None:
    """A namespace without a Namespace object still has ``kubernetes.io/metadata.name``."""
    ns_sel = selector(expr("kubernetes.io/metadata.name", "In", "other"))
    p = pod(aff=affinity(anti=[term(selector(expr("app", "Exists")), "zone", namespace_selector=ns_sel)]))
    existing = [pod({"app": "x"}, "node1", namespace="other")]
    state, status, infos, pl = run_pre_filter(p, existing, [NODE1], [])
    assert status is None
    assert pl.filter(state, p, infos[0]) == ANTI


def test_namespace_selector_matching_empty_labels_selects_every_namespace() -> None:
    """Upstream's merge keeps the selector, tested against no labels: NotIn then selects all namespaces."""
    ns_sel = selector(expr("team", "NotIn", "team1"))
    p = pod(aff=affinity(anti=[term(selector(expr("app", "Exists")), "zone", namespace_selector=ns_sel)]))
    existing = [pod({"app": "x"}, "node1", namespace="subteam1.team1")]
    state, status, infos, pl = run_pre_filter(p, existing, [NODE1])
    assert status is None
    assert pl.filter(state, p, infos[0]) == ANTI


def test_existing_pods_terms_use_incoming_namespace_labels() -> None:
    """Symmetry: an existing pod's namespaceSelector is matched against the incoming pod's namespace labels."""
    ns_sel = selector(expr("team", "In", "team1"))
    existing = [
        pod(
            {"x": "y"},
            "node1",
            aff=affinity(anti=[term(selector(expr("app", "Exists")), "zone", namespace_selector=ns_sel)]),
        )
    ]
    for namespace, want in (("subteam2.team1", EXISTING), ("subteam2.team2", None)):
        p = pod({"app": "web"}, namespace=namespace)
        state, status, infos, pl = run_pre_filter(p, existing, [NODE1])
        if want is None:
            assert status == skip()
        else:
            assert pl.filter(state, p, infos[0]) == want


@pytest.mark.parametrize(
    ("extra", "incoming_labels", "want"),
    [
        # matchLabelKeys: only pods with the same value of the key count.
        ({"matchLabelKeys": ["tenant"]}, {"app": "web", "tenant": "a"}, None),
        ({"matchLabelKeys": ["tenant"]}, {"app": "web", "tenant": "b"}, ANTI),
        # mismatchLabelKeys: only pods with another value count.
        ({"mismatchLabelKeys": ["tenant"]}, {"app": "web", "tenant": "a"}, ANTI),
        ({"mismatchLabelKeys": ["tenant"]}, {"app": "web", "tenant": "b"}, None),
        # A key the incoming pod lacks adds nothing.
        ({"matchLabelKeys": ["missing"]}, {"app": "web", "tenant": "a"}, ANTI),
    ],
)
def test_match_label_keys_are_merged_into_the_selector(
    extra: Raw, incoming_labels: dict[str, str], want: Status | None
) -> None:
    """As the API server's admission does (MatchLabelKeysInPodAffinity, GA in v1.33)."""
    p = pod(incoming_labels, aff=affinity(anti=[term(selector(expr("app", "In", "web")), "zone", **extra)]))
    existing = [pod({"app": "web", "tenant": "b"}, "node1")]
    state, status, infos, pl = run_pre_filter(p, existing, [NODE1])
    assert status is None
    assert pl.filter(state, p, infos[0]) == want


def test_match_label_keys_already_merged_by_the_api_server_are_not_doubled() -> None:
    p = pod(
        {"app": "web", "tenant": "a"},
        aff=affinity(
            anti=[
                term(
                    selector(expr("app", "In", "web"), expr("tenant", "In", "a")),
                    "zone",
                    matchLabelKeys=["tenant"],
                )
            ]
        ),
    )
    (t,) = parse_pod_terms(p).required_anti_affinity
    assert t.selector is not None and len(t.selector.requirements) == 2


def test_add_pod_on_cloned_state_leaves_original() -> None:
    """Preemption and nominated-pod runs AddPod on a clone of the cycle state."""
    p = pod({"app": "web"}, aff=affinity(anti=[exists_term("app", "zone")]))
    state, status, infos, pl = run_pre_filter(p, [], [NODE1])
    assert status is None and pl.filter(state, p, infos[0]) is None
    clone = state.clone()
    other = PodInfo(pod({"app": "db"}, "node1"))
    assert pl.pre_filter_extensions().add_pod(clone, p, other, infos[0]) is None
    assert pl.filter(clone, p, infos[0]) == ANTI
    assert pl.filter(state, p, infos[0]) is None
