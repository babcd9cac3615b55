"""DynamicResources (``plugins/dynamicresources/dynamicresources.go``, v1.36.3): DRA with structured
parameters.

- PreEnqueue: every ResourceClaim of the pod exists (a template's claim once the resourceclaim
  controller made it), is not being deleted, and a generated claim belongs to the pod.
- PreFilter: claims allocated elsewhere and reserved for other pods are "in use"; an allocated
  claim narrows the nodes to its node selector; unallocated claims need existing DeviceClasses
  and get an allocator over every ResourceSlice and the devices already allocated (in flight too).
- Filter: the structured allocator finds devices for the pending claims on the node.
- PostFilter: deallocates a claim that is only in the pod's way ("deallocation of ResourceClaim
  completed"), else says "no new claims to deallocate" (a pod without claims) or "still not
  schedulable". Its reason joins DefaultPreemption's in every FitError, as in kube-scheduler.
- Score: with firstAvailable, nodes where an earlier (preferred) subrequest fits score higher.
- Reserve/Unreserve: the chosen node's allocations are in flight, so no device is handed out twice.
- PreBind: ``status.allocation`` (with the finalizer) and ``status.reservedFor``, one write of a
  claim at a time from the newest version known, re-reading the claim and trying again after a
  write conflict, then waits for devices' binding conditions up to
  ``bindingTimeout``.
- DRAExtendedResource: a pod's extended resources backed by a DeviceClass get a special claim of
  their own (``extended.py``), allocated with the pod's claims and created in PreBind.

Left out, as documented in docs/dra.md: the alpha DRAWorkloadResourceClaims,
DRANodeAllocatableResources and DRADeviceTaintRules.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from app import featuregates, metrics
from app.api.objects import Node, Pod
from app.api.resource import (
    FINALIZER,
    FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
    RESERVED_FOR_MAX_SIZE,
    ConsumerReference,
    ResourceClaim,
    parse_resource_claim,
)
from app.api.selectors import NodeSelector
from app.framework.cycle_state import CycleState, StateData
from app.framework.dra import IN_FLIGHT_ALLOCATION_KEY, ClaimWriteError, DRAStore, retry_on_conflict
from app.framework.events import (
    DEVICE_CLASS,
    NODE,
    POD,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintError,
    HintKeys,
    HintScope,
    PodHintKeys,
    QueueingHint,
    as_pods,
)
from app.framework.interfaces import (
    MAX_NODE_SCORE,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
)
from app.framework.status import Code, NodeToStatus, Status, error, skip, unresolvable
from app.framework.types import NodeInfo
from app.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    FailedOnNode,
    Features,
    RequestShortfall,
    Solution,
    explain_node,
)
from app.plugins.dynamicresources.args import DynamicResourcesArgs
from app.plugins.dynamicresources.cel import CelCache
from app.plugins.dynamicresources.extended import (
    SPECIAL_CLAIM_NAME,
    NodeClaim,
    Unfit,
    find_extended_resource_claim,
    in_memory_claim,
    node_claim,
    pod_scalar_resources,
    resources_needing_dra,
)
from app.plugins.helper.normalize_score import default_normalize_score

NAME = "DynamicResources"
STATE_KEY = NAME

# PostFilter's texts (kube-scheduler's, verbatim).
NO_NEW_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
DEALLOCATION_COMPLETED = "deallocation of ResourceClaim completed"
DELETION_COMPLETED = "deletion of ResourceClaim completed"
STILL_NOT_SCHEDULABLE = "still not schedulable"
RESOURCECLAIM_IN_USE = "resourceclaim in use"
NOT_AVAILABLE_ON_NODE = "resourceclaim not available on the node"
CANNOT_ALLOCATE_ALL_CLAIMS = "cannot allocate all claims"
ERR_CLAIM_NOT_CREATED = "ResourceClaim not created yet"
ERR_API_UNSUPPORTED = "none of the supported fields are set"

BINDING_POLL_SECONDS = 5.0

#: Off-by-default DRA gates whose "on" behaviour needs objects or fields berth does not watch:
#: turning one on is refused at start-up (naming what it needs) rather than silently scheduling as
#: with it off. DRAListTypeAttributes is implemented (CEL and the allocator's constraints);
#: DRAResourcePoolStatus does not touch the scheduler and is accepted.
UNIMPLEMENTED_GATES = {
    "DRADeviceTaintRules": "DeviceTaintRule objects (resource.k8s.io/v1beta2), which berth does not watch",
    "DRANodeAllocatableResources": (
        "node allocatable resources published in ResourceSlices and the pod's "
        "status.nodeAllocatableResourceClaimStatuses, which berth does not read or write"
    ),
    "DRAWorkloadResourceClaims": (
        "claims reserved for PodGroups (scheduling.k8s.io/v1alpha2), which berth does not watch"
    ),
}


_FEATURES: dict[Features, Features] = {}


def allocator_features() -> Features:
    """``AllocatorFeatures``: the allocator's features from the process's gates. Equal features are
    one object, so that the pool cache (kept per features) recognises them by identity."""
    on = featuregates.DEFAULT.enabled
    features = Features(
        admin_access=on("DRAAdminAccess"),
        prioritized_list=on("DRAPrioritizedList"),
        partitionable_devices=on("DRAPartitionableDevices"),
        device_taints=on("DRADeviceTaints"),
        device_binding_and_status=on("DRADeviceBindingConditions") and on("DRAResourceClaimDeviceStatus"),
        consumable_capacity=on("DRAConsumableCapacity"),
        list_type_attributes=on("DRAListTypeAttributes"),
    )
    return _FEATURES.setdefault(features, features)


@dataclass(frozen=True, slots=True)
class NodeExplanation:
    """Why the pod's claims do not fit one node: PreFilter's or the extended-resource check's
    message, allocated claims whose devices the node cannot reach, and every pending request's
    device counts there (:class:`RequestShortfall`)."""

    message: str
    unreachable_claims: list[str]
    requests: list[RequestShortfall]


class ClaimLookupError(Exception):
    """A claim of the pod is missing, being deleted or not the pod's (kube's error text)."""


@dataclass(slots=True)
class _ClaimInfo:
    """``informationForClaim``."""

    available_on_nodes: NodeSelector | None = None
    allocation: dict[str, Any] | None = None  # the allocation chosen in Reserve


class _State(StateData):
    """``stateData``: shared by the clones of one cycle, as in kube (Clone returns itself)."""

    def __init__(self) -> None:
        # The pod's claims, then the special claim for its extended resources if it has one.
        self.claims: list[ResourceClaim] = []
        self.user_claims = 0
        self.allocator: Allocator | None = None
        self.infos: list[_ClaimInfo] = []
        self.unavailable_claims: set[int] = set()
        self.node_allocations: dict[str, Solution] = {}
        self.lock = threading.Lock()
        # DRAExtendedResource: the pod's scalar requests, the special claim's UID before PreBind
        # creates it, its variant per node, and those variants by the resources they request.
        self.scalar_resources: dict[str, int] = {}
        self.initial_extended_uid = ""
        self.node_claims: dict[str, NodeClaim] = {}
        self.claim_variants: dict[frozenset[str], NodeClaim] = {}
        # The claims Filter allocates on every node when the pod has no special claim (which
        # varies by node): fixed from PreFilter to PreBind, so listed once, not per node.
        self.user_claims_to_allocate: list[ResourceClaim] | None = None
        # What Filter checks per node, listed once in PreFilter (the claims are fixed until
        # PreBind): the allocated claims' node selectors by claim index, the allocated claims whose
        # devices have binding conditions (the others are always ready), and the special claim.
        self.node_selectors: list[tuple[int, NodeSelector]] = []
        self.binding_checks: list[int] = []
        self.extended: ResourceClaim | None = None
        # Nothing to allocate, no binding conditions, no special claim: the allocated claims' node
        # selectors alone decide Filter (the pods sharing a claim another pod allocated).
        self.selectors_only = False
        # Nothing but claims to allocate (no allocated claim, no special claim): the allocator alone
        # decides Filter.
        self.allocates_only = False
        self._not_available: Status | None = None

    def not_available(self) -> Status:
        """Filter's "not available on the node" verdict: one object for every node of the cycle
        that gets it (the framework only reads it and marks it with the plugin's name), made when
        the first node does."""
        if self._not_available is None:
            self._not_available = unresolvable(NOT_AVAILABLE_ON_NODE)
        return self._not_available

    def to_allocate(self) -> list[tuple[int, ResourceClaim]]:
        return [(i, c) for i, c in enumerate(self.claims) if c.allocation is None]

    @property
    def extended_claim(self) -> ResourceClaim | None:
        """``claimStore.extendedResourceClaim``."""
        return self.claims[self.user_claims] if len(self.claims) > self.user_claims else None


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
):
    """Allocates devices for a pod's ResourceClaims with the structured allocator."""

    name: ClassVar[str] = NAME
    args_type: ClassVar[Any] = DynamicResourcesArgs
    normalizes: ClassVar[bool] = True

    def __init__(
        self, args: DynamicResourcesArgs | None, handle: Handle, store: DRAStore | None = None
    ) -> None:
        # DynamicResourceAllocation off (its default before v1.34): kube's plugin is built with
        # ``enabled`` false and every extension point returns at once, claims or not.
        self.enabled = featuregates.DEFAULT.enabled("DynamicResourceAllocation")
        for gate, needs in UNIMPLEMENTED_GATES.items():
            if self.enabled and featuregates.DEFAULT.enabled(gate):
                raise ValueError(
                    f"feature gate {gate} is enabled, but berth implements DynamicResources as "
                    f"kube-scheduler v1.36.3 runs it with {gate} off (its default): with it on "
                    f"kube-scheduler uses {needs}"
                )
        super().__init__(args, handle)
        self.args = args or DynamicResourcesArgs()
        # The engine's ClusterObjects carries the DRA store; a handle without one (unit tests of other
        # plugins) sees an empty store, so pods without claims are unaffected.
        self.store: DRAStore = store or getattr(handle.objects, "dra", None) or DRAStore()
        self.cel_cache = CelCache(featuregates.DEFAULT.enabled("DRAListTypeAttributes"))
        self.prioritized_list = featuregates.DEFAULT.enabled("DRAPrioritizedList")
        self.binding_conditions = featuregates.DEFAULT.enabled(
            "DRADeviceBindingConditions"
        ) and featuregates.DEFAULT.enabled("DRAResourceClaimDeviceStatus")
        self.filter_timeout = (
            self.args.filter_timeout if featuregates.DEFAULT.enabled("DRASchedulerFilterTimeout") else None
        )
        self.binding_timeout = self.args.binding_timeout or 600.0

    # --- claims of a pod ------------------------------------------------------------------------------

    def pod_claims(self, pod: Pod) -> list[tuple[str, ResourceClaim]]:
        """``foreachPodResourceClaim``: the pod's claims (pod claim name, claim); ClaimLookupError."""
        out = []
        for ref in pod.resource_claims.claims:
            must_check_owner = False
            if ref.resource_claim_name:
                claim_name: str | None = ref.resource_claim_name
            elif ref.resource_claim_template_name:
                found, claim_name = pod.resource_claims.generated_name(ref.name)
                if not found:
                    raise ClaimLookupError(f'pod "{pod.namespace}/{pod.name}": {ERR_CLAIM_NOT_CREATED}')
                must_check_owner = True
            else:
                raise ClaimLookupError(
                    f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{ref.name}": {ERR_API_UNSUPPORTED}'
                )
            if not claim_name:
                continue  # the controller decided the pod needs no claim for this entry
            claim = self.store.get_claim(pod.namespace, claim_name)
            if claim is None:
                raise ClaimLookupError(f'could not find ResourceClaim "{pod.namespace}/{claim_name}"')
            if claim.deletion_timestamp:
                raise ClaimLookupError(f'resourceclaim "{claim.name}" is being deleted')
            if must_check_owner:
                if claim.namespace != pod.namespace:
                    raise ClaimLookupError(
                        f"ResourceClaim {claim.key} is not in the same namespace as Pod {pod.key}"
                    )
                if claim.controller_uid != pod.uid:
                    raise ClaimLookupError(
                        f"ResourceClaim {claim.key} was not created for Pod {pod.key} (Pod is not owner)"
                    )
            out.append((ref.name, claim))
        return out

    # --- PreEnqueue ---------------------------------------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Keep the pod out of the active queue until all its claims exist."""
        if not self.enabled or not pod.resource_claims.claims:
            return None
        try:
            self.pod_claims(pod)
        except ClaimLookupError as err:
            return unresolvable(str(err))
        return None

    # --- events ---------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """kube's registrations with QueueingHints on (node taints are NodeUnschedulable's business);
        none when the plugin is disabled."""
        if not self.enabled:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_claim_change,
                HintKeys(claim_hint_keys, claim_event_key),
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ]

    def is_schedulable_after_claim_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """A claim of the pod created or changed in status, or any claim deallocated."""
        for obj in (old, new):
            if obj is not None and not isinstance(obj, ResourceClaim):
                raise HintError(f"expected a ResourceClaim, got {type(obj).__name__}")
        assert isinstance(new, ResourceClaim)
        original = old if isinstance(old, ResourceClaim) else None
        deallocated = original is not None and original.allocation is not None and new.allocation is None
        if not deallocated and new.key not in claim_hint_keys(pod).keys:
            # pod_claims finds a claim under the pod's namespace and the names the pod gives: one
            # not named there is not the pod's (and a pod whose names do not all resolve has no
            # claim at all), so the answer is QueueSkip whether the pod's claims exist or not.
            return QueueingHint.QUEUE_SKIP
        try:
            uses_claim = any(c.uid == new.uid for _, c in self.pod_claims(pod))
        except ClaimLookupError:
            return QueueingHint.QUEUE_SKIP
        if original is not None and original.allocation is not None and new.allocation is None:
            return QueueingHint.QUEUE  # devices were freed
        if not uses_claim:
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        if (original.raw.get("status") or {}) == (new.raw.get("status") or {}):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """The pod itself got its generated claims recorded."""
        _, modified = as_pods(None, new)
        if modified is None or modified.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        try:
            self.pod_claims(modified)
        except ClaimLookupError:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # --- PreFilter -------------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Collect the pod's claims and prepare the allocator for those not allocated yet."""
        if not self.enabled:
            return None, skip()
        s = _State()
        state.write(STATE_KEY, s)
        try:
            claims = [claim for _, claim in self.pod_claims(pod)] if pod.resource_claims.claims else []
        except ClaimLookupError as err:
            return None, unresolvable(str(err))
        s.user_claims = len(claims)
        extended = self._pre_filter_extended_resources(pod, s)
        if extended is not None:
            claims.append(extended)
            s.initial_extended_uid = extended.uid
        if not claims:
            return None, skip()
        s.infos = [_ClaimInfo() for _ in claims]
        to_allocate = 0
        for index, claim in enumerate(claims):
            if (
                claim.allocation is not None
                and len(claim.reserved_for) >= RESERVED_FOR_MAX_SIZE
                and not any(r.uid == pod.uid for r in claim.reserved_for)
            ):
                return None, unresolvable(RESOURCECLAIM_IN_USE)
            if claim.allocation is not None:
                if claim.allocation.node_selector is not None:
                    s.infos[index].available_on_nodes = claim.allocation.node_selector
                continue
            to_allocate += 1
            if self.store.pending_allocation(claim.uid) is not None:
                return None, unresolvable(f"resource claim {claim.key} is in the process of being allocated")
            if claim is extended:
                continue  # its requests are made per node in Filter
            for request in claim.requests:
                if request.exactly is not None:
                    status = self._validate_device_class(request.exactly.device_class_name, request.name)
                elif request.first_available:
                    if not self.prioritized_list:
                        return None, unresolvable(
                            f"resource claim {claim.key}, request {request.name}: has subrequests, "
                            "but the DRAPrioritizedList feature is disabled"
                        )
                    status = None
                    for sub in request.first_available:
                        status = status or self._validate_device_class(
                            sub.device_class_name, f"{request.name}/{sub.name}"
                        )
                else:
                    status = unresolvable(
                        f"resource claim {claim.key}, request {request.name}: unknown request type"
                    )
                if status is not None:
                    return None, status
        if to_allocate:
            slices, pool_cache = self.store.slices_and_pool_cache()
            s.allocator = Allocator(
                allocator_features(),
                self.store.allocated_state(),
                self.store.get_class,
                slices,
                self.cel_cache,
                pool_cache=pool_cache,
            )
        s.claims = claims
        s.extended = extended
        s.node_selectors = [
            (index, info.available_on_nodes)
            for index, info in enumerate(s.infos)
            if info.available_on_nodes is not None
        ]
        if self.binding_conditions:
            # claim_ready_for_binding is true for a claim none of whose devices has binding
            # conditions, so Filter only asks about the others.
            s.binding_checks = [
                index
                for index, claim in enumerate(claims)
                if claim.allocation is not None
                and any(r.binding_conditions for r in claim.allocation.results)
            ]
        if extended is None:
            s.user_claims_to_allocate = [c for _, c in s.to_allocate()]
        # Filter's two common cases, whose per-node setup is left out: only node selectors to
        # check (the allocated claims of the pods sharing them), or only claims to allocate.
        checks = extended is not None or bool(s.binding_checks)
        s.selectors_only = s.allocator is None and not checks
        s.allocates_only = s.allocator is not None and not checks and not s.node_selectors
        return None, None

    def _pre_filter_extended_resources(self, pod: Pod, s: _State) -> ResourceClaim | None:
        """``preFilterExtendedResources``: the claim an earlier cycle created for the pod's extended
        resources backed by DeviceClasses, else a new in-memory one; None when it needs none."""
        if not self.store.maps_extended_resources():
            return None  # DRAExtendedResource off, or no DeviceClass at all
        scalars = pod_scalar_resources(pod, self.store.class_for_extended_resource)
        if scalars is None:
            return None
        s.scalar_resources = scalars
        return find_extended_resource_claim(pod, self.store.list_claims()) or in_memory_claim(pod)

    def _filter_extended_resources(self, s: _State, pod: Pod, node_info: NodeInfo) -> NodeClaim | None:
        """``filterExtendedResources``: the special claim as this node needs it (None when there is
        nothing to allocate through DRA here); raises Unfit."""
        claim = s.extended_claim
        if claim is None:
            return None
        resolve = self.store.class_for_extended_resource
        needed = resources_needing_dra(claim, s.scalar_resources, node_info, resolve)
        if s.user_claims == 0 and not needed:
            return None  # a device plugin provides them all; NodeResourcesFit checked the amounts
        if claim.allocation is not None:
            return None
        key = frozenset(needed)
        with s.lock:
            variant = s.claim_variants.get(key)
            if variant is None:
                variant = s.claim_variants[key] = node_claim(pod, claim, needed, resolve)
        return variant

    def _validate_device_class(self, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return error(f"request {request_name}: unsupported request type")
        if self.store.get_class(class_name) is None:
            return unresolvable(f"request {request_name}: device class {class_name} does not exist")
        return None

    # --- Filter ------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Allocate the pending claims' devices on this node; check the allocated claims fit it."""
        if not self.enabled:
            return None
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error("not found")
        if not s.claims:
            return None
        node = node_info.node
        if node is None:
            return error("node not found")
        if s.selectors_only:
            return self._filter_node_selectors(s, node.name, node.labels)
        if s.allocates_only:
            return self._filter_allocations(s, node)
        extended: NodeClaim | None = None
        if s.extended is not None:
            try:
                extended = self._filter_extended_resources(s, pod, node_info)
            except Unfit as err:
                return unresolvable(str(err))
            if extended is None and s.user_claims == 0:
                return None
        unavailable: list[int] = []
        # The claims whose devices the node cannot reach, then those of the others that their
        # binding conditions make unusable (PreFilter listed both kinds; the rest need nothing
        # here). PostFilter reads the indices as a set, so the order does not matter.
        for index, selector in s.node_selectors:
            if not selector.matches(node.name, node.labels):
                unavailable.append(index)
        for index in s.binding_checks:
            if index in unavailable:
                continue
            claim = s.claims[index]
            try:
                ready = claim_ready_for_binding(claim)
            except ClaimWriteError:
                unavailable.append(index)
                continue
            if not ready and self._claim_timed_out(claim):
                unavailable.append(index)
        allocations: Solution | None = None
        if s.allocator is not None:
            claims_to_allocate = s.user_claims_to_allocate
            if claims_to_allocate is None:
                special = s.extended_claim
                claims_to_allocate = [
                    extended.claim if c is special and extended is not None else c for _, c in s.to_allocate()
                ]
            allocations, status = self._allocate(s.allocator, node, claims_to_allocate)
            if status is not None:
                return status
        if unavailable:
            with s.lock:
                s.unavailable_claims.update(unavailable)
            return s.not_available()
        if allocations is not None:
            with s.lock:
                s.node_allocations[node.name] = allocations
                if extended is not None:
                    s.node_claims[node.name] = extended
        return None

    def _allocate(
        self, allocator: Allocator, node: Node, claims: list[ResourceClaim]
    ) -> tuple[Solution | None, Status | None]:
        """The allocator's devices for ``claims`` on ``node`` and no status, or no devices and
        Filter's status when they do not fit there or the allocator fails (kube's texts)."""
        deadline = time.monotonic() + self.filter_timeout if self.filter_timeout else None
        try:
            allocations = allocator.allocate(node, claims, deadline)
        except AllocationTimeout:
            return None, error(f"node {node.name}: timed out trying to allocate devices")
        except FailedOnNode as err:
            return None, unresolvable(str(err))
        except AllocationError as err:
            return None, error(str(err))
        if allocations is None or len(allocations) != len(claims):
            return None, unresolvable(CANNOT_ALLOCATE_ALL_CLAIMS)
        return allocations, None

    def _filter_allocations(self, s: _State, node: Node) -> Status | None:
        """Filter when the allocator alone decides (``s.allocates_only``): the general path's
        verdict and the node's allocations kept for Reserve, without its setup per node."""
        assert s.allocator is not None and s.user_claims_to_allocate is not None
        allocations, status = self._allocate(s.allocator, node, s.user_claims_to_allocate)
        if allocations is not None:
            with s.lock:
                s.node_allocations[node.name] = allocations
        return status

    @staticmethod
    def _filter_node_selectors(s: _State, node_name: str, labels: Mapping[str, str]) -> Status | None:
        """Filter when only the allocated claims' node selectors decide (``s.selectors_only``): the
        verdicts of the general path (no allocator, nothing else to check), without its setup per
        node. The claims a node rejects are recorded for PostFilter once each (the set only grows)."""
        rejected = False
        for index, selector in s.node_selectors:
            if not selector.matches(node_name, labels):
                rejected = True
                if index not in s.unavailable_claims:
                    with s.lock:
                        s.unavailable_claims.add(index)
        return s.not_available() if rejected else None

    def explainer(self, pod: Pod, nodes: Sequence[NodeInfo]) -> Callable[[NodeInfo], NodeExplanation]:
        """Why Filter rejects a node, per claim and request, for explanations (read only).

        PreFilter runs once on a fresh cycle state, as the attempt ran it; each node then gets the
        allocated claims whose devices it cannot reach and the allocator's device counts for the
        pending ones (:func:`explain_node`). Nothing is reserved or written."""
        state = CycleState()
        _, status = self.pre_filter(state, pod, nodes)
        s = state.get(STATE_KEY)

        def explain(node_info: NodeInfo) -> NodeExplanation:
            node = node_info.node
            if status is not None or not isinstance(s, _State) or node is None:
                return NodeExplanation(status.message() if status is not None else "", [], [])
            try:
                extended = self._filter_extended_resources(s, pod, node_info)
            except Unfit as err:
                return NodeExplanation(str(err), [], [])
            unreachable = [
                claim.key
                for index, claim in enumerate(s.claims)
                if (selector := s.infos[index].available_on_nodes) is not None
                and not selector.matches(node.name, node.labels)
            ]
            shortfalls: list[RequestShortfall] = []
            if s.allocator is not None:
                special = s.extended_claim
                pending = [
                    extended.claim if c is special and extended is not None else c for _, c in s.to_allocate()
                ]
                shortfalls = explain_node(s.allocator, node, pending)
            return NodeExplanation("", unreachable, shortfalls)

        return explain

    def _claim_timed_out(self, claim: ResourceClaim) -> bool:
        """``isClaimTimeout``: allocated longer ago than bindingTimeout, binding conditions unmet."""
        allocation = claim.allocation
        if allocation is None or not allocation.allocation_timestamp:
            return False
        if not any(r.binding_conditions for r in allocation.results):
            return False
        return parse_time(allocation.allocation_timestamp) + self.binding_timeout < time.time()

    # --- PostFilter --------------------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Deallocate a claim only this pod holds and that no node could use (kube's texts)."""
        if not self.enabled:
            return None, Status(Code.UNSCHEDULABLE, "plugin disabled")
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            # PreFilter never ran (an earlier PreFilter rejected the pod): kube's ErrNotFound.
            return None, Status(Code.ERROR, "not found")
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE, NO_NEW_CLAIMS_TO_DEALLOCATE)
        extended = s.extended_claim
        for index in sorted(s.unavailable_claims):
            claim = s.claims[index]
            if claim is extended:
                if claim.name != SPECIAL_CLAIM_NAME:
                    break  # deleted below
                continue
            reserved = claim.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                status = {k: v for k, v in (claim.raw.get("status") or {}).items()}
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                try:
                    self.store.writer.update_status(claim, status)
                except ClaimWriteError as err:
                    return None, Status(Code.ERROR, str(err))
                return None, Status(Code.UNSCHEDULABLE, DEALLOCATION_COMPLETED)
        if extended is not None and extended.name != SPECIAL_CLAIM_NAME:
            # The claim an earlier cycle created is stale: delete it and start anew.
            try:
                self.store.writer.delete(extended)
            except ClaimWriteError as err:
                return None, Status(Code.ERROR, str(err))
            return None, Status(Code.UNSCHEDULABLE, DELETION_COMPLETED)
        return None, Status(Code.UNSCHEDULABLE, STILL_NOT_SCHEDULABLE)

    # --- PreScore / Score --------------------------------------------------------------------------------

    # kube-scheduler's DynamicResources has no PreScore: its Score runs for every pod, claims or not,
    # and scores 0 without firstAvailable subrequests, so explanations list it with 0 for such pods.

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` per node; all zero, without a per-node call, when nothing can score."""
        s = state.get(STATE_KEY)
        if (
            not self.enabled
            or not self.prioritized_list
            or not isinstance(s, _State)
            or not any(r.first_available for c in s.claims for r in c.requests)
        ):
            return [0] * len(nodes)
        score = self.score
        return [score(state, pod, n) for n in nodes]

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """``computeScore``: 8 - index of each chosen subrequest, summed over the claims."""
        s = state.read(STATE_KEY)
        node = node_info.node
        solution = s.node_allocations.get(node.name) if node is not None else None
        if solution is None:
            return 0
        score = 0
        pending = iter(solution.allocations())
        for claim in s.claims:
            allocation = claim.allocation.raw if claim.allocation is not None else next(pending)
            chosen = {
                str(r.get("request"))
                for r in (allocation.get("devices") or {}).get("results") or []
                if "/" in str(r.get("request"))
            }
            for request in claim.requests:
                for i, sub in enumerate(request.first_available):
                    if f"{request.name}/{sub.name}" in chosen:
                        score += FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE - i
        return score

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        """``DefaultNormalizeScore(MaxNodeScore, false)``."""
        if not self.enabled:
            return None
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # --- Reserve / Unreserve -------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Mark the node's allocations in flight so that no other pod gets these devices."""
        if not self.enabled:
            return None
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error("not found")
        to_allocate = s.to_allocate()
        if not to_allocate or s.allocator is None:
            return None
        solution = s.node_allocations.get(node_name)
        if not solution:
            if all(c is s.extended_claim for _, c in to_allocate):
                return None  # only extended resources, all from the node's device plugins
            return error("claim allocation not found for node")
        allocations = solution.allocations()
        if len(allocations) != len(to_allocate):
            return error(
                f"internal error, have {len(allocations)} allocations, {len(to_allocate)} claims to allocate, "
                f"want {len(to_allocate)} claims"
            )
        special = s.extended_claim
        shared = False  # another pod may wait for one of these claims
        for (index, claim), allocation in zip(to_allocate, allocations, strict=True):
            s.infos[index].allocation = allocation
            if claim is special:
                claim = s.node_claims[node_name].claim
            finalizers = claim.finalizers if FINALIZER in claim.finalizers else [*claim.finalizers, FINALIZER]
            raw = dict(claim.raw)
            raw["metadata"] = {**dict(claim.raw.get("metadata") or {}), "finalizers": finalizers}
            raw["status"] = {**dict(claim.raw.get("status") or {}), "allocation": allocation}
            self.store.signal_pending_allocation(parse_resource_claim(raw))
            shared = shared or (claim is not special and claim.controller_uid != pod.uid)
        if shared:
            state.write(IN_FLIGHT_ALLOCATION_KEY, True)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Release the in-flight allocations and any reservation made for this pod."""
        if not self.enabled:
            return
        state.delete(IN_FLIGHT_ALLOCATION_KEY)
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or not s.claims:
            return
        for claim in s.claims[: s.user_claims]:
            if self.store.remove_pending_allocation(claim.uid):
                self.store.restore(claim.namespace, claim.name)
            current = self.store.get_claim(claim.namespace, claim.name) or claim
            if current.allocation is not None and any(r.uid == pod.uid for r in current.reserved_for):
                status = dict(current.raw.get("status") or {})
                status["reservedFor"] = [r.to_dict() for r in current.reserved_for if r.uid != pod.uid]
                # kube logs a failure and goes on: the claim controller cleans up stale reservations.
                with contextlib.suppress(ClaimWriteError):
                    self.store.writer.update_status(current, status)
        extended = s.extended_claim
        if extended is None:
            return
        if self.store.remove_pending_allocation(s.initial_extended_uid):
            self.store.restore(extended.namespace, extended.name)
        if extended.name != SPECIAL_CLAIM_NAME:
            # PreBind created it: delete it so that it does not linger (kube logs a failure).
            with contextlib.suppress(ClaimWriteError):
                self.store.writer.delete(extended)

    # --- PreBind --------------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBind has work when the pod has claims (to allocate, reserve or just check)."""
        if not self.enabled:
            return skip()
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error("not found")
        return None if s.claims else skip()

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Write each claim's allocation and the pod's reservation; wait for binding conditions."""
        if not self.enabled:
            return None
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error("not found")
        if not s.claims:
            return None
        for index, claim in enumerate(s.claims):
            if any(r.uid == pod.uid for r in claim.reserved_for):
                continue
            try:
                s.claims[index] = self._bind_claim(s, index, pod, node_name)
            except ClaimWriteError as err:
                return error(str(err))
        if not self.binding_conditions or not _has_binding_conditions(s.claims):
            return None
        return self._wait_for_binding_conditions(s)

    def _bind_claim(self, s: _State, index: int, pod: Pod, node_name: str) -> ResourceClaim:
        """``bindClaim``: record the allocation from Reserve (finalizer first) and the pod's
        reservation; a write conflict re-reads the claim and tries again (``retry.DefaultRetry``).
        Writes of one claim take turns and start from the newest version the store knows (fewer
        requests than kube, same outcome: docs/dra.md, "One write per shared claim at a time")."""
        claim = s.claims[index]
        allocation = s.infos[index].allocation
        pending_uid = claim.uid
        extended = index == s.user_claims
        if extended and allocation is None and not claim.requests:
            return claim  # extended resources from device plugins: nothing to write
        try:
            if extended and claim.name == SPECIAL_CLAIM_NAME:
                claim = self._create_extended_resource_claim(s, node_name)
                s.claims[index] = claim  # Unreserve deletes it if binding fails from here on

            # One write of a claim at a time (the pods sharing it bind concurrently), each from the
            # newest version berth knows: kube starts from PreFilter's copy, and when a sharer wrote
            # the claim meanwhile its update conflicts, re-reads the claim and makes this write.
            with self.store.claim_write_turn(claim.uid):
                current = self.store.newest_claim(claim)

                def attempt(refresh: bool) -> ResourceClaim:
                    nonlocal current
                    if refresh:
                        try:
                            current = self.store.writer.get(claim.namespace, claim.name)
                        except ClaimWriteError as err:
                            raise ClaimWriteError(
                                f"get updated claim {claim.key} after conflict: {err}"
                            ) from None
                    return self._write_claim(current, allocation, pod)

                updated = retry_on_conflict(attempt)
                self.store.assume(updated)
            if extended:
                self._record_extended_resource_claim(s, pod, updated, node_name)
            return updated
        finally:
            if allocation is not None:
                self.store.remove_pending_allocation(pending_uid)

    def _write_claim(
        self, current: ResourceClaim, allocation: dict[str, Any] | None, pod: Pod
    ) -> ResourceClaim:
        """One try of ``bindClaim``'s update against the claim as last read."""
        if current.deletion_timestamp:
            raise ClaimWriteError(f"claim {current.key} got deleted in the meantime")
        status = dict(current.raw.get("status") or {})
        finalizers = None
        if allocation is not None:
            if current.allocation is not None:
                raise ClaimWriteError(f"claim {current.key} got allocated elsewhere in the meantime")
            if FINALIZER not in current.finalizers:
                finalizers = [*current.finalizers, FINALIZER]
            status["allocation"] = dict(allocation)
        reference = ConsumerReference("", "pods", pod.name, pod.uid)
        status["reservedFor"] = [*(status.get("reservedFor") or []), reference.to_dict()]
        if self.binding_conditions:
            if not status.get("allocation"):
                raise ClaimWriteError(f"claim {current.key} got deallocated elsewhere in the meantime")
            if not status["allocation"].get("allocationTimestamp"):
                status["allocation"] = {
                    **status["allocation"],
                    "allocationTimestamp": format_time(time.time()),
                }
        try:
            return self.store.writer.update_status(current, status, finalizers)
        except ClaimWriteError as err:
            what = "add allocation and reservation to" if allocation is not None else "add reservation to"
            raise ClaimWriteError(f"{what} claim {current.key}: {err}", conflict=err.conflict) from None

    def _create_extended_resource_claim(self, s: _State, node_name: str) -> ResourceClaim:
        """``createExtendedResourceClaimInAPI``: the node's variant of the special claim, named by
        the API server."""
        variant = s.node_claims.get(node_name)
        if variant is None:
            raise ClaimWriteError(f"extended resource claim not found for node {node_name}")
        raw = {key: value for key, value in variant.claim.raw.items() if key != "status"}
        meta = {k: v for k, v in dict(raw.get("metadata") or {}).items() if k not in ("name", "uid")}
        raw["metadata"] = meta
        try:
            created = self.store.writer.create(raw)
        except ClaimWriteError as err:
            metrics.RESOURCE_CLAIM_CREATES.labels("failure").inc()
            namespace = meta.get("namespace", "")
            raise ClaimWriteError(f"create claim for extended resources {namespace}/: {err}") from None
        metrics.RESOURCE_CLAIM_CREATES.labels("success").inc()
        return created

    def _record_extended_resource_claim(
        self, s: _State, pod: Pod, claim: ResourceClaim, node_name: str
    ) -> None:
        """``patchPodExtendedResourceClaimStatus``."""
        variant = s.node_claims.get(node_name)
        mappings = variant.mappings if variant is not None else []
        if not mappings:
            raise ClaimWriteError(
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus"
            )
        self.store.writer.record_extended_resource_claim(
            pod, {"requestMappings": mappings, "resourceClaimName": claim.name}
        )

    def _wait_for_binding_conditions(self, s: _State) -> Status | None:
        """Poll the claims until every device's binding conditions are met (or failed, or timed out)."""
        deadline = time.monotonic() + self.binding_timeout
        while True:
            try:
                ready = True
                for index, claim in enumerate(s.claims):
                    current = self.store.get_claim(claim.namespace, claim.name) or claim
                    s.claims[index] = current
                    if not claim_ready_for_binding(current):
                        if self._claim_timed_out(current):
                            return error(f"device binding timeout: claim={current.name}")
                        ready = False
                if ready:
                    return None
            except ClaimWriteError as err:
                return error(str(err))
            if time.monotonic() >= deadline:
                return error("device binding timeout: context deadline exceeded")
            time.sleep(min(BINDING_POLL_SECONDS, max(0.0, deadline - time.monotonic())))


def claim_hint_keys(pod: Pod) -> PodHintKeys:
    """The claims whose events may get anything but QueueSkip from
    :meth:`DynamicResources.is_schedulable_after_claim_change` for ``pod``: the claims it names (in
    its namespace, directly or as the claim its status records for a template entry, the only
    way :meth:`DynamicResources.pod_claims` finds one), and deallocations of any claim unless the pod's claims cannot all be
    resolved whatever the store holds (a template entry without its ``resourceClaimStatuses``
    entry, or an entry naming neither a claim nor a template): then ``pod_claims`` raises and the
    hint answers QueueSkip to every claim event, so only an update of the pod can help it."""
    namespace = pod.namespace
    keys: set[str] = set()
    for ref in pod.resource_claims.claims:
        if ref.resource_claim_name:
            keys.add(f"{namespace}/{ref.resource_claim_name}")
            continue
        if not ref.resource_claim_template_name:
            return PodHintKeys(frozenset(), unkeyed=False)
        found, claim_name = pod.resource_claims.generated_name(ref.name)
        if not found:
            return PodHintKeys(frozenset(), unkeyed=False)
        if claim_name:
            keys.add(f"{namespace}/{claim_name}")
    return PodHintKeys(frozenset(keys))


def claim_event_key(old: object, new: object) -> str | HintScope:
    """Which claim a ResourceClaim event is about, for :func:`claim_hint_keys`: a deallocation may
    help any pod whose claims resolve; objects the hint cannot read make it raise (Queue) for every pod."""
    if not isinstance(new, ResourceClaim) or (old is not None and not isinstance(old, ResourceClaim)):
        return HintScope.EVERY_POD
    if old is not None and old.allocation is not None and new.allocation is None:
        return HintScope.UNKEYED
    return new.key


def _has_binding_conditions(claims: list[ResourceClaim]) -> bool:
    return any(r.binding_conditions for c in claims if c.allocation is not None for r in c.allocation.results)


def claim_ready_for_binding(claim: ResourceClaim) -> bool:
    """``isClaimReadyForBinding``: every device's binding conditions true; a true failure
    condition raises ClaimWriteError with kube's "device binding failed" text."""
    if claim.allocation is None:
        return False
    for result in claim.allocation.results:
        if not result.binding_conditions:
            continue
        device_status = next(
            (
                d
                for d in claim.devices_status
                if d.get("device") == result.device
                and d.get("driver") == result.driver
                and d.get("pool") == result.pool
            ),
            None,
        )
        if device_status is None:
            return False
        conditions = {c.get("type"): c for c in device_status.get("conditions") or [] if isinstance(c, dict)}
        for name in result.binding_failure_conditions:
            cond = conditions.get(name)
            if cond is not None and cond.get("status") == "True":
                raise ClaimWriteError(
                    f"device binding failed: claim={claim.name}, reason={cond.get('reason', '')}, "
                    f"message={str(cond.get('message', ''))!r}".replace("'", '"')
                )
        for name in result.binding_conditions:
            cond = conditions.get(name)
            if cond is None or cond.get("status") != "True":
                return False
    return True


def parse_time(text: str) -> float:
    """An RFC 3339 timestamp in seconds since the epoch."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def format_time(seconds: float) -> str:
    """``metav1.Time`` as the API server writes it (seconds, UTC)."""
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
