"""PreFilter, Filter and the AddPod/RemovePod extensions (``plugins/podtopologyspread/filtering.go``)."""

from __future__ import annotations

from collections.abc import Sequence

from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState, StateData
from app.framework.interfaces import FilterPlugin, PreFilterExtensions, PreFilterPlugin, PreFilterResult
from app.framework.status import Status, error, skip, unresolvable, unschedulable
from app.framework.types import NodeInfo, PodInfo
from app.plugins.nodeaffinity.node_affinity import pod_matches_node_selector_and_affinity
from app.plugins.podtopologyspread.common import (
    HONOR,
    SpreadBase,
    SpreadConstraint,
    count_pods_match_selector,
    has_required_node_affinity,
    match_node_inclusion_policies,
    node_labels_match_spread_constraints,
    tolerates_do_not_schedule_taints,
)

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """``criticalPaths``: two (topology value, match number) paths; ``paths[0]`` holds the minimum.

    ``paths[1]``'s number is >= ``paths[0]``'s but not necessarily the second minimum. Two paths are
    enough because preemption evaluates the victims of one node at a time, each on its own copy.
    """

    __slots__ = ("paths",)

    def __init__(self, paths: list[list[str | int]] | None = None) -> None:
        # Both start at ("", MaxInt32): an update for the value "" lands on paths[0], as in Go.
        self.paths: list[list[str | int]] = paths if paths is not None else [["", MAX_INT32], ["", MAX_INT32]]

    @property
    def min_match_num(self) -> int:
        """``paths[0].MatchNum``."""
        return int(self.paths[0][1])

    def update(self, tp_val: str, num: int) -> None:
        """``criticalPaths.update``: record that ``tp_val`` now has ``num`` matching pods."""
        p = self.paths
        if tp_val == p[0][0]:
            i = 0
        elif tp_val == p[1][0]:
            i = 1
        else:
            i = -1
        if i >= 0:
            p[i][1] = num
            if int(p[0][1]) > int(p[1][1]):
                p[0], p[1] = p[1], p[0]
        elif num < int(p[0][1]):
            p[1] = p[0]
            p[0] = [tp_val, num]
        elif num < int(p[1][1]):
            p[1] = [tp_val, num]

    def clone(self) -> CriticalPaths:
        """A copy."""
        return CriticalPaths([list(self.paths[0]), list(self.paths[1])])

    def __repr__(self) -> str:
        return f"CriticalPaths({self.paths!r})"


class PreFilterState(StateData):
    """``preFilterState``: per constraint, the critical paths and the matching pods per topology value.

    An empty state (no constraints) is legit and admits every node.
    """

    __slots__ = ("constraints", "critical_paths", "tp_value_to_match_num")

    def __init__(
        self,
        constraints: Sequence[SpreadConstraint] = (),
        critical_paths: list[CriticalPaths] | None = None,
        tp_value_to_match_num: list[dict[str, int]] | None = None,
    ) -> None:
        self.constraints: tuple[SpreadConstraint, ...] = tuple(constraints)
        self.critical_paths: list[CriticalPaths] = critical_paths if critical_paths is not None else []
        self.tp_value_to_match_num: list[dict[str, int]] = (
            tp_value_to_match_num if tp_value_to_match_num is not None else []
        )

    def min_match_num(self, constraint_id: int, min_domains: int) -> int:
        """The global minimum for the skew, 0 while fewer than ``minDomains`` domains are eligible."""
        if len(self.tp_value_to_match_num[constraint_id]) < min_domains:
            return 0
        return self.critical_paths[constraint_id].min_match_num

    def clone(self) -> PreFilterState:
        """Counts and paths copied (AddPod/RemovePod mutate them); constraints shared (immutable)."""
        return PreFilterState(
            self.constraints,
            [p.clone() for p in self.critical_paths],
            [dict(m) for m in self.tp_value_to_match_num],
        )


