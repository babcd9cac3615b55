"""The metrics one scheduling cycle feeds, with kube-scheduler's series (schedule_one.go, framework.go)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app import metrics
from app.api.objects import Pod
from app.config import load_config
from app.framework.cycle_state import CycleState
from app.framework.status import Status
from app.framework.types import NodeInfo
from app.plugins.nodename.node_name import NodeName
from app.plugins.registry import in_tree_registry
from app.scheduler import scheduler as scheduler_module
from app.scheduler.scheduler import Engine
from builders import make_node, make_pod

PROFILE = "default-scheduler"


def _engine() -> Engine:
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, seed=1)
    for name, cpu in (("small", "1"), ("big-1", "8"), ("big-2", "8")):
        e.cache.add_node(make_node(name, {"cpu": cpu, "memory": "8Gi", "pods": "110"}))
    return e


def _point_count(point: str, code: str) -> int:
    return metrics.FRAMEWORK_EXTENSION_POINT_DURATION.sample_count((point, code, PROFILE))


def test_a_cycle_records_every_extension_point_and_the_algorithm() -> None:
    e = _engine()
    points = ("Reserve", "Permit", "PreBind", "Bind", "PostBind", "PreFilter", "PreScore", "Score")
    before = {p: _point_count(p, "Success") for p in points}
    rejected = "UnschedulableAndUnresolvable"  # the small node's capacity is below the request
    filter_ok, filter_rejected = _point_count("Filter", "Success"), _point_count("Filter", rejected)
    algorithm = metrics.SCHEDULING_ALGORITHM_DURATION.sample_count(())
    filter_seconds = metrics.FRAMEWORK_EXTENSION_POINT_DURATION.series(("Filter", "Success", PROFILE))[1]
    seconds_before = filter_seconds[0]
    attempt = e.schedule_one(make_pod("p", [{"cpu": "2", "memory": "100Mi"}]))
    assert attempt.status == "Scheduled" and attempt.node in ("big-1", "big-2")
    assert {p: _point_count(p, "Success") - before[p] for p in points} == dict.fromkeys(points, 1)
    # one Filter observation per node checked, as kube times each node: two fit, one is too small
    assert _point_count("Filter", "Success") - filter_ok == 2
    assert _point_count("Filter", rejected) - filter_rejected == 1
    assert 0 < filter_seconds[0] - seconds_before < 0.5  # the nodes' share of the filtering time
    assert metrics.SCHEDULING_ALGORITHM_DURATION.sample_count(()) == algorithm + 1


def test_plugin_evaluations_count_the_calls_each_plugin_made() -> None:
    e = _engine()
    table = metrics.PLUGIN_EVALUATION_TOTAL
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    e.cache.add_node(make_node("tainted", {"cpu": "8", "memory": "8Gi", "pods": "110"}, taints=[taint]))
    names = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeResourcesFit")
    before = {n: table.value(n, "Filter", PROFILE) for n in names}
    score_before = table.value("NodeResourcesFit", "Score", PROFILE)
    e.schedule_one(make_pod("p", [{"cpu": "2", "memory": "100Mi"}]))
    # four nodes reach TaintToleration, which stops the tainted one: three reach NodeResourcesFit
    assert {n: table.value(n, "Filter", PROFILE) - before[n] for n in names} == {
        "NodeUnschedulable": 4,
        "NodeName": 4,  # counted as kube calls it, though berth need not for a pod naming no node
        "TaintToleration": 4,
        "NodeResourcesFit": 3,
    }
    assert table.value("NodeResourcesFit", "Score", PROFILE) - score_before == 2  # the two that fit


def test_cache_size_reads_the_cache() -> None:
    e = _engine()
    metrics.CACHE_SIZE.sizes = e.cache.sizes
    try:
        e.schedule_one(make_pod("p", [{"cpu": "2", "memory": "100Mi"}]))
        text = metrics.render().decode()
    finally:
        metrics.CACHE_SIZE.sizes = None
    assert 'scheduler_cache_size{type="nodes"} 3' in text
    assert 'scheduler_cache_size{type="pods"} 1' in text


@pytest.fixture
def node_name_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The nodes NodeName's Filter is called on."""
    calls: list[str] = []
    original = NodeName.filter

    def counted(self: NodeName, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        calls.append(node_info.name)
        return original(self, state, pod, node_info)

    monkeypatch.setattr(NodeName, "filter", counted)
    yield calls


@pytest.mark.parametrize("sampled", [False, True])
def test_node_name_is_not_called_for_a_pod_naming_no_node_yet_counted_as_kube_calls_it(
    monkeypatch: pytest.MonkeyPatch, node_name_calls: list[str], sampled: bool
) -> None:
    monkeypatch.setattr(scheduler_module, "PLUGIN_METRICS_SAMPLE_PERCENT", 100 if sampled else 0)
    e = _engine()
    before = metrics.PLUGIN_EVALUATION_TOTAL.value("NodeName", "Filter", PROFILE)
    attempt = e.schedule_one(make_pod("p", [{"cpu": "2", "memory": "100Mi"}]))
    assert attempt.status == "Scheduled"
    assert metrics.PLUGIN_EVALUATION_TOTAL.value("NodeName", "Filter", PROFILE) - before == 3
    # a cycle that times the plugins calls every one of them, to time it
    assert sorted(node_name_calls) == (["big-1", "big-2", "small"] if sampled else [])


def test_node_name_still_filters_a_pod_that_names_a_node(
    monkeypatch: pytest.MonkeyPatch, node_name_calls: list[str]
) -> None:
    monkeypatch.setattr(scheduler_module, "PLUGIN_METRICS_SAMPLE_PERCENT", 0)
    e = _engine()
    attempt = e.schedule_one(make_pod("p", [{"cpu": "2", "memory": "100Mi"}], nodeName="big-2"))
    assert attempt.status == "Scheduled" and attempt.node == "big-2"
    assert sorted(node_name_calls) == ["big-1", "big-2", "small"]
