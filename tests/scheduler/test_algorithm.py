"""schedulePod / findNodesThatFitPod / numFeasibleNodesToFind / selectHost, ported from
kube-scheduler v1.36.3 pkg/scheduler/schedule_one_test.go (TestNumFeasibleNodesToFind,
TestFairEvaluationForNodes, TestSchedulerSchedulePod's PreFilter cases, TestFindFitSomeError,
Test_SelectHost)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest

from app.api.objects import Pod
from app.backend.cache.cache import Cache
from app.framework.cycle_state import CycleState
from app.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    Plugin,
    PreFilterPlugin,
    PreFilterResult,
    QueueSortPlugin,
    ScorePlugin,
)
from app.framework.registry import Registry
from app.framework.runtime import Framework, NodeScore, NodeScores, PluginRef, ProfileSpec
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, PodInfo
from app.scheduler.algorithm import (
    Algorithm,
    NoNodesAvailable,
    SchedulingError,
    num_feasible_nodes_to_find,
)
from app.scheduler.fit_error import FitError
from builders import make_node, make_pod
from fakes import FakeHandle

FilterFn = Callable[[Pod, NodeInfo], Status | None]
SCORE_CALLS: list[str] = []


class QueueSort(QueueSortPlugin):
    name: ClassVar[str] = "PrioritySort"

    def less(self, a: Any, b: Any) -> bool:
        return False


class Binder(BindPlugin):
    name: ClassVar[str] = "DefaultBinder"

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None


def filter_plugin(name: str, fn: FilterFn) -> type[Plugin]:
    def _filter(self: Any, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return fn(pod, node_info)

    return type(name, (FilterPlugin,), {"name": name, "filter": _filter})


def pre_filter_plugin(
    name: str, result: PreFilterResult | None = None, status: Status | None = None
) -> type[Plugin]:
    def _pre_filter(self: Any, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Any:
        return result, (Status(status.code, *status.reasons) if status else None)

    return type(name, (PreFilterPlugin,), {"name": name, "pre_filter": _pre_filter})


def score_plugin(name: str, fn: Callable[[NodeInfo], int]) -> type[Plugin]:
    def _score(self: Any, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        SCORE_CALLS.append(node_info.name)
        return fn(node_info)

    return type(name, (ScorePlugin,), {"name": name, "score": _score})


TRUE_FILTER = filter_plugin("TrueFilter", lambda pod, ni: None)
FALSE_FILTER = filter_plugin(
    "FalseFilter", lambda pod, ni: Status(Code.UNSCHEDULABLE, "node(s) failed FalseFilter")
)
EQUAL_PRIORITIZER = score_plugin("EqualPrioritizerPlugin", lambda ni: 1)


def make_framework(
    plugins: Sequence[type[Plugin]],
    pre_filter: Sequence[str] = (),
    filters: Sequence[str] = (),
    scores: Sequence[str] = (),
    percentage: int | None = None,
) -> Framework:
    spec: dict[str, tuple[list[PluginRef], list[str]]] = {
        "queueSort": ([PluginRef("PrioritySort")], []),
        "bind": ([PluginRef("DefaultBinder")], []),
        "preFilter": ([PluginRef(n) for n in pre_filter], []),
        "filter": ([PluginRef(n) for n in filters], []),
        "score": ([PluginRef(n) for n in scores], []),
    }
    profile = ProfileSpec("default-scheduler", spec, {}, percentage_of_nodes_to_score=percentage)
    return Framework(profile, Registry([QueueSort, Binder, *plugins]), FakeHandle())


def algorithm(
    node_names: Sequence[str], percentage: int | None = None, seed: int = 1, **kw: Any
) -> Algorithm:
    cache = Cache()
    for n in node_names:
        cache.add_node(make_node(n))
    return Algorithm(cache, percentage, random.Random(seed), **kw)


@pytest.fixture(autouse=True)
def _clear() -> None:
    SCORE_CALLS.clear()


# --- numFeasibleNodesToFind (TestNumFeasibleNodesToFind) ---------------------------------------


@pytest.mark.parametrize(
    ("global_pct", "profile_pct", "num_all_nodes", "want"),
    [
        (0, None, 10, 10),  # not set percentageOfNodesToScore and nodes number not more than 50
        (0, 40, 10, 10),  # set profile percentageOfNodesToScore and nodes number not more than 50
        (0, None, 1000, 420),  # not set percentageOfNodesToScore and nodes number more than 50
        (0, 40, 1000, 400),  # set profile percentageOfNodesToScore and nodes number more than 50
        (100, 40, 1000, 400),  # set global and profile percentageOfNodesToScore
        (40, None, 1000, 400),  # set global percentageOfNodesToScore
        (0, None, 6000, 300),  # not set profile percentageOfNodesToScore and nodes number more than 50*125
        (0, 40, 6000, 2400),  # set profile percentageOfNodesToScore and nodes number more than 50*125
        (0, None, 5000, 500),
        (0, None, 99, 99),
        (0, None, 100, 100),
        (0, 1, 1000, 100),  # never fewer than 100
        (0, 0, 1000, 420),  # an explicit 0 is adaptive too
    ],
)
def test_num_feasible_nodes_to_find(
    global_pct: int, profile_pct: int | None, num_all_nodes: int, want: int
) -> None:
    pct = profile_pct if profile_pct is not None else global_pct
    assert num_feasible_nodes_to_find(pct, num_all_nodes) == want


def test_profile_percentage_wins_over_global() -> None:
    names = [f"node-{i:04d}" for i in range(1000)]
    alg = algorithm(names, percentage=100)
    fw = make_framework(
        [TRUE_FILTER, EQUAL_PRIORITIZER],
        filters=["TrueFilter"],
        scores=["EqualPrioritizerPlugin"],
        percentage=40,
    )
    alg.cache.update_snapshot(alg.snapshot)
    feasible, _ = alg.find_nodes_that_fit_pod(fw, CycleState(), make_pod("p"))
    assert len(feasible) == 400
    fw_default = make_framework(
        [TRUE_FILTER, EQUAL_PRIORITIZER], filters=["TrueFilter"], scores=["EqualPrioritizerPlugin"]
    )
    feasible, _ = alg.find_nodes_that_fit_pod(fw_default, CycleState(), make_pod("p"))
    assert len(feasible) == 1000


def test_fair_evaluation_for_nodes() -> None:
    # TestFairEvaluationForNodes: 500 nodes, 30% → 150 per cycle, the start index rotates.
    num_all_nodes = 500
    alg = algorithm([str(i) for i in range(num_all_nodes)], percentage=30)
    fw = make_framework(
        [TRUE_FILTER, EQUAL_PRIORITIZER], filters=["TrueFilter"], scores=["EqualPrioritizerPlugin"]
    )
    alg.cache.update_snapshot(alg.snapshot)
    nodes_to_find = num_feasible_nodes_to_find(30, num_all_nodes)
    assert nodes_to_find == 150
    for i in range(2 * (num_all_nodes // nodes_to_find + 1)):
        start = alg.next_start_node_index
        feasible, _ = alg.find_nodes_that_fit_pod(fw, CycleState(), make_pod("p"))
        assert len(feasible) == nodes_to_find
        assert feasible[0].name == str(start)
        assert alg.next_start_node_index == (i + 1) * nodes_to_find % num_all_nodes


def test_without_score_plugins_one_node_is_enough_and_pods_rotate() -> None:
    alg = algorithm(["n0", "n1", "n2"])
    fw = make_framework([TRUE_FILTER], filters=["TrueFilter"])
    hosts = [alg.schedule_pod(fw, CycleState(), make_pod(f"p{i}")).suggested_host for i in range(4)]
    assert hosts == ["n0", "n1", "n2", "n0"]


def test_without_filter_plugins() -> None:
    alg = algorithm(["n0", "n1", "n2"])
    fw = make_framework([EQUAL_PRIORITIZER], scores=["EqualPrioritizerPlugin"])
    alg.cache.update_snapshot(alg.snapshot)
    feasible, diagnosis = alg.find_nodes_that_fit_pod(fw, CycleState(), make_pod("p"))
    assert [n.name for n in feasible] == ["n0", "n1", "n2"]
    assert len(diagnosis.node_to_status) == 0


def test_start_index_counts_failed_nodes_too() -> None:
    # processedNodes = feasible + failed; modulo the number of all nodes.
    only_n3 = filter_plugin(
        "OnlyN3", lambda pod, ni: None if ni.name == "n3" else Status(Code.UNSCHEDULABLE, "no")
    )
    alg = algorithm(["n0", "n1", "n2", "n3", "n4"])
    fw = make_framework([only_n3], filters=["OnlyN3"])
    result = alg.schedule_pod(fw, CycleState(), make_pod("p"))
    assert result.suggested_host == "n3"
    assert (result.evaluated_nodes, result.feasible_nodes) == (4, 1)
    assert alg.next_start_node_index == 4


# --- PreFilter in findNodesThatFitPod (TestSchedulerSchedulePod) --------------------------------


def test_pre_filter_unschedulable_status() -> None:
    # "test prefilter plugin returning Unschedulable status"
    plugin = pre_filter_plugin(
        "FakePreFilter", status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "injected unschedulable status")
    )
    alg = algorithm(["node1", "node2"])
    fw = make_framework([plugin, TRUE_FILTER], pre_filter=["FakePreFilter"], filters=["TrueFilter"])
    with pytest.raises(FitError) as exc:
        alg.schedule_pod(fw, CycleState(), make_pod("test-prefilter"))
    err = exc.value
    assert str(err) == "0/2 nodes are available: injected unschedulable status."
    assert err.num_all_nodes == 2
    d = err.diagnosis
    assert d.pre_filter_msg == "injected unschedulable status"
    assert d.unschedulable_plugins == {"FakePreFilter"}
    assert len(d.node_to_status) == 0
    assert (d.node_to_status.absent.code, d.node_to_status.absent.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "FakePreFilter",
    )
    assert alg.next_start_node_index == 0  # no node was evaluated


def test_pre_filter_error_status() -> None:
    plugin = pre_filter_plugin("FakePreFilter", status=Status(Code.ERROR, "injected error status"))
    alg = algorithm(["node1", "node2"])
    fw = make_framework([plugin], pre_filter=["FakePreFilter"])
    with pytest.raises(
        SchedulingError, match='running PreFilter plugin "FakePreFilter": injected error status'
    ):
        alg.schedule_pod(fw, CycleState(), make_pod("p"))


def test_pre_filter_results_disjoint() -> None:
    plugins = [
        pre_filter_plugin("FakePreFilter2", PreFilterResult({"node2"})),
        pre_filter_plugin("FakePreFilter3", PreFilterResult({"node1"})),
    ]
    alg = algorithm(["node1", "node2", "node3"])
    fw = make_framework(
        [*plugins, TRUE_FILTER], pre_filter=["FakePreFilter2", "FakePreFilter3"], filters=["TrueFilter"]
    )
    with pytest.raises(FitError) as exc:
        alg.schedule_pod(fw, CycleState(), make_pod("p"))
    msg = "node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3] simultaneously"
    assert str(exc.value) == f"0/3 nodes are available: {msg}."
    assert exc.value.diagnosis.unschedulable_plugins == {"FakePreFilter2", "FakePreFilter3"}


def test_some_nodes_filtered_by_pre_filter_and_others_by_filter() -> None:
    # "test some nodes are filtered out by prefilter plugin and other are filtered out by filter plugin"
    pre = pre_filter_plugin("FakePreFilter", PreFilterResult({"node2"}))
    fail = filter_plugin(
        "FakeFilter", lambda pod, ni: Status(Code.UNSCHEDULABLE, f"injecting failure for pod {pod.name}")
    )
    alg = algorithm(["node1", "node2"])
    fw = make_framework([pre, fail], pre_filter=["FakePreFilter"], filters=["FakeFilter"])
    with pytest.raises(FitError) as exc:
        alg.schedule_pod(fw, CycleState(), make_pod("test-prefilter"))
    d = exc.value.diagnosis
    assert str(exc.value) == (
        "0/2 nodes are available: 1 injecting failure for pod test-prefilter, "
        "1 node(s) didn't satisfy plugin(s) [FakePreFilter]."
    )
    assert set(d.node_to_status.statuses) == {"node2"}
    assert d.node_to_status.statuses["node2"].plugin == "FakeFilter"
    assert d.node_to_status.absent.message() == "node(s) didn't satisfy plugin(s) [FakePreFilter]"
    assert d.unschedulable_plugins == {"FakePreFilter", "FakeFilter"}


def test_pre_filter_result_narrows_candidates() -> None:
    pre = pre_filter_plugin("FakePreFilter", PreFilterResult({"node1", "node3"}))
    seen: list[str] = []

    def record(pod: Pod, ni: NodeInfo) -> Status | None:
        seen.append(ni.name)
        return None

    alg = algorithm(["node1", "node2", "node3"])
    fw = make_framework(
        [pre, filter_plugin("Rec", record), EQUAL_PRIORITIZER],
        ["FakePreFilter"],
        ["Rec"],
        ["EqualPrioritizerPlugin"],
    )
    result = alg.schedule_pod(fw, CycleState(), make_pod("p"))
    assert sorted(seen) == ["node1", "node3"]
    assert result.suggested_host in {"node1", "node3"}
    assert result.evaluated_nodes == 2


def test_pre_filter_returned_an_invalid_node() -> None:
    pre = pre_filter_plugin("FakePreFilter", PreFilterResult({"invalid-node"}))
    alg = algorithm(["1", "2"])
    fw = make_framework([pre, TRUE_FILTER], ["FakePreFilter"], ["TrueFilter"])
    with pytest.raises(FitError) as exc:
        alg.schedule_pod(fw, CycleState(), make_pod("test-prefilter"))
    assert str(exc.value) == "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [FakePreFilter]."
    assert exc.value.diagnosis.unschedulable_plugins == {"FakePreFilter"}


def test_find_fit_some_error() -> None:
    # TestFindFitSomeError: every node but the one matching fails with its own status.
    match_filter = filter_plugin(
        "MatchFilter",
        lambda pod, ni: (
            None
            if ni.name == pod.name
            else Status(Code.UNSCHEDULABLE, "node(s) didn't match the requested node name")
        ),
    )
    alg = algorithm(["1", "2", "3"])
    fw = make_framework([TRUE_FILTER, match_filter], filters=["TrueFilter", "MatchFilter"])
    alg.cache.update_snapshot(alg.snapshot)
    feasible, d = alg.find_nodes_that_fit_pod(fw, CycleState(), make_pod("1"))
    assert [n.name for n in feasible] == ["1"]
    alg.next_start_node_index = 0
    feasible, d = alg.find_nodes_that_fit_pod(fw, CycleState(), make_pod("nope"))
    assert feasible == []
    assert {k: (v.plugin, v.message()) for k, v in d.node_to_status.statuses.items()} == {
        n: ("MatchFilter", "node(s) didn't match the requested node name") for n in ("1", "2", "3")
    }
    assert d.unschedulable_plugins == {"MatchFilter"}


def test_find_fit_all_error() -> None:
    alg = algorithm(["3", "2", "1"])
    fw = make_framework([TRUE_FILTER, FALSE_FILTER], filters=["TrueFilter", "FalseFilter"])
    with pytest.raises(FitError) as exc:
        alg.schedule_pod(fw, CycleState(), make_pod("p"))
    assert str(exc.value) == "0/3 nodes are available: 3 node(s) failed FalseFilter."


def test_filter_error_aborts_but_advances_the_start_index() -> None:
    calls: list[str] = []

    def error_on_n2(pod: Pod, ni: NodeInfo) -> Status | None:
        calls.append(ni.name)
        if ni.name == "n2":
            return Status(Code.ERROR, "boom")
        return Status(Code.UNSCHEDULABLE, "no")

    alg = algorithm(["n0", "n1", "n2", "n3"])
    fw = make_framework(
        [filter_plugin("Err", error_on_n2), EQUAL_PRIORITIZER],
        filters=["Err"],
        scores=["EqualPrioritizerPlugin"],
    )
    with pytest.raises(SchedulingError, match='running "Err" filter plugin: boom'):
        alg.schedule_pod(fw, CycleState(), make_pod("p"))
    assert calls == ["n0", "n1", "n2"]
    assert alg.next_start_node_index == 2  # the two rejected nodes were processed


def test_no_nodes_available() -> None:
    alg = algorithm([])
    with pytest.raises(NoNodesAvailable):
        alg.schedule_pod(make_framework([]), CycleState(), make_pod("p"))


def test_single_feasible_node_is_not_scored() -> None:
    only_a = filter_plugin(
        "OnlyA", lambda pod, ni: None if ni.name == "a" else Status(Code.UNSCHEDULABLE, "x")
    )
    alg = algorithm(["a", "b"])
    fw = make_framework([only_a, EQUAL_PRIORITIZER], filters=["OnlyA"], scores=["EqualPrioritizerPlugin"])
    result = alg.schedule_pod(fw, CycleState(), make_pod("p"))
    assert result.suggested_host == "a" and result.scores == [] and SCORE_CALLS == []


def test_highest_score_wins() -> None:
    scorer = score_plugin("ByName", lambda ni: {"a": 10, "b": 90, "c": 50}[ni.name])
    alg = algorithm(["a", "b", "c"])
    fw = make_framework([TRUE_FILTER, scorer], filters=["TrueFilter"], scores=["ByName"])
    result = alg.schedule_pod(fw, CycleState(), make_pod("p"))
    assert result.suggested_host == "b"
    assert [(s.name, s.total) for s in result.scores] == [("a", 10), ("b", 90), ("c", 50)]


# --- nominated node -------------------------------------------------------------------------------


def test_nominated_node_is_tried_first_and_chosen_without_scoring() -> None:
    alg = algorithm(["a", "b", "c"])
    fw = make_framework(
        [TRUE_FILTER, EQUAL_PRIORITIZER], filters=["TrueFilter"], scores=["EqualPrioritizerPlugin"]
    )
    pod = make_pod("p")
    pod.nominated_node_name = "c"
    result = alg.schedule_pod(fw, CycleState(), pod)
    assert result.suggested_host == "c" and SCORE_CALLS == []
    assert alg.next_start_node_index == 0  # the full pass did not run


def test_infeasible_nominated_node_falls_back_to_all_nodes() -> None:
    not_c = filter_plugin(
        "NotC", lambda pod, ni: Status(Code.UNSCHEDULABLE, "not c") if ni.name == "c" else None
    )
    alg = algorithm(["a", "b", "c"])
    fw = make_framework([not_c], filters=["NotC"])
    pod = make_pod("p")
    pod.nominated_node_name = "c"
    result = alg.schedule_pod(fw, CycleState(), pod)
    assert result.suggested_host == "a"


def test_nominated_pods_of_higher_priority_are_counted() -> None:
    # RunFilterPluginsWithNominatedPods in the cycle: a pod nominated to "a" takes its only slot.
    def one_pod_per_node(pod: Pod, ni: NodeInfo) -> Status | None:
        return Status(Code.UNSCHEDULABLE, "node is full") if ni.pods else None

    nominated = {"a": [PodInfo(make_pod("preemptor", priority=100))]}
    alg = algorithm(["a", "b"], nominated_pods=lambda name: nominated.get(name, []))
    fw = make_framework([filter_plugin("OnePod", one_pod_per_node)], filters=["OnePod"])
    result = alg.schedule_pod(fw, CycleState(), make_pod("p", priority=10))
    assert result.suggested_host == "b"
    assert result.diagnosis.node_to_status.statuses["a"].message() == "node is full"


# --- selectHost (Test_SelectHost) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "possible"),
    [
        ([("node1.1", 1), ("node2.1", 2)], {"node2.1"}),
        ([("node1.1", 1), ("node1.2", 2), ("node1.3", 2), ("node2.1", 2)], {"node1.2", "node1.3", "node2.1"}),
        (
            [("node1.1", 3), ("node1.2", 3), ("node2.1", 2), ("node3.1", 1), ("node1.3", 3)],
            {"node1.1", "node1.2", "node1.3"},
        ),
        ([("node1.1", 3)], {"node1.1"}),
    ],
)
@pytest.mark.parametrize("columns", [False, True], ids=["NodeScore list", "NodeScores columns"])
def test_select_host_picks_among_ties(
    scores: list[tuple[str, int]], possible: set[str], columns: bool
) -> None:
    alg = algorithm([], seed=1)
    node_scores: Sequence[NodeScore] = (
        NodeScores([n for n, _ in scores], [s for _, s in scores], ([], []))
        if columns
        else [NodeScore(n, s) for n, s in scores]
    )
    chosen = {alg.select_host(node_scores) for _ in range(200)}
    assert chosen == possible  # every tied node is chosen sometimes; no lower-scored one ever


def test_select_host_is_deterministic_for_a_seed() -> None:
    ties = [NodeScore(f"n{i}", 5) for i in range(5)]
    first = [algorithm([], seed=7).select_host(ties) for _ in range(1)]
    a, b = algorithm([], seed=7), algorithm([], seed=7)
    assert [a.select_host(ties) for _ in range(20)] == [b.select_host(ties) for _ in range(20)]
    assert first[0] in {s.name for s in ties}
