"""What Filter and Score share (``plugins/podtopologyspread/common.go``, plus ``helper.DefaultSelector``).

A selector here is a :class:`LabelSelector`, or None for ``labels.Nothing()`` (what
``metav1.LabelSelectorAsSelector`` makes of a nil ``labelSelector``): Nothing matches no pod, while
the empty selector matches every pod. Both count as "no pods" in :func:`count_pods_match_selector`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.api.errors import FieldError
from app.api.objects import Node, Pod, TopologySpreadConstraint
from app.api.selectors import LabelSelector, Requirement, parse_label_selector
from app.framework.interfaces import Handle, ObjectLister, Plugin
from app.framework.types import PodInfo
from app.plugins.nodeaffinity.node_affinity import pod_matches_node_selector_and_affinity

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

#: Effects a NodeTaintsPolicy of Honor looks at (``helper.DoNotScheduleTaintsFilterFunc``).
_DO_NOT_SCHEDULE_EFFECTS = frozenset(("NoSchedule", "NoExecute"))

Selector = LabelSelector | None
"""A parsed selector; None is ``labels.Nothing()``."""


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """``topologySpreadConstraint``: a pod's constraint with its selector parsed and its defaults applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def matches_pod(self, labels: Mapping[str, str]) -> bool:
        """Whether the constraint's selector selects a pod with ``labels``."""
        return selector_matches(self.selector, labels)


def selector_matches(selector: Selector, labels: Mapping[str, str]) -> bool:
    """``Selector.Matches``: Nothing matches no labels."""
    return selector is not None and selector.matches(labels)


def match_node_inclusion_policies(constraint: SpreadConstraint, pod: Pod, node: Node) -> bool:
    """``matchNodeInclusionPolicies``: whether ``node`` takes part in the constraint's spreading.

    Honor node affinity: the node must match the pod's nodeSelector and required node affinity.
    Honor node taints: the node must have no NoSchedule/NoExecute taint the pod does not tolerate.
    """
    if constraint.node_affinity_policy == HONOR and not pod_matches_node_selector_and_affinity(pod, node):
        return False
    return constraint.node_taints_policy != HONOR or tolerates_do_not_schedule_taints(pod, node)


def tolerates_do_not_schedule_taints(pod: Pod, node: Node) -> bool:
    """Whether the pod tolerates every NoSchedule/NoExecute taint of the node."""
    tolerations = pod.tolerations
    for taint in node.taints:
        if taint.effect not in _DO_NOT_SCHEDULE_EFFECTS:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return False
    return True


def has_required_node_affinity(pod: Pod) -> bool:
    """Whether :func:`pod_matches_node_selector_and_affinity` can reject a node for this pod."""
    return bool(pod.node_selector) or (
        pod.node_affinity is not None and pod.node_affinity.required is not None
    )


def node_labels_match_spread_constraints(
    node_labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]
) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: the node has ALL the constraints' topology keys."""
    return all(c.topology_key in node_labels for c in constraints)


def pod_labels_match_spread_constraints(
    constraints: Sequence[SpreadConstraint], labels: Mapping[str, str]
) -> bool:
    """``podLabelsMatchSpreadConstraints``: any constraint's selector selects ``labels``."""
    return any(c.matches_pod(labels) for c in constraints)


