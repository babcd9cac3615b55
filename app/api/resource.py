"""``resource.k8s.io/v1`` objects (DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice)
as slim slotted dataclasses, parsed once from raw JSON, plus the pod's claim references.

Only what the DynamicResources plugin and its structured allocator read is kept; the raw dict
stays beside each object so that PreBind can write a claim's status back unchanged otherwise.
Opaque driver configuration is carried as raw JSON (the scheduler copies it into allocation
results, never interprets it). Malformed input raises :class:`~app.api.errors.FieldError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from app.api.errors import FieldError
from app.api.objects import (
    Raw,
    get_bool,
    get_int,
    get_list,
    get_map,
    get_map_items,
    get_str,
    json_type_name,
    parse_resource_list,
)
from app.api.quantity import parse_quantity
from app.api.selectors import NodeSelector, parse_node_selector

API_GROUP = "resource.k8s.io"
API_VERSION = "resource.k8s.io/v1"

#: ``resourceapi.AllocationResultsMaxSize``: at most this many devices per claim.
ALLOCATION_RESULTS_MAX_SIZE = 32
#: ``resourceapi.FirstAvailableDeviceRequestMaxSize``: subrequests per request.
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8
#: ``resourceapi.Finalizer``: set on a claim while it is allocated.
FINALIZER = "resource.kubernetes.io/delete-protection"
#: ``resourceapi.ExtendedResourceClaimAnnotation``: marks the claim the scheduler made for a pod's
#: extended resources backed by a DeviceClass (DRAExtendedResource); its one valid value is "true".
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: ``resourceapi.ResourceDeviceClassPrefix``: every DeviceClass also backs the extended resource
#: ``deviceclass.resource.kubernetes.io/<class name>``.
RESOURCE_DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
#: ``resourceapi.ResourceClaimReservedForMaxSize``: at most this many consumers share a claim.
RESERVED_FOR_MAX_SIZE = 256

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"


# --- devices in ResourceSlices -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One attribute value: exactly one of int, bool, string or version (``kind``)."""

    # "int" | "bool" | "string" | "version", a list kind "ints" | "bools" | "strings" | "versions"
    # (DRAListTypeAttributes), or "" (none set: unsupported)
    kind: str
    value: int | bool | str | tuple[int | bool | str, ...] | None


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    """``CapacityRequestPolicy``: how much a request consumes of a shareable capacity."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    valid_range_min: Fraction | None = None
    valid_range_max: Fraction | None = None
    valid_range_step: Fraction | None = None
    has_valid_range: bool = False


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    """``DeviceCapacity``: an amount and, for shareable devices, its request policy."""

    value: Fraction
    request_policy: CapacityRequestPolicy | None = None


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    """``DeviceTaint``."""

    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    """``DeviceToleration``."""

    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: DeviceTaint) -> bool:
        """``resourceclaim.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    """``DeviceCounterConsumption``: counters a partition takes from a shared counter set."""

    counter_set: str
    counters: Mapping[str, Fraction]


@dataclass(slots=True)
class Device:
    """``Device`` of a ResourceSlice."""

    name: str
    attributes: dict[str, DeviceAttribute]
    capacity: dict[str, DeviceCapacity]
    consumes_counters: list[CounterConsumption] = field(default_factory=list)
    node_name: str = ""
    node_selector: NodeSelector | None = None
    node_selector_raw: Raw | None = None
    all_nodes: bool = False
    taints: list[DeviceTaint] = field(default_factory=list)
    binds_to_node: bool = False
    binding_conditions: list[str] = field(default_factory=list)
    binding_failure_conditions: list[str] = field(default_factory=list)
    allow_multiple_allocations: bool = False
    # Selector results by CEL expression (True/False, or the runtime error's message), and the
    # device as CEL input: a parsed device never changes (an update parses a new one), so what an
    # expression says about it is computed once across pods and nodes.
    selector_results: dict[str, bool | str] = field(default_factory=dict, repr=False, compare=False)
    cel_input: dict[str, Any] | None = field(default=None, repr=False, compare=False)


@dataclass(slots=True)
class ResourceSlice:
    """``ResourceSlice``: devices of one driver's pool, or part of it."""

    name: str
    driver: str
    pool: str
    pool_generation: int
    resource_slice_count: int
    node_name: str
    node_selector: NodeSelector | None
    node_selector_raw: Raw | None
    all_nodes: bool
    per_device_node_selection: bool
    devices: list[Device]
    shared_counters: dict[str, dict[str, Fraction]]
    raw: Raw = field(repr=False)


# --- classes and claims --------------------------------------------------------------------


