"""The in-tree plugins' queueing hints, ported from kube-scheduler v1.36.3's test tables:
nodeaffinity Test_isSchedulableAfterNodeChange, tainttoleration TestIsSchedulableAfterNodeChange and
Test_isSchedulableAfterPodTolerationChange, nodeunschedulable TestIsSchedulableAfterNodeChange and
TestIsSchedulableAfterPodTolerationChange, nodeports Test_isSchedulableAfterPodDeleted, noderesources
Test_isSchedulableAfterPodChange and Test_isSchedulableAfterNodeChange, schedulinggates
Test_isSchedulableAfterPodChange. A wrong object type raises HintError (kube: Queue with an error)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from app.api.objects import Pod
from app.framework.events import HintError, QueueingHint
from app.framework.interfaces import EnqueueExtensions
from app.plugins.defaultpreemption.default_preemption import DefaultPreemption
from app.plugins.interpodaffinity.plugin import InterPodAffinity
from app.plugins.nodeaffinity.args import NodeAffinityArgs
from app.plugins.nodeaffinity.node_affinity import NodeAffinity
from app.plugins.nodeports.node_ports import NodePorts
from app.plugins.noderesources.fit import NodeResourcesFit
from app.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable
from app.plugins.podtopologyspread.plugin import PodTopologySpread
from app.plugins.schedulinggates.scheduling_gates import SchedulingGates
from app.plugins.tainttoleration.taint_toleration import TaintToleration
from builders import make_node, make_pod
from fakes import FakeHandle

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
Hint = Callable[[Pod, object, object], QueueingHint]
Case = tuple[str, Pod, object, object, QueueingHint]


def run_cases(hint: Hint, cases: list[Case]) -> None:
    for name, pod, old, new, want in cases:
        assert hint(pod, old, new) is want, name


def wrong_objects(hint: Hint, pod: Pod, good: object) -> None:
    with pytest.raises(HintError):
        hint(pod, None, "not-an-object")
    with pytest.raises(HintError):
        hint(pod, "not-an-object", good)


# --- NodeAffinity ------------------------------------------------------------------------------

IN_FOO_BAR = {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]
}
AFFINITY_POD = make_pod(
    "p", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": IN_FOO_BAR}}
)


def node_affinity(added: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity(NodeAffinityArgs(added), FakeHandle())


def test_node_affinity_hint() -> None:
    hint = node_affinity().is_schedulable_after_node_change
    wrong_objects(hint, AFFINITY_POD, make_node())
    plain, foo_bar, other = make_node(), make_node(labels={"foo": "bar"}), make_node(labels={"k": "v"})
    bigger = make_node(allocatable={"cpu": "8"})
    run_cases(
        hint,
        [
            ("skip-queue-on-add", AFFINITY_POD, None, plain, SKIP),
            ("queue-on-add", AFFINITY_POD, None, foo_bar, Q),
            ("skip-unrelated-changes", AFFINITY_POD, plain, bigger, SKIP),
            ("skip-unrelated-changes-on-labels", AFFINITY_POD, plain, other, SKIP),
            ("skip-labels-changes-on-node-from-suitable-to-unsuitable", AFFINITY_POD, foo_bar, other, SKIP),
            ("queue-on-labels-change-makes-pod-schedulable", AFFINITY_POD, plain, foo_bar, Q),
            (
                "skip-unrelated-change-that-keeps-pod-schedulable",
                AFFINITY_POD,
                foo_bar,
                make_node(allocatable={"cpu": "8"}, labels={"foo": "bar"}),
                SKIP,
            ),
        ],
    )
    enforced = node_affinity({"requiredDuringSchedulingIgnoredDuringExecution": IN_FOO_BAR})
    run_cases(
        enforced.is_schedulable_after_node_change,
        [
            ("skip-queue-on-add-scheduler-enforced-node-affinity", AFFINITY_POD, None, plain, SKIP),
            ("queue-on-add-scheduler-enforced-node-affinity", AFFINITY_POD, None, foo_bar, Q),
        ],
    )


def test_node_affinity_hint_with_an_unparsable_term_is_an_error() -> None:
    bad = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "Gt", "values": ["x"]}]}]}
    pod = make_pod("p", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": bad}})
    with pytest.raises(HintError):
        node_affinity().is_schedulable_after_node_change(pod, None, make_node())


# --- TaintToleration / NodeUnschedulable -----------------------------------------------------


def taints(*values: str) -> list[dict[str, str]]:
    return [{"key": "dedicated", "value": v, "effect": "NoSchedule"} for v in values]


def test_taint_toleration_node_hint() -> None:
    hint = TaintToleration(None, FakeHandle()).is_schedulable_after_node_change
    pod = make_pod(
        "p", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]
    )
    wrong_objects(hint, pod, make_node(taints=taints("user1")))
    run_cases(
        hint,
        [
            ("skip-queue-on-untoleratedtaint-node-added", pod, None, make_node(taints=taints("user1")), SKIP),
            ("queue-on-toleratedtaint-node-added", pod, None, make_node(taints=taints("user2")), Q),
            (
                "skip-unrelated-change",
                pod,
                make_node(taints=taints("user1")),
                make_node(taints=taints("user1", "user3")),
                SKIP,
            ),
            (
                "queue-on-taint-change",
                pod,
                make_node(taints=taints("user1")),
                make_node(taints=taints("user2")),
                Q,
            ),
        ],
    )


def test_toleration_hints_only_for_the_pod_itself() -> None:
    target = make_pod("p", uid="uid0")
    other = make_pod("q", uid="uid1", tolerations=[{"key": "foo", "effect": "NoSchedule"}])
    tolerating = make_pod(
        "p", uid="uid0", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
    )
    unrelated = make_pod("p", uid="uid0", tolerations=[{"key": "unrelated-key", "operator": "Exists"}])
    taint_hint = TaintToleration(None, FakeHandle()).is_schedulable_after_pod_toleration_change
    wrong_objects(taint_hint, target, target)
    run_cases(
        taint_hint,
        [
            ("skip-updates-other-pod", target, make_pod("q", uid="uid1"), other, SKIP),
            ("queue-on-the-pod-itself", target, target, unrelated, Q),
        ],
    )
    cordon_hint = NodeUnschedulable(None, FakeHandle()).is_schedulable_after_pod_toleration_change
    wrong_objects(cordon_hint, target, target)
    run_cases(
        cordon_hint,
        [
            (
                "skip-different-pod-update",
                target,
                None,
                make_pod("q", uid="x", tolerations=tolerating.raw["spec"]["tolerations"]),
                SKIP,
            ),
            ("queue-when-the-unsched-pod-gets-toleration", target, target, tolerating, Q),
            ("skip-when-the-unsched-pod-gets-unrelated-toleration", target, target, unrelated, SKIP),
        ],
    )


def test_node_unschedulable_node_hint() -> None:
    hint = NodeUnschedulable(None, FakeHandle()).is_schedulable_after_node_change
    pod = make_pod("p")
    cordoned, open_ = make_node(unschedulable=True), make_node(unschedulable=False)
    not_ready = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    wrong_objects(hint, pod, open_)
    run_cases(
        hint,
        [
            ("skip-queue-on-unschedulable-node-added", pod, None, cordoned, SKIP),
            ("queue-on-schedulable-node-added", pod, None, open_, Q),
            (
                "skip-unrelated-change-unschedulable-true",
                pod,
                cordoned,
                make_node(unschedulable=True, taints=not_ready),
                SKIP,
            ),
            ("skip-unrelated-change-unschedulable-false", pod, open_, make_node(taints=not_ready), SKIP),
            ("queue-on-unschedulable-field-change", pod, cordoned, open_, Q),
        ],
    )


# --- NodePorts -------------------------------------------------------------------------------


def port_pod(name: str, *ports: int, **spec: Any) -> Pod:
    containers = [{"name": "c", "image": "i", "ports": [{"containerPort": p, "hostPort": p} for p in ports]}]
    return make_pod(name, containers=containers, **spec)


def test_node_ports_hint() -> None:
    hint = NodePorts(None, FakeHandle()).is_schedulable_after_pod_deleted
    pod = port_pod("p", 8080)
    with pytest.raises(HintError):
        hint(pod, "not-a-pod", None)
    run_cases(
        hint,
        [
            ("skip-queue-on-unscheduled", pod, port_pod("q", 8080), None, SKIP),
            ("skip-queue-on-non-hostport", pod, make_pod("q", nodeName="fake-node"), None, SKIP),
            ("skip-queue-on-unrelated-hostport", pod, port_pod("q", 8081, nodeName="fake-node"), None, SKIP),
            ("queue-on-released-hostport", pod, port_pod("q", 8080, nodeName="fake-node"), None, Q),
        ],
    )


# --- NodeResourcesFit ------------------------------------------------------------------------


def req_pod(name: str, uid: str = "", level: bool = False, **requests: str) -> Pod:
    spec: dict[str, Any] = {"uid": uid or f"uid-{name}"}
    if level:
        spec["resources"] = {"requests": requests}
        return make_pod(name, **spec)
    return make_pod(name, requests=[requests], **spec)


def test_fit_pod_event_hint() -> None:
    hint = NodeResourcesFit(None, FakeHandle()).is_schedulable_after_pod_event
    pod1 = req_pod("pod1", cpu="1")
    wrong_objects(hint, pod1, pod1)
    on = {"nodeName": "fake"}
    run_cases(
        hint,
        [
            ("queue-on-deleted", pod1, make_pod("pod2", requests=[{"cpu": "1"}], **on), None, Q),
            ("skip-queue-on-unscheduled-pod-deleted", pod1, make_pod("pod2"), None, SKIP),
            (
                "queue-on-deleted-nominated-pod",
                pod1,
                replace(req_pod("pod2", cpu="2"), nominated_node_name="fake"),
                None,
                Q,
            ),
            (
                "skip-queue-on-unscheduled-pod-scale-down",
                pod1,
                req_pod("pod2", cpu="2"),
                req_pod("pod2", cpu="1"),
                SKIP,
            ),
            (
                "skip-queue-on-other-resource-scale-down",
                pod1,
                make_pod("pod2", requests=[{"memory": "2"}], **on),
                make_pod("pod2", requests=[{"memory": "1"}], **on),
                SKIP,
            ),
            (
                "skip-queue-on-other-pod-level-resource-scale-down",
                req_pod("pod1", level=True, cpu="1"),
                make_pod("pod2", resources={"requests": {"memory": "2"}}, **on),
                make_pod("pod2", resources={"requests": {"memory": "1"}}, **on),
                SKIP,
            ),
            (
                "queue-on-pod-scale-down",
                pod1,
                make_pod("pod2", requests=[{"cpu": "2"}], **on),
                make_pod("pod2", requests=[{"cpu": "1"}], **on),
                Q,
            ),
            (
                "queue-on-pod-level-resource-scale-down",
                req_pod("pod1", level=True, cpu="1"),
                make_pod("pod2", resources={"requests": {"cpu": "2"}}, **on),
                make_pod("pod2", resources={"requests": {"cpu": "1"}}, **on),
                Q,
            ),
            ("queue-on-target-pod-scale-down", pod1, req_pod("pod1", cpu="2"), req_pod("pod1", cpu="1"), Q),
        ],
    )


def test_fit_node_hint() -> None:
    hint = NodeResourcesFit(None, FakeHandle()).is_schedulable_after_node_change
    pod = req_pod("p", cpu="2", memory="2")
    wrong_objects(hint, pod, make_node())
    small = make_node(allocatable={"cpu": "1", "memory": "1", "pods": "10"})
    big = make_node(allocatable={"cpu": "4", "memory": "4", "pods": "10"})
    bigger = make_node(allocatable={"cpu": "8", "memory": "4", "pods": "10"})
    more_pods = make_node(allocatable={"cpu": "4", "memory": "4", "pods": "20"})
    run_cases(
        hint,
        [
            ("skip-queue-on-node-add-without-sufficient-resources", pod, None, small, SKIP),
            ("queue-on-node-add-with-sufficient-resources", pod, None, big, Q),
            ("skip-queue-on-node-unchanged", pod, big, big, SKIP),
            ("skip-queue-on-node-changes-from-suitable-to-unsuitable", pod, big, small, SKIP),
            ("queue-on-node-changes-from-unsuitable-to-suitable", pod, small, big, Q),
            ("queue-on-node-cpu-increase", pod, big, bigger, Q),
            ("queue-on-more-pod-slots", pod, big, more_pods, Q),
        ],
    )


# --- SchedulingGates / DefaultPreemption / wrappers --------------------------------------------


def test_scheduling_gates_hint() -> None:
    hint = SchedulingGates(None, FakeHandle()).is_schedulable_after_update_pod_scheduling_gates_eliminated
    pod = make_pod("p", uid="uid0", schedulingGates=[{"name": "g"}])
    wrong_objects(hint, pod, pod)
    run_cases(
        hint,
        [
            (
                "skip-queue-on-other-pod-updated",
                pod,
                make_pod("q", uid="uid1"),
                make_pod("q", uid="uid1"),
                SKIP,
            ),
            ("queue-on-gates-eliminated", pod, pod, make_pod("p", uid="uid0"), Q),
        ],
    )


def test_default_preemption_always_skips() -> None:
    events = DefaultPreemption(None, FakeHandle()).events_to_register()
    assert [e.event.label for e in events] == ["PodDelete"]
    fn = events[0].hint_fn
    assert fn is not None and fn(make_pod("p"), make_pod("q", nodeName="n"), None) is SKIP


def _registered_hint(plugin: EnqueueExtensions, resource: str) -> Hint:
    fns = [e.hint_fn for e in plugin.events_to_register() if e.event.resource == resource]
    assert len(fns) == 1 and fns[0] is not None
    return fns[0]


def test_spreading_and_affinity_hints_answer_queueing_hints() -> None:
    spread_pod = make_pod(
        "p",
        labels={"app": "a"},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "a"}},
            }
        ],
    )
    spread = PodTopologySpread(None, FakeHandle())
    pod_hint, node_hint = _registered_hint(spread, "Pod"), _registered_hint(spread, "Node")
    assert pod_hint(spread_pod, None, make_pod("q", labels={"app": "a"}, nodeName="n")) is Q
    assert pod_hint(spread_pod, None, make_pod("q", labels={"app": "b"}, nodeName="n")) is SKIP
    assert node_hint(spread_pod, None, make_node(labels={"zone": "z"})) is Q
    assert node_hint(spread_pod, None, make_node()) is SKIP
    with pytest.raises(HintError):
        node_hint(spread_pod, None, "not-a-node")

    affinity_pod = make_pod(
        "p",
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
                ]
            }
        },
    )
    ipa = InterPodAffinity(None, FakeHandle())
    pod_hint, node_hint = _registered_hint(ipa, "Pod"), _registered_hint(ipa, "Node")
    assert pod_hint(affinity_pod, None, make_pod("db", labels={"app": "db"}, nodeName="n")) is Q
    assert pod_hint(affinity_pod, None, make_pod("web", labels={"app": "web"}, nodeName="n")) is SKIP
    assert node_hint(affinity_pod, None, make_node(labels={"zone": "z"})) is Q
    assert node_hint(affinity_pod, None, make_node()) is SKIP
