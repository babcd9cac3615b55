"""NodeResourcesBalancedAllocation, ported from balanced_allocation_test.go (v1.36.3)."""

from __future__ import annotations

import pytest

from app.api.errors import FieldError
from app.api.objects import Node, Pod
from app.framework.cycle_state import CycleState
from app.framework.status import Code
from app.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs, ResourceSpec
from app.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_resource_score,
    balanced_resource_scorer,
)
from fakes import FakeHandle
from plugins.noderesources_helpers import snapshot, st_pod, util_node

DEFAULT = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
WITH_GPU = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec("nvidia.com/gpu", 1)]


def cpu(req: str) -> dict[str, str]:
    return {"cpu": req}


def cpu_mem(c: str, m: str) -> dict[str, str]:
    return {"cpu": c, "memory": m}


def cpu_mem_gpu(c: str, m: str, g: str) -> dict[str, str]:
    return {"cpu": c, "memory": m, "nvidia.com/gpu": g}


def gpu(n: int) -> dict[str, int]:
    return {"nvidia.com/gpu": n}


def _two() -> Pod:
    return st_pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"))


CASES: list[tuple[str, Pod, list[Node], list[Pod], list[ResourceSpec], list[int]]] = [
    (
        "nothing scheduled, resources requested, differently sized nodes",
        _two(),
        [util_node("node1", 4000, 10000), util_node("node2", 6000, 10000)],
        [],
        DEFAULT,
        [68, 75],
    ),
    (
        "resources requested, pods scheduled with resources",
        _two(),
        [util_node("node1", 10000, 20000), util_node("node2", 10000, 20000)],
        [
            st_pod(cpu("1000m"), cpu("2000m"), node="node1"),
            st_pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"), node="node2"),
        ],
        DEFAULT,
        [73, 74],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        _two(),
        [util_node("node1", 10000, 20000), util_node("node2", 10000, 50000)],
        [
            st_pod(cpu("1000m"), cpu("2000m"), node="node1"),
            st_pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"), node="node2"),
        ],
        DEFAULT,
        [73, 70],
    ),
    (
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        st_pod({"memory": "2000"}, {"memory": "3000"}),
        [util_node("node1", 3000, 5000), util_node("node2", 3000, 5000)],
        [st_pod(cpu("1000m"), cpu("2000m"), node="node1")],
        DEFAULT,
        [100, 50],
    ),
    (
        "requested resources at node capacity",
        st_pod(cpu("1000m"), cpu("2000m")),
        [util_node("node1", 6000, 10000), util_node("node2", 6000, 10000)],
        [
            st_pod(cpu("1000m"), cpu("2000m"), node="node1"),
            st_pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"), node="node2"),
        ],
        DEFAULT,
        [62, 62],
    ),
    (
        "scalar resource is included in the score computation if pod requests the scalar resource",
        st_pod(cpu_mem_gpu("0", "0", "1")),
        [util_node("node1", 3500, 40000, gpu(8)), util_node("node2", 3500, 40000, gpu(8))],
        [
            st_pod(cpu_mem("1000m", "2000"), cpu_mem_gpu("2000m", "3000", "3"), node="node1"),
            st_pod(cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000"), node="node2"),
        ],
        WITH_GPU,
        [75, 76],
    ),
    (
        "scalar resource is not included in the score computation if pod doesn't request the scalar resource",
        _two(),
        [util_node("node1", 3500, 40000, gpu(8)), util_node("node2", 3500, 40000)],
        [],
        WITH_GPU,
        [56, 56],
    ),
    # Skipped: "include DRA resource on a node for balanced resource allocation" (with and without
    # PreScore) — DRA-backed extended resources are not implemented in berth.
]


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["prescore", "no-prescore"])
@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "resources", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_node_resources_balanced_allocation(
    pod: Pod,
    nodes: list[Node],
    existing: list[Pod],
    resources: list[ResourceSpec],
    expected: list[int],
    run_pre_score: bool,
) -> None:
    """Each case with PreScore and, as kube's "...if PreScore not called" cases, without it."""
    handle, infos = snapshot(existing, nodes)
    p = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs(resources), handle)
    state = CycleState()
    if run_pre_score:
        assert p.pre_score(state, pod, infos) is None
    assert [p.score(state, pod, info) for info in infos] == expected


