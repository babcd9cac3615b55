"""Pods, Nodes and PriorityClasses as slim slotted dataclasses, parsed once from raw JSON.

The parsers read the camelCase dicts the API server (or a state file) sends and keep only what
scheduling needs; the raw dict is kept beside it so that a face can echo the object unchanged.
Malformed input raises :class:`~app.api.errors.FieldError` with the field path.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from sys import intern
from typing import Any

import orjson

from app.api.errors import FieldError
from app.api.quantity import parse_quantity
from app.api.selectors import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    parse_label_selector,
    parse_node_selector,
    parse_node_selector_term,
)

ResourceList = dict[str, Fraction]
Raw = Mapping[str, Any]

# Well-known labels and taints (k8s.io/api/core/v1/well_known_labels.go, well_known_taints.go).
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


# --- typed field access ---------------------------------------------------------------


def get_map(obj: Raw, key: str, path: str) -> Raw:
    """Return ``obj[key]`` as a mapping ({} when absent or null)."""
    value = obj.get(key)
    if type(value) is dict:  # decoded JSON: skip the (slow) abstract Mapping check
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FieldError(_join(path, key), f"expected an object, got {json_type_name(value)}")
    return value


def get_list(obj: Raw, key: str, path: str) -> list[Any]:
    """Return ``obj[key]`` as a list ([] when absent or null)."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldError(_join(path, key), f"expected an array, got {json_type_name(value)}")
    return value


def get_str(obj: Raw, key: str, path: str, default: str = "") -> str:
    """Return ``obj[key]`` as a string (``default`` when absent or null)."""
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise FieldError(_join(path, key), f"expected a string, got {json_type_name(value)}")
    return value


def get_int(obj: Raw, key: str, path: str, default: int | None = None) -> int | None:
    """Return ``obj[key]`` as an integer (``default`` when absent or null)."""
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise FieldError(_join(path, key), f"expected an integer, got {json_type_name(value)}")
    return value


def get_bool(obj: Raw, key: str, path: str, default: bool = False) -> bool:
    """Return ``obj[key]`` as a boolean (``default`` when absent or null)."""
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise FieldError(_join(path, key), f"expected a boolean, got {json_type_name(value)}")
    return value


def get_str_map(obj: Raw, key: str, path: str) -> dict[str, str]:
    """Return ``obj[key]`` as a string-to-string map (labels, nodeSelector, annotations).

    Keys and values are interned: the same label keys and values recur on thousands of cached pods
    and nodes, and each decoded document would otherwise hold its own copies.
    """
    value = get_map(obj, key, path)
    if not value:
        return {}
    out = {intern(k): intern(v) for k, v in value.items() if type(v) is str}
    if len(out) == len(value):
        return out
    # A value that is not a plain string: checked one by one, for the error naming it.
    out = {}
    for k, v in value.items():
        if not isinstance(v, str):
            raise FieldError(f"{_join(path, key)}.{k}", f"expected a string, got {json_type_name(v)}")
        out[intern(k)] = intern(v)
    return out


def get_map_item(items: list[Any], index: int, path: str) -> Raw:
    """Return ``items[index]`` as a mapping; ``path`` already names the item."""
    item = items[index]
    if type(item) is not dict and not isinstance(item, Mapping):
        raise FieldError(path, f"expected an object, got {json_type_name(item)}")
    return item


def parse_resource_list(obj: Raw, key: str, path: str) -> ResourceList:
    """Parse a ``ResourceList`` (name → quantity)."""
    raw = get_map(obj, key, path)
    out: ResourceList = {}
    for name, quantity in raw.items():
        try:
            out[name] = parse_quantity(quantity)
        except ValueError as err:
            raise FieldError(f"{_join(path, key)}.{name}", str(err)) from None
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def json_type_name(value: object) -> str:
    """The JSON name of a decoded value's type, for "expected an object, got array" messages."""
    if value is None:
        return "null"
    return {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        int: "number",
        float: "number",
    }.get(type(value), type(value).__name__)


# --- pods' resource claims (DynamicResources, issue 19) --------------------------------------


def get_map_items(obj: Raw, key: str, path: str) -> Iterator[tuple[Raw, str]]:
    """Each object of the list ``obj[key]`` with its path (``path.key[i]``)."""
    items = get_list(obj, key, path)
    for i in range(len(items)):
        item_path = f"{_join(path, key)}[{i}]"
        yield get_map_item(items, i, item_path), item_path


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """``PodResourceClaim``: a claim by name, or a template the controller makes a claim from."""

    name: str
    resource_claim_name: str | None
    resource_claim_template_name: str | None


@dataclass(frozen=True, slots=True)
class PodClaims:
    """A pod's ``spec.resourceClaims`` and ``status.resourceClaimStatuses`` (name → claim name)."""

    claims: tuple[PodResourceClaim, ...] = ()
    statuses: tuple[tuple[str, str | None], ...] = ()

    def generated_name(self, pod_claim_name: str) -> tuple[bool, str | None]:
        """(found, claim name) of ``status.resourceClaimStatuses`` for ``pod_claim_name``."""
        for name, claim_name in self.statuses:
            if name == pod_claim_name:
                return True, claim_name
        return False, None


NO_POD_CLAIMS = PodClaims()


