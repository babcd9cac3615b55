"""InterPodAffinity PreScore/Score/NormalizeScore, ported from plugins/interpodaffinity/scoring_test.go (v1.36.3).

Upstream's default namespace "" is berth's "default".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import PluginError
from app.framework.status import Code, Status, error, skip
from app.framework.types import NodeInfo
from app.plugins.interpodaffinity.plugin import InterPodAffinity
from app.plugins.interpodaffinity.scoring import PRE_SCORE_STATE_KEY, PreScoreState, normalize_scores
from plugins.interpodaffinity_helpers import (
    NAMESPACES,
    Raw,
    affinity,
    expr,
    in_term,
    node,
    plugin,
    pod,
    selector,
    snapshot,
    term,
    weighted,
)

MAX = 100

RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}

STAY_WITH_S1_IN_REGION = affinity(preferred=[weighted(5, in_term("security", "region", "S1"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[weighted(6, in_term("security", "region", "S2"))])
AFFINITY3 = affinity(
    preferred=[
        weighted(8, term(selector(expr("security", "NotIn", "S1"), expr("security", "In", "S2")), "region")),
        weighted(2, term(selector(expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), "region")),
    ]
)
HARD_AFFINITY = affinity(
    [
        in_term("security", "region", "S1", "value2"),
        term(selector(expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(preferred_anti=[weighted(5, in_term("security", "az", "S1"))])
AWAY_FROM_S2_IN_AZ = affinity(preferred_anti=[weighted(5, in_term("security", "az", "S2"))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[weighted(8, in_term("security", "region", "S1"))],
    preferred_anti=[weighted(5, in_term("security", "az", "S2"))],
)
_NS_SEL_TERM = term(
    selector(expr("security", "In", "S1")),
    "region",
    namespaces=["subteam2.team2"],
    namespace_selector=selector(expr("team", "In", "team1")),
)
AFFINITY_NAMESPACE_SELECTOR = affinity(preferred=[weighted(5, _NS_SEL_TERM)])
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(preferred_anti=[weighted(5, _NS_SEL_TERM)])
INVALID_AFFINITY_LABELS = affinity(preferred=[weighted(8, in_term("security", "region", "{{.bad-value.}}"))])
INVALID_ANTI_AFFINITY_LABELS = affinity(
    preferred_anti=[weighted(5, in_term("security", "az", "{{.bad-value.}}"))]
)


def p(
    node_name: str = "", labels: dict[str, str] | None = None, aff: Raw | None = None, ns: str = "default"
) -> Pod:
    return pod(labels, node_name, namespace=ns, aff=aff)


def score_all(pl_pod: Pod, infos: list[NodeInfo], state: CycleState, pl: InterPodAffinity) -> list[int]:
    """Score every node, then NormalizeScore, as the upstream test loop does."""
    scores = [pl.score(state, pl_pod, info) for info in infos]
    assert pl.normalize_score(state, pl_pod, infos, scores) is None
    return scores


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    nodes: list[Node]
    pods: list[Pod] = field(default_factory=list)
    expected: list[int] | None = None
    ignore_preferred: bool = False
    want_status: Status | None = None


PREFERRED_CASES = [
    ScoreCase(
        "all nodes are same priority as Affinity is nil",
        p(labels=S1),
        [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)],
        want_status=skip(),
    ),
    ScoreCase(
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
        "which doesn't match either pods in nodes or in topology key",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION),
        [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)],
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        [MAX, 0, 0],
    ),
    ScoreCase(
        "All the nodes that have the same topology key & label value with one of them has an existing pod that "
        "match the affinity rules, have the same score",
        p(aff=STAY_WITH_S1_IN_REGION),
        [node("node1", RG_CHINA), node("node2", RG_CHINA_AZ1), node("node3", RG_INDIA)],
        [p("node1", S1)],
        [MAX, MAX, 0],
    ),
    ScoreCase(
        "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has "
        "more matches will get high score",
        p(labels=S1, aff=STAY_WITH_S2_IN_REGION),
        [
            node("node1", RG_CHINA),
            node("node2", RG_INDIA),
            node("node3", RG_CHINA),
            node("node4", RG_CHINA),
            node("node5", RG_INDIA),
        ],
        [p("node1", S2), p("node1", S2), p("node2", S2), p("node3", S2), p("node4", S2), p("node5", S2)],
        [MAX, 0, MAX, MAX, 0],
    ),
    ScoreCase(
        "Affinity: different Label operators and values for pod affinity scheduling preference, including some "
        "match failures ",
        p(labels=S1, aff=AFFINITY3),
        [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)],
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        [20, MAX, 0],
    ),
    ScoreCase(
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity "
        "symmetry",
        p(labels=S2),
        [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)],
        [p("node1", S1, STAY_WITH_S1_IN_REGION), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [0, MAX, 0],
    ),
    ScoreCase(
        "Affinity symmetry with namespace selector",
        p(labels=S1, ns="subteam1.team1"),
        [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)],
        [p("node1", S1, AFFINITY_NAMESPACE_SELECTOR), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [MAX, 0, 0],
    ),
    ScoreCase(
        "AntiAffinity symmetry with namespace selector",
        p(labels=S1, ns="subteam1.team1"),
        [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)],
        [p("node1", S1, ANTI_AFFINITY_NAMESPACE_SELECTOR), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [0, MAX, MAX],
    ),
    ScoreCase(
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        p(labels=S1),
        [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)],
        [p("node1", S1, HARD_AFFINITY), p("node2", S2, HARD_AFFINITY)],
        [MAX, MAX, 0],
    ),
    ScoreCase(
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [node("node1", AZ1), node("node2", RG_CHINA)],
        [p("node1", S1), p("node2", S2)],
        [0, MAX],
    ),
    ScoreCase(
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
        "comparing to others ",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [node("node1", AZ1), node("node2", RG_CHINA)],
        [p("node1", S1), p("node2", S1)],
        [0, MAX],
    ),
    ScoreCase(
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
        "unmatches will get high score",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [node("node1", AZ1), node("node2", RG_INDIA)],
        [p("node1", S1), p("node1", S1), p("node2", S2)],
        [0, MAX],
    ),
    ScoreCase(
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        p(labels=S2),
        [node("node1", AZ1), node("node2", AZ2)],
        [p("node1", S1, AWAY_FROM_S2_IN_AZ), p("node2", S2, AWAY_FROM_S1_IN_AZ)],
        [0, MAX],
    ),
    ScoreCase(
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod "
        "affinity & anti affinity",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [node("node1", RG_CHINA), node("node2", AZ1)],
        [p("node1", S1), p("node2", S1)],
        [MAX, 0],
    ),
    ScoreCase(
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing "
        "pods have the same labels",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            node("node1", RG_CHINA_AZ1),
            node("node2", RG_INDIA),
            node("node3", RG_CHINA),
            node("node4", RG_CHINA),
            node("node5", RG_INDIA),
        ],
        [
            p("node1", S1),
            p("node1", S1),
            p("node2", S1),
            p("node3", S1),
            p("node3", S1),
            p("node4", S1),
            p("node5", S1),
        ],
        [MAX, 0, MAX, MAX, 0],
    ),
    ScoreCase(
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution "
        "in both pod affinity & anti affinity & symmetry",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [node("node1", RG_CHINA), node("node2", AZ1), node("node3", RG_INDIA), node("node4", AZ2)],
        [
            p("node1", S1),
            p("node2", S2),
            p("node3", aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            p("node4", aff=AWAY_FROM_S1_IN_AZ),
        ],
        [MAX, 0, MAX, 0],
    ),
    # https://github.com/kubernetes/kubernetes/issues/82796: some nodes of a topology have no pod with
    # affinity, and the incoming pod has none.
    ScoreCase(
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        p(labels=S1),
        [node("node1", RG_CHINA), node("node2", RG_CHINA)],
        [p("node1", S1), p("node2", aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        [0, 0],
    ),
    ScoreCase(
        "invalid Affinity fails PreScore",
        p(aff=INVALID_AFFINITY_LABELS),
        [node("node1", RG_CHINA), node("node2", RG_CHINA)],
        want_status=error('Invalid value: "{{.bad-value.}}"'),
    ),
    ScoreCase(
        "invalid AntiAffinity fails PreScore",
        p(aff=INVALID_ANTI_AFFINITY_LABELS),
        [node("node1", RG_CHINA), node("node2", RG_CHINA)],
        want_status=error('Invalid value: "{{.bad-value.}}"'),
    ),
    ScoreCase(
        "Affinity with pods matching NamespaceSelector",
        p(labels=S1, aff=AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [node("node1", RG_CHINA), node("node2", RG_INDIA)],
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [MAX, 0],
    ),
    ScoreCase(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        p(labels=S1, aff=AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [node("node1", RG_CHINA), node("node2", RG_INDIA)],
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam2.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [MAX, 0],
    ),
    ScoreCase(
        "Anti-affinity with pods matching NamespaceSelector",
        p(labels=S1, aff=ANTI_AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [node("node1", RG_CHINA), node("node2", RG_INDIA)],
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [0, MAX],
    ),
    ScoreCase(
        "Anti-affinity with pods matching both NamespaceSelector and Namespaces fields",
        p(labels=S1, aff=ANTI_AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [node("node1", RG_CHINA), node("node2", RG_INDIA)],
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam2.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [0, MAX],
    ),
    ScoreCase(
        "Ignore preferred terms of existing pods",
        p(labels=S2),
        [node("node1", RG_CHINA), node("node2", RG_INDIA)],
        [p("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        ignore_preferred=True,
        want_status=skip(),
    ),
    ScoreCase(
        "Do not ignore preferred terms of existing pods",
        p(labels=S2),
        [node("node1", RG_CHINA), node("node2", RG_INDIA)],
        [p("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [0, MAX],
    ),
    ScoreCase("No nodes to score", p(labels=S2), [], want_status=skip()),
]


def _check_status(got: Status | None, want: Status | None) -> None:
    """As upstream: same code, and the wanted message contained in the one got."""
    if want is None:
        assert got is None
        return
    assert got is not None and got.code is want.code
    assert want.message() in got.message()


@pytest.mark.parametrize("case", PREFERRED_CASES, ids=lambda c: c.name)
def test_preferred_affinity(case: ScoreCase) -> None:
    infos = snapshot(case.pods, case.nodes)
    pl = plugin(infos, NAMESPACES, 1, case.ignore_preferred)
    state = CycleState()
    status = pl.pre_score(state, case.pod, infos)
    _check_status(status, case.want_status)
    if status is not None:
        return
    assert score_all(case.pod, infos, state, pl) == case.expected


# --- TestPreferredAffinityWithHardPodAffinitySymmetricWeight ----------------------------------------

SERVICE_S1 = {"service": "S1"}
HARD_POD_AFFINITY = affinity(
    [
        term(
            selector(expr("service", "In", "S1")),
            "region",
            namespaces=["default", "subteam2.team2"],
            namespace_selector=selector(expr("team", "In", "team1")),
        )
    ]
)
HARD_NODES = [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)]


@pytest.mark.parametrize(
    ("name", "namespace", "weight", "expected", "want_status"),
    [
        ("with default weight", "default", 1, [MAX, MAX, 0], None),
        ("with zero weight", "default", 0, None, skip()),
        ("with no matching namespace", "subteam1.team2", 1, None, skip()),
        ("with matching NamespaceSelector", "subteam1.team1", 1, [MAX, MAX, 0], None),
        ("with matching Namespaces", "subteam2.team2", 1, [MAX, MAX, 0], None),
    ],
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    name: str, namespace: str, weight: int, expected: list[int] | None, want_status: Status | None
) -> None:
    pods = [p("node1", aff=HARD_POD_AFFINITY), p("node2", aff=HARD_POD_AFFINITY)]
    infos = snapshot(pods, HARD_NODES)
    pl = plugin(infos, NAMESPACES, weight)
    state = CycleState()
    incoming = p(labels=SERVICE_S1, ns=namespace)
    status = pl.pre_score(state, incoming, infos)
    assert status == want_status
    if status is not None:
        return
    assert score_all(incoming, infos, state, pl) == expected


# --- berth additions ---------------------------------------------------------------------------------


def test_score_without_pre_score_state_is_an_error() -> None:
    with pytest.raises(
        PluginError, match='failed to read "PreScoreInterPodAffinity" from cycleState: not found'
    ):
        plugin().score(CycleState(), p(), NodeInfo(node("n1")))


def test_raw_scores_are_signed_sums() -> None:
    """Score: +weight for affinity, -weight for anti-affinity, summed over the node's topology keys."""
    incoming = p(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)
    nodes = [node("node1", RG_CHINA_AZ1), node("node2", {"region": "China", "az": "az2"}), node("node3", AZ1)]
    infos = snapshot([p("node1", S1), p("node3", S2)], nodes)
    pl = plugin(infos)
    state = CycleState()
    assert pl.pre_score(state, incoming, infos) is None
    assert [pl.score(state, incoming, i) for i in infos] == [8 - 5, 8, -5]
    s = state.read(PRE_SCORE_STATE_KEY)
    assert isinstance(s, PreScoreState)
    assert s.topology_score == {"region": {"China": 8}, "az": {"az1": -5}}


