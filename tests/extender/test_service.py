"""The verbs' logic over an Engine: node lookup in both modes, failures by code, scores 0..10."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest
from extender.conftest import ALLOCATABLE, cluster_engine
from hypothesis import given
from hypothesis import strategies as st

from app.api.objects import Node, parse_pod
from app.config import load_config
from app.extender.service import (
    UNKNOWN_NODE_REASON,
    ExtenderService,
    NoProfileError,
    extender_scores,
)
from app.extender.wire import ExtenderArgs
from app.plugins.registry import in_tree_registry
from app.scheduler.algorithm import SchedulingError
from app.scheduler.scheduler import Engine
from app.simulate import load_state, new_engine
from builders import make_node, make_pod

ONE_CPU = [{"cpu": "1"}]


def names_args(*names: str, requests: list[dict[str, str]] | None = None) -> ExtenderArgs:
    return ExtenderArgs(make_pod("web", requests or ONE_CPU), None, list(names))


def test_node_names_mode_uses_the_cache(engine: Engine) -> None:
    result = ExtenderService(engine).filter(names_args("n1", "n2", "ghost", "n3"))
    assert result.node_names == ["n2", "n3"]
    assert result.nodes is None
    assert result.failed == {"n1": "Insufficient cpu", "ghost": UNKNOWN_NODE_REASON.format(name="ghost")}
    assert result.unresolvable == {}
    assert result.error == ""


def test_unknown_node_reason_wording() -> None:
    assert UNKNOWN_NODE_REASON.format(name="x") == 'node "x" not found in berth\'s cache'


def test_nodes_mode_counts_the_cached_pods_on_a_node(engine: Engine) -> None:
    # The body's n1 looks idle, but berth's cache holds a 1500m pod on it.
    nodes = [
        make_node("n1", {"cpu": "2", "memory": "4Gi", "pods": "110"}),
        make_node("new", {"cpu": "2", "pods": "9"}),
    ]
    result = ExtenderService(engine).filter(ExtenderArgs(make_pod("web", ONE_CPU), nodes, None))
    assert result.nodes is not None
    assert [n.name for n in result.nodes] == ["new"]
    assert result.nodes[0] is nodes[1]
    assert result.node_names is None
    assert result.failed == {"n1": "Insufficient cpu"}


def test_nodes_mode_evaluates_the_objects_sent_not_the_cached_ones(engine: Engine) -> None:
    # n2 is idle in the cache, but the body says it is cordoned.
    cordoned = make_node("n2", {"cpu": "2", "memory": "4Gi", "pods": "110"}, unschedulable=True)
    result = ExtenderService(engine).filter(ExtenderArgs(make_pod("web", ONE_CPU), [cordoned], None))
    assert result.nodes == []
    assert result.unresolvable == {"n2": "node(s) were unschedulable"}


def test_unresolvable_failures_go_to_their_own_map(engine: Engine) -> None:
    engine.cache.add_node(
        make_node("tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    )
    result = ExtenderService(engine).filter(names_args("tainted", "n2"))
    assert result.node_names == ["n2"]
    assert result.unresolvable == {"tainted": "node(s) had untolerated taint(s)"}
    assert result.failed == {}


def test_profile_defaults_to_the_first_and_a_missing_one_is_an_error(engine: Engine) -> None:
    assert ExtenderService(engine).framework().profile_name == "default-scheduler"
    assert ExtenderService(engine, "default-scheduler").framework().profile_name == "default-scheduler"
    with pytest.raises(NoProfileError):
        ExtenderService(engine, "other").framework()
    result = ExtenderService(engine, "other").filter(names_args("n2"))
    assert result.error == 'no profile named "other"'
    assert result.node_names is None and result.failed is None
    assert ExtenderService(engine, "other").prioritize(names_args("n2")) == ([], 'no profile named "other"')


def test_scheduling_errors_are_reported_not_raised(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.framework.status import Code, Status

    def broken(*_: object) -> None:
        raise SchedulingError(Status(Code.ERROR, "boom", plugin="NodeResourcesFit"))

    monkeypatch.setattr(engine, "filter_nodes", broken)
    monkeypatch.setattr(engine, "score_nodes", broken)
    service = ExtenderService(engine)
    assert service.filter(names_args("n2")).error == 'running plugin "NodeResourcesFit": boom'
    assert service.prioritize(names_args("n2")) == ([], 'running plugin "NodeResourcesFit": boom')


@pytest.mark.parametrize(
    ("totals", "scores"),
    [
        ([463, 435], [10, 9]),  # examples/state.yaml: node-3 and node-1
        ([800, 799, 400, 80, 79, 0], [10, 9, 5, 1, 0, 0]),
        ([0, 0], [0, 0]),  # nothing scored: no preference
        ([5], [10]),
        ([], []),
    ],
)
def test_extender_scores_normalize_over_the_candidates(totals: list[int], scores: list[int]) -> None:
    assert extender_scores(totals) == scores


def test_prioritize_maps_totals_onto_0_to_10_and_leaves_unknown_nodes_out(engine: Engine) -> None:
    service = ExtenderService(engine)
    priorities, error = service.prioritize(names_args("n1", "nope", "n2"))
    assert error == ""
    assert [p.host for p in priorities] == ["n1", "n2"]
    fwk = service.framework()
    pod = make_pod("web", ONE_CPU)
    snapshot = engine.algorithm.snapshot
    expected = engine.score_nodes(fwk, pod, [snapshot.get("n1"), snapshot.get("n2")])  # type: ignore[list-item]
    highest = max(s.total for s in expected)
    assert [p.score for p in priorities] == [s.total * 10 // highest for s in expected]
    # The idle node scores highest and gets the top of the range.
    assert priorities[1].score == 10 > priorities[0].score


def test_prioritize_in_nodes_mode(engine: Engine) -> None:
    nodes = [make_node("n1", {"cpu": "2", "memory": "4Gi", "pods": "110"}), make_node("n9")]
    priorities, error = ExtenderService(engine).prioritize(
        ExtenderArgs(make_pod("web", ONE_CPU), nodes, None)
    )
    assert error == ""
    assert [p.host for p in priorities] == ["n1", "n9"]


def test_prioritize_without_score_plugins_scores_zero(tmp_path: pytest.TempPathFactory) -> None:
    config = tmp_path / "config.yaml"  # type: ignore[operator]
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: no-score\n  plugins:\n    score:\n      disabled: [{name: '*'}]\n"
    )
    registry = in_tree_registry()
    engine = Engine(load_config(str(config), registry), registry)
    engine.cache.add_node(make_node("a"))
    engine.cache.add_node(make_node("b"))
    priorities, error = ExtenderService(engine).prioritize(names_args("a", "b"))
    assert (error, [(p.host, p.score) for p in priorities]) == ("", [("a", 0), ("b", 0)])


def test_nodes_mode_uses_the_allocatable_sent(engine: Engine) -> None:
    # n1 is busy in the cache (1500m used); the body says it now has 8 CPUs.
    bigger = make_node("n1", {"cpu": "8", "memory": "4Gi", "pods": "110"})
    result = ExtenderService(engine).filter(ExtenderArgs(make_pod("web", [{"cpu": "2"}]), [bigger], None))
    assert result.nodes == [bigger]
    # ...and berth's snapshot entry is untouched.
    info = engine.algorithm.snapshot.get("n1")
    assert info is not None and info.allocatable.milli_cpu == 2000 and info.node is not bigger


def test_prioritize_after_filter_reuses_its_state_and_scores_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.framework.runtime import Framework

    expected, _ = ExtenderService(cluster_engine()).prioritize(names_args("n2", "n3"))

    service = ExtenderService(cluster_engine())
    service.filter(names_args("n1", "n2", "n3"))
    calls: list[str] = []
    original = Framework.run_pre_filter_plugins

    def counting(self: Framework, *args: Any, **kwargs: Any) -> Any:
        calls.append("preFilter")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Framework, "run_pre_filter_plugins", counting)
    reused, error = service.prioritize(names_args("n2", "n3"))
    assert calls == []  # the /filter's PreFilter state served this /prioritize
    again, _ = service.prioritize(names_args("n2", "n3"))
    assert calls == ["preFilter"]  # used once: a second /prioritize recomputes it
    assert error == ""
    assert reused == expected == again


# --- one cycle, one snapshot; the /prioritize answer computed ahead -------------------------


def used_and_discarded() -> tuple[float, float]:
    from app.extender.service import SPECULATIONS

    return (
        SPECULATIONS.labels("used")._value.get(),
        SPECULATIONS.labels("discarded")._value.get(),
    )


def counts_since(before: tuple[float, float]) -> tuple[float, float]:
    used, discarded = used_and_discarded()
    return used - before[0], discarded - before[1]


def cycle(service: ExtenderService, args: ExtenderArgs) -> list[tuple[str, int]]:
    """/filter, the server's follow-up, then /prioritize on what passed, as kube-scheduler calls them."""
    passed = service.filter(args).node_names or []
    service.speculate()
    priorities, error = service.prioritize(ExtenderArgs(args.pod, None, passed))
    assert error == ""
    return [(p.host, p.score) for p in priorities]