@dataclass(slots=True)
class DeviceClass:
    """``DeviceClass``: selectors every device of the class matches, and its configuration."""

    name: str
    selectors: list[str]  # CEL expressions
    config: list[Raw]  # DeviceClassConfiguration items, copied into allocation results
    extended_resource_name: str
    raw: Raw = field(repr=False)
    creation_timestamp: str = ""  # RFC 3339; the older class wins an extendedResourceName


@dataclass(slots=True)
class DeviceSubRequest:
    """A request's exact part (``ExactDeviceRequest``) or one of its ``firstAvailable`` subrequests."""

    name: str
    device_class_name: str
    selectors: list[str]
    allocation_mode: str
    count: int
    admin_access: bool | None
    tolerations: list[DeviceToleration]
    tolerations_raw: list[Raw]
    capacity_requests: dict[str, Fraction] | None


@dataclass(slots=True)
class DeviceRequest:
    """``DeviceRequest``: exactly one of ``exactly`` and ``first_available`` is set."""

    name: str
    exactly: DeviceSubRequest | None
    first_available: list[DeviceSubRequest]


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    """``DeviceConstraint``: matchAttribute or distinctAttribute over some requests (all when empty)."""

    requests: tuple[str, ...]
    match_attribute: str | None
    distinct_attribute: str | None


@dataclass(slots=True)
class ConsumerReference:
    """``ResourceClaimConsumerReference``."""

    api_group: str
    resource: str
    name: str
    uid: str

    def to_dict(self) -> dict[str, str]:
        """The API form."""
        out = {"resource": self.resource, "name": self.name, "uid": self.uid}
        if self.api_group:
            out["apiGroup"] = self.api_group
        return out


@dataclass(slots=True)
class DeviceResult:
    """``DeviceRequestAllocationResult`` (the parts the scheduler reads; ``raw`` is the full entry)."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    share_id: str = ""
    binding_conditions: list[str] = field(default_factory=list)
    binding_failure_conditions: list[str] = field(default_factory=list)
    consumed_capacity: dict[str, Fraction] = field(default_factory=dict)
    raw: Raw = field(default_factory=dict, repr=False)


@dataclass(slots=True)
class Allocation:
    """``AllocationResult``: the devices, where the claim can be used, and the raw form."""

    results: list[DeviceResult]
    node_selector: NodeSelector | None
    allocation_timestamp: str
    raw: Raw = field(repr=False)


@dataclass(slots=True, eq=False)
class ResourceClaim:
    """``ResourceClaim``."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    deletion_timestamp: str | None
    finalizers: list[str]
    controller_uid: str  # the UID of the controlling owner ("" when none)
    requests: list[DeviceRequest]
    constraints: list[DeviceConstraint]
    config: list[Raw]
    allocation: Allocation | None
    reserved_for: list[ConsumerReference]
    devices_status: list[Raw]
    raw: Raw = field(repr=False)
    # The scheduler's claim for extended resources (EXTENDED_RESOURCE_CLAIM_ANNOTATION is "true").
    extended_resources: bool = False
    controller_name: str = ""  # the name of the controlling owner

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class ResourceClaimTemplate:
    """``ResourceClaimTemplate``: the resourceclaim controller makes claims from it."""

    namespace: str
    name: str
    raw: Raw = field(repr=False)


# --- parsing -------------------------------------------------------------------------------


def _meta(raw: Raw, path: str, kind: str) -> tuple[Raw, str]:
    if not isinstance(raw, Mapping):
        raise FieldError(path, f"expected a {kind} object, got {json_type_name(raw)}")
    mpath = f"{path}.metadata" if path else "metadata"
    meta = get_map(raw, "metadata", path)
    name = get_str(meta, "name", mpath)
    if not name:
        raise FieldError(f"{mpath}.name", "Required value: name is required")
    return meta, name


def _quantity(raw: object, path: str) -> Fraction:
    try:
        return parse_quantity(raw)
    except ValueError as err:
        raise FieldError(path, str(err)) from None


def _opt_quantity(obj: Raw, key: str, path: str) -> Fraction | None:
    value = obj.get(key)
    return None if value is None else _quantity(value, f"{path}.{key}")


def _selectors(obj: Raw, path: str) -> list[str]:
    """CEL expressions of ``selectors[*].cel.expression``; a selector without CEL is kept as ""."""
    out = []
    for item, spath in get_map_items(obj, "selectors", path):
        out.append(get_str(get_map(item, "cel", spath), "expression", f"{spath}.cel"))
    return out