def parse_pod_claims(pod_raw: Raw, path: str = "") -> PodClaims:
    """``spec.resourceClaims`` with ``status.resourceClaimStatuses``."""
    spec = get_map(pod_raw, "spec", path)
    if not spec.get("resourceClaims"):
        return NO_POD_CLAIMS
    claims = []
    for item, ipath in get_map_items(spec, "resourceClaims", _join(path, "spec")):
        claims.append(
            PodResourceClaim(
                get_str(item, "name", ipath),
                item.get("resourceClaimName") and get_str(item, "resourceClaimName", ipath),
                item.get("resourceClaimTemplateName") and get_str(item, "resourceClaimTemplateName", ipath),
            )
        )
    status = get_map(pod_raw, "status", path)
    statuses = []
    for item, spath in get_map_items(status, "resourceClaimStatuses", _join(path, "status")):
        statuses.append(
            (
                get_str(item, "name", spath),
                item.get("resourceClaimName") and get_str(item, "resourceClaimName", spath),
            )
        )
    return PodClaims(tuple(claims), tuple(statuses))


# --- pods ------------------------------------------------------------------------------


@dataclass(slots=True)
class ContainerPort:
    """A container port that asks for a host port."""

    host_port: int
    protocol: str
    host_ip: str


@dataclass(slots=True)
class Container:
    """The parts of a container the scheduler reads."""

    name: str
    image: str
    requests: ResourceList
    host_ports: list[ContainerPort]
    restartable: bool = False  # an init container with restartPolicy Always (a sidecar)
    # --- NodeDeclaredFeatures (issue 19) ---
    restart_rule_actions: tuple[str, ...] = ()  # restartPolicyRules[*].action


@dataclass(slots=True)
class Toleration:
    """``v1.Toleration``."""

    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """``Toleration.ToleratesTaint``: key, operator/value and effect must all match."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("Equal", "") and self.value == taint.value


@dataclass(slots=True)
class Taint:
    """``v1.Taint``."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


def tolerations_tolerate(tolerations: list[Toleration], taint: Taint) -> bool:
    """Whether any toleration tolerates ``taint``."""
    return any(t.tolerates(taint) for t in tolerations)


@dataclass(slots=True)
class PreferredSchedulingTerm:
    """A weighted node selector term of preferredDuringSchedulingIgnoredDuringExecution."""

    weight: int
    preference: NodeSelectorTerm


@dataclass(slots=True)
class NodeAffinity:
    """``spec.affinity.nodeAffinity``."""

    required: NodeSelector | None
    preferred: list[PreferredSchedulingTerm]


@dataclass(slots=True)
class PodAffinityTerm:
    """``v1.PodAffinityTerm``; ``namespace_selector`` None means the term's own namespaces only."""

    label_selector: LabelSelector | None
    namespaces: list[str]
    namespace_selector: LabelSelector | None
    topology_key: str
    match_label_keys: list[str]
    mismatch_label_keys: list[str]


@dataclass(slots=True)
class WeightedPodAffinityTerm:
    """A preferred (anti-)affinity term with its weight."""

    weight: int
    term: PodAffinityTerm


@dataclass(slots=True)
class PodAffinity:
    """Required and preferred terms of podAffinity or podAntiAffinity."""

    required: list[PodAffinityTerm]
    preferred: list[WeightedPodAffinityTerm]


