"""The scheduling queue, ported from kube-scheduler v1.36.3 backend/queue/scheduling_queue_test.go:
Add/Pop order, Test_InFlightPods, AddUnschedulableIfNotPresent (with backoff), Pop with and without
SchedulerPopFromBackoffQ, Update, Delete, Activate, moveToActiveQ's PreEnqueue, MoveAll with queueing
hints, the gating of pods, TestBackOffFlow, the unschedulable flush, PendingPods, Close and the
queue metrics. The clock is fake; only the flush-loop test waits on real time (about a second)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from backend.queue_helpers import PROFILE, FakeClock, hints, names, new_queue, queue_hint, sample, skip_hint

from app.api.objects import Pod
from app.backend.queue.nominator import Nominator
from app.backend.queue.scheduling_queue import PriorityQueue, QueuedPodInfo
from app.framework.events import (
    CSI_NODE,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    ActionType,
    ClusterEvent,
    QueueingHint,
    build_queueing_hint_map,
)
from app.framework.interfaces import PreEnqueuePlugin
from app.framework.status import Status, unresolvable
from app.plugins.schedulinggates.scheduling_gates import SchedulingGates
from builders import make_pod
from fakes import FakeHandle

PV_ADD = ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD)
PV_UPDATE = ClusterEvent(PERSISTENT_VOLUME, ActionType.UPDATE)
PVC_ADD = ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD)
CSI_NODE_UPDATE = ClusterEvent(CSI_NODE, ActionType.UPDATE)
POD_LABEL = ClusterEvent(POD, ActionType.UPDATE_POD_LABEL)


def pod(name: str, priority: int | None = None, **spec: Any) -> Pod:
    if priority is not None:
        spec["priority"] = priority
    return make_pod(name, **spec)


def pop(q: PriorityQueue, name: str | None = None) -> QueuedPodInfo:
    got = q.pop(timeout=1.0)
    assert got is not None, "the queue had nothing to pop"
    if name is not None:
        assert got.pod.name == name
    return got


def fail(
    q: PriorityQueue, qpi: QueuedPodInfo, unschedulable: Sequence[str] = (), pending: Sequence[str] = ()
) -> None:
    """What the failure handler does: record the rejecting plugins and requeue."""
    qpi.unschedulable_plugins = set(unschedulable)
    qpi.pending_plugins = set(pending)
    assert q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle()) is None


def where(q: PriorityQueue) -> dict[str, list[str]]:
    return {
        "active": names(q.pods_in_active_q()),
        "backoff": names(q.pods_in_backoff_q()),
        "unschedulable": names(q.unschedulable_pods()),
    }


# --- Add / Pop -------------------------------------------------------------------------------------


def test_add_pops_by_priority_then_queue_time_and_nominates() -> None:
    clock = FakeClock()
    nominator = Nominator()
    q = new_queue(clock, nominator=nominator)
    q.add(dataclasses.replace(pod("med", 10), nominated_node_name="node1"))
    q.add(pod("high", 100))
    q.add(pod("high2", 100))
    assert [pi.pod.name for pi in nominator.nominated_pods_for_node("node1")] == ["med"]
    popped = [pop(q) for _ in range(3)]
    assert [p.pod.name for p in popped] == ["high", "high2", "med"]
    assert all(p.attempts == 1 and p.initial_attempt_timestamp == clock.now for p in popped)
    assert q.scheduling_cycle() == 3 and names(q.in_flight_pods()) == ["high", "high2", "med"]


def test_a_less_function_without_sort_key_orders_the_queue() -> None:
    def lower_priority_first(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return (a.pod.priority or 0) < (b.pod.priority or 0)

    q = PriorityQueue(lower_priority_first, clock=FakeClock())
    for name, priority in [("high", 100), ("med", 10), ("med2", 10)]:
        q.add(pod(name, priority))
    assert [pop(q).pod.name for _ in range(3)] == ["med", "med2", "high"]


# --- in-flight pods and events (Test_InFlightPods) ---------------------------------------------------

Action = tuple[Any, ...]
IN_FLIGHT_CASES: list[tuple[str, list[str], list[Action], Any, dict[str, Any]]] = [
    (
        "pod and interested events are registered in inFlightPods/inFlightEvents",
        ["p1"],
        [("event", PVC_ADD), ("pop", "p1"), ("event", PV_ADD), ("event", PV_UPDATE)],
        hints((PV_ADD, "foo", queue_hint)),
        {"in_flight": ["p1"], "log": ["p1", PV_ADD]},
    ),
    (
        "pod, registered in inFlightPods, is enqueued back to backoffQ",
        ["p1", "p2"],
        [
            ("event", PVC_ADD),
            ("pop", "p1"),
            ("event", PV_ADD),
            ("pop", "p2"),
            ("event", EVENT_NODE_ADD),
            ("fail", "p1"),
        ],
        hints(*((e, "foo", queue_hint) for e in (PV_ADD, EVENT_NODE_ADD, PVC_ADD))),
        {"backoff": ["p1"], "in_flight": ["p2"], "log": ["p2", EVENT_NODE_ADD]},
    ),
    (
        "all pods registered in inFlightPods are enqueued back",
        ["p1", "p2"],
        [
            ("event", PVC_ADD),
            ("pop", "p1"),
            ("event", PV_ADD),
            ("pop", "p2"),
            ("event", EVENT_NODE_ADD),
            ("fail", "p1"),
            ("event", CSI_NODE_UPDATE),
            ("fail", "p2"),
        ],
        hints(*((e, "foo", queue_hint) for e in (PV_ADD, EVENT_NODE_ADD, PVC_ADD, CSI_NODE_UPDATE))),
        {"backoff": ["p1", "p2"], "in_flight": [], "log": []},
    ),
    (
        "one intermediate pod registered in inFlightPods is enqueued back",
        ["p1", "p2", "p3"],
        [
            ("event", PVC_ADD),
            ("pop", "p1"),
            ("event", PV_ADD),
            ("pop", "p2"),
            ("event", EVENT_NODE_ADD),
            ("pop", "p3"),
            ("event", EVENT_ASSIGNED_POD_ADD),
            ("fail", "p2"),
        ],
        hints(*((e, "foo", queue_hint) for e in (PV_ADD, EVENT_NODE_ADD, EVENT_ASSIGNED_POD_ADD))),
        {
            "backoff": ["p2"],
            "in_flight": ["p1", "p3"],
            "log": ["p1", PV_ADD, EVENT_NODE_ADD, "p3", EVENT_ASSIGNED_POD_ADD],
        },
    ),
    (
        "events before popping the pod are ignored when it is enqueued back",
        ["p1"],
        [
            ("event", EVENT_UNSCHEDULABLE_TIMEOUT),
            ("pop", "p1"),
            ("event", EVENT_ASSIGNED_POD_ADD),
            ("fail", "p1", ["foo"]),
        ],
        hints((EVENT_ASSIGNED_POD_ADD, "foo", skip_hint)),
        {"unschedulable": ["p1"], "in_flight": [], "log": []},
    ),
    (
        "pod is enqueued to backoff if no failed plugin",
        ["p1"],
        [("pop", "p1"), ("event", EVENT_ASSIGNED_POD_ADD), ("fail", "p1")],
        hints((EVENT_ASSIGNED_POD_ADD, "foo", queue_hint)),
        {"backoff": ["p1"]},
    ),
    (
        "pod is unschedulable if no event can make it schedulable",
        ["p1"],
        [("pop", "p1"), ("event", EVENT_NODE_ADD), ("fail", "p1", ["foo"])],
        hints((EVENT_ASSIGNED_POD_ADD, "foo", queue_hint)),
        {"unschedulable": ["p1"]},
    ),
    (
        "pod is unschedulable because the failed plugin's hint returns Skip",
        ["p1"],
        [("pop", "p1"), ("event", EVENT_ASSIGNED_POD_ADD), ("fail", "p1", ["foo"])],
        hints((EVENT_ASSIGNED_POD_ADD, "foo", skip_hint)),
        {"unschedulable": ["p1"]},
    ),
    (
        "pod goes to activeQ because a Pending plugin's hint returns Queue",
        ["p1"],
        [("pop", "p1"), ("event", EVENT_ASSIGNED_POD_ADD), ("fail", "p1", ["foo2", "foo3"], ["foo1"])],
        hints(
            (EVENT_ASSIGNED_POD_ADD, "foo3", skip_hint),
            (EVENT_ASSIGNED_POD_ADD, "foo2", queue_hint),
            (EVENT_ASSIGNED_POD_ADD, "foo1", queue_hint),
        ),
        {"active": ["p1"]},
    ),
    (
        "pod goes to backoffQ because a failed plugin's hint returns Queue",
        ["p1"],
        [("pop", "p1"), ("event", EVENT_ASSIGNED_POD_ADD), ("fail", "p1", ["foo1", "foo2"])],
        hints((EVENT_ASSIGNED_POD_ADD, "foo2", skip_hint), (EVENT_ASSIGNED_POD_ADD, "foo1", queue_hint)),
        {"backoff": ["p1"]},
    ),
    (
        "a Pending plugin's Queue for an event heard while another pod was in flight",
        ["p1", "p2"],
        [
            ("pop", "p1"),
            ("event", EVENT_NODE_ADD),
            ("pop", "p2"),
            ("event", EVENT_ASSIGNED_POD_ADD),
            ("fail", "p1"),
            ("fail", "p2", ["foo2", "foo3"], ["foo1"]),
        ],
        hints(
            (EVENT_ASSIGNED_POD_ADD, "foo3", skip_hint),
            (EVENT_ASSIGNED_POD_ADD, "foo2", queue_hint),
            (EVENT_ASSIGNED_POD_ADD, "foo1", queue_hint),
        ),
        {"active": ["p2"], "backoff": ["p1"], "in_flight": [], "log": []},
    ),
]


@pytest.mark.parametrize(
    ("name", "initial", "actions", "hint_map", "want"), IN_FLIGHT_CASES, ids=[c[0] for c in IN_FLIGHT_CASES]
)
def test_in_flight_pods(
    name: str, initial: list[str], actions: list[Action], hint_map: Any, want: dict[str, Any]
) -> None:
    clock = FakeClock()
    q = new_queue(clock, hint_map)
    for p in initial:
        q.add(pod(p))
        clock.step(1)
    popped: dict[str, QueuedPodInfo] = {}
    for kind, *args in actions:
        if kind == "event":
            q.move_all_to_active_or_backoff_queue(args[0], None, None)
        elif kind == "pop":
            popped[args[0]] = pop(q, args[0])
        else:
            fail(q, popped[args[0]], *args[1:])
    if "in_flight" in want:
        assert names(q.in_flight_pods()) == want["in_flight"]
    if "log" in want:
        log = [e.name if isinstance(e, Pod) else e for e in q.in_flight_events()]
        assert log == want["log"]
    placed = where(q)
    for queue in ("active", "backoff", "unschedulable"):
        if queue in want:
            assert placed[queue] == want[queue], queue


def test_popped_pod_keeps_its_rejectors_until_the_failure_handler_sets_them() -> None:
    q = new_queue(queueing_hints=hints((PV_ADD, "fooPlugin1", queue_hint)))
    q.add(pod("p1"))
    fail(q, pop(q), ["fooPlugin2"], ["fooPlugin1"])
    q.move_all_to_active_or_backoff_queue(PV_ADD, None, None)  # Pending plugin says Queue: active again
    again = pop(q, "p1")
    assert again.unschedulable_plugins == {"fooPlugin2"} and again.pending_plugins == {"fooPlugin1"}
    assert again.attempts == 2


def test_popping_a_pod_already_in_flight_discards_it_and_cleans_up() -> None:
    q = new_queue(queueing_hints=hints((PV_ADD, "foo", queue_hint), (EVENT_NODE_ADD, "foo", queue_hint)))
    q.add(pod("p1"))
    q.add(pod("p2"))
    p1, p2 = pop(q, "p1"), pop(q, "p2")
    q.move_all_to_active_or_backoff_queue(PV_ADD, None, None)
    q.add(pod("p1"))  # the informer re-adds it while it is in flight
    q.add(pod("p3"))
    p3 = pop(q, "p3")  # p1 is discarded on the way
    assert q.pods_in_active_q() == []
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    for qpi in (p1, p2, p3):
        fail(q, qpi)
    assert where(q)["backoff"] == ["p1", "p2", "p3"]
    assert q.in_flight_pods() == [] and q.in_flight_events() == []


def test_add_unschedulable_refuses_a_pod_already_queued_and_still_finishes_it() -> None:
    q = new_queue()
    q.add(pod("p"))
    qpi = pop(q)
    q.add(pod("p"))
    err = q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    assert err == "Pod default/p is already present in the active queue"
    assert q.in_flight_pods() == [] and where(q)["active"] == ["p"]


def test_failed_attempts_back_off_after_a_timeout_event() -> None:
    """TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff."""
    q = new_queue()
    for i in range(10):
        q.add(pod(f"pod{i}", i))
    popped = [pop(q) for _ in range(9)]
    assert [p.pod.name for p in popped] == [f"pod{i}" for i in range(9, 0, -1)]
    # Heard while the nine are in flight: a wildcard event, so each goes to backoff, not aside.
    q.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT, None, None)
    pop(q, "pod0")
    for qpi in popped:
        fail(q, qpi, ["plugin"])
    assert where(q)["backoff"] == sorted(f"pod{i}" for i in range(1, 10))


# --- Pop and the backoff queue ------------------------------------------------------------------


def to_backoff(q: PriorityQueue, p: Pod, rejected: bool) -> None:
    """Pop ``p`` and fail it into the backoff queue: rejected (a hint said Queue) or an error."""
    qpi = pop(q, p.name)
    if rejected:
        q.move_all_to_active_or_backoff_queue(PV_ADD, None, None)
        fail(q, qpi, ["plugin"])
    else:
        fail(q, qpi)


@pytest.mark.parametrize(("pop_from_backoff_q", "want"), [(True, ["med", "high"]), (False, ["med"])])
def test_pop_takes_a_rejected_pod_from_backoff_when_active_is_empty(
    pop_from_backoff_q: bool, want: list[str]
) -> None:
    q = new_queue(queueing_hints=hints((PV_ADD, "plugin", queue_hint)), pop_from_backoff_q=pop_from_backoff_q)
    for p, rejected in [(pod("high", 100), True), (pod("high2", 100), False)]:
        q.add(p)
        to_backoff(q, p, rejected)
    q.add(pod("unsched"))
    fail(q, pop(q, "unsched"), ["plugin"])
    q.add(pod("med", 50))
    assert where(q) == {"active": ["med"], "backoff": ["high", "high2"], "unschedulable": ["unsched"]}
    got = []
    while (qpi := q.pop(timeout=0.05)) is not None:
        got.append(qpi.pod.name)
    assert got == want


def test_backoff_flow() -> None:
    """TestBackOffFlow: 1, 2, 4, 8, 10, 10, 10 seconds, in whole seconds."""
    clock = FakeClock(1000.3)
    q = new_queue(clock)
    q.add(pod("test-pod"))
    for i, want in enumerate([1, 2, 4, 8, 10, 10, 10]):
        timestamp = clock.now
        qpi = pop(q, "test-pod")
        assert qpi.attempts == i + 1
        fail(q, qpi, ["unsched-plugin"])
        q.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT, None, None)
        assert where(q)["backoff"] == ["test-pod"]
        assert qpi.backoff_expiration is not None
        backoff = int(qpi.backoff_expiration - timestamp) + 1
        assert backoff == want
        clock.step(1)
        q.flush_backoff_q_completed()
        assert where(q)["backoff"] == ["test-pod"]
        clock.step(backoff)
        q.flush_backoff_q_completed()
        assert where(q)["active"] == ["test-pod"]


def test_consecutive_errors_back_off_on_their_own_count() -> None:
    clock = FakeClock(1000.0)
    q = new_queue(clock, pop_from_backoff_q=False)
    q.add(pod("p"))
    for _ in range(3):
        qpi = pop(q)
        fail(q, qpi, ["plugin"])
        q.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT, None, None)
        clock.step(10)
        q.flush_backoff_q_completed()
    qpi = pop(q)
    fail(q, qpi)  # an error after three rejections: backoff starts again at 1 s
    assert (qpi.unschedulable_count, qpi.consecutive_errors_count) == (3, 1)
    assert qpi.backoff_expiration == clock.now + 1


# --- Update / Delete ----------------------------------------------------------------------------


def test_update_of_a_pod_not_in_the_queue_adds_it() -> None:
    q = new_queue()
    q.update(pod("p"), pod("p", labels={"a": "b"}))
    assert where(q)["active"] == ["p"]


def test_update_in_active_and_backoff_keeps_the_place_with_the_new_pod() -> None:
    nominator = Nominator()
    q = new_queue(nominator=nominator)
    old = pod("p", 10)
    q.add(old)
    new = dataclasses.replace(pod("p", 10, labels={"v": "2"}), nominated_node_name="node1")
    q.update(old, new)
    assert q.pods_in_active_q()[0].labels == {"v": "2"}
    assert [pi.pod.name for pi in nominator.nominated_pods_for_node("node1")] == ["p"]
    to_backoff(q, new, rejected=False)
    newer = pod("p", 10, labels={"v": "3"})
    q.update(new, newer)
    assert q.pods_in_backoff_q()[0].labels == {"v": "3"}


@pytest.mark.parametrize(
    ("name", "hint", "wait", "want"),
    [
        ("backoff timer not expired: backoffQ", queue_hint, 0, "backoff"),
        ("backoff timer expired: activeQ", queue_hint, 2, "active"),
        ("hint returns QueueSkip: stays unschedulable", skip_hint, 2, "unschedulable"),
    ],
)
def test_update_of_an_unschedulable_pod_asks_the_hints(name: str, hint: Any, wait: float, want: str) -> None:
    clock = FakeClock()
    q = new_queue(clock, hints((POD_LABEL, "foo", hint)))
    old = pod("p")
    q.add(old)
    fail(q, pop(q), ["foo"])
    clock.step(wait)
    q.update(old, pod("p", labels={"foo": "bar"}))
    assert where(q)[want] == ["p"]
    queued = q.get_pod("p", "default")
    assert queued is not None and queued.pod.labels == {"foo": "bar"}


def test_update_of_a_pod_in_flight_only_logs_the_change() -> None:
    q = new_queue(queueing_hints=hints((POD_LABEL, "foo", queue_hint)))
    old = pod("p")
    q.add(old)
    qpi = pop(q)
    q.update(old, pod("p", labels={"foo": "bar"}))
    assert where(q) == {"active": [], "backoff": [], "unschedulable": []}
    fail(q, qpi, ["foo"])  # the logged label change makes it worth a retry
    assert where(q)["backoff"] == ["p"]


def test_delete_removes_the_pod_and_its_nomination() -> None:
    nominator = Nominator()
    q = new_queue(nominator=nominator)
    nominated = dataclasses.replace(pod("n"), nominated_node_name="node1")
    for p in (nominated, pod("u")):
        q.add(p)
    fail(q, pop(q, "n"), ["plugin"])
    q.delete(nominated)
    q.delete(pod("u"))
    assert where(q) == {"active": [], "backoff": [], "unschedulable": []}
    assert nominator.nominated_pods_for_node("node1") == []


# --- Activate -------------------------------------------------------------------------------------


def test_activate() -> None:
    q = new_queue(queueing_hints=hints((PV_ADD, "plugin", queue_hint)))
    backoff, unsched, active, absent = pod("backoff"), pod("unsched"), pod("active"), pod("absent")
    for p in (backoff, unsched):
        q.add(p)
    to_backoff(q, backoff, rejected=False)
    fail(q, pop(q, "unsched"), ["plugin"])
    q.add(active)
    q.activate([backoff, unsched, active, absent])
    assert where(q) == {"active": ["active", "backoff", "unsched"], "backoff": [], "unschedulable": []}


def test_activate_of_a_pod_in_flight_is_heeded_at_its_requeue() -> None:
    q = new_queue(queueing_hints=hints((EVENT_NODE_ADD, "plugin", skip_hint)))
    p = pod("p")
    q.add(p)
    qpi = pop(q)
    q.activate({"default/p": p})
    log = q.in_flight_events()
    assert isinstance(log[0], Pod) and log[0].name == "p"
    fail(q, qpi, ["plugin"])  # without the ForceActivate it would wait for an event
    assert where(q)["backoff"] == ["p"]


# --- PreEnqueue and gated pods ----------------------------------------------------------------


class Allowlist(PreEnqueuePlugin):
    """Admits pods carrying one of the allowed label keys."""

    name: ClassVar[str] = "Allowlist"

    def __init__(self, *allowed: str) -> None:
        super().__init__(None, FakeHandle())
        self.allowed = allowed

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if any(k in pod.labels for k in self.allowed):
            return None
        return unresolvable("pod name not in allowlists")


class Allowlist2(Allowlist):
    name: ClassVar[str] = "Allowlist2"


@pytest.mark.parametrize(
    ("name", "labels", "want_gating"),
    [
        ("pod passes every PreEnqueue plugin", {"foo": "", "bar": ""}, None),
        ("pod fails one PreEnqueue plugin", {"foo": ""}, "Allowlist2"),
        ("pod fails both: the first one gates", {}, "Allowlist"),
    ],
)
def test_pre_enqueue_gates_at_add(name: str, labels: dict[str, str], want_gating: str | None) -> None:
    q = new_queue(pre_enqueue=[Allowlist("foo"), Allowlist2("bar")])
    q.add(pod("p", labels=labels))
    assert bool(q.pods_in_active_q()) is (want_gating is None)
    queued = q.get_pod("p", "default")
    assert (
        queued is not None
        and queued.gating_plugin == want_gating
        and queued.gated is (want_gating is not None)
    )
    if want_gating is not None:
        assert want_gating in queued.unschedulable_plugins


def test_the_gating_plugin_runs_first_again() -> None:
    first, second = Allowlist("foo"), Allowlist2("bar")
    q = new_queue(pre_enqueue=[first, second])
    p = pod("p", labels={"foo": ""})
    q.add(p)  # gated by Allowlist2
    first.allowed = ()
    q.activate([p])  # both reject now; the one already gating is asked first and stays
    queued = q.get_pod("p", "default")
    assert queued is not None and queued.gating_plugin == "Allowlist2"


def test_pre_enqueue_is_skipped_for_pods_leaving_backoff() -> None:
    """With SchedulerPopFromBackoffQ PreEnqueue ran when the pod entered backoff."""
    clock = FakeClock()
    gate = Allowlist("ok")
    q = new_queue(clock, pre_enqueue=[gate])
    p = pod("p", labels={"ok": ""})
    q.add(p)
    to_backoff(q, p, rejected=False)
    gate.allowed = ()
    clock.step(2)
    q.flush_backoff_q_completed()
    assert where(q)["active"] == ["p"]


def test_gated_pod_is_released_by_the_update_that_removes_its_gates() -> None:
    gates = SchedulingGates(None, FakeHandle())
    q = new_queue(
        queueing_hints={PROFILE: build_queueing_hint_map([(gates.name, gates.events_to_register())])},
        pre_enqueue=[gates],
    )
    gated = pod("p", schedulingGates=[{"name": "example.com/wait"}])
    before = sample("scheduler_unschedulable_pods", plugin="SchedulingGates", profile=PROFILE)
    q.add(gated)
    assert q.counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert sample("scheduler_pending_pods", queue="gated") == 1
    assert sample("scheduler_unschedulable_pods", plugin="SchedulingGates", profile=PROFILE) == before + 1
    assert q.pop(timeout=0.01) is None
    # Neither an unrelated event nor the five-minute flush ungates it.
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    q.flush_unschedulable_pods_leftover()
    assert q.counts()["gated"] == 1
    q.update(gated, pod("p", schedulingGates=[{"name": "example.com/wait"}], labels={"a": "b"}))
    assert q.counts()["gated"] == 1
    q.update(gated, pod("p"))
    assert q.counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert sample("scheduler_pending_pods", queue="active") == 1
    qpi = pop(q, "p")
    assert qpi.gating_plugin is None and not qpi.gated
    assert sample("scheduler_unschedulable_pods", plugin="SchedulingGates", profile=PROFILE) == before


@pytest.mark.parametrize(
    ("name", "gating", "gating_events", "want"),
    [
        (
            "hint not called when the gating plugin isn't interested in the event",
            "SchedulingGates",
            [POD_LABEL],
            "unschedulable",
        ),
        ("hint called when the gating plugin is interested in the event", "foo", [EVENT_NODE_ADD], "backoff"),
    ],
)
def test_move_all_only_looks_at_gated_pods_for_their_gating_events(
    name: str, gating: str, gating_events: list[ClusterEvent], want: str
) -> None:
    def must_not_run(pod: Pod, old: object, new: object) -> QueueingHint:
        raise AssertionError("the hint should not run for a gated pod")

    hint = queue_hint if gating == "foo" else must_not_run
    q = new_queue(queueing_hints=hints((EVENT_NODE_ADD, "foo", hint)), pre_enqueue=[Allowlist("foo")])
    p = pod("p", labels={"foo": "bar"})
    q.add(p)
    qpi = pop(q)
    qpi.set_gating_plugin(gating, gating_events)
    fail(q, qpi, [gating])
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    assert where(q)[want] == ["p"]


class WaitsForDeletion(PreEnqueuePlugin):
    """Gates the pods named in ``gates``; for those also in ``released_by``, names the one pod whose
    deletion alone can ungate them (DefaultPreemption's preemptor and its last victim). Records
    every PreEnqueue call."""

    name: ClassVar[str] = "WaitsForDeletion"

    def __init__(self) -> None:
        super().__init__(None, FakeHandle())
        self.gates: set[str] = set()
        self.released_by: dict[str, str | None] = {}
        self.calls: list[str] = []

    def pre_enqueue(self, pod: Pod) -> Status | None:
        self.calls.append(pod.name)
        return unresolvable("waiting") if pod.name in self.gates else None

    def gated_until_deleted(self, pod: Pod) -> str | None:
        return self.released_by.get(pod.name)


POD_DELETE = ClusterEvent(POD, ActionType.DELETE)


def gated_by_deletions() -> tuple[PriorityQueue, WaitsForDeletion, Pod]:
    """A queue with two gated pods: ``held`` waits for ``victim``'s deletion alone, ``other`` for any
    deletion; the gating plugin's hint for pod deletions queues."""
    gate = WaitsForDeletion()
    q = new_queue(queueing_hints=hints((POD_DELETE, gate.name, queue_hint)), pre_enqueue=[gate])
    victim = pod("victim", nodeName="n1")
    gate.gates = {"held", "other"}
    gate.released_by = {"held": victim.uid}
    q.add(pod("held"))
    q.add(pod("other"))
    assert q.counts()["gated"] == 2
    gate.calls.clear()
    return q, gate, victim


def test_a_pod_waiting_for_one_deletion_is_not_looked_at_for_other_deletions() -> None:
    """Other pods' deletions ask PreEnqueue about every other gated pod, not about the one only a
    given pod's deletion can ungate (its answer could not change); that deletion lets it in."""
    q, gate, victim = gated_by_deletions()
    bystander = pod("bystander", nodeName="n1")
    q.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, bystander, None)
    assert gate.calls == ["other"]
    assert q.counts()["gated"] == 2
    gate.gates = {"other"}
    q.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, victim, None)
    assert gate.calls == ["other", "held", "other"]
    assert where(q)["active"] == ["held"]
    assert q.counts()["gated"] == 1