def count_pods_match_selector(pod_infos: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """``countPodsMatchSelector``: pods of ``namespace``, not terminating, that the selector selects.

    An empty selector counts nothing (``selector.Empty()``), as does Nothing.
    """
    if selector is None or selector.empty:
        return 0
    count = 0
    matches = selector.matches
    for pi in pod_infos:
        p = pi.pod
        # Terminating pods are bypassed (kubernetes#87621).
        if p.deletion_timestamp is not None or p.namespace != namespace:
            continue
        if matches(p.labels):
            count += 1
    return count


def merge_label_set_with_selector(match_labels: Mapping[str, str], selector: Selector) -> Selector:
    """``mergeLabelSetWithSelector``: ``key = value`` requirements ANDed with the selector's.

    Nothing has no requirements to merge (``Requirements()`` is not ok), so it stays Nothing.
    """
    if selector is None:
        return None
    reqs = tuple(Requirement(k, "In", frozenset((v,))) for k, v in sorted(match_labels.items()))
    return LabelSelector(reqs + selector.requirements)


def filter_topology_spread_constraints(
    constraints: Iterable[TopologySpreadConstraint],
    pod_labels: Mapping[str, str],
    action: str,
    *,
    enable_match_label_keys: bool = True,
    enable_node_inclusion_policy: bool = True,
) -> list[SpreadConstraint]:
    """``filterTopologySpreadConstraints``: the constraints whose whenUnsatisfiable is ``action``, parsed.

    ``matchLabelKeys`` values taken from the pod's labels are ANDed into the selector here, as the
    v1.36 plugin still does (the API server also merges them at admission since 1.34 with
    MatchLabelKeysInPodTopologySpreadSelectorMerge; merging twice is harmless, and pods in a state file
    never went through admission). minDomains defaults to 1, nodeAffinityPolicy to Honor and
    nodeTaintsPolicy to Ignore.
    """
    result: list[SpreadConstraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector: Selector = c.label_selector
        if enable_match_label_keys and c.match_label_keys:
            match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if match_labels:
                selector = merge_label_set_with_selector(match_labels, selector)
        affinity_policy, taints_policy = HONOR, IGNORE
        if enable_node_inclusion_policy:
            affinity_policy = c.node_affinity_policy or HONOR
            taints_policy = c.node_taints_policy or IGNORE
        result.append(
            SpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains if c.min_domains is not None else 1,
                node_affinity_policy=affinity_policy,
                node_taints_policy=taints_policy,
            )
        )
    return result


# --- helper.DefaultSelector ------------------------------------------------------------------------

#: (group/version, kind) of the controllers whose selector DefaultSelector uses.
_RC = ("v1", "ReplicationController")
_RS = ("apps/v1", "ReplicaSet")
_SS = ("apps/v1", "StatefulSet")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _str_map(value: object) -> dict[str, str] | None:
    """A ``map[string]string`` field, or None when absent (nil) or not a string map."""
    if not isinstance(value, Mapping):
        return None
    return {str(k): str(v) for k, v in value.items()}


def _get_by_name(objects: ObjectLister, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    """A lister's ``Get(name)`` in ``namespace``."""
    for obj in objects.list(kind, namespace):
        if _meta(obj).get("name") == name:
            return obj
    return None


def _controller_of(pod: Pod) -> tuple[str, str, str] | None:
    """``metav1.GetControllerOfNoCopy``: (apiVersion, kind, name) of the first controller owner reference.

    Read from the raw pod: the parsed OwnerReference has no apiVersion, which the kind match needs.
    """
    meta = _meta(pod.raw)
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""), str(ref.get("name") or "")
    return None


def _group_version(api_version: str) -> str | None:
    """``schema.ParseGroupVersion`` normalised to ``group/version`` ("v1" for the core group); None on error."""
    parts = api_version.split("/")
    if len(parts) > 2:
        return None
    if len(parts) == 2 and not parts[0]:
        return parts[1]  # "/v1" parses as the core group
    return api_version


def _label_selector_requirements(raw: object) -> tuple[Requirement, ...]:
    """The requirements ``LabelSelectorAsSelector(raw).Requirements()`` adds: none for nil, {} or errors."""
    if not isinstance(raw, Mapping):
        return ()  # nil → Nothing, whose Requirements() is not ok
    try:
        return parse_label_selector(raw, "selector").requirements
    except FieldError:
        return ()


def default_selector(pod: Pod, objects: ObjectLister) -> LabelSelector:
    """``helper.DefaultSelector``: the selectors of the Services selecting the pod and of its controller.

    Services' selectors are merged as label sets (they all select the pod, so they cannot conflict);
    a ReplicationController's selector joins the set, a ReplicaSet's or StatefulSet's requirements are
    added. Objects come from ``objects.list(kind, namespace)`` (raw dicts).
    """
    label_set: dict[str, str] = {}
    for svc in objects.list("Service", pod.namespace):
        sel = _str_map(_spec(svc).get("selector"))
        # Services with nil selectors match nothing, not everything.
        if sel is None:
            continue
        if all(pod.labels.get(k) == v for k, v in sel.items()):
            label_set.update(sel)
    reqs = tuple(Requirement(k, "In", frozenset((v,))) for k, v in sorted(label_set.items()))
    owner = _controller_of(pod)
    if owner is None:
        return LabelSelector(reqs)
    api_version, kind, name = owner
    gv = _group_version(api_version)
    if gv is None:
        return LabelSelector(reqs)
    if (gv, kind) == _RC:
        rc = _get_by_name(objects, kind, pod.namespace, name)
        if rc is not None:
            label_set.update(_str_map(_spec(rc).get("selector")) or {})
            reqs = tuple(Requirement(k, "In", frozenset((v,))) for k, v in sorted(label_set.items()))
    elif (gv, kind) in (_RS, _SS):
        obj = _get_by_name(objects, kind, pod.namespace, name)
        if obj is not None:
            reqs = reqs + _label_selector_requirements(_spec(obj).get("selector"))
    return LabelSelector(reqs)


# --- the plugin's shared state ---------------------------------------------------------------------

#: ``systemDefaultConstraints``: applied (as ScheduleAnyway) to pods without constraints when the args'
#: defaultingType is System.
SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(3, LABEL_HOSTNAME, SCHEDULE_ANYWAY, None, None, None, None, []),
    TopologySpreadConstraint(5, LABEL_TOPOLOGY_ZONE, SCHEDULE_ANYWAY, None, None, None, None, []),
)