def test_the_answer_computed_ahead_is_the_answer_computed_on_request() -> None:
    pods = [make_pod(f"web-{i}", [{"cpu": f"{100 + 50 * i}m", "memory": f"{i + 1}00Mi"}]) for i in range(4)]
    plain = ExtenderService(cluster_engine())
    ahead = ExtenderService(cluster_engine())
    before = used_and_discarded()
    for pod in pods:
        args = ExtenderArgs(pod, None, ["n1", "n2", "n3"])
        passed = plain.filter(args).node_names or []
        expected, _ = plain.prioritize(ExtenderArgs(pod, None, passed))
        assert cycle(ahead, args) == [(p.host, p.score) for p in expected]
    # Only once the client has shown that it calls /prioritize after /filter.
    assert counts_since(before) == (3, 0)


def test_a_prioritize_for_other_nodes_is_scored_afresh() -> None:
    service = ExtenderService(cluster_engine())
    cycle(service, names_args("n1", "n2", "n3"))
    before = used_and_discarded()
    pod = make_pod("next", ONE_CPU)
    service.filter(ExtenderArgs(pod, None, ["n1", "n2", "n3"]))
    service.speculate()
    priorities, _ = service.prioritize(ExtenderArgs(pod, None, ["n3"]))  # another extender cut n2
    assert [p.host for p in priorities] == ["n3"]
    assert counts_since(before) == (0, 1)


