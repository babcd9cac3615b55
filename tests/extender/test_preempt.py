"""The preempt verb's logic and wire format: victims checked by berth's filters, shrunk, vetoed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.api.objects import Pod, parse_pod
from app.config import load_config
from app.extender.preempt import preempt, unchanged
from app.extender.service import ExtenderService
from app.extender.wire import (
    NodeVictims,
    PreemptionArgs,
    PreemptionResult,
    WireError,
    decode_preemption_args,
    encode_preemption_result,
)
from app.framework.status import Code, Status
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import ClusterObjects, Engine
from builders import make_node, make_pod, pod_dict

TWO_CPU = {"cpu": "2", "memory": "4Gi", "pods": "110"}
ONE_CPU = [{"cpu": "1"}]
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def low(name: str, priority: int, node: str, **spec: Any) -> dict[str, Any]:
    """A raw running pod of 1 CPU."""
    return pod_dict(name, requests=ONE_CPU, priority=priority, nodeName=node, **spec)


def cluster(pdbs: list[dict[str, Any]] | None = None) -> Engine:
    """Nodes of 2 CPUs, each full with two 1-CPU low-priority pods:

    - ``a``: low-1 (priority 1) and low-2 (priority 2), both labelled app=db
    - ``tainted``: tainted dedicated=gpu:NoSchedule, with t-1 and t-2
    - ``zoned``: labelled zone=b, with z-1 and z-2
    """
    registry = in_tree_registry()
    objects = ClusterObjects({"PodDisruptionBudget": pdbs or []})
    engine = Engine(load_config(None, registry), registry, objects=objects, seed=1)
    engine.cache.add_node(make_node("a", TWO_CPU))
    engine.cache.add_node(make_node("tainted", TWO_CPU, taints=[TAINT]))
    engine.cache.add_node(make_node("zoned", TWO_CPU, labels={"zone": "b"}))
    for raw in (
        low("low-1", 1, "a", labels={"app": "db"}),
        low("low-2", 2, "a", labels={"app": "db"}),
        low("t-1", 1, "tainted"),
        low("t-2", 2, "tainted"),
        low("z-1", 1, "zoned"),
        low("z-2", 2, "zoned"),
    ):
        engine.cache.add_pod(make_pod_from(raw))
    return engine


def make_pod_from(raw: dict[str, Any]) -> Pod:
    return parse_pod(raw)


def uid(name: str) -> str:
    return f"uid-default-{name}"


def preemptor(cpu: str = "1", **spec: Any) -> Pod:
    return make_pod("hi", [{"cpu": cpu}], priority=100, **spec)


def meta_args(pod: Pod, victims: dict[str, list[str]], pdb: int = 0) -> PreemptionArgs:
    """NodeNameToMetaVictims as kube-scheduler sends it: victims by pod name, most important first."""
    return PreemptionArgs(
        pod, {n: NodeVictims([uid(p) for p in pods], pdb) for n, pods in victims.items()}, False
    )


def answer(result: PreemptionResult) -> dict[str, tuple[list[str], int]]:
    """node -> (victim names, NumPDBViolations), for readable asserts."""
    assert result.error == ""
    return {
        node: ([u.removeprefix("uid-default-") for u in v.uids], v.num_pdb_violations)
        for node, v in result.victims.items()
    }


def pdb(allowed: int, **match: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"selector": {"matchLabels": match or {"app": "db"}}},
        "status": {"disruptionsAllowed": allowed},
    }


# --- the logic ------------------------------------------------------------------------------


def test_two_proposed_one_enough_keeps_the_less_important() -> None:
    # kube-scheduler sends the most important first; reprieving in that order gives low-2 back.
    result = preempt(ExtenderService(cluster()), meta_args(preemptor(), {"a": ["low-2", "low-1"]}))
    assert answer(result) == {"a": (["low-1"], 0)}


def test_all_needed_all_kept() -> None:
    result = preempt(ExtenderService(cluster()), meta_args(preemptor("2"), {"a": ["low-2", "low-1"]}))
    assert answer(result) == {"a": (["low-2", "low-1"], 0)}


def test_not_enough_victims_drops_the_node() -> None:
    # One 1-CPU victim on a full 2-CPU node cannot make room for 2 CPUs.
    result = preempt(
        ExtenderService(cluster()), meta_args(preemptor("2"), {"a": ["low-1"], "zoned": ["z-1"]})
    )
    assert answer(result) == {}


def test_nodes_berth_filters_still_reject_are_dropped() -> None:
    # A taint the pod does not tolerate, and a nodeSelector one node does not match: evicting
    # cannot help there, whatever kube-scheduler's own filters said.
    args = meta_args(
        preemptor(nodeSelector={"zone": "b"}),
        {"a": ["low-2", "low-1"], "tainted": ["t-2", "t-1"], "zoned": ["z-2", "z-1"]},
    )
    assert answer(preempt(ExtenderService(cluster()), args)) == {"zoned": (["z-1"], 0)}


def test_node_affinity_rejection_drops_the_node() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    args = meta_args(preemptor(affinity=affinity), {"a": ["low-1"], "zoned": ["z-1"]})
    assert answer(preempt(ExtenderService(cluster()), args)) == {"zoned": (["z-1"], 0)}


def test_a_node_berth_does_not_know_is_dropped() -> None:
    args = meta_args(preemptor(), {"ghost": ["low-1"], "a": ["low-2", "low-1"]})
    assert answer(preempt(ExtenderService(cluster()), args)) == {"a": (["low-1"], 0)}


def test_unknown_uids_are_kept() -> None:
    args = PreemptionArgs(preemptor(), {"a": NodeVictims(["not-cached", uid("low-2"), uid("low-1")])}, False)
    result = preempt(ExtenderService(cluster()), args)
    assert answer(result) == {"a": (["not-cached", "low-1"], 0)}


def test_a_pod_cached_on_another_node_is_unknown_here() -> None:
    # z-1 is on "zoned" in berth's cache: on "a" berth cannot judge it, so it stays, and only the
    # pods berth holds on "a" are simulated away.
    result = preempt(ExtenderService(cluster()), meta_args(preemptor(), {"a": ["z-1", "low-2", "low-1"]}))
    assert answer(result) == {"a": (["z-1", "low-1"], 0)}


def test_only_unknown_victims_the_node_is_judged_as_it_is() -> None:
    engine = cluster()
    engine.cache.add_node(make_node("idle", TWO_CPU))
    args = PreemptionArgs(preemptor(), {"a": NodeVictims(["x"]), "idle": NodeVictims(["y"], 1)}, False)
    # "a" is full in berth's view and nothing berth holds leaves it; "idle" fits as it is.
    assert answer(preempt(ExtenderService(engine), args)) == {"idle": (["y"], 0)}


def test_never_an_empty_victim_list() -> None:
    # berth's cache has room on "a" (low-2 already gone), so the pod fits without evicting: every
    # victim would be reprieved. kube-scheduler v1.36 errors on an empty list; berth keeps its list.
    engine = cluster()
    engine.cache.remove_pod(make_pod_from(low("low-2", 2, "a")))
    result = preempt(ExtenderService(engine), meta_args(preemptor(), {"a": ["low-1"]}))
    assert answer(result) == {"a": (["low-1"], 0)}
    assert all(v.uids for v in result.victims.values())


def test_a_list_that_arrives_empty_is_echoed_when_the_pod_fits() -> None:
    engine = cluster()
    engine.cache.add_node(make_node("idle", TWO_CPU))
    result = preempt(ExtenderService(engine), meta_args(preemptor(), {"idle": [], "a": []}))
    assert answer(result) == {"idle": ([], 0)}


def test_full_pods_are_matched_by_uid_and_unknown_ones_kept() -> None:
    full = [
        make_pod_from(low("stranger", 50, "a")),  # not in berth's cache
        make_pod_from(low("low-2", 2, "a")),
        make_pod_from(low("low-1", 1, "a")),
    ]
    args = PreemptionArgs(preemptor(), {"a": NodeVictims([p.uid for p in full], 0, full)}, True)
    assert answer(preempt(ExtenderService(cluster()), args)) == {"a": (["stranger", "low-1"], 0)}


def test_pdb_violations_are_counted_for_the_returned_victims() -> None:
    # disruptionsAllowed 0: evicting either app=db pod violates the budget.
    engine = cluster([pdb(0)])
    result = preempt(ExtenderService(engine), meta_args(preemptor("2"), {"a": ["low-2", "low-1"]}))
    assert answer(result) == {"a": (["low-2", "low-1"], 2)}
    result = preempt(ExtenderService(engine), meta_args(preemptor(), {"a": ["low-2", "low-1"]}))
    assert answer(result) == {"a": (["low-1"], 1)}


def test_pdb_aware_reprieve_order() -> None:
    # One disruption allowed: low-2 (more important) spends it, low-1 would overdraw it. The
    # violating pod is reprieved first, so low-2 is the victim and nothing is violated, where the
    # plain order would have evicted low-1 and violated the budget.
    result = preempt(ExtenderService(cluster([pdb(1)])), meta_args(preemptor(), {"a": ["low-2", "low-1"]}))
    assert answer(result) == {"a": (["low-2"], 0)}


def test_pdb_count_includes_full_victims_berth_does_not_hold() -> None:
    engine = cluster([pdb(0, app="web")])
    stranger = make_pod_from(low("stranger", 50, "a", labels={"app": "web"}))
    cached = make_pod_from(low("low-1", 1, "a"))
    args = PreemptionArgs(
        preemptor(), {"a": NodeVictims([stranger.uid, cached.uid], 0, [stranger, cached])}, True
    )
    assert answer(preempt(ExtenderService(engine), args)) == {"a": (["stranger", "low-1"], 1)}


def test_plugin_error_echoes_the_request_with_error(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = cluster()
    fwk = ExtenderService(engine).framework()

    def broken(*_: object) -> tuple[None, Status, set[str]]:
        return None, Status(Code.ERROR, "exploded", plugin="NodeAffinity"), set()

    monkeypatch.setattr(fwk, "run_pre_filter_plugins", broken)
    args = meta_args(preemptor(), {"a": ["low-2", "low-1"], "ghost": ["x"]}, pdb=3)
    result = preempt(ExtenderService(engine), args)
    assert result.error == 'running plugin "NodeAffinity": exploded'
    assert {n: (v.uids, v.num_pdb_violations) for n, v in result.victims.items()} == {
        "a": ([uid("low-2"), uid("low-1")], 3),
        "ghost": ([uid("x")], 3),
    }


def test_no_such_profile_echoes_the_request_with_error() -> None:
    result = preempt(ExtenderService(cluster(), "nope"), meta_args(preemptor(), {"a": ["low-1"]}))
    assert result.error == 'no profile named "nope"'
    assert result.victims == {"a": NodeVictims([uid("low-1")], 0)}


def test_prefilter_narrowing_drops_the_nodes_left_out() -> None:
    # NodeAffinity's PreFilter narrows a metadata.name matchFields term to the names it lists.
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["elsewhere"]}]}
                ]
            }
        }
    }
    args = meta_args(preemptor(affinity=affinity), {"a": ["low-2", "low-1"], "zoned": ["z-1"]})
    assert answer(preempt(ExtenderService(cluster()), args)) == {}
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchFields"
    ][0]["values"] = ["zoned"]
    args = meta_args(preemptor(affinity=affinity), {"a": ["low-2", "low-1"], "zoned": ["z-2", "z-1"]})
    assert answer(preempt(ExtenderService(cluster()), args)) == {"zoned": (["z-1"], 0)}


def test_prefilter_rejection_drops_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = cluster()
    fwk = ExtenderService(engine).framework()

    def rejects(*_: object) -> tuple[None, Status, set[str]]:
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no", plugin="NodePorts"), set()

    monkeypatch.setattr(fwk, "run_pre_filter_plugins", rejects)
    args = meta_args(preemptor(), {"a": ["low-2", "low-1"], "zoned": ["z-1"]})
    assert answer(preempt(ExtenderService(engine), args)) == {}


def test_unchanged_copies_the_lists() -> None:
    args = meta_args(preemptor(), {"a": ["low-1"]})
    result = unchanged(args, "why")
    result.victims["a"].uids.append("x")
    assert args.victims["a"].uids == [uid("low-1")]


# --- the wire format ------------------------------------------------------------------------


def test_decode_meta_victims_case_insensitively() -> None:
    body = orjson.dumps(
        {
            "pod": pod_dict("hi", requests=ONE_CPU, priority=100),
            "nodeNameToVictims": None,
            "NODENAMETOMETAVICTIMS": {
                "a": {"pods": [{"uid": "u1"}, {"UID": "u2"}], "numPDBViolations": 1},
                "b": {"Pods": None},
            },
        }
    )
    args = decode_preemption_args(body)
    assert args.pod.name == "hi"
    assert args.full is False
    assert args.victims == {"a": NodeVictims(["u1", "u2"], 1), "b": NodeVictims([], 0)}


def test_decode_full_victims() -> None:
    v = low("low-1", 1, "a")
    body = orjson.dumps(
        {"Pod": pod_dict("hi"), "NodeNameToVictims": {"a": {"Pods": [v], "NumPDBViolations": 0}}}
    )
    args = decode_preemption_args(body)
    assert args.full is True
    entry = args.victims["a"]
    assert entry.uids == [uid("low-1")]
    assert entry.pods is not None
    assert [p.name for p in entry.pods] == ["low-1"]


def test_full_form_wins_when_both_are_sent() -> None:
    body = orjson.dumps(
        {
            "Pod": pod_dict("hi"),
            "NodeNameToVictims": {"a": {"Pods": [low("low-1", 1, "a")]}},
            "NodeNameToMetaVictims": {"b": {"Pods": [{"UID": "x"}]}},
        }
    )
    assert list(decode_preemption_args(body).victims) == ["a"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"NodeNameToMetaVictims": {}}, "Pod: Required value"),
        ({"Pod": pod_dict("hi")}, "NodeNameToVictims, NodeNameToMetaVictims: Required value"),
        (
            {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": []},
            "NodeNameToMetaVictims: expected an object (node name to MetaVictims), got array",
        ),
        (
            {"Pod": pod_dict("hi"), "NodeNameToVictims": {"a": None}},
            "NodeNameToVictims[a]: expected an object (Victims), got null",
        ),
        (
            {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": {"a": {"Pods": {"UID": "x"}}}},
            "NodeNameToMetaVictims[a].Pods: expected an array, got object",
        ),
        (
            {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": {"a": {"Pods": ["x"]}}},
            "NodeNameToMetaVictims[a].Pods[0]: expected an object (MetaPod), got string",
        ),
        (
            {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": {"a": {"Pods": [{"UID": 7}]}}},
            "NodeNameToMetaVictims[a].Pods[0].UID: expected a string, got number",
        ),
        (
            {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": {"a": {"Pods": [], "NumPDBViolations": "1"}}},
            "NodeNameToMetaVictims[a].NumPDBViolations: expected an integer, got string",
        ),
        (
            {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": {"a": {"Pods": [], "NumPDBViolations": True}}},
            "NodeNameToMetaVictims[a].NumPDBViolations: expected an integer, got boolean",
        ),
        (
            {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": {"a": {"Pods": [], "NumPDBViolations": 1.5}}},
            "NodeNameToMetaVictims[a].NumPDBViolations: expected an integer, got number",
        ),
        (  # both forms: the full one is used, but Go decodes (and so checks) the other too
            {
                "Pod": pod_dict("hi"),
                "NodeNameToVictims": {},
                "NodeNameToMetaVictims": {"a": {"Pods": True}},
            },
            "NodeNameToMetaVictims[a].Pods: expected an array, got boolean",
        ),
        (  # Go's int64 (the document says so: minimum and maximum)
            {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": {"a": {"Pods": [], "NumPDBViolations": 2**63}}},
            "NodeNameToMetaVictims[a].NumPDBViolations: 9223372036854775808 overflows a Go int64",
        ),
        (
            {"Pod": pod_dict("hi"), "NodeNameToVictims": {"a": {"Pods": [{"metadata": {}}]}}},
            "NodeNameToVictims[a].Pods[0].metadata.name: Required value",
        ),
    ],
)
def test_decode_errors_name_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(WireError) as err:
        decode_preemption_args(orjson.dumps(doc))
    assert str(err.value).startswith(message), str(err.value)


def test_an_integral_number_of_pdb_violations_is_the_integer_the_document_allows() -> None:
    # JSON Schema's integer includes 2.0 (Go's decoder refuses it; kube-scheduler never sends one).
    doc = {"Pod": pod_dict("hi"), "NodeNameToMetaVictims": {"a": {"Pods": [], "NumPDBViolations": 2.0}}}
    args = decode_preemption_args(orjson.dumps(doc))
    assert args.victims["a"].num_pdb_violations == 2


def test_decode_rejects_non_objects() -> None:
    with pytest.raises(WireError, match=r"expected a JSON object \(ExtenderPreemptionArgs\), got array"):
        decode_preemption_args(b"[]")
    with pytest.raises(WireError, match="not valid JSON"):
        decode_preemption_args(b"{")


def test_encode_is_the_go_shape_with_error_only_when_set() -> None:
    ok = PreemptionResult({"a": NodeVictims(["u1"], 1, None)})
    assert orjson.loads(encode_preemption_result(ok)) == {
        "NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 1}}
    }
    assert orjson.loads(encode_preemption_result(PreemptionResult({}))) == {"NodeNameToMetaVictims": {}}
    failed = PreemptionResult({}, "boom")
    assert orjson.loads(encode_preemption_result(failed)) == {"NodeNameToMetaVictims": {}, "Error": "boom"}
