"""The scheduler cache (``backend/cache/cache.go``): NodeInfos built from informer events and
assumed pods, and incremental snapshots by generation."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from app.api.objects import Node, Pod
from app.backend.cache.node_tree import NodeTree
from app.backend.cache.snapshot import Snapshot
from app.framework.types import ImageStateSummary, NodeInfo, PodInfo, same_request_spec


class CacheError(RuntimeError):
    """An operation inconsistent with the cache's state (assuming a known pod, say)."""


@dataclass(slots=True)
class _PodState:
    pod_info: PodInfo
    assumed: bool
    binding_finished: bool = False


@dataclass(slots=True)
class _ImageState:
    size: int
    nodes: set[str]


#: How many request specs (:func:`same_request_spec`'s parts) the cache remembers a PodInfo of.
_REQUEST_SPECS_LIMIT = 256


class Cache:
    """Nodes and pods, thread-safe. Pods are keyed by UID."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        # Most recently changed last: UpdateSnapshot walks from the end while generations are new.
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()
        self._tree = NodeTree()
        self._pods: dict[str, _PodState] = {}
        self._images: dict[str, _ImageState] = {}
        # A PodInfo of each recent request spec: pods parsed from one template share their
        # containers (app.api.objects), and berth capacity's copies of one template their whole
        # spec, so the next such pod takes its requests instead of summing quantities again.
        self._by_request_spec: dict[tuple[int, int, int, int], PodInfo] = {}

    def sizes(self) -> tuple[int, int, int]:
        """``(nodes, pods, assumed pods)``: what ``scheduler_cache_size{type}`` reports."""
        with self._lock:
            assumed = sum(1 for state in self._pods.values() if state.assumed)
            return len(self._nodes), len(self._pods), assumed

    # --- nodes -------------------------------------------------------------------------

    def add_node(self, node: Node) -> NodeInfo:
        """Add (or replace) a node."""
        with self._lock:
            info = self._nodes.get(node.name)
            if info is None:
                info = NodeInfo()
                self._nodes[node.name] = info
            else:
                self._remove_images(info)
            self._nodes.move_to_end(node.name)
            if info.node is None:
                self._tree.add(node)
            else:
                self._tree.update(info.node, node)
            info.set_node(node)
            self._add_images(node)
            return info

    def update_node(self, old: Node | None, new: Node) -> NodeInfo:
        """Replace a node's object."""
        return self.add_node(new)

    def remove_node(self, node: Node) -> None:
        """Remove a node; a node with pods stays as a ghost until they go."""
        with self._lock:
            info = self._nodes.get(node.name)
            if info is None:
                return
            self._remove_images(info)
            self._tree.remove(node.name)
            if info.pods:
                info.remove_node()
                self._nodes.move_to_end(node.name)
            else:
                del self._nodes[node.name]

    def _add_images(self, node: Node) -> None:
        for image in node.images:
            for name in image.names:
                state = self._images.get(name)
                if state is None:
                    self._images[name] = _ImageState(image.size_bytes, {node.name})
                else:
                    state.nodes.add(node.name)

    def _remove_images(self, info: NodeInfo) -> None:
        if info.node is None:
            return
        for image in info.node.images:
            for name in image.names:
                state = self._images.get(name)
                if state is not None:
                    state.nodes.discard(info.node.name)
                    if not state.nodes:
                        del self._images[name]

    # --- pods --------------------------------------------------------------------------

    def _pod_info(self, pod: Pod) -> PodInfo:
        """``pod``'s PodInfo, its requests copied from a pod with the same request spec (parsed from
        the same template, or an earlier version of the pod) when the cache has seen one lately."""
        key = (id(pod.containers), id(pod.init_containers), id(pod.pod_requests), id(pod.overhead))
        known = self._by_request_spec.get(key)
        # The remembered pod holds its parts, so their ids are not reused while it is remembered.
        if known is not None and same_request_spec(known.pod, pod):
            return PodInfo.like(pod, known)
        pod_info = PodInfo(pod)
        if len(self._by_request_spec) >= _REQUEST_SPECS_LIMIT:
            self._by_request_spec.clear()  # a bound, not an eviction policy
        self._by_request_spec[key] = pod_info
        return pod_info

    def _add_pod(self, pod_info: PodInfo, assumed: bool) -> None:
        name = pod_info.pod.node_name
        info = self._nodes.get(name)
        if info is None:
            info = NodeInfo()  # pods may arrive before their node
            self._nodes[name] = info
        info.add_pod_info(pod_info)
        self._nodes.move_to_end(name)
        self._pods[pod_info.pod.uid] = _PodState(pod_info, assumed)

    def _remove_pod(self, pod: Pod) -> None:
        info = self._nodes.get(pod.node_name)
        if info is not None:
            info.remove_pod(pod)
            if info.node is None and not info.pods:
                del self._nodes[pod.node_name]
            else:
                self._nodes.move_to_end(pod.node_name)
        self._pods.pop(pod.uid, None)

    def assume_pod(self, pod: Pod) -> PodInfo:
        """Count ``pod`` (with ``node_name`` set) on its node before the bind is confirmed."""
        with self._lock:
            if pod.uid in self._pods:
                raise CacheError(f"pod {pod.key} is in the cache, so can't be assumed")
            pod_info = self._pod_info(pod)
            self._add_pod(pod_info, assumed=True)
            return pod_info

    def finish_binding(self, pod: Pod) -> None:
        """Mark an assumed pod's binding as finished (kept for kube-scheduler parity)."""
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is not None and state.assumed:
                state.binding_finished = True

    def forget_pod(self, pod: Pod) -> None:
        """Undo :meth:`assume_pod` (the bind failed)."""
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is None:
                return  # ForgetPod of an unknown pod is not an error
            if state.pod_info.pod.node_name != pod.node_name:
                raise CacheError(
                    f"pod {pod.key} was assumed on {state.pod_info.pod.node_name} but assigned to {pod.node_name}"
                )
            if not state.assumed:
                raise CacheError(f"pod {pod.key} wasn't assumed so cannot be forgotten")
            self._remove_pod(state.pod_info.pod)

    def add_pod(self, pod: Pod) -> None:
        """A bound pod seen by the informer; confirms an assumed pod."""
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is not None:
                if state.assumed:
                    assumed = state.pod_info
                    self._remove_pod(assumed.pod)
                    # The bound pod is the assumed one with nodeName set: its requests are known.
                    same = same_request_spec(assumed.pod, pod)
                    self._add_pod(PodInfo.like(pod, assumed) if same else PodInfo(pod), assumed=False)
                return
            self._add_pod(self._pod_info(pod), assumed=False)

    def update_pod(self, old: Pod | None, new: Pod) -> None:
        """Replace a known pod."""
        with self._lock:
            state = self._pods.get(new.uid)
            if state is not None:
                self._remove_pod(state.pod_info.pod)
            self._add_pod(self._pod_info(new), assumed=False)

    def remove_pod(self, pod: Pod) -> None:
        """Remove a pod by UID."""
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is not None:
                self._remove_pod(state.pod_info.pod)

    def is_assumed(self, pod: Pod) -> bool:
        """Whether ``pod`` is assumed and not yet confirmed."""
        state = self._pods.get(pod.uid)
        return state is not None and state.assumed

    def get_pod(self, uid: str) -> Pod | None:
        """The cached pod with ``uid``."""
        state = self._pods.get(uid)
        return state.pod_info.pod if state is not None else None

    def pods_on(self, node_name: str) -> list[Pod]:
        """Pods the cache holds on ``node_name``."""
        info = self._nodes.get(node_name)
        return [p.pod for p in info.pods] if info is not None else []

    def get_node(self, name: str) -> Node | None:
        """The node object named ``name``."""
        info = self._nodes.get(name)
        return info.node if info is not None else None

    @property
    def node_count(self) -> int:
        """Nodes with an object (ghosts excluded)."""
        return self._tree.num_nodes

    @property
    def pod_count(self) -> int:
        """All cached pods, assumed included."""
        return len(self._pods)

    @property
    def assumed_count(self) -> int:
        """Assumed pods."""
        return sum(1 for s in self._pods.values() if s.assumed)

    # --- snapshots -----------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Copy NodeInfos changed since the snapshot's generation, then rebuild lists if needed."""
        with self._lock:
            update_all = False
            affinity_changed = anti_affinity_changed = False
            newest = snapshot.generation
            for name, info in reversed(self._nodes.items()):
                if info.generation <= snapshot.generation:
                    break
                newest = max(newest, info.generation)
                if info.node is None:
                    continue
                clone = info.snapshot()
                clone.image_states = self._image_summaries(info)
                existing = snapshot.node_info_map.get(name)
                if existing is None:
                    update_all = True
                    snapshot.node_info_map[name] = clone
                else:
                    if bool(existing.pods_with_affinity) != bool(clone.pods_with_affinity):
                        affinity_changed = True
                    if bool(existing.pods_with_required_anti_affinity) != bool(
                        clone.pods_with_required_anti_affinity
                    ):
                        anti_affinity_changed = True
                    _overwrite(existing, clone)
                    snapshot.changes.record(existing, self._tree.num_nodes)
            snapshot.generation = newest
            if len(snapshot.node_info_map) > self._tree.num_nodes:
                for name in list(snapshot.node_info_map):
                    live = self._nodes.get(name)
                    if live is None or live.node is None:
                        del snapshot.node_info_map[name]
                update_all = True
            # As kube-scheduler, the node order is only re-read from the tree when a node was
            # added to or removed from the snapshot; a zone change alone keeps the old order.
            if update_all:
                snapshot.node_info_list = [snapshot.node_info_map[n] for n in self._tree.list()]
                snapshot.changes.reset()
                affinity_changed = anti_affinity_changed = True
            snapshot.affinity_changed(affinity_changed, anti_affinity_changed)

    def _image_summaries(self, info: NodeInfo) -> dict[str, ImageStateSummary]:
        if info.node is None or not info.node.images:
            return {}
        out = {}
        for image in info.node.images:
            for name in image.names:
                state = self._images.get(name)
                if state is not None:
                    out[name] = ImageStateSummary(state.size, state.nodes, len(state.nodes))
        return out


def _overwrite(existing: NodeInfo, clone: NodeInfo) -> None:
    """Copy ``clone`` into ``existing`` so that list positions in the snapshot stay valid."""
    for slot in NodeInfo.__slots__:
        setattr(existing, slot, getattr(clone, slot))
