"""InterPodAffinity PreFilter/Filter (``plugins/interpodaffinity/filtering.go``).

PreFilter counts, per topology pair ``(key, value)``:

- ``existing_anti_affinity_counts``: existing pods' required anti-affinity terms matching the
  incoming pod (the symmetry rule), over the nodes having such pods only;
- ``affinity_counts``: existing pods matching *all* the incoming pod's required affinity terms;
- ``anti_affinity_counts``: existing pods matching each of its required anti-affinity terms.

Filter then only looks the node's labels up in these maps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from app.api.objects import Node, Pod
from app.framework.aggregate import NodeAggregate
from app.framework.cycle_state import StateData
from app.framework.types import NodeInfo, PodInfo
from app.plugins.interpodaffinity.terms import AffinityTerm, pod_info_terms, pod_matches_all_terms

PRE_FILTER_STATE_KEY = "PreFilterInterPodAffinity"

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

TopologyPair = tuple[str, str]
TopologyCounts = dict[TopologyPair, int]
"""``topologyToMatchedTermCount``: (topology key, value) → matching pods (or terms)."""


def _update(counts: TopologyCounts, node: Node, key: str, value: int) -> None:
    """``topologyToMatchedTermCount.update``: add where the node has the key; drop entries back at 0."""
    tv = node.labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    n = counts.get(pair, 0) + value
    if n == 0:
        # The value may be negative (RemovePod): an entry down to zero is deleted, as upstream.
        counts.pop(pair, None)
    else:
        counts[pair] = n


def update_with_affinity_terms(
    counts: TopologyCounts, terms: Sequence[AffinityTerm], pod: Pod, node: Node, value: int
) -> None:
    """Count each term's topology pair once when ``pod`` matches *all* of ``terms``."""
    if pod_matches_all_terms(terms, pod):
        for t in terms:
            _update(counts, node, t.topology_key, value)


def update_with_anti_affinity_terms(
    counts: TopologyCounts,
    terms: Sequence[AffinityTerm],
    pod: Pod,
    ns_labels: Mapping[str, str] | None,
    node: Node,
    value: int,
) -> None:
    """Count the topology pair of each of ``terms`` that ``pod`` matches."""
    for t in terms:
        if t.matches(pod, ns_labels):
            _update(counts, node, t.topology_key, value)


class PreFilterState(StateData):
    """``preFilterState``: the three count maps, the incoming pod's merged terms and namespace labels."""

    __slots__ = (
        "affinity_counts",
        "anti_affinity_counts",
        "existing_anti_affinity_counts",
        "namespace_labels",
        "pod",
        "required_affinity",
        "required_anti_affinity",
    )

    def __init__(
        self,
        pod: Pod,
        required_affinity: tuple[AffinityTerm, ...],
        required_anti_affinity: tuple[AffinityTerm, ...],
        namespace_labels: Mapping[str, str],
        existing_anti_affinity_counts: TopologyCounts,
        affinity_counts: TopologyCounts,
        anti_affinity_counts: TopologyCounts,
    ) -> None:
        self.pod = pod
        self.required_affinity = required_affinity
        self.required_anti_affinity = required_anti_affinity
        self.namespace_labels = namespace_labels
        self.existing_anti_affinity_counts = existing_anti_affinity_counts
        self.affinity_counts = affinity_counts
        self.anti_affinity_counts = anti_affinity_counts

    def clone(self) -> PreFilterState:
        """Copies of the count maps (AddPod/RemovePod mutate them); terms and labels are shared."""
        return PreFilterState(
            self.pod,
            self.required_affinity,
            self.required_anti_affinity,
            self.namespace_labels,
            dict(self.existing_anti_affinity_counts),
            dict(self.affinity_counts),
            dict(self.anti_affinity_counts),
        )

    def update_with_pod(self, pod_info: PodInfo, node: Node, multiplier: int) -> None:
        """``updateWithPod``: account for ``pod_info`` added to (1) or removed from (-1) ``node``."""
        other = pod_info.pod
        update_with_anti_affinity_terms(
            self.existing_anti_affinity_counts,
            pod_info_terms(pod_info).required_anti_affinity,
            self.pod,
            self.namespace_labels,
            node,
            multiplier,
        )
        update_with_affinity_terms(self.affinity_counts, self.required_affinity, other, node, multiplier)
        # The incoming pod's terms have their namespaceSelector merged: no namespace labels needed.
        update_with_anti_affinity_terms(
            self.anti_affinity_counts, self.required_anti_affinity, other, None, node, multiplier
        )


PairContribution = tuple[tuple[int, TopologyPair, int], ...]
"""One node's counts: (which map, topology pair, count)."""

NodeCounter = Callable[[NodeInfo, Node, list[TopologyCounts]], None]
"""Counts one node's pods into the maps it is given."""