@dataclass(slots=True)
class TopologySpreadConstraint:
    """``v1.TopologySpreadConstraint``."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None
    min_domains: int | None
    node_affinity_policy: str | None
    node_taints_policy: str | None
    match_label_keys: list[str]


@dataclass(slots=True)
class OwnerReference:
    """An owner of a pod (ReplicaSet, StatefulSet, ...)."""

    kind: str
    name: str
    uid: str
    controller: bool


@dataclass(slots=True, eq=False)
class Pod:
    """A pod as the scheduler sees it. Identity is the UID (``namespace/name`` when absent)."""

    uid: str
    namespace: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    node_name: str
    scheduler_name: str
    priority: int | None
    priority_class_name: str
    preemption_policy: str
    scheduling_gates: list[str]
    node_selector: dict[str, str]
    node_affinity: NodeAffinity | None
    pod_affinity: PodAffinity | None
    pod_anti_affinity: PodAffinity | None
    tolerations: list[Toleration]
    containers: list[Container]
    init_containers: list[Container]
    overhead: ResourceList
    pod_requests: ResourceList  # spec.resources.requests (pod-level resources)
    topology_spread_constraints: list[TopologySpreadConstraint]
    owner_references: list[OwnerReference]
    nominated_node_name: str
    deletion_timestamp: str | None
    creation_timestamp: str
    phase: str
    raw: Raw = field(repr=False)
    # --- NodeDeclaredFeatures and DynamicResources (issue 19) ---
    host_network: bool = False
    host_users: bool | None = None  # spec.hostUsers; False asks for a user namespace
    resource_claims: PodClaims = field(default_factory=lambda: NO_POD_CLAIMS)
    volumes: list[Volume] = field(default_factory=list)  # spec.volumes that storage plugins read

    @property
    def key(self) -> str:
        """``namespace/name``, as kube-scheduler logs and klog.KObj print pods."""
        return f"{self.namespace}/{self.name}"

    def host_ports(self) -> list[ContainerPort]:
        """``util.GetHostPorts``: host ports of sidecar init containers, then of regular containers.

        Only restartable (sidecar) init containers count: the others have exited before the
        pod's containers bind their ports.
        """
        # Called on every NodeInfo add and remove (preemption's dry run: a dozen per node), and
        # most pods have no host port: no generator for the containers without one.
        ports = (
            [p for c in self.init_containers if c.restartable for p in c.host_ports]
            if self.init_containers
            else []
        )
        for c in self.containers:
            if c.host_ports:
                ports.extend(c.host_ports)
        return ports


def _parse_container(raw: Raw, path: str, init: bool) -> Container:
    ports: list[ContainerPort] = []
    port_list = get_list(raw, "ports", path)
    for i in range(len(port_list)):
        port = port_list[i]
        if type(port) is dict:
            host = port.get("hostPort")
            if host is None or (type(host) is int and host == 0):
                continue  # the common case, no host port: nothing to check or keep
        ppath = f"{path}.ports[{i}]"
        port = get_map_item(port_list, i, ppath)
        host_port = get_int(port, "hostPort", ppath, 0) or 0
        if host_port > 0:
            ports.append(
                ContainerPort(
                    host_port,
                    get_str(port, "protocol", ppath, "TCP") or "TCP",
                    get_str(port, "hostIP", ppath),
                )
            )
    resources = get_map(raw, "resources", path)
    rpath = f"{path}.resources"
    requests = parse_resource_list(resources, "requests", rpath)
    # An unset request defaults to the limit (API defaulting); state files are often undefaulted.
    for name, limit in parse_resource_list(resources, "limits", rpath).items():
        requests.setdefault(name, limit)
    return Container(
        name=intern(get_str(raw, "name", path)),
        image=intern(get_str(raw, "image", path)),
        requests=requests,
        host_ports=ports,
        restartable=init and get_str(raw, "restartPolicy", path) == "Always",
        restart_rule_actions=tuple(
            get_str(get_map_item(rules, i, f"{path}.restartPolicyRules[{i}]"), "action", path)
            for rules in (get_list(raw, "restartPolicyRules", path),)
            for i in range(len(rules))
        ),
    )


# --- parsed parts shared between the pods of one workload -------------------------------------
#
# The pods of a Deployment or a Job carry the same containers, tolerations and affinity. Their parsed forms
# are shared, keyed by exactly what their parse reads: parsing them again would give equal
# objects, and nothing mutates a parsed pod's parts. Sharing saves the parse (quantities, interning)
# of every pod after the first, one copy of each in the cache, and, because the containers are the
# very same list, the cache's and NodeResourcesFit's sums of requests
# (:func:`~app.framework.types.same_request_spec`). Only well-formed shapes are keyed; anything else
# is parsed the long way, with its errors.

_SHARED_PARTS_LIMIT = 4096
_shared_containers: dict[tuple[Any, ...], list[Container]] = {}
#: Each shared container list's id: the list and its slim document (:func:`_slim_container`, made
#: once by the first :func:`slim_pod_document` that needs it). The list is held, so its id is not reused.
_slim_containers: dict[int, tuple[list[Container], list[Any] | None]] = {}
_shared_tolerations: dict[tuple[Any, ...], list[Toleration]] = {}
_shared_affinities: dict[tuple[Any, ...], _Affinity] = {}
_NO_RESOURCES: ResourceList = {}


def _shared_if_empty(resources: ResourceList) -> ResourceList:
    """One empty ResourceList for every pod without overhead or pod-level requests (never mutated),
    so that :func:`~app.framework.types.same_request_spec` holds between copies of a template."""
    return resources if resources else _NO_RESOURCES


def _containers_key(items: list[Any], init: bool) -> tuple[Any, ...] | None:
    """What parsing ``items`` (and slimming them, :func:`_slim_container`) reads, as a key: each
    container's name, image, resources (as JSON) and, of an init container, its restartPolicy. None
    when a container has a host port, restart rules, or a field of another type than the API
    server sends: those are parsed (and checked) the long way."""
    key: list[Any] = [init]
    for c in items:
        if type(c) is not dict:
            return None
        name, image = c.get("name"), c.get("image")
        policy = c.get("restartPolicy") if init else None
        if (
            type(name) is not str
            or not (image is None or type(image) is str)
            or not (policy is None or type(policy) is str)
            or c.get("restartPolicyRules") is not None
        ):
            return None
        ports = c.get("ports")
        if ports is not None:
            if type(ports) is not list:
                return None
            for port in ports:
                if type(port) is not dict:
                    return None
                host = port.get("hostPort")
                if host is not None and not (type(host) is int and host == 0):
                    return None
        try:
            resources = orjson.dumps(c.get("resources"), option=orjson.OPT_PASSTHROUGH_SUBCLASS)
        except TypeError:
            return None
        key.append((name, image, resources, policy))
    return tuple(key)


def _remember(memo: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> None:
    if len(memo) >= _SHARED_PARTS_LIMIT:
        # A bound, not an eviction policy: sharing is an optimisation only.
        memo.clear()
        if memo is _shared_containers:
            _slim_containers.clear()
    memo[key] = value


def _parse_containers(items: list[Any], path: str, init: bool) -> list[Container]:
    """``spec.containers`` or ``spec.initContainers`` (``path``), shared with earlier pods that
    have the same ones."""
    key = _containers_key(items, init)
    if key is not None:
        found = _shared_containers.get(key)
        if found is not None:
            return found
    parsed = [
        _parse_container(get_map_item(items, i, f"{path}[{i}]"), f"{path}[{i}]", init)
        for i in range(len(items))
    ]
    if key is not None:
        _remember(_shared_containers, key, parsed)
        _slim_containers[id(parsed)] = (parsed, None)
    return parsed


def _parse_shared_tolerations(items: list[Any], path: str) -> list[Toleration]:
    """``spec.tolerations``, shared with earlier pods that have the same ones."""
    key = tuple(
        (t.get("key"), t.get("operator"), t.get("value"), t.get("effect")) if type(t) is dict else None
        for t in items
    )
    shareable = all(fields is not None and all(f is None or type(f) is str for f in fields) for fields in key)
    if shareable:
        found = _shared_tolerations.get(key)
        if found is not None:
            return found
    parsed = _parse_tolerations(items, path)
    if shareable:
        _remember(_shared_tolerations, key, parsed)
    return parsed


_Affinity = tuple["NodeAffinity | None", "PodAffinity | None", "PodAffinity | None"]
_NO_AFFINITY: _Affinity = (None, None, None)


def _parse_shared_affinity(affinity: Raw, apath: str) -> _Affinity:
    """``spec.affinity`` (``apath``): node affinity, pod affinity and anti-affinity, shared with
    earlier pods that have the same one (keyed by its JSON: every field the parse reads)."""
    if not affinity:
        return _NO_AFFINITY
    try:
        key: tuple[Any, ...] | None = (orjson.dumps(affinity, option=orjson.OPT_PASSTHROUGH_SUBCLASS),)
    except TypeError:
        key = None
    if key is not None:
        found = _shared_affinities.get(key)
        if found is not None:
            return found
    parsed = (
        parse_node_affinity(get_map(affinity, "nodeAffinity", apath), f"{apath}.nodeAffinity"),
        _parse_pod_affinity(get_map(affinity, "podAffinity", apath), f"{apath}.podAffinity"),
        _parse_pod_affinity(get_map(affinity, "podAntiAffinity", apath), f"{apath}.podAntiAffinity"),
    )
    if key is not None:
        _remember(_shared_affinities, key, parsed)
    return parsed


def _parse_tolerations(items: list[Any], path: str) -> list[Toleration]:
    out = []
    for i in range(len(items)):
        tpath = f"{path}[{i}]"
        t = get_map_item(items, i, tpath)
        operator = get_str(t, "operator", tpath, "Equal") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise FieldError(
                f"{tpath}.operator", f'Unsupported value: "{operator}": supported values: "Equal", "Exists"'
            )
        out.append(
            Toleration(
                intern(get_str(t, "key", tpath)),
                intern(operator),
                intern(get_str(t, "value", tpath)),
                intern(get_str(t, "effect", tpath)),
            )
        )
    return out


def parse_taints(items: list[Any], path: str) -> list[Taint]:
    """Parse ``spec.taints``."""
    out = []
    for i in range(len(items)):
        tpath = f"{path}[{i}]"
        t = get_map_item(items, i, tpath)
        out.append(Taint(get_str(t, "key", tpath), get_str(t, "value", tpath), get_str(t, "effect", tpath)))
    return out


def parse_node_affinity(raw: Raw, path: str) -> NodeAffinity | None:
    """Parse a ``v1.NodeAffinity`` (also the shape of NodeAffinityArgs.addedAffinity)."""
    if not raw:
        return None
    required_raw = raw.get("requiredDuringSchedulingIgnoredDuringExecution")
    required = None
    if required_raw is not None:
        rpath = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        if not isinstance(required_raw, Mapping):
            raise FieldError(rpath, f"expected an object, got {json_type_name(required_raw)}")
        required = parse_node_selector(required_raw, rpath)
    preferred = []
    items = get_list(raw, "preferredDuringSchedulingIgnoredDuringExecution", path)
    for i in range(len(items)):
        ppath = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        item = get_map_item(items, i, ppath)
        weight = get_int(item, "weight", ppath, 0) or 0
        preference = parse_node_selector_term(get_map(item, "preference", ppath), f"{ppath}.preference")
        preferred.append(PreferredSchedulingTerm(weight, preference))
    return NodeAffinity(required, preferred)


def _parse_pod_affinity_term(raw: Raw, path: str) -> PodAffinityTerm:
    selector = raw.get("labelSelector")
    ns_selector = raw.get("namespaceSelector")
    return PodAffinityTerm(
        label_selector=None
        if selector is None
        else parse_label_selector(get_map(raw, "labelSelector", path), f"{path}.labelSelector"),
        namespaces=[str(n) for n in get_list(raw, "namespaces", path)],
        namespace_selector=None
        if ns_selector is None
        else parse_label_selector(get_map(raw, "namespaceSelector", path), f"{path}.namespaceSelector"),
        topology_key=get_str(raw, "topologyKey", path),
        match_label_keys=[str(k) for k in get_list(raw, "matchLabelKeys", path)],
        mismatch_label_keys=[str(k) for k in get_list(raw, "mismatchLabelKeys", path)],
    )


def _parse_pod_affinity(raw: Raw, path: str) -> PodAffinity | None:
    if not raw:
        return None
    required_items = get_list(raw, "requiredDuringSchedulingIgnoredDuringExecution", path)
    required = [
        _parse_pod_affinity_term(
            get_map_item(required_items, i, f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
            f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]",
        )
        for i in range(len(required_items))
    ]
    preferred = []
    items = get_list(raw, "preferredDuringSchedulingIgnoredDuringExecution", path)
    for i in range(len(items)):
        ppath = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        item = get_map_item(items, i, ppath)
        term = _parse_pod_affinity_term(get_map(item, "podAffinityTerm", ppath), f"{ppath}.podAffinityTerm")
        preferred.append(WeightedPodAffinityTerm(get_int(item, "weight", ppath, 0) or 0, term))
    return PodAffinity(required, preferred)


def parse_topology_spread_constraint(raw: Raw, path: str) -> TopologySpreadConstraint:
    """Parse one ``v1.TopologySpreadConstraint`` (pods and PodTopologySpreadArgs share it)."""
    selector = raw.get("labelSelector")
    return TopologySpreadConstraint(
        max_skew=get_int(raw, "maxSkew", path, 0) or 0,
        topology_key=get_str(raw, "topologyKey", path),
        when_unsatisfiable=get_str(raw, "whenUnsatisfiable", path),
        label_selector=None
        if selector is None
        else parse_label_selector(get_map(raw, "labelSelector", path), f"{path}.labelSelector"),
        min_domains=get_int(raw, "minDomains", path),
        node_affinity_policy=raw.get("nodeAffinityPolicy") and get_str(raw, "nodeAffinityPolicy", path),
        node_taints_policy=raw.get("nodeTaintsPolicy") and get_str(raw, "nodeTaintsPolicy", path),
        match_label_keys=[str(k) for k in get_list(raw, "matchLabelKeys", path)],
    )


def parse_owner_references(meta: Raw, mpath: str) -> list[OwnerReference]:
    """Parse ``metadata.ownerReferences``; ``mpath`` is the metadata's path."""
    owners = get_list(meta, "ownerReferences", mpath)
    return [
        OwnerReference(
            kind=intern(get_str(o, "kind", p)),
            name=intern(get_str(o, "name", p)),
            uid=intern(get_str(o, "uid", p)),
            controller=get_bool(o, "controller", p),
        )
        for i in range(len(owners))
        for p in (f"{mpath}.ownerReferences[{i}]",)
        for o in (get_map_item(owners, i, p),)
    ]


