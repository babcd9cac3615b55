"""The structured allocator (``k8s.io/dynamic-resource-allocation/structured``, v0.36.3).

With the DRA gates on by default in v1.36 kube-scheduler runs the "incubating" variant
(``internal/incubating``); this is its port: the first solution of an exhaustive, ordered search
over the devices of the pools visible from a node, one claim after another, one request after
another, backtracking when a later request or a constraint cannot be met.

Supported as upstream: ExactCount and All allocation modes, ``firstAvailable`` subrequests
(DRAPrioritizedList), class and request CEL selectors, matchAttribute and distinctAttribute
constraints, admin access (DRAAdminAccess), devices already allocated to other claims or being
allocated (in-flight), partitionable devices with shared counters (DRAPartitionableDevices),
consumable capacity with request policies and multiple allocations (DRAConsumableCapacity),
device taints and tolerations (DRADeviceTaints), devices with binding conditions
(DRADeviceBindingConditions, tried after all others), per-device node selection, incomplete,
obsolete and invalid pools. List-typed attributes (DRAListTypeAttributes, alpha, off) are refused
as unsupported attribute values, as with the gate off.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import filterfalse
from typing import Any

from app.api.objects import Node
from app.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceConstraint,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
)
from app.api.selectors import NodeSelector
from app.framework.dra import AllocatedState, DeviceID
from app.plugins.dynamicresources.cel import COMPILE_ERROR, CelCache, device_verdict


class AllocationError(Exception):
    """Allocation cannot work for this pod (kube's plain error: the Filter returns an Error status)."""


class FailedOnNode(AllocationError):
    """Allocation failed on this node only (``ErrFailedAllocationOnNode``): Unschedulable there."""


class AllocationTimeout(Exception):
    """The filter timeout (DRASchedulerFilterTimeout) ran out during the search."""


@dataclass(frozen=True, slots=True)
class Features:
    """``structured.Features``: the DRA gates that change what the allocator does."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_binding_and_status: bool = True
    consumable_capacity: bool = True
    list_type_attributes: bool = False


@dataclass(slots=True)
class AllocationData:
    """One claim's allocation: the ``status.allocation`` to write and its parsed request names."""

    raw: dict[str, Any]


def node_matches(node: Node | None, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    """``NodeMatches``: by name, everywhere, or by node selector."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node is not None and selector.matches(node.name, node.labels)
    return False


# --- pools ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Pool:
    """The slices of one (driver, pool) visible from the node (``Pool``)."""

    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[ResourceSlice] = field(default_factory=list)  # DeviceSlicesTargetingNode
    other_slices: list[ResourceSlice] = field(default_factory=list)  # DeviceSlicesNotTargetingNode
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    device_ids: list[list[DeviceID]] = field(default_factory=list)
    """The IDs of ``slices``' devices, slice by slice (built once, not per node and pod)."""
    device_id_set: frozenset[DeviceID] = frozenset()
    """All of ``device_ids``: "is every device of the pool taken" is then one subset test on
    stored hashes (a list argument would be turned into a new set, hashing every ID, per call)."""
    search_order: tuple[DeviceID, ...] = ()
    """``device_ids`` flattened, in the search's order (slice by slice, device by device): the
    single-device search skips the taken ones in C (``filterfalse``) instead of a Python loop."""
    device_at: dict[DeviceID, tuple[ResourceSlice, Device]] = field(default_factory=dict)
    """Each of ``search_order``'s devices with its slice (a valid pool's device names are unique)."""
    fits_unrequested: dict[str, bool] = field(default_factory=dict)
    """Device name -> whether the device's capacity admits a request that asks for none while
    nothing of it is consumed: its own property, so kept with the pool (which lives until a slice
    or the node changes) instead of being recomputed with quantities for every pod and node."""

    def __post_init__(self) -> None:
        if self.device_ids and not self.search_order:
            self.search_order = tuple(i for ids in self.device_ids for i in ids)
            self.device_at = {
                device_id: (s, device)
                for s, ids in zip(self.slices, self.device_ids, strict=True)
                for device, device_id in zip(s.devices, ids, strict=True)
            }
        if self.search_order and not self.device_id_set:
            self.device_id_set = frozenset(self.search_order)

    @property
    def pool_id(self) -> str:
        """``driver/pool``."""
        return f"{self.driver}/{self.name}"


def _slice_relevant(s: ResourceSlice, node: Node, features: Features) -> bool:
    if not features.partitionable_devices and (s.per_device_node_selection or s.shared_counters):
        return False
    if s.shared_counters:
        return True
    if s.node_name or s.all_nodes or s.node_selector is not None:
        return node_matches(node, s.node_name, s.all_nodes, s.node_selector)
    if s.per_device_node_selection:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in s.devices)
    return False


def gather_pools(
    slices_for_node: Sequence[ResourceSlice],
    node: Node,
    features: Features,
    all_slices: Sequence[ResourceSlice],
) -> list[Pool]:
    """``GatherPools``: the newest generation of each pool, complete or marked incomplete/invalid.

    Pools with devices that have binding conditions come last, so that devices usable at once
    are preferred.
    """
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices_for_node:
        if not _slice_relevant(s, node, features):
            continue
        key = (s.driver, s.pool)
        current = by_pool.get(key)
        if current is None or s.pool_generation > current[0].pool_generation:
            by_pool[key] = [s]
        elif s.pool_generation == current[0].pool_generation:
            current.append(s)
    result: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for (driver, name), pool_slices in by_pool.items():
        generation, count = pool_slices[0].pool_generation, pool_slices[0].resource_slice_count
        all_for_pool: list[ResourceSlice] | None = None
        if len(pool_slices) != count:
            obsolete = False
            all_for_pool = []
            for s in all_slices:
                if s.driver != driver or s.pool != name:
                    continue
                if s.pool_generation == generation:
                    all_for_pool.append(s)
                elif s.pool_generation > generation:
                    obsolete = True
                    break
            if obsolete:
                continue
            if len(all_for_pool) != count:
                result.append(Pool(driver, name, incomplete=True))
                continue
        pool = _build_pool(driver, name, pool_slices, features, all_for_pool)
        if any(d.binding_conditions for s in pool.slices for d in s.devices):
            with_binding_conditions.append(pool)
        else:
            result.append(pool)
    result.sort(key=lambda p: (p.driver, p.name))
    with_binding_conditions.sort(key=lambda p: (p.driver, p.name))
    return result + with_binding_conditions


def _build_pool(
    driver: str,
    name: str,
    pool_slices: list[ResourceSlice],
    features: Features,
    all_for_pool: list[ResourceSlice] | None,
) -> Pool:
    pool_slices = sorted(pool_slices, key=lambda s: s.name)
    if features.partitionable_devices:
        counter_slices = [s for s in pool_slices if s.shared_counters]
        device_slices = [s for s in pool_slices if not s.shared_counters]
    else:
        counter_slices, device_slices = [], pool_slices
    seen: set[str] = set()
    for s in device_slices:
        for d in s.devices:
            if d.name in seen:
                return Pool(driver, name, invalid=True, invalid_reason=f"duplicate device name {d.name}")
            seen.add(d.name)
    if not features.partitionable_devices:
        return Pool(driver, name, slices=device_slices, device_ids=_device_ids(driver, name, device_slices))
    counter_sets: dict[str, dict[str, Fraction]] = {}
    for s in counter_slices:
        for set_name, counters in s.shared_counters.items():
            if set_name in counter_sets:
                return Pool(
                    driver, name, invalid=True, invalid_reason=f"duplicate counter set name {set_name}"
                )
            counter_sets[set_name] = counters
    reason = _counter_consumption_error(counter_sets, pool_slices)
    if reason:
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    other: list[ResourceSlice] = []
    if all_for_pool is not None and len(all_for_pool) != len(pool_slices):
        targeting = {s.name for s in pool_slices}
        other = [s for s in all_for_pool if s.name not in targeting]
        reason = _counter_consumption_error(counter_sets, other)
        if reason:
            return Pool(driver, name, invalid=True, invalid_reason=reason)
    return Pool(
        driver,
        name,
        slices=device_slices,
        other_slices=other,
        counter_sets=counter_sets,
        device_ids=_device_ids(driver, name, device_slices),
    )


def _device_ids(driver: str, pool: str, slices: list[ResourceSlice]) -> list[list[DeviceID]]:
    return [[(driver, pool, d.name) for d in s.devices] for s in slices]


def _counter_consumption_error(
    counter_sets: dict[str, dict[str, Fraction]], slices: list[ResourceSlice]
) -> str:
    for s in slices:
        for d in s.devices:
            for consumption in d.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for counter in consumption.counters:
                    if counter not in counter_set:
                        return f"counter {counter} not found in counter set {consumption.counter_set}"
    return ""


# --- constraints ---------------------------------------------------------------------------------


def lookup_attribute(device: Device, driver: str, attribute_name: str) -> DeviceAttribute | None:
    """``lookupAttribute``: the fully qualified name, or the bare id for the device's own driver."""
    attr = device.attributes.get(attribute_name)
    if attr is not None:
        return attr
    domain, sep, ident = attribute_name.partition("/")
    if not sep or domain != driver:
        return None
    return device.attributes.get(ident)


class _Constraint:
    """matchAttribute (all equal) or distinctAttribute (all different) over some requests.

    With DRAListTypeAttributes (kube's "experimental" allocator) values are sets (a scalar is a
    set of one): matchAttribute needs a common element, narrowing the intersection as devices
    join (and, as in kube, not widening it again when one leaves), distinctAttribute needs the
    sets pairwise disjoint.
    """

    def __init__(self, constraint: DeviceConstraint, list_type_attributes: bool = False) -> None:
        self.requests = frozenset(constraint.requests)
        self.match = constraint.match_attribute is not None
        self.attribute_name = constraint.match_attribute or constraint.distinct_attribute or ""
        self.first: DeviceAttribute | None = None
        self.num_devices = 0
        self.values: dict[str, DeviceAttribute] = {}
        self.list_type_attributes = list_type_attributes
        self.intersection: tuple[str, frozenset[Any]] | None = None

    def _applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if request in self.requests:
            return True
        return bool(sub_request) and f"{request}/{sub_request}" in self.requests

    def add(self, request: str, sub_request: str, device: Device, driver: str) -> bool:
        if not self._applies(request, sub_request):
            return True
        attr = lookup_attribute(device, driver, self.attribute_name)
        if attr is None:
            return False
        if self.list_type_attributes:
            return self._add_set(request, attr)
        if self.num_devices == 0:
            if self.match:
                self.first = attr
            else:
                self.values[request] = attr
            self.num_devices = 1
            return True
        if attr.kind not in ("int", "bool", "string", "version"):
            return False
        if self.match:
            assert self.first is not None
            if self.first.kind != attr.kind or self.first.value != attr.value:
                return False
        else:
            if any(v.kind == attr.kind and v.value == attr.value for v in self.values.values()):
                return False
            self.values[request] = attr
        self.num_devices += 1
        return True

    def _add_set(self, request: str, attr: DeviceAttribute) -> bool:
        new = attribute_as_set(attr)
        if self.match:
            if new is None:
                return False
            if self.num_devices == 0:
                self.intersection = new
            else:
                assert self.intersection is not None
                if new[0] != self.intersection[0] or not new[1] & self.intersection[1]:
                    return False
                self.intersection = (new[0], new[1] & self.intersection[1])
        elif self.num_devices > 0:
            if new is None:
                return False
            for existing in map(attribute_as_set, self.values.values()):
                if existing is not None and existing[0] == new[0] and existing[1] & new[1]:
                    return False
        if not self.match:
            self.values[request] = attr
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if not self._applies(request, sub_request):
            return
        if not self.match:
            self.values.pop(request, None)
        self.num_devices -= 1


def attribute_as_set(attr: DeviceAttribute) -> tuple[str, frozenset[Any]] | None:
    """``attributeAsSet``: an attribute's values as a set with their type; None for no value."""
    if attr.kind in ("ints", "bools", "strings", "versions"):
        assert isinstance(attr.value, tuple)
        return attr.kind[:-1], frozenset(attr.value)
    if attr.kind in ("int", "bool", "string", "version"):
        return attr.kind, frozenset((attr.value,))
    return None


# --- consumable capacity -------------------------------------------------------------------------


def _consumed_capacity(requested: Fraction | None, cap: Any) -> Fraction:
    """``calculateConsumedCapacity``: the request rounded up to what the policy allows."""
    policy = cap.request_policy
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else cap.value
    if policy is None:
        return requested
    if policy.has_valid_range and policy.valid_range_min is not None:
        low = policy.valid_range_min
        if requested < low:
            return low
        step = policy.valid_range_step
        if step is None:
            return requested
        # Integer steps, as Quantity.Value() does.
        req, st, mn = _int_value(requested), _int_value(step), _int_value(low)
        n, mod = divmod(req - mn, st)
        return Fraction(mn + st * (n + (1 if mod else 0)))
    if policy.valid_values:
        for value in policy.valid_values:
            if requested <= value:
                return value
    return requested


def _int_value(q: Fraction) -> int:
    """``Quantity.Value()``: rounded up (away from zero)."""
    return -((-q.numerator) // q.denominator) if q >= 0 else -((q.numerator) // -q.denominator)


def _violates_policy(value: Fraction, policy: Any) -> bool:
    if policy is None:
        return False
    if policy.default is not None and value == policy.default:
        return False
    if policy.has_valid_range:
        if policy.valid_range_max is not None and value > policy.valid_range_max:
            return True
        if policy.valid_range_step is not None and policy.valid_range_min is not None:
            added = _int_value(value) - _int_value(policy.valid_range_min)
            # Go's % keeps the dividend's sign; only "is it a multiple" matters here.
            return added % _int_value(policy.valid_range_step) != 0
        return False
    if policy.valid_values:
        return value not in policy.valid_values
    return False


def capacity_fits(
    consumed: dict[str, Fraction],
    requests: dict[str, Fraction] | None,
    device: Device,
    allocating: dict[str, Fraction],
) -> bool:
    """``CmpRequestOverCapacity``; AllocationError-free: an undefined capacity just does not fit."""
    if not device.capacity:
        return not requests  # nothing to consume (the common case), or a request it cannot meet
    if requests and any(name not in device.capacity for name in requests):
        return False
    for name, cap in device.capacity.items():
        amount = _consumed_capacity(requests.get(name) if requests else None, cap)
        if _violates_policy(amount, cap.request_policy):
            return False
        total = consumed.get(name, Fraction(0)) + amount + allocating.get(name, Fraction(0))
        if total > cap.value:
            return False
    return True


def consumed_from_request(requests: dict[str, Fraction] | None, device: Device) -> dict[str, Fraction]:
    """``GetConsumedCapacityFromRequest``."""
    return {
        name: _consumed_capacity(requests.get(name) if requests else None, cap)
        for name, cap in device.capacity.items()
    }


# --- the search ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _RequestData:
    request: DeviceSubRequest
    parent: str  # the parent request's name for a subrequest, "" otherwise
    device_class: DeviceClass | None
    num_devices: int
    # Only requests for all devices fill this (a list of their own then); the others share the
    # empty tuple, one allocation fewer per request, node and pod.
    all_devices: Sequence[tuple[DeviceID, Device, ResourceSlice, Pool]] = ()
    selected_sub_request: int = 0

    def request_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


@dataclass(slots=True)
class _Result:
    request: str
    parent: str
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    request_data: _RequestData
    share_id: str = ""
    consumed: dict[str, Fraction] | None = None
    admin_access: bool = False

    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


class _Undo:
    """What one ``allocateDevice`` took (counters, constraint slots, the device, shared capacity,
    the result), given back newest first when the search backtracks (upstream's rollback function).
    One object instead of a closure per step: it is made for every device the search tries."""

    __slots__ = (
        "allocating",
        "base",
        "claim_index",
        "constraints",
        "counters",
        "device",
        "device_id",
        "pool",
        "release",
        "result",
        "run",
        "sub",
    )

    def __init__(
        self,
        run: _Run,
        claim_index: int,
        device_id: DeviceID,
        device: Device,
        pool: Pool,
        base: str,
        sub: str,
    ) -> None:
        self.run = run
        self.claim_index = claim_index
        self.device_id = device_id
        self.device = device
        self.pool = pool
        self.base = base
        self.sub = sub
        self.counters = False
        self.constraints = 0  # how many of the claim's constraints took the device, in order
        self.allocating = False
        self.release: Callable[[], None] | None = None
        self.result = False

    def __call__(self) -> None:
        run = self.run
        if self.result:
            run.results[self.claim_index].pop()
        if self.release is not None:
            self.release()
        if self.allocating:
            run.allocating[self.device_id].discard(self.claim_index)
        constraints = run.constraints[self.claim_index]
        for i in reversed(range(self.constraints)):
            constraints[i].remove(self.base, self.sub)
        if self.counters:
            run._return_counters(self.pool, self.device)


@dataclass(slots=True)
class _ClaimSetup:
    """One claim's validated requests (exact counts only, no subrequests, no constraints) and the
    devices it needs at least, kept by the pod's allocator for its later nodes."""

    claim: ResourceClaim  # kept, so that the id the setup is filed under is not reused
    request_data: list[_RequestData]
    min_devices: int


class _MaxSizeExceeded(Exception):
    """``errAllocationResultMaxSizeExceeded``: more than 32 devices for a claim down this path."""


class Allocator:
    """Built once per pod in PreFilter, then asked per node in Filter (``structured.Allocator``)."""

    def __init__(
        self,
        features: Features,
        allocated: AllocatedState,
        class_lookup: Callable[[str], DeviceClass | None],
        slices: Sequence[ResourceSlice],
        cel_cache: CelCache,
        share_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        pool_cache: dict[str, tuple[Node, Features, list[Pool]]] | None = None,
    ) -> None:
        self.features = features
        self.allocated = allocated
        self.class_lookup = class_lookup
        self.all_slices = list(slices)
        # Slices by node, built on the first pool-cache miss only: once every node's pools are
        # cached (the steady state between slice changes) no pod pays for indexing all slices.
        self._slices_on_node: dict[str, list[ResourceSlice]] | None = None
        self._slices_shared: list[ResourceSlice] = []
        self.cel_cache = cel_cache
        self.share_id = share_id
        self._available_counters: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}
        # Pools by node: the same for every pod until a slice or the node changes. The DRA store
        # lends a cache it clears on every ResourceSlice change; entries are for one Node object.
        self._pools = pool_cache if pool_cache is not None else {}
        # The setup of each claim whose setup is the same on every node, by the claim's identity
        # (see _Run.allocate): the checks and lookups of the first node are not repeated.
        self.claim_setups: dict[int, _ClaimSetup] = {}

    def pools_for(self, node: Node) -> list[Pool]:
        """``GatherPools`` for ``node``, from the cache when neither the slices nor the node changed."""
        cached = self._pools.get(node.name)
        if (
            cached is not None
            and cached[0] is node
            and (cached[1] is self.features or cached[1] == self.features)
        ):
            return cached[2]
        if self._slices_on_node is None:
            self._slices_on_node = {}
            for s in self.all_slices:
                if not s.node_name or s.shared_counters:
                    self._slices_shared.append(s)
                else:
                    self._slices_on_node.setdefault(s.node_name, []).append(s)
        slices_for_node = self._slices_on_node.get(node.name, []) + self._slices_shared
        pools = gather_pools(slices_for_node, node, self.features, self.all_slices)
        self._pools[node.name] = (node, self.features, pools)
        return pools

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim], deadline: float | None = None
    ) -> Solution | None:
        """The devices for ``claims`` on ``node`` (see :class:`Solution`), or None when they do not fit there.

        Raises AllocationError (FailedOnNode for a node-local failure) or AllocationTimeout.
        """
        # The search only reads the list: the plugin's, shared by the nodes of a cycle, needs no copy.
        run = _Run(self, node, claims if isinstance(claims, list) else list(claims), deadline)
        return run.allocate()


