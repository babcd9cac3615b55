"""A/B configurations (app/simulate/compare.py): the pods that move, the plugins behind each move, the
unschedulable delta, the nodes' utilization under both and the nodes each run leaves empty."""

from __future__ import annotations

from pathlib import Path

import orjson
from simulate.simhelpers import node_yaml, pod_yaml, state_of

from app.config import load_config
from app.config.types import SchedulerConfiguration
from app.plugins.registry import in_tree_registry
from app.simulate import compare_configs, load_state
from app.simulate.compare import compare_runs, comparison_dict, run_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "compare"
LEAST = str(EXAMPLES / "least-allocated.yaml")
MOST = str(EXAMPLES / "most-allocated.yaml")
REGISTRY = in_tree_registry()


def config(path: str | None) -> tuple[str | None, SchedulerConfiguration]:
    return path, load_config(path, REGISTRY)


def example_comparison() -> dict[str, object]:
    state = load_state(str(EXAMPLES / "state.yaml"))
    text, warnings = compare_configs(state, config(LEAST), config(MOST), REGISTRY, seed=1, output="json")
    assert warnings == []
    comparison: dict[str, object] = orjson.loads(text)["comparison"]
    return comparison


def test_most_allocated_packs_the_pods_least_allocated_spreads() -> None:
    comparison = example_comparison()
    # LeastAllocated puts each web pod on the emptiest node; MostAllocated fills node-1 (half full with
    # db-0) first, then node-3, and leaves two nodes empty.
    moved = [(m["pod"], m["a"], m["b"]) for m in comparison["moved"]]  # type: ignore[attr-defined]
    assert moved == [
        ("shop/web-0", "node-4", "node-1"),
        ("shop/web-1", "node-3", "node-1"),
        ("shop/web-2", "node-2", "node-3"),
        ("shop/web-3", "node-2", "node-3"),
        ("shop/web-4", "node-4", "node-3"),
    ]
    assert comparison["emptyNodes"] == {"a": [], "b": ["node-2", "node-4"]}
    assert comparison["unschedulable"] == {"a": 1, "b": 1, "delta": 0}


def test_the_plugin_behind_each_move_is_named_with_weighted_scores() -> None:
    comparison = example_comparison()
    first = comparison["moved"][0]  # type: ignore[index]
    # web-0 under A: node-4's LeastAllocated score 81 (weight 1); under B: node-1's MostAllocated score
    # 68 times weight 5. Plugins scoring both choices alike (TaintToleration, ...) are not listed.
    assert first["plugins"] == {"NodeResourcesFit": {"a": 81, "b": 340}}
    for moved in comparison["moved"]:  # type: ignore[attr-defined]
        assert next(iter(moved["plugins"])) == "NodeResourcesFit"


def test_node_utilization_under_both_configurations() -> None:
    nodes = {n["node"]: n for n in example_comparison()["nodes"]}  # type: ignore[attr-defined]
    assert list(nodes) == ["node-1", "node-2", "node-3", "node-4"]
    # node-1: db-0 (4 cpu) alone under A; db-0 and two web pods (2 cpu each) under B.
    assert nodes["node-1"]["a"]["cpu"] == {"requested": 4, "allocatable": 8}
    assert nodes["node-1"]["b"]["cpu"] == {"requested": 8, "allocatable": 8}
    assert nodes["node-2"]["b"]["pods"] == {"requested": 0, "allocatable": 110}


def test_comparison_keys_follow_the_contract() -> None:
    comparison = example_comparison()
    assert list(comparison) == ["a", "b", "moved", "unschedulable", "nodes", "emptyNodes"]
    assert comparison["a"]["config"] == LEAST  # type: ignore[index]
    assert comparison["b"]["summary"]["scheduled"] == 6  # type: ignore[index]
    assert list(comparison["moved"][0]) == ["pod", "a", "b", "plugins"]  # type: ignore[index]


def test_the_rest_of_the_json_is_configuration_a_s_run() -> None:
    state = load_state(str(EXAMPLES / "state.yaml"))
    text, _ = compare_configs(state, config(LEAST), config(MOST), REGISTRY, seed=1, output="json")
    doc = orjson.loads(text)
    assert list(doc) == ["seed", "summary", "pods", "nodes", "comparison"]
    assert doc["seed"] == 1
    assert [p["node"] for p in doc["pods"][:3]] == ["node-4", "node-3", "node-2"]


def test_same_configuration_moves_nothing() -> None:
    state = load_state(str(EXAMPLES / "state.yaml"))
    comparison = compare_runs(
        run_config(state, config(None)[1], REGISTRY, 7, None),
        run_config(state, config(None)[1], REGISTRY, 7, None),
    )
    doc = comparison_dict(comparison)
    assert doc["moved"] == []
    assert all(n["a"] == n["b"] for n in doc["nodes"])
    state_text, _ = compare_configs(state, config(None), config(None), REGISTRY, seed=7)
    assert "0 of 7 pending pods placed differently" in state_text
    assert "Every node's utilization is the same under A and B." in state_text


def test_a_pod_only_one_configuration_schedules_counts_in_the_delta(tmp_path: Path) -> None:
    # B drops TaintToleration: the tainted node takes the pod A cannot place.
    no_taints = tmp_path / "no-taints.yaml"
    no_taints.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  plugins:\n"
        "    filter: {disabled: [{name: TaintToleration}]}\n"
        "    score: {disabled: [{name: TaintToleration}]}\n"
        "    preScore: {disabled: [{name: TaintToleration}]}\n"
    )
    taint = "spec:\n  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]\n"
    state = state_of(
        node_yaml("gpu-1", cpu="4", extra=taint) + node_yaml("small", cpu="1") + pod_yaml("big", cpu="2")
    )
    a = run_config(state, config(None)[1], REGISTRY, 1, None)
    b = run_config(state, load_config(str(no_taints), REGISTRY), REGISTRY, 1, str(no_taints))
    doc = comparison_dict(compare_runs(a, b))
    assert doc["unschedulable"] == {"a": 1, "b": 0, "delta": -1}
    # One feasible node: kube-scheduler skips Score, so no plugin scores explain the move.
    assert doc["moved"] == [{"pod": "default/big", "a": None, "b": "gpu-1", "plugins": {}}]
    assert doc["emptyNodes"] == {"a": ["gpu-1", "small"], "b": ["small"]}
