"""The scheduling queue with SchedulerQueueingHints off (kube-scheduler's default at
``--emulated-version=1.33``), ported from the ``isSchedulingQueueHintEnabled == false`` cases of
kube-scheduler v1.36.3 backend/queue/scheduling_queue_test.go: AddUnschedulableIfNotPresent with
``moveRequestCycle``, in-flight pods not tracked, Update's ``isPodUpdated``, Activate of a pod in
flight, and AssignedPodAdded/AssignedPodUpdated's cross-topology pre-filter."""

from __future__ import annotations

from typing import Any

from backend.queue_helpers import FakeClock, hints, names, new_queue, sample, skip_hint

from app.api.objects import Pod, parse_pod
from app.backend.queue.scheduling_queue import PriorityQueue, QueuedPodInfo
from app.framework.events import (
    ASSIGNED_POD,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_NODE_ADD,
    NODE,
    ActionType,
    ClusterEvent,
)
from builders import make_pod, pod_dict

NODE_LABEL = ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL)
POD_LABEL = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE_POD_LABEL)


def queue(clock: FakeClock | None = None, **options: Any) -> PriorityQueue:
    """A hints-off queue where NodeAffinity, InterPodAffinity and PodTopologySpread registered
    their events with hints that would all say QueueSkip: with the gate off they are never asked."""
    return new_queue(
        clock,
        queueing_hints=hints(
            (EVENT_NODE_ADD, "NodeAffinity", skip_hint),
            (NODE_LABEL, "NodeAffinity", skip_hint),
            (EVENT_ASSIGNED_POD_ADD, "InterPodAffinity", skip_hint),
            (POD_LABEL, "InterPodAffinity", skip_hint),
            (EVENT_ASSIGNED_POD_ADD, "PodTopologySpread", skip_hint),
        ),
        queueing_hints_enabled=False,
        **options,
    )


def pop(q: PriorityQueue, name: str) -> tuple[QueuedPodInfo, int]:
    """Pop ``name``; with the scheduling cycle it started, as ScheduleOne keeps it."""
    got = q.pop(timeout=1.0)
    assert got is not None and got.pod.name == name
    return got, q.scheduling_cycle()


def fail(q: PriorityQueue, qpi: QueuedPodInfo, cycle: int, *rejectors: str) -> None:
    qpi.unschedulable_plugins = set(rejectors)
    assert q.add_unschedulable_if_not_present(qpi, cycle) is None


def where(q: PriorityQueue) -> dict[str, list[str]]:
    return {
        "active": names(q.pods_in_active_q()),
        "backoff": names(q.pods_in_backoff_q()),
        "unschedulable": names(q.unschedulable_pods()),
    }


def test_popped_pods_are_not_tracked_in_flight() -> None:
    """Test_InFlightPods (hints off): kube's InFlightPods returns nil and no event is logged."""
    q = queue()
    q.add(make_pod("p"))
    pop(q, "p")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    assert q.in_flight_pods() == []
    assert q.in_flight_events() == []
    assert q.scheduling_cycle() == 1


def test_a_rejected_pod_waits_unless_a_move_request_came_during_its_cycle() -> None:
    """TestPriorityQueue_AddUnschedulableIfNotPresent (hints off): a pod rejected with no event
    since its cycle began goes to the unschedulable pods; one whose cycle saw an event of
    interest, even one no hint would have wanted, goes to backoff."""
    q = queue()
    q.add(make_pod("quiet"))
    q.add(make_pod("heard"))
    quiet, quiet_cycle = pop(q, "quiet")
    fail(q, quiet, quiet_cycle, "NodeAffinity")
    assert where(q)["unschedulable"] == ["quiet"]

    heard, heard_cycle = pop(q, "heard")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)  # moves "quiet" too
    fail(q, heard, heard_cycle, "NodeAffinity")
    assert where(q) == {"active": [], "backoff": ["heard", "quiet"], "unschedulable": []}