class Solution:
    """The devices found for the claims on one node. Their ``status.allocation`` objects are only
    built when asked for (Reserve and Score need one node's; Filter finds many)."""

    __slots__ = ("_allocations", "_run")

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._allocations: list[dict[str, Any]] | None = None

    def __len__(self) -> int:
        return len(self._run.claims)

    def allocations(self) -> list[dict[str, Any]]:
        """One ``status.allocation`` per claim, in the claims' order."""
        if self._allocations is None:
            run = self._run
            self._allocations = [run._allocation_result(i, c) for i, c in enumerate(run.claims)]
        return self._allocations


class _Run:
    """One ``Allocate`` call (``allocator``): the state of the search on one node (one per node and
    pod, hence slots)."""

    __slots__ = (
        "a",
        "allocating",
        "allocating_capacity",
        "claims",
        "constraints",
        "consumed_counters",
        "deadline",
        "features",
        "matches",
        "min_devices_total",
        "node",
        "pools",
        "request_data",
        "results",
    )

    def __init__(
        self, alloc: Allocator, node: Node, claims: list[ResourceClaim], deadline: float | None
    ) -> None:
        self.a = alloc
        self.features = alloc.features
        self.node = node
        self.claims = claims
        self.deadline = deadline
        self.pools: list[Pool] = []
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[Sequence[_Constraint]] = []
        self.matches: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.consumed_counters: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}
        self.results: list[list[_Result]] = [[] for _ in claims]
        self.min_devices_total = 0

    # --- setup ------------------------------------------------------------------------------------

    def allocate(self) -> Solution | None:
        self.pools = self.a.pools_for(self.node)
        claim_setups = self.a.claim_setups
        for claim_index, claim in enumerate(self.claims):
            setup = claim_setups.get(id(claim))
            if setup is not None and setup.claim is claim:
                # Validated on an earlier node of this pod: the same requests, classes and limits.
                for request_index, data in enumerate(setup.request_data):
                    self.request_data[(claim_index, request_index, 0)] = data
                self.min_devices_total += setup.min_devices
                self.constraints.append(())
                continue
            min_devices = 0
            for request_index, request in enumerate(claim.requests):
                has_sub = bool(request.first_available)
                if not self.features.prioritized_list and has_sub:
                    raise AllocationError(
                        f"claim {claim.key}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                if not self.features.consumable_capacity:
                    if request.exactly is not None and request.exactly.capacity_requests is not None:
                        raise AllocationError(
                            f"claim {claim.key}, request {request.name}: has capacity requests, "
                            "but the DRAConsumableCapacity feature is disabled"
                        )
                    for sub in request.first_available:
                        if sub.capacity_requests is not None:
                            raise AllocationError(
                                f"claim {claim.key}, subrequest {sub.name}: has capacity requests, "
                                "but the DRAConsumableCapacity feature is disabled"
                            )
                if has_sub:
                    lowest = None
                    for sub_index, sub in enumerate(request.first_available):
                        data = self._validate_request(
                            claim, sub, request.name, (claim_index, request_index, sub_index)
                        )
                        self.request_data[(claim_index, request_index, sub_index)] = data
                        lowest = data.num_devices if lowest is None else min(lowest, data.num_devices)
                    min_devices += lowest or 0
                else:
                    if request.exactly is None:
                        raise AllocationError(
                            f"claim {claim.key}, request {request.name}: missing device class name "
                            "(unsupported request type?)"
                        )
                    data = self._validate_request(claim, request.exactly, "", (claim_index, request_index, 0))
                    self.request_data[(claim_index, request_index, 0)] = data
                    min_devices += data.num_devices
            self.min_devices_total += min_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim.key}: number of requested devices {min_devices} "
                    f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints: list[_Constraint] = []
            for i, constraint in enumerate(claim.constraints):
                if constraint.match_attribute is None and constraint.distinct_attribute is None:
                    raise AllocationError(
                        f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
                constraints.append(_Constraint(constraint, self.features.list_type_attributes))
            self.constraints.append(constraints or ())
            if not constraints and all(
                r.exactly is not None and r.exactly.allocation_mode == ALLOCATION_MODE_EXACT_COUNT
                for r in claim.requests
            ):
                # Nothing of this setup depends on the node, and the search changes none of it
                # (constraints hold per-search state, requests for all devices list the node's).
                claim_setups[id(claim)] = _ClaimSetup(
                    claim,
                    [self.request_data[(claim_index, i, 0)] for i in range(len(claim.requests))],
                    min_devices,
                )
        try:
            # The commonest claim first: its search skips the taken devices itself. Otherwise a
            # node whose every device is taken (a full cluster's usual case) needs no search: the
            # search would look at no device, so no selector runs and the outcome is the same.
            done = self._single_device()
            if done is None:
                done = self._any_device_free() and self._allocate_one(0, 0, 0, 0, False, (0, 0, 0))
        except _MaxSizeExceeded:
            done = False
        if not done:
            if any(p.invalid for p in self.pools):
                raise FailedOnNode("invalid resource pools were encountered")
            return None
        # A Filter keeps one solution per feasible node until the pod's cycle ends (a hundred per
        # pod, for every pod waiting to bind): keep only what its allocation results are built from.
        del self.matches, self.allocating, self.allocating_capacity, self.consumed_counters
        del self.constraints, self.pools
        return Solution(self)

    def _any_device_free(self) -> bool:
        """Whether some device of a usable pool is not allocated (admin access may use any)."""
        if self.min_devices_total == 0:
            return True
        for data in self.request_data.values():  # a loop, not any(genexpr): once per node and pod
            if data.request.admin_access:
                return True
        allocated = self.a.allocated.allocated_devices
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            if not pool.device_id_set.issubset(allocated):
                return True
        return False

    def _single_device(self) -> bool | None:
        """The search for the commonest claim (one claim, one request for exactly one device, no
        constraints, no admin access), without the general recursion: the first device in search
        order that is free, selectable and fits the capacity. None (search as usual) when the claim
        is not of that kind or the device found needs more than that (shared counters, taints, a
        multiple allocation); a device without those that passes the checks is what
        ``allocateDevice`` takes at once, so the result is the general search's."""
        if len(self.claims) != 1:
            return None
        claim = self.claims[0]
        if len(claim.requests) != 1 or claim.constraints or len(self.request_data) != 1:
            return None
        data = self.request_data.get((0, 0, 0))
        if data is None or data.parent or data.num_devices != 1:
            return None
        request = data.request
        if request.allocation_mode != ALLOCATION_MODE_EXACT_COUNT or request.admin_access:
            return None
        # The deadline is checked when the first free device is met, as the general search, which
        # only starts when some device is free, checks it first.
        unchecked = self.deadline is not None
        features = self.features
        taken = self.a.allocated.allocated_devices.__contains__
        check_capacity = features.consumable_capacity
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            device_at = pool.device_at
            # The free devices in search order; the taken ones (most of a filling node's) are
            # skipped in C. Each device is looked at once here: nothing to remember per search.
            for device_id in filterfalse(taken, pool.search_order):
                if unchecked:
                    unchecked = False
                    if time.monotonic() > self.deadline:  # type: ignore[operator]
                        raise AllocationTimeout
                s, device = device_at[device_id]
                if not self._matches_request(0, data, s, device, device_id):
                    continue
                if check_capacity and not self._capacity_fits(request, device_id, device, pool):
                    continue
                if (
                    device.consumes_counters
                    or (features.device_taints and device.taints)
                    or (check_capacity and device.allow_multiple_allocations)
                ):
                    return None
                if self.deadline is not None and time.monotonic() > self.deadline:
                    raise AllocationTimeout  # where the general search checks it once more
                self.allocating[device_id] = {0}
                self.results[0].append(_Result(request.name, "", device_id, device, s, data))
                return True
        return False

    def _validate_request(
        self, claim: ResourceClaim, request: DeviceSubRequest, parent: str, key: tuple[int, int, int]
    ) -> _RequestData:
        name = f"{parent}/{request.name}" if parent else request.name
        label = request.name
        for i, selector in enumerate(request.selectors):
            if not selector:
                raise AllocationError(
                    f"claim {claim.key}, request {label}, selector #{i}: CEL expression empty (unsupported selector type?)"
                )
        if not self.features.admin_access and request.admin_access is not None:
            raise AllocationError(
                f"claim {claim.key}, request {label}: admin access is requested, but the feature is disabled"
            )
        if not request.device_class_name:
            raise AllocationError(
                f"claim {claim.key}, request {label}: missing device class name (unsupported request type?)"
            )
        device_class = self.a.class_lookup(request.device_class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {claim.key}, request {label}: could not retrieve device class {request.device_class_name}: "
                f'deviceclass.resource.k8s.io "{request.device_class_name}" not found'
            )
        data = _RequestData(request, parent, device_class, 0)
        if request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == ALLOCATION_MODE_ALL:
            all_devices: list[tuple[DeviceID, Device, ResourceSlice, Pool]] = []
            data.all_devices = all_devices
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.key}, request {label}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim.key}, request {label}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently invalid"
                    )
                for s in pool.slices:
                    for device in s.devices:
                        if not self._selectable(key, data, s, device):
                            continue
                        device_id = (s.driver, s.pool, device.name)
                        if self.features.consumable_capacity and not self._capacity_fits(
                            request, device_id, device, pool
                        ):
                            continue
                        all_devices.append((device_id, device, s, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {claim.key}, request {name}: unsupported count mode {request.allocation_mode}"
            )
        return data

    # --- selection ------------------------------------------------------------------------------------

    def _selectable(
        self, key: tuple[int, int, int], data: _RequestData, s: ResourceSlice, device: Device
    ) -> bool:
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        device_id = (s.driver, s.pool, device.name)
        cache_key = (device_id, *key)
        cached = self.matches.get(cache_key)
        if cached is not None:
            return cached
        match = self._matches_request(key[0], data, s, device, device_id)
        self.matches[cache_key] = match
        return match

    def _matches_request(
        self, claim_index: int, data: _RequestData, s: ResourceSlice, device: Device, device_id: DeviceID
    ) -> bool:
        """The selectors of the request's class and of the request, and per-device node selection
        (what :meth:`_selectable` remembers per search)."""
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        claim = self.claims[claim_index]
        match = True
        if data.device_class is not None and data.device_class.selectors:
            match = self._selectors_match(
                claim, device_id, device, data.device_class, data.device_class.selectors
            )
        if match and data.request.selectors:
            match = self._selectors_match(claim, device_id, device, None, data.request.selectors)
        if match and s.per_device_node_selection:
            match = node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)
        return match

    def _selectors_match(
        self,
        claim: ResourceClaim,
        device_id: DeviceID,
        device: Device,
        device_class: DeviceClass | None,
        selectors: list[str],
    ) -> bool:
        results = device.selector_results
        for i, expression in enumerate(selectors):
            verdict = results.get(expression)
            if verdict is True:  # the common case, remembered from an earlier pod or node
                continue
            if verdict is None:
                verdict = device_verdict(self.a.cel_cache, expression, device_id[0], device)
            if isinstance(verdict, str):
                where = f"class {device_class.name}" if device_class is not None else f"claim {claim.key}"
                if verdict.startswith(COMPILE_ERROR):
                    raise AllocationError(
                        f"{where}: selector #{i}: CEL compile error: {verdict[len(COMPILE_ERROR) :]}"
                    )
                raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {verdict}")
            if not verdict:
                return False
        return True

    def _capacity_fits(
        self, request: DeviceSubRequest, device_id: DeviceID, device: Device, pool: Pool
    ) -> bool:
        if not device.capacity:
            return not request.capacity_requests
        allocated = self.a.allocated.aggregated_capacity.get(device_id)
        allocating = self.allocating_capacity.get(device_id)
        if not request.capacity_requests and not allocated and not allocating:
            # Nothing asked and nothing consumed: the verdict depends on the device alone.
            fits = pool.fits_unrequested.get(device.name)
            if fits is None:
                fits = pool.fits_unrequested[device.name] = capacity_fits({}, None, device, {})
            return fits
        return capacity_fits(allocated or {}, request.capacity_requests, device, allocating or {})

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated.allocated_devices or bool(self.allocating.get(device_id))

    # --- the recursion -------------------------------------------------------------------------------

    def _allocate_one(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        device_index: int,
        in_sub: bool,
        start: tuple[int, int, int],
    ) -> bool:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        if request_index >= len(claim.requests):
            if claim_index + 1 == len(self.claims):
                return True  # all claims done: what the call for the next claim would find
            try:
                return self._allocate_one(claim_index + 1, 0, 0, 0, False, (0, 0, 0))
            except _MaxSizeExceeded:
                return False
        key = (claim_index, request_index, sub_index)
        data = self.request_data[key]
        if not in_sub and data.parent:
            all_exceeded = True
            sub = 0
            while (claim_index, request_index, sub) in self.request_data:
                try:
                    ok = self._allocate_one(claim_index, request_index, sub, 0, True, (0, 0, 0))
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if ok:
                    self.request_data[(claim_index, request_index, 0)].selected_sub_request = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False
        request = data.request
        do_all = request.allocation_mode == ALLOCATION_MODE_ALL
        if do_all and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            if request_index + 1 == len(claim.requests) and claim_index + 1 == len(self.claims):
                return True  # the last request of the last claim is done (two calls saved per solution)
            return self._allocate_one(claim_index, request_index + 1, 0, 0, False, (0, 0, 0))
        if len(self.results[claim_index]) + data.num_devices - device_index > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        admin = bool(request.admin_access)
        if do_all:
            device_id, device, s, pool = data.all_devices[device_index]
            undo = self._allocate_device(claim_index, data, device_id, device, s, pool, True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(
                    claim_index, request_index, sub_index, device_index + 1, in_sub, (0, 0, 0)
                )
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        allocated = self.a.allocated.allocated_devices
        allocating = self.allocating
        check_capacity = self.features.consumable_capacity
        for pool_index in range(start[0], len(self.pools)):
            pool = self.pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            slice_start = start[1] if pool_index == start[0] else 0
            for slice_index in range(slice_start, len(pool.slices)):
                s = pool.slices[slice_index]
                ids = pool.device_ids[slice_index]
                device_start = start[2] if pool_index == start[0] and slice_index == start[1] else 0
                for dev_index in range(device_start, len(s.devices)):
                    device_id = ids[dev_index]
                    if admin:
                        if claim_index in allocating.get(device_id, ()):
                            continue
                    elif device_id in allocated or allocating.get(device_id):  # _in_use, inlined
                        continue
                    device = s.devices[dev_index]
                    if not self._selectable(key, data, s, device):
                        continue
                    if check_capacity and not self._capacity_fits(request, device_id, device, pool):
                        continue
                    undo = self._allocate_device(
                        claim_index, data, device_id, device, s, pool, False, capacity_checked=check_capacity
                    )
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(
                            claim_index, request_index, sub_index, device_index + 1, in_sub,
                            (pool_index, slice_index, dev_index + 1),
                        )  # fmt: skip
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _allocate_device(
        self,
        claim_index: int,
        data: _RequestData,
        device_id: DeviceID,
        device: Device,
        s: ResourceSlice,
        pool: Pool,
        must: bool,
        capacity_checked: bool = False,
    ) -> Callable[[], None] | None:
        """Try ``device`` for the request; the undo function on success, None when it cannot be used.

        ``capacity_checked``: the caller has just found that the device's capacity fits; nothing
        done here before upstream's second check changes the capacity in use, so it is not repeated."""
        request = data.request
        admin = bool(request.admin_access)
        multiple = self.features.consumable_capacity and device.allow_multiple_allocations
        if not multiple and admin and claim_index in self.allocating.get(device_id, ()):
            return None
        if not admin and self._in_use(device_id):
            return None
        if not self.features.partitionable_devices and device.consumes_counters:
            return None
        skip_counters = multiple and (
            device_id in self.a.allocated.aggregated_capacity or device_id in self.allocating_capacity
        )
        base, sub = (data.parent, request.name) if data.parent else (request.name, "")
        undo = _Undo(self, claim_index, device_id, device, pool, base, sub)
        if not skip_counters and device.consumes_counters:
            if not self._take_counters(pool, device):
                return None
            undo.counters = True
        if self.features.device_taints and device.taints and _taint_prevents_allocation(device, request):
            undo()
            return None
        for constraint in self.constraints[claim_index]:
            if not constraint.add(base, sub, device, s.driver):
                undo()
                if must:
                    raise AllocationError(
                        f"claim {self.claims[claim_index].key}, request {request.name}: cannot add device "
                        f"{'/'.join(device_id)} because a claim constraint would not be satisfied"
                    )
                return None
            undo.constraints += 1
        if not multiple:
            self.allocating.setdefault(device_id, set()).add(claim_index)
            undo.allocating = True
        consumed: dict[str, Fraction] | None = None
        share_id = ""
        if self.features.consumable_capacity:
            if not capacity_checked and not self._capacity_fits(request, device_id, device, pool):
                undo()
                return None
            if multiple:
                consumed = consumed_from_request(request.capacity_requests, device)
                share_id = self.a.share_id()
                existed = device_id in self.allocating_capacity
                entry = self.allocating_capacity.setdefault(device_id, {})
                for name, amount in consumed.items():
                    entry[name] = entry.get(name, Fraction(0)) + amount

                def release(
                    entry: dict[str, Fraction] = entry, amounts: dict[str, Fraction] = consumed
                ) -> None:
                    for name, amount in amounts.items():
                        entry[name] -= amount
                    if not existed and not any(entry.values()):
                        self.allocating_capacity.pop(device_id, None)

                undo.release = release
        self.results[claim_index].append(
            _Result(request.name, data.parent, device_id, device, s, data, share_id, consumed or None, admin)
        )
        undo.result = True
        return undo

    # --- counters -------------------------------------------------------------------------------------

    def _available_counters(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        key = (pool.driver, pool.name)
        available = self.a._available_counters.get(key)
        if available is None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s in (*pool.slices, *pool.other_slices):
                for d in s.devices:
                    if not self.a.allocated.is_allocated((s.driver, s.pool, d.name)):
                        continue
                    for consumption in d.consumes_counters:
                        counter_set = available.get(consumption.counter_set, {})
                        for name, amount in consumption.counters.items():
                            if name in counter_set:
                                counter_set[name] -= amount
            self.a._available_counters[key] = available
        return available

    def _take_counters(self, pool: Pool, device: Device) -> bool:
        available = self._available_counters(pool)
        consumed = self.consumed_counters.setdefault((pool.driver, pool.name), {})
        for consumption in device.consumes_counters:
            counter_set = consumed.setdefault(consumption.counter_set, {})
            for name, amount in consumption.counters.items():
                counter_set[name] = counter_set.get(name, Fraction(0)) + amount
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, amount in counters.items():
                if amount < used.get(name, Fraction(0)):
                    self._return_counters(pool, device)
                    return False
        return True

    def _return_counters(self, pool: Pool, device: Device) -> None:
        consumed = self.consumed_counters[(pool.driver, pool.name)]
        for consumption in device.consumes_counters:
            counter_set = consumed[consumption.counter_set]
            for name, amount in consumption.counters.items():
                counter_set[name] -= amount

    # --- results --------------------------------------------------------------------------------------

    def _allocation_result(self, claim_index: int, claim: ResourceClaim) -> dict[str, Any]:
        results_raw = []
        for r in self.results[claim_index]:
            entry: dict[str, Any] = {
                "request": r.request_name(),
                "driver": r.device_id[0],
                "pool": r.device_id[1],
            }
            entry["device"] = r.device_id[2]
            if r.admin_access:
                entry["adminAccess"] = True
            if r.request_data.request.tolerations_raw:
                entry["tolerations"] = [dict(t) for t in r.request_data.request.tolerations_raw]
            if self.features.device_binding_and_status:
                if r.device.binding_conditions:
                    entry["bindingConditions"] = list(r.device.binding_conditions)
                if r.device.binding_failure_conditions:
                    entry["bindingFailureConditions"] = list(r.device.binding_failure_conditions)
            if r.share_id:
                entry["shareID"] = r.share_id
            if r.consumed:
                entry["consumedCapacity"] = {name: _quantity_text(v) for name, v in r.consumed.items()}
            results_raw.append(entry)
        config: list[dict[str, Any]] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for request_index in range(len(claim.requests)):
            data = self.request_data[(claim_index, request_index, 0)]
            if data.parent:
                data = self.request_data[(claim_index, request_index, data.selected_sub_request)]
            device_class = data.device_class
            if device_class is None:
                continue
            known = class_ranges.get(device_class.name)
            if known is not None:
                for i in range(*known):
                    config[i]["requests"].append(data.request_name())
                continue
            begin = len(config)
            for item in device_class.config:
                config.append(
                    {"source": "FromClass", "requests": [data.request_name()], **_device_configuration(item)}
                )
            class_ranges[device_class.name] = (begin, len(config))
        for item in claim.config:
            requests = [str(r) for r in item.get("requests") or []]
            if not requests:
                config.append({"source": "FromClaim", **_device_configuration(item)})
                continue
            for request_index, request in enumerate(claim.requests):
                if request.name in requests:
                    config.append(
                        {"source": "FromClaim", "requests": requests, **_device_configuration(item)}
                    )
                    continue
                data = self.request_data[(claim_index, request_index, 0)]
                if not data.parent:
                    continue
                sub = request.first_available[data.selected_sub_request]
                if f"{request.name}/{sub.name}" in requests:
                    config.append(
                        {"source": "FromClaim", "requests": requests, **_device_configuration(item)}
                    )
        allocation: dict[str, Any] = {"devices": {"results": results_raw}}
        if config:
            allocation["devices"]["config"] = config
        selector = self._node_selector(claim_index)
        if selector is not None:
            allocation["nodeSelector"] = selector
        return allocation

    def _node_selector(self, claim_index: int) -> dict[str, Any] | None:
        """``createNodeSelector``: this node for node-local devices, else the slices' selectors merged."""
        fields: list[dict[str, Any]] = []
        expressions: list[dict[str, Any]] = []
        for r in self.results[claim_index]:
            if r.slice.per_device_node_selection:
                node_name, selector = r.device.node_name, r.device.node_selector_raw
            else:
                node_name, selector = r.slice.node_name, r.slice.node_selector_raw
            if node_name or r.device.binds_to_node:
                return {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [self.node.name]}
                            ]
                        }
                    ]
                }
            if selector is not None:
                terms = selector.get("nodeSelectorTerms") or []
                if len(terms) > 1:
                    raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
                if terms:
                    _add_requirements(terms[0].get("matchFields") or [], fields)
                    _add_requirements(terms[0].get("matchExpressions") or [], expressions)
        if not fields and not expressions:
            return None
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


