"""/debug/pods traces: the last attempt of each pod, explained like berth simulate's JSON."""

from __future__ import annotations

from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
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
    kept, _, _, _ = traces._attempts["default/p"]
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
