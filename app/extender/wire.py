"""The extender wire format (``k8s.io/kube-scheduler/extender/v1``): decode requests, encode responses.

The v1 types carry no JSON tags, so kube-scheduler marshals them with their Go field names
(``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``Host``, ``Score``...) and every field is
always present (no ``omitempty``: nil maps, slices and pointers are ``null``; a Go ``string`` is
``""``). Request keys are matched case-insensitively, as Go's ``encoding/json`` does, so
``"pod"`` and ``"NODENAMES"`` work too; when a key appears twice (in any case) the last wins.

This is the hot path: bodies are decoded with :func:`orjson.loads` and walked by hand; pydantic
is used only to document these shapes in the OpenAPI schema (:mod:`app.extender.schema`).

Decoding errors raise :class:`WireError`, whose message names the field path, for example
``Pod.spec.containers[0].resources.requests.cpu: ...`` or ``Nodes.items[3].metadata.name: ...``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from app.api.errors import FieldError
from app.api.objects import Node, Pod, json_type_name, parse_node, parse_pod

__all__ = [
    "ExtenderArgs",
    "FilterResult",
    "HostPriority",
    "NodeCache",
    "WireError",
    "decode_args",
    "encode_error",
    "encode_filter_result",
    "encode_host_priorities",
]

# Folded key -> Go field name, for ExtenderArgs and v1.NodeList.
_ARGS_FIELDS = {"pod": "Pod", "nodes": "Nodes", "nodenames": "NodeNames"}
_NODE_LIST_FIELDS = {"items": "items"}


class WireError(ValueError):
    """A request body that is not a valid ``ExtenderArgs``; answered with HTTP 400."""


@dataclass(slots=True)
class ExtenderArgs:
    """A decoded ``ExtenderArgs``: the pod and exactly one of the node forms.

    ``nodes`` is set when kube-scheduler sent full objects (``nodeCacheCapable: false``); each
    parsed :class:`~app.api.objects.Node` keeps the input dict in ``raw`` so the answer can echo it.
    ``node_names`` is set when it sent names (``nodeCacheCapable: true``). When a body carries both,
    ``Nodes`` wins: an answer in ``Nodes`` form is understood by kube-scheduler in either mode.
    """

    pod: Pod
    nodes: list[Node] | None
    node_names: list[str] | None


@dataclass(slots=True)
class FilterResult:
    """``ExtenderFilterResult``: passing nodes in the request's form, failures and an error."""

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


# --- decoding ---------------------------------------------------------------------------


class NodeCache:
    """Parsed Nodes by ``(name, uid, resourceVersion)``, so ``Nodes`` requests skip re-parsing.

    kube-scheduler sends the same node objects from its informer call after call; an object's
    ``resourceVersion`` changes with every change to it, so an object with a version already seen
    has the content already parsed. Objects without ``uid`` and ``resourceVersion`` (hand-written
    ones) are always parsed. The cache keeps the ``capacity`` most recently added entries.
    """

    def __init__(self, capacity: int = 16384) -> None:
        self.capacity = capacity
        self._nodes: dict[tuple[str, str, str], Node] = {}

    def parse(self, raw: Any, path: str) -> Node:
        """:func:`~app.api.objects.parse_node`, or a copy of the cached Node with ``raw`` swapped in."""
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        if not isinstance(meta, dict):
            return parse_node(raw, path)
        key = (meta.get("name"), meta.get("uid"), meta.get("resourceVersion"))
        if not (key[0] and key[1] and key[2]) or not all(isinstance(k, str) for k in key):
            return parse_node(raw, path)
        hit = self._nodes.get(key)  # type: ignore[arg-type]
        if hit is not None:
            return _with_raw(hit, raw)
        node = parse_node(raw, path)
        if len(self._nodes) >= self.capacity:
            del self._nodes[next(iter(self._nodes))]
        self._nodes[key] = node  # type: ignore[index]
        return node

    def __len__(self) -> int:
        return len(self._nodes)


def _with_raw(node: Node, raw: Any) -> Node:
    """A shallow copy of ``node`` whose ``raw`` is this request's object, which the answer echoes."""
    clone = Node.__new__(Node)
    for slot in _NODE_SLOTS:
        object.__setattr__(clone, slot, getattr(node, slot))
    clone.raw = raw
    return clone