def _tolerations(obj: Raw, path: str) -> tuple[list[DeviceToleration], list[Raw]]:
    out = []
    for t, tpath in get_map_items(obj, "tolerations", path):
        out.append(
            DeviceToleration(
                get_str(t, "key", tpath),
                get_str(t, "operator", tpath, "Equal"),
                get_str(t, "value", tpath),
                get_str(t, "effect", tpath),
            )
        )
    return out, list(get_list(obj, "tolerations", path))


def _node_selector(obj: Raw, path: str) -> tuple[NodeSelector | None, Raw | None]:
    raw = obj.get("nodeSelector")
    if raw is None:
        return None, None
    if not isinstance(raw, Mapping):
        raise FieldError(f"{path}.nodeSelector", f"expected an object, got {json_type_name(raw)}")
    return parse_node_selector(raw, f"{path}.nodeSelector"), raw


def _attribute(raw: object, path: str) -> DeviceAttribute:
    if not isinstance(raw, Mapping):
        raise FieldError(path, f"expected an object, got {json_type_name(raw)}")
    if raw.get("int") is not None:
        return DeviceAttribute("int", get_int(raw, "int", path))
    if raw.get("bool") is not None:
        return DeviceAttribute("bool", get_bool(raw, "bool", path))
    if raw.get("string") is not None:
        return DeviceAttribute("string", get_str(raw, "string", path))
    if raw.get("version") is not None:
        return DeviceAttribute("version", get_str(raw, "version", path))
    # List values (DRAListTypeAttributes): kept as tuples; what they mean depends on the gate.
    for kind, item in (("ints", get_int), ("bools", get_bool), ("strings", get_str), ("versions", get_str)):
        values = get_list(raw, kind, path)
        if values:
            items = {str(i): v for i, v in enumerate(values)}
            parsed = [item(items, str(i), f"{path}.{kind}") for i in range(len(values))]
            if any(v is None for v in parsed):
                raise FieldError(f"{path}.{kind}", "expected no null values")
            return DeviceAttribute(kind, tuple(v for v in parsed if v is not None))
    return DeviceAttribute("", None)


def _request_policy(raw: Raw, path: str) -> CapacityRequestPolicy | None:
    policy = raw.get("requestPolicy")
    if policy is None:
        return None
    ppath = f"{path}.requestPolicy"
    if not isinstance(policy, Mapping):
        raise FieldError(ppath, f"expected an object, got {json_type_name(policy)}")
    valid_range = policy.get("validRange")
    rpath = f"{ppath}.validRange"
    rng = get_map(policy, "validRange", ppath)
    return CapacityRequestPolicy(
        default=_opt_quantity(policy, "default", ppath),
        valid_values=tuple(
            _quantity(v, f"{ppath}.validValues[{i}]")
            for i, v in enumerate(get_list(policy, "validValues", ppath))
        ),
        valid_range_min=_opt_quantity(rng, "min", rpath),
        valid_range_max=_opt_quantity(rng, "max", rpath),
        valid_range_step=_opt_quantity(rng, "step", rpath),
        has_valid_range=valid_range is not None,
    )


def _device(raw: Raw, path: str) -> Device:
    attributes = {
        str(name): _attribute(value, f"{path}.attributes.{name}")
        for name, value in get_map(raw, "attributes", path).items()
    }
    capacity = {}
    for name, value in get_map(raw, "capacity", path).items():
        cpath = f"{path}.capacity.{name}"
        if not isinstance(value, Mapping):
            raise FieldError(cpath, f"expected an object, got {json_type_name(value)}")
        capacity[str(name)] = DeviceCapacity(
            _quantity(value.get("value"), f"{cpath}.value"), _request_policy(value, cpath)
        )
    consumes = []
    for item, cpath in get_map_items(raw, "consumesCounters", path):
        consumes.append(
            CounterConsumption(
                get_str(item, "counterSet", cpath), _counters(get_map(item, "counters", cpath), cpath)
            )
        )
    taints = []
    for t, tpath in get_map_items(raw, "taints", path):
        taints.append(
            DeviceTaint(get_str(t, "key", tpath), get_str(t, "value", tpath), get_str(t, "effect", tpath))
        )
    selector, selector_raw = _node_selector(raw, path)
    return Device(
        name=get_str(raw, "name", path),
        attributes=attributes,
        capacity=capacity,
        consumes_counters=consumes,
        node_name=get_str(raw, "nodeName", path),
        node_selector=selector,
        node_selector_raw=selector_raw,
        all_nodes=get_bool(raw, "allNodes", path),
        taints=taints,
        binds_to_node=get_bool(raw, "bindsToNode", path),
        binding_conditions=[str(c) for c in get_list(raw, "bindingConditions", path)],
        binding_failure_conditions=[str(c) for c in get_list(raw, "bindingFailureConditions", path)],
        allow_multiple_allocations=get_bool(raw, "allowMultipleAllocations", path),
    )


