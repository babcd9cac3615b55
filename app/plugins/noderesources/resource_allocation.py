"""Shared scoring machinery of NodeResourcesFit and NodeResourcesBalancedAllocation.

Ports ``resource_allocation.go`` (the per-resource gathering of allocatable/requested amounts),
``least_allocated.go``, ``most_allocated.go``, ``requested_to_capacity_ratio.go`` and
``helper/shape_score.go``.

Everything here runs once per (pod, node) pair, so the scorer precomputes what it can at
construction (resource kinds, the RequestedToCapacityRatio lookup table) and the per-node loop
touches only integer attributes of :class:`~app.framework.types.Resource`.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.api.objects import Pod
from app.api.quantity import milli_value_of, value_of
from app.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NON_MISSING_DEFAULTS,
    is_scalar_resource,
    pod_requests,
)
from app.framework.interfaces import MAX_NODE_SCORE
from app.framework.types import NodeInfo
from app.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    ResourceSpec,
    UtilizationShapePoint,
)
from app.plugins.noderesources.dra_scoring import DRAScoreState

# How a configured resource name maps onto Resource's fields; decided once per scorer.
KIND_CPU = 0
KIND_MEMORY = 1
KIND_EPHEMERAL = 2
KIND_SCALAR = 3
# Anything else ("pods", "storage", ...): never in NodeInfo's scalar map, so kube always skips it.
KIND_OTHER = 4

# ``maxUtilization`` of requested_to_capacity_ratio.go.
MAX_UTILIZATION = 100


_MEMO_REQUESTS = 64
"""Pod request vectors a :class:`ScoreMemo` remembers scores for before it starts over."""
_MEMO_NODES = 20_000
"""Node generations remembered per request vector before that vector's scores start over."""


