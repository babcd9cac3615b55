"""The nominator (``backend/queue/nominator.go``): pods nominated to nodes by preemption.

A preemptor gets its node nominated while its victims terminate; until it is bound, every filter
run for a pod of lower or equal priority counts it on that node
(``RunFilterPluginsWithNominatedPods``), so the room it made is not taken.

kube-scheduler keeps pod references and resolves them against its queue; berth keeps the latest
PodInfo of each nominated pod. An Override nomination to "" clears the pod's nomination (kube files
it under the node name "", which no node has).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.api.objects import Pod
from app.framework.types import PodInfo

__all__ = ["MODE_NOOP", "MODE_OVERRIDE", "Nominator"]

MODE_NOOP = "noop"
MODE_OVERRIDE = "override"

PodLister = Callable[[Pod], Pod | None]
"""The informer's current version of a pod, or None when it is gone."""


class Nominator:
    """Pods nominated per node, and the node of each nominated pod (by UID)."""

    def __init__(self, pod_lister: PodLister | None = None) -> None:
        self._lock = threading.RLock()
        self._pod_lister = pod_lister
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add_nominated_pod(self, pod_info: PodInfo, mode: str = MODE_NOOP, node_name: str = "") -> None:
        """``AddNominatedPod``: Override nominates ``node_name``; Noop uses ``status.nominatedNodeName``.

        Any previous nomination of the pod is dropped first. With a pod lister, a pod that is gone
        or already bound is not nominated.
        """
        with self._lock:
            self._delete(pod_info.pod)
            name = node_name if mode == MODE_OVERRIDE else pod_info.pod.nominated_node_name
            if not name:
                return
            if self._pod_lister is not None:
                current = self._pod_lister(pod_info.pod)
                if current is None or current.node_name:
                    return
            self._node_of[pod_info.pod.uid] = name
            self._by_node.setdefault(name, []).append(pod_info)

    def update_nominated_pod(self, old: Pod, new_info: PodInfo) -> None:
        """``UpdateNominatedPod``: re-file the new version; a nomination made in memory only (neither
        version carries ``status.nominatedNodeName``) is kept."""
        with self._lock:
            mode, name = MODE_NOOP, ""
            if not old.nominated_node_name and not new_info.pod.nominated_node_name:
                held = self._node_of.get(old.uid)
                if held is not None:
                    mode, name = MODE_OVERRIDE, held
            self._delete(old)
            self.add_nominated_pod(new_info, mode, name)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        """Drop the pod's nomination (it was bound, deleted or assumed)."""
        with self._lock:
            self._delete(pod)

    def _delete(self, pod: Pod) -> None:
        name = self._node_of.pop(pod.uid, None)
        if name is None:
            return
        infos = self._by_node.get(name, [])
        for i, pi in enumerate(infos):
            if pi.pod.uid == pod.uid:
                del infos[i]
                break
        if not infos:
            self._by_node.pop(name, None)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to ``node_name``, in nomination order (a copy of the list)."""
        infos = self._by_node.get(node_name)
        return list(infos) if infos else []

    def nominated_node_of(self, pod: Pod) -> str | None:
        """The node ``pod`` is nominated to, or None."""
        return self._node_of.get(pod.uid)

    def __len__(self) -> int:
        return len(self._node_of)
