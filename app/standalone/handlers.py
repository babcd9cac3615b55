"""Informer event handlers of ``berth run``: the cache and the scheduling queue (``eventhandlers.go``).

- Nodes: the cache, then the queue hears the event (an add; an update with the scheduling
  properties that changed; a delete) so that only pods a QueueingHint says may now fit move
  (with SchedulerQueueingHints off: the pods passing ``preCheckForNode`` on the node).
- Assigned pods (``spec.nodeName`` set): the cache, then an AssignedPod event for the queue.
- Unassigned pods of our profiles: the queue (add, update, delete). An update that assigns the
  pod (a bind, by us or anyone) removes it from the queue and adds it to the cache.
- Pods of other schedulers are cached once assigned (they use capacity) and never scheduled.
- Other kinds (Services, ReplicaSets, PodDisruptionBudgets, ...) go to the engine's objects.
- DRA kinds (resource.k8s.io/v1) go there too, parsed by its DRA store, whose changes move pods.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from app import featuregates, logs, metrics
from app.api.objects import Node, Pod
from app.api.storage import BINDING_WAIT_FOR_FIRST_CONSUMER, STORAGE_KINDS, StorageClass
from app.backend.queue.events import (
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    EVENT_NODE_DELETE,
    node_scheduling_properties_change,
)
from app.backend.queue.node_pre_check import pre_check_for_node
from app.backend.queue.scheduling_queue import NamespaceLabelsLookup, PreEnqueueCheck, PriorityQueue
from app.framework.events import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    DEVICE_CLASS,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
)
from app.framework.types import NodeInfo
from app.kube.client import KubeClient
from app.kube.dra import DRA_RESOURCES
from app.kube.handlers import OBJECT_RESOURCES, ObjectHandler, decode_node, decode_pod, decode_whole_pod
from app.kube.informer import (
    NAMESPACES,
    NODES,
    PODS,
    STORAGE_RESOURCES,
    InformerSet,
    ResourceType,
)
from app.scheduler.scheduler import ClusterObjects, Engine

__all__ = [
    "QueueNodeHandler",
    "QueuePodHandler",
    "StorageHandler",
    "dra_queue_listener",
    "namespace_labels_lookup",
    "scheduler_informers",
]


class QueueNodeHandler:
    """Nodes into the cache, and their events into the queue."""

    def __init__(self, engine: Engine, queue: PriorityQueue) -> None:
        self.cache = engine.cache
        self.queue = queue

    def on_add(self, node: Node) -> None:
        """addNodeToCache."""
        logs.info("Add event for node", 3, node=node.name)
        info = self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, node, self._pre_check(info))

    def on_update(self, old: Node, new: Node) -> None:
        """updateNodeInCache: requeue only for the properties that changed."""
        logs.info("Update event for node", 4, node=new.name)
        info = self.cache.update_node(old, new)
        events = node_scheduling_properties_change(new, old)
        if events:
            pre_check = self._pre_check(info)
            for event in events:
                self.queue.move_all_to_active_or_backoff_queue(event, old, new, pre_check)

    def _pre_check(self, info: NodeInfo) -> PreEnqueueCheck | None:
        """``preCheckForNode`` on a copy of the node's cache entry, as kube-scheduler checks the
        clone its cache returns (the scheduling thread may assume a pod onto the entry meanwhile).
        None with QueueingHints, and then no copy is made."""
        if self.queue.queueing_hints_enabled:
            return None
        return pre_check_for_node(info.snapshot(), False)

    def on_delete(self, node: Node) -> None:
        """deleteNodeFromCache."""
        self.queue.move_all_to_active_or_backoff_queue(EVENT_NODE_DELETE, node, None)
        logs.info("Delete event for node", 3, node=node.name)
        self.cache.remove_node(node)


def _terminated(pod: Pod) -> bool:
    return pod.phase in ("Succeeded", "Failed")


class QueuePodHandler:
    """Assigned pods into the cache, pending pods of our profiles into the queue."""

    def __init__(
        self, engine: Engine, queue: PriorityQueue, on_deleted: Callable[[Pod], None] | None = None
    ) -> None:
        self.engine = engine
        self.cache = engine.cache
        self.queue = queue
        self.on_deleted = on_deleted

    def _ours(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.engine.profiles

    def on_add(self, pod: Pod) -> None:
        """addPod."""
        if pod.node_name:
            self._add_assigned(pod)
        elif self._ours(pod):
            logs.info("Add event for unscheduled pod", 3, pod=pod.key)
            self.queue.add(pod)

    def _add_assigned(self, pod: Pod) -> None:
        if _terminated(pod):
            return
        logs.info("Add event for scheduled pod", 3, pod=pod.key, node=pod.node_name)
        self.cache.add_pod(pod)
        self.queue.assigned_pod_added(pod)

    def on_update(self, old: Pod, new: Pod) -> None:
        """updatePod."""
        if old.node_name:
            if _terminated(new):
                self._delete_assigned(old)
                return
            logs.info("Update event for scheduled pod", 4, pod=new.key)
            if old.uid != new.uid:
                self.cache.remove_pod(old)
                self.cache.add_pod(new)
            else:
                self.cache.update_pod(old, new)
            self.queue.assigned_pod_updated(old, new)
        elif new.node_name:
            # A bind (ours confirmed, or someone else's): the cache takes over from the queue.
            self._add_assigned(new)
            if self._ours(old):
                self.queue.delete(old)
        elif self._ours(old):
            self._update_unscheduled(old, new)

    def _update_unscheduled(self, old: Pod, new: Pod) -> None:
        if old.raw.get("metadata", {}).get("resourceVersion") == new.raw.get("metadata", {}).get(
            "resourceVersion"
        ):
            return  # a relist's identical copy (kubernetes#96071)
        if self.cache.is_assumed(new):
            if new.deletion_timestamp and not old.deletion_timestamp:
                self._assumed_pod_deleted(new)
            return
        logs.info("Update event for unscheduled pod", 4, pod=new.key)
        self.queue.update(old, new)
        if old.nominated_node_name and old.nominated_node_name != new.nominated_node_name:
            # The pod no longer holds its nominated node's room for lower or equal priority pods.
            priority = old.priority or 0
            self.queue.move_all_to_active_or_backoff_queue(
                EVENT_ASSIGNED_POD_DELETE, old, None, lambda p: (p.priority or 0) <= priority
            )

    def on_delete(self, pod: Pod) -> None:
        """deletePod."""
        if pod.node_name:
            self._delete_assigned(pod)
        elif self._ours(pod):
            logs.info("Delete event for unscheduled pod", 3, pod=pod.key)
            self.queue.delete(pod)
            if self.cache.is_assumed(pod):
                self._assumed_pod_deleted(pod)
            elif pod.nominated_node_name:
                priority = pod.priority or 0
                self.queue.move_all_to_active_or_backoff_queue(
                    EVENT_ASSIGNED_POD_DELETE, pod, None, lambda p: (p.priority or 0) <= priority
                )
        if self.on_deleted is not None:
            self.on_deleted(pod)

    def _delete_assigned(self, pod: Pod) -> None:
        logs.info("Delete event for scheduled pod", 3, pod=pod.key, node=pod.node_name)
        self.cache.remove_pod(pod)
        self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, pod, None)

    def _assumed_pod_deleted(self, pod: Pod) -> None:
        """handleAssumedPodDeletion: free the assumed resources now, not when binding fails."""
        assumed = self.cache.get_pod(pod.uid)
        if assumed is None:
            return
        self.cache.forget_pod(assumed)
        self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, assumed, None)


class TimedHandler:
    """A handler whose calls feed ``scheduler_event_handling_duration_seconds{event}``, labelled as
    kube's event handlers label them (``NodeAdd``, ``AssignedPodUpdate``, ``UnscheduledPodDelete``)."""

    def __init__(self, inner: QueueNodeHandler | QueuePodHandler) -> None:
        self.inner = inner

    @staticmethod
    def _kind(obj: Node | Pod) -> str:
        if isinstance(obj, Node):
            return "Node"
        return "AssignedPod" if obj.node_name else "UnscheduledPod"

    def on_add(self, obj: Any) -> None:
        """Time the inner ``on_add``."""
        start = time.perf_counter()
        self.inner.on_add(obj)
        metrics.observe_event_handling(self._kind(obj) + "Add", time.perf_counter() - start)

    def on_update(self, old: Any, new: Any) -> None:
        """Time the inner ``on_update``."""
        start = time.perf_counter()
        self.inner.on_update(old, new)
        metrics.observe_event_handling(self._kind(old) + "Update", time.perf_counter() - start)

    def on_delete(self, obj: Any) -> None:
        """Time the inner ``on_delete``."""
        start = time.perf_counter()
        self.inner.on_delete(obj)
        metrics.observe_event_handling(self._kind(obj) + "Delete", time.perf_counter() - start)


