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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from app.api.decoding import JsonSyntaxError, dismantle, loads_as_go, loads_in_chunks
from app.api.depth import MAX_DEPTH, json_larger_than, json_too_deep, too_deep
from app.api.errors import FieldError
from app.api.extenderv1 import MAX_EXTENDER_PRIORITY, FilterResult, HostPriority, NodeVictims, fold_keys
from app.api.objects import Node, Pod, json_type_name, parse_node, parse_pod
from app.extender import schema

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "MAX_POD_BYTES",
    "ExtenderArgs",
    "FilterResult",
    "HostPriority",
    "NodeCache",
    "NodeVictims",
    "PodMemo",
    "PreemptionArgs",
    "PreemptionResult",
    "WireError",
    "decode_args",
    "decode_preemption_args",
    "encode_error",
    "encode_filter_result",
    "encode_host_priorities",
    "encode_preemption_result",
    "encode_scores",
]

MAX_POD_BYTES = 3 << 20
"""The largest Pod accepted: kube-apiserver refuses any request body over 3 MiB (and etcd stores
objects of 1.5 MiB at most), so no pod kube-scheduler sends is larger. A larger one could only cost
seconds of evaluation; it is refused with the field named."""

# Folded key -> Go field name, for ExtenderArgs and v1.NodeList: from the models of the OpenAPI document.
_ARGS_FIELDS = schema.folded_fields(schema.ExtenderArgs)
_NODE_LIST_FIELDS = schema.folded_fields(schema.NodeList)
_NODE_FORMS = schema.one_of_groups(schema.ExtenderArgs)
_VICTIM_FORMS = schema.one_of_groups(schema.ExtenderPreemptionArgs)


T = TypeVar("T")


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


class PodMemo:
    """The last Pod parsed, returned again for an equal ``Pod`` object.

    kube-scheduler sends the same pod to /filter and then to /prioritize (and /preempt); with the
    memo the second call skips parsing and gets the very Pod object of the first, by which the
    service recognises the cycle. Equality is of the whole JSON object, so an edited pod with the
    same UID is parsed afresh.
    """

    def __init__(self) -> None:
        self._last: Pod | None = None

    def parse(self, raw: Any, path: str) -> Pod:
        """:func:`~app.api.objects.parse_pod`, or the last Pod if ``raw`` equals its JSON."""
        last = self._last
        if last is not None and last.raw == raw:
            return last
        pod = parse_pod(raw, path)
        self._last = pod
        return pod


def _with_raw(node: Node, raw: Any) -> Node:
    """A shallow copy of ``node`` whose ``raw`` is this request's object, which the answer echoes."""
    clone = Node.__new__(Node)
    for slot in _NODE_SLOTS:
        object.__setattr__(clone, slot, getattr(node, slot))
    clone.raw = raw
    return clone


_NODE_SLOTS = tuple(s for s in Node.__slots__ if s != "raw")


def decode_args(
    body: bytes,
    node_cache: NodeCache | None = None,
    pod_memo: PodMemo | None = None,
    *,
    chunked: bool = False,
) -> ExtenderArgs:
    """Decode an ``ExtenderArgs`` body (filter and prioritize share it); raise :class:`WireError`.

    With ``node_cache``, node objects already parsed (same name, uid and resourceVersion) are
    taken from it; with ``pod_memo``, a pod equal to the last one decoded is not parsed again.
    ``chunked`` decodes a large body without long holds of the GIL (:func:`_decode_object`).
    """

    def build(fields: Mapping[str, Any], raw_pod: dict[str, Any]) -> ExtenderArgs:
        raw_nodes = fields.get("Nodes")
        raw_names = fields.get("NodeNames")
        if raw_nodes is None and raw_names is None:
            raise WireError(f"{', '.join(_NODE_FORMS)}: Required value: one of them must be set")
        try:
            pod = parse_pod(raw_pod, "Pod") if pod_memo is None else pod_memo.parse(raw_pod, "Pod")
            if raw_nodes is not None:
                if raw_names is not None:
                    _decode_names(raw_names)  # unused, but of the right type, as Go's decoder requires
                return ExtenderArgs(pod, _decode_node_list(raw_nodes, node_cache), None)
            return ExtenderArgs(pod, None, _decode_names(raw_names))
        except FieldError as err:
            raise WireError(str(err)) from None

    return _decode_object(body, "ExtenderArgs", _ARGS_FIELDS, chunked, build)