def test_a_pod_edited_under_the_same_uid_is_not_taken_for_the_filtered_one() -> None:
    service = ExtenderService(cluster_engine())
    cycle(service, names_args("n1", "n2", "n3"))
    pod = make_pod("web", ONE_CPU)
    service.filter(ExtenderArgs(pod, None, ["n2", "n3"]))
    service.speculate()
    edited = make_pod("web", ONE_CPU, nodeSelector={"disk": "ssd"})
    assert edited.uid == pod.uid
    fresh, _ = ExtenderService(cluster_engine()).prioritize(ExtenderArgs(edited, None, ["n2", "n3"]))
    before = used_and_discarded()
    priorities, _ = service.prioritize(ExtenderArgs(edited, None, ["n2", "n3"]))
    assert priorities == fresh
    assert counts_since(before) == (0, 1)


def filtered_cycle(*, ahead: bool) -> tuple[Engine, ExtenderService, ExtenderArgs]:
    """A service that has answered /filter for n2 and n3 and run the server's follow-up; with
    ``ahead``, after a first cycle that showed it the client prioritizes after filtering."""
    engine = cluster_engine()
    service = ExtenderService(engine)
    args = names_args("n2", "n3")
    if ahead:
        cycle(service, args)
    service.filter(args)
    service.speculate()
    return engine, service, args


def tainted_n2() -> Node:
    return make_node("n2", ALLOCATABLE, taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}])


@pytest.mark.parametrize("ahead", [True, False], ids=["answer computed ahead", "scored on request"])
def test_prioritize_scores_on_the_snapshot_its_filter_saw(ahead: bool) -> None:
    engine, service, args = filtered_cycle(ahead=ahead)
    # n2 gets a PreferNoSchedule taint between the calls: this cycle still sees the node as it
    # was, as kube-scheduler's own cycle does; the next cycle sees the taint.
    engine.cache.update_node(None, tainted_n2())
    same_cycle, _ = service.prioritize(args)
    assert same_cycle[0].score == same_cycle[1].score
    next_cycle = cycle(service, args)
    assert next_cycle[0][1] < next_cycle[1][1]


def test_another_call_in_between_makes_prioritize_score_afresh() -> None:
    engine, service, args = filtered_cycle(ahead=True)
    before = used_and_discarded()
    engine.cache.update_node(None, tainted_n2())
    service.filter(names_args("n1"))  # another scheduler's pod: the snapshot takes in the change
    priorities, _ = service.prioritize(args)
    assert priorities[0].score < priorities[1].score
    assert counts_since(before) == (0, 1)


