"""The node memo in ``berth run`` (app/scheduler/node_memo.py): the cluster changes between cycles
through informer events and binding threads, and still every decision, FitError message,
explanation and metric is the same with the memo on and off.

The engine is driven as berth run's threads drive it: scheduling cycles that assume pods, bindings
finished later and out of order or failed (forget), bound pods confirmed by the informer, pods
deleted, nodes updated, added and removed, high-priority pods that preempt (nominations, dry runs),
and pods of several shapes, some repeated (the memo's case) and some not.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from app import metrics
from app.api.objects import Node, Pod
from app.config import load_config
from app.framework.cycle_state import CycleState
from app.plugins.registry import in_tree_registry
from app.scheduler import node_memo
from app.scheduler.scheduler import Attempt, Engine
from app.standalone.traces import DecisionTraces
from builders import make_node, make_pod

PROFILE = "default-scheduler"
ZONES = ("a", "b", "c")


def _node(rng: random.Random, name: str) -> Node:
    taints = []
    if rng.random() < 0.1:
        taints.append({"key": "dedicated", "value": "db", "effect": "NoSchedule"})
    if rng.random() < 0.3:
        taints.append({"key": "noisy", "value": "yes", "effect": "PreferNoSchedule"})
    return make_node(
        name,
        {"cpu": rng.choice(("1", "2", "4")), "memory": rng.choice(("8Gi", "16Gi")), "pods": "110"},
        labels={"topology.kubernetes.io/zone": rng.choice(ZONES), "disk": rng.choice(("ssd", "hdd"))},
        unschedulable=rng.random() < 0.04,
        taints=taints,
        status={"images": [{"names": ["nginx"], "sizeBytes": 300_000_000}]} if rng.random() < 0.4 else {},
    )


def _shape(kind: str, name: str) -> Pod:
    """A pod of one of the script's shapes; pods of one kind differ only in name and uid."""
    if kind == "basic":
        return make_pod(name, [{"cpu": "500m", "memory": "1Gi"}])
    if kind == "tolerating":
        tolerations = [{"key": "dedicated", "operator": "Exists"}, {"key": "noisy", "operator": "Exists"}]
        return make_pod(name, [{"cpu": "1", "memory": "1Gi"}], tolerations=tolerations)
    if kind == "zone-a":
        term = {
            "matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]
        }
        preferred = [
            {
                "weight": 5,
                "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
            }
        ]
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]},
                "preferredDuringSchedulingIgnoredDuringExecution": preferred,
            }
        }
        return make_pod(name, [{"cpu": "250m", "memory": "512Mi"}], affinity=affinity)
    if kind == "big":  # fills nodes: FitErrors once the cluster is full
        return make_pod(name, [{"cpu": "3", "memory": "4Gi"}])
    if kind == "spread":  # not node-local: the full path
        constraint = {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
        }
        return make_pod(
            name, [{"cpu": "250m"}], labels={"app": "spread"}, topologySpreadConstraints=[constraint]
        )
    if kind == "urgent":  # high priority and large: preempts, and its nomination turns the memo off
        return make_pod(name, [{"cpu": "3500m", "memory": "2Gi"}], priority=1000)
    assert kind == "distinct"  # a shape of its own every time: the memo never pays
    return make_pod(name, [{"cpu": f"{100 + int(name.rsplit('-', 1)[1])}m"}])


KINDS = ("basic",) * 6 + (
    "tolerating",
    "tolerating",
    "zone-a",
    "zone-a",
    "big",
    "big",
    "spread",
    "distinct",
    "urgent",
)


@dataclass
class Run:
    """What a user of berth run could observe of one scripted run."""

    decisions: list[tuple[Any, ...]] = field(default_factory=list)
    explanations: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[tuple[str, ...], float] = field(default_factory=dict)


def _observable(attempt: Attempt) -> tuple[Any, ...]:
    result = attempt.result
    statuses = attempt.diagnosis.node_to_status.statuses
    scores = [(s.name, s.total, dict(s.plugin_scores)) for s in result.scores] if result is not None else []
    return (
        attempt.pod.key,
        attempt.status,
        attempt.node,
        attempt.message,
        attempt.nominated_node,
        sorted(v.name for v in attempt.victims),
        None if result is None else (result.evaluated_nodes, result.feasible_nodes),
        {name: (s.code, s.message(), s.plugin) for name, s in statuses.items()},
        sorted(attempt.diagnosis.unschedulable_plugins),
        scores,
    )


