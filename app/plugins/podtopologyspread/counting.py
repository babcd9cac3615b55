"""Matching pods per topology value, summed over the nodes (PreFilter's counting pass).

``calPreFilterState`` visits every node and every pod on it. As a :class:`NodeAggregate` the sum is
kept by the snapshot across cycles whenever a node's contribution depends on nothing of the
incoming pod but its namespace and constraints: then only the nodes changed since the last attempt
are recounted. When the pod's node affinity or tolerations decide which nodes count, the same
aggregate is summed afresh for the attempt.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from app.api.objects import Pod
from app.framework.aggregate import NodeAggregate
from app.framework.interfaces import NodeInfoLister
from app.framework.types import NodeInfo
from app.plugins.nodeaffinity.node_affinity import pod_matches_node_selector_and_affinity
from app.plugins.podtopologyspread.common import (
    HONOR,
    SpreadConstraint,
    count_pods_match_selector,
    has_required_node_affinity,
    tolerates_do_not_schedule_taints,
)

Contribution = tuple[tuple[str, int] | None, ...]
"""Per constraint, the node's (topology value, matching pods), or None where the node does not count."""


class MatchingPodCounts(NodeAggregate[Contribution]):
    """Per constraint: matching pods per topology value, over the nodes having every constraint's key.

    A value appears as soon as one counted node has it, even with no matching pod: it is a domain
    (minDomains and the critical paths see it). Without ``require_all_keys`` (Score under system
    defaulting) every node counts, under the value "" for a key it lacks.
    """

    __slots__ = (
        "_checks",
        "_gate",
        "_keys",
        "_namespace",
        "_per_constraint",
        "_pod",
        "_require_all_keys",
        "_values",
        "counts",
    )

    def __init__(
        self,
        pod: Pod,
        constraints: Sequence[SpreadConstraint],
        *,
        node_affinity_gate: bool,
        checks: Sequence[tuple[bool, bool]] | None,
        require_all_keys: bool = True,
    ) -> None:
        """``checks[i]``: whether constraint ``i`` honors the pod's node affinity, and its taints
        (None: no constraint checks either).

        ``node_affinity_gate``: nodes the pod's node affinity rejects count for no constraint (the
        behaviour without node inclusion policies).
        """
        self._pod = pod
        self._namespace = pod.namespace
        self._per_constraint = tuple((c.topology_key, c.selector) for c in constraints)
        self._keys = frozenset(c.topology_key for c in constraints)
        self._require_all_keys = require_all_keys
        self._gate = node_affinity_gate
        self._checks = None if checks is None else tuple(checks)
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        # How many counted nodes have each value: a value leaves the sum with its last node.
        self._values: list[dict[str, int]] = [{} for _ in constraints]

    def contribution(self, node_info: NodeInfo) -> Contribution | None:
        """The node's value and matching pods per constraint; None without every topology key."""
        node = node_info.node
        if node is None:
            return None
        labels = node.labels
        if self._require_all_keys:
            if not labels.keys() >= self._keys:  # nodeLabelsMatchSpreadConstraints
                return None
        else:
            labels = {key: labels.get(key, "") for key in self._keys}
        pod, namespace, pods = self._pod, self._namespace, node_info.pods
        if self._gate and not pod_matches_node_selector_and_affinity(pod, node):
            return None
        checks = self._checks
        if checks is None:
            return tuple(
                (labels[key], count_pods_match_selector(pods, selector, namespace) if pods else 0)
                for key, selector in self._per_constraint
            )
        out: list[tuple[str, int] | None] = []
        for (key, selector), (check_affinity, check_taints) in zip(self._per_constraint, checks, strict=True):
            if (check_affinity and not pod_matches_node_selector_and_affinity(pod, node)) or (
                check_taints and node.taints and not tolerates_do_not_schedule_taints(pod, node)
            ):
                out.append(None)
                continue
            out.append((labels[key], count_pods_match_selector(pods, selector, namespace) if pods else 0))
        return tuple(out)

    def add(self, contribution: Contribution) -> None:
        """Count the node's pods in its domains."""
        for entry, counts, values in zip(contribution, self.counts, self._values, strict=True):
            if entry is not None:
                value, found = entry
                counts[value] = counts.get(value, 0) + found
                values[value] = values.get(value, 0) + 1

    def subtract(self, contribution: Contribution) -> None:
        """Uncount the node's pods; a domain without nodes left disappears."""
        for entry, counts, values in zip(contribution, self.counts, self._values, strict=True):
            if entry is not None:
                value, found = entry
                left = values[value] - 1
                if left:
                    values[value] = left
                    counts[value] -= found
                else:
                    del values[value], counts[value]


def matching_pod_counts(
    pod: Pod,
    constraints: Sequence[SpreadConstraint],
    all_nodes: Sequence[NodeInfo],
    snapshot: NodeInfoLister,
    *,
    inclusion_policies: bool,
    require_all_keys: bool = True,
) -> list[dict[str, int]]:
    """Per constraint, matching pods per topology value over ``all_nodes``; the caller may keep the dicts.

    Kept by the snapshot across cycles when ``all_nodes`` is its node list and the counting does not
    depend on the pod's node affinity or tolerations. A constraint whose selector is None (Nothing)
    counts no pod, only the domains.
    """
    affinity_may_reject = has_required_node_affinity(pod)
    honored = [
        (
            inclusion_policies and c.node_affinity_policy == HONOR and affinity_may_reject,
            inclusion_policies and c.node_taints_policy == HONOR,
        )
        for c in constraints
    ]
    checks = honored if any(a or t for a, t in honored) else None
    # Without inclusion policies, spreading only counts nodes that pass node affinity.
    gate = affinity_may_reject and not inclusion_policies

    def factory() -> MatchingPodCounts:
        return MatchingPodCounts(
            pod, constraints, node_affinity_gate=gate, checks=checks, require_all_keys=require_all_keys
        )

    if gate or checks is not None or all_nodes is not snapshot.list():
        aggregate = factory()
        aggregate.add_all(all_nodes)
        return aggregate.counts
    key: Hashable = (
        "PodTopologySpread/matching",
        require_all_keys,
        pod.namespace,
        tuple((c.topology_key, c.selector) for c in constraints),
    )
    return [dict(m) for m in snapshot.aggregate(key, factory).counts]
