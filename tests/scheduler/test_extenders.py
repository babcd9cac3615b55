"""Extenders inside the scheduling cycle (schedule_one.go's findNodesThatPassExtenders,
prioritizeNodes and extendersBinding; preemption's callExtenders), through the real HTTP client
against scripted extenders; cases after schedule_one_test.go's TestSchedulerWithExtenders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extenderstub import stub_extender, unused_url
from prometheus_client import REGISTRY

from app import metrics
from app.api.objects import Node, Pod
from app.config import load_config
from app.config.types import Extender, ExtenderManagedResource
from app.framework.interfaces import EXTENDER_NAME
from app.kube.extender import build_extenders
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from builders import make_node, make_pod


def node(name: str, cpu: str = "4") -> Node:
    return make_node(name, {"cpu": cpu, "memory": "8Gi", "pods": "110"})


def cpu_pod(name: str, cpu: str, **spec: Any) -> Pod:
    return make_pod(name, [{"cpu": cpu, "memory": "100Mi"}], **spec)


def engine(nodes: Sequence[Node], *extenders: Extender, seed: int = 1) -> Engine:
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, seed=seed, extenders=build_extenders(extenders))
    for n in nodes:
        e.cache.add_node(n)
    return e


def reject(names: set[str], message: str, *, unresolvable: bool = False) -> Any:
    """A NodeNames filter answer failing ``names`` with ``message``."""

    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        failed = {n: message for n in body["NodeNames"] if n in names}
        key = "FailedAndUnresolvableNodes" if unresolvable else "FailedNodes"
        return 200, {"NodeNames": [n for n in body["NodeNames"] if n not in names], key: failed}

    return answer


def test_extender_filter_runs_after_the_plugins_and_its_failures_are_in_the_fit_error() -> None:
    with stub_extender({"filter": reject({"b", "c"}, "no GPU here")}) as stub:
        e = engine(
            [node("a", cpu="1"), node("b"), node("c")],
            Extender(url_prefix=stub.url, filter_verb="filter", node_cache_capable=True),
        )
        attempt = e.schedule_one(cpu_pod("p", "2"))
    # Only the nodes the plugins passed reach the extender.
    assert stub.requests[0][1]["NodeNames"] in (["b", "c"], ["c", "b"])
    assert attempt.status == "Unschedulable"
    assert attempt.message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 2 no GPU here. no new claims to deallocate, preemption: "
    )
    assert EXTENDER_NAME in attempt.diagnosis.unschedulable_plugins


def test_unresolvable_failures_win_and_preemption_skips_those_nodes() -> None:
    with stub_extender({"filter": reject({"a", "b"}, "zone closed", unresolvable=True)}) as stub:
        e = engine(
            [node("a"), node("b")],
            Extender(url_prefix=stub.url, filter_verb="filter", node_cache_capable=True),
        )
        attempt = e.schedule_one(cpu_pod("p", "1"))
    assert attempt.message == (
        "0/2 nodes are available: 2 zone closed. no new claims to deallocate, preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    )


def test_prioritize_adds_score_times_weight_times_ten() -> None:
    def prefer_b(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, [{"Host": n, "Score": 10 if n == "b" else 0} for n in body["NodeNames"]]

    with stub_extender({"prioritize": prefer_b}) as stub:
        e = engine(
            [node("a"), node("b"), node("c")],
            Extender(url_prefix=stub.url, prioritize_verb="prioritize", weight=5, node_cache_capable=True),
        )
        attempt = e.schedule_one(cpu_pod("p", "1"))
    assert attempt.node == "b"
    assert attempt.result is not None
    by_node = {s.name: s for s in attempt.result.scores}
    assert by_node["b"].total - by_node["a"].total == 10 * 5 * 10
    assert by_node["b"].plugin_scores[stub.url] == 500


def test_a_prioritize_call_counts_as_a_prioritizing_extender_goroutine_while_it_runs() -> None:
    def running() -> float | None:
        labels = {"operation": metrics.PRIORITIZING_EXTENDER}
        return REGISTRY.get_sample_value("scheduler_goroutines", labels)

    seen: list[float | None] = []

    def observe(body: dict[str, Any]) -> tuple[int, Any]:
        seen.append(running())
        return 200, [{"Host": n, "Score": 1} for n in body["NodeNames"]]

    before = running() or 0.0
    with stub_extender({"prioritize": observe}) as stub:
        e = engine(
            [node("a"), node("b")],
            Extender(url_prefix=stub.url, prioritize_verb="prioritize", weight=1, node_cache_capable=True),
        )
        e.schedule_one(cpu_pod("p", "1"))
    assert seen == [before + 1]  # scheduler_goroutines{operation="prioritizing_extender"} during the call
    assert running() == before


def test_failing_prioritizer_gives_no_score_and_the_pod_still_schedules() -> None:
    with stub_extender({"prioritize": lambda body: (500, {})}) as stub:
        e = engine(
            [node("a"), node("b")],
            Extender(url_prefix=stub.url, prioritize_verb="prioritize", weight=1, node_cache_capable=True),
        )
        attempt = e.schedule_one(cpu_pod("p", "1"))
    assert attempt.status == "Scheduled"
    assert stub.verbs() == ["prioritize"]


def test_non_ignorable_extender_that_is_down_fails_the_attempt_with_gos_message() -> None:
    url = unused_url()
    e = engine([node("a")], Extender(url_prefix=url, filter_verb="filter"))
    attempt = e.schedule_one(cpu_pod("p", "1"))
    port = url.rsplit(":", 1)[1]
    assert attempt.status == "Error"
    assert attempt.message == f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'


def test_ignorable_extender_that_is_down_is_skipped() -> None:
    e = engine([node("a")], Extender(url_prefix=unused_url(), filter_verb="filter", ignorable=True))
    attempt = e.schedule_one(cpu_pod("p", "1"))
    assert attempt.status == "Scheduled" and attempt.node == "a"


def test_extenders_filter_in_turn_and_uninterested_ones_are_not_asked() -> None:
    gpu = ExtenderManagedResource("example.com/gpu")
    with (
        stub_extender({"filter": reject({"a"}, "first says no")}) as first,
        stub_extender({"filter": reject({"b"}, "second says no")}) as second,
        stub_extender({"filter": reject({"c"}, "gpu says no")}) as gpus,
    ):
        e = engine(
            [node("a"), node("b"), node("c")],
            Extender(url_prefix=first.url, filter_verb="filter", node_cache_capable=True),
            Extender(url_prefix=second.url, filter_verb="filter", node_cache_capable=True),
            Extender(
                url_prefix=gpus.url, filter_verb="filter", node_cache_capable=True, managed_resources=[gpu]
            ),
        )
        attempt = e.schedule_one(cpu_pod("p", "1"))
    assert attempt.node == "c"
    assert sorted(second.requests[0][1]["NodeNames"]) == ["b", "c"]
    assert gpus.requests == []


def test_binder_extender_binds_an_interested_pod_instead_of_default_binder() -> None:
    with stub_extender({"bind": lambda body: (200, {"Error": ""})}) as stub:
        e = engine([node("a")], Extender(url_prefix=stub.url, bind_verb="bind"))
        pod = cpu_pod("p", "1")
        attempt = e.schedule_one(pod)
    assert attempt.status == "Scheduled"
    assert stub.requests == [
        ("bind", {"PodName": "p", "PodNamespace": "default", "PodUID": pod.uid, "Node": "a"})
    ]
    # DefaultBinder would have confirmed the pod in the cache; the extender's binding leaves it
    # assumed on the node until the informer sees it bound, as in kube-scheduler.
    cached = e.cache.get_pod(pod.uid)
    assert cached is not None and cached.node_name == "a"


def test_binder_extender_failure_is_a_binding_error() -> None:
    with stub_extender({"bind": lambda body: (200, {"Error": "cannot bind now"})}) as stub:
        e = engine([node("a")], Extender(url_prefix=stub.url, bind_verb="bind"))
        pod = cpu_pod("p", "1")
        attempt = e.schedule_one(pod)
    assert attempt.status == "Error" and attempt.message == "cannot bind now"
    assert e.cache.get_pod(pod.uid) is None


def test_preempt_extender_narrows_the_candidates() -> None:
    low_a = cpu_pod("low-a", "4", nodeName="a", priority=0)
    low_b = cpu_pod("low-b", "4", nodeName="b", priority=0)

    def keep_b(body: dict[str, Any]) -> tuple[int, Any]:
        victims = body["NodeNameToMetaVictims"]
        return 200, {"NodeNameToMetaVictims": {"b": victims["b"]}}

    with stub_extender({"preempt": keep_b}) as stub:
        e = engine(
            [node("a"), node("b")],
            Extender(url_prefix=stub.url, preempt_verb="preempt", node_cache_capable=True),
        )
        e.cache.add_pod(low_a)
        e.cache.add_pod(low_b)
        attempt = e.schedule_one(cpu_pod("high", "4", priority=100))
    assert stub.verbs() == ["preempt"]
    assert sorted(stub.requests[0][1]["NodeNameToMetaVictims"]) == ["a", "b"]
    assert attempt.nominated_node == "b"
    assert [v.name for v in attempt.victims] == ["low-b"]


def test_preempt_extender_that_keeps_a_node_without_victims_is_an_error_unless_ignorable() -> None:
    def no_victims(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"NodeNameToMetaVictims": {"a": {"Pods": [], "NumPDBViolations": 0}}}

    for ignorable, expected in ((False, 'expected at least one victim pod on node "a"'), (True, "")):
        with stub_extender({"preempt": no_victims}) as stub:
            e = engine(
                [node("a")],
                Extender(
                    url_prefix=stub.url, preempt_verb="preempt", node_cache_capable=True, ignorable=ignorable
                ),
            )
            e.cache.add_pod(cpu_pod("low", "4", nodeName="a", priority=0))
            attempt = e.schedule_one(cpu_pod("high", "4", priority=100))
        assert attempt.status == "Unschedulable"
        if expected:
            assert attempt.message.endswith(expected)
            assert attempt.victims == []
        else:
            assert attempt.message.endswith("no candidate node for preemption")


def test_a_pod_rejected_by_an_extender_is_moved_by_any_cluster_event() -> None:
    """defaultEnqueueExtension: "Extender" registers every event, with no hint (always Queue)."""
    e = engine([node("a")], Extender(url_prefix="http://127.0.0.1:1", filter_verb="filter"))
    registrations = dict(e.profiles["default-scheduler"].enqueue_extensions())
    events = registrations[EXTENDER_NAME]
    assert {ev.event.resource for ev in events} >= {"Node", "Pod"}
    assert all(ev.hint_fn is None for ev in events)
    assert EXTENDER_NAME not in dict(engine([node("a")]).profiles["default-scheduler"].enqueue_extensions())


def test_scores_outside_the_extender_range_are_taken_as_they_come() -> None:
    """kube-scheduler does not check an extender's scores: 30 and -1 count as 30 and -1 (times weight
    times 10), and the scores of the cycle can still be kept compactly (berth run's decision traces)."""

    def odd(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, [{"Host": "a", "Score": 30}, {"Host": "b", "Score": -1}]

    with stub_extender({"prioritize": odd}) as stub:
        e = engine(
            [node("a"), node("b")],
            Extender(url_prefix=stub.url, prioritize_verb="prioritize", weight=2, node_cache_capable=True),
        )
        attempt = e.schedule_one(cpu_pod("p", "1"))
    assert attempt.node == "a" and attempt.result is not None
    scores = attempt.result.scores
    by_node = {s.name: s.plugin_scores[stub.url] for s in scores}
    assert by_node == {"a": 600, "b": -20}
    compact = scores.compacted()  # type: ignore[attr-defined]
    assert {s.name: s.plugin_scores[stub.url] for s in compact} == by_node