def _metric_samples() -> dict[tuple[str, ...], float]:
    """Every sample of the series a cycle feeds: plugin evaluations, and the observation counts of
    plugin and extension-point durations (the durations themselves are timings)."""
    out: dict[tuple[str, ...], float] = {}
    for family in (
        metrics.PLUGIN_EVALUATION_TOTAL,
        metrics.PLUGIN_EXECUTION_DURATION,
        metrics.FRAMEWORK_EXTENSION_POINT_DURATION,
    ):
        for metric in family.collect():
            for sample in metric.samples:
                if sample.name.endswith(("_bucket", "_sum", "_created")):
                    continue
                out[(sample.name, *sorted(sample.labels.items()))] = sample.value  # type: ignore[arg-type]
    return out


def _delta(
    before: dict[tuple[str, ...], float], after: dict[tuple[str, ...], float]
) -> dict[tuple[str, ...], float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


def _engine(seed: int, memoize: bool, nodes: int) -> Engine:
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=seed)
    engine.algorithm.memoize_node_local = memoize
    engine.algorithm.time_sampled_cycles_in_full = True  # as berth run wires it
    rng = random.Random(seed)
    for i in range(nodes):
        engine.cache.add_node(_node(rng, f"n{i:03d}"))
    return engine


def _script(seed: int, memoize: bool, steps: int, nodes: int = 150) -> Run:
    """Run the same interleaving of cycles and cluster changes; the script's choices depend on the
    seed and on what was decided, so equal decisions keep the two runs in step."""
    engine = _engine(seed, memoize, nodes)
    fwk = engine.profiles[PROFILE]
    rng = random.Random(seed * 7919)
    traces = DecisionTraces()
    run = Run()
    binding: list[tuple[CycleState, Pod, Attempt]] = []  # assumed, binding not finished yet
    bound: list[Pod] = []
    node_names = [f"n{i:03d}" for i in range(nodes)]
    before = _metric_samples()
    for step in range(steps):
        op = rng.random()
        if op < 0.62:
            kind = rng.choice(KINDS)
            pod = _shape(kind, f"{kind}-{step}")
            state = engine.new_cycle_state()
            attempt = engine.scheduling_cycle(fwk, state, pod)
            if attempt.status == "Scheduled":
                binding.append((state, pod, attempt))
            else:
                engine.nominate(pod, attempt)
            run.decisions.append(_observable(attempt))
            traces.record(attempt, lambda: [n.name for n in engine.algorithm.snapshot.list()])
            explained = traces.explain(pod.key)
            assert explained is not None
            run.explanations.append(explained)
        elif op < 0.80 and binding:  # a binding thread finishes (in any order)
            state, pod, attempt = binding.pop(rng.randrange(len(binding)))
            done = engine.binding_cycle(fwk, state, pod, attempt)
            assert done.status == "Scheduled" and attempt.assumed is not None
            bound.append(attempt.assumed)
        elif op < 0.84 and binding:  # a bind that failed: unreserved and forgotten
            state, pod, attempt = binding.pop(rng.randrange(len(binding)))
            assert attempt.assumed is not None and attempt.node is not None
            fwk.run_reserve_plugins_unreserve(state, attempt.assumed, attempt.node)
            engine.cache.forget_pod(attempt.assumed)
        elif op < 0.90 and bound:  # a pod deleted
            gone = bound.pop(rng.randrange(len(bound)))
            engine.cache.remove_pod(gone)
            engine.nominator.delete_nominated_pod_if_exists(gone)
        elif op < 0.96:  # a node's labels, taints or unschedulable changed
            name = rng.choice(node_names)
            old = engine.cache.get_node(name)
            if old is not None:
                engine.cache.update_node(old, _node(rng, name))
        elif op < 0.98:  # a node added
            name = f"x{step:03d}"
            node_names.append(name)
            engine.cache.add_node(_node(rng, name))
        else:  # a node removed (its pods stay until deleted)
            name = node_names.pop(rng.randrange(len(node_names)))
            old = engine.cache.get_node(name)
            if old is not None:
                engine.cache.remove_node(old)
        run.decisions.append(("step", step, len(binding), len(bound)))
    run.metrics = _delta(before, _metric_samples())
    return run


