"""The table and JSON outputs, and the simulate() convenience."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simulate.simhelpers import default_setup, node_yaml, pod_yaml, run_text

from app.scheduler.scheduler import Engine
from app.simulate import StateError, format_json, format_result, format_table, simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"
MIXED = (
    node_yaml("n1", cpu="2")
    + node_yaml("n2", cpu="2")
    + node_yaml("tiny", cpu="500m")
    + pod_yaml("big", cpu="3")
    + pod_yaml("web", cpu="1")
    + pod_yaml("gated", spec="  schedulingGates: [{name: g}]\n")
)


def test_json_shape_exactly() -> None:
    doc = json.loads(format_json(run_text(MIXED), seed=7))
    assert list(doc) == ["seed", "summary", "pods", "nodes"]
    assert doc["seed"] == 7
    keys = [
        "pod",
        "node",
        "status",
        "message",
        "feasibleNodes",
        "evaluatedNodes",
        "nominatedNode",
        "victims",
        "volumes",
        "filter",
        "scores",
        "winner",
        "runnerUp",
        "weights",
        "hints",
    ]
    for pod in doc["pods"]:
        assert list(pod) == keys
        assert isinstance(pod["pod"], str) and isinstance(pod["message"], str)
        assert pod["node"] is None or isinstance(pod["node"], str)
        assert pod["status"] in ("Scheduled", "Unschedulable", "Gated", "Skipped", "Error")
        assert type(pod["feasibleNodes"]) is int and type(pod["evaluatedNodes"]) is int
        for entry in pod["filter"].values():
            assert list(entry) == ["plugin", "status", "reasons", "details"]
            assert isinstance(entry["plugin"], str)
            assert entry["status"] in ("Unschedulable", "UnschedulableAndUnresolvable")
            assert all(isinstance(r, str) for r in entry["reasons"])
        for per_plugin in pod["scores"].values():
            assert list(per_plugin)[-1] == "total"
            assert all(type(v) is int for v in per_plugin.values())
            assert all(0 <= v <= 100 for k, v in per_plugin.items() if k != "total")

    big, web, gated = doc["pods"]
    assert big == {
        "pod": "default/big",
        "node": None,
        "status": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        "feasibleNodes": 0,
        "evaluatedNodes": 3,
        "nominatedNode": None,
        "victims": [],
        "volumes": [],
        "filter": {
            name: {
                "plugin": "NodeResourcesFit",
                "status": big["filter"][name]["status"],
                "reasons": ["Insufficient cpu"],
                "details": [],  # run_text runs without the explainer: see test_explain.py
            }
            for name in ("n1", "n2", "tiny")
        },
        "scores": {},
        "winner": None,
        "runnerUp": None,
        "weights": {},
        "hints": [],
    }
    assert web["status"] == "Scheduled" and web["node"] in ("n1", "n2")
    assert (web["message"], web["feasibleNodes"], web["evaluatedNodes"]) == ("", 2, 3)
    assert list(web["filter"]) == ["tiny"]
    assert list(web["scores"]) == ["n1", "n2"]
    assert "NodeResourcesFit" in web["scores"]["n1"]
    other = "n2" if web["node"] == "n1" else "n1"
    assert web["winner"] == {"node": web["node"], "total": web["scores"][web["node"]]["total"]}
    assert web["runnerUp"] == {"node": other, "total": web["scores"][other]["total"]}
    assert gated == {
        "pod": "default/gated",
        "node": None,
        "status": "Gated",
        "message": "waiting for scheduling gates: [g]",
        "feasibleNodes": 0,
        "evaluatedNodes": 0,
        "nominatedNode": None,
        "victims": [],
        "volumes": [],
        "filter": {},
        "scores": {},
        "winner": None,
        "runnerUp": None,
        "weights": {},
        "hints": [],
    }


def test_json_total_is_the_weighted_sum() -> None:
    cfg, registry = default_setup()
    weights = Engine(cfg, registry).profiles["default-scheduler"].score_weights
    doc = json.loads(format_json(run_text(MIXED)))
    for per_plugin in doc["pods"][1]["scores"].values():
        expected = sum(v * weights.get(k, 1) for k, v in per_plugin.items() if k != "total")
        assert per_plugin["total"] == expected


def test_table_is_aligned_and_readable() -> None:
    result = run_text(MIXED)
    lines = format_table(result).split("\n\n")[0].splitlines()
    assert lines[0].split() == ["POD", "STATUS", "NODE", "REASON"]
    assert len(lines) == 4
    starts = [lines[0].index(h) for h in ("STATUS", "NODE", "REASON")]
    for line in lines[1:]:
        for start in starts:
            assert line[start - 1] == " " and line[start] != " "  # every column starts under its header
    big, web, gated = lines[1:]
    assert big.split()[:3] == ["default/big", "Unschedulable", "<none>"]
    # The FitError is longer than the 120 columns allow: the table cuts it, -o wide keeps it whole.
    full = "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    assert len(big) == 120 and big.endswith("…")
    assert full.startswith(big[lines[0].index("REASON") : -1])
    assert format_table(result, wide=True).splitlines()[1].endswith(full)
    node = result.records[1].node
    assert web.split()[:3] == ["default/web", "Scheduled", node]
    assert web.endswith(f"feasible 2/3, score {result.records[1].score}")
    assert gated.split()[:3] == ["default/gated", "Gated", "<none>"]
    assert gated.endswith("waiting for scheduling gates: [g]")
    assert all(line == line.rstrip() for line in lines)


def test_table_single_feasible_node_has_no_score() -> None:
    line = format_table(run_text(node_yaml("n1") + pod_yaml("p"))).splitlines()[1]
    assert line.split() == ["default/p", "Scheduled", "n1", "feasible", "1/1"]


def test_table_without_pending_pods() -> None:
    assert format_table(run_text(node_yaml("n1"))) == "No pending pods.\n"


def test_format_result_rejects_unknown_formats() -> None:
    with pytest.raises(ValueError, match='unknown output format "yaml"'):
        format_result(run_text(MIXED), "yaml")


def test_simulate_convenience_is_deterministic_with_a_seed(tmp_path: Path) -> None:
    path = tmp_path / "state.yaml"
    path.write_text(MIXED + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    cfg, registry = default_setup()
    first = simulate(str(path), cfg, registry, seed=7, output="json")
    assert first == simulate(str(path), cfg, registry, seed=7, output="json")
    text, warnings = first
    assert json.loads(text)["pods"][0]["pod"] == "default/big"
    assert warnings == [f"{path}: 1 ConfigMap object(s) not simulated (kept for plugins that read them)"]
    table, _ = simulate(str(path), cfg, registry, seed=7)
    assert table.startswith("POD")


def test_simulate_raises_state_errors_and_checks_output_first(tmp_path: Path) -> None:
    cfg, registry = default_setup()
    with pytest.raises(ValueError, match="unknown output format"):
        simulate(str(tmp_path / "missing.yaml"), cfg, registry, output="yaml")
    with pytest.raises(StateError, match="no such file"):
        simulate(str(tmp_path / "missing.yaml"), cfg, registry)


@pytest.mark.parametrize("name", ["basic", "unschedulable", "gated-priority"])
def test_examples_run(name: str) -> None:
    cfg, registry = default_setup()
    text, _ = simulate(str(EXAMPLES / f"{name}.yaml"), cfg, registry, seed=1, output="json")
    statuses = [p["status"] for p in json.loads(text)["pods"]]
    expected = {
        "basic": ["Scheduled"] * 3,
        "unschedulable": ["Unschedulable", "Scheduled", "Scheduled", "Unschedulable"],
        "gated-priority": ["Scheduled", "Gated", "Scheduled", "Unschedulable"],
    }
    assert statuses == expected[name]
