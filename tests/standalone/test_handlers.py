"""berth run's informer handlers with SchedulerQueueingHints off (kube-scheduler's default at
``--emulated-version=1.33``): a Node/Add or Node/Update moves only the unschedulable pods that
pass ``preCheckForNode`` on that node, and an assigned pod's namespace labels come from the
Namespaces informer for the AssignedPod pre-filter."""

from __future__ import annotations

from typing import Any

from app import metrics
from app.api.objects import Pod, parse_pod
from app.api.storage import (
    StorageClass,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    parse_storage_class,
)
from app.backend.queue.scheduling_queue import PriorityQueue
from app.config import load_config
from app.plugins.helper.storage import shared_storage_lister
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import ClusterObjects, Engine
from app.standalone.handlers import (
    QueueNodeHandler,
    QueuePodHandler,
    StorageHandler,
    TimedHandler,
    namespace_labels_lookup,
)
from builders import make_node, make_pod, pod_dict


def _setup(hints: bool) -> tuple[Engine, PriorityQueue, ClusterObjects]:
    registry = in_tree_registry()
    objects = ClusterObjects()
    engine = Engine(load_config(None, registry), registry, objects=objects, seed=1)
    queue = PriorityQueue.for_profiles(
        engine.profiles,
        nominator=engine.nominator,
        queueing_hints_enabled=hints,
        namespace_labels=namespace_labels_lookup(objects),
    )
    return engine, queue, objects


def _unschedulable(queue: PriorityQueue, pod: Pod, *rejectors: str) -> None:
    """``pod`` tried once and rejected by ``rejectors``, now among the unschedulable pods."""
    queue.add(pod)
    qpi = queue.pop(timeout=1.0)
    assert qpi is not None and qpi.pod.name == pod.name
    qpi.unschedulable_plugins = set(rejectors)
    assert queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle()) is None
    queue.done(qpi.pod.uid)


def _unschedulable_names(queue: PriorityQueue) -> list[str]:
    return sorted(p.name for p in queue.unschedulable_pods())


def _moved_names(queue: PriorityQueue) -> list[str]:
    return sorted(p.name for p in queue.pods_in_active_q() + queue.pods_in_backoff_q())


def test_a_node_add_moves_only_the_pods_that_pass_the_node_pre_check() -> None:
    """Without hints every pod NodeResourcesFit rejected is registered for Node/Add, but kube's
    pre-check moves only those that would fit the new node, tolerate its taints, match its labels."""
    engine, queue, _ = _setup(hints=False)
    _unschedulable(queue, make_pod("fits", [{"cpu": "1"}]), "NodeResourcesFit")
    _unschedulable(queue, make_pod("too-big", [{"cpu": "16"}]), "NodeResourcesFit")
    _unschedulable(queue, make_pod("wrong-zone", nodeSelector={"zone": "b"}), "NodeAffinity")
    _unschedulable(queue, make_pod("untolerating"), "TaintToleration")
    _unschedulable(queue, make_pod("other-node", nodeName="elsewhere"), "NodeName")
    node = make_node(
        "n1",
        {"cpu": "4", "memory": "8Gi", "pods": "10"},
        {"zone": "a"},
        taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
    )
    QueueNodeHandler(engine, queue).on_add(node)
    assert _moved_names(queue) == []  # the only pod that fits does not tolerate the taint
    assert _unschedulable_names(queue) == ["fits", "other-node", "too-big", "untolerating", "wrong-zone"]

    QueueNodeHandler(engine, queue).on_add(make_node("n2", {"cpu": "4", "memory": "8Gi", "pods": "10"}))
    assert _moved_names(queue) == ["fits", "untolerating"]
    assert _unschedulable_names(queue) == ["other-node", "too-big", "wrong-zone"]


def test_a_node_update_checks_the_updated_node_with_its_pods() -> None:
    """A label update moves the pod whose selector now matches; the check counts the pods already
    on the node, so a pod that no longer fits beside them stays."""
    engine, queue, _ = _setup(hints=False)
    old = make_node("n1", {"cpu": "4", "memory": "8Gi", "pods": "10"})
    handler = QueueNodeHandler(engine, queue)
    handler.on_add(old)
    engine.cache.add_pod(make_pod("running", [{"cpu": "3"}], nodeName="n1"))
    _unschedulable(queue, make_pod("zone-a", nodeSelector={"zone": "a"}), "NodeAffinity")
    _unschedulable(queue, make_pod("zone-a-big", [{"cpu": "2"}], nodeSelector={"zone": "a"}), "NodeAffinity")
    handler.on_update(old, make_node("n1", {"cpu": "4", "memory": "8Gi", "pods": "10"}, {"zone": "a"}))
    assert _moved_names(queue) == ["zone-a"]
    assert _unschedulable_names(queue) == ["zone-a-big"]


def test_with_hints_the_node_events_have_no_pre_check() -> None:
    """With SchedulerQueueingHints on the plugins' hints decide: NodeAffinity's hint moves the pod
    whose selector the new node matches even though it could not fit (no pre-check); the
    NodeResourcesFit hint leaves the pod that is too big."""
    engine, queue, _ = _setup(hints=True)
    _unschedulable(queue, make_pod("matches", [{"cpu": "8"}], nodeSelector={"zone": "a"}), "NodeAffinity")
    _unschedulable(queue, make_pod("too-big", [{"cpu": "16"}]), "NodeResourcesFit")
    QueueNodeHandler(engine, queue).on_add(
        make_node("n1", {"cpu": "4", "memory": "8Gi", "pods": "10"}, {"zone": "a"})
    )
    assert _moved_names(queue) == ["matches"]
    assert _unschedulable_names(queue) == ["too-big"]