def test_a_pod_waiting_for_one_deletion_is_asked_again_when_that_pod_changes() -> None:
    """When the awaited pod is updated, the gating plugin is asked again; once it no longer names
    that pod (a victim terminating gracefully), every deletion looks at the gated pod again."""
    q, gate, victim = gated_by_deletions()
    q.assigned_pod_updated(victim, pod("victim", nodeName="n1", labels={"a": "b"}))
    bystander = pod("bystander", nodeName="n1")
    q.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, bystander, None)
    assert gate.calls == ["other"]  # still named: still only that deletion
    gate.released_by["held"] = None
    q.assigned_pod_updated(victim, pod("victim", nodeName="n1", labels={"a": "c"}))
    gate.calls.clear()
    q.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, bystander, None)
    assert sorted(gate.calls) == ["held", "other"]


def test_a_pod_waiting_for_one_deletion_leaves_by_activation_and_by_its_own_deletion() -> None:
    q, gate, victim = gated_by_deletions()
    gate.gates = {"other"}
    q.activate([pod("held")])
    assert where(q)["active"] == ["held"]
    q2, _, _ = gated_by_deletions()
    q2.delete(pod("held"))
    assert q2.counts()["gated"] == 1
    q2.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, victim, None)  # no stale entry
    assert q2.counts()["gated"] == 1


