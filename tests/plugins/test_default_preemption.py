"""DefaultPreemption and the preemption Evaluator (default_preemption_test.go, preemption_test.go)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from app import featuregates, metrics
from app.api.objects import Node, Pod
from app.config import load_config
from app.framework.preemption.pdb import filter_pods_with_pdb_violation, parse_pdb
from app.framework.preemption.preemption import Victims, aggregate_errors, pick_one_node_for_preemption
from app.framework.status import Code, NodeToStatus, Status
from app.framework.types import PodInfo
from app.plugins.defaultpreemption.default_preemption import DefaultPreemption
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import CacheClusterActions, ClusterObjects, Engine
from tests.builders import make_node, make_pod

LOW, MID, HIGH = 0, 100, 1000


def node(name: str, cpu: str = "3", **spec: Any) -> Node:
    return make_node(name, {"cpu": cpu, "memory": "8Gi", "pods": "110"}, **spec)


def pod(name: str, cpu: str, priority: int, node_name: str = "", start: str = "", **spec: Any) -> Pod:
    raw_spec: dict[str, Any] = {"priority": priority, **spec}
    if node_name:
        raw_spec["nodeName"] = node_name
    p = make_pod(name, [{"cpu": cpu, "memory": "100Mi"}], **raw_spec)
    if start:
        p.raw["status"] = {"startTime": start}
    return p


def engine(nodes: Sequence[Node], pods: Sequence[Pod] = (), pdbs: Sequence[dict[str, Any]] = ()) -> Engine:
    registry = in_tree_registry()
    objects = ClusterObjects()
    for o in pdbs:
        objects.add(o)
    e = Engine(load_config(None, registry), registry, objects=objects, seed=1)
    for n in nodes:
        e.cache.add_node(n)
    for p in pods:
        e.cache.add_pod(p)
    return e


def plugin(e: Engine) -> DefaultPreemption:
    pl = e.profiles["default-scheduler"].plugins["DefaultPreemption"]
    assert isinstance(pl, DefaultPreemption)
    return pl


def pdb(name: str, labels: dict[str, str], allowed: int, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed, **status},
    }


def victims_on(e: Engine, preemptor: Pod, node_name: str) -> tuple[list[str], int, Status | None]:
    """SelectVictimsOnNode after the preemptor's PreFilter, as DryRunPreemption runs it."""
    fwk = e.profiles["default-scheduler"]
    e.cache.update_snapshot(e.algorithm.snapshot)
    state = e.new_cycle_state()
    fwk.run_pre_filter_plugins(state, preemptor, e.algorithm.snapshot.list())
    info = e.algorithm.snapshot.get(node_name)
    assert info is not None
    pl = plugin(e)
    from app.framework.preemption.pdb import list_pdbs

    # The snapshot's own NodeInfo and the cycle's own state, as DryRunPreemption passes them.
    got, n, status = pl.select_victims_on_node(state, preemptor, info, list_pdbs(e.objects))
    return [p.name for p in got], n, status


# --- SelectVictimsOnNode ------------------------------------------------------------------------


def test_medium_priority_pod_is_preempted_but_the_small_low_one_stays() -> None:
    # "a pod that would fit on the node after removing the medium pod": reprieve most important first.
    e = engine([node("n1")], [pod("low", "1", LOW, "n1"), pod("mid", "2", MID, "n1")])
    assert victims_on(e, pod("p", "2", HIGH), "n1") == (["mid"], 0, None)


def test_victims_are_the_least_important_when_both_are_needed_in_turn() -> None:
    e = engine([node("n1")], [pod("a", "1", LOW, "n1"), pod("b", "1", MID, "n1"), pod("c", "1", MID, "n1")])
    # 2 cpu needed: the two least important pods go (the low one, then the later-started mid one).
    e2 = engine(
        [node("n1")],
        [
            pod("a", "1", LOW, "n1"),
            pod("b", "1", MID, "n1", start="2024-01-01T00:00:00Z"),
            pod("c", "1", MID, "n1", start="2024-01-02T00:00:00Z"),
        ],
    )
    assert victims_on(e2, pod("p", "2", HIGH), "n1") == (["c", "a"], 0, None)
    assert victims_on(e, pod("p", "3", HIGH), "n1")[0] == ["b", "c", "a"]