# --- storage (the volume plugins) ---------------------------------------------------------------------

#: The event resource of each storage kind (``fwk.EventResource``).
_STORAGE_EVENT_RESOURCES = {
    "PersistentVolume": PERSISTENT_VOLUME,
    "PersistentVolumeClaim": PERSISTENT_VOLUME_CLAIM,
    "StorageClass": STORAGE_CLASS,
    "CSINode": CSI_NODE,
    "CSIDriver": CSI_DRIVER,
    "CSIStorageCapacity": CSI_STORAGE_CAPACITY,
    "VolumeAttachment": VOLUME_ATTACHMENT,
}


class StorageHandler:
    """A storage kind into the engine's objects, and its events into the queue (with parsed objects,
    which the volume plugins' QueueingHints read).

    The engine's objects keep the parsed object itself, not its dict: the storage lister
    (``app.plugins.helper.storage``) takes it as it is, so each object is parsed once, by the
    informer, and no decoded document stays behind it (a PersistentVolume or claim keeps its own as
    compact JSON for the binder's writes)."""

    def __init__(self, objects: ClusterObjects, queue: PriorityQueue, kind: str) -> None:
        self.objects = objects
        self.queue = queue
        self.kind = kind
        self.resource = _STORAGE_EVENT_RESOURCES[kind]

    def on_add(self, obj: Any) -> None:
        """Store it; hint the pods rejected by plugins registered for this kind's Add. Without
        QueueingHints a StorageClass/Add moves pods only for a WaitForFirstConsumer class, as
        kube-scheduler's handler: only a late-binding class can make a pod with unbound immediate
        claims pass VolumeBinding."""
        self.objects.upsert(self.kind, _storage_key(obj), obj)
        if (
            isinstance(obj, StorageClass)
            and not self.queue.queueing_hints_enabled
            and obj.volume_binding_mode != BINDING_WAIT_FOR_FIRST_CONSUMER
        ):
            return
        self.queue.move_all_to_active_or_backoff_queue(ClusterEvent(self.resource, ActionType.ADD), None, obj)

    def on_update(self, old: Any, new: Any) -> None:
        """Replace it; an Update event."""
        self.objects.upsert(self.kind, _storage_key(new), new)
        self.queue.move_all_to_active_or_backoff_queue(
            ClusterEvent(self.resource, ActionType.UPDATE), old, new
        )

    def on_delete(self, obj: Any) -> None:
        """Forget it; a Delete event."""
        self.objects.delete(self.kind, _storage_key(obj))
        self.queue.move_all_to_active_or_backoff_queue(
            ClusterEvent(self.resource, ActionType.DELETE), obj, None
        )