def test_ignore_preferred_terms_still_scores_a_pod_with_preferred_terms() -> None:
    """The option only skips pods without preferred terms; existing pods' terms still count for the others."""
    incoming = p(labels=S2, aff=affinity(preferred=[weighted(1, in_term("security", "region", "none"))]))
    infos = snapshot(
        [p("node1", S1, STAY_WITH_S2_IN_REGION)], [node("node1", RG_CHINA), node("node2", RG_INDIA)]
    )
    pl = plugin(infos, ignore_preferred_terms_of_existing_pods=True)
    state = CycleState()
    assert pl.pre_score(state, incoming, infos) is None
    assert score_all(incoming, infos, state, pl) == [MAX, 0]


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ([3, 3, 3], [0, 0, 0]),
        ([-5, 0, 5], [0, 50, 100]),
        ([0, 1, 2], [0, 50, 100]),
        ([0, 1, 3], [0, 33, 100]),
        ([-7, -1, -3], [0, 100, 66]),
    ],
)
def test_normalize_truncates(raw: list[int], want: list[int]) -> None:
    scores = list(raw)
    normalize_scores(PreScoreState({"k": {"v": 1}}), scores)
    assert scores == want


def test_pre_score_error_code() -> None:
    infos = snapshot([], [node("node1", RG_CHINA)])
    status = plugin(infos).pre_score(CycleState(), p(aff=INVALID_AFFINITY_LABELS), infos)
    assert status is not None and status.code is Code.ERROR
    assert status.message().startswith("failed to parse pod: preferredAffinityTerms: values[0][security]: ")
