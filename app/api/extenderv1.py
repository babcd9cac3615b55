"""The extender protocol's types (``k8s.io/kube-scheduler/extender/v1``) and the scheduler's side of it.

Both faces speak this protocol: ``berth serve`` answers it (:mod:`app.extender.wire` decodes the
requests and encodes the answers) and ``berth run`` / ``berth simulate`` call extenders with it
(:mod:`app.kube.extender`, which encodes the requests here and decodes the answers). The shared
result types live here, below both.

kube-scheduler marshals the v1 types with their Go field names (they carry no JSON tags) and
always writes every field; it decodes answers with ``encoding/json``: keys match
case-insensitively, unknown keys are ignored, ``null`` leaves a field at its zero value, and a
value of the wrong JSON type fails the whole answer. The decoders below do the same, and their
errors read like Go's (``json: cannot unmarshal string into Go struct field
ExtenderFilterResult.FailedNodes of type v1.FailedNodesMap``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from app.api.errors import FieldError
from app.api.objects import Node, Pod, parse_node
from app.api.strict import json_kind

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "AnswerError",
    "FilterResult",
    "HostPriority",
    "NodeVictims",
    "decode_binding_result",
    "decode_filter_result",
    "decode_host_priorities",
    "decode_preemption_result",
    "encode_binding_args",
    "encode_extender_args",
    "encode_preemption_args",
    "fold_keys",
]

MAX_EXTENDER_PRIORITY = 10
"""``extenderv1.MaxExtenderPriority``: extender scores are integers in 0..10."""


@dataclass(slots=True)
class FilterResult:
    """``ExtenderFilterResult``: passing nodes in the request's form, failures and an error.

    ``nodes`` holds parsed :class:`~app.api.objects.Node` objects (each with its JSON in ``raw``);
    ``node_names`` the names. kube-scheduler reads ``NodeNames`` only from a ``nodeCacheCapable``
    extender, ``Nodes`` otherwise; neither set means no node passed.
    """

    nodes: list[Node] | None = None
    node_names: list[str] | None = None
    failed: dict[str, str] | None = None
    unresolvable: dict[str, str] | None = None
    error: str = ""


@dataclass(slots=True)
class HostPriority:
    """One entry of ``HostPriorityList``."""

    host: str
    score: int


@dataclass(slots=True)
class NodeVictims:
    """One node's ``Victims`` / ``MetaVictims``: the pods to evict there, most important first.

    ``uids`` is always set, in the order sent. ``pods`` holds the parsed objects when they came in
    full (``NodeNameToVictims``, ``nodeCacheCapable: false``), index for index with ``uids``; it is
    None for ``MetaVictims``, which carry UIDs only. A full object without ``metadata.uid`` gets
    berth's ``namespace/name`` stand-in (kube-scheduler always sends the UID).
    """

    uids: list[str]
    num_pdb_violations: int = 0
    pods: list[Pod] | None = None


class AnswerError(ValueError):
    """An extender's answer that does not decode into the v1 type (Go's ``json.Unmarshal`` error)."""


# --- requests (what kube-scheduler sends) -----------------------------------------------------------


def encode_extender_args(pod: Pod, nodes: Sequence[Node] | None, node_names: Sequence[str] | None) -> bytes:
    """``ExtenderArgs``: the pod, and either a ``v1.NodeList`` or the node names (the other ``null``)."""
    node_list: dict[str, object] | None = (
        None if nodes is None else {"metadata": {}, "items": [n.raw for n in nodes] or None}
    )
    return orjson.dumps(
        {"Pod": pod.raw, "Nodes": node_list, "NodeNames": None if node_names is None else list(node_names)}
    )


def encode_preemption_args(
    pod: Pod, victims: Mapping[str, tuple[Sequence[Pod], int]], *, meta: bool
) -> bytes:
    """``ExtenderPreemptionArgs``: node name → (victims, PDB violations), as full pods or as UIDs.

    ``meta`` (a ``nodeCacheCapable`` extender) sends ``NodeNameToMetaVictims``; otherwise the full
    ``NodeNameToVictims``. The other field is ``null``, as Go marshals a nil map.
    """
    if meta:
        doc = {
            node: {"Pods": [{"UID": p.uid} for p in pods], "NumPDBViolations": n}
            for node, (pods, n) in victims.items()
        }
        return orjson.dumps({"Pod": pod.raw, "NodeNameToVictims": None, "NodeNameToMetaVictims": doc})
    full = {
        node: {"Pods": [p.raw for p in pods], "NumPDBViolations": n} for node, (pods, n) in victims.items()
    }
    return orjson.dumps({"Pod": pod.raw, "NodeNameToVictims": full, "NodeNameToMetaVictims": None})


def encode_binding_args(pod: Pod, node: str) -> bytes:
    """``ExtenderBindingArgs``: the pod's name, namespace and UID and the chosen node."""
    return orjson.dumps({"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node})


# --- answers (what kube-scheduler reads back) ---------------------------------------------------------

_FILTER_FIELDS = {
    "nodes": "Nodes",
    "nodenames": "NodeNames",
    "failednodes": "FailedNodes",
    "failedandunresolvablenodes": "FailedAndUnresolvableNodes",
    "error": "Error",
}
_GO_TYPES = {
    "Nodes": "v1.NodeList",
    "NodeNames": "[]string",
    "FailedNodes": "v1.FailedNodesMap",
    "FailedAndUnresolvableNodes": "v1.FailedNodesMap",
    "Error": "string",
}


def _go_kind(value: object) -> str:
    """The JSON kind as Go's decoder names it in ``cannot unmarshal <kind> into ...``."""
    kind = json_kind(value)
    return "bool" if kind == "boolean" else kind


def _mismatch(value: object, struct: str, field: str, go_type: str) -> AnswerError:
    where = f"Go struct field {struct}.{field}" if field else "Go value"
    return AnswerError(f"json: cannot unmarshal {_go_kind(value)} into {where} of type {go_type}")


def _load(body: bytes) -> object:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise AnswerError(f"invalid character in the extender's answer: {err}") from None


def fold_keys(obj: Mapping[str, Any], fields: Mapping[str, str]) -> dict[str, Any]:
    """Pick ``fields`` (folded key -> Go field name) out of ``obj`` by case-insensitive key, later
    keys winning: how Go's ``encoding/json`` matches object keys to struct fields."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = fields.get(key.casefold())
        if name is not None:
            out[name] = value
    return out


def _string_map(value: object, struct: str, field: str, go_type: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _mismatch(value, struct, field, go_type)
    for item in value.values():
        if item is not None and not isinstance(item, str):
            raise _mismatch(item, struct, field, "string")
    return {k: v or "" for k, v in value.items()}


def decode_filter_result(body: bytes) -> FilterResult:
    """An ``ExtenderFilterResult``; the nodes of a ``Nodes`` answer are parsed."""
    doc = _load(body)
    if doc is None:
        return FilterResult()
    if not isinstance(doc, dict):
        raise _mismatch(doc, "", "", "v1.ExtenderFilterResult")
    fields = fold_keys(doc, _FILTER_FIELDS)
    struct = "ExtenderFilterResult"
    result = FilterResult()
    error = fields.get("Error")
    if error is not None and not isinstance(error, str):
        raise _mismatch(error, struct, "Error", "string")
    result.error = error or ""
    names = fields.get("NodeNames")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _mismatch(names, struct, "NodeNames", _GO_TYPES["NodeNames"])
        result.node_names = names
    node_list = fields.get("Nodes")
    if node_list is not None:
        if not isinstance(node_list, dict):
            raise _mismatch(node_list, struct, "Nodes", _GO_TYPES["Nodes"])
        items = fold_keys(node_list, {"items": "items"}).get("items") or []
        if not isinstance(items, list):
            raise _mismatch(items, struct, "Nodes.items", "[]v1.Node")
        try:
            result.nodes = [parse_node(item, f"Nodes.items[{i}]") for i, item in enumerate(items)]
        except FieldError as err:
            raise AnswerError(f"the extender's Nodes do not decode: {err}") from None
    result.failed = _string_map(fields.get("FailedNodes"), struct, "FailedNodes", _GO_TYPES["FailedNodes"])
    result.unresolvable = _string_map(
        fields.get("FailedAndUnresolvableNodes"),
        struct,
        "FailedAndUnresolvableNodes",
        _GO_TYPES["FailedAndUnresolvableNodes"],
    )
    return result


def _int64(value: object, struct: str, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _mismatch(value, struct, field, "int64")
    if isinstance(value, float) and not value.is_integer():
        raise AnswerError(
            f"json: cannot unmarshal number {value} into Go struct field {struct}.{field} of type int64"
        )
    return int(value)


def decode_host_priorities(body: bytes) -> list[HostPriority]:
    """A ``HostPriorityList``: ``[{"Host": ..., "Score": ...}]`` (``null`` is an empty list)."""
    doc = _load(body)
    if doc is None:
        return []
    if not isinstance(doc, list):
        raise _mismatch(doc, "", "", "v1.HostPriorityList")
    out = []
    for item in doc:
        if item is None:
            out.append(HostPriority("", 0))
            continue
        if not isinstance(item, dict):
            raise _mismatch(item, "", "", "v1.HostPriority")
        fields = fold_keys(item, {"host": "Host", "score": "Score"})
        host = fields.get("Host")
        if host is not None and not isinstance(host, str):
            raise _mismatch(host, "HostPriority", "Host", "string")
        out.append(HostPriority(host or "", _int64(fields.get("Score"), "HostPriority", "Score")))
    return out


def decode_preemption_result(body: bytes) -> dict[str, NodeVictims]:
    """An ``ExtenderPreemptionResult``: node name → the UIDs of its victims (``NodeNameToMetaVictims``).

    kube-scheduler reads only the meta form back, whatever it sent; a node mapped to ``null`` keeps
    an empty victim list (the caller decides what that means).
    """
    doc = _load(body)
    if doc is None:
        return {}
    struct = "ExtenderPreemptionResult"
    if not isinstance(doc, dict):
        raise _mismatch(doc, "", "", f"v1.{struct}")
    raw = fold_keys(doc, {"nodenametometavictims": "NodeNameToMetaVictims"}).get("NodeNameToMetaVictims")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _mismatch(raw, struct, "NodeNameToMetaVictims", "map[string]*v1.MetaVictims")
    out: dict[str, NodeVictims] = {}
    for node, entry in raw.items():
        if entry is None:
            out[node] = NodeVictims([])
            continue
        if not isinstance(entry, dict):
            raise _mismatch(entry, struct, "NodeNameToMetaVictims", "v1.MetaVictims")
        fields = fold_keys(entry, {"pods": "Pods", "numpdbviolations": "NumPDBViolations"})
        pods = fields.get("Pods") or []
        if not isinstance(pods, list):
            raise _mismatch(pods, "MetaVictims", "Pods", "[]*v1.MetaPod")
        uids = []
        for pod in pods:
            if pod is None:
                uids.append("")
                continue
            if not isinstance(pod, dict):
                raise _mismatch(pod, "MetaVictims", "Pods", "v1.MetaPod")
            uid = fold_keys(pod, {"uid": "UID"}).get("UID")
            if uid is not None and not isinstance(uid, str):
                raise _mismatch(uid, "MetaPod", "UID", "string")
            uids.append(uid or "")
        out[node] = NodeVictims(
            uids, _int64(fields.get("NumPDBViolations"), "MetaVictims", "NumPDBViolations")
        )
    return out


def decode_binding_result(body: bytes) -> str:
    """An ``ExtenderBindingResult``: its ``Error`` ("" for a successful bind)."""
    doc = _load(body)
    if doc is None:
        return ""
    if not isinstance(doc, dict):
        raise _mismatch(doc, "", "", "v1.ExtenderBindingResult")
    error = fold_keys(doc, {"error": "Error"}).get("Error")
    if error is not None and not isinstance(error, str):
        raise _mismatch(error, "ExtenderBindingResult", "Error", "string")
    return error or ""
