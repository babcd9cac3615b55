"""PreScore, Score and NormalizeScore (``plugins/podtopologyspread/scoring.go``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from app.api.objects import Pod
from app.framework.cycle_state import CycleState, StateData
from app.framework.interfaces import MAX_NODE_SCORE, PluginError, PreScorePlugin, ScorePlugin
from app.framework.status import Status, error, skip
from app.framework.types import NodeInfo
from app.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    SCHEDULE_ANYWAY,
    SpreadBase,
    SpreadConstraint,
    count_pods_match_selector,
    node_labels_match_spread_constraints,
)
from app.plugins.podtopologyspread.counting import matching_pod_counts
from app.plugins.podtopologyspread.filtering import NAME

PRE_SCORE_STATE_KEY = "PreScore" + NAME
_INVALID_SCORE = -1


class PreScoreState(StateData):
    """``preScoreState``; immutable once written, so :meth:`clone` returns itself (as upstream).

    ``topology_value_to_pod_counts[i]`` counts matching pods per value of constraint ``i``'s key,
    for the values some filtered node has (hostname constraints are counted per node in Score).
    """

    __slots__ = (
        "constraints",
        "ignored_nodes",
        "topology_normalizing_weight",
        "topology_value_to_pod_counts",
    )

    def __init__(self) -> None:
        self.constraints: list[SpreadConstraint] = []
        self.ignored_nodes: set[str] = set()
        self.topology_value_to_pod_counts: list[dict[str, int]] = []
        self.topology_normalizing_weight: list[float] = []


def topology_normalizing_weight(size: int) -> float:
    """``topologyNormalizingWeight``: ``ln(size + 2)``, so small topologies are not watered down by big ones."""
    return math.log(size + 2)


def score_for_count(cnt: int, max_skew: int, tp_weight: float) -> float:
    """``scoreForCount``: ``cnt * weight + (maxSkew - 1)``; maxSkew-1 tolerates skews up to maxSkew."""
    return float(cnt) * tp_weight + float(max_skew - 1)


def go_round(x: float) -> int:
    """Go's ``math.Round``: half away from zero (Python's round() is half to even)."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return int(t)


class Scoring(SpreadBase, PreScorePlugin, ScorePlugin):
    """The soft (ScheduleAnyway) half of PodTopologySpread."""

    normalizes = True

    def _init_pre_score_state(
        self, s: PreScoreState, pod: Pod, filtered_nodes: Sequence[NodeInfo], require_all_topologies: bool
    ) -> None:
        """``initPreScoreState``: constraints, ignored nodes, counted values and normalizing weights."""
        if pod.topology_spread_constraints:
            s.constraints = self.filter_constraints(
                pod.topology_spread_constraints, pod.labels, SCHEDULE_ANYWAY
            )
        else:
            s.constraints = self.build_default_constraints(pod, SCHEDULE_ANYWAY)
        if not s.constraints:
            return
        s.topology_value_to_pod_counts = [{} for _ in s.constraints]
        topo_size = [0] * len(s.constraints)
        for node_info in filtered_nodes:
            node = node_info.node
            if node is None:
                continue
            if require_all_topologies and not node_labels_match_spread_constraints(
                node.labels, s.constraints
            ):
                # Nodes without all the topology keys are scored 0 later.
                s.ignored_nodes.add(node.name)
                continue
            for i, c in enumerate(s.constraints):
                # Per-node counts are calculated during Score.
                if c.topology_key == LABEL_HOSTNAME:
                    continue
                value = node.labels.get(c.topology_key, "")
                counts = s.topology_value_to_pod_counts[i]
                if value not in counts:
                    counts[value] = 0
                    topo_size[i] += 1
        weights = []
        for i, c in enumerate(s.constraints):
            size = topo_size[i]
            if c.topology_key == LABEL_HOSTNAME:
                size = len(filtered_nodes) - len(s.ignored_nodes)
            weights.append(topology_normalizing_weight(size))
        s.topology_normalizing_weight = weights

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Count matching pods over all snapshot nodes for the topology values of the filtered ``nodes``."""
        all_nodes = self.handle.snapshot.list()
        if not all_nodes:
            return skip()
        s = PreScoreState()
        # Only non-system-default spreading requires every topology key on a node: nodes without a zone
        # label still get hostname spreading under the system defaults.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        self._init_pre_score_state(s, pod, nodes, require_all)
        if not s.constraints:
            return skip()
        # Hostname domains are counted per node in Score: here they count no pod (a None selector).
        counted = [
            dataclasses.replace(c, selector=None) if c.topology_key == LABEL_HOSTNAME else c
            for c in s.constraints
        ]
        all_counts = matching_pod_counts(
            pod,
            counted,
            all_nodes,
            self.handle.snapshot,
            inclusion_policies=self.enable_node_inclusion_policy,
            require_all_keys=require_all,
        )
        # Only values of candidate nodes are counted (hostname ones never: Score counts those).
        for counts, found in zip(s.topology_value_to_pod_counts, all_counts, strict=True):
            for value in counts:
                counts[value] = found.get(value, 0)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The (rounded) weighted number of matching pods in the node's domains; normalized later."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            raise PluginError(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        node = node_info.node
        if node is None:
            raise PluginError("node not found")
        if node.name in s.ignored_nodes:
            return 0
        score = 0.0
        labels = node.labels
        for i, c in enumerate(s.constraints):
            tp_val = labels.get(c.topology_key)
            if tp_val is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_match_selector(node_info.pods, c.selector, pod.namespace)
            else:
                cnt = s.topology_value_to_pod_counts[i].get(tp_val, 0)
            score += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i])
        return go_round(score)

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        """Fewest matching pods → 100: ``100 * (max + min - score) / max``; ignored nodes get 0."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        min_score = 2**63 - 1
        max_score = 0
        ignored = s.ignored_nodes
        for i, n in enumerate(nodes):
            if n.name in ignored:
                scores[i] = _INVALID_SCORE
                continue
            sc = scores[i]
            min_score = min(min_score, sc)
            max_score = max(max_score, sc)
        for i, sc in enumerate(scores):
            if sc == _INVALID_SCORE:
                scores[i] = 0
            elif max_score == 0:
                scores[i] = MAX_NODE_SCORE
            else:
                # Non-negative operands: floor division is Go's truncating int64 division.
                scores[i] = MAX_NODE_SCORE * (max_score + min_score - sc) // max_score
        return None