def test_no_answer_is_computed_ahead_for_a_client_that_does_not_prioritize(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = cluster_engine()
    service = ExtenderService(engine)
    cycle(service, names_args("n1", "n2", "n3"))
    service.filter(names_args("n2", "n3"))
    service.speculate()
    service.filter(names_args("n2", "n3"))  # no /prioritize came: a filter-only client
    scored: list[int] = []
    original = engine.score_nodes
    monkeypatch.setattr(engine, "score_nodes", lambda *a: scored.append(1) or original(*a))
    service.speculate()
    service.filter(names_args("n2", "n3"))
    service.speculate()
    assert scored == []


def test_nothing_is_computed_ahead_for_a_single_node_or_the_nodes_form() -> None:
    service = ExtenderService(cluster_engine())
    cycle(service, names_args("n1", "n2", "n3"))
    before = used_and_discarded()
    cycle(service, names_args("n1", "n2"))  # only n2 passes: kube-scheduler does not score it
    nodes = [make_node("n2", {"cpu": "2", "memory": "4Gi", "pods": "110"}), make_node("n9")]
    args = ExtenderArgs(make_pod("web", ONE_CPU), nodes, None)
    service.filter(args)
    service.speculate()
    priorities, _ = service.prioritize(args)
    assert [p.host for p in priorities] == ["n2", "n9"]
    assert counts_since(before) == (0, 0)


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "state_file", ["state.yaml", *sorted(p.name for p in (EXAMPLES / "simulate").glob("*.yaml"))]
)
def test_the_order_of_berths_totals_survives_the_mapping_on_the_examples(state_file: str) -> None:
    """For every pending pod of the example, over the nodes that pass /filter: the node with the
    highest total gets 10, a higher total never gets a lower score, and totals a tenth of the
    highest or more apart get different scores."""
    path = EXAMPLES / state_file if state_file == "state.yaml" else EXAMPLES / "simulate" / state_file
    state = load_state(str(path))
    registry = in_tree_registry()
    engine = new_engine(state, load_config(None, registry), registry, seed=1)
    for node in state.nodes:
        engine.cache.add_node(node)
    for pod in state.running:
        engine.cache.add_pod(pod)
    service = ExtenderService(engine)
    checked = 0
    pods = [p.pod for p in state.pending]
    if state_file == "state.yaml":  # its pod is the one of the example requests
        pods.append(parse_pod(orjson.loads((EXAMPLES / "prioritize.json").read_bytes())["Pod"]))
    for pod in pods:
        names = [n.name for n in state.nodes]
        passed = service.filter(ExtenderArgs(pod, None, names)).node_names or []
        if len(passed) < 2:
            continue
        fwk = service.framework()
        snapshot = engine.algorithm.snapshot
        totals = {s.name: s.total for s in engine.score_nodes(fwk, pod, [snapshot.get(n) for n in passed])}  # type: ignore[misc]
        scores = {p.host: p.score for p in service.prioritize(ExtenderArgs(pod, None, passed))[0]}
        highest = max(totals.values())
        assert all(scores[n] == 10 for n, t in totals.items() if t == highest)
        for a, total_a in totals.items():
            for b, total_b in totals.items():
                if total_a > total_b:
                    assert scores[a] >= scores[b], (pod.key, totals, scores)
                if total_a - total_b >= highest / 10:
                    assert scores[a] > scores[b], (pod.key, totals, scores)
        checked += 1
    # Every example with a choice to make was checked: gated-priority.yaml has a single node, and
    # each pod of unschedulable.yaml and dra-gpus.yaml (only node-gpu has GPUs) fits one node at most,
    # and hints.yaml's pods are each kept off every node but one (what its "fits if" hints are about).
    assert checked > 0 or state_file in (
        "gated-priority.yaml",
        "unschedulable.yaml",
        "dra-gpus.yaml",
        "storage.yaml",
        "hints.yaml",
    )


@given(st.lists(st.integers(min_value=0, max_value=100 * 20), min_size=1, max_size=50))
def test_the_mapping_keeps_order_and_uses_the_top_of_the_range(totals: list[int]) -> None:
    scores = extender_scores(totals)
    assert all(0 <= s <= 10 for s in scores)
    if max(totals) > 0:
        assert scores[totals.index(max(totals))] == 10
    for (ta, sa), (tb, sb) in itertools.product(zip(totals, scores, strict=True), repeat=2):
        if ta > tb:
            assert sa >= sb


def test_filter_applies_dynamic_resources() -> None:
    """/filter runs DynamicResources: only the node whose ResourceSlice has a free device of the
    claim's class passes, the other gets kube-scheduler's reason."""
    from app.scheduler.scheduler import ClusterObjects
    from plugins.dra_helpers import claim_raw, dev, exact, slice_raw

    registry = in_tree_registry()
    objects = ClusterObjects()
    objects.add(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    )
    objects.add(slice_raw("n1-gpus", "n1", "n1", "gpu.example.com", dev("gpu-0")))
    objects.add(claim_raw("c", exact("gpu", "gpu")))
    engine = Engine(load_config(None, registry), registry, objects=objects)
    for name in ("n1", "n2"):
        engine.cache.add_node(make_node(name, {"cpu": "4", "memory": "8Gi", "pods": "110"}))
    pod = make_pod("web", ONE_CPU, resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}])
    result = ExtenderService(engine).filter(ExtenderArgs(pod, None, ["n1", "n2"]))
    assert result.node_names == ["n1"]
    assert {**result.failed, **result.unresolvable} == {"n2": "cannot allocate all claims"}