def _counters(raw: Raw, path: str) -> dict[str, Fraction]:
    """``map[string]Counter``: each counter's ``value``."""
    out = {}
    for name, counter in raw.items():
        cpath = f"{path}.counters.{name}"
        if not isinstance(counter, Mapping):
            raise FieldError(cpath, f"expected an object, got {json_type_name(counter)}")
        out[str(name)] = _quantity(counter.get("value"), f"{cpath}.value")
    return out


def parse_resource_slice(raw: Raw, path: str = "ResourceSlice") -> ResourceSlice:
    """Parse a ResourceSlice."""
    _, name = _meta(raw, path, "ResourceSlice")
    spath = f"{path}.spec"
    spec = get_map(raw, "spec", path)
    pool = get_map(spec, "pool", spath)
    ppath = f"{spath}.pool"
    shared: dict[str, dict[str, Fraction]] = {}
    for item, cpath in get_map_items(spec, "sharedCounters", spath):
        shared[get_str(item, "name", cpath)] = _counters(get_map(item, "counters", cpath), cpath)
    selector, selector_raw = _node_selector(spec, spath)
    return ResourceSlice(
        name=name,
        driver=get_str(spec, "driver", spath),
        pool=get_str(pool, "name", ppath),
        pool_generation=get_int(pool, "generation", ppath, 0) or 0,
        resource_slice_count=get_int(pool, "resourceSliceCount", ppath, 0) or 0,
        node_name=get_str(spec, "nodeName", spath),
        node_selector=selector,
        node_selector_raw=selector_raw,
        all_nodes=get_bool(spec, "allNodes", spath),
        per_device_node_selection=get_bool(spec, "perDeviceNodeSelection", spath),
        devices=[_device(item, dpath) for item, dpath in get_map_items(spec, "devices", spath)],
        shared_counters=shared,
        raw=raw,
    )


def parse_device_class(raw: Raw, path: str = "DeviceClass") -> DeviceClass:
    """Parse a DeviceClass."""
    meta, name = _meta(raw, path, "DeviceClass")
    spath = f"{path}.spec"
    spec = get_map(raw, "spec", path)
    return DeviceClass(
        name=name,
        selectors=_selectors(spec, spath),
        config=[dict(c) for c in get_list(spec, "config", spath) if isinstance(c, Mapping)],
        extended_resource_name=get_str(spec, "extendedResourceName", spath),
        raw=raw,
        creation_timestamp=get_str(meta, "creationTimestamp", f"{path}.metadata"),
    )


def _sub_request(raw: Raw, path: str, name: str, exact: bool) -> DeviceSubRequest:
    tolerations, tolerations_raw = _tolerations(raw, path)
    capacity = raw.get("capacity")
    return DeviceSubRequest(
        name=name,
        device_class_name=get_str(raw, "deviceClassName", path),
        selectors=_selectors(raw, path),
        allocation_mode=get_str(raw, "allocationMode", path, ALLOCATION_MODE_EXACT_COUNT)
        or ALLOCATION_MODE_EXACT_COUNT,
        count=get_int(raw, "count", path, 1) or 0,
        admin_access=get_bool(raw, "adminAccess", path)
        if exact and raw.get("adminAccess") is not None
        else None,
        tolerations=tolerations,
        tolerations_raw=tolerations_raw,
        capacity_requests=None
        if capacity is None
        else dict(parse_resource_list(get_map(raw, "capacity", path), "requests", f"{path}.capacity")),
    )


def _parse_allocation(raw: Raw, path: str) -> Allocation:
    devices = get_map(raw, "devices", path)
    dpath = f"{path}.devices"
    results = []
    for item, rpath in get_map_items(devices, "results", dpath):
        results.append(
            DeviceResult(
                request=get_str(item, "request", rpath),
                driver=get_str(item, "driver", rpath),
                pool=get_str(item, "pool", rpath),
                device=get_str(item, "device", rpath),
                admin_access=get_bool(item, "adminAccess", rpath),
                share_id=get_str(item, "shareID", rpath),
                binding_conditions=[str(c) for c in get_list(item, "bindingConditions", rpath)],
                binding_failure_conditions=[
                    str(c) for c in get_list(item, "bindingFailureConditions", rpath)
                ],
                consumed_capacity=dict(parse_resource_list(item, "consumedCapacity", rpath)),
                raw=item,
            )
        )
    selector, _ = _node_selector(raw, path)
    return Allocation(results, selector, get_str(raw, "allocationTimestamp", path), raw)


