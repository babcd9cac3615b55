"""Helpers for the PodTopologySpread tests ported from kube-scheduler v1.36.3.

The Go tables are carried over literally: ``st_MakePod()`` / ``st_MakeNode()`` /
``st_MakeLabelSelector()`` mirror ``pkg/scheduler/testing`` wrappers (same method names, so the
ported tables read like the Go ones), Go struct literals are dicts keyed by the Go field names (with
``__type__`` when the literal was typed), and :func:`raw_object` turns the Kubernetes ones (Services,
ReplicaSets, default constraints) into the camelCase raw form berth reads.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from app.api.objects import Node, Pod, parse_node, parse_pod
from app.api.selectors import LabelSelector, parse_label_selector
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, PodInfo
from app.plugins.podtopologyspread.common import SpreadConstraint
from app.plugins.podtopologyspread.filtering import MAX_INT32, CriticalPaths, PreFilterState
from app.plugins.podtopologyspread.scoring import PreScoreState, topology_normalizing_weight
from fakes import FakeHandle, FakeObjects

__all__ = [
    "Code",
    "appsv1_SchemeGroupVersion",
    "barSelector",
    "fooSelector",
    "fwk_NewStatus",
    "honorPolicy",
    "ignorePolicy",
    "labels_Nothing",
    "mustConvertLabelSelectorAsSelector",
    "newCriticalPaths",
    "ptr_To",
    "sets_New",
    "st_MakeLabelSelector",
    "st_MakeNode",
    "st_MakePod",
    "t",
    "taints",
    "topologyNormalizingWeight",
]

# --- builders (pkg/scheduler/testing/wrappers.go) --------------------------------------------------


class st_MakeLabelSelector:
    """``st.MakeLabelSelector()``: a raw ``metav1.LabelSelector``."""

    def __init__(self) -> None:
        self.raw: dict[str, Any] = {}

    def Label(self, k: str, v: str) -> st_MakeLabelSelector:
        self.raw.setdefault("matchLabels", {})[k] = v
        return self

    def In(self, k: str, vals: list[str]) -> st_MakeLabelSelector:
        self.raw.setdefault("matchExpressions", []).append({"key": k, "operator": "In", "values": vals})
        return self

    def NotIn(self, k: str, vals: list[str]) -> st_MakeLabelSelector:
        self.raw.setdefault("matchExpressions", []).append({"key": k, "operator": "NotIn", "values": vals})
        return self

    def Exists(self, k: str) -> st_MakeLabelSelector:
        self.raw.setdefault("matchExpressions", []).append({"key": k, "operator": "Exists"})
        return self

    def NotExist(self, k: str) -> st_MakeLabelSelector:
        self.raw.setdefault("matchExpressions", []).append({"key": k, "operator": "DoesNotExist"})
        return self

    def Obj(self) -> dict[str, Any]:
        return self.raw


class st_MakePod:
    """``st.MakePod()``; ``Obj()`` parses the raw pod."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
        self.status: dict[str, Any] = {}

    def Name(self, s: str) -> st_MakePod:
        self.meta["name"] = s
        return self

    def Namespace(self, s: str) -> st_MakePod:
        self.meta["namespace"] = s
        return self

    def UID(self, s: str) -> st_MakePod:
        self.meta["uid"] = s
        return self

    def Label(self, k: str, v: str) -> st_MakePod:
        self.meta.setdefault("labels", {})[k] = v
        return self

    def Node(self, s: str) -> st_MakePod:
        self.spec["nodeName"] = s
        return self

    def NominatedNodeName(self, s: str) -> st_MakePod:
        self.status["nominatedNodeName"] = s
        return self

    def Terminating(self) -> st_MakePod:
        self.meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        return self

    def Toleration(self, key: str) -> st_MakePod:
        self.spec.setdefault("tolerations", []).append({"key": key, "operator": "Exists"})
        return self

    def NodeSelector(self, m: dict[str, str]) -> st_MakePod:
        self.spec["nodeSelector"] = m
        return self

    def _required(self, term: dict[str, Any]) -> st_MakePod:
        affinity = self.spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
        return self

    def NodeAffinityIn(self, key: str, vals: list[str], t: str = "MatchExpressions") -> st_MakePod:
        field = "matchExpressions" if t == "MatchExpressions" else "matchFields"
        return self._required({field: [{"key": key, "operator": "In", "values": vals}]})

    def NodeAffinityNotIn(self, key: str, vals: list[str]) -> st_MakePod:
        return self._required({"matchExpressions": [{"key": key, "operator": "NotIn", "values": vals}]})

    def OwnerReference(self, name: str, gvk: tuple[str, str]) -> st_MakePod:
        api_version, kind = gvk
        self.meta["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "controller": True}
        ]
        return self

    def SpreadConstraint(
        self,
        max_skew: int,
        tp_key: str,
        mode: str,
        selector: dict[str, Any] | None,
        min_domains: int | None,
        node_affinity_policy: str | None,
        node_taints_policy: str | None,
        match_label_keys: list[str] | None,
    ) -> st_MakePod:
        c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": tp_key, "whenUnsatisfiable": mode}
        if selector is not None:
            c["labelSelector"] = copy.deepcopy(selector)
        if min_domains is not None:
            c["minDomains"] = min_domains
        if node_affinity_policy is not None:
            c["nodeAffinityPolicy"] = node_affinity_policy
        if node_taints_policy is not None:
            c["nodeTaintsPolicy"] = node_taints_policy
        if match_label_keys is not None:
            c["matchLabelKeys"] = match_label_keys
        self.spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    def Obj(self) -> Pod:
        meta = dict(self.meta)
        # st pods may be nameless (queueing-hint tables); berth requires a name.
        meta.setdefault("name", meta.get("uid", "unnamed"))
        return parse_pod({"metadata": meta, "spec": self.spec, "status": self.status})