def test_no_lower_priority_pods_means_no_victims() -> None:
    e = engine([node("n1")], [pod("same", "3", HIGH, "n1")])
    got, _, status = victims_on(e, pod("p", "1", HIGH), "n1")
    assert got == [] and status is not None
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "No preemption victims found for incoming pod",
    )


def test_pod_that_does_not_fit_even_on_an_empty_node_returns_the_filter_status() -> None:
    e = engine([node("n1", cpu="2")], [pod("low", "1", LOW, "n1"), pod("same", "1", HIGH, "n1")])
    got, _, status = victims_on(e, pod("p", "2", HIGH), "n1")
    assert got == [] and status is not None and status.message() == "Insufficient cpu"


def test_pdb_violating_victims_are_reprieved_first() -> None:
    # Both low pods are equal; the PDB-protected one is tried first and stays: the other goes.
    pods = [
        pod("free", "1", LOW, "n1", labels={"app": "free"}, start="2024-01-01T00:00:00Z"),
        pod("guarded", "1", LOW, "n1", labels={"app": "db"}, start="2024-01-02T00:00:00Z"),
    ]
    e = engine([node("n1", cpu="2")], pods, [pdb("db", {"app": "db"}, 0)])
    assert victims_on(e, pod("p", "1", HIGH), "n1") == (["free"], 0, None)
    # Both must go: the violating one counts.
    assert victims_on(e, pod("p", "2", HIGH), "n1") == (["free", "guarded"], 1, None)


def test_dry_run_leaves_the_snapshot_and_the_cycle_state_as_they_were() -> None:
    # The victim matches the preemptor's anti-affinity: InterPodAffinity's RemovePod changes the
    # state it is given, and the dry run removes and re-adds pods on the node it is given.
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    e = engine([node("n1")], [pod("low", "1", LOW, "n1", labels={"app": "x"}), pod("mid", "1", MID, "n1")])
    preemptor = pod("p", "1", HIGH, affinity=anti)
    fwk = e.profiles["default-scheduler"]
    e.cache.update_snapshot(e.algorithm.snapshot)
    state = e.new_cycle_state()
    fwk.run_pre_filter_plugins(state, preemptor, e.algorithm.snapshot.list())
    info = e.algorithm.snapshot.get("n1")
    assert info is not None
    before = fwk.run_filter_plugins(state, preemptor, info)
    assert before is not None and before.plugin == "InterPodAffinity"
    got, _, status = plugin(e).select_victims_on_node(state, preemptor, info, [])
    assert status is None and [p.name for p in got] == ["low"]
    assert [p.pod.name for p in info.pods] == ["low", "mid"]
    assert info.requested.milli_cpu == 2000
    after = fwk.run_filter_plugins(state, preemptor, info)
    assert after is not None and after.message() == before.message()


# --- filterPodsWithPDBViolation -----------------------------------------------------------------


def test_filter_pods_with_pdb_violation_spends_budgets_in_order() -> None:
    infos = [PodInfo(make_pod(f"p{i}", labels={"app": "x"})) for i in range(3)]
    unlabeled = PodInfo(make_pod("plain"))
    pdbs = [parse_pdb(pdb("x", {"app": "x"}, 1, disruptedPods={"p0": "2024-01-01T00:00:00Z"}))]
    violating, ok = filter_pods_with_pdb_violation([*infos, unlabeled], pdbs)
    # p0 is already disrupted (spends nothing), p1 spends the budget, p2 violates.
    assert [i.pod.name for i in violating] == ["p2"]
    assert [i.pod.name for i in ok] == ["p0", "p1", "plain"]


def test_pdb_with_empty_or_other_namespace_selector_matches_nothing() -> None:
    empty = parse_pdb(
        {"metadata": {"name": "e"}, "spec": {"selector": {}}, "status": {"disruptionsAllowed": 0}}
    )
    other = parse_pdb({**pdb("o", {"app": "x"}, 0), "metadata": {"name": "o", "namespace": "prod"}})
    nil = parse_pdb({"metadata": {"name": "n"}, "spec": {}, "status": {}})
    violating, _ = filter_pods_with_pdb_violation(
        [PodInfo(make_pod("p", labels={"app": "x"}))], [empty, other, nil]
    )
    assert violating == []


# --- pickOneNodeForPreemption -------------------------------------------------------------------


def V(*pods: Pod, pdb_violations: int = 0) -> Victims:
    return Victims(list(pods), pdb_violations)


