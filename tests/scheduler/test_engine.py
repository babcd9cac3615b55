"""Engine.schedule_one with the real in-tree plugins and the default configuration: the scheduling
cycle (schedule_one.go's schedulingCycle) and the synchronous binding cycle, ported in spirit from
schedule_one_test.go (TestSchedulerScheduleOne, TestSchedulerFailedSchedulingReasons,
TestSchedulerBinding)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from app.api.objects import Node, Pod
from app.config import load_config
from app.framework.cycle_state import CycleState
from app.framework.interfaces import PermitPlugin, Plugin, PreBindPlugin, ReservePlugin
from app.framework.registry import Registry
from app.framework.runtime import Framework, PluginRef
from app.framework.status import Code, Status
from app.plugins.registry import in_tree_registry
from app.scheduler.profile import profile_spec
from app.scheduler.scheduler import Engine
from builders import make_node, make_pod

LOG: list[str] = []


@pytest.fixture(autouse=True)
def _clear_log() -> None:
    LOG.clear()


def engine(nodes: Sequence[Node] = (), seed: int = 1, **kw: Any) -> Engine:
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, seed=seed, **kw)
    for n in nodes:
        e.cache.add_node(n)
    return e


def with_plugins(e: Engine, *plugins: type[Plugin], **points: list[str]) -> Framework:
    """The default profile plus extra plugins at the given points (appended after the defaults)."""
    spec = profile_spec(e.cfg.profiles[0])
    for point, names in points.items():
        spec.plugins[point][0].extend(PluginRef(n) for n in names)
    fw = Framework(spec, in_tree_registry().merge(Registry(plugins)), e.handle)
    e.profiles[fw.profile_name] = fw
    return fw


def node(
    name: str, cpu: str = "4", mem: str = "8Gi", labels: dict[str, str] | None = None, **spec: Any
) -> Node:
    return make_node(name, {"cpu": cpu, "memory": mem, "pods": "110"}, labels, **spec)


def cpu_pod(name: str, cpu: str, **spec: Any) -> Pod:
    return make_pod(name, [{"cpu": cpu, "memory": "100Mi"}], **spec)


# --- the scheduling cycle with real plugins ----------------------------------------------------------


def test_unresolvable_pre_filter_rejection_leaves_dynamic_resources_without_state() -> None:
    """kube-scheduler's RunPreFilterPlugins returns at an UnschedulableAndUnresolvable PreFilter
    (NodeAffinity's conflicting metadata.name terms here), so DynamicResources' PreFilter, later in
    the profile, never writes its state; RunPostFilterPlugins then stops at its PostFilter's Error
    ("not found") and DefaultPreemption never runs: that is the whole post-filter message."""
    e = engine([node("a"), node("b")])
    conflicting = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["a"]},
                            {"key": "metadata.name", "operator": "In", "values": ["b"]},
                        ]
                    }
                ]
            }
        }
    }
    attempt = e.schedule_one(cpu_pod("p", "1", affinity=conflicting))
    assert attempt.status == "Unschedulable"
    assert attempt.message == "0/2 nodes are available: pod affinity terms conflict. not found"
    assert attempt.victims == []


def test_four_node_failure_message() -> None:
    e = engine(
        [
            node("n-cpu", cpu="1", labels={"disk": "ssd"}),
            node("n-selector"),
            node(
                "n-taint",
                labels={"disk": "ssd"},
                taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}],
            ),
            node("n-unschedulable", labels={"disk": "ssd"}, unschedulable=True),
        ]
    )
    attempt = e.schedule_one(cpu_pod("p", "2", nodeSelector={"disk": "ssd"}))
    assert attempt.status == "Unschedulable"
    assert attempt.message == (
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. "
        "no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )
    assert attempt.num_all_nodes == 4
    assert attempt.diagnosis.unschedulable_plugins == {
        "NodeResourcesFit",
        "NodeAffinity",
        "TaintToleration",
        "NodeUnschedulable",
    }
    assert e.cache.pod_count == 0


def test_placements_follow_consumed_capacity() -> None:
    # Each 1-cpu node holds one 700m pod: the bound pods consume capacity, the fourth pod fails.
    e = engine([node("a", cpu="1"), node("b", cpu="1"), node("c", cpu="1")])
    placements = [e.schedule_one(cpu_pod(f"p{i}", "700m")) for i in range(4)]
    assert [a.status for a in placements] == ["Scheduled", "Scheduled", "Scheduled", "Unschedulable"]
    assert {a.node for a in placements[:3]} == {"a", "b", "c"}
    assert placements[3].message == (
        "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    assert e.cache.pod_count == 3 and e.cache.assumed_count == 0  # bound pods are confirmed
    for a in placements[:3]:
        assert a.node is not None
        assert [p.name for p in e.cache.pods_on(a.node)] == [a.pod.name]


def test_least_allocated_prefers_the_emptier_node() -> None:
    e = engine([node("small", cpu="1"), node("big", cpu="4")])
    placements = [e.schedule_one(cpu_pod(f"p{i}", "900m")).node for i in range(3)]
    assert placements == ["big", "big", "big"]
    # 4 x 900m fit on big and 1 on small; the sixth pod fits nowhere.
    rest = [e.schedule_one(cpu_pod(f"p{i}", "900m")) for i in range(3, 6)]
    assert sorted(a.node or "-" for a in rest[:2]) == ["big", "small"]
    assert rest[2].message == (
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_scheduled_attempt_explains_itself() -> None:
    e = engine([node("a"), node("b", cpu="1")])
    attempt = e.schedule_one(cpu_pod("p", "1500m"))
    assert (attempt.status, attempt.node) == ("Scheduled", "a")
    assert attempt.result is not None
    assert (attempt.result.evaluated_nodes, attempt.result.feasible_nodes) == (2, 1)
    assert attempt.diagnosis.node_to_status.statuses["b"].message() == "Insufficient cpu"


def test_node_name_pins_the_pod() -> None:
    e = engine([node("a"), node("b")])
    attempt = e.schedule_one(cpu_pod("p", "1", nodeName="b"))
    assert (attempt.status, attempt.node) == ("Scheduled", "b")


def test_ties_are_broken_by_the_seeded_rng() -> None:
    # Identical empty nodes tie; the choice is random among them but reproducible for a seed.
    def run(seed: int) -> list[str | None]:
        e = engine([node(f"n{i}") for i in range(6)], seed=seed)
        return [e.schedule_one(cpu_pod(f"p{i}", "10m")).node for i in range(6)]

    assert run(1) == run(1)
    assert set(run(1)) <= {f"n{i}" for i in range(6)}
    assert len({tuple(run(s)) for s in range(1, 6)}) > 1


def test_no_nodes() -> None:
    attempt = engine([]).schedule_one(cpu_pod("p", "1"))
    assert (attempt.status, attempt.message) == ("Unschedulable", "no nodes available to schedule pods")


def test_unknown_scheduler_name() -> None:
    attempt = engine([node("a")]).schedule_one(cpu_pod("p", "1", schedulerName="other"))
    assert (attempt.status, attempt.message) == ("Error", 'no profile for scheduler name "other"')


def test_deleting_pod_is_skipped() -> None:
    pod = cpu_pod("p", "1")
    pod.deletion_timestamp = "2026-01-01T00:00:00Z"
    attempt = engine([node("a")]).schedule_one(pod)
    assert (attempt.status, attempt.message) == ("Error", "skip schedule deleting pod: default/p")


# --- Reserve / Permit failures: Unreserve + forget ------------------------------------------------


class RecordingReserve(ReservePlugin):
    name: ClassVar[str] = "RecordingReserve"

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        LOG.append(f"{self.name}.reserve({pod.name}@{node_name})")
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        LOG.append(f"{self.name}.unreserve({pod.name}@{node_name})")


class RejectingReserve(RecordingReserve):
    name: ClassVar[str] = "RejectingReserve"

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        LOG.append(f"{self.name}.reserve({pod.name}@{node_name})")
        return Status(Code.UNSCHEDULABLE, "volume not ready")


class ErroringReserve(RecordingReserve):
    name: ClassVar[str] = "ErroringReserve"

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return Status(Code.ERROR, "etcd down")


def test_reserve_rejection_unreserves_forgets_and_reports_only_the_host() -> None:
    e = engine([node("a"), node("b", cpu="1")])
    with_plugins(e, RecordingReserve, RejectingReserve, reserve=["RecordingReserve", "RejectingReserve"])
    attempt = e.schedule_one(cpu_pod("p", "1500m"))  # "b" fails the Filter, "a" is chosen
    assert attempt.status == "Unschedulable"
    # A fresh diagnosis: b's Insufficient cpu is not part of the message.
    assert attempt.message == "0/1 nodes are available: 1 volume not ready."
    assert attempt.num_all_nodes == 1
    assert attempt.diagnosis.unschedulable_plugins == {"RejectingReserve"}
    assert set(attempt.diagnosis.node_to_status.statuses) == {"a"}
    assert LOG == [
        "RecordingReserve.reserve(p@a)",
        "RejectingReserve.reserve(p@a)",
        "RejectingReserve.unreserve(p@a)",
        "RecordingReserve.unreserve(p@a)",
    ]
    assert e.cache.pod_count == 0 and e.cache.assumed_count == 0


def test_reserve_error_is_an_error_attempt() -> None:
    e = engine([node("a")])
    with_plugins(e, ErroringReserve, reserve=["ErroringReserve"])
    attempt = e.schedule_one(cpu_pod("p", "1"))
    assert (attempt.status, attempt.message) == (
        "Error",
        'running Reserve plugin "ErroringReserve": etcd down',
    )
    assert e.cache.pod_count == 0


class RejectingPermit(PermitPlugin):
    name: ClassVar[str] = "RejectingPermit"

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.UNSCHEDULABLE, "not now"), 0.0


class WaitingPermit(PermitPlugin):
    name: ClassVar[str] = "WaitingPermit"

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT, "waiting for the gang"), 30.0


def test_permit_rejection_unreserves_and_forgets() -> None:
    e = engine([node("a")])
    with_plugins(
        e, RecordingReserve, RejectingPermit, reserve=["RecordingReserve"], permit=["RejectingPermit"]
    )
    attempt = e.schedule_one(cpu_pod("p", "1"))
    assert (attempt.status, attempt.message) == ("Unschedulable", "0/1 nodes are available: 1 not now.")
    assert attempt.diagnosis.unschedulable_plugins == {"RejectingPermit"}
    assert LOG == ["RecordingReserve.reserve(p@a)", "RecordingReserve.unreserve(p@a)"]
    assert e.cache.pod_count == 0


def test_permit_wait_ends_the_attempt_without_a_waiting_map() -> None:
    e = engine([node("a")])
    with_plugins(e, WaitingPermit, permit=["WaitingPermit"])
    attempt = e.schedule_one(cpu_pod("p", "1"))
    assert attempt.status == "Unschedulable"
    assert attempt.message == (
        "0/1 nodes are available: 1 one or more plugins asked to wait and no plugin rejected pod, "
        "1 waiting for the gang."
    )
    assert e.cache.pod_count == 0


# --- the binding cycle ------------------------------------------------------------------------------


class FailingBinder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        self.calls.append((pod.key, node_name))
        return Status(Code.ERROR, "connection refused")


def test_bind_failure_unreserves_and_forgets() -> None:
    binder = FailingBinder()
    e = engine([node("a", cpu="1")], binder=binder)
    with_plugins(e, RecordingReserve, reserve=["RecordingReserve"])
    attempt = e.schedule_one(cpu_pod("p", "1"))
    assert attempt.status == "Error"
    assert attempt.message == 'running Bind plugin "DefaultBinder": connection refused'
    assert binder.calls == [("default/p", "a")]
    assert LOG == ["RecordingReserve.reserve(p@a)", "RecordingReserve.unreserve(p@a)"]
    assert e.cache.pod_count == 0  # forgotten: the capacity is free again
    binder.bind = lambda pod, node_name: None  # type: ignore[method-assign]
    assert e.schedule_one(cpu_pod("q", "1")).node == "a"


class FailingPreBind(PreBindPlugin):
    name: ClassVar[str] = "FailingPreBind"

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return Status(Code.ERROR, "attach failed")


def test_pre_bind_failure_unreserves_and_forgets() -> None:
    e = engine([node("a")])
    with_plugins(
        e, RecordingReserve, FailingPreBind, reserve=["RecordingReserve"], preBind=["FailingPreBind"]
    )
    attempt = e.schedule_one(cpu_pod("p", "1"))
    assert (attempt.status, attempt.message) == (
        "Error",
        'running PreBind plugin "FailingPreBind": attach failed',
    )
    assert LOG == ["RecordingReserve.reserve(p@a)", "RecordingReserve.unreserve(p@a)"]
    assert e.cache.pod_count == 0


def test_successful_bind_runs_reserve_once_and_confirms_the_pod() -> None:
    e = engine([node("a")])
    with_plugins(e, RecordingReserve, reserve=["RecordingReserve"])
    pod = cpu_pod("p", "1")
    attempt = e.schedule_one(pod)
    assert (attempt.status, attempt.node) == ("Scheduled", "a")
    assert LOG == ["RecordingReserve.reserve(p@a)"]
    assert not e.cache.is_assumed(pod)
    cached = e.cache.get_pod(pod.uid)
    assert cached is not None and cached.node_name == "a"


class RecordingPreBind(PreBindPlugin):
    name: ClassVar[str] = "RecordingPreBind"
    seen: ClassVar[list[Pod]] = []

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.seen.append(pod)
        return None


def test_the_binding_cycle_binds_the_pod_the_scheduling_cycle_assumed() -> None:
    # As kube-scheduler's assumedPod: one copy with node_name set, from assume to PostBind.
    e = engine([node("a")])
    fw = with_plugins(e, RecordingPreBind, preBind=["RecordingPreBind"])
    RecordingPreBind.seen.clear()
    pod = cpu_pod("p", "1")
    state = e.new_cycle_state()
    attempt = e.scheduling_cycle(fw, state, pod)
    assert attempt.status == "Scheduled" and attempt.assumed is not None
    assert attempt.assumed.node_name == "a" and pod.node_name == ""
    assert e.cache.get_pod(pod.uid) is attempt.assumed
    assert e.binding_cycle(fw, state, pod, attempt).status == "Scheduled"
    assert RecordingPreBind.seen == [attempt.assumed]


def _mixed_cluster() -> Engine:
    """The default profile over nodes that each fail a different in-tree filter for some pods."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=7)
    no_schedule = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    prefer_not = [{"key": "spot", "effect": "PreferNoSchedule"}]
    for node in (
        make_node("plain"),
        make_node("cordoned", unschedulable=True),
        make_node("tainted", taints=no_schedule),
        make_node("spot", taints=prefer_not),
        make_node("small", {"cpu": "500m", "memory": "1Gi", "pods": "110"}),
        make_node("one-pod", {"cpu": "4", "memory": "32Gi", "pods": "1"}),
        make_node(
            "gpu", {"cpu": "4", "memory": "32Gi", "pods": "110", "example.com/gpu": "2"}, taints=no_schedule
        ),
        make_node("zoned", labels={"topology.kubernetes.io/zone": "b"}),
    ):
        engine.cache.add_node(node)
    engine.cache.add_pod(make_pod("resident", [{"cpu": "100m"}], nodeName="one-pod"))
    return engine


FILTER_PODS = {
    "plain": make_pod("a", [{"cpu": "100m", "memory": "100Mi"}]),
    "big": make_pod("b", [{"cpu": "1", "memory": "2Gi"}]),
    "named": make_pod("c", nodeName="small"),
    "tolerates-all": make_pod("d", [{"cpu": "2"}], tolerations=[{"operator": "Exists"}]),
    "gpu": make_pod(
        "e",
        [{"example.com/gpu": "1"}],
        tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
    ),
    "zone-a": make_pod(
        "f",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
                            ]
                        }
                    ]
                }
            }
        },
    ),
    "best-effort": make_pod("g"),
}


