"""The run as a whole: the summary, the reasons grouped, each node's utilization afterwards, 120 columns."""

from __future__ import annotations

import json
from pathlib import Path

from simulate.simhelpers import default_setup, node_yaml, pod_yaml

from app.simulate import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"

GPU_NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: gpu, labels: {kubernetes.io/hostname: gpu}}\n"
    'status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10", example.com/gpu: "2"}}\n---\n'
)
RUNNING = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: db}\nspec:\n  nodeName: gpu\n"
    '  containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 2Gi}}}]\n---\n'
)
GPU_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: train}\nspec:\n"
    '  containers: [{name: c, image: x, resources: {requests: {cpu: "2", example.com/gpu: "1"}, '
    'limits: {example.com/gpu: "1"}}}]\n---\n'
)


def run(tmp_path: Path, text: str, output: str) -> str:
    path = tmp_path / "state.yaml"
    path.write_text(text)
    cfg, registry = default_setup()
    out, _ = simulate(str(path), cfg, registry, seed=1, output=output)
    return out


def test_summary_counts_every_status_and_groups_reasons(tmp_path: Path) -> None:
    text = (
        node_yaml("n1", cpu="2")
        + pod_yaml("a", cpu="2")
        + pod_yaml("b", cpu="2")
        + pod_yaml("c", cpu="3")
        + pod_yaml("gated", spec="  schedulingGates: [{name: g}]\n")
        + pod_yaml("theirs", spec="  schedulerName: volcano\n")
    )
    table = run(tmp_path, text, "table")
    summary = table.split("\n\n")[1].splitlines()
    assert summary == [
        "Summary: 1 scheduled, 2 unschedulable, 1 gated, 1 skipped (5 pending pods, 1 nodes)",
        "Reasons (pods held back by each):",
        "  2  Insufficient cpu",
        '  1  no profile serves schedulerName "volcano"',
        "  1  waiting for scheduling gates: [g]",
    ]
    doc = json.loads(run(tmp_path, text, "json"))
    assert doc["summary"] == {
        "scheduled": 1,
        "unschedulable": 2,
        "gated": 1,
        "skipped": 1,
        "error": 0,
        "reasons": [
            {"reason": "Insufficient cpu", "pods": 2},
            {"reason": 'no profile serves schedulerName "volcano"', "pods": 1},
            {"reason": "waiting for scheduling gates: [g]", "pods": 1},
        ],
    }


def test_utilization_after_the_run_counts_running_and_placed_pods(tmp_path: Path) -> None:
    text = GPU_NODE + node_yaml("plain", cpu="8") + RUNNING + GPU_POD
    doc = json.loads(run(tmp_path, text, "json"))
    assert doc["nodes"] == [
        {
            "node": "gpu",
            "resources": {
                "cpu": {"requested": 3.0, "allocatable": 4.0},
                "memory": {"requested": 2 * 2**30, "allocatable": 8 * 2**30},
                "pods": {"requested": 2, "allocatable": 10},
                "example.com/gpu": {"requested": 1, "allocatable": 2},
            },
        },
        {
            "node": "plain",
            "resources": {
                "cpu": {"requested": 0.0, "allocatable": 8.0},
                "memory": {"requested": 0, "allocatable": 16 * 2**30},
                "pods": {"requested": 0, "allocatable": 110},
            },
        },
    ]
    nodes = run(tmp_path, text, "table").split("\n\n")[2].splitlines()
    assert nodes[0].split() == ["NODE", "CPU", "MEMORY", "PODS", "example.com/gpu"]
    assert nodes[1].split() == [
        "gpu",
        "██████░░",
        "75%",
        "██░░░░░░",
        "25%",
        "██░░░░░░",
        "20%",
        "████░░░░",
        "50%",
    ]
    assert nodes[2].split() == ["plain", "░░░░░░░░", "0%", "░░░░░░░░", "0%", "░░░░░░░░", "0%", "-"]
    wide = run(tmp_path, text, "wide").split("\n\n")[2].splitlines()
    assert wide[1].split() == [
        "gpu", "██████░░", "75%", "3/4", "██░░░░░░", "25%", "2Gi/8Gi", "██░░░░░░", "20%", "2/10", "████░░░░", "50%", "1/2"
    ]  # fmt: skip


def test_wide_shows_score_and_runner_up(tmp_path: Path) -> None:
    text = (
        node_yaml("busy", cpu="4")
        + node_yaml("idle", cpu="4")
        + RUNNING.replace("gpu", "busy")
        + pod_yaml("p")
    )
    doc = json.loads(run(tmp_path, text, "json"))
    [pod] = doc["pods"]
    # LeastAllocated (the default) prefers the idle node; the busy one is the runner-up.
    assert pod["winner"]["node"] == "idle" and pod["runnerUp"]["node"] == "busy"
    assert pod["winner"]["total"] > pod["runnerUp"]["total"]
    header, row = run(tmp_path, text, "wide").splitlines()[:2]
    assert header.split() == ["POD", "STATUS", "NODE", "SCORE", "RUNNER-UP", "REASON"]
    assert row.split() == [
        "default/p", "Scheduled", "idle", str(pod["winner"]["total"]),
        "busy", f"({pod['runnerUp']['total']})", "feasible", "2/2",
    ]  # fmt: skip


def test_table_fits_120_columns_wide_keeps_every_reason() -> None:
    cfg, registry = default_setup()
    state = str(EXAMPLES / "unschedulable.yaml")
    table, _ = simulate(state, cfg, registry, seed=1)
    assert max(len(line) for line in table.splitlines()) <= 120
    wide, _ = simulate(state, cfg, registry, seed=1, output="wide")
    fit_errors = [
        p["message"] for p in json.loads(simulate(state, cfg, registry, seed=1, output="json")[0])["pods"]
    ]
    assert all(message in wide for message in fit_errors if message)
    assert any(len(message) > 120 for message in fit_errors)