def _add_requirements(new: list[dict[str, Any]], into: list[dict[str, Any]]) -> None:
    for req in new:
        values = set(req.get("values") or [])
        if not any(
            r.get("key") == req.get("key")
            and r.get("operator") == req.get("operator")
            and set(r.get("values") or []) == values
            for r in into
        ):
            into.append(dict(req))


def _device_configuration(item: Mapping[str, Any]) -> dict[str, Any]:
    """The ``DeviceConfiguration`` part of a class or claim config item (``opaque``)."""
    return {k: v for k, v in item.items() if k not in ("requests", "source")}


def _taint_prevents_allocation(device: Device, request: DeviceSubRequest) -> bool:
    """A NoSchedule or NoExecute taint the request does not tolerate."""
    for taint in device.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            t.tolerates(taint) for t in request.tolerations
        ):
            return True
    return False


def _quantity_text(value: Fraction) -> str:
    """A quantity as the API server would print a plain amount (integers; else milli or decimal)."""
    if value.denominator == 1:
        return str(value.numerator)
    milli = value * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return str(float(value))


@dataclass(frozen=True, slots=True)
class RequestShortfall:
    """Why one request (or subrequest) of a claim cannot be met on a node, in device counts.

    ``requested`` is None for an ``All`` request (every matching device); ``matching`` counts the
    node's devices that the class and request selectors accept, ``free`` those of them not allocated
    to another claim. ``error`` is the allocator's own message when the request is invalid."""

    claim: str
    request: str
    device_class: str
    requested: int | None
    matching: int
    free: int
    error: str = ""

    @property
    def short(self) -> bool:
        """Whether this request alone cannot be met (the claim may still fail on its constraints)."""
        if self.error:
            return True
        if self.requested is None:
            return self.matching == 0 or self.free < self.matching
        return self.free < self.requested