def _affinity_by_namespace_selector() -> dict[str, Any]:
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "namespaceSelector": {"matchLabels": {"team": "a"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def test_an_assigned_pod_of_a_selected_namespace_moves_the_pod_whose_affinity_it_satisfies() -> None:
    """AssignedPodAdded without hints: the bound pod's namespace labels come from the Namespace
    objects the informer keeps, so a required term selecting namespaces by label matches it."""
    engine, queue, objects = _setup(hints=False)
    _unschedulable(queue, make_pod("affine", affinity=_affinity_by_namespace_selector()), "InterPodAffinity")
    handler = QueuePodHandler(engine, queue)
    handler.on_add(parse_pod(pod_dict("web-b", namespace="team-b", labels={"app": "web"}, nodeName="n1")))
    assert _unschedulable_names(queue) == ["affine"]

    objects.upsert(
        "Namespace", "team-a", {"kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}}
    )
    handler.on_add(parse_pod(pod_dict("web-a", namespace="team-a", labels={"app": "web"}, nodeName="n1")))
    assert _moved_names(queue) == ["affine"]


def _storage_class(name: str, mode: str | None) -> StorageClass:
    raw: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "example.com/disk",
    }
    if mode is not None:
        raw["volumeBindingMode"] = mode
    return parse_storage_class(raw)


def test_without_hints_only_a_late_binding_storage_class_moves_pods() -> None:
    """kube-scheduler's hints-off StorageClass/Add handler: a class without WaitForFirstConsumer
    (Immediate, or no mode) is stored but moves no pod; a WaitForFirstConsumer one moves the pods
    VolumeBinding rejected."""
    _, queue, objects = _setup(hints=False)
    _unschedulable(queue, make_pod("claims"), "VolumeBinding")
    handler = StorageHandler(objects, queue, "StorageClass")
    handler.on_add(_storage_class("immediate", "Immediate"))
    handler.on_add(_storage_class("unset", None))
    assert _unschedulable_names(queue) == ["claims"]
    assert objects.get("StorageClass", "unset") is not None
    handler.on_add(_storage_class("late", "WaitForFirstConsumer"))
    assert _moved_names(queue) == ["claims"]


def test_with_hints_any_storage_class_add_is_an_event() -> None:
    """With QueueingHints the handler has no such filter: VolumeBinding's hint decides."""
    _, queue, objects = _setup(hints=True)
    _unschedulable(queue, make_pod("claims"), "VolumeBinding")
    StorageHandler(objects, queue, "StorageClass").on_add(_storage_class("immediate", "Immediate"))
    assert _moved_names(queue) == ["claims"]


def test_storage_objects_are_parsed_once_by_the_informer() -> None:
    """The engine's objects keep the informer's parsed PersistentVolume and claim, and the storage
    plugins' lister serves those very objects (no second parse); a delete forgets them."""
    _, queue, objects = _setup(hints=True)
    pv = parse_persistent_volume(
        {"metadata": {"name": "pv-1"}, "spec": {"capacity": {"storage": "1Gi"}, "csi": {"driver": "d"}}}
    )
    claim = parse_persistent_volume_claim(
        {"metadata": {"name": "data", "namespace": "ns"}, "spec": {"volumeName": "pv-1"}}
    )
    StorageHandler(objects, queue, "PersistentVolume").on_add(pv)
    StorageHandler(objects, queue, "PersistentVolumeClaim").on_add(claim)
    lister = shared_storage_lister(objects)
    assert lister.pvs()["pv-1"] is pv
    assert lister.pvc("ns", "data") is claim
    bound = parse_persistent_volume_claim(
        {
            "metadata": {"name": "data", "namespace": "ns", "resourceVersion": "2"},
            "spec": {"volumeName": "pv-1"},
        }
    )
    StorageHandler(objects, queue, "PersistentVolumeClaim").on_update(claim, bound)
    assert lister.pvc("ns", "data") is bound
    StorageHandler(objects, queue, "PersistentVolumeClaim").on_delete(bound)
    StorageHandler(objects, queue, "PersistentVolume").on_delete(pv)
    assert lister.pvc("ns", "data") is None and lister.pvs() == {}


def test_each_handled_event_is_timed_under_kubes_event_label() -> None:
    """``scheduler_event_handling_duration_seconds{event}`` counts every informer event, labelled as
    kube-scheduler's handlers label them, and shows in the exposition."""
    engine, queue, _ = _setup(hints=True)
    nodes, pods = TimedHandler(QueueNodeHandler(engine, queue)), TimedHandler(QueuePodHandler(engine, queue))
    labels = ("NodeAdd", "UnscheduledPodAdd", "UnscheduledPodUpdate", "AssignedPodAdd")
    before = {label: metrics.EVENT_HANDLING_DURATION.sample_count((label,)) for label in labels}
    nodes.on_add(make_node("n1", {"cpu": "4", "memory": "8Gi", "pods": "10"}))
    pending = make_pod("p", [{"cpu": "1"}])
    relabelled = pod_dict("p", requests=[{"cpu": "1"}])
    relabelled["metadata"].update(labels={"tier": "web"}, resourceVersion="2")
    pods.on_add(pending)
    pods.on_update(pending, parse_pod(relabelled))
    pods.on_add(make_pod("bound", [{"cpu": "1"}], nodeName="n1"))
    after = {label: metrics.EVENT_HANDLING_DURATION.sample_count((label,)) for label in labels}
    assert {label: after[label] - before[label] for label in labels} == dict.fromkeys(labels, 1)
    text = metrics.render().decode()
    assert 'scheduler_event_handling_duration_seconds_count{event="AssignedPodAdd"}' in text