class ScoreMemo:
    """Scores by the pod's request vector and the NodeInfo's generation.

    A resource plugin's score of a node depends only on the pod's request vector, the node's
    allocatable and its requested amounts (and the plugin's fixed arguments). The NodeInfo's
    generation (process-wide, bumped by every change of the node or its pods; a snapshot copy keeps
    its source's) tells whether the node changed. Between two scheduling cycles only the nodes that
    changed get a new generation (the one the last pod was assumed on, those the informers touched),
    so for pods alike (a Deployment's replicas) most of a cycle's scores are the last cycle's.
    """

    __slots__ = ("_by_request",)

    def __init__(self) -> None:
        self._by_request: dict[tuple[int, ...], dict[int, int]] = {}

    def scores(self, request: Sequence[int]) -> dict[int, int]:
        """The generation → score map of ``request``, for the caller to read and fill."""
        key = tuple(request)
        memo = self._by_request.get(key)
        if memo is None or len(memo) > _MEMO_NODES:
            if memo is None and len(self._by_request) >= _MEMO_REQUESTS:
                self._by_request.clear()
            memo = self._by_request[key] = {}
        return memo


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on int64 (Python's ``//`` floors)."""
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


def resource_kind(name: str) -> int:
    """Which :class:`Resource` field holds ``name`` (``calculateResourceAllocatableRequest``'s switch)."""
    if name == CPU:
        return KIND_CPU
    if name == MEMORY:
        return KIND_MEMORY
    if name == EPHEMERAL_STORAGE:
        return KIND_EPHEMERAL
    if is_scalar_resource(name):
        return KIND_SCALAR
    return KIND_OTHER


def build_broken_linear_function(shape: Sequence[tuple[int, int]], p: int) -> int:
    """``helper.BuildBrokenLinearFunction`` evaluated at ``p``; ``shape`` is (utilization, score) pairs.

    Below the first point the first score, above the last the last score, linear (Go integer
    arithmetic, truncating toward zero) in between.
    """
    for i, (utilization, score) in enumerate(shape):
        if p <= utilization:
            if i == 0:
                return score
            prev_u, prev_s = shape[i - 1]
            return prev_s + go_div((score - prev_s) * (p - prev_u), utilization - prev_u)
    return shape[-1][1]


def shape_table(shape: Sequence[UtilizationShapePoint]) -> tuple[int, ...]:
    """The RequestedToCapacityRatio score for every utilization 0..100, scaled to MaxNodeScore.

    Utilization passed to the function is always an integer in [0, 100] (``requested*100/capacity``
    capped at 100), so a 101-entry table replaces the per-node interpolation exactly.
    """
    if not shape:
        return (0,) * (MAX_UTILIZATION + 1)  # validation forbids it; kube would panic
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = [(p.utilization, p.score * scale) for p in shape]
    return tuple(build_broken_linear_function(points, u) for u in range(MAX_UTILIZATION + 1))


def least_requested_score(requested: int, capacity: int) -> int:
    """``leastRequestedScore``: unused share of capacity on a 0..100 scale."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    """``mostRequestedScore``: used share of capacity on a 0..100 scale (requested capped at capacity)."""
    if capacity == 0:
        return 0
    if requested > capacity:
        # Pods without requests get the non-zero defaults, so requested can exceed capacity.
        requested = capacity
    return requested * MAX_NODE_SCORE // capacity


class ResourceAllocationScorer:
    """``resourceAllocationScorer``: per-resource pod requests and node amounts, plus a strategy.

    ``use_requested`` selects ``NodeInfo.requested`` for cpu/memory (BalancedAllocation) instead of
    ``NodeInfo.non_zero_requested`` (NodeResourcesFit). The pod side follows suit: without
    ``use_requested`` a container missing cpu/memory counts as 100m/200Mi.

    ``pod_level_resources`` is the scorer's ``enablePodLevelResources``. kube-scheduler v1.36.3 sets it
    for BalancedAllocation only: NodeResourcesFit's scorers come from ``nodeResourceStrategyTypeMap``,
    which never sets it, so Fit scores a pod by its container requests even when ``spec.resources``
    says otherwise (its Filter and the node's totals do use pod-level resources). A quirk kept on purpose.
    """

    __slots__ = (
        "cpu_memory",
        "kinds",
        "memo",
        "names",
        "pod_level_resources",
        "resources",
        "specs",
        "strategy",
        "table",
        "use_requested",
        "weights",
    )

    def __init__(
        self,
        resources: Sequence[ResourceSpec],
        use_requested: bool,
        strategy: str = LEAST_ALLOCATED,
        shape: Sequence[UtilizationShapePoint] | None = None,
        *,
        pod_level_resources: bool,
    ) -> None:
        self.resources: tuple[ResourceSpec, ...] = tuple(resources)
        self.names: tuple[str, ...] = tuple(r.name for r in resources)
        self.weights: tuple[int, ...] = tuple(r.weight for r in resources)
        self.kinds: tuple[int, ...] = tuple(resource_kind(r.name) for r in resources)
        # One tuple per resource so the per-node loop unpacks instead of indexing three tuples.
        self.specs: tuple[tuple[str, int, int], ...] = tuple(
            zip(self.names, self.weights, self.kinds, strict=True)
        )
        self.use_requested = use_requested
        self.pod_level_resources = pod_level_resources
        self.memo = ScoreMemo()  # score_many's scores of nodes that did not change since
        self.strategy = strategy
        self.table: tuple[int, ...] = ()
        if strategy == REQUESTED_TO_CAPACITY_RATIO:
            self.table = shape_table(shape or ())
        elif strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            raise ValueError(f"scoring strategy {strategy} is not supported")
        # The default configuration scores exactly cpu and memory: (cpu index, memory index, cpu
        # weight, memory weight) lets the per-node loops of score_many skip the generic dispatch.
        self.cpu_memory: tuple[int, int, int, int] | None = None
        if sorted(self.kinds) == sorted((KIND_CPU, KIND_MEMORY)):
            ic, im = self.kinds.index(KIND_CPU), self.kinds.index(KIND_MEMORY)
            if self.weights[ic] + self.weights[im] > 0:
                self.cpu_memory = (ic, im, self.weights[ic], self.weights[im])

    def pod_request_list(self, pod: Pod) -> tuple[int, ...]:
        """``calculatePodResourceRequestList``: the pod's request of each configured resource."""
        non_missing = None if self.use_requested else NON_MISSING_DEFAULTS
        reqs = pod_requests(pod, non_missing, pod_level=self.pod_level_resources)
        out = []
        for name in self.names:
            q = reqs.get(name)
            if q is None:
                out.append(0)
            elif name == CPU:
                out.append(milli_value_of(q))
            else:
                out.append(value_of(q))
        return tuple(out)

    def gather(
        self, node_info: NodeInfo, pod_request: Sequence[int]
    ) -> tuple[list[int], list[int], list[int]]:
        """``calculateNodeAllocatableRequest``: (requested incl. pod, allocated, allocatable) per resource.

        Skipped resources (a scalar the pod does not request, or allocatable 0) stay 0 in all three
        lists, which the strategies read as "leave out". Used by BalancedAllocation, which needs both
        the with- and without-pod amounts; Fit's strategies use the allocation-free :meth:`score`.
        """
        n = len(self.specs)
        requested = [0] * n
        allocated = [0] * n
        allocatable = [0] * n
        alloc = node_info.allocatable
        used = node_info.requested if self.use_requested else node_info.non_zero_requested
        plain = node_info.requested
        for i, (name, _weight, kind) in enumerate(self.specs):
            pod_req = pod_request[i]
            if kind == KIND_CPU:
                a, u = alloc.milli_cpu, used.milli_cpu
            elif kind == KIND_MEMORY:
                a, u = alloc.memory, used.memory
            elif kind == KIND_EPHEMERAL:
                # kube always reads Requested here, whatever useRequested says.
                a, u = alloc.ephemeral_storage, plain.ephemeral_storage
            elif kind == KIND_SCALAR:
                if pod_req == 0:
                    continue
                a = alloc.scalar.get(name, 0)
                u = plain.scalar.get(name, 0)
            else:
                continue
            if a == 0:
                continue
            allocatable[i] = a
            allocated[i] = u
            requested[i] = u + pod_req
        return requested, allocated, allocatable

    def score(self, node_info: NodeInfo, pod_request: Sequence[int], dra: DRAScoreState | None = None) -> int:
        """The strategy's node score (LeastAllocated, MostAllocated or RequestedToCapacityRatio).

        With ``dra``, an extended resource the node has none of is scored on the devices of the
        DeviceClass backing it (DRAExtendedResource).

        Same arithmetic as ``calculateNodeAllocatableRequest`` followed by the strategy's scorer,
        fused into one loop so that no per-node lists are built. All operands are non-negative, so
        ``//`` equals Go's truncating division here.
        """
        alloc = node_info.allocatable
        used = node_info.non_zero_requested if not self.use_requested else node_info.requested
        plain = node_info.requested
        strategy = self.strategy
        node_score = 0
        weight_sum = 0
        i = -1
        for name, weight, kind in self.specs:
            i += 1
            pod_req = pod_request[i]
            if kind == KIND_CPU:
                a = alloc.milli_cpu
                r = used.milli_cpu + pod_req
            elif kind == KIND_MEMORY:
                a = alloc.memory
                r = used.memory + pod_req
            elif kind == KIND_EPHEMERAL:
                a = alloc.ephemeral_storage
                r = plain.ephemeral_storage + pod_req
            elif kind == KIND_SCALAR:
                if pod_req == 0:
                    continue
                a = alloc.scalar.get(name, 0)
                if a == 0:
                    if dra is None:
                        continue
                    a, in_use = dra.totals(node_info.node, name)
                    r = in_use + pod_req
                else:
                    r = plain.scalar.get(name, 0) + pod_req
            else:
                continue
            if a == 0:
                continue
            if strategy == LEAST_ALLOCATED:
                s = 0 if r > a else (a - r) * MAX_NODE_SCORE // a
            elif strategy == MOST_ALLOCATED:
                s = (a if r > a else r) * MAX_NODE_SCORE // a
            else:
                s = self.table[MAX_UTILIZATION if r > a else r * MAX_UTILIZATION // a]
                # RequestedToCapacityRatio leaves zero-score resources out of the weight sum.
                if s <= 0:
                    continue
            node_score += s * weight
            weight_sum += weight
        if weight_sum == 0:
            return 0
        if strategy == REQUESTED_TO_CAPACITY_RATIO:
            # math.Round(nodeScore/weightSum) for non-negative operands: half rounds up.
            return (2 * node_score + weight_sum) // (2 * weight_sum)
        return node_score // weight_sum

    def score_many(
        self, nodes: Sequence[NodeInfo], pod_request: Sequence[int], dra: DRAScoreState | None = None
    ) -> list[int]:
        """:meth:`score` of every node, in order. For LeastAllocated and MostAllocated over exactly
        cpu and memory (the default), one specialised loop with the same integer arithmetic."""
        cm = self.cpu_memory
        strategy = self.strategy
        if cm is None or strategy == REQUESTED_TO_CAPACITY_RATIO:
            score_one = self.score
            return [score_one(n, pod_request, dra) for n in nodes]
        ic, im, wc, wm = cm
        pc, pm = pod_request[ic], pod_request[im]
        weight_sum = wc + wm
        least = strategy == LEAST_ALLOCATED
        use_requested = self.use_requested
        memo = self.memo.scores(pod_request)
        out: list[int] = []
        append = out.append
        for node_info in nodes:
            generation = node_info.generation
            score = memo.get(generation)
            if score is not None:
                append(score)
                continue
            alloc = node_info.allocatable
            ac, am = alloc.milli_cpu, alloc.memory
            if ac == 0 or am == 0:
                append(self.score(node_info, pod_request))  # a resource left out of the weights
                continue
            used = node_info.requested if use_requested else node_info.non_zero_requested
            rc = used.milli_cpu + pc
            rm = used.memory + pm
            if least:
                sc = 0 if rc > ac else (ac - rc) * MAX_NODE_SCORE // ac
                sm = 0 if rm > am else (am - rm) * MAX_NODE_SCORE // am
            else:
                sc = (ac if rc > ac else rc) * MAX_NODE_SCORE // ac
                sm = (am if rm > am else rm) * MAX_NODE_SCORE // am
            score = memo[generation] = (sc * wc + sm * wm) // weight_sum
            append(score)
        return out


def is_best_effort(pod_request: Sequence[int]) -> bool:
    """``isBestEffortPod``: the pod requests none of the configured resources."""
    return not any(pod_request)