def _storage_key(obj: Any) -> str:
    """The object store's key of a parsed storage object (``object_key`` of its document)."""
    return ClusterObjects.key(getattr(obj, "namespace", ""), obj.name)


def _storage_decoder(rtype: ResourceType) -> Callable[[dict[str, Any]], Any]:
    parse = STORAGE_KINDS[rtype.api_version, rtype.kind]

    def decode(raw: dict[str, Any]) -> Any:
        return parse(raw, rtype.kind)

    return decode


def scheduler_informers(
    client: KubeClient,
    engine: Engine,
    queue: PriorityQueue,
    objects: ClusterObjects,
    on_deleted: Callable[[Pod], None] | None = None,
) -> InformerSet:
    """Nodes, pods and the plugins' other kinds, with the handlers above."""
    informers = InformerSet(client)
    informers.add(
        NODES, TimedHandler(QueueNodeHandler(engine, queue)), decode_node, without_managed_fields=True
    )
    # An HTTP extender is sent whole pods (the one being scheduled, full preemption victims), so with
    # extenders the pods keep their whole documents; without, the slim cache keeps what berth reads.
    pod_decoder = decode_whole_pod if engine.algorithm.extenders else decode_pod
    informers.add(
        PODS,
        TimedHandler(QueuePodHandler(engine, queue, on_deleted)),
        pod_decoder,
        without_managed_fields=True,
    )
    for rtype in OBJECT_RESOURCES:
        if rtype in STORAGE_RESOURCES:
            # The parsers keep no managedFields (kube-scheduler's storage informers do keep them).
            informers.add(
                rtype,
                StorageHandler(objects, queue, rtype.kind),
                _storage_decoder(rtype),
                without_managed_fields=True,
            )
        else:
            informers.add(rtype, ObjectHandler(objects, rtype.kind))
    # --- DynamicResources (issue 19): resource.k8s.io/v1 objects, and their events for the queue.
    # With DynamicResourceAllocation off (1.33) the plugin is disabled and asks for no informer, as
    # in kube-scheduler: an API server at 1.33 does not even serve resource.k8s.io/v1.
    if featuregates.DEFAULT.enabled("DynamicResourceAllocation"):
        for rtype in DRA_RESOURCES:
            # Nothing reads their managedFields (a claim's PUT without them keeps the server's).
            informers.add(rtype, ObjectHandler(objects, rtype.kind), without_managed_fields=True)
        objects.dra.listeners.append(dra_queue_listener(queue))
    return informers


