"""Explanations that name amounts: why each failing node failed, in numbers a user can act on.

kube-scheduler's reasons (``Insufficient cpu``, ``node(s) had untolerated taint(s)``) stay exactly as
they are in ``message`` and ``filter[node].reasons``; these details come next to them:
``Insufficient cpu: requests 2, free 1.5 of 8``, ``untolerated taint dedicated=batch:NoSchedule``,
``host port 8080/TCP in use by default/web-0``, ``topology spread on zone: zone-a has 3 matching pods,
the minimum is 1 (zone-c): skew 3 > maxSkew 1``. They are worked out from the cluster as the pod's
attempt saw it (the engine's snapshot right after the attempt, read only: nothing here changes what
the run decides).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from app.api.objects import Node, Pod, PodAffinityTerm
from app.api.selectors import NodeSelectorTerm, Requirement
from app.framework.runtime import Framework
from app.framework.status import Status
from app.framework.types import NodeInfo
from app.plugins.dynamicresources.allocator import RequestShortfall
from app.plugins.dynamicresources.plugin import DynamicResources
from app.plugins.noderesources.fit import PreFilterState, compute_pod_resource_request, fits_request
from app.plugins.nodevolumelimits.csi import NodeVolumeLimits

__all__ = [
    "describe_requirement",
    "filter_details",
    "name_list",
    "readable_amount",
    "score_weights",
]

_CPU = "cpu"
_BINARY_UNITS = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTE_RESOURCES = ("memory", "ephemeral-storage")
#: Taint effects the TaintToleration filter checks (PreferNoSchedule only scores).
_FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def score_weights(fwk: Framework) -> dict[str, int]:
    """``{Plugin: weight}`` of the profile's score plugins: a node's total is the sum of score * weight."""
    return {plugin.name: fwk.score_weights.get(plugin.name, 1) for plugin in fwk.score}


def readable_amount(resource: str, amount: int) -> str:
    """cpu in cores (the cache counts millicores), memory and storage with binary units, else counts."""
    if resource == _CPU:
        return f"{amount / 1000:g}"
    if resource in _BYTE_RESOURCES or resource.startswith("hugepages-"):
        for unit, size in _BINARY_UNITS:
            if abs(amount) >= size:
                return f"{amount / size:.4g}{unit}"
    return str(amount)


def resource_details(pod: Pod) -> Callable[[Pod, NodeInfo], list[str]]:
    """Per-node NodeResourcesFit details, the pod's request worked out once."""
    request = compute_pod_resource_request(pod)
    return lambda pod, info: _resources(request, info)


def _resources(request: PreFilterState, info: NodeInfo) -> list[str]:
    details = []
    for lack in fits_request(request, info):
        name = lack.resource_name
        if name == "pods":
            details.append(f"{lack.reason}: {lack.used} of {lack.capacity} pods on the node")
            continue
        free = readable_amount(name, max(lack.capacity - lack.used, 0))
        requests = readable_amount(name, lack.requested)
        details.append(
            f"{lack.reason}: requests {requests}, free {free} of {readable_amount(name, lack.capacity)}"
        )
    return details


def _ports(pod: Pod, info: NodeInfo) -> list[str]:
    details = []
    for port in pod.host_ports():
        if not port.host_port or not info.used_ports.conflicts(port.host_ip, port.protocol, port.host_port):
            continue
        users = [
            p.pod.key
            for p in info.pods
            if any(q.host_port == port.host_port and q.protocol == port.protocol for q in p.pod.host_ports())
        ]
        by = f" by {', '.join(users)}" if users else ""
        details.append(f"host port {port.host_port}/{port.protocol} in use{by}")
    return details


def untolerated_taints(pod: Pod, node: Node) -> list[str]:
    """The node's NoSchedule/NoExecute taints the pod does not tolerate, as ``key=value:Effect``."""
    return [
        str(taint)
        for taint in node.taints
        if taint.effect in _FILTERED_EFFECTS and not any(t.tolerates(taint) for t in pod.tolerations)
    ]