def explain_node(allocator: Allocator, node: Node, claims: Sequence[ResourceClaim]) -> list[RequestShortfall]:
    """Each request of ``claims`` on ``node`` counted with the allocator's own matching (class and
    request CEL selectors, per-device node selection, devices allocated elsewhere): what
    ``allocate`` searched over when it found no solution. Read only; every request is listed."""
    run = _Run(allocator, node, list(claims), None)
    run.pools = allocator.pools_for(node)
    out: list[RequestShortfall] = []
    for claim_index, claim in enumerate(claims):
        for request_index, request in enumerate(claim.requests):
            subs = [request.exactly] if request.exactly is not None else request.first_available
            parent = request.name if request.exactly is None else ""
            for sub_index, sub in enumerate(subs):
                name = f"{parent}/{sub.name}" if parent else sub.name
                key = (claim_index, request_index, sub_index)
                try:
                    data = run._validate_request(claim, sub, parent, key)
                    devices = [
                        ((s.driver, s.pool, d.name), d, s)
                        for pool in run.pools
                        if not (pool.incomplete or pool.invalid)
                        for s in pool.slices
                        for d in s.devices
                    ]
                    matching = [device_id for device_id, d, s in devices if run._selectable(key, data, s, d)]
                except AllocationError as err:
                    out.append(RequestShortfall(claim.key, name, sub.device_class_name, None, 0, 0, str(err)))
                    continue
                free = sum(1 for device_id in matching if sub.admin_access or not run._in_use(device_id))
                requested = None if sub.allocation_mode == ALLOCATION_MODE_ALL else sub.count
                out.append(
                    RequestShortfall(claim.key, name, sub.device_class_name, requested, len(matching), free)
                )
    return out
