"""NodeResourcesBalancedAllocation: favour nodes whose resource utilizations stay close (``balanced_allocation.go``).

v1.36 scores the *change* in balance the pod causes (PR #135573):
``score = 50 + (50 + balance(with pod) - balance(without pod)) / 2``, where
``balance = int64((1 - std(fractions)) * 100)``. With DRAExtendedResource, an extended resource
the node has none of is counted in the devices of the DeviceClass backing it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from app import featuregates
from app.api.objects import Pod
from app.api.validation import raise_errors
from app.framework.cycle_state import CycleState, StateData
from app.framework.dra import DRAStore
from app.framework.interfaces import MAX_NODE_SCORE, Handle, PreScorePlugin, ScorePlugin
from app.framework.status import Status, skip
from app.framework.types import NodeInfo
from app.plugins.dynamicresources.cel import CelCache
from app.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs
from app.plugins.noderesources.dra_scoring import DRAScoreState, dra_score_state
from app.plugins.noderesources.resource_allocation import (
    KIND_CPU,
    KIND_EPHEMERAL,
    KIND_MEMORY,
    KIND_SCALAR,
    ResourceAllocationScorer,
    ScoreMemo,
    go_div,
    is_best_effort,
)

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME

_HALF = MAX_NODE_SCORE // 2
_WITHOUT_POD_CACHE = 100_000  # generations remembered before the cache starts over


class BalancedAllocationPreScoreState(StateData):
    """The pod's request of each configured resource, in ``args.resources`` order, and the DRA
    state when one of them is an extended resource backed by a DeviceClass."""

    __slots__ = ("dra", "pod_requests")

    def __init__(self, pod_requests: tuple[int, ...], dra: DRAScoreState | None = None) -> None:
        self.pod_requests = pod_requests
        self.dra = dra


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScore``: ``int64((1 - std) * 100)`` over the capped fractions requested/allocatable.

    Resources with allocatable 0 are left out. The float operations follow the Go code's order so
    results match bit for bit.
    """
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = float(req) / float(alloc)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    return _balance(fractions, total)