def test_a_bound_pod_added_while_no_pod_waits_is_still_a_move_request() -> None:
    """AssignedPodAdded with no unschedulable pod (every bound pod of the informers' initial list
    passes so): nothing to move, but the pod being scheduled meanwhile, once rejected, goes to
    backoff as after any event of interest."""
    q = queue()
    q.add(make_pod("p"))
    qpi, cycle = pop(q, "p")
    q.assigned_pod_added(make_pod("web", nodeName="node1"))
    assert where(q) == {"active": [], "backoff": [], "unschedulable": []}
    fail(q, qpi, cycle, "NodeAffinity")
    assert where(q)["backoff"] == ["p"]


def test_an_event_nobody_registered_is_not_a_move_request() -> None:
    q = queue()
    q.add(make_pod("p"))
    qpi, cycle = pop(q, "p")
    q.move_all_to_active_or_backoff_queue(ClusterEvent("PersistentVolume", ActionType.ADD), None, None)
    fail(q, qpi, cycle, "NodeAffinity")
    assert where(q)["unschedulable"] == ["p"]


def test_an_error_goes_to_backoff() -> None:
    q = queue()
    q.add(make_pod("p"))
    qpi, cycle = pop(q, "p")
    fail(q, qpi, cycle)
    assert where(q)["backoff"] == ["p"]


def test_every_registered_event_of_a_rejector_moves_the_pod_without_asking_its_hint() -> None:
    """TestPriorityQueue_MoveAllToActiveOrBackoffQueue (hints off): the hints would say
    QueueSkip, the default hint says Queue; a pending rejector's event moves it to active."""
    clock = FakeClock()
    q = queue(clock)
    for name in ("unsched", "pending"):
        q.add(make_pod(name))
    unsched, c1 = pop(q, "unsched")
    fail(q, unsched, c1, "NodeAffinity")
    pending, c2 = pop(q, "pending")
    pending.pending_plugins = {"NodeAffinity"}
    assert q.add_unschedulable_if_not_present(pending, c2) is None
    assert where(q)["unschedulable"] == ["pending", "unsched"]
    q.move_all_to_active_or_backoff_queue(NODE_LABEL, None, None)
    assert where(q) == {"active": ["pending"], "backoff": ["unsched"], "unschedulable": []}


def test_the_default_hints_are_not_timed_in_the_hint_metric() -> None:
    """kube-scheduler registers scheduler_queueing_hint_execution_duration_seconds only with
    SchedulerQueueingHints on, so its /metrics has no such series when the default hints run."""
    q = queue()
    q.add(make_pod("p"))
    qpi, cycle = pop(q, "p")
    fail(q, qpi, cycle, "NodeAffinity")
    labels = {"plugin": "NodeAffinity", "event": NODE_LABEL.label, "hint": "Queue"}
    before = sample("scheduler_queueing_hint_execution_duration_seconds_count", **labels)
    q.move_all_to_active_or_backoff_queue(NODE_LABEL, None, None)
    assert where(q)["backoff"] == ["p"]
    assert sample("scheduler_queueing_hint_execution_duration_seconds_count", **labels) == before


def test_activating_a_pod_in_flight_sends_it_to_backoff_at_its_requeue() -> None:
    q = queue()
    q.add(make_pod("p"))
    qpi, cycle = pop(q, "p")
    q.activate([qpi.pod])
    fail(q, qpi, cycle, "NodeAffinity")
    assert where(q)["backoff"] == ["p"]


def test_an_update_requeues_an_unschedulable_pod_only_when_it_really_changed() -> None:
    """TestPriorityQueue_Update / isPodUpdated: a status or resourceVersion change leaves the pod
    where it is; a label change sends it to active (its backoff is over) or backoff."""
    clock = FakeClock()
    q = queue(clock)
    raw = pod_dict("p")
    old = parse_pod(raw)
    q.add(old)
    qpi, cycle = pop(q, "p")
    fail(q, qpi, cycle, "NodeAffinity")

    status_only = parse_pod(
        {**raw, "metadata": {**raw["metadata"], "resourceVersion": "2"}, "status": {"phase": "Pending"}}
    )
    q.update(old, status_only)
    assert where(q)["unschedulable"] == ["p"]

    relabelled = parse_pod({**raw, "metadata": {**raw["metadata"], "labels": {"a": "b"}}})
    q.update(status_only, relabelled)
    assert where(q)["backoff"] == ["p"]  # still backing off (1 s after its failure)