@pytest.mark.parametrize("seed", [1, 4, 23])
def test_decisions_explanations_and_metrics_are_the_same_with_the_memo_on_and_off(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = _Spy()
    spy.wrap(monkeypatch, node_memo.NodeMemo, "catch_up")
    on = _script(seed, memoize=True, steps=500)
    assert spy.calls["catch_up"] > 100  # the memo served many cycles
    off = _script(seed, memoize=False, steps=500)
    assert on.decisions == off.decisions
    assert on.explanations == off.explanations
    assert on.metrics == off.metrics
    statuses = {d[1] for d in on.decisions if d[0] != "step"}
    assert {"Scheduled", "Unschedulable"} <= statuses  # the script reaches FitErrors
    assert any(d[5] for d in on.decisions if d[0] != "step")  # and preemption with victims
    # the plugins' durations were sampled (one cycle in ten), with every plugin timed
    assert any(k[0].startswith("scheduler_plugin_execution_duration_seconds") for k in on.metrics)


@dataclass
class _Spy:
    """Counts the memo's work, and fails if it is done while PostFilter (preemption) runs."""

    in_post_filter: bool = False
    calls: dict[str, int] = field(default_factory=dict)

    def wrap(self, monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> None:
        original = getattr(cls, name)

        def spied(*args: Any, **kwargs: Any) -> Any:
            assert not self.in_post_filter, f"{cls.__name__}.{name} called during preemption"
            self.calls[name] = self.calls.get(name, 0) + 1
            return original(*args, **kwargs)

        monkeypatch.setattr(cls, name, spied)


def test_preemption_neither_reads_nor_writes_the_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy()
    for name in ("catch_up", "check", "score", "use_filters", "follow", "note_changes", "found"):
        spy.wrap(monkeypatch, node_memo.NodeMemo, name)
    spy.wrap(monkeypatch, node_memo.NodeMemos, "for_pod")
    engine = _engine(3, memoize=True, nodes=120)
    fwk = engine.profiles[PROFILE]
    run_post_filter = fwk.run_post_filter_plugins

    def post_filter(*args: Any, **kwargs: Any) -> Any:
        spy.in_post_filter = True
        try:
            return run_post_filter(*args, **kwargs)
        finally:
            spy.in_post_filter = False

    monkeypatch.setattr(fwk, "run_post_filter_plugins", post_filter)
    victims = 0
    for i in range(400):
        attempt = engine.schedule_one(_shape("urgent" if i % 10 == 9 else "big", f"p-{i}"))
        victims += len(attempt.victims)
    assert victims  # preemption ran, with dry runs on every candidate node
    # the memo served the cycles before the first nomination (a nominated pod turns it off)
    assert spy.calls["catch_up"] > 20


def test_sampled_cycles_call_and_time_every_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    def sampled() -> CycleState:
        state = CycleState()
        state.record_plugin_metrics = True
        return state

    def timings(memoize: bool) -> dict[tuple[str, ...], float]:
        engine = _engine(5, memoize=memoize, nodes=150)
        for i in range(5):  # the memo follows the shape from its second cycle
            engine.schedule_one(_shape("basic", f"warm-{i}"))
        monkeypatch.setattr(engine, "new_cycle_state", sampled)
        before = _metric_samples()
        assert engine.schedule_one(_shape("basic", "sampled")).status == "Scheduled"
        return {k: v for k, v in _delta(before, _metric_samples()).items() if "execution" in k[0]}

    on, off = timings(True), timings(False)
    assert on == off  # as many plugin durations, per plugin, point and status, as the full path's
    fit = ("scheduler_plugin_execution_duration_seconds_count", ("extension_point", "Filter"))
    assert sum(v for k, v in on.items() if k[:2] == fit and ("plugin", "NodeResourcesFit") in k) >= 100


def _distinct_pods(count: int) -> Iterator[Pod]:
    for i in range(count):
        yield make_pod(f"d-{i}", [{"cpu": f"{100 + i}m"}], labels={"i": str(i)})


def test_distinct_pods_never_make_the_memo_follow_the_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy()
    for name in ("follow", "note_changes", "catch_up"):
        spy.wrap(monkeypatch, node_memo.NodeMemo, name)
    spy.wrap(monkeypatch, node_memo.NodeMemos, "_follow")
    engine = _engine(6, memoize=True, nodes=120)
    for pod in _distinct_pods(60):
        engine.schedule_one(pod)
    # a shape seen once costs a lookup among the kept shapes, nothing per node
    assert spy.calls == {}
