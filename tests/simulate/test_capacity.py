"""``berth capacity``'s counting: copies through the full engine, one at a time, preemption off."""

from __future__ import annotations

from pathlib import Path

import pytest
from simulate.simhelpers import default_setup, node_yaml, pod_yaml, state_of

from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.simulate.capacity import CapacityError, CapacityResult, load_pod_template, run_capacity


def count(tmp_path: Path, state_text: str, pod_text: str, max_replicas: int | None = None) -> CapacityResult:
    cfg, registry = default_setup()
    state = state_of(state_text)
    path = tmp_path / "pod.yaml"
    path.write_text(pod_text.removesuffix("---\n"))
    template = load_pod_template(str(path), state, cfg)
    return run_capacity(state, template, cfg, registry, seed=1, max_replicas=max_replicas)


def running(name: str, node: str, cpu: str, priority: int = 0) -> str:
    return pod_yaml(name, cpu=cpu, spec=f"  nodeName: {node}\n  priority: {priority}\n")


def test_counts_per_node_and_names_the_fit_error(tmp_path: Path) -> None:
    state = node_yaml("n1", cpu="4") + node_yaml("n2", cpu="2") + running("db", "n1", "1")
    result = count(tmp_path, state, pod_yaml("web", cpu="1"))
    assert (result.replicas, result.per_node) == (5, {"n1": 3, "n2": 2})
    assert result.stopped_by == "FitError"
    assert result.message == "0/2 nodes are available: 2 Insufficient cpu."


def test_each_copy_counts_for_the_next(tmp_path: Path) -> None:
    # Required anti-affinity to its own label: one replica per node, then a FitError that says why.
    spec = (
        "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "      - {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}\n"
    )
    template = pod_yaml("web", cpu="100m", spec=spec).replace(
        "metadata: {name: web,", "metadata: {labels: {app: web}, name: web,"
    )
    result = count(tmp_path, node_yaml("n1") + node_yaml("n2") + node_yaml("n3"), template)
    assert (result.replicas, result.per_node) == (3, {"n1": 1, "n2": 1, "n3": 1})
    assert "3 node(s) didn't match pod anti-affinity rules" in result.message


def test_preemption_is_off(tmp_path: Path) -> None:
    state = node_yaml("n1", cpu="2") + running("low", "n1", "2", priority=-5)
    result = count(tmp_path, state, pod_yaml("urgent", cpu="1", spec="  priority: 1000\n"))
    assert result.replicas == 0 and result.per_node == {"n1": 0}
    assert result.message == "0/1 nodes are available: 1 Insufficient cpu."


def test_max_stops_counting(tmp_path: Path) -> None:
    result = count(tmp_path, node_yaml("n1", cpu="8"), pod_yaml("web", cpu="1"), max_replicas=3)
    assert (result.replicas, result.stopped_by, result.message) == (3, "Max", "stopped at --max 3")


def test_allowed_pods_bound_a_pod_without_requests(tmp_path: Path) -> None:
    node = node_yaml("n1").replace('pods: "110"', 'pods: "3"')
    result = count(tmp_path, node, pod_yaml("tiny", cpu="0"))
    assert (result.replicas, result.stopped_by) == (3, "FitError")
    assert result.message == "0/1 nodes are available: 1 Too many pods."


def test_priority_class_of_the_state_is_admitted(tmp_path: Path) -> None:
    pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: batch}\nvalue: 7\n---\n"
    cfg, _ = default_setup()
    path = tmp_path / "pod.yaml"
    path.write_text(pod_yaml("b", spec="  priorityClassName: batch\n"))
    assert load_pod_template(str(path), state_of(pc + node_yaml("n1")), cfg).priority == 7
    with pytest.raises(CapacityError, match=r"pod.yaml: spec.priorityClassName: Not found"):
        load_pod_template(str(path), state_of(node_yaml("n1")), cfg)


def test_without_a_plugin_counting_pods_it_stops_past_the_pod_slots(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n"
        "  plugins: {multiPoint: {disabled: [{name: NodeResourcesFit}]}}\n"
    )
    registry = in_tree_registry()
    cfg = load_config(str(config), registry)
    state = state_of(node_yaml("n1").replace('pods: "110"', 'pods: "2"'))
    pod = tmp_path / "pod.yaml"
    pod.write_text(pod_yaml("p").removesuffix("---\n"))
    result = run_capacity(state, load_pod_template(str(pod), state, cfg), cfg, registry, seed=1)
    assert (result.replicas, result.stopped_by) == (3, "Max")
    assert result.message == (
        "stopped after 3: more than the nodes' allocatable pods (2) fit, so no plugin counts pods "
        "(is NodeResourcesFit disabled?)"
    )