@pytest.mark.parametrize("pod", FILTER_PODS.values(), ids=list(FILTER_PODS))
def test_filter_nodes_decides_alike_whether_the_cycle_is_sampled_or_not(
    pod: Pod, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An unsampled cycle filters plugin by plugin (filter_all), a sampled one node by node with
    # every call timed: the same nodes pass, and each failing node has the same status.
    given: list[str] = []

    def outcome(sampled: bool) -> tuple[list[str], list[tuple[str, Code, str, str]]]:
        engine = _mixed_cluster()
        fwk = engine.profiles["default-scheduler"]
        engine.cache.update_snapshot(engine.algorithm.snapshot)
        nodes = list(engine.algorithm.snapshot.node_info_map.values())
        given[:] = [info.name for info in nodes]

        def state() -> CycleState:
            s = CycleState()
            s.record_plugin_metrics = sampled
            return s

        monkeypatch.setattr(engine, "new_cycle_state", state)
        result, _ = engine.filter_nodes(fwk, pod, nodes)
        failed = [(name, s.code, s.message(), s.plugin) for name, s in result.failed.items()]
        return [info.name for info in result.feasible], failed

    unsampled, sampled = outcome(False), outcome(True)
    assert unsampled == sampled
    failing = [name for name, *_ in unsampled[1]]
    assert failing == sorted(failing, key=given.index)  # in the order the nodes were given
    assert failing  # every pod of the table fails somewhere
