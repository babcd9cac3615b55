"""InterPodAffinity (``plugins/interpodaffinity/plugin.go``): required and preferred pod (anti-)affinity.

The per-cycle work is over the snapshot's nodes having pods with (required anti-)affinity, plus,
only when the incoming pod has terms of its own, over every pod; each pod's parsed terms are cached
in its PodInfo. These sums are kept by the snapshot across cycles (:mod:`app.framework.aggregate`),
so that an attempt recounts only the nodes changed since the previous one with the same key. See
:mod:`.filtering` and :mod:`.scoring`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState
from app.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    as_nodes,
    as_pods,
    node_actions,
)
from app.framework.interfaces import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginError,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from app.framework.status import Status, error, skip, unresolvable, unschedulable
from app.framework.types import NodeInfo, PodInfo
from app.plugins.interpodaffinity import filtering, scoring
from app.plugins.interpodaffinity.args import InterPodAffinityArgs
from app.plugins.interpodaffinity.filtering import PRE_FILTER_STATE_KEY, PreFilterState
from app.plugins.interpodaffinity.scoring import PRE_SCORE_STATE_KEY, PreScoreState
from app.plugins.interpodaffinity.terms import (
    AffinityTerm,
    NamespaceLabels,
    merge_namespaces,
    merge_weighted_namespaces,
    parse_pod_terms,
    pod_matches_all_terms,
)

NAME = "InterPodAffinity"


class _Extensions(PreFilterExtensions):
    """``AddPod``/``RemovePod``: update the PreFilter counts for a pod added to or removed from a node."""

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Count ``pod_to_add`` as running on ``node_info``."""
        return _update_state(state, pod_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Stop counting ``pod_to_remove`` on ``node_info``."""
        return _update_state(state, pod_to_remove, node_info, -1)


_EXTENSIONS = _Extensions()


def _read_pre_filter_state(state: CycleState) -> PreFilterState | None:
    s = state.get(PRE_FILTER_STATE_KEY)
    return s if isinstance(s, PreFilterState) else None


def _not_found(key: str, verb: str = "error reading") -> str:
    return f'{verb} "{key}" from cycleState: not found'


def _update_state(
    state: CycleState, pod_info: PodInfo, node_info: NodeInfo, multiplier: int
) -> Status | None:
    s = _read_pre_filter_state(state)
    if s is None:
        return error(_not_found(PRE_FILTER_STATE_KEY))
    if node_info.node is not None:
        s.update_with_pod(pod_info, node_info.node, multiplier)
    return None


def _terms_key(terms: Sequence[AffinityTerm]) -> tuple[object, ...]:
    """What a term list (without namespaceSelectors) matches, as a hashable value."""
    return tuple((frozenset(t.namespaces), t.selector, t.topology_key) for t in terms)


def _matched_pod_key(pod: Pod, ns_labels: Mapping[str, str]) -> tuple[object, ...]:
    """What existing pods' terms see of the incoming pod (its namespace, its labels and its
    namespace's labels), as a hashable value."""
    return (pod.namespace, frozenset(pod.labels.items()), frozenset(ns_labels.items()))


def _has_preferred(pod: Pod) -> bool:
    a, anti = pod.pod_affinity, pod.pod_anti_affinity
    return (a is not None and bool(a.preferred)) or (anti is not None and bool(anti.preferred))


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    """Inter-pod affinity and anti-affinity, required (Filter) and preferred (Score)."""

    name: ClassVar[str] = NAME
    args_type: ClassVar[Any] = InterPodAffinityArgs
    normalizes: ClassVar[bool] = True

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        args = args if args is not None else InterPodAffinityArgs()
        super().__init__(args, handle)
        self.hard_pod_affinity_weight = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods

    # --- PreFilter / Filter ----------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Count the matching pods per topology pair; Skip when no term applies either way.

        A term that fails to parse makes the pod UnschedulableAndUnresolvable (``parsing pod: ...``).
        """
        snapshot = self.handle.snapshot
        if (
            pod.pod_affinity is None
            and pod.pod_anti_affinity is None
            and not snapshot.have_pods_with_required_anti_affinity_list()
        ):
            # No term of the pod's own and no existing pod's anti-affinity: the Skip below, without
            # building the namespace lookup and the empty counts (most pods of most clusters).
            return None, skip()
        terms = parse_pod_terms(pod)
        if terms.error is not None:
            return None, unresolvable(f"parsing pod: {terms.error}")
        namespaces = NamespaceLabels(self.handle.objects)
        required_affinity = merge_namespaces(terms.required_affinity, namespaces)
        required_anti_affinity = merge_namespaces(terms.required_anti_affinity, namespaces)
        ns_labels = namespaces.get(pod.namespace)
        # Both sums are kept by the snapshot across cycles, keyed by all they depend on besides the
        # node: the pod's labels and namespace (and its labels) for existing pods' terms; the pod's
        # own terms, unless a namespaceSelector makes them depend on other namespaces' labels.
        existing = dict(
            snapshot.aggregate(
                (NAME, "existing", _matched_pod_key(pod, ns_labels)),
                lambda: filtering.PairCounts(1, filtering.existing_anti_affinity_counter(pod, ns_labels)),
                snapshot.have_pods_with_required_anti_affinity_list,
            ).counts[0]
        )
        incoming_terms = required_affinity + required_anti_affinity
        if not incoming_terms:
            affinity: filtering.TopologyCounts = {}
            anti_affinity: filtering.TopologyCounts = {}
        elif nodes is snapshot.list() and all(t.namespace_selector is None for t in incoming_terms):
            incoming_key = (
                NAME,
                "incoming",
                _terms_key(required_affinity),
                _terms_key(required_anti_affinity),
            )
            kept = snapshot.aggregate(
                incoming_key,
                lambda: filtering.PairCounts(
                    2, filtering.incoming_terms_counter(required_affinity, required_anti_affinity)
                ),
            )
            affinity, anti_affinity = dict(kept.counts[0]), dict(kept.counts[1])
        else:
            affinity, anti_affinity = filtering.incoming_affinity_anti_affinity_counts(
                required_affinity, required_anti_affinity, nodes
            )
        if not existing and not incoming_terms:
            return None, skip()
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState(
                pod, required_affinity, required_anti_affinity, ns_labels, existing, affinity, anti_affinity
            ),
        )
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        """AddPod/RemovePod on the PreFilter counts (nominated pods, preemption dry runs)."""
        return _EXTENSIONS

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Affinity (UnschedulableAndUnresolvable), then anti-affinity, then existing pods' anti-affinity."""
        s = _read_pre_filter_state(state)
        if s is None:
            return error(_not_found(PRE_FILTER_STATE_KEY))
        node = node_info.node
        if node is None:
            return error("node not found")
        if not filtering.satisfy_pod_affinity(s, node):
            # No pod being removed (preemption) can make a missing affinity match appear.
            return unresolvable(filtering.ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not filtering.satisfy_pod_anti_affinity(s, node):
            return unschedulable(filtering.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not filtering.satisfy_existing_pods_anti_affinity(s, node):
            return unschedulable(filtering.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    # --- PreScore / Score ------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Build the topology scores; Skip when nothing scores.

        Without preferred terms of its own the pod can only be scored by existing pods' terms, so
        only the nodes (and pods) with affinity are visited; with ``ignorePreferredTermsOfExistingPods``
        such a pod is not scored at all.
        """
        has_constraints = _has_preferred(pod)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return skip()
        snapshot = self.handle.snapshot
        terms = parse_pod_terms(pod)
        if terms.error is not None:
            # Normally PreFilter has already rejected such a pod.
            return error(f"failed to parse pod: {terms.error}")
        namespaces = NamespaceLabels(self.handle.objects)
        preferred_affinity = merge_weighted_namespaces(terms.preferred_affinity, namespaces)
        preferred_anti_affinity = merge_weighted_namespaces(terms.preferred_anti_affinity, namespaces)
        ns_labels = namespaces.get(pod.namespace)
        # The incoming pod's terms, signed: +w for affinity, -w for anti-affinity.
        incoming_terms = [(w.term, w.weight) for w in preferred_affinity]
        incoming_terms += [(w.term, -w.weight) for w in preferred_anti_affinity]

        def factory() -> scoring.TopologyScores:
            return scoring.TopologyScores(pod, incoming_terms, ns_labels, self.hard_pod_affinity_weight)

        # Without terms of its own, only nodes with pods with affinity can score the pod.
        candidates = None if has_constraints else snapshot.have_pods_with_affinity_list
        if all(t.namespace_selector is None for t, _ in incoming_terms):
            # Let the snapshot keep the sum across cycles. Everything the entries depend on besides
            # the node is in the key; namespaceSelectors, which depend on other namespaces' labels,
            # are not kept.
            key = (
                NAME,
                "scores",
                self.hard_pod_affinity_weight,
                _matched_pod_key(pod, ns_labels),
                _terms_key([t for t, _ in incoming_terms]),
                tuple(w for _, w in incoming_terms),
            )
            kept = snapshot.aggregate(key, factory, candidates).scores
            # A copy: the kept sum changes in later cycles, and a CycleState may outlive its cycle.
            topology_score = {k: dict(by_value) for k, by_value in kept.items()}
        else:
            aggregate = factory()
            aggregate.add_all((snapshot.list if candidates is None else candidates)())
            topology_score = aggregate.scores
        # Upstream skips when no node produced an entry; entries are never removed, even when
        # they sum to zero, so that is an empty map here.
        if not topology_score:
            return skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(topology_score))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The summed topology scores of the node's labels: positive for affinity, negative for anti."""
        return self.score_nodes(state, pod, [node_info])[0]

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node, reading the state once."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            raise PluginError(_not_found(PRE_SCORE_STATE_KEY, "failed to read"))
        out = []
        for node_info in nodes:
            node = node_info.node
            if node is None:
                raise PluginError("node not found")
            out.append(scoring.score_node(s, node))
        return out

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        """Min-max scale into [0, 100], truncating."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return error(_not_found(PRE_SCORE_STATE_KEY, "failed to read"))
        scoring.normalize_scores(s, scores)
        return None

    # --- Queueing hints --------------------------------------------------------------------
    # isSchedulableAfterPodChange and isSchedulableAfterNodeChange answer True for Queue and
    # False for QueueSkip; events_to_register wraps them for the scheduling queue.

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pods added, relabelled or deleted; nodes added or relabelled."""
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                self._pod_hint,
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, node_actions(ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
                self._node_hint,
            ),
        ]

    def _pod_hint(self, pod: Pod, old: object, new: object) -> QueueingHint:
        original, modified = as_pods(old, new)
        return QueueingHint(self.is_schedulable_after_pod_change(pod, original, modified))

    def _node_hint(self, pod: Pod, old: object, new: object) -> QueueingHint:
        original, modified = as_nodes(old, new)
        if modified is None:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint(self.is_schedulable_after_node_change(pod, original, modified))

    def is_schedulable_after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> bool:
        """Whether adding, relabelling or deleting an assigned pod may make ``pod`` schedulable."""
        if new is not None and old is not None and pod.uid == new.uid:
            # Only label updates are watched: the target's own labels changed.
            return True
        if (new is not None and not new.node_name and not new.nominated_node_name) or (
            old is not None and not old.node_name and not old.nominated_node_name
        ):
            return False
        terms = parse_pod_terms(pod)
        if new is not None and old is not None:
            if not pod_matches_all_terms(terms.required_affinity, old) and pod_matches_all_terms(
                terms.required_affinity, new
            ):
                return True
            return pod_matches_all_terms(terms.required_anti_affinity, old) and not pod_matches_all_terms(
                terms.required_anti_affinity, new
            )
        if new is not None:
            return pod_matches_all_terms(terms.required_affinity, new)
        if old is None:
            return False
        if pod_matches_all_terms(terms.required_anti_affinity, old):
            return True
        return pod_matches_all_terms(parse_pod_terms(old).required_anti_affinity, pod)

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node) -> bool:
        """Whether adding or relabelling ``new`` may make ``pod`` schedulable."""
        terms = parse_pod_terms(pod)
        for t in terms.required_affinity:
            key = t.topology_key
            if old is None:
                if key in new.labels:
                    return True
                continue
            if key in new.labels and old.labels.get(key) != new.labels[key]:
                # The key appeared, or the node moved to another domain.
                return True
        for t in terms.required_anti_affinity:
            if old is None:
                # A node without the key always accepts the pod; with it, it may be a free domain.
                return True
            key = t.topology_key
            if key in old.labels and old.labels.get(key) != new.labels.get(key):
                # The key disappeared, or the node moved to another domain.
                return True
        return False
