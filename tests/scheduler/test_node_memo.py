"""The node-local memo (app/scheduler/node_memo.py) changes how often plugins are asked, never an
answer: ``berth capacity`` and ``berth simulate`` on generated states give the same placements per
node, the same FitErrors and the same explanations with the memo on and off."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from simulate.simhelpers import default_setup, state_of

from app.framework.cycle_state import CycleState
from app.framework.types import NodeInfo
from app.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable
from app.simulate import format_json, new_engine, run_simulation
from app.simulate.capacity import load_pod_template, run_capacity
from app.simulate.hints import RecordExplainer

ZONES = ("a", "b", "c")


def _node(rng: random.Random, i: int) -> str:
    taints = []
    if rng.random() < 0.1:
        taints.append("{key: dedicated, value: db, effect: NoSchedule}")
    if rng.random() < 0.3:
        taints.append("{key: noisy, value: 'yes', effect: PreferNoSchedule}")
    spec = f"spec: {{unschedulable: {str(rng.random() < 0.03).lower()}, taints: [{', '.join(taints)}]}}\n"
    images = "[{names: [nginx], sizeBytes: 300000000}]" if rng.random() < 0.4 else "[]"
    cpu = rng.choice(("4", "8", "16"))
    return (
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{i:03d}, labels: {{kubernetes.io/hostname: n{i:03d}, "
        f"topology.kubernetes.io/zone: {rng.choice(ZONES)}, disk: {rng.choice(('ssd', 'hdd'))}}}}}\n"
        f"{spec}status: {{allocatable: {{cpu: '{cpu}', memory: {rng.choice((16, 32))}Gi, pods: '110'}}, "
        f"images: {images}}}\n---\n"
    )


def _pod(name: str, cpu: str, memory: str, extra: str = "", labels: str = "{}") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, labels: {labels}}}\n"
        f"spec:\n{extra}  containers: [{{name: c, image: nginx, ports: [],"
        f" resources: {{requests: {{cpu: '{cpu}', memory: {memory}}}}}}}]\n---\n"
    )


def _state(seed: int, nodes: int, running: int, pending: str = "") -> str:
    rng = random.Random(seed)
    text = "".join(_node(rng, i) for i in range(nodes))
    for i in range(running):
        cpu = rng.choice(("500m", "1", "2"))
        text += _pod(f"run-{i}", cpu, "1Gi", f"  nodeName: n{rng.randrange(nodes):03d}\n")
    return text + pending


#: Copies to count: node-local plugins only (the memo is used), and some that are not (the full path).
TEMPLATES = {
    "basic": _pod("web", "1", "2Gi"),
    "tolerating": _pod(
        "tol",
        "1",
        "1Gi",
        "  tolerations: [{key: dedicated, operator: Exists}, {key: noisy, operator: Exists}]\n",
    ),
    "preferred-affinity": _pod(
        "pref",
        "500m",
        "1Gi",
        "  affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 7, preference: "
        "{matchExpressions: [{key: disk, operator: In, values: [ssd]}]}}, {weight: 3, preference: "
        "{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a]}]}}]}}\n",
    ),
    "selector-and-port": _pod(
        "sel", "250m", "256Mi", "  nodeSelector: {disk: ssd}\n  hostNetwork: false\n"
    ).replace("ports: []", "ports: [{containerPort: 80, hostPort: 8080}]"),
    "spread": _pod(
        "spread",
        "500m",
        "512Mi",
        "  topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, "
        "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: spread}}}]\n",
        labels="{app: spread}",
    ),
}


@pytest.mark.parametrize("template", sorted(TEMPLATES))
@pytest.mark.parametrize("seed", [3, 11])
def test_capacity_counts_the_same_with_and_without_the_memo(tmp_path: Path, template: str, seed: int) -> None:
    cfg, registry = default_setup()
    state = state_of(_state(seed, nodes=160, running=240))
    path = tmp_path / "pod.yaml"
    path.write_text(TEMPLATES[template].removesuffix("---\n"))
    pod = load_pod_template(str(path), state, cfg)
    on = run_capacity(state, pod, cfg, registry, seed=seed, memoize=True)
    off = run_capacity(state, pod, cfg, registry, seed=seed, memoize=False)
    assert on.stopped_by == off.stopped_by == "FitError"
    assert on.replicas == off.replicas > 50
    assert on.per_node == off.per_node
    assert on.message == off.message


def test_the_memo_asks_filters_about_changed_nodes_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    original = NodeUnschedulable.filter

    def counting(self: NodeUnschedulable, state: CycleState, pod: object, node_info: NodeInfo) -> object:
        asked.append(node_info.name)
        return original(self, state, pod, node_info)  # type: ignore[arg-type]

    monkeypatch.setattr(NodeUnschedulable, "filter", counting)
    cfg, registry = default_setup()
    state = state_of(_state(5, nodes=160, running=100))
    path = tmp_path / "pod.yaml"
    path.write_text(TEMPLATES["basic"].removesuffix("---\n"))
    pod = load_pod_template(str(path), state, cfg)
    on = run_capacity(state, pod, cfg, registry, seed=5, max_replicas=200, memoize=True)
    with_memo = len(asked)
    asked.clear()
    off = run_capacity(state, pod, cfg, registry, seed=5, max_replicas=200, memoize=False)
    assert on.per_node == off.per_node
    # Without the memo every copy filters about 100 sampled nodes; with it, each node once, then
    # only the node the previous copy took.
    assert len(asked) > 200 * 90
    assert with_memo < 160 + 2 * 200


def _pending(seed: int) -> str:
    """Workloads of identical replicas (the memo's case), interleaved with pods it must not serve."""
    rng = random.Random(seed)
    docs = []
    for i in range(60):
        docs.append(TEMPLATES["basic"].replace("name: web", f"name: web-{i}"))
        if i % 3 == 0:
            docs.append(TEMPLATES["preferred-affinity"].replace("name: pref", f"name: pref-{i}"))
        if i % 4 == 0:
            docs.append(TEMPLATES["spread"].replace("name: spread,", f"name: spread-{i},"))
        if i % 5 == 0:
            docs.append(TEMPLATES["tolerating"].replace("name: tol", f"name: tol-{i}"))
        if i % 7 == 0:  # high priority and too big: preempts (nominated pods turn the memo off)
            docs.append(
                _pod(f"big-{i}", str(rng.choice((7, 15))), "4Gi", "  priority: 1000\n").replace(
                    "ports: []", "ports: []"
                )
            )
    return "".join(docs)


@pytest.mark.parametrize("seed", [2, 9])
def test_simulate_gives_the_same_report_with_and_without_the_memo(seed: int) -> None:
    cfg, registry = default_setup()
    text = _state(seed, nodes=130, running=500, pending=_pending(seed))
    reports = []
    for memoize in (True, False):
        state = state_of(text)
        engine = new_engine(state, cfg, registry, seed, memoize=memoize)
        result = run_simulation(state, engine, RecordExplainer(state, cfg, registry, seed, with_details=True))
        reports.append(format_json(result, seed))
    assert '"Unschedulable"' in reports[0] and '"Scheduled"' in reports[0]
    assert reports[0] == reports[1]