class SpreadBase(Plugin):
    """The fields of ``PodTopologySpread`` and the constraint building shared by Filter and Score.

    ``enable_node_inclusion_policy`` and ``enable_match_label_keys`` are the plugin's feature flags
    (NodeInclusionPolicyInPodTopologySpread, GA and locked on in v1.36; MatchLabelKeysInPodTopologySpread,
    beta and on). They default to v1.36's gates; kube's unit tests flip them, and so do the ported ones.
    """

    default_constraints: tuple[TopologySpreadConstraint, ...]
    system_defaulted: bool
    enable_node_inclusion_policy: bool
    enable_match_label_keys: bool

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.default_constraints = ()
        self.system_defaulted = False
        self.enable_node_inclusion_policy = True
        self.enable_match_label_keys = True

    def filter_constraints(
        self, constraints: Iterable[TopologySpreadConstraint], pod_labels: Mapping[str, str], action: str
    ) -> list[SpreadConstraint]:
        """:func:`filter_topology_spread_constraints` with this plugin's feature flags."""
        return filter_topology_spread_constraints(
            constraints,
            pod_labels,
            action,
            enable_match_label_keys=self.enable_match_label_keys,
            enable_node_inclusion_policy=self.enable_node_inclusion_policy,
        )

    def build_default_constraints(self, pod: Pod, action: str) -> list[SpreadConstraint]:
        """``buildDefaultConstraints``: the default constraints for ``action``, selecting by DefaultSelector.

        No default constraint for ``action``, or an empty default selector, means no constraints.
        """
        constraints = self.filter_constraints(self.default_constraints, pod.labels, action)
        if not constraints:
            return []
        selector = default_selector(pod, self.handle.objects)
        if selector.empty:
            return []
        return [
            SpreadConstraint(
                c.max_skew,
                c.topology_key,
                selector,
                c.min_domains,
                c.node_affinity_policy,
                c.node_taints_policy,
            )
            for c in constraints
        ]

    def get_constraints(self, pod: Pod) -> list[SpreadConstraint]:
        """``getConstraints``: the pod's DoNotSchedule constraints, or the defaults' when it has none."""
        if pod.topology_spread_constraints:
            return self.filter_constraints(pod.topology_spread_constraints, pod.labels, DO_NOT_SCHEDULE)
        return self.build_default_constraints(pod, DO_NOT_SCHEDULE)