_NODE_SLOTS = tuple(s for s in Node.__slots__ if s != "raw")


def decode_args(body: bytes, node_cache: NodeCache | None = None) -> ExtenderArgs:
    """Decode an ``ExtenderArgs`` body (filter and prioritize share it); raise :class:`WireError`.

    With ``node_cache``, node objects already parsed (same name, uid and resourceVersion) are
    taken from it.
    """
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise WireError(f"request body is not valid JSON: {err}") from None
    if not isinstance(doc, dict):
        raise WireError(f"request body: expected a JSON object (ExtenderArgs), got {json_type_name(doc)}")
    fields = _fold(doc, _ARGS_FIELDS)
    raw_pod = fields.get("Pod")
    if raw_pod is None:
        raise WireError("Pod: Required value: the pod to schedule is missing")
    if not isinstance(raw_pod, dict):
        raise WireError(f"Pod: expected an object (v1.Pod), got {json_type_name(raw_pod)}")
    raw_nodes = fields.get("Nodes")
    raw_names = fields.get("NodeNames")
    if raw_nodes is None and raw_names is None:
        raise WireError("Nodes, NodeNames: Required value: one of them must be set")
    try:
        pod = parse_pod(raw_pod, "Pod")
        if raw_nodes is not None:
            return ExtenderArgs(pod, _decode_node_list(raw_nodes, node_cache), None)
        return ExtenderArgs(pod, None, _decode_names(raw_names))
    except FieldError as err:
        raise WireError(str(err)) from None


def _decode_node_list(raw: Any, node_cache: NodeCache | None) -> list[Node]:
    if not isinstance(raw, dict):
        raise WireError(f"Nodes: expected an object (v1.NodeList), got {json_type_name(raw)}")
    fields = _fold(raw, _NODE_LIST_FIELDS)
    if "items" not in fields:
        raise WireError("Nodes.items: Required value: a v1.NodeList carries its nodes in items")
    items = fields["items"]
    if items is None:  # Go marshals an empty NodeList's nil Items as null
        return []
    if not isinstance(items, list):
        raise WireError(f"Nodes.items: expected an array, got {json_type_name(items)}")
    parse = parse_node if node_cache is None else node_cache.parse
    return [parse(item, f"Nodes.items[{i}]") for i, item in enumerate(items)]


def _decode_names(raw: Any) -> list[str]:
    if not isinstance(raw, list):
        raise WireError(f"NodeNames: expected an array of strings, got {json_type_name(raw)}")
    for i, name in enumerate(raw):
        if not isinstance(name, str):
            raise WireError(f"NodeNames[{i}]: expected a string, got {json_type_name(name)}")
    return raw


def _fold(obj: Mapping[str, Any], fields: Mapping[str, str]) -> dict[str, Any]:
    """Pick ``fields`` out of ``obj`` by case-insensitive key, later keys winning (Go's decoder)."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = fields.get(key.casefold())
        if name is not None:
            out[name] = value
    return out


# --- encoding ---------------------------------------------------------------------------


def encode_filter_result(result: FilterResult) -> bytes:
    """``ExtenderFilterResult`` as kube-scheduler marshals it: every key, Go field order.

    Passing nodes are echoed as the input objects, unchanged, in a ``v1.NodeList``; empty failure
    maps are ``null`` (a nil Go map).
    """
    nodes = None if result.nodes is None else {"metadata": {}, "items": [n.raw for n in result.nodes]}
    return orjson.dumps(
        {
            "Nodes": nodes,
            "NodeNames": result.node_names,
            "FailedNodes": result.failed or None,
            "FailedAndUnresolvableNodes": result.unresolvable or None,
            "Error": result.error,
        }
    )


def encode_host_priorities(priorities: Sequence[HostPriority]) -> bytes:
    """``HostPriorityList``: a bare JSON array of ``{"Host", "Score"}``."""
    return orjson.dumps([{"Host": p.host, "Score": p.score} for p in priorities])


def encode_error(message: str) -> bytes:
    """The body of a non-200 answer: ``{"Error": message}`` (kube-scheduler does not read it)."""
    return orjson.dumps({"Error": message})