# --- MoveAll with queueing hints -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "unschedulable", "pending", "hint", "wait", "want"),
    [
        ("Queue from a Pending plugin queues to activeQ", [], ["foo"], queue_hint, 0, "active"),
        ("Queue queues to backoffQ while backing off", ["foo"], [], queue_hint, 0, "backoff"),
        ("Queue queues to activeQ when not backing off", ["foo"], [], queue_hint, 2, "active"),
        ("Skip keeps the pod in unschedulablePods", ["foo"], [], skip_hint, 0, "unschedulable"),
    ],
)
def test_move_all_with_queueing_hint(
    name: str, unschedulable: list[str], pending: list[str], hint: Any, wait: float, want: str
) -> None:
    clock = FakeClock()
    q = new_queue(clock, hints((EVENT_NODE_ADD, "foo", hint)))
    q.add(pod("p"))
    fail(q, pop(q), unschedulable, pending)
    clock.step(wait)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    assert where(q)[want] == ["p"]


def test_move_all_honours_pre_check_and_other_plugins_hints() -> None:
    q = new_queue(queueing_hints=hints((EVENT_NODE_ADD, "foo", queue_hint)))
    for name, priority in (("low", 1), ("high", 10), ("other", 10)):
        q.add(pod(name, priority))
    for qpi in [pop(q) for _ in range(3)]:
        fail(q, qpi, ["bar"] if qpi.pod.name == "other" else ["foo"])
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None, lambda p: (p.priority or 0) >= 10)
    # low fails the pre-check; other's rejector registered nothing for NodeAdd.
    assert where(q) == {"active": [], "backoff": ["high"], "unschedulable": ["low", "other"]}


