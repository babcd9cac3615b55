"""Builders shared by the InterPodAffinity tests: st.MakePod's affinity helpers and cache.NewSnapshot."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.api.objects import Node, Pod, parse_node, parse_pod
from app.framework.types import NodeInfo, PodInfo
from app.plugins.interpodaffinity.args import InterPodAffinityArgs
from app.plugins.interpodaffinity.plugin import InterPodAffinity
from fakes import FakeHandle, FakeObjects

_names = itertools.count()

Raw = dict[str, Any]

NS_LABEL_T1 = {"team": "team1"}
NS_LABEL_T2 = {"team": "team2"}
NAMESPACES: list[Raw] = [
    {"kind": "Namespace", "metadata": {"name": "subteam1.team1", "labels": NS_LABEL_T1}},
    {"kind": "Namespace", "metadata": {"name": "subteam2.team1", "labels": NS_LABEL_T1}},
    {"kind": "Namespace", "metadata": {"name": "subteam1.team2", "labels": NS_LABEL_T2}},
    {"kind": "Namespace", "metadata": {"name": "subteam2.team2", "labels": NS_LABEL_T2}},
]
"""scoring_test.go's ``namespaces``."""


def expr(key: str, op: str, *values: str) -> Raw:
    """A ``metav1.LabelSelectorRequirement``."""
    r: Raw = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def selector(*exprs: Raw) -> Raw:
    """A label selector of match expressions."""
    return {"matchExpressions": list(exprs)}


def term(
    label_selector: Raw | None,
    topology_key: str = "",
    namespaces: Sequence[str] = (),
    namespace_selector: Raw | None = None,
    **extra: Any,
) -> Raw:
    """A ``v1.PodAffinityTerm``."""
    t: Raw = {"topologyKey": topology_key, **extra}
    if label_selector is not None:
        t["labelSelector"] = label_selector
    if namespaces:
        t["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        t["namespaceSelector"] = namespace_selector
    return t


def in_term(key: str, topology_key: str, *values: str) -> Raw:
    """``PodAffinityIn`` / ``PodAntiAffinityIn``'s term."""
    return term(selector(expr(key, "In", *values)), topology_key)


def not_in_term(key: str, topology_key: str, *values: str) -> Raw:
    """``PodAffinityNotIn``'s term."""
    return term(selector(expr(key, "NotIn", *values)), topology_key)


def exists_term(key: str, topology_key: str) -> Raw:
    """``PodAffinityExists``'s term."""
    return term(selector(expr(key, "Exists")), topology_key)


def weighted(weight: int, t: Raw) -> Raw:
    """A ``v1.WeightedPodAffinityTerm``."""
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    required: Sequence[Raw] = (),
    anti: Sequence[Raw] = (),
    preferred: Sequence[Raw] = (),
    preferred_anti: Sequence[Raw] = (),
) -> Raw:
    """A ``v1.Affinity`` with pod affinity and anti-affinity sections where terms are given."""
    a: Raw = {}
    if required or preferred:
        a["podAffinity"] = {}
        if required:
            a["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
        if preferred:
            a["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
    if anti or preferred_anti:
        a["podAntiAffinity"] = {}
        if anti:
            a["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti)
        if preferred_anti:
            a["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred_anti)
    return a


def pod(
    labels: Mapping[str, str] | None = None,
    node: str = "",
    namespace: str = "default",
    aff: Raw | None = None,
    name: str | None = None,
    uid: str | None = None,
    nominated: str = "",
) -> Pod:
    """A pod (``st.MakePod()``); upstream's unnamed pods get unique names here."""
    name = name or f"pod-{next(_names)}"
    spec: Raw = {"containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    if aff:
        spec["affinity"] = aff
    raw: Raw = {
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"},
        "spec": spec,
    }
    if labels:
        raw["metadata"]["labels"] = dict(labels)
    if nominated:
        raw["status"] = {"nominatedNodeName": nominated}
    return parse_pod(raw)


def node(name: str, labels: Mapping[str, str] | None = None) -> Node:
    """A node with exactly ``labels``."""
    return parse_node({"metadata": {"name": name, "labels": dict(labels or {})}})


def snapshot(pods: Iterable[Pod], nodes: Iterable[Node]) -> list[NodeInfo]:
    """``cache.NewSnapshot``: a NodeInfo per node with its pods (pods on unknown nodes are dropped)."""
    infos = {n.name: NodeInfo(n) for n in nodes}
    for p in pods:
        info = infos.get(p.node_name)
        if info is not None:
            info.add_pod_info(PodInfo(p))
    return list(infos.values())


def plugin(
    infos: Sequence[NodeInfo] = (),
    namespaces: Sequence[Raw] = (),
    hard_pod_affinity_weight: int = 1,
    ignore_preferred_terms_of_existing_pods: bool = False,
) -> InterPodAffinity:
    """The plugin over a fake snapshot and Namespace objects (``SetupPluginWithInformers``)."""
    handle = FakeHandle(infos, objects=FakeObjects({"Namespace": list(namespaces)}))
    args = InterPodAffinityArgs(hard_pod_affinity_weight, ignore_preferred_terms_of_existing_pods)
    return InterPodAffinity(args, handle)