def _decode_object(
    body: bytes,
    type_name: str,
    keys: Mapping[str, str],
    chunked: bool,
    build: Callable[[Mapping[str, Any], dict[str, Any]], T],
) -> T:
    """``build(fields, raw pod)`` of the JSON object ``body`` (Go type ``type_name``), whose keys
    are folded by ``keys`` and whose ``Pod`` is required and bounded.

    ``chunked`` (for large bodies, decoded in a worker thread) decodes a chunk at a time
    (:func:`~app.api.decoding.loads_in_chunks`), checks the pod's size before the depth of the
    whole and checks both by walks in Python, where orjson would hold the GIL, and so stall the
    event loop, for the whole body each time; a refused body is taken apart a container at a time
    (:func:`~app.api.decoding.dismantle`) rather than freed in one C call.
    """
    doc = _load_object(body, type_name, chunked)
    try:
        fields = fold_keys(doc, keys)
        raw_pod = _required_pod(fields, body)
        deep = too_deep(doc) if chunked else None
        if deep is not None:
            raise WireError(f"{deep}: nested more than {MAX_DEPTH} levels deep")
        return build(fields, raw_pod)
    except WireError:
        if chunked:
            dismantle(doc)
        raise


def _load_object(body: bytes, type_name: str, chunked: bool) -> dict[str, Any]:
    """The body as a JSON object; ``type_name`` (the Go type) is named when it is something else.
    Its depth is checked here unless ``chunked`` (see :func:`_decode_object`)."""
    try:
        doc = loads_in_chunks(body) if chunked else loads_as_go(body)
    except JsonSyntaxError as err:
        raise WireError(f"request body is not valid JSON: {err}") from None
    except FieldError as err:
        raise WireError(str(err)) from None
    if not isinstance(doc, dict):
        raise WireError(f"request body: expected a JSON object ({type_name}), got {json_type_name(doc)}")
    deep = None if chunked else json_too_deep(doc)
    if deep is not None:
        raise WireError(f"{deep}: nested more than {MAX_DEPTH} levels deep")
    return doc


def _required_pod(fields: Mapping[str, Any], body: bytes) -> dict[str, Any]:
    """The raw ``Pod`` of folded request ``fields`` (decoded from ``body``): it must be there, be an
    object, and be no larger than :data:`MAX_POD_BYTES`."""
    raw_pod = fields.get("Pod")
    if raw_pod is None:
        raise WireError("Pod: Required value: the pod to schedule is missing")
    if not isinstance(raw_pod, dict):
        raise WireError(f"Pod: expected an object (v1.Pod), got {json_type_name(raw_pod)}")
    if len(body) > MAX_POD_BYTES and json_larger_than(raw_pod, MAX_POD_BYTES):
        raise WireError(
            f"Pod: more than {MAX_POD_BYTES} bytes of JSON, more than kube-apiserver accepts for any object"
        )
    return raw_pod


def _decode_node_list(raw: Any, node_cache: NodeCache | None) -> list[Node]:
    if not isinstance(raw, dict):
        raise WireError(f"Nodes: expected an object (v1.NodeList), got {json_type_name(raw)}")
    fields = fold_keys(raw, _NODE_LIST_FIELDS)
    meta = fields.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise WireError(f"Nodes.metadata: expected an object (v1.ListMeta), got {json_type_name(meta)}")
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
    try:
        "".join(raw)  # is every item a string? (checked in C: this runs on every call)
    except TypeError:
        for i, name in enumerate(raw):
            if not isinstance(name, str):
                raise WireError(f"NodeNames[{i}]: expected a string, got {json_type_name(name)}") from None
    return raw


# --- encoding ---------------------------------------------------------------------------