def test_a_hint_that_raises_counts_as_queue() -> None:
    def broken(pod: Pod, old: object, new: object) -> QueueingHint:
        raise ValueError("cannot tell")

    q = new_queue(queueing_hints=hints((EVENT_NODE_ADD, "foo", broken)))
    q.add(pod("p"))
    fail(q, pop(q), ["foo"])
    before = sample(
        "scheduler_queueing_hint_execution_duration_seconds_count",
        plugin="foo",
        event="NodeAdd",
        hint="Error",
    )
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    assert where(q)["backoff"] == ["p"]
    after = sample(
        "scheduler_queueing_hint_execution_duration_seconds_count",
        plugin="foo",
        event="NodeAdd",
        hint="Error",
    )
    assert after == before + 1


def test_every_hint_call_of_a_move_is_observed_once() -> None:
    """A move records its hints' durations together at its end: still one observation per call,
    under the hint each call gave (kube observes each call)."""

    def odd_pods_only(pod: Pod, old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE if int(pod.name[1:]) % 2 else QueueingHint.QUEUE_SKIP

    q = new_queue(queueing_hints=hints((EVENT_NODE_ADD, "counted", odd_pods_only)))
    for i in range(7):
        q.add(pod(f"p{i}"))
    for _ in range(7):
        fail(q, pop(q), ["counted"])

    def count(hint: str) -> float:
        labels = {"plugin": "counted", "event": "NodeAdd", "hint": hint}
        return sample("scheduler_queueing_hint_execution_duration_seconds_count", **labels)

    before = count("Queue"), count("QueueSkip")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    assert (count("Queue") - before[0], count("QueueSkip") - before[1]) == (3, 4)
    assert sorted(where(q)["backoff"]) == ["p1", "p3", "p5"]


# --- the unschedulable flush -------------------------------------------------------------------------


def test_flush_unschedulable_pods_leftover_after_five_minutes() -> None:
    clock = FakeClock()
    q = new_queue(clock, hints((EVENT_NODE_ADD, "fakePlugin", queue_hint)))
    high, mid = pod("test-highpod", 100), pod("test-midpod", 50)
    q.add(high)
    high_qpi = pop(q, "test-highpod")
    q.add(mid)
    mid_qpi = pop(q, "test-midpod")
    fail(q, high_qpi, ["fakePlugin"])
    fail(q, mid_qpi, ["fakePlugin"])
    clock.step(299)
    q.flush_unschedulable_pods_leftover()
    assert where(q)["unschedulable"] == ["test-highpod", "test-midpod"]
    clock.step(2)
    q.flush_unschedulable_pods_leftover()
    first, second = pop(q), pop(q)
    assert [first.pod.name, second.pod.name] == ["test-highpod", "test-midpod"]
    assert first.was_flushed_from_unschedulable
    fail(q, first, ["fakePlugin"])
    queued = q.get_pod("test-highpod", "default")
    assert queued is not None and not queued.was_flushed_from_unschedulable


# --- views, metrics, Close, Run ----------------------------------------------------------------------


def test_pending_pods_and_metrics() -> None:
    q = new_queue(queueing_hints=hints((PV_ADD, "plugin", queue_hint)))
    incoming = {
        (queue, event): sample("scheduler_queue_incoming_pods_total", queue=queue, event=event)
        for queue, event in [
            ("active", "UnschedulablePodAdd"),
            ("backoff", "ScheduleAttemptFailure"),
            ("unschedulable", "ScheduleAttemptFailure"),
        ]
    }
    for name in ("a", "b", "u1", "u2"):
        q.add(pod(name))
    to_backoff(q, pod("a"), rejected=True)
    fail(q, pop(q, "b"), ["plugin"])
    fail(q, pop(q, "u1"), ["plugin"])
    q.add(pod("n"))
    pods, summary = q.pending_pods()
    assert summary == "activeQ:2; backoffQ:1; unschedulablePods:2"
    assert [p.name for p in pods][2:] == ["a", "b", "u1"] and sorted(p.name for p in pods[:2]) == ["n", "u2"]
    assert q.counts() == {"active": 2, "backoff": 1, "unschedulable": 2, "gated": 0}
    for queue, want in {"active": 2, "backoff": 1, "unschedulable": 2, "gated": 0}.items():
        assert sample("scheduler_pending_pods", queue=queue) == want
    assert (
        sample("scheduler_queue_incoming_pods_total", queue="active", event="UnschedulablePodAdd")
        == incoming[("active", "UnschedulablePodAdd")] + 5
    )
    assert (
        sample("scheduler_queue_incoming_pods_total", queue="backoff", event="ScheduleAttemptFailure")
        == incoming[("backoff", "ScheduleAttemptFailure")] + 1
    )
    assert (
        sample("scheduler_queue_incoming_pods_total", queue="unschedulable", event="ScheduleAttemptFailure")
        == incoming[("unschedulable", "ScheduleAttemptFailure")] + 2
    )


def test_pop_blocks_until_close() -> None:
    q = new_queue()
    got: list[QueuedPodInfo | None] = []
    waiter = threading.Thread(target=lambda: got.append(q.pop()))
    waiter.start()
    waiter.join(timeout=0.1)
    assert waiter.is_alive()
    q.close()
    waiter.join(timeout=5)
    assert not waiter.is_alive() and got == [None]
    q.add(pod("p"))
    assert q.pop(timeout=1) is None


def test_pop_wakes_up_for_an_added_pod() -> None:
    q = new_queue()
    got: list[QueuedPodInfo | None] = []
    waiter = threading.Thread(target=lambda: got.append(q.pop(timeout=5)))
    waiter.start()
    q.add(pod("p"))
    waiter.join(timeout=5)
    assert [g.pod.name for g in got if g is not None] == ["p"]


def test_run_flushes_finished_backoffs_until_closed() -> None:
    q = PriorityQueue(lambda a, b: False, pop_from_backoff_q=False)
    q.add(pod("p"))
    qpi = q.pop(timeout=1)
    assert qpi is not None
    assert q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle()) is None  # an error: 1 s backoff
    assert q.pop(timeout=0.05) is None
    q.run()
    try:
        again = q.pop(timeout=5)
        assert again is not None and again.attempts == 2
    finally:
        q.close()