def test_best_effort_pod_is_skipped_in_pre_score() -> None:
    """ "nothing scheduled, nothing requested, skip in PreScore"."""
    handle, infos = snapshot([], [util_node("node1", 4000, 10000), util_node("node2", 4000, 10000)])
    p = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs(DEFAULT), handle)
    status = p.pre_score(CycleState(), st_pod(), infos)
    assert status is not None and status.code == Code.SKIP
    # Without PreScore a best-effort pod scores 0, as kube's Score fallback does.
    assert p.score(CycleState(), st_pod(), infos[0]) == 0


def test_containers_without_requests_are_best_effort() -> None:
    """BalancedAllocation uses plain requests: no 100m/200Mi defaults, so empty containers skip."""
    handle, infos = snapshot([], [util_node("node1", 4000, 10000)])
    p = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs(DEFAULT), handle)
    status = p.pre_score(CycleState(), st_pod(empty_containers=2), infos)
    assert status is not None and status.code == Code.SKIP


def test_fused_score_matches_reference() -> None:
    """The allocation-light Score equals gather() + balanced_resource_scorer() on varied nodes."""
    nodes = [
        util_node(f"n{i}", 1000 * (i + 1), 3000 * (4 - i) + 7, {"nvidia.com/gpu": i, "example.com/x": 3})
        for i in range(4)
    ]
    existing = [
        st_pod(cpu_mem_gpu("700m", "1500", "1"), node="n1"),
        st_pod(cpu_mem("2500m", "9000"), {"example.com/x": "2"}, node="n2"),
        st_pod(cpu("900m"), node="n3"),
    ]
    handle, infos = snapshot(existing, nodes)
    resources = [*WITH_GPU, ResourceSpec("example.com/x", 1), ResourceSpec("ephemeral-storage", 1)]
    p = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs(resources), handle)
    for pod in (st_pod(cpu_mem_gpu("300m", "800", "1")), st_pod(cpu("100m"), {"example.com/x": "1"})):
        requests = p.scorer.pod_request_list(pod)
        for info in infos:
            requested, allocated, allocatable = p.scorer.gather(info, requests)
            assert p.score(CycleState(), pod, info) == balanced_resource_scorer(
                requested, allocated, allocatable
            )


def test_balanced_resource_score() -> None:
    # Two resources: std = |f1 - f2| / 2.
    assert balanced_resource_score([1, 3], [4, 4]) == 75
    # Fractions are capped at 1 and allocatable 0 is skipped.
    assert balanced_resource_score([8, 0, 5], [4, 4, 0]) == 50
    # Three resources: population std of (0, 0.5, 1) = 0.408… → int(59.17) = 59.
    assert balanced_resource_score([0, 2, 4], [4, 4, 4]) == 59
    # One or none: std 0.
    assert balanced_resource_score([1], [4]) == 100
    assert balanced_resource_score([], []) == 100


def test_scorer_range() -> None:
    """No change → 75; best improvement → 100; worst → 50."""
    assert balanced_resource_scorer([2, 2], [1, 1], [4, 4]) == 75
    assert balanced_resource_scorer([4, 4], [4, 0], [4, 4]) == 100
    assert balanced_resource_scorer([4, 0], [0, 0], [4, 4]) == 50


def test_empty_resources_treat_every_pod_as_best_effort() -> None:
    """With no resources every pod is best effort: PreScore skips, Score's fallback gives 0 (as kube)."""
    handle, infos = snapshot([], [util_node("node1", 4000, 10000)])
    p = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs([]), handle)
    status = p.pre_score(CycleState(), _two(), infos)
    assert status is not None and status.code == Code.SKIP
    assert p.score(CycleState(), _two(), infos[0]) == 0


def test_invalid_args_are_rejected() -> None:
    with pytest.raises(FieldError) as err:
        NodeResourcesBalancedAllocation(
            NodeResourcesBalancedAllocationArgs([ResourceSpec("cpu", 2)]), FakeHandle()
        )
    assert err.value.path == "resources[0].weight"


def test_pod_level_resources_are_scored() -> None:
    """BalancedAllocation, unlike NodeResourcesFit's Score, is built with enablePodLevelResources: the
    pod-level requests replace the containers' (balanced_allocation_test.go's pod-level cases)."""
    handle, infos = snapshot([], [util_node("node1", 4000, 10000)])
    p = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs(), handle)

    def score(pod: Pod) -> int:
        state = CycleState()
        assert p.pre_score(state, pod, infos) is None
        return p.score(state, pod, infos[0])

    pod_level = st_pod({"cpu": "1000m", "memory": "5000"}, pod_requests={"cpu": "2000m", "memory": "5000"})
    assert score(pod_level) == score(st_pod({"cpu": "2000m", "memory": "5000"}))
    assert score(pod_level) != score(st_pod({"cpu": "1000m", "memory": "5000"}))
