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
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from app import metrics
from app.backend.queue.queued_pod_info import QueuedPodInfo

__all__ = ["UnschedulablePods"]


class UnschedulablePods:
    """Pods by key (``namespace/name``), with the number of gated ones, indexed by the plugins
    that rejected them."""

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
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

    def candidates(self, plugins: Iterable[str], deleted: str | None = None) -> list[QueuedPodInfo]:
        """The pods an event whose hints belong to ``plugins`` may move: those a plugin of them
        rejected, the gated ones and those no plugin rejected (an error), in insertion order. Of the
        gated pods that only one pod's deletion can ungate, those waiting for ``deleted`` (the UID
        of the pod the event deletes, if it deletes one)."""
        keys = set(self._always)
        for plugin in plugins:
            keys.update(self._by_plugin.get(plugin, ()))
        if deleted is not None:
            keys.update(self._by_deleted.get(deleted, ()))
        if len(keys) == len(self._pods):
            return list(self._pods.values())
        order = self._order
        return [self._pods[k] for k in sorted(keys, key=order.__getitem__)]

    def awaits_deletion_of(self, uid: str) -> bool:
        """Some gated pod only the deletion of the pod with ``uid`` can ungate (a single dict
        lookup, safe to ask without the queue's lock)."""
        return uid in self._by_deleted

    def waiting_for(self, uid: str) -> list[QueuedPodInfo]:
        """The gated pods only the deletion of the pod with ``uid`` can ungate."""
        keys = self._by_deleted.get(uid)
        return [self._pods[k] for k in keys] if keys else []

    def reindex(self, qpi: QueuedPodInfo) -> None:
        """Index a stored pod again after its ``released_by`` changed."""
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
            return
        plugins = tuple(qpi.unschedulable_plugins | qpi.pending_plugins)
        self._indexed[pod_key] = plugins
        for plugin in plugins:
            self._by_plugin.setdefault(plugin, set()).add(pod_key)

    def _unindex(self, pod_key: str) -> None:
        plugins = self._indexed.pop(pod_key, None)
        if plugins is None:
            return
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