def parse_pod(raw: Raw, path: str = "") -> Pod:
    """Parse a Pod; ``path`` prefixes field paths in errors (e.g. ``Pod``)."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise FieldError(path, f"expected a Pod object, got {json_type_name(raw)}")
    mpath, spath = _join(path, "metadata"), _join(path, "spec")
    meta = get_map(raw, "metadata", path)
    spec = get_map(raw, "spec", path)
    status = get_map(raw, "status", path)
    name = get_str(meta, "name", mpath)
    if not name:
        raise FieldError(f"{mpath}.name", "Required value: name is required")
    namespace = intern(get_str(meta, "namespace", mpath, "default") or "default")
    containers_raw = get_list(spec, "containers", spath)
    init_raw = get_list(spec, "initContainers", spath)
    node_affinity, pod_affinity, pod_anti_affinity = _parse_shared_affinity(
        get_map(spec, "affinity", spath), f"{spath}.affinity"
    )
    gates = get_list(spec, "schedulingGates", spath)
    spread = get_list(spec, "topologySpreadConstraints", spath)
    return Pod(
        uid=get_str(meta, "uid", mpath) or f"{namespace}/{name}",
        namespace=namespace,
        name=name,
        labels=get_str_map(meta, "labels", mpath),
        annotations=get_str_map(meta, "annotations", mpath),
        node_name=intern(get_str(spec, "nodeName", spath)),
        scheduler_name=intern(
            get_str(spec, "schedulerName", spath, "default-scheduler") or "default-scheduler"
        ),
        priority=get_int(spec, "priority", spath),
        priority_class_name=intern(get_str(spec, "priorityClassName", spath)),
        preemption_policy=intern(get_str(spec, "preemptionPolicy", spath, "PreemptLowerPriority")),
        scheduling_gates=[
            get_str(
                get_map_item(gates, i, f"{spath}.schedulingGates[{i}]"),
                "name",
                f"{spath}.schedulingGates[{i}]",
            )
            for i in range(len(gates))
        ],
        node_selector=get_str_map(spec, "nodeSelector", spath),
        node_affinity=node_affinity,
        pod_affinity=pod_affinity,
        pod_anti_affinity=pod_anti_affinity,
        tolerations=_parse_shared_tolerations(get_list(spec, "tolerations", spath), f"{spath}.tolerations"),
        containers=_parse_containers(containers_raw, f"{spath}.containers", False),
        init_containers=_parse_containers(init_raw, f"{spath}.initContainers", True),
        overhead=_shared_if_empty(parse_resource_list(spec, "overhead", spath)),
        pod_requests=_shared_if_empty(
            parse_resource_list(get_map(spec, "resources", spath), "requests", f"{spath}.resources")
        ),
        topology_spread_constraints=[
            parse_topology_spread_constraint(
                get_map_item(spread, i, f"{spath}.topologySpreadConstraints[{i}]"),
                f"{spath}.topologySpreadConstraints[{i}]",
            )
            for i in range(len(spread))
        ],
        owner_references=parse_owner_references(meta, mpath),
        nominated_node_name=get_str(status, "nominatedNodeName", _join(path, "status")),
        deletion_timestamp=meta.get("deletionTimestamp") and get_str(meta, "deletionTimestamp", mpath),
        creation_timestamp=intern(get_str(meta, "creationTimestamp", mpath)),
        phase=intern(get_str(status, "phase", _join(path, "status"))),
        raw=raw,
        # --- NodeDeclaredFeatures and DynamicResources (issue 19) ---
        host_network=get_bool(spec, "hostNetwork", spath),
        host_users=None if spec.get("hostUsers") is None else get_bool(spec, "hostUsers", spath),
        resource_claims=parse_pod_claims(raw, path),
        volumes=parse_volumes(get_list(spec, "volumes", spath), f"{spath}.volumes"),
    )


# --- pod volumes (the storage plugins: VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits) ---

#: The in-tree volume sources the storage plugins look at, by their ``v1.VolumeSource`` field name, with
#: the field that identifies the disk. VolumeRestrictions checks the first four for disk conflicts;
#: NodeVolumeLimits counts the CSI-migrated ones (``csi-translation-lib``) against the CSI driver's limit.
IN_TREE_DISK_SOURCES: dict[str, str] = {
    "gcePersistentDisk": "pdName",
    "awsElasticBlockStore": "volumeID",
    "iscsi": "iqn",
    "rbd": "image",
    "azureDisk": "diskURI",
    "cinder": "volumeID",
    "portworxVolume": "volumeID",
}


@dataclass(slots=True, frozen=True)
class DiskSource:
    """An in-tree disk volume source: its type (the VolumeSource field name) and identity.

    ``disk_id`` is the field named in :data:`IN_TREE_DISK_SOURCES` (pdName, volumeID, iqn, RBD image,
    diskURI); ``monitors`` and ``pool`` are RBD's, ``partition`` a GCE PD's or AWS EBS's.
    """

    kind: str
    disk_id: str
    read_only: bool
    monitors: tuple[str, ...] = ()
    pool: str = ""
    partition: int = 0


PVC_SOURCE = "persistentVolumeClaim"
EPHEMERAL_SOURCE = "ephemeral"
CSI_SOURCE = "csi"


@dataclass(slots=True, frozen=True)
class Volume:
    """One entry of ``spec.volumes``, reduced to what the storage plugins read.

    ``source`` is the VolumeSource field that is set (``persistentVolumeClaim``, ``ephemeral``, ``csi``,
    an in-tree disk type, or "" for the sources no storage plugin reads: emptyDir, configMap, ...).
    """

    name: str
    source: str = ""
    claim_name: str = ""  # persistentVolumeClaim.claimName
    read_only: bool = False
    disk: DiskSource | None = None  # an in-tree disk source
    csi_driver: str = ""  # an inline CSI volume's driver

    @property
    def is_claim(self) -> bool:
        """A persistentVolumeClaim or generic ephemeral volume."""
        return self.source in (PVC_SOURCE, EPHEMERAL_SOURCE)


_READ_VOLUME_SOURCES = frozenset((PVC_SOURCE, EPHEMERAL_SOURCE, CSI_SOURCE, *IN_TREE_DISK_SOURCES))


def parse_disk_source(kind: str, raw: Raw, path: str) -> DiskSource:
    """Parse an in-tree disk source (a pod volume's or a PersistentVolume's) of type ``kind``."""
    return DiskSource(
        kind=kind,
        disk_id=get_str(raw, IN_TREE_DISK_SOURCES[kind], path),
        read_only=get_bool(raw, "readOnly", path),
        monitors=tuple(str(m) for m in get_list(raw, "monitors", path)),
        pool=get_str(raw, "pool", path, "rbd") if kind == "rbd" else "",
        partition=get_int(raw, "partition", path, 0) or 0,
    )


def parse_volumes(items: list[Any], path: str) -> list[Volume]:
    """Parse ``spec.volumes``."""
    out: list[Volume] = []
    for i in range(len(items)):
        vpath = f"{path}[{i}]"
        raw = get_map_item(items, i, vpath)
        name = get_str(raw, "name", vpath)
        if _READ_VOLUME_SOURCES.isdisjoint(raw):
            out.append(Volume(name))  # configMap, secret, projected, ...: no storage plugin reads them
            continue
        pvc = raw.get("persistentVolumeClaim")
        if pvc is not None:
            ppath = f"{vpath}.persistentVolumeClaim"
            claim = get_map(raw, "persistentVolumeClaim", vpath)
            out.append(
                Volume(
                    name,
                    PVC_SOURCE,
                    claim_name=get_str(claim, "claimName", ppath),
                    read_only=get_bool(claim, "readOnly", ppath),
                )
            )
            continue
        if raw.get("ephemeral") is not None:
            get_map(raw, "ephemeral", vpath)
            out.append(Volume(name, EPHEMERAL_SOURCE))
            continue
        if raw.get("csi") is not None:
            csi = get_map(raw, "csi", vpath)
            out.append(Volume(name, CSI_SOURCE, csi_driver=get_str(csi, "driver", f"{vpath}.csi")))
            continue
        disk = None
        for kind in IN_TREE_DISK_SOURCES:
            if raw.get(kind) is not None:
                disk = parse_disk_source(kind, get_map(raw, kind, vpath), f"{vpath}.{kind}")
                break
        out.append(Volume(name, disk.kind if disk is not None else "", disk=disk))
    return out


def pod_claim_name(pod: Pod, volume: Volume) -> str:
    """The claim a volume uses: its claimName, or ``<pod>-<volume>`` for a generic ephemeral volume
    (``ephemeral.VolumeClaimName``); "" for other volumes."""
    if volume.source == EPHEMERAL_SOURCE:
        return f"{pod.name}-{volume.name}"
    return volume.claim_name


# --- nodes -----------------------------------------------------------------------------


@dataclass(slots=True)
class ContainerImage:
    """One entry of ``status.images``."""

    names: list[str]
    size_bytes: int


_shared_images: dict[tuple[tuple[str, ...], int], ContainerImage] = {}


def shared_image(names: tuple[str, ...], size_bytes: int) -> ContainerImage:
    """One :class:`ContainerImage` for equal entries: the same images are on many nodes, and every
    node's status lists them. Callers never mutate it."""
    key = (names, size_bytes)
    image = _shared_images.get(key)
    if image is None:
        if len(_shared_images) >= _SHARED_IMAGES_LIMIT:
            _shared_images.clear()  # a bound, not an eviction policy: sharing is an optimisation only
        image = _shared_images[key] = ContainerImage(list(names), size_bytes)
    return image