class st_MakeNode:
    """``st.MakeNode()``: no labels unless given (berth's builders add a hostname label)."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {"labels": {}}
        self.spec: dict[str, Any] = {}

    def Name(self, s: str) -> st_MakeNode:
        self.meta["name"] = s
        return self

    def Label(self, k: str, v: str) -> st_MakeNode:
        self.meta["labels"][k] = v
        return self

    def Taints(self, taints: list[dict[str, Any]]) -> st_MakeNode:
        self.spec["taints"] = [raw_object(t) for t in taints]
        return self

    def Obj(self) -> Node:
        return parse_node({"metadata": self.meta, "spec": self.spec})


# --- Go values ----------------------------------------------------------------------------------------

t = None  # the *testing.T argument of mustConvertLabelSelectorAsSelector
fooSelector = st_MakeLabelSelector().Exists("foo").Obj()
barSelector = st_MakeLabelSelector().Exists("bar").Obj()
honorPolicy = "Honor"
ignorePolicy = "Ignore"
taints = [{"Key": "node.kubernetes.io/unschedulable", "Value": "", "Effect": "NoSchedule"}]


class _GroupVersion:
    def __init__(self, gv: str) -> None:
        self.gv = gv

    def WithKind(self, kind: str) -> tuple[str, str]:
        return (self.gv, kind)


appsv1_SchemeGroupVersion = _GroupVersion("apps/v1")


def ptr_To(x: Any) -> Any:
    """``ptr.To``: berth has no pointers."""
    return x


def sets_New(*items: str) -> set[str]:
    """``sets.New``."""
    return set(items)


def fwk_NewStatus(code: Code, *reasons: str) -> Status:
    """``fwk.NewStatus``."""
    return Status(code, *reasons)


def labels_Nothing() -> None:
    """``labels.Nothing()``: berth's selector None."""
    return None


def mustConvertLabelSelectorAsSelector(_t: object, raw: Mapping[str, Any] | None) -> LabelSelector | None:
    """``metav1.LabelSelectorAsSelector``: None (Nothing) for a nil selector."""
    return None if raw is None else parse_label_selector(raw, "labelSelector")


def newCriticalPaths() -> list[list[Any]]:
    """``newCriticalPaths()`` in the table's [[value, num], [value, num]] form."""
    return [["", MAX_INT32], ["", MAX_INT32]]


def topologyNormalizingWeight(size: int) -> float:
    """``topologyNormalizingWeight``."""
    return topology_normalizing_weight(size)


# --- conversions -----------------------------------------------------------------------------------

_KIND_FIELDS = {"ObjectMeta": "metadata"}