PICK_CASES = [
    ("fewest PDB violations", {"a": V(pod("x", "1", 1), pdb_violations=1), "b": V(pod("y", "1", 5))}, "b"),
    ("lowest highest priority", {"a": V(pod("x", "1", 10)), "b": V(pod("y", "1", 5), pod("z", "1", 5))}, "b"),
    (
        "smallest sum of priorities",
        {"a": V(pod("x", "1", 5), pod("y", "1", 5)), "b": V(pod("z", "1", 5), pod("w", "1", 1))},
        "b",
    ),
    (
        "sum counts negative priorities after adding 2^31",
        {"a": V(pod("x", "1", -10), pod("y", "1", -10)), "b": V(pod("z", "1", -10))},
        "b",
    ),
    (
        "fewest victims",
        {
            "a": V(pod("x", "1", 5), pod("y", "1", 0)),
            "b": V(pod("z", "1", 5), pod("w", "1", 0), pod("v", "1", 0)),
        },
        "a",
    ),
    (
        "latest start time of the highest priority victims",
        {
            "a": V(pod("x", "1", 5, start="2024-01-01T00:00:00Z")),
            "b": V(pod("y", "1", 5, start="2024-02-01T00:00:00Z")),
        },
        "b",
    ),
    (
        "all tied: the first",
        {
            "a": V(pod("x", "1", 5, start="2024-01-01T00:00:00Z")),
            "b": V(pod("y", "1", 5, start="2024-01-01T00:00:00Z")),
        },
        "a",
    ),
]


@pytest.mark.parametrize(("victims", "want"), [c[1:] for c in PICK_CASES], ids=[c[0] for c in PICK_CASES])
def test_pick_one_node_for_preemption(victims: dict[str, Victims], want: str) -> None:
    assert pick_one_node_for_preemption(victims) == want


def test_pick_with_custom_score_funcs_and_empty() -> None:
    assert pick_one_node_for_preemption({}) == ""
    victims = {"a": V(pod("x", "1", 1)), "b": V(pod("y", "1", 1))}
    assert pick_one_node_for_preemption(victims, [lambda n: 1 if n == "b" else 0]) == "b"


def test_aggregate_errors() -> None:
    assert aggregate_errors(["a"]) == "a"
    assert aggregate_errors(["a", "b"]) == "[a, b]"
    # Repeated messages once (utilerrors' aggregate keeps a set of the messages it printed).
    assert aggregate_errors(["a", "a", "a"]) == "a"
    assert aggregate_errors(["a", "b", "a"]) == "[a, b]"


# --- PodEligibleToPreemptOthers -----------------------------------------------------------------


def test_preemption_policy_never_is_not_eligible() -> None:
    e = engine([node("n1")])
    p = pod("p", "1", HIGH, preemptionPolicy="Never")
    assert plugin(e).pod_eligible_to_preempt_others(p, Status(Code.UNSCHEDULABLE)) == (
        False,
        "not eligible due to preemptionPolicy=Never.",
    )


def test_terminating_victim_on_the_nominated_node_blocks_a_new_preemption() -> None:
    terminating = pod("victim", "1", LOW, "n1")
    terminating.deletion_timestamp = "2024-01-01T00:00:00Z"
    terminating.raw["status"] = {
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    }
    e = engine([node("n1")], [terminating])
    e.cache.update_snapshot(e.algorithm.snapshot)
    p = pod("p", "1", HIGH)
    p.nominated_node_name = "n1"
    pl = plugin(e)
    assert pl.pod_eligible_to_preempt_others(p, Status(Code.UNSCHEDULABLE)) == (
        False,
        "not eligible due to a terminating pod on the nominated node.",
    )
    # The nominated node is now unresolvable: preempting elsewhere is allowed.
    assert pl.pod_eligible_to_preempt_others(p, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)) == (True, "")
    # Terminating for another reason does not block.
    terminating.raw["status"] = {}
    assert pl.pod_eligible_to_preempt_others(p, Status(Code.UNSCHEDULABLE)) == (True, "")


def test_calculate_num_candidates() -> None:
    pl = plugin(engine([node("n1")]))
    assert [pl.calculate_num_candidates(n) for n in (10, 100, 1000, 5000)] == [10, 100, 100, 500]


# --- Preempt through the engine: results and FitError messages ----------------------------------


