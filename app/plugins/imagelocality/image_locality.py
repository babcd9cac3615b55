"""ImageLocality: favour nodes that already hold the pod's images (``imagelocality/image_locality.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import MAX_NODE_SCORE, Handle, ScorePlugin
from app.framework.types import ImageStateSummary, NodeInfo

NAME = "ImageLocality"

# Bounds of the image score range: a reasonable size range for compressed images in registries
# (the 90th percentile of Docker Hub images falls inside it).
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: append ":latest" when the last ":" is not after the last "/".

    So "gcr.io:5000/root" gains a tag, while "root:tag" and "root@sha256:<hex>" (whose last ":" is
    after any "/") are kept as they are.
    """
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def pod_image_names(pod: Pod) -> tuple[str, ...]:
    """Normalized images of init containers, regular containers and image volumes, in kube's order."""
    names = [normalized_image_name(c.image) for c in pod.init_containers]
    names.extend(normalized_image_name(c.image) for c in pod.containers)
    spec = pod.raw.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, Mapping) else None
    if isinstance(volumes, list):
        for volume in volumes:
            image = volume.get("image") if isinstance(volume, Mapping) else None
            if isinstance(image, Mapping):
                reference = image.get("reference")
                names.append(normalized_image_name(reference if isinstance(reference, str) else ""))
    return tuple(names)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """``calculatePriority``: scale the clamped image score sum onto 0..MaxNodeScore."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    numerator = MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD)
    denominator = max_threshold - MIN_THRESHOLD
    # Go's truncating division; the operands are negative only for a pod without containers.
    q = numerator // denominator
    if q < 0 and q * denominator != numerator:
        q += 1
    return q


class ImageLocality(ScorePlugin):
    """Scores a node by the total size of the pod's images already on it, damped by image spread."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        # Score runs once per node for the same pod: keep that pod's image names. One tuple
        # assignment, so a concurrent Score for another pod sees either entry whole.
        self._names_cache: tuple[Pod, tuple[str, ...], int] | None = None

    def _names(self, pod: Pod) -> tuple[tuple[str, ...], int]:
        cached = self._names_cache
        if cached is not None and cached[0] is pod:
            return cached[1], cached[2]
        names = pod_image_names(pod)
        num_containers = len(pod.init_containers) + len(pod.containers)
        self._names_cache = (pod, names, num_containers)
        return names, num_containers

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """``calculatePriority(sumImageScores(...))`` for ``node_info``."""
        names, num_containers = self._names(pod)
        total_nodes = self.handle.snapshot.num_nodes()
        states = node_info.image_states
        total = _sum_image_scores(states, names, float(total_nodes)) if total_nodes > 0 and states else 0
        return calculate_priority(total, num_containers)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node, with the pod's image names and the node count read once."""
        names, num_containers = self._names(pod)
        total_nodes = self.handle.snapshot.num_nodes()
        none = calculate_priority(0, num_containers)  # a node with none of the pod's images
        if total_nodes <= 0:
            return [none] * len(nodes)
        all_nodes = float(total_nodes)
        out: list[int] = []
        append = out.append
        for n in nodes:
            states = n.image_states
            total = _sum_image_scores(states, names, all_nodes) if states else 0
            append(calculate_priority(total, num_containers) if total else none)
        return out


def _sum_image_scores(states: Mapping[str, ImageStateSummary], names: Sequence[str], all_nodes: float) -> int:
    """``sumImageScores``: each of the pod's images on the node, its size scaled by its spread
    (``scaledImageScore``: size * nodes holding it / all nodes, in float as kube)."""
    total = 0
    for name in names:
        st = states.get(name)
        if st is not None:
            total += int(float(st.size) * (float(st.num_nodes) / all_nodes))
    return total