_SHARED_IMAGES_LIMIT = 65536


@dataclass(slots=True, eq=False)
class Node:
    """A node as the scheduler sees it."""

    name: str
    uid: str
    labels: dict[str, str]
    unschedulable: bool
    taints: list[Taint]
    allocatable: ResourceList
    images: list[ContainerImage]
    raw: Raw = field(repr=False)
    # --- NodeDeclaredFeatures (issue 19) ---
    declared_features: frozenset[str] = frozenset()  # status.declaredFeatures


def parse_node(raw: Raw, path: str = "") -> Node:
    """Parse a Node; ``path`` prefixes field paths in errors."""
    if not isinstance(raw, Mapping):
        raise FieldError(path, f"expected a Node object, got {json_type_name(raw)}")
    mpath, spath, stpath = _join(path, "metadata"), _join(path, "spec"), _join(path, "status")
    meta = get_map(raw, "metadata", path)
    spec = get_map(raw, "spec", path)
    status = get_map(raw, "status", path)
    name = get_str(meta, "name", mpath)
    if not name:
        raise FieldError(f"{mpath}.name", "Required value: name is required")
    allocatable = parse_resource_list(status, "allocatable", stpath)
    if "allocatable" not in status:
        # A node object without allocatable (hand-written state) falls back to capacity,
        # which is what the kubelet reports as allocatable when nothing is reserved.
        allocatable = parse_resource_list(status, "capacity", stpath)
    images = []
    image_list = get_list(status, "images", stpath)
    for i in range(len(image_list)):
        ipath = f"{stpath}.images[{i}]"
        image = get_map_item(image_list, i, ipath)
        images.append(
            shared_image(
                tuple(intern(str(n)) for n in get_list(image, "names", ipath)),
                get_int(image, "sizeBytes", ipath, 0) or 0,
            )
        )
    return Node(
        name=name,
        uid=get_str(meta, "uid", mpath),
        labels=get_str_map(meta, "labels", mpath),
        unschedulable=get_bool(spec, "unschedulable", spath),
        taints=parse_taints(get_list(spec, "taints", spath), f"{spath}.taints"),
        allocatable=allocatable,
        images=images,
        raw=raw,
        # --- NodeDeclaredFeatures (issue 19) ---
        declared_features=frozenset(str(f) for f in get_list(status, "declaredFeatures", stpath)),
    )


