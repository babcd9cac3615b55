"""ImageLocality, ported from image_locality_test.go (kube-scheduler v1.36.3)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pytest

from app.api.objects import Node, Pod, parse_node, parse_pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import MAX_NODE_SCORE
from app.framework.types import ImageStateSummary, NodeInfo
from app.plugins.imagelocality.image_locality import (
    MB,
    ImageLocality,
    calculate_priority,
    normalized_image_name,
    pod_image_names,
)
from fakes import FakeHandle

Images = Sequence[tuple[Sequence[str], int]]


def _pod(containers: Sequence[str], inits: Sequence[str] = (), volumes: Sequence[str] = ()) -> Pod:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": img} for i, img in enumerate(containers)]
    }
    if inits:
        spec["initContainers"] = [{"name": f"i{i}", "image": img} for i, img in enumerate(inits)]
    if volumes:
        spec["volumes"] = [{"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volumes)]
    return parse_pod({"metadata": {"name": "p"}, "spec": spec})


def _image_node(name: str, images: Images) -> Node:
    status = {"images": [{"names": list(names), "sizeBytes": size} for names, size in images]}
    return parse_node({"metadata": {"name": name}, "status": status})


def with_image_states(nodes: Sequence[Node]) -> list[NodeInfo]:
    """NodeInfos whose ``image_states`` are filled as the snapshot fills them.

    Every name of every image on a node maps to one summary per name, shared across nodes, with
    its size and the number of nodes holding it.
    """
    infos = [NodeInfo(n) for n in nodes]
    summaries: dict[str, ImageStateSummary] = {}
    for info in infos:
        assert info.node is not None
        for image in info.node.images:
            for image_name in image.names:
                summaries.setdefault(image_name, ImageStateSummary(image.size_bytes)).nodes.add(info.name)
    for summary in summaries.values():
        summary.num_nodes = len(summary.nodes)
    for info in infos:
        assert info.node is not None
        info.image_states = {n: summaries[n] for image in info.node.images for n in image.names}
    return infos


NODE_40_300_2000: Images = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: Images = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900: Images = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: Images = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: Images = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: Images = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: Images = []

CASES: list[tuple[str, Pod, list[Images], list[int]]] = [
    (
        # node1: 40M/2 < 23M → 0; node2: 100 * (250M/2 - 23M) / (1000M*2 - 23M) = 5
        "two images spread on two nodes, prefer the larger image one",
        _pod(["gcr.io/40", "gcr.io/250"]),
        [NODE_40_300_2000, NODE_250_10],
        [0, 5],
    ),
    (
        # node1: 100 * ((40M + 300M)/2 - 23M) / (1000M*2 - 23M) = 7
        "two images on one node, prefer this node",
        _pod(["gcr.io/40", "gcr.io/300"]),
        [NODE_40_300_2000, NODE_250_10],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        _pod(["gcr.io/10", "gcr.io/4000"]),
        [NODE_4000_30, NODE_250_10],
        [MAX_NODE_SCORE, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        _pod(["gcr.io/10", "gcr.io/4000"]),
        [NODE_4000_30, NODE_250_10, NO_IMAGES],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        _pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
        [NODE_600_40_900, NODE_300_600_900, NO_IMAGES],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        _pod(["gcr.io/30", "gcr.io/40"]),
        [NODE_20_30_40, NODE_4000_30],
        [1, 0],
    ),
    (
        # Image volumes add to the sum but not to the container count: 100 * (300M/2 - 23M) / (1000M - 23M) = 12
        "pod with ImageVolume",
        _pod(["gcr.io/30"], volumes=["gcr.io/300"]),
        [NODE_300_600_900, NODE_4000_30],
        [12, 0],
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        _pod(["gcr.io/30"], inits=["gcr.io/300"]),
        [NODE_40_300_2000, NODE_20_30_40],
        [6, 0],
    ),
]


@pytest.mark.parametrize(
    ("pod", "node_images", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_image_locality_priority(pod: Pod, node_images: list[Images], expected: list[int]) -> None:
    nodes = [_image_node(f"node{i + 1}", images) for i, images in enumerate(node_images)]
    infos = with_image_states(nodes)
    p = ImageLocality(None, FakeHandle(infos))
    state = CycleState()
    assert [p.score(state, pod, info) for info in infos] == expected
    # Scoring again for the same pod (cached image names) gives the same answer.
    assert [p.score(state, pod, info) for info in infos] == expected
    # ...and so does scoring every node in one call, as the framework does.
    assert p.score_nodes(state, pod, infos) == expected


def test_cache_follows_the_pod() -> None:
    """The per-pod image-name cache is keyed on the pod object, so a new pod is recomputed."""
    infos = with_image_states([_image_node("node1", NODE_40_300_2000), _image_node("node2", NODE_250_10)])
    p = ImageLocality(None, FakeHandle(infos))
    assert p.score(CycleState(), _pod(["gcr.io/40", "gcr.io/300"]), infos[0]) == 7
    assert p.score(CycleState(), _pod(["gcr.io/40", "gcr.io/250"]), infos[0]) == 0


def _digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("name", "image", "want"),
    [
        ("add :latest postfix 1", "root", "root:latest"),
        ("add :latest postfix 2", "gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("keep it as is 1", "root:tag", "root:tag"),
        ("keep it as is 2", "root@" + _digest("root"), "root@" + _digest("root")),
    ],
)
def test_normalized_image_name(name: str, image: str, want: str) -> None:
    assert normalized_image_name(image) == want


def test_pod_image_names_order() -> None:
    """Init containers, then containers, then image volumes, as sumImageScores visits them."""
    pod = _pod(["b"], inits=["a:1"], volumes=["registry:5000/c"])
    assert pod_image_names(pod) == ("a:1", "b:latest", "registry:5000/c:latest")


def test_calculate_priority_bounds() -> None:
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(10**15, 2) == MAX_NODE_SCORE
    # A pod without containers: Go's arithmetic gives 0 below the threshold, 100 above.
    assert calculate_priority(0, 0) == 0
    assert calculate_priority(100 * MB, 0) == MAX_NODE_SCORE