def encode_filter_result(result: FilterResult) -> bytes:
    """``ExtenderFilterResult`` as kube-scheduler marshals it: every key, Go field order.

    Passing nodes are echoed as the input objects, unchanged, in a ``v1.NodeList``; empty failure
    maps are ``null`` (a nil Go map).
    """
    rest = orjson.dumps(
        {
            "NodeNames": result.node_names,
            "FailedNodes": result.failed or None,
            "FailedAndUnresolvableNodes": result.unresolvable or None,
            "Error": result.error,
        }
    )
    if result.nodes is None:
        return b'{"Nodes":null,' + rest[1:]
    # One node at a time: echoing thousands of nodes in one orjson call would hold the GIL for as
    # long as encoding all of them takes (0.1 s for 60 MiB), however the call is scheduled.
    items = b",".join([orjson.dumps(node.raw) for node in result.nodes])
    return b'{"Nodes":{"metadata":{},"items":[' + items + b"]}," + rest[1:]


def encode_host_priorities(priorities: Sequence[HostPriority]) -> bytes:
    """``HostPriorityList``: a bare JSON array of ``{"Host", "Score"}``."""
    return encode_scores([p.host for p in priorities], [p.score for p in priorities])


_HOST_PREFIXES: dict[str, bytes] = {}
"""Node name -> ``{"Host":"<name>","Score":``, the part of an entry that repeats from call to call."""
_HOST_PREFIXES_MAX = 1 << 16
_SCORE_ENDS = tuple(b"%d}" % score for score in range(MAX_EXTENDER_PRIORITY + 1))


def encode_scores(hosts: Sequence[str], scores: Sequence[int]) -> bytes:
    """The ``HostPriorityList`` of ``hosts[i]`` scored ``scores[i]``, as :func:`encode_host_priorities`
    encodes it (orjson's compact form), without a ``HostPriority`` or a dict per node: this runs for
    every /prioritize over every node passed."""
    prefixes = _HOST_PREFIXES
    if len(prefixes) > _HOST_PREFIXES_MAX:
        prefixes.clear()  # names of nodes long gone; the current ones come back on the next calls
    ends = _SCORE_ENDS
    parts = []
    for host, score in zip(hosts, scores, strict=True):
        prefix = prefixes.get(host)
        if prefix is None:
            prefix = prefixes[host] = b'{"Host":' + orjson.dumps(host) + b',"Score":'
        parts.append(prefix + (ends[score] if 0 <= score <= MAX_EXTENDER_PRIORITY else b"%d}" % score))
    return b"[" + b",".join(parts) + b"]"


def encode_error(message: str) -> bytes:
    """The body of a non-200 answer: ``{"Error": message}`` (kube-scheduler does not read it)."""
    return orjson.dumps({"Error": message})


# --- preempt: ExtenderPreemptionArgs / ExtenderPreemptionResult ---------------------------

# Folded key -> Go field name, for ExtenderPreemptionArgs, Victims/MetaVictims and MetaPod.
_PREEMPTION_ARGS_FIELDS = schema.folded_fields(schema.ExtenderPreemptionArgs)
_VICTIMS_FIELDS = schema.folded_fields(schema.Victims)
_META_POD_FIELDS = schema.folded_fields(schema.MetaPod)


@dataclass(slots=True)
class PreemptionArgs:
    """A decoded ``ExtenderPreemptionArgs``: the preemptor and the proposed victims by node name.

    ``full`` tells which form was sent: True for ``NodeNameToVictims`` (full pods), False for
    ``NodeNameToMetaVictims``. When a body carries both, ``NodeNameToVictims`` wins, as ``Nodes``
    does for /filter: the full objects say more. Nodes keep the order of the body.
    """

    pod: Pod
    victims: dict[str, NodeVictims]
    full: bool


@dataclass(slots=True)
class PreemptionResult:
    """``ExtenderPreemptionResult``: the nodes kept, each with its (possibly fewer) victims.

    ``error`` is berth's addition: kube-scheduler's type has no ``Error`` field and its decoder
    ignores the key, so an error answer must also be a usable answer (berth echoes the request).
    """

    victims: dict[str, NodeVictims]
    error: str = ""


