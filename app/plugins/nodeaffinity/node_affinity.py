"""NodeAffinity (``plugins/nodeaffinity/node_affinity.go``).

Filter enforces ``spec.nodeSelector``, required node affinity and the scheduler-enforced
``addedAffinity``; Score sums the weights of the matching preferred terms of the pod and of
``addedAffinity``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from app.api.errors import FieldError
from app.api.objects import Node, Pod, PreferredSchedulingTerm, parse_node_affinity
from app.api.selectors import NodeSelector, NodeSelectorTerm
from app.framework.cycle_state import CycleState, StateData
from app.framework.events import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintError,
    QueueingHint,
    as_nodes,
    node_actions,
)
from app.framework.interfaces import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginError,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from app.framework.status import Code, Status, error, skip, unresolvable
from app.framework.types import NodeInfo
from app.plugins.helper.normalize_score import default_normalize_score
from app.plugins.nodeaffinity.args import NodeAffinityArgs

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

WeightedTerms = tuple[tuple[int, NodeSelectorTerm], ...]


def aggregate_message(messages: Sequence[str]) -> str:
    """The text of a flattened ``utilerrors.Aggregate``: duplicates dropped, ``[a, b]`` when several."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _is_empty(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def _weighted_terms(terms: Sequence[PreferredSchedulingTerm]) -> tuple[WeightedTerms, list[str]]:
    """``NewPreferredSchedulingTerms``: weight-0 and empty terms dropped; errors at ``[i].<field>``."""
    out: list[tuple[int, NodeSelectorTerm]] = []
    errors: list[str] = []
    for i, t in enumerate(terms):
        if t.weight == 0 or _is_empty(t.preference):
            continue
        if t.preference.errors:
            errors.extend(f"[{i}].{e}" for e in t.preference.errors)
        else:
            out.append((t.weight, t.preference))
    return tuple(out), errors


def _node_selector_errors(selector: NodeSelector) -> list[str]:
    """``NewNodeSelector``'s parse errors (empty terms are skipped before parsing)."""
    return [
        f"nodeSelectorTerms[{i}].{e}"
        for i, t in enumerate(selector.terms)
        if not _is_empty(t)
        for e in t.errors
    ]


class _PreFilterState(StateData):
    """``GetRequiredNodeAffinity``: the nodeSelector pairs and the required node selector (or None)."""

    __slots__ = ("required", "required_in", "selector")

    def __init__(self, selector: tuple[tuple[str, str], ...], required: NodeSelector | None) -> None:
        self.selector = selector
        self.required = required
        self.required_in = _only_in_requirements(required)


def _only_in_requirements(required: NodeSelector | None) -> tuple[tuple[str, frozenset[str]], ...] | None:
    """The (key, values) pairs of ``required`` when it is one term of ``In`` label expressions only
    (the common shape, scheduler_perf's among them): the node matches when each key's label is one
    of its values, tested inline by Filter instead of through the selector's calls per node. None
    for any other shape (several terms, fields, other operators, parse errors), which
    :meth:`NodeSelector.matches` decides."""
    if required is None or len(required.terms) != 1:
        return None
    term = required.terms[0]
    if term.errors or term.match_fields or not term.match_expressions:
        return None
    if any(r.operator != "In" for r in term.match_expressions):
        return None
    return tuple((r.key, r.values) for r in term.match_expressions)


def _required_node_affinity(pod: Pod) -> _PreFilterState:
    na = pod.node_affinity
    return _PreFilterState(tuple(pod.node_selector.items()), na.required if na is not None else None)


class _PreScoreState(StateData):
    """The weighted preferred terms to score: addedAffinity's first, then the pod's."""

    __slots__ = ("terms",)

    def __init__(self, terms: WeightedTerms) -> None:
        self.terms = terms