def test_an_update_after_the_backoff_sends_the_pod_to_active() -> None:
    clock = FakeClock()
    q = queue(clock)
    raw = pod_dict("p")
    old = parse_pod(raw)
    q.add(old)
    qpi, cycle = pop(q, "p")
    fail(q, qpi, cycle, "NodeAffinity")
    clock.step(20)
    q.update(old, parse_pod({**raw, "metadata": {**raw["metadata"], "labels": {"a": "b"}}}))
    assert where(q)["active"] == ["p"]


def affinity_to(labels: dict[str, str], **term: Any) -> dict[str, Any]:
    selector = {"matchLabels": labels}
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname", **term}
            ]
        }
    }


def unschedulable(q: PriorityQueue, pod: Pod, *rejectors: str) -> None:
    q.add(pod)
    qpi, cycle = pop(q, pod.name)
    fail(q, qpi, cycle, *rejectors)


def test_assigned_pod_added_moves_only_the_pods_it_may_help_across_topology() -> None:
    """TestPriorityQueue_AssignedPodAdded_ (hints off): a pod with a required affinity term the
    new pod matches, and a PodTopologySpread-rejected pod of its namespace, move; the others stay."""
    q = queue()
    unschedulable(q, make_pod("affine", affinity=affinity_to({"app": "web"})), "InterPodAffinity")
    unschedulable(q, make_pod("other-affine", affinity=affinity_to({"app": "db"})), "InterPodAffinity")
    unschedulable(q, make_pod("spread"), "PodTopologySpread")
    unschedulable(q, parse_pod(pod_dict("spread-elsewhere", namespace="other")), "PodTopologySpread")
    unschedulable(q, make_pod("node-affinity"), "NodeAffinity")
    bound = make_pod("web", labels={"app": "web"}, nodeName="node1")
    q.assigned_pod_added(bound)
    assert where(q) == {
        "active": [],
        "backoff": ["affine", "spread"],
        "unschedulable": ["node-affinity", "other-affine", "spread-elsewhere"],
    }


def _namespace_terms_queue(namespaces: dict[str, dict[str, str]]) -> PriorityQueue:
    """A hints-off queue whose namespace lister knows ``namespaces`` (name to labels), with three
    InterPodAffinity-rejected pods of ``default``: a term for their own namespace only, one listing
    ``other``, and one selecting namespaces labelled team=a."""
    q = queue(namespace_labels=namespaces.get)
    unschedulable(q, make_pod("own-ns-only", affinity=affinity_to({"app": "web"})), "InterPodAffinity")
    unschedulable(
        q, make_pod("listed", affinity=affinity_to({"app": "web"}, namespaces=["other"])), "InterPodAffinity"
    )
    unschedulable(
        q,
        make_pod(
            "by-selector",
            affinity=affinity_to({"app": "web"}, namespaceSelector={"matchLabels": {"team": "a"}}),
        ),
        "InterPodAffinity",
    )
    return q


def test_a_term_of_another_namespace_or_a_namespace_selector() -> None:
    """getUnschedulablePodsWithCrossTopologyTerm reads the bound pod's namespace labels from the
    namespace lister: a namespaceSelector term matches a pod of a namespace with those labels."""
    q = _namespace_terms_queue({"other": {"team": "a", "kubernetes.io/metadata.name": "other"}})
    bound = parse_pod(pod_dict("web", namespace="other", labels={"app": "web"}, nodeName="node1"))
    q.assigned_pod_added(bound)
    assert where(q)["backoff"] == ["by-selector", "listed"]
    assert where(q)["unschedulable"] == ["own-ns-only"]