# --- priority classes ------------------------------------------------------------------


@dataclass(slots=True)
class PriorityClass:
    """``scheduling.k8s.io/v1 PriorityClass``."""

    name: str
    value: int
    global_default: bool
    preemption_policy: str


def parse_priority_class(raw: Raw, path: str = "") -> PriorityClass:
    """Parse a PriorityClass."""
    meta = get_map(raw, "metadata", path)
    name = get_str(meta, "name", _join(path, "metadata"))
    if not name:
        raise FieldError(_join(path, "metadata.name"), "Required value: name is required")
    value = get_int(raw, "value", path)
    if value is None:
        raise FieldError(_join(path, "value"), "Required value")
    return PriorityClass(
        name,
        value,
        get_bool(raw, "globalDefault", path),
        get_str(raw, "preemptionPolicy", path, "PreemptLowerPriority"),
    )


def pod_priority(pod: Pod) -> int:
    """``corev1helpers.PodPriority``: spec.priority, 0 when unset."""
    return pod.priority if pod.priority is not None else 0


# --- what a cache keeps of a document ----------------------------------------------------------
#
# A parsed Pod or Node keeps a document beside its fields (``raw``) for the few readers that want
# JSON: event references (kind, apiVersion, name, namespace, uid, resourceVersion), status patches
# (a pod's generation, conditions and nominatedNodeName), preemption (startTime, the DisruptionTarget
# condition), PodTopologySpread (owner references with their apiVersion), resource limits (the
# kube_pod_resource_limit metric), InterPodAffinity's messages (the raw affinity terms), ImageLocality
# (image volumes), the queue's change detection (claim statuses; node taints, conditions, annotations
# and declared features) and the extender's echo of a request's own objects (those keep everything).
# An informer's cache holds tens of thousands of pods, so it keeps only those parts of each document
# (kube-scheduler's informers drop managedFields in their transform and keep typed structs); the rest
# (managedFields, env, probes, volume mounts, most volumes, container statuses, tolerations and the
# other fields kept parsed) is dropped at decode. Labels and annotations are the parsed (interned)
# maps, shared with the document; owner references and container limits, identical on every pod of
# a workload, are shared between documents. Nothing mutates a cached document.

