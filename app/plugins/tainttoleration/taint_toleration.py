"""TaintToleration (``plugins/tainttoleration/taint_toleration.go``).

The TaintTolerationComparisonOperators gate (Gt/Lt tolerations) is alpha and off in v1.36, so
tolerations compare by Equal/Exists only (:meth:`Toleration.tolerates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from app.api.objects import Pod, Taint, Toleration
from app.framework.cycle_state import CycleState, StateData
from app.framework.events import ClusterEventWithHint, QueueingHint, as_nodes, as_pods
from app.framework.interfaces import EnqueueExtensions, FilterPlugin, PluginError, PreScorePlugin, ScorePlugin
from app.framework.status import Status, error, unresolvable
from app.framework.types import NodeInfo
from app.plugins.helper.node_filters import filter_flagged_nodes
from app.plugins.helper.normalize_score import default_normalize_score
from app.plugins.helper.taint_events import taint_events

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

#: Effects the Filter enforces (``helper.DoNotScheduleTaintsFilterFunc``).
_DO_NOT_SCHEDULE = frozenset(("NoSchedule", "NoExecute"))


def has_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """A NoSchedule/NoExecute taint none of ``tolerations`` tolerates (``FindMatchingUntoleratedTaint``)."""
    return any(
        taint.effect in _DO_NOT_SCHEDULE and not any(t.tolerates(taint) for t in tolerations)
        for taint in taints
    )


class _PreScoreState(StateData):
    """The pod's tolerations that can tolerate a PreferNoSchedule taint (effect empty or PreferNoSchedule)."""

    __slots__ = ("tolerations",)

    def __init__(self, tolerations: tuple[Toleration, ...]) -> None:
        self.tolerations = tolerations


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    """Filters out nodes with untolerated NoSchedule/NoExecute taints; prefers fewer PreferNoSchedule ones."""

    name: ClassVar[str] = NAME
    normalizes: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """UnschedulableAndUnresolvable at the first NoSchedule/NoExecute taint no toleration tolerates."""
        node = node_info.node
        if node is None:
            return error("node not found")
        tolerations = pod.tolerations
        for taint in node.taints:
            if taint.effect not in _DO_NOT_SCHEDULE:
                continue
            for toleration in tolerations:
                if toleration.tolerates(taint):
                    break
            else:
                return unresolvable(ERR_REASON_UNTOLERATED)
        return None

    def filter_all(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> list[Status | None] | None:
        """Only tainted nodes (and missing ones) to check."""
        return filter_flagged_nodes(self, "taints", state, pod, nodes)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Keep only the tolerations that matter for PreferNoSchedule taints. Never skips, as upstream."""
        tolerations = tuple(t for t in pod.tolerations if not t.effect or t.effect == "PreferNoSchedule")
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(tolerations))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The number of PreferNoSchedule taints on the node the pod does not tolerate."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            raise PluginError(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        node = node_info.node
        if node is None:
            raise PluginError("node not found")
        tolerations = s.tolerations
        count = 0
        for taint in node.taints:
            if taint.effect != "PreferNoSchedule":
                continue
            for toleration in tolerations:
                if toleration.tolerates(taint):
                    break
            else:
                count += 1
        return count

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node; an untainted node (the common case) scores 0 at once."""
        score = self.score
        if not isinstance(state.get(PRE_SCORE_STATE_KEY), _PreScoreState):
            return [score(state, pod, n) for n in nodes]  # fails as score does
        return [0 if n.node is not None and not n.node.taints else score(state, pod, n) for n in nodes]

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        """Reverse-normalize: the node with the most intolerable taints gets 0, none gets 100."""
        return default_normalize_score(100, True, scores)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or its taints changed; the pod getting a toleration."""
        return taint_events(
            self.is_schedulable_after_node_change, self.is_schedulable_after_pod_toleration_change
        )

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the node went from having a taint the pod does not tolerate to having none."""
        original, modified = as_nodes(old, new)
        if modified is None:
            return QueueingHint.QUEUE_SKIP
        was_untolerated = original is None or has_untolerated_taint(original.taints, pod.tolerations)
        if was_untolerated and not has_untolerated_taint(modified.taints, pod.tolerations):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when ``pod`` itself got a toleration."""
        _, modified = as_pods(old, new)
        if modified is not None and modified.uid == pod.uid:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
