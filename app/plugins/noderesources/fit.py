"""NodeResourcesFit: does the node have room for the pod's requests, and how full would it be (``fit.go``).

With DRAExtendedResource (on by default), an extended resource the node's allocatable lacks and a
DeviceClass backs is left to DynamicResources, which allocates devices for it.

Not ported: the SidecarContainers / PodLevelResources feature switches (both always on in v1.36),
pod signing and placement scoring.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app import featuregates
from app.api.objects import Node, Pod
from app.api.resource import RESOURCE_DEVICE_CLASS_PREFIX, DeviceClass
from app.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource, pod_requests
from app.api.validation import is_extended_resource_name, raise_errors
from app.framework.cycle_state import CycleState, StateData
from app.framework.dra import DRAStore
from app.framework.events import (
    DEVICE_CLASS,
    NODE,
    NODE_ADD_TAINT_LABEL,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintError,
    QueueingHint,
    as_nodes,
    as_pods,
    node_actions,
)
from app.framework.interfaces import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginError,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, Resource, same_request_spec
from app.plugins.dynamicresources.cel import CelCache
from app.plugins.noderesources.args import NodeResourcesFitArgs
from app.plugins.noderesources.dra_scoring import DRAScoreState, dra_score_state
from app.plugins.noderesources.resource_allocation import ResourceAllocationScorer

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT_CPU = "Insufficient cpu"
REASON_INSUFFICIENT_MEMORY = "Insufficient memory"
REASON_INSUFFICIENT_EPHEMERAL_STORAGE = "Insufficient ephemeral-storage"

DeviceClassResolver = Callable[[str], DeviceClass | None]
"""``DeviceClassResolver.GetDeviceClass``: the DeviceClass backing an extended resource, or None."""


@dataclass(slots=True)
class InsufficientResource:
    """A resource the node lacks for the pod (``InsufficientResource``).

    ``unresolvable`` means the request exceeds the node's allocatable, so no preemption can help.
    """

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


class PreFilterState(StateData):
    """The pod's request as Filter compares it, computed once per attempt.

    ``scalars`` already omits zero requests and ignored extended resources and is sorted by name
    (kube iterates a Go map, so its order of several "Insufficient <scalar>" reasons is random;
    berth's is stable). ``empty`` means nothing but the pod slot has to be checked.
    """

    __slots__ = ("empty", "ephemeral_storage", "memory", "milli_cpu", "scalars")

    def __init__(
        self, milli_cpu: int, memory: int, ephemeral_storage: int, scalars: tuple[tuple[str, int], ...]
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.scalars = scalars
        self.empty = not (milli_cpu or memory or ephemeral_storage or scalars)


class PreScoreState(StateData):
    """The pod's request of each scoring resource, in ``scoringStrategy.resources`` order, and the
    DRA state when one of them is an extended resource backed by a DeviceClass."""

    __slots__ = ("dra", "pod_requests")

    def __init__(self, pod_requests: tuple[int, ...], dra: DRAScoreState | None = None) -> None:
        self.pod_requests = pod_requests
        self.dra = dra


def compute_pod_resource_request(
    pod: Pod, ignored_resources: frozenset[str] = frozenset(), ignored_groups: frozenset[str] = frozenset()
) -> PreFilterState:
    """``computePodResourceRequest`` (no non-zero defaults), reduced to what Filter checks."""
    r = Resource.from_list(pod_requests(pod))
    scalars = []
    for name, q in sorted(r.scalar.items()):
        if q == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored_resources or (ignored_groups and name.split("/", 1)[0] in ignored_groups)
        ):
            continue
        scalars.append((name, q))
    return PreFilterState(r.milli_cpu, r.memory, r.ephemeral_storage, tuple(scalars))


def fits_request(
    request: PreFilterState, node_info: NodeInfo, dra: DeviceClassResolver | None = None
) -> list[InsufficientResource]:
    """``fitsRequest``: every resource the node lacks, in kube's order (pods, cpu, memory, storage, scalars).

    Ignored extended resources were already dropped from ``request`` when it was computed. With
    ``dra`` (DRAExtendedResource), a resource the node has none of and a DeviceClass backs is not
    checked here (``shouldDelegateResourceToDRA``).
    """
    out: list[InsufficientResource] = []
    alloc = node_info.allocatable
    used = node_info.requested
    num_pods = len(node_info.pods)
    if num_pods + 1 > alloc.allowed_pod_number:
        # Never Unresolvable: preempting a pod frees a slot.
        out.append(InsufficientResource("pods", REASON_TOO_MANY_PODS, 1, num_pods, alloc.allowed_pod_number))
    if request.empty:
        return out
    c = request.milli_cpu
    if c > 0 and c > alloc.milli_cpu - used.milli_cpu:
        out.append(
            InsufficientResource(
                "cpu", REASON_INSUFFICIENT_CPU, c, used.milli_cpu, alloc.milli_cpu, c > alloc.milli_cpu
            )
        )
    m = request.memory
    if m > 0 and m > alloc.memory - used.memory:
        out.append(
            InsufficientResource(
                "memory", REASON_INSUFFICIENT_MEMORY, m, used.memory, alloc.memory, m > alloc.memory
            )
        )
    e = request.ephemeral_storage
    if e > 0 and e > alloc.ephemeral_storage - used.ephemeral_storage:
        out.append(
            InsufficientResource(
                "ephemeral-storage",
                REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
                e,
                used.ephemeral_storage,
                alloc.ephemeral_storage,
                e > alloc.ephemeral_storage,
            )
        )
    alloc_scalar = alloc.scalar
    used_scalar = used.scalar
    for name, q in request.scalars:
        capacity = alloc_scalar.get(name, 0)
        in_use = used_scalar.get(name, 0)
        if q > capacity - in_use and not _delegated_to_dra(name, capacity, dra):
            out.append(InsufficientResource(name, f"Insufficient {name}", q, in_use, capacity, q > capacity))
    return out


def _delegated_to_dra(name: str, capacity: int, dra: DeviceClassResolver | None) -> bool:
    """``shouldDelegateResourceToDRA``: the node has none of it and a DeviceClass backs it."""
    return dra is not None and capacity <= 0 and dra(name) is not None


def fits(pod: Pod, node_info: NodeInfo, dra: DeviceClassResolver | None = None) -> list[InsufficientResource]:
    """``Fits``: what ``node_info`` lacks for ``pod``, with no resources ignored."""
    return fits_request(compute_pod_resource_request(pod), node_info, dra)


def is_fit(pod: Pod, node: Node | None, dra: DeviceClassResolver | None = None) -> bool:
    """``isFit``: the pod fits ``node`` with nothing on it (False for no node); for queueing hints."""
    if node is None:
        return False
    return not fits(pod, NodeInfo(node), dra)


def have_any_requested_resources_increased(
    pod: Pod, original: Node, modified: Node, dra: DeviceClassResolver | None = None
) -> bool:
    """``haveAnyRequestedResourcesIncreased``: more pod slots, or more of a resource ``pod`` requests
    (or one the modified node leaves to DRA)."""
    request = compute_pod_resource_request(pod)
    before = Resource.from_list(original.allocatable)
    after = Resource.from_list(modified.allocatable)
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if request.empty:
        return False
    if (
        (request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (request.memory > 0 and after.memory > before.memory)
        or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(
        after.scalar.get(name, 0) > before.scalar.get(name, 0)
        or _delegated_to_dra(name, after.scalar.get(name, 0), dra)
        for name, _ in request.scalars
    )


def is_schedulable_after_pod_scale_down(target: Pod, original: Pod, modified: Pod) -> bool:
    """``isSchedulableAfterPodScaleDown``: the target itself shrank, or an assigned pod freed some of
    a resource the target requests."""
    if modified.uid == target.uid:
        return True
    if not modified.node_name:
        return False
    before = Resource.from_list(pod_requests(original))
    after = Resource.from_list(pod_requests(modified))
    for name, q in pod_requests(target).items():
        tracked = name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource(name)
        if q != 0 and tracked and before.get(name) > after.get(name):
            return True
    return False


def _missing_state() -> Status:
    return Status(Code.ERROR, f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')


def _has_scalar_room(s: PreFilterState, node_info: NodeInfo, dra: DeviceClassResolver | None) -> bool:
    """Whether ``node_info`` has room for every scalar (extended) resource of the request, or leaves
    it to DRA: :func:`fits_request`'s last test, without building its reasons."""
    alloc_scalar = node_info.allocatable.scalar
    used_scalar = node_info.requested.scalar
    return all(
        q <= alloc_scalar.get(name, 0) - used_scalar.get(name, 0)
        or _delegated_to_dra(name, alloc_scalar.get(name, 0), dra)
        for name, q in s.scalars
    )


def _status_from(insufficient: list[InsufficientResource]) -> Status:
    if len(insufficient) == 1:
        # One resource short, the usual case: half the cost, paid per node a pod fails on (every
        # node, for a pod nothing fits; each reprieve that fails, in a preemption's dry run).
        r = insufficient[0]
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if r.unresolvable else Code.UNSCHEDULABLE, r.reason)
    code = Code.UNSCHEDULABLE
    for r in insufficient:
        if r.unresolvable:
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            break
    return Status(code, *(r.reason for r in insufficient))


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    """Filters nodes without room for the pod's requests; scores by the configured strategy."""

    name = NAME
    args_type = NodeResourcesFitArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        args = args if args is not None else NodeResourcesFitArgs()
        # NewFit validates its args (decode already did, but args may be built in code).
        raise_errors(args.validate())
        super().__init__(args, handle)
        self.ignored_resources = frozenset(args.ignored_resources)
        self.ignored_resource_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        shape = strategy.requested_to_capacity_ratio.shape if strategy.requested_to_capacity_ratio else None
        # nodeResourceStrategyTypeMap builds Fit's scorer without enablePodLevelResources.
        self.scorer = ResourceAllocationScorer(
            strategy.resources, False, strategy.type, shape, pod_level_resources=False
        )
        # DRAExtendedResource: the DRA store's DeviceClass lookup (kube's SharedDRAManager).
        dra_store = getattr(handle.objects, "dra", None)
        self.dra_store: DRAStore | None = dra_store
        self.cel_cache = CelCache(featuregates.DEFAULT.enabled("DRAListTypeAttributes"))
        self.dra: DeviceClassResolver | None = (
            dra_store.class_for_extended_resource
            if dra_store is not None and featuregates.DEFAULT.enabled("DRAExtendedResource")
            else None
        )
        self._last_request: tuple[CycleState, PreFilterState] | None = None
        # The last pod's request for Filter and for scoring, with what it was computed from: the next
        # pod with the very same spec objects (copies of one template: berth capacity's replicas)
        # reuses them instead of summing its quantities again.
        self._filter_request: tuple[Pod, PreFilterState] | None = None
        self._score_request: tuple[Pod, tuple[int, ...]] | None = None

    # --- PreFilter / Filter --------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Compute the pod's request once for every Filter call of this attempt."""
        memo = self._filter_request
        if memo is not None and same_request_spec(memo[0], pod):
            request = memo[1]
        else:
            request = compute_pod_resource_request(pod, self.ignored_resources, self.ignored_resource_groups)
            self._filter_request = (pod, request)
        state.write(PRE_FILTER_STATE_KEY, request)
        # Filter runs once per node with this very state: remember the request next to it, so
        # that the node loop reads it without a state lookup. One tuple assignment, so a
        # concurrent cycle (the extender's threads) sees a whole entry, its own or another's.
        self._last_request = (state, request)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """None when the node has room; else the reasons, Unresolvable if a request exceeds allocatable.

        Whether the node has room is :func:`fits_request` finding nothing, tested inline without
        building its reasons (this runs once per node: a call saved is a fifth of its time).
        """
        last = self._last_request
        if last is not None and last[0] is state:
            s = last[1]
        else:
            s = state.get(PRE_FILTER_STATE_KEY)
            if not isinstance(s, PreFilterState):
                return _missing_state()
        alloc = node_info.allocatable
        if len(node_info.pods) < alloc.allowed_pod_number:
            if s.empty:
                return None
            used = node_info.requested
            c = s.milli_cpu
            m = s.memory
            e = s.ephemeral_storage
            if (
                (c <= 0 or c <= alloc.milli_cpu - used.milli_cpu)
                and (m <= 0 or m <= alloc.memory - used.memory)
                and (e <= 0 or e <= alloc.ephemeral_storage - used.ephemeral_storage)
                and (not s.scalars or _has_scalar_room(s, node_info, self.dra))
            ):
                return None
        return _status_from(fits_request(s, node_info, self.dra))

    def filter_all(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> list[Status | None] | None:
        """:meth:`filter` on each node; None when all have room."""
        verdicts: list[Status | None] | None = None
        check = self.filter
        for index, info in enumerate(nodes):
            status = check(state, pod, info)
            if status is not None:
                if verdicts is None:
                    verdicts = [None] * len(nodes)
                verdicts[index] = status
        return verdicts

    # --- queueing hints ------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod deleted or scaled down (in-place resize is GA); a node added or with more allocatable;
        with DRAExtendedResource, a DeviceClass added or updated."""
        events = [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                self.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    NODE,
                    node_actions(
                        ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE,
                        NODE_ADD_TAINT_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
                    ),
                ),
                self.is_schedulable_after_node_change,
            ),
        ]
        if self.dra is not None:
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                    self.is_schedulable_after_device_class_event,
                )
            )
        return events

    def is_schedulable_after_pod_event(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for an assigned (or nominated) pod deleted, or a scale-down that frees what ``pod`` needs."""
        original, modified = as_pods(old, new)
        if modified is None:
            if original is None or (not original.node_name and not original.nominated_node_name):
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        if original is None or not is_schedulable_after_pod_scale_down(pod, original, modified):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the node (empty) fits the pod and was added, or gained what the pod requests."""
        original, modified = as_nodes(old, new)
        if modified is None or not is_fit(pod, modified, self.dra):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        if not have_any_requested_resources_increased(pod, original, modified, self.dra):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_device_class_event(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """``isSchedulableAfterDeviceClassEvent``: a class now backs an extended resource the pod
        requests (its implicit name only on add: a class keeps its name)."""
        for obj in (old, new):
            if obj is not None and not isinstance(obj, DeviceClass):
                raise HintError(f"expected a DeviceClass, got {type(obj).__name__}")
        if not isinstance(new, DeviceClass):
            return QueueingHint.QUEUE_SKIP
        if isinstance(old, DeviceClass):
            if old.extended_resource_name == new.extended_resource_name:
                return QueueingHint.QUEUE_SKIP
        elif RESOURCE_DEVICE_CLASS_PREFIX + new.name in pod_requests(pod):
            return QueueingHint.QUEUE
        if new.extended_resource_name and new.extended_resource_name in pod_requests(pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- PreScore / Score ----------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Compute the pod's (non-zero) request of each scoring resource."""
        state.write(PRE_SCORE_STATE_KEY, self._pre_score_state(pod))
        return None

    def _pre_score_state(self, pod: Pod) -> PreScoreState:
        dra = dra_score_state(self.dra_store, self.dra, self.scorer.names, self.cel_cache)
        memo = self._score_request
        if memo is not None and same_request_spec(memo[0], pod):
            return PreScoreState(memo[1], dra)
        requests = self.scorer.pod_request_list(pod)
        self._score_request = (pod, requests)
        return PreScoreState(requests, dra)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The scoring strategy's score for ``node_info`` (no normalization)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        # As kube: without PreScore state, compute the request here.
        if not isinstance(s, PreScoreState):
            s = self._pre_score_state(pod)
        if not self.scorer.specs:
            raise PluginError("resources not found")
        return self.scorer.score(node_info, s.pod_requests, s.dra)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node, reading the cycle state once."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            s = self._pre_score_state(pod)
        if not self.scorer.specs:
            raise PluginError("resources not found")
        return self.scorer.score_many(nodes, s.pod_requests, s.dra)