def _taints(pod: Pod, info: NodeInfo) -> list[str]:
    assert info.node is not None
    return [f"untolerated taint {taint}" for taint in untolerated_taints(pod, info.node)]


def _unschedulable(pod: Pod, info: NodeInfo) -> list[str]:
    return ["node is cordoned (spec.unschedulable: true)"]


def describe_requirement(req: Requirement) -> str:
    """``zone In [a, b]``, ``gpu Exists``: a requirement as kubectl describe prints one."""
    if req.operator in ("Exists", "DoesNotExist"):
        return f"{req.key} {req.operator}"
    return f"{req.key} {req.operator} [{', '.join(sorted(req.values))}]"


def _has(labels: Mapping[str, str], key: str) -> str:
    return f"node has {key}={labels[key]}" if key in labels else f"node has no {key} label"


def unmatched_requirements(term: NodeSelectorTerm, node: Node) -> list[Requirement]:
    """The term's expressions (and metadata.name fields) the node does not satisfy."""
    failed = [r for r in term.match_expressions if not r.matches(node.labels)]
    failed.extend(r for r in term.match_fields if not r.matches({"metadata.name": node.name}))
    return failed


def _affinity(pod: Pod, info: NodeInfo) -> list[str]:
    node = info.node
    assert node is not None
    details = [
        f"nodeSelector {key}={value}: {_has(node.labels, key)}"
        for key, value in sorted(pod.node_selector.items())
        if node.labels.get(key) != value
    ]
    required = pod.node_affinity.required if pod.node_affinity is not None else None
    if required is not None and not required.matches(node.name, node.labels):
        for i, term in enumerate(required.terms):
            unmatched = unmatched_requirements(term, node)
            said = "; ".join(
                f"{describe_requirement(r)} ({_has(node.labels, r.key) if r.key != 'metadata.name' else 'node is ' + node.name})"
                for r in unmatched
            )
            details.append(f"nodeAffinity term {i + 1} unmatched: {said or 'the term is empty'}")
    return details


def _plugin(fwk: Framework, name: str) -> object | None:
    return next((p for p in fwk.filter if p.name == name), None)


def spread_details(
    fwk: Framework, pod: Pod, nodes: Sequence[NodeInfo]
) -> Callable[[Pod, NodeInfo], list[str]]:
    """Per-node spread details from the plugin's own PreFilter counts over ``nodes`` (computed once per pod)."""
    plugin = _plugin(fwk, "PodTopologySpread")
    state = plugin.cal_pre_filter_state(pod, nodes) if plugin is not None else None  # type: ignore[attr-defined]

    def details(pod: Pod, info: NodeInfo) -> list[str]:
        if state is None or info.node is None:
            return []
        out = []
        labels = info.node.labels
        for i, constraint in enumerate(state.constraints):
            key = constraint.topology_key
            value = labels.get(key)
            if value is None:
                out.append(f"topology spread on {key}: node has no {key} label")
                continue
            counts = state.tp_value_to_match_num[i]
            minimum = state.min_match_num(i, constraint.min_domains)
            self_match = 1 if constraint.matches_pod(pod.labels) else 0
            skew = counts.get(value, 0) + self_match - minimum
            if skew <= constraint.max_skew:
                continue
            if len(counts) < constraint.min_domains:
                where = (
                    f" (only {len(counts)} eligible domains, fewer than minDomains {constraint.min_domains})"
                )
            else:
                at_min = sorted(v for v, n in counts.items() if n == minimum)
                where = f" ({', '.join(at_min[:3])}{', …' if len(at_min) > 3 else ''})"
            out.append(
                f"topology spread on {key}: {value} has {counts.get(value, 0)} matching pods"
                f"{' + this one' if self_match else ''}, the minimum is {minimum}{where}: "
                f"skew {skew} > maxSkew {constraint.max_skew}"
            )
        return out

    return details