#: ``metadata`` fields a cached pod's document keeps.
POD_METADATA_KEPT = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "finalizers",  # rare; async preemption asks whether a terminating victim's removal is due
    "labels",
    "annotations",
    "ownerReferences",
)
#: ``spec`` fields a cached pod's document keeps as they are (containers and volumes are slimmed).
POD_SPEC_KEPT = (
    "nodeName",
    "schedulerName",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "affinity",
    "resources",
    "resourceClaims",
)
#: Volume sources no scheduling code reads: such volumes are dropped from a cached document.
UNREAD_VOLUME_SOURCES = frozenset(
    ("configMap", "secret", "projected", "emptyDir", "downwardAPI", "hostPath", "nfs")
)
#: ``status`` fields a cached pod's document keeps.
POD_STATUS_KEPT = (
    "phase",
    "conditions",
    "nominatedNodeName",
    "startTime",
    "resourceClaimStatuses",
    "extendedResourceClaimStatus",
)
#: ``status`` fields a cached node's document keeps (allocatable and images are parsed; capacity,
#: addresses, nodeInfo, daemonEndpoints and volume lists are read by nothing in the scheduler). Of
#: its conditions only type and status are kept: what the queue compares.
NODE_STATUS_KEPT = ("conditions", "declaredFeatures")