# --- the unschedulable pods' index by rejecting plugin -----------------------------------------------


def test_an_event_asks_only_the_pods_its_hints_plugins_rejected_and_moves_the_same_pods() -> None:
    """With many pods set aside by one plugin, an event registered by another plugin runs no hint
    at all (the index skips them), while the pods that plugin rejected are still asked, in the
    order they were set aside, and moved as before."""
    asked: list[str] = []

    def counting(pod: Pod, old: object, new: object) -> QueueingHint:
        asked.append(pod.name)
        return QueueingHint.QUEUE

    q = new_queue(queueing_hints=hints((PV_ADD, "volumes", counting), (EVENT_NODE_ADD, "fit", counting)))
    for i in range(50):
        q.add(pod(f"big{i}"))
        fail(q, pop(q), ["fit"])
    q.add(pod("vol"))
    fail(q, pop(q), ["volumes"])
    q.add(pod("both"))
    fail(q, pop(q), ["fit", "volumes"])
    q.add(pod("errored"))
    fail(q, pop(q))  # no rejector: backoff, so every event concerns it once it is aside
    q.move_all_to_active_or_backoff_queue(PV_ADD, None, None)
    assert asked == ["vol", "both"]
    assert where(q)["backoff"] == ["both", "errored", "vol"]
    asked.clear()
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    assert asked == [f"big{i}" for i in range(50)]
    assert where(q)["unschedulable"] == []
