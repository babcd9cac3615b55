"""InterPodAffinity PreScore/Score/NormalizeScore (``plugins/interpodaffinity/scoring.go``).

PreScore builds ``topology_score[key][value]``: the weights of the preferred terms, both ways
between the incoming pod and existing pods, plus ``hardPodAffinityWeight`` for each existing pod's
required affinity term the incoming pod matches. Score sums the entries of the node's labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.api.objects import Node, Pod
from app.framework.aggregate import NodeAggregate
from app.framework.cycle_state import StateData
from app.framework.interfaces import MAX_NODE_SCORE
from app.framework.types import NodeInfo, PodInfo
from app.plugins.interpodaffinity.terms import AffinityTerm, pod_info_terms

PRE_SCORE_STATE_KEY = "PreScoreInterPodAffinity"

ScoreMap = dict[str, dict[str, int]]
"""``scoreMap``: topology key → topology value → score."""

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


class PreScoreState(StateData):
    """``preScoreState``: the topology scores (immutable once built, so not copied by clone)."""

    __slots__ = ("topology_score",)

    def __init__(self, topology_score: ScoreMap) -> None:
        self.topology_score = topology_score


def _process_term(
    scores: ScoreMap,
    term: AffinityTerm,
    weight: int,
    pod: Pod,
    ns_labels: Mapping[str, str] | None,
    node: Node,
    multiplier: int,
) -> None:
    """``scoreMap.processTerm``: add ``weight * multiplier`` at the node's value of the term's key."""
    if term.matches(pod, ns_labels):
        tv = node.labels.get(term.topology_key)
        if tv is not None:
            _add(scores, term.topology_key, tv, weight * multiplier)


def _add(scores: ScoreMap, key: str, value: str, amount: int) -> None:
    """Add ``amount`` at ``scores[key][value]``, creating the entry (an entry counts even at 0)."""
    by_value = scores.get(key)
    if by_value is None:
        by_value = scores[key] = {}
    by_value[value] = by_value.get(value, 0) + amount


def process_incoming_terms(
    scores: ScoreMap, terms: Sequence[tuple[AffinityTerm, int]], pods: Sequence[PodInfo], node: Node
) -> None:
    """The incoming pod's half of ``processExistingPod`` for all the pods on one node at once.

    ``terms`` are the incoming pod's preferred terms with signed weights (namespaceSelector merged,
    so matched without namespace labels). Each matching pod adds the weight at the node's value of
    the term's key, so the node adds ``weight * matches``; a term no pod matches adds no entry.
    """
    labels = node.labels
    for term, weight in terms:
        tv = labels.get(term.topology_key)
        if tv is None:
            continue
        matches = term.matches
        found = 0
        for pi in pods:
            if matches(pi.pod, None):
                found += 1
        if found:
            _add(scores, term.topology_key, tv, weight * found)


def process_existing_pod_terms(
    scores: ScoreMap,
    hard_pod_affinity_weight: int,
    ns_labels: Mapping[str, str],
    existing: PodInfo,
    node: Node,
    incoming: Pod,
) -> None:
    """The existing pod's half of ``processExistingPod`` (symmetry): its required affinity terms the
    incoming pod matches weigh ``hardPodAffinityWeight``, its preferred terms their own weights.

    ``ns_labels`` are the labels of the incoming pod's namespace.
    """
    terms = pod_info_terms(existing)
    if hard_pod_affinity_weight > 0:
        for t in terms.required_affinity:
            _process_term(scores, t, hard_pod_affinity_weight, incoming, ns_labels, node, 1)
    for w in terms.preferred_affinity:
        _process_term(scores, w.term, w.weight, incoming, ns_labels, node, 1)
    for w in terms.preferred_anti_affinity:
        _process_term(scores, w.term, w.weight, incoming, ns_labels, node, -1)


Contribution = tuple[tuple[str, str, int], ...]
"""One node's entries of the topology scores: (topology key, the node's value, amount)."""


class TopologyScores(NodeAggregate[Contribution]):
    """PreScore's pass over the nodes as a sum of per-node entries, so the snapshot can keep it.

    An entry exists once some node added to it, even if the amounts cancel out (as in upstream's
    map); it disappears with the last node contributing to it.
    """

    __slots__ = ("_hard_weight", "_incoming", "_incoming_terms", "_ns_labels", "_refs", "scores")

    def __init__(
        self,
        incoming: Pod,
        incoming_terms: Sequence[tuple[AffinityTerm, int]],
        ns_labels: Mapping[str, str],
        hard_pod_affinity_weight: int,
    ) -> None:
        """``incoming_terms``: the incoming pod's preferred terms with signed weights, namespaces merged;
        ``ns_labels``: the labels of its namespace."""
        self._incoming = incoming
        self._incoming_terms = incoming_terms
        self._ns_labels = ns_labels
        self._hard_weight = hard_pod_affinity_weight
        self.scores: ScoreMap = {}
        self._refs: dict[tuple[str, str], int] = {}

    def contribution(self, node_info: NodeInfo) -> Contribution | None:
        """``processExistingPod`` for every pod of the node, both ways."""
        if not self._incoming_terms and not node_info.pods_with_affinity:
            return None
        node = node_info.node
        if node is None or not node.labels:
            return None
        scores: ScoreMap = {}
        if self._incoming_terms and node_info.pods:
            process_incoming_terms(scores, self._incoming_terms, node_info.pods, node)
        # Only pods with affinity have terms that can weigh the incoming pod (symmetry).
        for existing in node_info.pods_with_affinity:
            process_existing_pod_terms(
                scores, self._hard_weight, self._ns_labels, existing, node, self._incoming
            )
        if not scores:
            return None
        return tuple(
            (key, value, amount) for key, by_value in scores.items() for value, amount in by_value.items()
        )

    def add(self, contribution: Contribution) -> None:
        """Add the node's entries."""
        refs = self._refs
        for key, value, amount in contribution:
            _add(self.scores, key, value, amount)
            refs[key, value] = refs.get((key, value), 0) + 1

    def subtract(self, contribution: Contribution) -> None:
        """Take the node's entries back; an entry no node adds to any more is removed."""
        refs, scores = self._refs, self.scores
        for key, value, amount in contribution:
            left = refs[key, value] - 1
            by_value = scores[key]
            if left:
                refs[key, value] = left
                by_value[value] -= amount
                continue
            del refs[key, value], by_value[value]
            if not by_value:
                del scores[key]


def score_node(state: PreScoreState, node: Node) -> int:
    """``Score``: the sum of the scores at the node's values of each topology key."""
    score = 0
    labels = node.labels
    for key, by_value in state.topology_score.items():
        tv = labels.get(key)
        if tv is not None:
            score += by_value.get(tv, 0)
    return score


def normalize_scores(state: PreScoreState, scores: list[int]) -> None:
    """``NormalizeScore``: ``int64(100 * float64(s - min) / float64(max - min))``, 0 when all are equal."""
    if not state.topology_score:
        return
    min_count, max_count = _INT64_MAX, _INT64_MIN
    for s in scores:
        if s > max_count:
            max_count = s
        if s < min_count:
            min_count = s
    diff = max_count - min_count
    for i, s in enumerate(scores):
        f = 0.0
        if diff > 0:
            # Both operands converted to float64 before dividing, as Go does; int() truncates as int64().
            f = float(MAX_NODE_SCORE) * (float(s - min_count) / float(diff))
        scores[i] = int(f)
