"""The pods set aside until a cluster event may help them (``backend/queue/unschedulable_pods.go``).

Holds both pods that failed an attempt and pods a PreEnqueue plugin gates; the two are counted
apart (``scheduler_pending_pods{queue="unschedulable"|"gated"}``). Not thread-safe: the
scheduling queue's lock guards it.

Indexed by rejecting plugin: a cluster event only concerns the pods whose rejecting plugins
registered a hint for it (plus gated pods and pods with no rejector, which every event
concerns), so :meth:`candidates` hands the queue those alone instead of every pod, and an event
no rejector cares about costs nothing per unschedulable pod. kube-scheduler walks all of them (in
Go, cheaply); which pods move is the same either way.

Gated pods whose gating plugin named the one pod whose deletion alone can ungate them
(``QueuedPodInfo.released_by``: a preemptor waiting for its last victim to leave the cache) are
indexed by that pod's UID instead: only its deletion concerns them. The others concern every event.

Pods whose rejecting plugins declared, with their hints for a resource's events, which objects'
events can change the answer (:class:`~app.framework.events.HintKeys`: DynamicResources names a
pod's claims) are also indexed by those objects' keys: an event of that resource then concerns,
among them, only the pods naming its object (and, for an event about no one object, those that
admit such events). The hints skipped are QueueSkip by the keys' contract, so the moves are the
same; hundreds of pods waiting for their claims no longer cost a hint call each per claim event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from app import metrics
from app.backend.queue.queued_pod_info import QueuedPodInfo
from app.framework.events import ClusterEvent, HintKeys, HintScope, PodHintKeys

__all__ = ["PodKeyFilters", "UnschedulablePods"]

PodKeyFilters = Callable[[QueuedPodInfo], Sequence[tuple[str, HintKeys, PodHintKeys]]]
"""For a stored pod: (resource, the registration's keys, the pod's keys) of every resource whose
events the pod's rejecting plugins' hints can be narrowed for by key (empty: none)."""


@dataclass(slots=True)
class _KeyIndex:
    """The pods filtered by one :class:`HintKeys`: by object key, those admitting unkeyed events, all."""

    by_object: dict[str, set[str]] = field(default_factory=dict)
    unkeyed: set[str] = field(default_factory=set)
    every: set[str] = field(default_factory=set)

    def hits(self, scope: str | HintScope) -> set[str]:
        """The pods an event about ``scope`` concerns."""
        if scope is HintScope.EVERY_POD:
            return self.every
        if scope is HintScope.UNKEYED:
            return self.unkeyed
        assert isinstance(scope, str)
        return self.by_object.get(scope) or set()


class UnschedulablePods:
    """Pods by key (``namespace/name``), with the number of gated ones, indexed by the plugins
    that rejected them."""

    def __init__(self, key_filters: PodKeyFilters | None = None) -> None:
        """``key_filters`` derives a pod's key filters when it is indexed (None: no pod has any)."""
        self._pods: dict[str, QueuedPodInfo] = {}
        self._key_filters = key_filters
        # Pods with key filters: resource -> their keys, and resource -> HintKeys -> their index.
        self._keyed: dict[str, set[str]] = {}
        self._key_index: dict[str, dict[HintKeys, _KeyIndex]] = {}
        self._filters_of: dict[str, Sequence[tuple[str, HintKeys, PodHintKeys]]] = {}
        self.gated = 0
        # Where each key is indexed: the rejecting plugins, or () for "every event concerns it".
        self._indexed: dict[str, tuple[str, ...]] = {}
        self._by_plugin: dict[str, set[str]] = {}
        self._always: set[str] = set()
        # Gated pods that only the deletion of one pod can ungate: that pod's UID -> their keys.
        self._by_deleted: dict[str, set[str]] = {}
        self._released_by: dict[str, str] = {}
        # Insertion order, kept across updates (as the dict's), so candidates come in the order a
        # walk over every pod would visit them.
        self._order: dict[str, int] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, pod_key: str) -> bool:
        return pod_key in self._pods

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self._pods.values())

    @property
    def ungated(self) -> int:
        """Pods that were attempted and failed."""
        return len(self._pods) - self.gated

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        """The pod with ``pod_key``, or None."""
        return self._pods.get(pod_key)

    def add_or_update(self, qpi: QueuedPodInfo, gated_before: bool, event: str) -> None:
        """Insert or replace ``qpi``; ``gated_before`` is whether the stored copy was counted gated."""
        pod_key = qpi.pod.key
        if pod_key in self._pods:
            self.gated += int(qpi.gated) - int(gated_before)
        else:
            self.gated += int(qpi.gated)
            metrics.observe_queue_incoming("unschedulable", event)
            self._order[pod_key] = self._next
            self._next += 1
        self._pods[pod_key] = qpi
        self._unindex(pod_key)
        self._index(pod_key, qpi)

    def delete(self, pod_key: str, gated: bool) -> None:
        """Remove the pod; ``gated`` is how it was counted."""
        if self._pods.pop(pod_key, None) is not None:
            if gated:
                self.gated -= 1
            self._unindex(pod_key)
            del self._order[pod_key]

    def candidates(
        self,
        plugins: Iterable[str],
        deleted: str | None = None,
        event: ClusterEvent | None = None,
        old_obj: object = None,
        new_obj: object = None,
    ) -> list[QueuedPodInfo]:
        """The pods an event whose hints belong to ``plugins`` may move: those a plugin of them
        rejected, the gated ones and those no plugin rejected (an error), in insertion order. Of the
        gated pods that only one pod's deletion can ungate, those waiting for ``deleted`` (the UID
        of the pod the event deletes, if it deletes one). Of the pods with key filters for the
        ``event``'s resource, those whose keys admit the event's object (``old_obj``, ``new_obj``)."""
        keys = set(self._always)
        for plugin in plugins:
            keys.update(self._by_plugin.get(plugin, ()))
        if deleted is not None:
            keys.update(self._by_deleted.get(deleted, ()))
        if event is not None and self._keyed:
            keys = self._admitted(keys, event, old_obj, new_obj)
        if len(keys) == len(self._pods):
            return list(self._pods.values())
        order = self._order
        return [self._pods[k] for k in sorted(keys, key=order.__getitem__)]

    def _admitted(self, keys: set[str], event: ClusterEvent, old_obj: object, new_obj: object) -> set[str]:
        """``keys`` less the pods whose key filters for the event's resource leave the event out."""
        keyed = self._keyed.get(event.resource)
        if not keyed or event.is_wildcard():
            return keys
        filtered = keys & keyed
        if not filtered:
            return keys
        keys -= filtered
        for hint_keys, index in self._key_index[event.resource].items():
            try:
                scope = hint_keys.of_event(old_obj, new_obj)
            except Exception:  # a key function's failure must not lose a move: ask them all
                scope = HintScope.EVERY_POD
            keys |= filtered & index.hits(scope)
        return keys

    def awaits_deletion_of(self, uid: str) -> bool:
        """Some gated pod only the deletion of the pod with ``uid`` can ungate (a single dict
        lookup, safe to ask without the queue's lock)."""
        return uid in self._by_deleted

    def waiting_for(self, uid: str) -> list[QueuedPodInfo]:
        """The gated pods only the deletion of the pod with ``uid`` can ungate."""
        keys = self._by_deleted.get(uid)
        return [self._pods[k] for k in keys] if keys else []

    def reindex(self, qpi: QueuedPodInfo) -> None:
        """Index a stored pod again after its ``released_by`` or the pod itself (its key filters)
        changed."""
        pod_key = qpi.pod.key
        if self._pods.get(pod_key) is qpi:
            self._unindex(pod_key)
            self._index(pod_key, qpi)

    def _index(self, pod_key: str, qpi: QueuedPodInfo) -> None:
        if qpi.gated and qpi.released_by is not None:
            self._indexed[pod_key] = ()
            self._released_by[pod_key] = qpi.released_by
            self._by_deleted.setdefault(qpi.released_by, set()).add(pod_key)
            return
        if qpi.gated or not qpi.has_rejectors():
            self._always.add(pod_key)
            self._indexed[pod_key] = ()
            self._index_keys(pod_key, qpi)
            return
        plugins = tuple(qpi.unschedulable_plugins | qpi.pending_plugins)
        self._indexed[pod_key] = plugins
        for plugin in plugins:
            self._by_plugin.setdefault(plugin, set()).add(pod_key)
        self._index_keys(pod_key, qpi)

    def _index_keys(self, pod_key: str, qpi: QueuedPodInfo) -> None:
        filters = self._key_filters(qpi) if self._key_filters is not None and qpi.has_rejectors() else ()
        if not filters:
            return
        self._filters_of[pod_key] = filters
        for resource, hint_keys, pod_keys in filters:
            self._keyed.setdefault(resource, set()).add(pod_key)
            index = self._key_index.setdefault(resource, {}).setdefault(hint_keys, _KeyIndex())
            index.every.add(pod_key)
            if pod_keys.unkeyed:
                index.unkeyed.add(pod_key)
            for key in pod_keys.keys:
                index.by_object.setdefault(key, set()).add(pod_key)

    def _unindex_keys(self, pod_key: str) -> None:
        filters = self._filters_of.pop(pod_key, None)
        if filters is None:
            return
        for resource, hint_keys, pod_keys in filters:
            keyed = self._keyed[resource]
            keyed.discard(pod_key)
            if not keyed:
                del self._keyed[resource]
            indexes = self._key_index[resource]
            index = indexes[hint_keys]
            index.every.discard(pod_key)
            index.unkeyed.discard(pod_key)
            for key in pod_keys.keys:
                holders = index.by_object[key]
                holders.discard(pod_key)
                if not holders:
                    del index.by_object[key]
            if not index.every:
                del indexes[hint_keys]
                if not indexes:
                    del self._key_index[resource]

    def _unindex(self, pod_key: str) -> None:
        plugins = self._indexed.pop(pod_key, None)
        if plugins is None:
            return
        self._unindex_keys(pod_key)
        uid = self._released_by.pop(pod_key, None)
        if uid is not None:
            keys = self._by_deleted[uid]
            keys.discard(pod_key)
            if not keys:
                del self._by_deleted[uid]
            return
        if not plugins:
            self._always.discard(pod_key)
        for plugin in plugins:
            keys = self._by_plugin[plugin]
            keys.discard(pod_key)
            if not keys:
                del self._by_plugin[plugin]