class Filtering(SpreadBase, PreFilterPlugin, FilterPlugin, PreFilterExtensions):
    """The hard (DoNotSchedule) half of PodTopologySpread."""

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Count matching pods per topology value over ``nodes`` (all nodes); Skip without constraints."""
        s = self.cal_pre_filter_state(pod, nodes)
        if not s.constraints:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        """AddPod/RemovePod, for nominated pods and preemption."""
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Count ``pod_to_add`` on ``node_info``."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        self._update_with_pod(s, pod_to_add.pod, pod_to_schedule, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Stop counting ``pod_to_remove`` on ``node_info``."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        self._update_with_pod(s, pod_to_remove.pod, pod_to_schedule, node_info.node, -1)
        return None

    def _update_with_pod(
        self, s: PreFilterState, updated_pod: Pod, preemptor: Pod, node: Node | None, delta: int
    ) -> None:
        """``updateWithPod``."""
        if updated_pod.namespace != preemptor.namespace or node is None:
            return
        if not node_labels_match_spread_constraints(node.labels, s.constraints):
            return
        if not self.enable_node_inclusion_policy and not pod_matches_node_selector_and_affinity(
            preemptor, node
        ):
            return
        labels = updated_pod.labels
        for i, c in enumerate(s.constraints):
            if not c.matches_pod(labels):
                continue
            if self.enable_node_inclusion_policy and not match_node_inclusion_policies(c, preemptor, node):
                continue
            v = node.labels[c.topology_key]
            counts = s.tp_value_to_match_num[i]
            counts[v] = counts.get(v, 0) + delta
            s.critical_paths[i].update(v, counts[v])

    def cal_pre_filter_state(self, pod: Pod, all_nodes: Sequence[NodeInfo]) -> PreFilterState:
        """``calPreFilterState``: one pass over the nodes and their pods (no per-Filter recounting).

        This pass visits every node for every pod, so the per-node work is kept to dictionary
        lookups: the node-affinity and taint checks that cannot reject (no nodeSelector or
        required affinity; an Ignore policy; a node without taints) are decided once per pod.
        """
        constraints = self.get_constraints(pod)
        if not constraints:
            return PreFilterState()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        namespace = pod.namespace
        inclusion = self.enable_node_inclusion_policy
        affinity_may_reject = has_required_node_affinity(pod)
        # Without inclusion policies, spreading only counts nodes that pass node affinity.
        node_affinity_gate = affinity_may_reject and not inclusion
        per_constraint = [
            (
                c.topology_key,
                c.selector,
                counts[i],
                inclusion and c.node_affinity_policy == HONOR and affinity_may_reject,
                inclusion and c.node_taints_policy == HONOR,
            )
            for i, c in enumerate(constraints)
        ]
        keys = frozenset(c.topology_key for c in constraints)
        for node_info in all_nodes:
            node = node_info.node
            if node is None:
                continue
            if node_affinity_gate and not pod_matches_node_selector_and_affinity(pod, node):
                continue
            labels = node.labels
            if not labels.keys() >= keys:  # nodeLabelsMatchSpreadConstraints
                continue
            pods = node_info.pods
            for key, selector, m, check_affinity, check_taints in per_constraint:
                if check_affinity and not pod_matches_node_selector_and_affinity(pod, node):
                    continue
                if check_taints and node.taints and not tolerates_do_not_schedule_taints(pod, node):
                    continue
                value = labels[key]
                found = count_pods_match_selector(pods, selector, namespace) if pods else 0
                m[value] = m.get(value, 0) + found
        paths = []
        for m in counts:
            p = CriticalPaths()
            for value, num in m.items():
                p.update(value, num)
            paths.append(p)
        return PreFilterState(constraints, paths, counts)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """``existing matching + self-match - global minimum <= maxSkew`` for every constraint.

        A node without a constraint's topology key is UnschedulableAndUnresolvable; too much skew is
        Unschedulable (preemption may help).
        """
        node = node_info.node
        if node is None:
            return error("node not found")
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not s.constraints:
            return None
        pod_labels = pod.labels
        node_labels = node.labels
        for i, c in enumerate(s.constraints):
            tp_val = node_labels.get(c.topology_key)
            if tp_val is None:
                return unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
            min_match_num = s.min_match_num(i, c.min_domains)
            self_match_num = 1 if c.matches_pod(pod_labels) else 0
            match_num = s.tp_value_to_match_num[i].get(tp_val, 0)
            if match_num + self_match_num - min_match_num > c.max_skew:
                return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None