def raw_object(value: Any) -> Any:
    """A Go struct literal (dict with Go field names) as a raw camelCase object; typed top-level kinds
    (Service, ReplicaSet, ...) get their ``kind``."""
    if isinstance(value, list):
        return [raw_object(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    typ = value.get("__type__")
    if typ in ("Service", "ReplicaSet", "StatefulSet", "ReplicationController"):
        out["kind"] = typ
    for k, v in value.items():
        if k == "__type__":
            continue
        if typ is not None or (k and k[0].isupper()):
            k = _KIND_FIELDS.get(k, k[:1].lower() + k[1:])
        out[k] = raw_object(v)
    return out


def fake_objects(objs: list[dict[str, Any]] | None) -> FakeObjects:
    """The ``objs`` of a table as a FakeObjects (Services, ReplicaSets, ...)."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for o in objs or []:
        r = raw_object(o)
        meta = r.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        by_kind.setdefault(r["kind"], []).append(r)
    return FakeObjects(by_kind)


def snapshot_infos(existing_pods: list[Pod] | None, nodes: list[Node] | None) -> list[NodeInfo]:
    """``cache.NewSnapshot(pods, nodes)``'s NodeInfos, in node order."""
    infos = {n.name: NodeInfo(n) for n in nodes or []}
    for p in existing_pods or []:
        if p.node_name in infos:
            infos[p.node_name].add_pod_info(PodInfo(p))
    return list(infos.values())


def handle(existing_pods: list[Pod] | None, nodes: list[Node] | None, objs: Any = None) -> FakeHandle:
    """A FakeHandle over the snapshot and the objects."""
    return FakeHandle(snapshot_infos(existing_pods, nodes), objects=fake_objects(objs))


def selector_view(sel: LabelSelector | None) -> frozenset[Any] | None:
    """A selector by its requirements (order does not matter to matching, nor to labels.Selector)."""
    return None if sel is None else frozenset(sel.requirements)


def constraint_view(c: SpreadConstraint | Mapping[str, Any]) -> dict[str, Any]:
    """A constraint, ours or the table's, in one comparable form."""
    if isinstance(c, SpreadConstraint):
        return {
            "MaxSkew": c.max_skew,
            "TopologyKey": c.topology_key,
            "Selector": selector_view(c.selector),
            "MinDomains": c.min_domains,
            "NodeAffinityPolicy": c.node_affinity_policy,
            "NodeTaintsPolicy": c.node_taints_policy,
        }
    return {
        "MaxSkew": c["MaxSkew"],
        "TopologyKey": c["TopologyKey"],
        "Selector": selector_view(c.get("Selector")),
        "MinDomains": c.get("MinDomains", 0),
        "NodeAffinityPolicy": c.get("NodeAffinityPolicy", ""),
        "NodeTaintsPolicy": c.get("NodeTaintsPolicy", ""),
    }


def _path(p: Any) -> tuple[str, int]:
    """A path as (value, num); a keyed Go literal like ``{MatchNum: math.MaxInt32}`` is a dict."""
    if isinstance(p, dict):
        return p.get("TopologyValue", ""), p.get("MatchNum", 0)
    return p[0], p[1]


def _sorted_paths(paths: list[list[Any]]) -> list[tuple[Any, ...]]:
    """``criticalPaths.sort``: equal match numbers compare with their values in alphabetical order."""
    (v0, n0), (v1, n1) = (_path(p) for p in paths)
    if n0 == n1 and v0 > v1:
        v0, v1 = v1, v0
    return [(v0, n0), (v1, n1)]


def pre_filter_state_view(s: PreFilterState | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A preFilterState, ours or the table's, in one comparable form (``stateCmpOpts``)."""
    if s is None:
        return None
    if isinstance(s, PreFilterState):
        return {
            "Constraints": [constraint_view(c) for c in s.constraints],
            "CriticalPaths": [_sorted_paths(p.paths) for p in s.critical_paths],
            "TpValueToMatchNum": s.tp_value_to_match_num,
        }
    return {
        "Constraints": [constraint_view(c) for c in s.get("Constraints", [])],
        "CriticalPaths": [_sorted_paths(p) for p in s.get("CriticalPaths", [])],
        # An empty elided Go literal ``{}`` translates to [], whatever its type.
        "TpValueToMatchNum": [dict(m) if m else {} for m in s.get("TpValueToMatchNum", [])],
    }


def pre_score_state_view(s: PreScoreState | Mapping[str, Any]) -> dict[str, Any]:
    """A preScoreState, ours or the table's, in one comparable form."""
    if isinstance(s, PreScoreState):
        return {
            "Constraints": [constraint_view(c) for c in s.constraints],
            "IgnoredNodes": s.ignored_nodes,
            "TopologyValueToPodCounts": s.topology_value_to_pod_counts,
            "TopologyNormalizingWeight": s.topology_normalizing_weight,
        }
    return {
        "Constraints": [constraint_view(c) for c in s.get("Constraints", [])],
        "IgnoredNodes": s.get("IgnoredNodes", set()),
        "TopologyValueToPodCounts": [dict(m) if m else {} for m in s.get("TopologyValueToPodCounts", [])],
        "TopologyNormalizingWeight": s.get("TopologyNormalizingWeight", []),
    }


def critical_paths_of(paths: list[list[Any]]) -> CriticalPaths:
    """A CriticalPaths from the table form."""
    return CriticalPaths([list(paths[0]), list(paths[1])])
