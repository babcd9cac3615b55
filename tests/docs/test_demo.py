"""``make demo`` (the README's first quickstart), as the doc test ran it: what a newcomer sees."""

from __future__ import annotations

import re
from typing import Any

import pytest
from docs.blocks import REPO_ROOT, shell_blocks

DEMO = next(b for b in shell_blocks([REPO_ROOT / "README.md"]) if b.text.strip() == "make demo")


@pytest.mark.kube
def test_make_demo_schedules_one_pod_explains_both_and_cleans_up(
    block_results: dict[str, dict[str, Any]],
) -> None:
    """The demo exits 0 having bound the first pod, shown the second's FitError and both pods'
    /debug/pods explanations, and stopped berth and the cluster."""
    result = block_results[DEMO.where]
    out = result.get("output", "")
    assert result["status"] == "passed", out
    assert "$ kubectl apply -f examples/demo-pods.yaml" in out
    bound = re.search(r"demo-fits was bound to (node-[123]); it stays Pending", out)
    assert bound, out
    assert re.search(r"demo-too-big is Unschedulable: 0/3 nodes are available: 3 Insufficient cpu\.", out), (
        out
    )
    assert f"default/demo-fits: Scheduled on {bound.group(1)} (3 of 3 nodes feasible)" in out
    assert "default/demo-too-big: Unschedulable on - (0 of 3 nodes feasible)" in out
    assert len(re.findall(r"filter node-[123]: NodeResourcesFit \w+: Insufficient cpu", out)) == 3, out
    assert re.search(r"Done in [\d.]+s: everything stopped and deleted\.", out), out


@pytest.mark.kube
def test_make_demo_lists_three_nodes_in_three_zones(block_results: dict[str, dict[str, Any]]) -> None:
    """`kubectl get nodes` in the demo shows the three Ready Nodes, one per zone (no kubelet: no version)."""
    out = block_results[DEMO.where].get("output", "")
    for node, zone in (("node-1", "zone-a"), ("node-2", "zone-b"), ("node-3", "zone-c")):
        assert re.search(rf"^{node}\s+Ready\s+<none>\s+\S+\s+{zone}$", out, re.M), out
