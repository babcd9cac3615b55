"""Loading the cluster-state file of ``berth simulate``.

The state is what ``kubectl get nodes,pods,priorityclasses -o yaml`` prints, or hand-written YAML:
multi-document YAML (``---``), a ``v1 List`` (``kind: List`` with ``items``), a JSON object or a JSON
array of objects. Nodes, Pods and PriorityClasses are parsed; the storage kinds (PersistentVolume,
PersistentVolumeClaim, StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment) are
validated and kept for the volume plugins; every other kind is kept as a raw
:class:`~app.scheduler.scheduler.ClusterObjects` entry for plugins that read them, with one warning
per kind. Pods with ``spec.nodeName`` are running; the others are pending and get their priority the
way the Priority admission plugin would have set it
(the class's value and preemptionPolicy).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import ijson
import orjson
import yaml
from ijson.common import ObjectBuilder

from app.api import decoding
from app.api.errors import FieldError
from app.api.objects import (
    Node,
    Pod,
    PriorityClass,
    json_type_name,
    parse_node,
    parse_pod,
    parse_priority_class,
    slim_pod_document,
)
from app.api.resource import API_VERSION as RESOURCE_API_VERSION
from app.api.storage import STORAGE_KINDS
from app.framework.dra import DRA_KINDS
from app.scheduler.scheduler import ClusterObjects

__all__ = [
    "BUILTIN_PRIORITY_CLASSES",
    "ClusterState",
    "PendingPod",
    "StateError",
    "load_state",
    "parse_state",
]

#: The classes every API server creates at start-up (``scheduling.SystemPriorityClasses()``), so a pod
#: naming them is valid even when the state file does not list them.
BUILTIN_PRIORITY_CLASSES = (
    PriorityClass("system-node-critical", 2000001000, False, "PreemptLowerPriority"),
    PriorityClass("system-cluster-critical", 2000000000, False, "PreemptLowerPriority"),
)

#: (apiVersion, kind) of the objects berth simulates; anything else is kept raw.
_POD = ("v1", "Pod")
_NODE = ("v1", "Node")
_PRIORITY_CLASS = ("scheduling.k8s.io/v1", "PriorityClass")
_SIMULATED_KINDS = {kind: version for version, kind in (_POD, _NODE, _PRIORITY_CLASS)}
#: Phases of terminated pods: kube-scheduler's informers filter them out (``status.phase!=Succeeded,...``).
_TERMINAL_PHASES = ("Succeeded", "Failed")


class StateError(ValueError):
    """The state file cannot be read or holds an invalid object.

    The message names the file, the document (1-based index, plus kind and name when known) and the
    field path, e.g. ``state.yaml: document 3 (Pod default/web-1): spec.containers[0]...: ...``.
    """

    def __init__(self, path: str, message: str, where: str = "") -> None:
        self.path = path
        self.where = where
        self.message = message
        super().__init__(f"{path}: {where}: {message}" if where else f"{path}: {message}")


@dataclass(slots=True)
class PendingPod:
    """A pod without ``spec.nodeName``: its priority is resolved and ``index`` is its file order."""

    pod: Pod
    index: int
    where: str  # "document 3 (Pod default/web-1)", for messages


@dataclass(slots=True)
class ClusterState:
    """The parsed state file."""

    path: str
    nodes: list[Node] = field(default_factory=list)
    running: list[Pod] = field(default_factory=list)
    pending: list[PendingPod] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    objects: ClusterObjects = field(default_factory=ClusterObjects)  # the kinds not simulated, by kind
    other_objects: list[Mapping[str, Any]] = field(default_factory=list)  # the same, in file order
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Doc:
    """One object of the file and where it came from."""

    raw: Mapping[str, Any]
    where: str  # "document 3" or "document 1, item 4"


# --- reading ---------------------------------------------------------------------------------------------


class _StateLoader(decoding.DocumentLoader):
    """SafeLoader that keeps timestamps as strings, as Kubernetes' YAML→JSON decoding does.

    Without this, an unquoted ``creationTimestamp: 2024-05-01T10:00:00Z`` would become a ``datetime``
    and fail the object parsers' string checks.
    """


_StateLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in decoding.DocumentLoader.yaml_implicit_resolvers.items()
}


# libyaml's parser and composer in C, with the same constructors and resolvers: a state file loads about
# seven times faster than through the pure-Python loader. Constructing the Python objects is Python either way.
_FastStateLoader: type[Any] | None = None
if yaml.__with_libyaml__:

    class _CStateLoader(yaml.CSafeLoader):
        """:class:`_StateLoader` with libyaml's C parser."""

    _CStateLoader.yaml_implicit_resolvers = _StateLoader.yaml_implicit_resolvers
    _CStateLoader.yaml_constructors = _StateLoader.yaml_constructors
    _FastStateLoader = _CStateLoader


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        raise StateError(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise StateError(path, f"cannot read: {err}") from None


def _mark_text(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _yaml_documents(text: str, path: str) -> list[Any]:
    """The YAML documents of ``text``: through libyaml when it is there, and when it refuses the text
    (or is missing) through the pure-Python loader, whose errors name the line, column and document."""
    if _FastStateLoader is not None:
        fast = None
        try:
            fast = _FastStateLoader(text)  # a lone surrogate (stdin's surrogateescape) fails to encode here
            with decoding.recursion_limit(decoding.YAML_RECURSION_LIMIT):
                return list(
                    fast.construct_document(node) if node is not None else None for node in _nodes(fast)
                )
        except (yaml.YAMLError, ValueError, RecursionError):
            # Bad input (or what libyaml refuses and PyYAML accepts, e.g. flow collections nested more
            # than libyaml's 1,000 levels): the pure-Python loader decides, and names the place.
            pass
        finally:
            if fast is not None:
                fast.dispose()
    return _python_yaml_documents(text, path)


def _nodes(loader: Any) -> Iterator[Any]:
    """The loader's document nodes, one by one (None for an empty document)."""
    while loader.check_node():
        yield loader.get_node()


def _python_yaml_documents(text: str, path: str) -> list[Any]:
    docs: list[Any] = []
    loader: _StateLoader | None = None
    try:
        loader = _StateLoader(text)  # the reader refuses control characters (NUL) here
        with decoding.recursion_limit(decoding.YAML_RECURSION_LIMIT):
            while loader.check_node():
                node = loader.get_node()
                docs.append(loader.construct_document(node) if node is not None else None)
    except RecursionError:
        raise StateError(
            path, f"invalid YAML (document {len(docs) + 1}): {decoding.too_deep_message('a value')}"
        ) from None
    except yaml.reader.ReaderError as err:
        line = text.count("\n", 0, err.position) + 1
        column = err.position - (text.rfind("\n", 0, err.position) + 1) + 1
        raise StateError(
            path, f"line {line}, column {column}: invalid YAML: unacceptable character #x{err.character:04x}"
        ) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = " ".join(p for p in (err.context, err.problem) if p) or "syntax error"
        where = f"{_mark_text(mark)}: " if mark is not None else ""
        raise StateError(path, f"{where}invalid YAML (document {len(docs) + 1}): {problem}") from None
    except yaml.YAMLError as err:
        raise StateError(path, f"invalid YAML (document {len(docs) + 1}): {err}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return docs


def _documents(text: str, path: str) -> list[Any]:
    """The file's top-level documents: a JSON value (an array counts as one document per element)
    or YAML documents."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = _json(text)
        except RecursionError:
            raise StateError(path, f"invalid JSON: {decoding.too_deep_message('a value')}") from None
        except json.JSONDecodeError as err:
            # Flow-style YAML also starts with "{" or "["; only report JSON errors if YAML fails too.
            try:
                return _yaml_documents(text, path)
            except StateError:
                raise StateError(
                    path, f"line {err.lineno}, column {err.colno}: invalid JSON: {err.msg}"
                ) from None
        return list(data) if isinstance(data, list) else [data]
    return _yaml_documents(text, path)


def _json(text: str) -> Any:
    """orjson first (fast, and 1,024 levels deep without recursion); the standard library for what
    orjson refuses and Go accepts: unpaired surrogates, integers beyond a double (kept as
    :class:`_HugeInt`), and for the line and column of a real syntax error."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text, parse_int=decoding.json_int)


def _flatten(raw: Any, where: str, path: str) -> Iterator[_Doc]:
    """Yield the objects of one document, expanding ``List`` (and typed ``XxxList``) items."""
    if not isinstance(raw, Mapping):
        raise StateError(path, f"expected an object, got {json_type_name(raw)}", where)
    kind = raw.get("kind")
    items = raw.get("items")
    if isinstance(kind, str) and kind.endswith("List") and "items" in raw:
        if not isinstance(items, list):
            raise StateError(path, f"items: expected an array, got {json_type_name(items)}", where)
        item_kind = kind[: -len("List")]
        api_version = raw.get("apiVersion")
        for i, item in enumerate(items):
            yield from _flatten_item(item, item_kind, api_version, f"{where}, item {i + 1}", path)
            items[i] = None  # parsed: release it (the document is the state file's, decoded for this parse)
        return
    yield _Doc(raw, where)


def _flatten_item(item: Any, item_kind: str, api_version: Any, where: str, path: str) -> Iterator[_Doc]:
    """The objects of one item of a ``List`` of ``item_kind`` (``Pod`` of a ``PodList``, "" of a ``List``)."""
    # Items of a typed list from the API (PodList) carry no kind/apiVersion: they are the list's.
    if isinstance(item, Mapping) and item_kind and "kind" not in item:
        item = {"kind": item_kind, **({"apiVersion": api_version} if api_version else {}), **item}
    yield from _flatten(item, where, path)


# --- parsing ---------------------------------------------------------------------------------------------


def _describe(doc: _Doc, kind: str) -> str:
    """``document 3 (Pod default/web-1)``: the document, its kind and name as far as known."""
    meta = doc.raw.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return f"{doc.where} ({kind})"
    if kind == "Pod":
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
        name = f"{namespace if isinstance(namespace, str) and namespace else 'default'}/{name}"
    return f"{doc.where} ({kind} {name})"


def _type_meta(doc: _Doc, path: str) -> tuple[str, str]:
    """(apiVersion, kind), both required as ``kubectl apply`` requires them."""
    kind = doc.raw.get("kind")
    if not isinstance(kind, str) or not kind:
        raise StateError(path, "kind: Required value: every object needs a kind", doc.where)
    api_version = doc.raw.get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        raise StateError(
            path, "apiVersion: Required value: every object needs an apiVersion", _describe(doc, kind)
        )
    expected = _SIMULATED_KINDS.get(kind)
    if expected is not None and api_version != expected:
        # A Pod under another group is a typo, not an object to keep raw and silently not simulate.
        raise StateError(
            path,
            f'apiVersion: Unsupported value: "{api_version}": supported values: "{expected}"',
            _describe(doc, kind),
        )
    return api_version, kind


def _default_priority_class(classes: list[PriorityClass]) -> PriorityClass | None:
    """The global default; with several, the lowest value wins (the admission plugin's tie rule)."""
    default: PriorityClass | None = None
    for pc in classes:
        if pc.global_default and (default is None or pc.value < default.value):
            default = pc
    return default


def _resolve_priority(
    pod: Pod, classes: dict[str, PriorityClass], default: PriorityClass | None
) -> tuple[int, str]:
    """The Priority admission plugin on create: ``(priority, preemptionPolicy)``.

    The named class's value and preemptionPolicy, else the global default's, else 0 and the pod's own
    policy. A pod that already has spec.priority (read back from a cluster) was admitted before and
    keeps both. Raises FieldError for an unknown class name, which the admission plugin rejects.
    """
    if pod.priority is not None:
        return pod.priority, pod.preemption_policy
    if pod.priority_class_name:
        pc = classes.get(pod.priority_class_name)
        if pc is None:
            raise FieldError(
                "spec.priorityClassName",
                f"Not found: no PriorityClass with name {pod.priority_class_name} was found",
            )
        return pc.value, pc.preemption_policy
    if default is not None:
        return default.value, default.preemption_policy
    return 0, pod.preemption_policy


def parse_state(text: str, path: str = "<state>") -> ClusterState:
    """Parse the text of a state file; ``path`` names it in errors and warnings.

    Raises :class:`StateError` for unparseable input or an invalid object.
    """
    objects = _text_objects(text, path)
    del text  # the generator holds the only reference: it frees the text once decoded
    return _build_state(objects, path)


def _text_objects(text: str, path: str) -> Iterator[_Doc]:
    """The objects of a state file's text, sanitized and with ``List`` items expanded, in file order."""
    documents = _documents(text, path)
    del text  # the decoded documents are all that is read from here on: free the file's text
    for d in range(len(documents)):
        # Each document is released once parsed, so that the peak holds one decoded document beside
        # what the state keeps, not the whole file decoded.
        raw, documents[d] = documents[d], None
        yield from _document_objects(raw, d + 1, path)


def _document_objects(raw: Any, number: int, path: str) -> Iterator[_Doc]:
    """The objects of the file's document ``number`` (1-based), sanitized, ``List`` items expanded."""
    if raw is None:  # an empty document ("---" twice): kubectl ignores it too
        return
    try:
        raw = decoding.sanitize(raw)
    except FieldError as err:
        where = f"document {number}"
        if isinstance(raw, Mapping) and isinstance(raw.get("kind"), str):
            where = _describe(_Doc(raw, where), raw["kind"])
        raise StateError(path, str(err), where) from None
    yield from _flatten(raw, f"document {number}", path)


def _build_state(objects: Iterator[_Doc], path: str) -> ClusterState:
    """The state of the file's ``objects``, which are parsed as they come and not kept."""
    state = ClusterState(path)
    pods: list[tuple[Pod, str]] = []
    seen_pods: dict[str, str] = {}
    seen_uids: dict[str, str] = {}
    seen_nodes: dict[str, str] = {}
    seen_classes: dict[str, str] = {}
    skipped: dict[str, int] = {}
    terminated = 0

    def duplicate(where: str, field_path: str, value: str, first: str) -> StateError:
        return StateError(path, f'{field_path}: Duplicate value: "{value}" (first defined in {first})', where)

    for doc in objects:
        api_version, kind = _type_meta(doc, path)
        where = _describe(doc, kind)
        try:
            if (api_version, kind) == _POD:
                pod = parse_pod(doc.raw)
                if pod.phase in _TERMINAL_PHASES:
                    terminated += 1
                    continue
                if pod.node_name:
                    # A running pod keeps what the engine reads of its document, as the informers'
                    # cache does; a pending pod keeps it whole (hints edit and re-parse its spec).
                    pod.raw = slim_pod_document(doc.raw, pod)
                if pod.key in seen_pods:
                    raise duplicate(where, "metadata.name", pod.name, seen_pods[pod.key])
                if pod.uid in seen_uids:
                    raise duplicate(where, "metadata.uid", pod.uid, seen_uids[pod.uid])
                seen_pods[pod.key] = seen_uids[pod.uid] = doc.where
                pods.append((pod, where))
            elif (api_version, kind) == _NODE:
                node = parse_node(doc.raw)
                if node.name in seen_nodes:
                    raise duplicate(where, "metadata.name", node.name, seen_nodes[node.name])
                seen_nodes[node.name] = doc.where
                state.nodes.append(node)
            elif (api_version, kind) == _PRIORITY_CLASS:
                pc = parse_priority_class(doc.raw)
                if pc.name in seen_classes:
                    raise duplicate(where, "metadata.name", pc.name, seen_classes[pc.name])
                seen_classes[pc.name] = doc.where
                state.priority_classes.append(pc)
            # --- DynamicResources (issue 19): resource.k8s.io/v1 objects, parsed as they are added.
            elif api_version == RESOURCE_API_VERSION and kind in DRA_KINDS:
                state.objects.add(doc.raw)
                state.other_objects.append(doc.raw)
            elif (api_version, kind) in STORAGE_KINDS:
                # --- storage: validated here (field-path errors), read by the volume plugins ---
                STORAGE_KINDS[api_version, kind](doc.raw, "")
                state.objects.add(doc.raw)
                state.other_objects.append(doc.raw)
            else:
                state.objects.add(doc.raw)
                state.other_objects.append(doc.raw)
                skipped[kind] = skipped.get(kind, 0) + 1
        except FieldError as err:
            raise StateError(path, str(err), where) from None

    # Priorities are resolved once every class is known: a class may follow the pods that use it.
    classes = {pc.name: pc for pc in BUILTIN_PRIORITY_CLASSES}
    classes.update((pc.name, pc) for pc in state.priority_classes)
    default = _default_priority_class(state.priority_classes)
    for pod, where in pods:
        try:
            priority, policy = _resolve_priority(pod, classes, default)
        except FieldError as err:
            raise StateError(path, str(err), where) from None
        # Running pods were admitted too: their priority counts for preemption and for plugins.
        resolved = pod
        if pod.priority != priority or pod.preemption_policy != policy:
            resolved = dataclasses.replace(pod, priority=priority, preemption_policy=policy)
        if resolved.node_name:
            state.running.append(resolved)
        else:
            state.pending.append(PendingPod(resolved, len(state.pending), where))

    for kind, count in skipped.items():
        state.warnings.append(
            f"{path}: {count} {kind} object(s) not simulated (kept for plugins that read them)"
        )
    if terminated:
        state.warnings.append(
            f"{path}: {terminated} terminated pod(s) (phase Succeeded or Failed) ignored, as kube-scheduler ignores them"
        )
    orphans = sorted({p.node_name for p in state.running} - set(seen_nodes))
    if orphans:
        state.warnings.append(
            f"{path}: running pod(s) bound to node(s) not in the state ({', '.join(orphans)}) use no node's resources"
        )
    return state


def load_state(path: str) -> ClusterState:
    """Read and parse the state file at ``path`` (see :func:`parse_state`).

    A JSON array or ``List`` is decoded one item at a time and YAML one document at a time
    (:func:`_streamed_objects`), so the whole file is never held decoded. Anything that path does
    not take, and any error on it, goes through :func:`parse_state` on the whole text, whose
    messages are the state file's messages (a bad file is read twice; a good one once).
    """
    try:
        return _build_state(_streamed_objects(path), path)
    except (_NotStreamed, ijson.JSONError, yaml.YAMLError, ValueError, OSError, RecursionError):
        pass
    return parse_state(_read_text(path), path)


# --- decoding a JSON state file one item at a time -----------------------------------------------------

#: How much of the file ijson's C parser reads at a time, and how much of its end holds the members
#: of a ``List`` that follow ``items`` (kubectl prints ``kind`` and ``metadata`` after ``items``).
_STREAM_CHUNK_BYTES = 1 << 16
_TAIL_BYTES = 1 << 16


#: The nesting level of a List's item in the whole document (the list, its items, the item).
_LIST_ITEM_DEPTH = 3


class _NotStreamed(Exception):
    """The file is not a JSON array or ``List`` whose shape the streaming decoder is sure of."""


def _streamed_objects(path: str) -> Iterator[_Doc]:
    """The objects of a JSON array or ``List`` file, decoded, sanitized and yielded one item at a time,
    or of a YAML file one document at a time.

    Raises :class:`_NotStreamed` for any other file. The whole-text decoder gives the same objects
    with the same ``where``; a decoding or sanitizing error here is reported by that decoder instead.
    """
    with open(path, "rb") as fh:
        head = fh.read(_STREAM_CHUNK_BYTES).decode("utf-8", errors="replace").lstrip()
    if head.startswith("["):
        for d, raw in enumerate(_items(path, "item")):
            yield from _document_objects(raw, d + 1, path)
        return
    if not head.startswith("{"):
        yield from _yaml_objects(path)
        return
    top = _list_members(path)
    kind = top.get("kind")
    if not isinstance(kind, str) or not kind.endswith("List"):
        raise _NotStreamed  # an object with a field "items" that is not a list of objects
    for i, item in enumerate(_items(path, "items.item")):
        yield from _flatten_item(
            _sanitized(item), kind[: -len("List")], top.get("apiVersion"), f"document 1, item {i + 1}", path
        )


def _yaml_objects(path: str) -> Iterator[_Doc]:
    """The objects of a YAML file, read and decoded by libyaml one document at a time."""
    if _FastStateLoader is None:
        raise _NotStreamed  # the pure-Python loader is the whole-text decoder's, for its messages
    with open(path, encoding="utf-8") as fh:
        loader = _FastStateLoader(fh)
        try:
            number = 0
            while True:
                with decoding.recursion_limit(decoding.YAML_RECURSION_LIMIT):
                    if not loader.check_node():
                        return
                    node = loader.get_node()
                    raw = loader.construct_document(node) if node is not None else None
                number += 1
                yield from _document_objects(raw, number, path)
        finally:
            loader.dispose()


def _items(path: str, prefix: str) -> Iterator[Any]:
    """The values at ``prefix`` of the JSON file, decoded by ijson's C parser one at a time."""
    with open(path, "rb") as fh:
        for item in ijson.items(fh, prefix, use_float=True, buf_size=_STREAM_CHUNK_BYTES):
            yield _interned_keys(item)


def _interned_keys(value: Any) -> Any:
    """``value`` with its objects' keys interned: ijson makes a new string for every key, where orjson
    shares repeated ones; shared keys cost memory once and are found by identity in the plugins' lookups."""
    if isinstance(value, dict):
        return {sys.intern(k): _interned_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interned_keys(v) for v in value]
    return value


def _sanitized(item: Any) -> Any:
    """``item`` sanitized at the depth it has inside the whole document (an item of a List's items)."""
    return decoding.sanitize(item, depth=_LIST_ITEM_DEPTH)


def _list_members(path: str) -> dict[str, Any]:
    """The members of the file's top-level object other than ``items``, which must be an array.

    Those before ``items`` come from its head, those after from its tail: the text after the file's
    last ``]``, taken only when that ``]`` cannot be inside a string (no escape, an even number of
    quotes after it) and what follows it parses as the rest of an object. Raises :class:`_NotStreamed`
    otherwise.
    """
    builder = ObjectBuilder()
    with open(path, "rb") as fh:
        events = ijson.parse(fh, use_float=True, buf_size=_STREAM_CHUNK_BYTES)
        for prefix, event, value in events:
            if prefix == "" and event == "map_key" and value == "items":
                if next(events, None) != ("items", "start_array", None):
                    raise _NotStreamed
                break
            if prefix == "" and event == "end_map":
                raise _NotStreamed  # no items: one object, small enough to decode whole
            builder.event(event, value)
        else:
            raise _NotStreamed
        head = builder.value
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - _TAIL_BYTES))
        end = fh.read()
    bracket = end.rfind(b"]")
    tail = end[bracket + 1 :].strip() if bracket >= 0 else b""
    if bracket < 0 or b"\\" in tail or tail.count(b'"') % 2:
        raise _NotStreamed
    if tail == b"}":
        after: Any = {}
    elif tail.startswith(b","):
        after = orjson.loads(b"{" + tail[1:])  # trailing text after the object fails here
    else:
        raise _NotStreamed
    if not isinstance(head, dict) or not isinstance(after, dict) or "items" in head or "items" in after:
        raise _NotStreamed
    return decoding.sanitize({**head, **after})