def test_fit_error_message_with_preemption_part() -> None:
    tainted = {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}
    e = engine(
        [node("a", cpu="2"), node("b", **tainted), node("c", **tainted)],
        [pod("peer", "2", HIGH, "a")],
    )
    attempt = e.schedule_one(pod("p", "1", HIGH))
    assert attempt.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )
    assert attempt.nominated_node is None and attempt.victims == []


def test_preemption_evicts_victims_nominates_and_the_retry_lands_on_the_node() -> None:
    e = engine(
        [node("n1", cpu="2"), node("n2", cpu="2")], [pod("low", "2", LOW, "n1"), pod("mid", "2", MID, "n2")]
    )
    before = plugin(e)
    from app import metrics

    attempts = metrics.PREEMPTION_ATTEMPTS._value.get()
    p = pod("p", "2", HIGH)
    attempt = e.schedule_one(p)
    assert attempt.status == "Unschedulable"
    assert attempt.message == "0/2 nodes are available: 2 Insufficient cpu."  # Success: no PostFilter message
    assert [v.name for v in attempt.victims] == ["low"] and attempt.nominated_node == "n1"
    assert e.cache.get_pod("uid-default-low") is None  # evicted from berth's state
    assert [pi.pod.name for pi in e.nominator.nominated_pods_for_node("n1")] == ["p"]
    assert metrics.PREEMPTION_ATTEMPTS._value.get() == attempts + 1
    assert before.pre_enqueue(p) is None  # the inline preemption has finished
    # A lower-priority pod may not take the nominated room.
    assert e.schedule_one(pod("other", "2", LOW)).status == "Unschedulable"
    p.nominated_node_name = "n1"
    retry = e.schedule_one(p)
    assert (retry.status, retry.node) == ("Scheduled", "n1")
    assert e.nominator.nominated_pods_for_node("n1") == []


def test_preemption_clears_lower_priority_nominations_on_the_node() -> None:
    e = engine([node("n1", cpu="2")], [pod("low", "2", LOW, "n1")])
    waiting = pod("waiting", "1", MID)
    from app.backend.queue.nominator import MODE_OVERRIDE

    e.nominator.add_nominated_pod(PodInfo(waiting), MODE_OVERRIDE, "n1")
    attempt = e.schedule_one(pod("p", "2", HIGH))
    assert attempt.nominated_node == "n1"
    assert [pi.pod.name for pi in e.nominator.nominated_pods_for_node("n1")] == ["p"]


def test_not_eligible_keeps_the_nomination_and_reports_the_reason() -> None:
    e = engine([node("n1", cpu="1")], [pod("low", "1", LOW, "n1")])
    p = pod("p", "1", HIGH, preemptionPolicy="Never")
    attempt = e.schedule_one(p)
    assert attempt.message.endswith(
        ". no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )
    assert attempt.nominated_node is None and e.cache.get_pod("uid-default-low") is not None


def test_prefilter_unschedulable_makes_every_node_a_candidate() -> None:
    # NodeToStatus with an Unschedulable absent status (a PreFilter rejection) lists every node.
    e = engine([node("a"), node("b")])
    e.cache.update_snapshot(e.algorithm.snapshot)
    m = NodeToStatus({"a": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)}, Status(Code.UNSCHEDULABLE, "x"))
    assert [n.name for n in m.nodes_for_status_code(e.algorithm.snapshot, Code.UNSCHEDULABLE)] == ["b"]
    m2 = NodeToStatus({"a": Status(Code.UNSCHEDULABLE)})
    assert [n.name for n in m2.nodes_for_status_code(e.algorithm.snapshot, Code.UNSCHEDULABLE)] == ["a"]


@pytest.fixture
def sync_preemption() -> Iterator[None]:
    """``--feature-gates=SchedulerAsyncPreemption=false`` for one test (the plugin reads it when built)."""
    featuregates.DEFAULT.set("SchedulerAsyncPreemption=false")
    try:
        yield
    finally:
        featuregates.DEFAULT.reset()


class _FailingEviction(CacheClusterActions):
    """Cluster actions whose victim deletions fail, as an API server refusing them would."""

    def preempt_pod(self, preemptor: Pod, victim: Pod, node_name: str, plugin: str) -> Status | None:
        return Status(Code.ERROR, f'pods "{victim.name}" is forbidden')


def _goroutine_runs() -> float:
    return sum(s.value for m in metrics.PREEMPTION_GOROUTINES_EXECUTION.collect() for s in m.samples)