class PairCounts(NodeAggregate[PairContribution]):
    """Topology-pair count maps summed over the nodes, so the snapshot can keep them across cycles.

    PreFilter only ever adds, so an entry exists exactly while its count is positive, as upstream.
    """

    __slots__ = ("_count_node", "counts")

    def __init__(self, maps: int, count_node: NodeCounter) -> None:
        self._count_node = count_node
        self.counts: list[TopologyCounts] = [{} for _ in range(maps)]

    def contribution(self, node_info: NodeInfo) -> PairContribution | None:
        """The node's pods counted into fresh maps."""
        node = node_info.node
        if node is None:
            return None
        local: list[TopologyCounts] = [{} for _ in self.counts]
        self._count_node(node_info, node, local)
        return tuple((i, pair, n) for i, m in enumerate(local) for pair, n in m.items()) or None

    def add(self, contribution: PairContribution) -> None:
        """Add the node's counts."""
        counts = self.counts
        for i, pair, n in contribution:
            m = counts[i]
            m[pair] = m.get(pair, 0) + n

    def subtract(self, contribution: PairContribution) -> None:
        """Take the node's counts back; an entry down to zero is deleted."""
        counts = self.counts
        for i, pair, n in contribution:
            m = counts[i]
            left = m[pair] - n
            if left:
                m[pair] = left
            else:
                del m[pair]


def existing_anti_affinity_counter(pod: Pod, ns_labels: Mapping[str, str]) -> NodeCounter:
    """``getExistingAntiAffinityCounts`` for one node: its pods' required anti-affinity terms matching ``pod``.

    Only pods with required anti-affinity are visited, so the snapshot's list of nodes having such
    pods is all a sum needs to visit.
    """

    def count(node_info: NodeInfo, node: Node, maps: list[TopologyCounts]) -> None:
        for existing in node_info.pods_with_required_anti_affinity:
            update_with_anti_affinity_terms(
                maps[0], pod_info_terms(existing).required_anti_affinity, pod, ns_labels, node, 1
            )

    return count


def incoming_terms_counter(
    required_affinity: Sequence[AffinityTerm], required_anti_affinity: Sequence[AffinityTerm]
) -> NodeCounter:
    """``getIncomingAffinityAntiAffinityCounts`` for one node: its pods matching the incoming pod's
    terms, into (affinity counts, anti-affinity counts)."""

    def count(node_info: NodeInfo, node: Node, maps: list[TopologyCounts]) -> None:
        affinity, anti_affinity = maps
        for existing in node_info.pods:
            other = existing.pod
            update_with_affinity_terms(affinity, required_affinity, other, node, 1)
            update_with_anti_affinity_terms(anti_affinity, required_anti_affinity, other, None, node, 1)

    return count


def incoming_affinity_anti_affinity_counts(
    required_affinity: Sequence[AffinityTerm],
    required_anti_affinity: Sequence[AffinityTerm],
    nodes: Sequence[NodeInfo],
) -> tuple[TopologyCounts, TopologyCounts]:
    """``getIncomingAffinityAntiAffinityCounts``: existing pods matching the incoming pod's terms."""
    if not required_affinity and not required_anti_affinity:
        return {}, {}
    counts = PairCounts(2, incoming_terms_counter(required_affinity, required_anti_affinity))
    counts.add_all(nodes)
    return counts.counts[0], counts.counts[1]


def satisfy_existing_pods_anti_affinity(state: PreFilterState, node: Node) -> bool:
    """No existing pod's anti-affinity term forbids the node's topology pairs."""
    counts = state.existing_anti_affinity_counts
    if counts:
        for pair in node.labels.items():
            if counts.get(pair, 0) > 0:
                return False
    return True


def satisfy_pod_anti_affinity(state: PreFilterState, node: Node) -> bool:
    """No pod matching one of the incoming pod's anti-affinity terms is in the node's topology."""
    counts = state.anti_affinity_counts
    if counts:
        labels = node.labels
        for term in state.required_anti_affinity:
            tv = labels.get(term.topology_key)
            if tv is not None and counts.get((term.topology_key, tv), 0) > 0:
                return False
    return True


def satisfy_pod_affinity(state: PreFilterState, node: Node) -> bool:
    """Every affinity term's topology key is on the node with a matching pod in its domain.

    The first-pod-of-a-group rule: when no pod anywhere matches the terms and the pod matches its
    own terms, any node carrying all the topology keys passes, else such a group could never start.
    """
    pods_exist = True
    labels = node.labels
    counts = state.affinity_counts
    for term in state.required_affinity:
        tv = labels.get(term.topology_key)
        if tv is None:
            # All topology labels must exist on the node.
            return False
        if counts.get((term.topology_key, tv), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        return not counts and pod_matches_all_terms(state.required_affinity, state.pod)
    return True