def _balance(fractions: list[float], total: float) -> int:
    """``int64((1 - std) * 100)`` for the given fractions and their sum."""
    std = 0.0
    n = len(fractions)
    if n == 2:
        # The common cpu+memory case: the std of two values is half their distance.
        std = abs((fractions[0] - fractions[1]) / 2)
    elif n > 2:
        mean = total / float(n)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / float(n))
    # int() truncates toward zero like Go's int64 conversion.
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_resource_scorer(
    requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]
) -> int:
    """``balancedResourceScorer``: 50..100 by how much the pod improves (100) or worsens (50) the balance."""
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    return _HALF + go_div(_HALF + with_pod - without_pod, 2)


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    """Scores nodes by how balanced their resource utilization is with the pod added."""

    name = NAME
    args_type = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        args = args if args is not None else NodeResourcesBalancedAllocationArgs()
        # NewBalancedAllocation validates its args (they may be built in code, not decoded).
        raise_errors(args.validate())
        super().__init__(args, handle)
        # useRequested: the pod's and the node's plain requests, no non-zero defaults.
        self.scorer = ResourceAllocationScorer(args.resources, True, pod_level_resources=True)
        self._without_pod: dict[int, int] = {}  # NodeInfo generation -> balance score without the pod
        self._memo = ScoreMemo()  # score_nodes' scores of nodes that did not change since
        self.dra_store: DRAStore | None = getattr(handle.objects, "dra", None)
        self.cel_cache = CelCache(featuregates.DEFAULT.enabled("DRAListTypeAttributes"))

    def _dra(self) -> DRAScoreState | None:
        store = self.dra_store
        if store is None or not featuregates.DEFAULT.enabled("DRAExtendedResource"):
            return None
        return dra_score_state(store, store.class_for_extended_resource, self.scorer.names, self.cel_cache)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip best-effort pods (issue #129138: they would all pile onto one node); else store requests."""
        requests = self.scorer.pod_request_list(pod)
        if is_best_effort(requests):
            return skip()
        state.write(PRE_SCORE_STATE_KEY, BalancedAllocationPreScoreState(requests, self._dra()))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The balance score of ``node_info`` for ``pod``."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, BalancedAllocationPreScoreState):
            requests, dra = s.pod_requests, s.dra
        else:
            # PreScore did not run: compute here, and a best-effort pod scores 0 as in kube.
            requests = self.scorer.pod_request_list(pod)
            if is_best_effort(requests):
                return 0
            dra = self._dra()
        # kube's "resources not found" error is unreachable here: no resources means best effort.
        return self._score(node_info, requests, dra)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node. Over exactly cpu and memory (the default) one specialised
        loop: the fractions, their clamping and ``_balance``'s two-value std in the same float
        operations, in the same order, so the scores are bit for bit those of :meth:`_score`."""
        s = state.get(PRE_SCORE_STATE_KEY)
        cm = self.scorer.cpu_memory
        if not isinstance(s, BalancedAllocationPreScoreState) or cm is None:
            return super().score_nodes(state, pod, nodes)
        requests = s.pod_requests
        pc, pm = requests[cm[0]], requests[cm[1]]
        top = float(MAX_NODE_SCORE)
        # The balance without the pod depends on the node alone: keep it by the NodeInfo's
        # generation (process-wide, bumped by every change; a snapshot copy keeps its source's).
        without = self._without_pod
        if len(without) > _WITHOUT_POD_CACHE:
            without.clear()
        memo = self._memo.scores(requests)
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
                append(self._score(node_info, requests))  # a resource left out: the generic path
                continue
            used = node_info.requested
            uc, um = used.milli_cpu, used.memory
            fac, fam = float(ac), float(am)
            fc = float(uc + pc) / fac
            if fc > 1:
                fc = 1.0
            fm = float(um + pm) / fam
            if fm > 1:
                fm = 1.0
            score_without = without.get(generation)
            if score_without is None:
                gc = float(uc) / fac
                if gc > 1:
                    gc = 1.0
                gm = float(um) / fam
                if gm > 1:
                    gm = 1.0
                score_without = without[generation] = int((1 - abs((gc - gm) / 2)) * top)
            # |a - b| is the same float whichever of cpu and memory comes first in the args.
            diff = _HALF + int((1 - abs((fc - fm) / 2)) * top) - score_without
            score = memo[generation] = _HALF + (diff // 2 if diff >= 0 else go_div(diff, 2))
            append(score)
        return out

    def _score(
        self, node_info: NodeInfo, pod_request: Sequence[int], dra: DRAScoreState | None = None
    ) -> int:
        """:func:`balanced_resource_scorer` over ``ResourceAllocationScorer.gather``, fused.

        Builds only the two fraction lists instead of three amount lists plus two fraction lists;
        the arithmetic (and so every float rounding) is that of :func:`balanced_resource_score`.
        """
        alloc = node_info.allocatable
        used = node_info.requested
        with_pod: list[float] = []
        without_pod: list[float] = []
        total_with = 0.0
        total_without = 0.0
        i = -1
        for name, _weight, kind in self.scorer.specs:
            i += 1
            pod_req = pod_request[i]
            if kind == KIND_CPU:
                a, u = alloc.milli_cpu, used.milli_cpu
            elif kind == KIND_MEMORY:
                a, u = alloc.memory, used.memory
            elif kind == KIND_EPHEMERAL:
                a, u = alloc.ephemeral_storage, used.ephemeral_storage
            elif kind == KIND_SCALAR:
                if pod_req == 0:
                    continue
                a = alloc.scalar.get(name, 0)
                if a == 0 and dra is not None:
                    a, u = dra.totals(node_info.node, name)
                else:
                    u = used.scalar.get(name, 0)
            else:
                continue
            if a == 0:
                continue
            fa = float(a)
            f = float(u + pod_req) / fa
            if f > 1:
                f = 1.0
            total_with += f
            with_pod.append(f)
            f = float(u) / fa
            if f > 1:
                f = 1.0
            total_without += f
            without_pod.append(f)
        score_with = _balance(with_pod, total_with)
        score_without = _balance(without_pod, total_without)
        return _HALF + go_div(_HALF + score_with - score_without, 2)