def decode_preemption_args(body: bytes, *, chunked: bool = False) -> PreemptionArgs:
    """Decode an ``ExtenderPreemptionArgs`` body; raise :class:`WireError` naming the field
    (``chunked`` as for :func:`decode_args`)."""

    def build(fields: Mapping[str, Any], raw_pod: dict[str, Any]) -> PreemptionArgs:
        raw_full = fields.get("NodeNameToVictims")
        raw_meta = fields.get("NodeNameToMetaVictims")
        if raw_full is None and raw_meta is None:
            raise WireError(f"{', '.join(_VICTIM_FORMS)}: Required value: one of them must be set")
        try:
            pod = parse_pod(raw_pod, "Pod")
            if raw_full is not None:
                if raw_meta is not None:
                    # Go's decoder decodes both forms, so a malformed one is refused even when unused.
                    _decode_victims_map(raw_meta, "NodeNameToMetaVictims", full=False)
                return PreemptionArgs(
                    pod, _decode_victims_map(raw_full, "NodeNameToVictims", full=True), True
                )
            return PreemptionArgs(
                pod, _decode_victims_map(raw_meta, "NodeNameToMetaVictims", full=False), False
            )
        except FieldError as err:
            raise WireError(str(err)) from None

    return _decode_object(body, "ExtenderPreemptionArgs", _PREEMPTION_ARGS_FIELDS, chunked, build)


def _decode_victims_map(raw: Any, name: str, *, full: bool) -> dict[str, NodeVictims]:
    entry_type = "Victims" if full else "MetaVictims"
    if not isinstance(raw, dict):
        raise WireError(f"{name}: expected an object (node name to {entry_type}), got {json_type_name(raw)}")
    out: dict[str, NodeVictims] = {}
    for node, entry in raw.items():
        path = f"{name}[{node}]"
        if not isinstance(entry, dict):
            # A null entry too: kube-scheduler never sends one (it would dereference it itself).
            raise WireError(f"{path}: expected an object ({entry_type}), got {json_type_name(entry)}")
        fields = fold_keys(entry, _VICTIMS_FIELDS)
        num = fields.get("NumPDBViolations")
        if num is None:  # absent or null: Go leaves the int64 at 0
            num = 0
        elif isinstance(num, float) and num.is_integer() and abs(num) <= schema.DOCUMENTED_INT64_BOUND:
            # 2.0 is an integer to JSON Schema and so to the OpenAPI document; Go's decoder refuses
            # it, but kube-scheduler never sends one, and a hand-written request means 2.
            num = int(num)
        elif isinstance(num, bool) or not isinstance(num, int):
            raise WireError(f"{path}.NumPDBViolations: expected an integer, got {json_type_name(num)}")
        elif not schema.INT64_MIN <= num <= schema.INT64_MAX:
            raise WireError(f"{path}.NumPDBViolations: {num} overflows a Go int64")
        items = fields.get("Pods")
        if items is None:  # a nil slice
            items = []
        elif not isinstance(items, list):
            raise WireError(f"{path}.Pods: expected an array, got {json_type_name(items)}")
        if full:
            pods = [parse_pod(item, f"{path}.Pods[{i}]") for i, item in enumerate(items)]
            out[node] = NodeVictims([p.uid for p in pods], num, pods)
        else:
            out[node] = NodeVictims(
                [_decode_meta_pod(item, f"{path}.Pods[{i}]") for i, item in enumerate(items)], num
            )
    return out


def _decode_meta_pod(raw: Any, path: str) -> str:
    if not isinstance(raw, dict):
        raise WireError(f"{path}: expected an object (MetaPod), got {json_type_name(raw)}")
    uid = fold_keys(raw, _META_POD_FIELDS).get("UID")
    if uid is None:  # absent or null: Go's zero string
        return ""
    if not isinstance(uid, str):
        raise WireError(f"{path}.UID: expected a string, got {json_type_name(uid)}")
    return uid


def encode_preemption_result(result: PreemptionResult) -> bytes:
    """``ExtenderPreemptionResult``: ``{"NodeNameToMetaVictims": {node: {"Pods": [{"UID"}], ...}}}``.

    Always UIDs (kube-scheduler reads only the meta form back, in either mode); an answer keeping no
    node is ``{}``. ``Error`` is added only when set, so a success is exactly the Go type's shape.
    """
    doc: dict[str, Any] = {
        "NodeNameToMetaVictims": {
            node: {"Pods": [{"UID": uid} for uid in v.uids], "NumPDBViolations": v.num_pdb_violations}
            for node, v in result.victims.items()
        }
    }
    if result.error:
        doc["Error"] = result.error
    return orjson.dumps(doc)
