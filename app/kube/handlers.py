"""Informer event handlers that keep the engine's cache and cluster objects current
(kube-scheduler's ``eventhandlers.go``, the cache half: berth's extender has no queue to feed).

- Nodes: add / update / delete → ``cache.add_node`` / ``update_node`` / ``remove_node``.
- Pods: only **assigned** pods (``spec.nodeName`` set) are in the cache, whatever their
  schedulerName, because pods bound by other schedulers use capacity too. An update that assigns a
  pod adds it; terminated pods (Succeeded/Failed) are removed, as kube-scheduler does (its pod
  informer also filters them out with a field selector, so they normally arrive as deletes).
- Services, ReplicaSets, StatefulSets, ReplicationControllers, Namespaces, PodDisruptionBudgets:
  raw dicts into the engine's ``ClusterObjects``, keyed by ``namespace/name``.

All of this runs on the reflector threads. The cache serialises its writers and the snapshot
update with its RLock, and ``ClusterObjects`` has its own lock, so the HTTP verbs can read while
informers write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from app import logs
from app.api.objects import (
    Node,
    Pod,
    parse_node,
    parse_pod,
    slim_node_document,
    slim_pod_document,
    without_managed_fields,
)
from app.backend.cache.cache import Cache
from app.kube.client import KubeClient
from app.kube.informer import (
    DEFAULT_PAGE_SIZE,
    MIN_WATCH_TIMEOUT,
    NAMESPACES,
    NODES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICASETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFULSETS,
    STORAGE_RESOURCES,
    Backoff,
    InformerSet,
    ResourceType,
    object_key,
)

__all__ = [
    "OBJECT_RESOURCES",
    "NodeHandler",
    "ObjectHandler",
    "ObjectStore",
    "PodHandler",
    "decode_node",
    "decode_pod",
    "decode_whole_pod",
    "engine_informers",
]

OBJECT_RESOURCES: tuple[ResourceType, ...] = (
    SERVICES,
    REPLICASETS,
    STATEFULSETS,
    REPLICATION_CONTROLLERS,
    NAMESPACES,
    POD_DISRUPTION_BUDGETS,
    # --- storage (the volume plugins) ---
    *STORAGE_RESOURCES,
)
"""The kinds plugins read besides pods and nodes (PodTopologySpread, InterPodAffinity, preemption, the
volume plugins)."""

_TERMINATED = ("Succeeded", "Failed")


class ObjectStore(Protocol):
    """Where raw objects go (``app.scheduler.scheduler.ClusterObjects``)."""

    def upsert(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        """Add or replace."""
        ...

    def delete(self, kind: str, key: str) -> None:
        """Forget."""
        ...


def decode_node(raw: dict[str, Any]) -> Node:
    """An informer's decoder for nodes: the parsed node, keeping only its slim document."""
    node = parse_node(raw, "Node")
    node.raw = slim_node_document(raw, node)
    return node


def decode_pod(raw: dict[str, Any]) -> Pod:
    """An informer's decoder for pods: the parsed pod, keeping only its slim document
    (:func:`~app.api.objects.slim_pod_document`)."""
    pod = parse_pod(raw, "Pod")
    pod.raw = slim_pod_document(raw, pod)
    return pod


def decode_whole_pod(raw: dict[str, Any]) -> Pod:
    """An informer's decoder for pods that may be sent whole to an HTTP extender (the pod being
    scheduled, full preemption victims): the document without managedFields, as kube-scheduler's
    informers keep it."""
    pod = parse_pod(raw, "Pod")
    pod.raw = without_managed_fields(raw)
    return pod


class NodeHandler:
    """Nodes into the cache."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def on_add(self, node: Node) -> None:
        """addNodeToCache."""
        self.cache.add_node(node)
        logs.info("Add event for node", 3, node=node.name)

    def on_update(self, old: Node, new: Node) -> None:
        """updateNodeInCache."""
        self.cache.update_node(old, new)
        logs.info("Update event for node", 4, node=new.name)

    def on_delete(self, node: Node) -> None:
        """deleteNodeFromCache."""
        self.cache.remove_node(node)
        logs.info("Delete event for node", 3, node=node.name)


def _cached(pod: Pod) -> bool:
    """Whether kube-scheduler keeps ``pod`` in its cache: assigned and not terminated."""
    return bool(pod.node_name) and pod.phase not in _TERMINATED


class PodHandler:
    """Assigned pods into the cache (client-go's FilteringResourceEventHandler over ``_cached``)."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def on_add(self, pod: Pod) -> None:
        """addPodToCache for an assigned pod; pending pods are not the cache's business."""
        if _cached(pod):
            self.cache.add_pod(pod)
            logs.info("Add event for scheduled pod", 3, pod=pod.key, node=pod.node_name)

    def on_update(self, old: Pod, new: Pod) -> None:
        """updatePodInCache; an update into or out of the filter is an add or a delete."""
        was, now = _cached(old), _cached(new)
        if was and now:
            if old.uid != new.uid:
                # A pod deleted and recreated under the same name between two events.
                self.cache.remove_pod(old)
                self.cache.add_pod(new)
            else:
                self.cache.update_pod(old, new)
        elif now:
            self.cache.add_pod(new)  # newly bound (by us or anyone else)
            logs.info("Add event for scheduled pod", 3, pod=new.key, node=new.node_name)
        elif was:
            self.cache.remove_pod(old)  # terminated
            logs.info("Delete event for scheduled pod", 3, pod=old.key, node=old.node_name)

    def on_delete(self, pod: Pod) -> None:
        """deletePodFromCache (removing an unknown pod is a no-op)."""
        if pod.node_name:
            self.cache.remove_pod(pod)
            logs.info("Delete event for scheduled pod", 3, pod=pod.key, node=pod.node_name)


class ObjectHandler:
    """Raw objects of one kind into an :class:`ObjectStore`."""

    def __init__(self, store: ObjectStore, kind: str) -> None:
        self.store = store
        self.kind = kind

    def on_add(self, obj: Mapping[str, Any]) -> None:
        """Store it."""
        self.store.upsert(self.kind, object_key(obj), obj)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Replace it."""
        self.store.upsert(self.kind, object_key(new), new)

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        """Forget it."""
        self.store.delete(self.kind, object_key(obj))


def engine_informers(
    client: KubeClient,
    cache: Cache,
    objects: ObjectStore | None,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    object_resources: Sequence[ResourceType] = OBJECT_RESOURCES,
    min_watch_timeout: float = MIN_WATCH_TIMEOUT,
    backoff: type[Backoff] = Backoff,
) -> InformerSet:
    """The informers that feed an engine: nodes and pods into ``cache``, the other kinds into
    ``objects`` (skipped when None). Call :meth:`InformerSet.start` to begin listing."""
    informers = InformerSet(client, page_size=page_size, backoff=backoff, min_watch_timeout=min_watch_timeout)
    informers.add(NODES, NodeHandler(cache), decode_node, without_managed_fields=True)
    informers.add(PODS, PodHandler(cache), decode_pod, without_managed_fields=True)
    if objects is not None:
        for rtype in object_resources:
            informers.add(rtype, ObjectHandler(objects, rtype.kind))
    return informers