def test_a_namespace_selector_matches_nothing_in_a_namespace_the_lister_lacks_or_labels_otherwise() -> None:
    """A lister miss is kube's nil label set (the selector matches nothing); other labels do not
    match either. The term listing the namespace by name still matches."""
    for namespaces in ({}, {"other": {"team": "b"}}):
        q = _namespace_terms_queue(namespaces)
        bound = parse_pod(pod_dict("web", namespace="other", labels={"app": "web"}, nodeName="node1"))
        q.assigned_pod_added(bound)
        assert where(q)["backoff"] == ["listed"]
        assert where(q)["unschedulable"] == ["by-selector", "own-ns-only"]


def test_assigned_pod_updated_reads_the_namespace_labels_too() -> None:
    """AssignedPodUpdated pre-filters with the same lister."""
    q = _namespace_terms_queue({"other": {"team": "a"}})
    old = parse_pod(pod_dict("web", namespace="other", labels={"app": "x"}, nodeName="node1"))
    new = parse_pod(pod_dict("web", namespace="other", labels={"app": "web"}, nodeName="node1"))
    q.assigned_pod_updated(old, new)
    assert where(q)["backoff"] == ["by-selector", "listed"]


def test_assigned_pod_updated_pre_filters_except_for_a_scale_down() -> None:
    q = queue()
    unschedulable(q, make_pod("affine", affinity=affinity_to({"app": "web"})), "InterPodAffinity")
    unschedulable(q, make_pod("node-affinity"), "NodeAffinity")
    old = make_pod("web", labels={"app": "x"}, nodeName="node1")
    new = make_pod("web", labels={"app": "web"}, nodeName="node1")
    q.assigned_pod_updated(old, new)
    assert where(q) == {"active": [], "backoff": ["affine"], "unschedulable": ["node-affinity"]}


def test_plugins_register_kube_s_hints_off_events() -> None:
    """Each plugin's ``EventsToRegister`` with ``EnableSchedulingQueueHint`` false: node taint and
    label updates for the plugins registering Node/Add, no pod event for the taint plugins, none at
    all for SchedulingGates, no toleration update for PodTopologySpread."""
    from app import featuregates
    from app.framework.events import POD
    from app.plugins.nodeaffinity.node_affinity import NodeAffinity
    from app.plugins.nodename.node_name import NodeName
    from app.plugins.podtopologyspread.plugin import PodTopologySpread
    from app.plugins.schedulinggates.scheduling_gates import SchedulingGates
    from app.plugins.tainttoleration.taint_toleration import TaintToleration
    from fakes import FakeHandle

    def registered(plugin_type: Any) -> dict[str, ActionType]:
        plugin = plugin_type(None, FakeHandle())
        return {e.event.resource: e.event.action_type for e in plugin.events_to_register()}

    all_node = ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
    on = {
        t: registered(t)
        for t in (NodeAffinity, NodeName, TaintToleration, SchedulingGates, PodTopologySpread)
    }
    try:
        featuregates.DEFAULT.set_emulation(33)
        featuregates.DEFAULT.set("SchedulerQueueingHints=false")
        assert registered(NodeAffinity) == {NODE: all_node}
        assert registered(NodeName) == {NODE: all_node}
        assert registered(TaintToleration) == {NODE: all_node}
        assert registered(SchedulingGates) == {}
        assert not registered(PodTopologySpread)[POD] & ActionType.UPDATE_POD_TOLERATION
    finally:
        featuregates.DEFAULT.reset()
    assert on[NodeAffinity] == {NODE: ActionType.ADD | ActionType.UPDATE_NODE_LABEL}
    assert on[NodeName] == {NODE: ActionType.ADD}
    assert POD in on[TaintToleration] and POD in on[SchedulingGates]
    assert on[PodTopologySpread][POD] & ActionType.UPDATE_POD_TOLERATION