def test_without_async_preemption_nothing_waits_at_pre_enqueue_and_no_pod_deletion_is_registered(
    sync_preemption: None,
) -> None:
    """default_preemption.go with EnableAsyncPreemption false: PreEnqueue always admits, and
    EventsToRegister returns nothing (the plugin then never rejects a pod)."""
    pl = plugin(engine([node("n1")]))
    assert pl.async_preemption is False and pl.executor.async_preemption is False
    assert pl.events_to_register() == []
    assert pl.pre_enqueue(pod("p", "1", HIGH)) is None


def test_synchronous_preemption_evicts_in_post_filter_without_a_goroutine(sync_preemption: None) -> None:
    """prepareCandidate: the victims are deleted in the scheduling cycle, the preemptor nominated;
    the goroutine metrics of the async path are not touched."""
    e = engine(
        [node("n1", cpu="2"), node("n2", cpu="2")], [pod("low", "2", LOW, "n1"), pod("mid", "2", MID, "n2")]
    )
    runs = _goroutine_runs()
    attempts = metrics.PREEMPTION_ATTEMPTS._value.get()
    attempt = e.schedule_one(pod("p", "2", HIGH))
    assert attempt.status == "Unschedulable"
    assert attempt.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert [v.name for v in attempt.victims] == ["low"] and attempt.nominated_node == "n1"
    assert e.cache.get_pod("uid-default-low") is None
    assert metrics.PREEMPTION_ATTEMPTS._value.get() == attempts + 1
    assert _goroutine_runs() == runs


def test_a_failed_synchronous_eviction_is_the_post_filter_error(sync_preemption: None) -> None:
    """prepareCandidate returns the eviction's error as PostFilter's status (``preemption: ...`` in
    the FitError's message), no node is nominated and the victim stays; the async path would only
    log it and nominate anyway."""
    registry = in_tree_registry()
    objects = ClusterObjects()
    e = Engine(load_config(None, registry), registry, objects=objects, seed=1)
    e.cluster_actions = _FailingEviction(e.cache, e.nominator)
    e.cache.add_node(node("n1", cpu="2"))
    e.cache.add_pod(pod("low", "2", LOW, "n1"))
    attempt = e.schedule_one(pod("p", "2", HIGH))
    assert attempt.status == "Unschedulable"
    assert (
        attempt.message == '0/1 nodes are available: 1 Insufficient cpu. preemption: pods "low" is forbidden'
    )
    assert attempt.nominated_node is None
    assert e.cache.get_pod("uid-default-low") is not None


def _goroutine_samples() -> dict[tuple[str, str], float]:
    return {
        (s.name, s.labels.get("result", "")): s.value
        for family in (metrics.PREEMPTION_GOROUTINES_EXECUTION, metrics.PREEMPTION_GOROUTINES_DURATION)
        for m in family.collect()
        for s in m.samples
        if s.name.endswith(("_total", "_count", "_sum"))
    }


def test_a_failed_async_eviction_is_counted_as_kube_scheduler_counts_it() -> None:
    """kube-scheduler's goroutine defers its metric calls with the result label and the duration as
    arguments, which Go evaluates at the defer: every run is a "success" of about no time, even one
    whose eviction failed (as here). The failure is only logged, and the preemptor is nominated."""
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, objects=ClusterObjects(), seed=1)
    e.cluster_actions = _FailingEviction(e.cache, e.nominator)
    e.cache.add_node(node("n1", cpu="2"))
    e.cache.add_pod(pod("low", "2", LOW, "n1"))
    before = _goroutine_samples()
    attempt = e.schedule_one(pod("p", "2", HIGH))
    after = _goroutine_samples()
    assert attempt.status == "Unschedulable" and attempt.nominated_node == "n1"
    changed = {k: after[k] - before.get(k, 0.0) for k in after if after[k] != before.get(k, 0.0)}
    runs = "scheduler_preemption_goroutines_execution_total"
    observed = "scheduler_preemption_goroutines_duration_seconds_count"
    assert changed.keys() >= {(runs, "success"), (observed, "success")}
    assert changed[runs, "success"] == 1 and changed[observed, "success"] == 1
    assert not [k for k in changed if k[1] == "error"]
    assert changed.get(("scheduler_preemption_goroutines_duration_seconds_sum", "success"), 0.0) < 0.001