def parse_resource_claim(raw: Raw, path: str = "ResourceClaim") -> ResourceClaim:
    """Parse a ResourceClaim."""
    meta, name = _meta(raw, path, "ResourceClaim")
    mpath = f"{path}.metadata"
    spath = f"{path}.spec"
    devices = get_map(get_map(raw, "spec", path), "devices", spath)
    dpath = f"{spath}.devices"
    requests = []
    for item, rpath in get_map_items(devices, "requests", dpath):
        request_name = get_str(item, "name", rpath)
        exactly = None
        if item.get("exactly") is not None:
            epath = f"{rpath}.exactly"
            exactly = _sub_request(get_map(item, "exactly", rpath), epath, request_name, True)
        first_available = [
            _sub_request(sub, fpath, get_str(sub, "name", fpath), False)
            for sub, fpath in get_map_items(item, "firstAvailable", rpath)
        ]
        requests.append(DeviceRequest(request_name, exactly, first_available))
    constraints = []
    for item, cpath in get_map_items(devices, "constraints", dpath):
        constraints.append(
            DeviceConstraint(
                tuple(str(r) for r in get_list(item, "requests", cpath)),
                item.get("matchAttribute") and get_str(item, "matchAttribute", cpath),
                item.get("distinctAttribute") and get_str(item, "distinctAttribute", cpath),
            )
        )
    status = get_map(raw, "status", path)
    stpath = f"{path}.status"
    allocation_raw = status.get("allocation")
    reserved = []
    for item, rpath in get_map_items(status, "reservedFor", stpath):
        reserved.append(
            ConsumerReference(
                get_str(item, "apiGroup", rpath),
                get_str(item, "resource", rpath),
                get_str(item, "name", rpath),
                get_str(item, "uid", rpath),
            )
        )
    controller_uid = controller_name = ""
    for owner, opath in get_map_items(meta, "ownerReferences", mpath):
        if get_bool(owner, "controller", opath):
            controller_uid = get_str(owner, "uid", opath)
            controller_name = get_str(owner, "name", opath)
    return ResourceClaim(
        namespace=get_str(meta, "namespace", mpath, "default") or "default",
        name=name,
        uid=get_str(meta, "uid", mpath) or f"{get_str(meta, 'namespace', mpath, 'default')}/{name}",
        resource_version=get_str(meta, "resourceVersion", mpath),
        deletion_timestamp=meta.get("deletionTimestamp") and get_str(meta, "deletionTimestamp", mpath),
        finalizers=[str(f) for f in get_list(meta, "finalizers", mpath)],
        controller_uid=controller_uid,
        requests=requests,
        constraints=constraints,
        config=[dict(c) for c in get_list(devices, "config", dpath) if isinstance(c, Mapping)],
        allocation=None
        if allocation_raw is None
        else _parse_allocation(get_map(status, "allocation", stpath), f"{stpath}.allocation"),
        reserved_for=reserved,
        devices_status=[dict(d) for d in get_list(status, "devices", stpath) if isinstance(d, Mapping)],
        raw=raw,
        extended_resources=get_map(meta, "annotations", mpath).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION)
        == "true",
        controller_name=controller_name,
    )


def parse_resource_claim_template(raw: Raw, path: str = "ResourceClaimTemplate") -> ResourceClaimTemplate:
    """Parse a ResourceClaimTemplate."""
    meta, name = _meta(raw, path, "ResourceClaimTemplate")
    return ResourceClaimTemplate(
        get_str(meta, "namespace", f"{path}.metadata", "default") or "default", name, raw
    )


def claim_with_status(
    claim: ResourceClaim, status: Mapping[str, Any], finalizers: list[str] | None = None
) -> ResourceClaim:
    """A copy of ``claim`` with ``status`` (and ``finalizers``) replaced, reparsed from its raw form."""
    raw = dict(claim.raw)
    raw["status"] = dict(status)
    if finalizers is not None:
        raw["metadata"] = {**dict(claim.raw.get("metadata") or {}), "finalizers": finalizers}
    return parse_resource_claim(raw)


#: The kinds of ``resource.k8s.io/v1`` and their parsers, for state files and informers.
PARSERS = {
    "DeviceClass": parse_device_class,
    "ResourceClaim": parse_resource_claim,
    "ResourceClaimTemplate": parse_resource_claim_template,
    "ResourceSlice": parse_resource_slice,
}