def volume_limit_details(fwk: Framework) -> Callable[[Pod, NodeInfo], list[str]]:
    """Per-node NodeVolumeLimits details: each CSI driver whose attached volumes plus the pod's new
    ones exceed the node's limit, counted by the plugin itself."""
    plugin = _plugin(fwk, "NodeVolumeLimits")

    def details(pod: Pod, info: NodeInfo) -> list[str]:
        if not isinstance(plugin, NodeVolumeLimits):
            return []
        return [
            f"{driver}: {attached} volume(s) attached + {new} new, limit {limit}"
            for driver, (attached, new, limit) in sorted(plugin.volume_counts(pod, info).items())
            if limit is not None and attached + new > limit
        ]

    return details


def _shortfall(short: RequestShortfall) -> str:
    where = f"claim {short.claim}, request {short.request}"
    if short.error:
        return f"{where}: {short.error}"
    if short.matching == 0:
        return f"{where}: no device of class {short.device_class} on the node matches"
    wanted = "all matching devices" if short.requested is None else f"{short.requested} device(s)"
    return (
        f"{where}: requests {wanted} of class {short.device_class}, "
        f"{short.matching} match on the node, {short.free} free"
    )


def dra_details(fwk: Framework, pod: Pod, nodes: Sequence[NodeInfo]) -> Callable[[Pod, NodeInfo], list[str]]:
    """Per-node DynamicResources details from the plugin's own PreFilter state and allocator: the
    requests that cannot be met on the node (no matching device, or fewer free than requested, with
    the counts), allocated claims the node cannot reach, or that every request alone fits and only
    their combination (constraints, devices two requests both want) does not."""
    plugin = _plugin(fwk, "DynamicResources")
    explain = plugin.explainer(pod, nodes) if isinstance(plugin, DynamicResources) else None

    def details(pod: Pod, info: NodeInfo) -> list[str]:
        if explain is None:
            return []
        found = explain(info)
        if found.message:
            return [found.message]
        out = [
            f"claim {key}: allocated devices are not reachable from the node"
            for key in found.unreachable_claims
        ]
        short = [_shortfall(r) for r in found.requests if r.short]
        if not short and found.requests:
            claims = sorted({r.claim for r in found.requests})
            short = [
                f"claim {name_list(claims)}: each request has enough free devices alone, "
                "but not all together (a constraint, or requests competing for the same devices)"
            ]
        return out + short

    return details


def _term_selects(term: PodAffinityTerm, owner: Pod, other: Pod) -> bool | None:
    """Whether ``term`` (of ``owner``) selects ``other``; None when a namespaceSelector makes that a
    question of Namespace objects (no detail then)."""
    if term.namespace_selector is not None:
        return None
    namespaces = term.namespaces or [owner.namespace]
    selector = term.label_selector
    return other.namespace in namespaces and selector is not None and selector.matches(other.labels)


#: Names a detail or hint line lists; the rest are counted.
NAMED = 3


def name_list(names: Sequence[str]) -> str:
    """``a, b, c and 4 more``: the first :data:`NAMED` names and a count of the others."""
    shown = ", ".join(names[:NAMED])
    return f"{shown} and {len(names) - NAMED} more" if len(names) > NAMED else shown