def _pre_filter_node_names(required: NodeSelector) -> tuple[set[str] | None, bool]:
    """``PreFilter``'s node-name narrowing from ``matchFields`` ``metadata.name In`` requirements.

    Returns (names, conflict): names None means no narrowing. Every term must name nodes, else
    any node may match through that term; a term's requirements intersect, terms union.
    """
    node_names: set[str] | None = None
    for term in required.terms:
        term_names: set[str] | None = None
        for r in term.match_fields:
            if r.key == "metadata.name" and r.operator == "In":
                term_names = set(r.values) if term_names is None else term_names & r.values
        if term_names is None:
            return None, False
        node_names = term_names if node_names is None else node_names | term_names
    if node_names is not None and not node_names:
        return None, True
    return (node_names or None), False


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    """Node selector and node affinity (required and preferred), plus ``NodeAffinityArgs.addedAffinity``."""

    name: ClassVar[str] = NAME
    args_type: ClassVar[Any] = NodeAffinityArgs
    normalizes: ClassVar[bool] = True

    def __init__(self, args: NodeAffinityArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self._added_selector: NodeSelector | None = None
        self._added_terms: WeightedTerms = ()
        self._has_added_preferred = False
        raw = args.added_affinity if args is not None else None
        added = parse_node_affinity(raw, "addedAffinity") if raw else None
        if added is None:
            return
        if added.required is not None:
            errors = _node_selector_errors(added.required)
            if errors:
                raise FieldError(
                    "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution", aggregate_message(errors)
                )
            self._added_selector = added.required
        if added.preferred:
            terms, errors = _weighted_terms(added.preferred)
            if errors:
                raise FieldError(
                    "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution", aggregate_message(errors)
                )
            self._added_terms = terms
            self._has_added_preferred = True

    # --- PreFilter / Filter ----------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Skip when nothing is required; narrow to the nodes named by ``matchFields`` when every term names some."""
        na = pod.node_affinity
        required = na.required if na is not None else None
        if required is None and self._added_selector is None and not pod.node_selector:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(tuple(pod.node_selector.items()), required))
        if required is None or not required.terms:
            return None, None
        names, conflict = _pre_filter_node_names(required)
        if conflict:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return (PreFilterResult(names) if names else None), None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """UnschedulableAndUnresolvable when the node fails addedAffinity, or the pod's selector/affinity."""
        node = node_info.node
        if node is None:
            return error("node not found")
        added = self._added_selector
        if added is not None and not added.matches(node.name, node.labels):
            return unresolvable(ERR_REASON_ENFORCED)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            # PreFilter did not run (e.g. a direct Filter call): compute as upstream does.
            s = _required_node_affinity(pod)
        labels = node.labels
        for key, value in s.selector:
            if labels.get(key) != value:
                return unresolvable(ERR_REASON_POD)
        required_in = s.required_in
        if required_in is not None:
            # A missing label reads as None, in no set of values: no match, as an In requirement.
            for key, values in required_in:
                if labels.get(key) not in values:
                    return unresolvable(ERR_REASON_POD)
            return None
        required = s.required
        if required is not None and not required.matches(node.name, labels):
            return unresolvable(ERR_REASON_POD)
        return None

    # --- queueing hints --------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or relabelled."""
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, node_actions(ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the added node, or the updated node newly, matches the pod's required affinity."""
        original, modified = as_nodes(old, new)
        if modified is None:
            return QueueingHint.QUEUE_SKIP
        added = self._added_selector
        if added is not None and not added.matches(modified.name, modified.labels):
            return QueueingHint.QUEUE_SKIP
        if not _required_affinity_matches(pod, modified):
            return QueueingHint.QUEUE_SKIP
        if original is None or not _required_affinity_matches(pod, original):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- PreScore / Score ------------------------------------------------------------------

    def _score_terms(self, pod: Pod) -> tuple[WeightedTerms, list[str]]:
        na = pod.node_affinity
        pod_terms, errors = _weighted_terms(na.preferred) if na is not None else ((), [])
        return self._added_terms + pod_terms, errors

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip without preferred terms (pod's or added); Error for a pod term that fails to parse."""
        na = pod.node_affinity
        if (na is None or not na.preferred) and not self._has_added_preferred:
            return skip()
        terms, errors = self._score_terms(pod)
        if errors:
            return Status(Code.ERROR, aggregate_message(errors))
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(terms))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The sum of the weights of the preferred terms the node matches."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            terms = s.terms
        else:
            terms, errors = self._score_terms(pod)
            if errors:
                raise PluginError(aggregate_message(errors))
        node: Node | None = node_info.node
        if node is None:
            raise PluginError("node not found")
        name, labels = node.name, node.labels
        count = 0
        for weight, term in terms:
            if term.matches(name, labels):
                count += weight
        return count

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        """Scale to [0, 100], the best node getting 100."""
        return default_normalize_score(100, False, scores)


def pod_matches_node_selector_and_affinity(pod: Pod, node: Node) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: ``spec.nodeSelector`` and required node affinity.

    Terms that fail to parse match no node, as the lazy-error selector of component-helpers (callers
    such as PodTopologySpread ignore the parse errors). ``addedAffinity`` is not part of it.
    """
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    na = pod.node_affinity
    required = na.required if na is not None else None
    return required is None or required.matches(node.name, labels)


def _required_affinity_matches(pod: Pod, node: Node) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)`` with its error: required terms that fail to parse,
    when no valid term matches, raise :class:`HintError` (the queue then takes Queue)."""
    labels = node.labels
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    na = pod.node_affinity
    required = na.required if na is not None else None
    if required is None or required.matches(node.name, labels):
        return True
    errors = _node_selector_errors(required)
    if errors:
        raise HintError(aggregate_message(errors))
    return False
