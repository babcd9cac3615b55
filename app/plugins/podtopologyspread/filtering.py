"""PreFilter, Filter and the AddPod/RemovePod extensions (``plugins/podtopologyspread/filtering.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState, StateData
from app.framework.interfaces import FilterPlugin, PreFilterExtensions, PreFilterPlugin, PreFilterResult
from app.framework.status import Status, error, skip, unresolvable, unschedulable
from app.framework.types import NodeInfo, PodInfo
from app.plugins.nodeaffinity.node_affinity import pod_matches_node_selector_and_affinity
from app.plugins.podtopologyspread.common import (
    SpreadBase,
    SpreadConstraint,
    match_node_inclusion_policies,
    node_labels_match_spread_constraints,
)
from app.plugins.podtopologyspread.counting import matching_pod_counts

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

    __slots__ = ("_limits", "constraints", "critical_paths", "tp_value_to_match_num")

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
        self._limits: tuple[tuple[str, dict[str, int], int], ...] | None = None

    def min_match_num(self, constraint_id: int, min_domains: int) -> int:
        """The global minimum for the skew, 0 while fewer than ``minDomains`` domains are eligible."""
        if len(self.tp_value_to_match_num[constraint_id]) < min_domains:
            return 0
        return self.critical_paths[constraint_id].min_match_num

    def limits(self, pod_labels: Mapping[str, str]) -> tuple[tuple[str, dict[str, int], int], ...]:
        """Per constraint: (topology key, matching pods per value, the most a node's domain may hold).

        A node passes a constraint when its domain's count is at most ``maxSkew + global minimum -
        self-match``: Filter's inequality with everything but the domain's count worked out once
        for the pod (``pod_labels``, the labels of the pod this state was built for) instead of per
        node. Worked out again after AddPod/RemovePod.
        """
        limits = self._limits
        if limits is None:
            limits = self._limits = tuple(
                (
                    c.topology_key,
                    self.tp_value_to_match_num[i],
                    c.max_skew
                    + self.min_match_num(i, c.min_domains)
                    - (1 if c.matches_pod(pod_labels) else 0),
                )
                for i, c in enumerate(self.constraints)
            )
        return limits

    def count(self, constraint_id: int, tp_val: str, delta: int) -> None:
        """Add ``delta`` matching pods at ``tp_val`` for a constraint (AddPod/RemovePod)."""
        counts = self.tp_value_to_match_num[constraint_id]
        counts[tp_val] = counts.get(tp_val, 0) + delta
        self.critical_paths[constraint_id].update(tp_val, counts[tp_val])
        self._limits = None

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
            s.count(i, node.labels[c.topology_key], delta)

    def cal_pre_filter_state(self, pod: Pod, all_nodes: Sequence[NodeInfo]) -> PreFilterState:
        """``calPreFilterState``: matching pods per topology value over ``all_nodes``, and the critical paths.

        The counts come from :func:`matching_pod_counts`, which the snapshot keeps across cycles
        when it can (no recounting of unchanged nodes).
        """
        constraints = self.get_constraints(pod)
        if not constraints:
            return PreFilterState()
        counts = matching_pod_counts(
            pod,
            constraints,
            all_nodes,
            self.handle.snapshot,
            inclusion_policies=self.enable_node_inclusion_policy,
        )
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
        node_labels = node.labels
        for key, counts, limit in s.limits(pod.labels):
            tp_val = node_labels.get(key)
            if tp_val is None:
                return unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
            if counts.get(tp_val, 0) > limit:
                return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None
