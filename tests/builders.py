"""Shared builders for tests: raw Kubernetes objects in a few keystrokes."""

from __future__ import annotations

from typing import Any

from app.api.objects import Node, Pod, parse_node, parse_pod
from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine


def pod_dict(
    name: str = "p",
    namespace: str = "default",
    requests: list[dict[str, str]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A raw Pod; ``requests`` gives one container per entry."""
    labels = spec.pop("labels", None)
    uid = spec.pop("uid", None)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = labels
    containers = [
        {"name": f"c{i}", "image": "busybox", "resources": {"requests": r}}
        for i, r in enumerate(requests or [{}])
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": containers, **spec}}


def make_pod(name: str = "p", requests: list[dict[str, str]] | None = None, **spec: Any) -> Pod:
    """A parsed Pod (see :func:`pod_dict`)."""
    return parse_pod(pod_dict(name, requests=requests, **spec))


def node_dict(
    name: str = "n",
    allocatable: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A raw Node; ``status`` extras (images) may be passed as ``status={...}``."""
    status = spec.pop("status", {})
    alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"} if allocatable is None else allocatable
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": spec,
        "status": {"allocatable": alloc, **status},
    }


def make_node(
    name: str = "n",
    allocatable: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Node:
    """A parsed Node (see :func:`node_dict`)."""
    return parse_node(node_dict(name, allocatable, labels, **spec))


#: Allocatable of each node of :func:`cluster_engine`'s cluster.
ALLOCATABLE = {"cpu": "2", "memory": "4Gi", "pods": "110"}


def cluster_engine() -> Engine:
    """An Engine over the in-tree plugins and three nodes: n1 is busy (1500m of 2 CPUs used by
    ``busy``), n2 and n3 are idle. The extender's and the server's tests share it."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    for name in ("n1", "n2", "n3"):
        engine.cache.add_node(make_node(name, ALLOCATABLE))
    engine.cache.add_pod(make_pod("busy", [{"cpu": "1500m", "memory": "1Gi"}], nodeName="n1"))
    return engine