_SHARED_LIMIT = 65536
_shared_values: dict[bytes, Any] = {}


def shared_value(value: Any) -> Any:
    """One canonical instance of an equal JSON value (owner references, container limits), so that
    thousands of cached documents of one workload hold one copy. Callers never mutate it."""
    try:
        key = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return value
    found = _shared_values.get(key)
    if found is not None:
        return found
    if len(_shared_values) >= _SHARED_LIMIT:
        _shared_values.clear()  # a bound, not an eviction policy: sharing is an optimisation only
    _shared_values[key] = value
    return value


def _pick(obj: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if type(obj) is not dict and not isinstance(obj, Mapping):
        return {}
    return {k: obj[k] for k in keys if k in obj}


def _slim_container(container: Any, init: bool) -> Any:
    """A container reduced to its limits (what :func:`~app.api.resources.pod_limits` reads) and, for
    an init container, its restartPolicy; one entry per container, so positions still match."""
    if type(container) is not dict and not isinstance(container, Mapping):
        return container
    slim: dict[str, Any] = {}
    resources = container.get("resources")
    if isinstance(resources, Mapping) and resources.get("limits"):
        slim["resources"] = shared_value({"limits": resources["limits"]})
    if init and "restartPolicy" in container:
        slim["restartPolicy"] = container["restartPolicy"]
    return slim


def _slim_containers_of(items: list[Any], parsed: list[Container], init: bool) -> list[Any]:
    """The slim document's containers of ``items``, parsed as ``parsed``: shared between the pods
    whose parsed containers are shared (the same key read the same fields)."""
    entry = _slim_containers.get(id(parsed))
    if entry is not None and entry[0] is parsed:
        if entry[1] is not None:
            return entry[1]
        slim = [_slim_container(c, init) for c in items]
        _slim_containers[id(parsed)] = (parsed, slim)
        return slim
    return [_slim_container(c, init) for c in items]


def slim_pod_document(raw: Raw, pod: Pod) -> dict[str, Any]:
    """The parts of a pod's document a cache keeps (see the comment above), for ``pod.raw``.

    ``pod`` is ``raw`` parsed; its label and annotation maps are shared with the document.
    """
    meta = _pick(raw.get("metadata"), POD_METADATA_KEPT)
    meta["namespace"] = pod.namespace
    if "labels" in meta:
        meta["labels"] = pod.labels
    if "annotations" in meta:
        meta["annotations"] = pod.annotations
    if "ownerReferences" in meta:
        meta["ownerReferences"] = shared_value(meta["ownerReferences"])
    if "creationTimestamp" in meta:
        meta["creationTimestamp"] = pod.creation_timestamp
    spec = raw.get("spec")
    slim_spec = _pick(spec, POD_SPEC_KEPT)
    if pod.node_name:
        slim_spec["nodeName"] = pod.node_name
    if "schedulerName" in slim_spec:
        slim_spec["schedulerName"] = pod.scheduler_name
    if isinstance(spec, Mapping):
        for key, init, parsed in (
            ("containers", False, pod.containers),
            ("initContainers", True, pod.init_containers),
        ):
            items = spec.get(key)
            if isinstance(items, list):
                slim_spec[key] = _slim_containers_of(items, parsed, init)
        volumes = spec.get("volumes")
        if isinstance(volumes, list):
            kept = [
                v for v in volumes if not (isinstance(v, Mapping) and UNREAD_VOLUME_SOURCES.intersection(v))
            ]
            if kept:
                slim_spec["volumes"] = kept
    doc: dict[str, Any] = {
        "kind": raw.get("kind") or "Pod",
        "apiVersion": raw.get("apiVersion") or "v1",
        "metadata": meta,
        "spec": slim_spec,
    }
    status = _pick(raw.get("status"), POD_STATUS_KEPT)
    if status:
        if "phase" in status:
            status["phase"] = pod.phase
        doc["status"] = status
    return doc


def slim_node_document(raw: Raw, node: Node) -> dict[str, Any]:
    """The parts of a node's document a cache keeps: metadata without managedFields, the spec, and
    :data:`NODE_STATUS_KEPT` of the status."""
    meta = raw.get("metadata")
    slim_meta = {k: v for k, v in meta.items() if k != "managedFields"} if isinstance(meta, Mapping) else {}
    if "labels" in slim_meta:
        slim_meta["labels"] = node.labels
    doc: dict[str, Any] = {
        "kind": raw.get("kind") or "Node",
        "apiVersion": raw.get("apiVersion") or "v1",
        "metadata": slim_meta,
    }
    if "spec" in raw:
        doc["spec"] = raw["spec"]
    status = _pick(raw.get("status"), NODE_STATUS_KEPT)
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        status["conditions"] = shared_value(
            [
                {k: c[k] for k in ("type", "status") if k in c} if isinstance(c, Mapping) else c
                for c in conditions
            ]
        )
    if status:
        doc["status"] = status
    return doc


def without_managed_fields(raw: Raw) -> dict[str, Any]:
    """``raw`` without ``metadata.managedFields``: what kube-scheduler's informers keep of an object
    (their transform), for a cache whose pods may be sent whole to an HTTP extender."""
    doc = dict(raw)
    meta = raw.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        doc["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return doc