_DRA_EVENT_RESOURCES = {
    "ResourceClaim": RESOURCE_CLAIM,
    "DeviceClass": DEVICE_CLASS,
    "ResourceSlice": RESOURCE_SLICE,
}


def namespace_labels_lookup(objects: ClusterObjects) -> NamespaceLabelsLookup:
    """A namespace's labels from the Namespaces informer's objects, None for one it has not seen
    (``GetNamespaceLabelsSnapshot`` over kube's namespace lister; a miss is its nil set)."""

    def lookup(namespace: str) -> Mapping[str, str] | None:
        obj = objects.get(NAMESPACES.kind, namespace)
        if obj is None:
            return None
        labels = (obj.get("metadata") or {}).get("labels")
        return labels if isinstance(labels, Mapping) else {}

    return lookup


def dra_queue_listener(queue: PriorityQueue) -> Callable[[str, Any, Any], None]:
    """A DRA store listener moving the pods a ResourceClaim, DeviceClass or ResourceSlice change may
    help (kube-scheduler's event handlers for those informers)."""

    def on_change(kind: str, old: Any, new: Any) -> None:
        resource = _DRA_EVENT_RESOURCES.get(kind)
        if resource is None:
            return
        action = ActionType.ADD if old is None else ActionType.DELETE if new is None else ActionType.UPDATE
        queue.move_all_to_active_or_backoff_queue(ClusterEvent(resource, action), old, new)

    return on_change
