"""What the verbs record for ``berth serve``'s web UI: per pod, /filter's verdicts, /prioritize's
per-plugin scores and weights, /preempt's victims and the node /bind bound, bounded."""

from __future__ import annotations

from extender.conftest import cluster_engine
from extender.test_bind import FakeClient
from extender.test_preempt import cluster, meta_args, preemptor

from app.api.objects import Pod
from app.config import load_config
from app.extender.bind import Binder, BindingArgs, BindResult, RememberingService
from app.extender.decisions import ExtenderDecisions
from app.extender.preempt import preempt
from app.extender.service import UNKNOWN_NODE_REASON, ExtenderService
from app.extender.wire import ExtenderArgs
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from builders import make_node, make_pod

ONE_CPU = [{"cpu": "1"}]


def filter_then_prioritize(service: ExtenderService, pod: Pod, *names: str) -> list[str]:
    """kube-scheduler's cycle: /filter, then /prioritize of the nodes it passed."""
    passed = service.filter(ExtenderArgs(pod, None, list(names))).node_names or []
    service.speculate()  # what the server runs once /filter has answered
    service.prioritize(ExtenderArgs(pod, None, list(passed)))
    return passed


def bind(service: RememberingService, pod: Pod, node: str, error: str = "") -> None:
    """What the server does once a Binding is answered."""
    service.binder.record(BindingArgs(pod.name, pod.namespace, pod.uid, node), BindResult(error, pod))


def remembering(engine: Engine) -> RememberingService:
    return RememberingService(engine, None, Binder(FakeClient(), engine))


def test_a_bound_pod_shows_filter_verdicts_scores_weights_and_its_node() -> None:
    engine = cluster_engine()
    service = remembering(engine)
    pod = make_pod("web", ONE_CPU)
    for _ in range(2):  # the first prioritize trains the speculation, the second takes its answer
        assert filter_then_prioritize(service, pod, "n1", "n2", "ghost", "n3") == ["n2", "n3"]
    bind(service, pod, "n3")

    [decision] = service.decisions.recent(10)
    assert decision["pod"] == "default/web"
    assert (decision["status"], decision["node"], decision["attempts"]) == ("Scheduled", "n3", 2)
    record = service.decisions.explain("default/web")
    assert record is not None
    assert (record["feasibleNodes"], record["evaluatedNodes"]) == (2, 4)
    assert record["filter"]["n1"] == {
        "plugin": "NodeResourcesFit",
        "status": "Unschedulable",
        "reasons": ["Insufficient cpu"],
        "details": [],
    }
    assert record["filter"]["ghost"]["reasons"] == [UNKNOWN_NODE_REASON.format(name="ghost")]
    assert set(record["scores"]) == {"n2", "n3"}
    weights = engine.profiles["default-scheduler"].score_weights
    assert record["weights"] == dict(weights) and record["profile"] == "default-scheduler"
    n3 = record["scores"]["n3"]
    # each plugin's normalized score times its weight adds up to the total kube-scheduler compares
    assert sum(n3[p] * w for p, w in weights.items() if p in n3) == n3["total"]
    assert record["winner"]["node"] == "n3" and record["runnerUp"]["node"] == "n2"


def test_no_node_passing_is_unschedulable_with_the_fit_error() -> None:
    service = ExtenderService(cluster_engine())
    service.filter(ExtenderArgs(make_pod("huge", [{"cpu": "3"}]), None, ["n1", "n2"]))
    [decision] = service.decisions.recent(10)
    assert decision["status"] == "Unschedulable"
    assert decision["message"] == "0/2 nodes are available: 2 Insufficient cpu."


def test_a_failed_bind_is_an_error_and_a_new_pod_of_the_same_name_starts_afresh() -> None:
    service = remembering(cluster_engine())
    pod = make_pod("web", ONE_CPU)
    filter_then_prioritize(service, pod, "n2", "n3")
    bind(service, pod, "n2", "binding pod default/web to node n2: pod not found")
    [decision] = service.decisions.recent(10)
    assert decision["status"] == "Error" and "pod not found" in decision["message"]

    again = make_pod("web", ONE_CPU, uid="other-uid")
    service.filter(ExtenderArgs(again, None, ["n2"]))
    [decision] = service.decisions.recent(10)
    assert (decision["status"], decision["attempts"]) == ("Filtered", 1)


def test_preempt_records_the_victims_berth_kept_per_node() -> None:
    service = ExtenderService(cluster())
    pod = preemptor()
    service.filter(ExtenderArgs(pod, None, ["a", "zoned"]))
    preempt(service, meta_args(pod, {"a": ["low-2", "low-1"], "zoned": ["z-2", "z-1"]}))
    record = service.decisions.explain(pod.key)
    assert record is not None
    assert record["status"] == "Unschedulable"
    assert record["preemption"] == {"a": ["default/low-1"], "zoned": ["default/z-1"]}


def test_polls_get_what_changed_since_and_the_store_is_bounded() -> None:
    service = ExtenderService(cluster_engine(), decisions=ExtenderDecisions(capacity=3))
    for i in range(5):
        service.filter(ExtenderArgs(make_pod(f"p{i}", ONE_CPU), None, ["n2"]))
    listed = service.decisions.recent(10)
    assert [d["pod"] for d in listed] == ["default/p4", "default/p3", "default/p2"]
    assert service.decisions.explain("default/p0") is None
    since = listed[0]["time"]
    assert service.decisions.recent(10, since) == []
    service.filter(ExtenderArgs(make_pod("p2", ONE_CPU), None, ["n2"]))
    assert [d["pod"] for d in service.decisions.recent(10, since)] == ["default/p2"]


def test_a_settled_record_keeps_the_best_scores_and_some_rejections_and_counts_the_rest() -> None:
    """Whatever the cluster's size a record stays small: once settled (after the next /filter's
    answer) it lists the 20 best-scored and 50 rejected nodes, and counts all of them."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    small = [f"small-{i:02d}" for i in range(60)]  # too small for a 1-CPU pod
    big = [f"big-{i:02d}" for i in range(30)]
    for name in small:
        engine.cache.add_node(make_node(name, {"cpu": "500m", "memory": "4Gi", "pods": "110"}))
    for i, name in enumerate(big):
        engine.cache.add_node(make_node(name, {"cpu": str(2 + i), "memory": "4Gi", "pods": "110"}))
    service = ExtenderService(engine)
    pod = make_pod("web", ONE_CPU)
    filter_then_prioritize(service, pod, *small, *big)
    service.speculate()  # settles what the verbs recorded

    record = service.decisions.explain(pod.key)
    assert record is not None
    assert (record["feasibleNodes"], record["evaluatedNodes"]) == (30, 90)
    assert len(record["scores"]) == 20 and record["scoresOmitted"] == 10
    assert len(record["filter"]) == 50 and record["filterOmitted"] == 10
    assert record["filterSummary"] == [
        {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "nodes": 60}
    ]

    huge = make_pod("huge", [{"cpu": "100"}])
    service.filter(ExtenderArgs(huge, None, [*small, *big]))
    service.speculate()
    [decision] = service.decisions.recent(1)
    assert decision["message"] == "0/90 nodes are available: 90 Insufficient cpu."
