"""/debug/pods traces: the last attempt of each pod, explained like berth simulate's JSON."""

from __future__ import annotations

from typing import Any

from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Attempt, Engine
from app.simulate.report import record_dict
from app.simulate.runner import explain_attempt
from app.standalone.traces import DecisionTraces
from builders import make_node, make_pod


def _engine() -> Engine:
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, seed=1)
    for name, cpu in (("a", "2"), ("b", "4")):
        e.cache.add_node(make_node(name, {"cpu": cpu, "memory": "8Gi", "pods": "110"}))
    return e


def test_a_failed_attempt_lists_every_node_with_its_rejecting_plugin() -> None:
    e = _engine()
    pod = make_pod("big", [{"cpu": "8"}])
    traces = DecisionTraces()
    attempt = e.schedule_one(pod)
    traces.record(attempt, lambda: ["a", "b"], attempts=3)
    trace = traces.explain("default/big")
    assert trace is not None
    assert trace["status"] == "Unschedulable"
    assert trace["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert trace["attempts"] == 3
    assert {n: v["plugin"] for n, v in trace["filter"].items()} == {
        "a": "NodeResourcesFit",
        "b": "NodeResourcesFit",
    }
    assert trace["filter"]["a"]["reasons"] == ["Insufficient cpu"]


def test_a_scheduled_attempt_shows_the_scores_and_the_store_is_bounded() -> None:
    e = _engine()
    traces = DecisionTraces(capacity=2)
    for name in ("p1", "p2", "p3"):
        traces.record(e.schedule_one(make_pod(name, [{"cpu": "1"}])), list)
    assert traces.explain("default/p1") is None  # the oldest went first
    trace = traces.explain("default/p3")
    assert trace is not None and trace["status"] == "Scheduled"
    assert set(trace["scores"]) == {"a", "b"}
    assert trace["scores"][trace["node"]]["total"] >= max(s["total"] for s in trace["scores"].values())
    traces.forget("default/p3")
    assert traces.explain("default/p3") is None


def test_a_kept_trace_explains_as_the_attempt_without_holding_its_raw_pod() -> None:
    e = _engine()
    pod = make_pod("p", [{"cpu": "1"}])
    attempt = e.schedule_one(pod)
    traces = DecisionTraces()
    traces.record(attempt, list)
    expected = record_dict(explain_attempt(attempt, []))
    trace = traces.explain("default/p")
    assert trace is not None
    assert {k: v for k, v in trace.items() if k != "attempts"} == expected
    kept = traces._attempts["default/p"][0]
    assert kept.pod.raw == {} and pod.raw  # the informer's copy is the pod's object; the trace names it
    assert kept.assumed is None


def test_recent_lists_the_latest_outcomes_newest_first_without_explaining() -> None:
    e = _engine()
    traces = DecisionTraces(capacity=3)
    for name, cpu in (("p1", "1"), ("p2", "8"), ("p3", "1"), ("p4", "1")):
        traces.record(e.schedule_one(make_pod(name, [{"cpu": cpu}])), lambda: ["a", "b"])
    recent = traces.recent(10)
    assert [(d["pod"], d["status"]) for d in recent] == [
        ("default/p4", "Scheduled"),
        ("default/p3", "Scheduled"),
        ("default/p2", "Unschedulable"),
    ]
    assert recent[0]["node"] in ("a", "b") and recent[0]["profile"] == "default-scheduler"
    assert recent[2]["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert recent[0]["time"] >= recent[1]["time"] >= recent[2]["time"]
    assert [d["pod"] for d in traces.recent(1)] == ["default/p4"]
    assert [d["pod"] for d in traces.recent(10, since=recent[1]["time"])] == ["default/p4"]
    assert traces.recent(10, since=recent[0]["time"]) == []


def _engine_of(nodes: dict[str, dict[str, str]]) -> Engine:
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, seed=1)
    for name, allocatable in nodes.items():
        e.cache.add_node(make_node(name, allocatable))
    return e


def _kept_and_explained(attempt: Attempt) -> tuple[DecisionTraces, dict[str, Any]]:
    """A store holding ``attempt``, and its explanation, checked to be the attempt's own (same
    entries in the same order)."""
    expected = record_dict(explain_attempt(attempt, []))
    traces = DecisionTraces()
    traces.record(attempt, list)
    trace = traces.explain(attempt.pod.key)
    assert trace is not None
    assert {k: v for k, v in trace.items() if k != "attempts"} == expected
    assert list(trace["filter"]) == list(expected["filter"])
    return traces, trace


def test_a_failed_attempt_kept_grouped_explains_every_node_as_the_attempt_did() -> None:
    # Three verdicts over six nodes: too little cpu, too little memory, and both.
    e = _engine_of(
        {
            "c1": {"cpu": "1", "memory": "8Gi", "pods": "110"},
            "m1": {"cpu": "8", "memory": "1Gi", "pods": "110"},
            "c2": {"cpu": "1", "memory": "8Gi", "pods": "110"},
            "b1": {"cpu": "1", "memory": "1Gi", "pods": "110"},
            "m2": {"cpu": "8", "memory": "1Gi", "pods": "110"},
            "c3": {"cpu": "1", "memory": "8Gi", "pods": "110"},
        }
    )
    attempt = e.schedule_one(make_pod("p", [{"cpu": "2", "memory": "2Gi"}]))
    assert attempt.status == "Unschedulable"
    traces, trace = _kept_and_explained(attempt)
    assert trace["filter"]["b1"]["reasons"] == ["Insufficient cpu", "Insufficient memory"]
    assert trace["filter"]["m2"]["reasons"] == ["Insufficient memory"]
    assert traces.node_entries_held() == 6  # one per node with a verdict


def test_the_store_forgets_the_oldest_pods_once_their_node_entries_exceed_the_budget() -> None:
    e = _engine_of({f"n{i}": {"cpu": "1", "pods": "110"} for i in range(4)})
    # Each failed attempt holds 4 node entries (a verdict per node): a budget of 10 keeps two.
    traces = DecisionTraces(node_entries=10)
    for name in ("p1", "p2", "p3"):
        traces.record(e.schedule_one(make_pod(name, [{"cpu": "2"}])), list)
    assert traces.explain("default/p1") is None
    assert traces.explain("default/p2") is not None and traces.explain("default/p3") is not None
    assert len(traces) == 2 and traces.node_entries_held() == 8
    # A pod's new attempt replaces its old one's entries rather than adding to them.
    traces.record(e.schedule_one(make_pod("p3", [{"cpu": "2"}])), list)
    assert len(traces) == 2 and traces.node_entries_held() == 8
    traces.forget("default/p2")
    assert len(traces) == 1 and traces.node_entries_held() == 4
    # A trace larger than the whole budget is still kept: the newest pod is always explained.
    small = DecisionTraces(node_entries=2)
    small.record(e.schedule_one(make_pod("big", [{"cpu": "2"}])), list)
    small.record(e.schedule_one(make_pod("bigger", [{"cpu": "2"}])), list)
    assert len(small) == 1 and small.explain("default/bigger") is not None


def test_kept_scores_explain_as_the_attempt_did() -> None:
    e = _engine_of({f"n{i}": {"cpu": str(i + 1), "memory": f"{i + 1}Gi", "pods": "110"} for i in range(5)})
    traces, trace = _kept_and_explained(e.schedule_one(make_pod("p", [{"cpu": "500m", "memory": "256Mi"}])))
    assert len(trace["scores"]) == 5
    assert traces.node_entries_held() == 5  # one per scored node


def test_a_scheduled_attempt_prepared_before_its_binding_explains_its_rejected_nodes() -> None:
    # berth run prepares a scheduled attempt's trace before the binding cycle and keeps it once the
    # pod is bound; the binding cycle waits with the attempt without its per-node statuses.
    e = _engine_of(
        {
            "small": {"cpu": "1", "memory": "8Gi", "pods": "110"},
            "big": {"cpu": "8", "memory": "8Gi", "pods": "110"},
        }
    )
    attempt = e.schedule_one(make_pod("p", [{"cpu": "2"}]))
    assert attempt.status == "Scheduled" and attempt.node == "big"
    expected = record_dict(explain_attempt(attempt, []))
    traces = DecisionTraces()
    prepared = traces.prepare(attempt, list)
    waiting = prepared.light  # what the binding cycle waits with
    assert attempt.diagnosis.node_to_status.statuses  # "small" was rejected, and the attempt says so
    assert not waiting.diagnosis.node_to_status.statuses
    assert waiting.result is not None and not waiting.result.diagnosis.node_to_status.statuses
    assert waiting.node == "big" and waiting.assumed is attempt.assumed
    assert traces.explain("default/p") is None  # prepared, not kept yet
    traces.keep(prepared)
    trace = traces.explain("default/p")
    assert trace is not None
    assert {k: v for k, v in trace.items() if k != "attempts"} == expected
    assert trace["filter"]["small"]["reasons"] == ["Insufficient cpu"]


def test_kept_traces_share_their_empty_plugin_sets_and_absent_status_and_explain_with_their_own() -> None:
    """Most attempts' diagnoses have no rejecting plugins and the default absent-node status: the
    store keeps one of each for all its traces, and an explanation still gets sets of its own."""
    e = _engine_of({f"n{i}": {"cpu": "4", "memory": "4Gi", "pods": "110"} for i in range(3)})
    first, second = (e.schedule_one(make_pod(name, [{"cpu": "1"}])) for name in ("p1", "p2"))
    expected = record_dict(explain_attempt(second, []))
    traces = DecisionTraces()
    traces.record(first, list)
    prepared = traces.prepare(second, list)
    traces.keep(prepared)
    kept = [traces._attempts[key][0].diagnosis for key in ("default/p1", "default/p2")]
    assert kept[0].unschedulable_plugins is kept[1].unschedulable_plugins == frozenset()
    assert kept[0].pending_plugins is kept[1].pending_plugins
    assert kept[0].node_to_status.absent is kept[1].node_to_status.absent
    # The binding cycle's attempt reads the same (empty) plugins; the scheduled attempt keeps its own.
    assert (
        not prepared.light.diagnosis.unschedulable_plugins and second.diagnosis.unschedulable_plugins == set()
    )
    assert second.diagnosis.unschedulable_plugins is not kept[1].unschedulable_plugins
    trace = traces.explain("default/p2")
    assert trace is not None and {k: v for k, v in trace.items() if k != "attempts"} == expected