def interpod_details(pod: Pod, nodes: Sequence[NodeInfo]) -> Callable[[Pod, NodeInfo], list[str]]:
    """Per-node InterPodAffinity details: the pods in the node's topology domain that the pod's required
    anti-affinity selects, the existing pods whose anti-affinity refuses it, and the required affinity
    terms nothing in the domain meets. The pods of each domain are indexed once per pod."""
    domains: dict[str, dict[str, list[Pod]]] = {}  # topology key -> value -> pods there

    def in_domain(key: str, value: str) -> list[Pod]:
        index = domains.get(key)
        if index is None:
            index = domains[key] = {}
            for info in nodes:
                there = info.node.labels.get(key) if info.node is not None else None
                if there is not None:
                    index.setdefault(there, []).extend(p.pod for p in info.pods)
        return index.get(value, [])

    refusing: list[tuple[str, str, Pod]] = []  # (key, value, existing pod) whose anti-affinity selects pod
    for info in nodes:
        for other in info.pods_with_required_anti_affinity:
            existing = other.pod
            for term in existing.pod_anti_affinity.required if existing.pod_anti_affinity is not None else []:
                value = info.node.labels.get(term.topology_key) if info.node is not None else None
                if value is not None and _term_selects(term, existing, pod):
                    refusing.append((term.topology_key, value, existing))

    def details(pod: Pod, info: NodeInfo) -> list[str]:
        node = info.node
        if node is None:
            return []
        out = []
        for term in pod.pod_anti_affinity.required if pod.pod_anti_affinity is not None else []:
            value = node.labels.get(term.topology_key)
            hit = (
                [p for p in in_domain(term.topology_key, value) if _term_selects(term, pod, p)]
                if value
                else []
            )
            if hit:
                out.append(
                    f"pod anti-affinity: {name_list([p.key for p in hit])} in {term.topology_key}={value} (selected by the pod's term)"
                )
        for term in pod.pod_affinity.required if pod.pod_affinity is not None else []:
            value = node.labels.get(term.topology_key)
            if value is None:
                out.append(f"pod affinity: node has no {term.topology_key} label")
            elif not any(_term_selects(term, pod, p) for p in in_domain(term.topology_key, value)):
                out.append(f"pod affinity: no pod the term selects in {term.topology_key}={value}")
        out.extend(
            f"existing pod {existing.key} in {key}={value} refuses the pod (its anti-affinity)"
            for key, value, existing in refusing
            if node.labels.get(key) == value
        )
        return out

    return details


_EXPLAINERS: dict[str, Callable[[Pod, NodeInfo], list[str]]] = {
    "NodePorts": _ports,
    "TaintToleration": _taints,
    "NodeUnschedulable": _unschedulable,
    "NodeAffinity": _affinity,
}


def filter_details(
    fwk: Framework, pod: Pod, failed: Mapping[str, Status], nodes: Sequence[NodeInfo], placed: bool = False
) -> dict[str, list[str]]:
    """``{node: [detail, ...]}`` for the failing nodes whose rejecting plugin has amounts to name.

    ``nodes`` is the snapshot the attempt filtered (every node, so spread counts cover the cluster).
    ``placed``: the pod was scheduled, so its own PreBind has allocated its claims since its nodes
    were filtered; DynamicResources details would describe that later cluster and are left out.
    """
    by_name = {info.name: info for info in nodes}
    # Explainers that work something out for the pod first, made for the first node that needs them.
    per_pod: dict[str, Callable[[Pod, NodeInfo], list[str]]] = {}
    makers: dict[str, Callable[[], Callable[[Pod, NodeInfo], list[str]]]] = {
        "NodeResourcesFit": lambda: resource_details(pod),
        "PodTopologySpread": lambda: spread_details(fwk, pod, nodes),
        "InterPodAffinity": lambda: interpod_details(pod, nodes),
        "NodeVolumeLimits": lambda: volume_limit_details(fwk),
        "DynamicResources": lambda: dra_details(fwk, pod, nodes),
    }
    out: dict[str, list[str]] = {}
    for name, status in failed.items():
        info = by_name.get(name)
        plugin = status.plugin
        if info is None or info.node is None or plugin is None:
            continue
        explain = _EXPLAINERS.get(plugin)
        if placed and plugin == "DynamicResources":
            continue
        if plugin in makers:
            explain = per_pod.get(plugin)
            if explain is None:
                explain = per_pod[plugin] = makers[plugin]()
        if explain is not None:
            details = explain(pod, info)
            if details:
                out[name] = details
    return out
