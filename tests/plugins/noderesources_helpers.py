"""Builders mirroring kube-scheduler's test wrappers (``st.MakePod``, ``st.MakeNode``, fit_test helpers).

The Go wrappers differ from ``builders.make_pod`` in ways the expected scores depend on: a bare
``st.MakePod().Obj()`` has *no* containers (so no non-zero defaults apply), ``Req`` skips empty
maps, and ``Capacity`` sets ``pods: 32`` next to the given resources.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from app.api.objects import Node, Pod, parse_node, parse_pod
from app.framework.types import NodeInfo, PodInfo
from app.plugins.noderesources.args import ResourceSpec
from fakes import FakeHandle

Req = Mapping[str, str]


def _container(name: str, requests: Req, *, limits: bool = False, sidecar: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": dict(requests)}
    if limits:
        resources["limits"] = dict(requests)
    c: dict[str, Any] = {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": resources}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def st_pod(
    *reqs: Req,
    name: str = "",
    node: str = "",
    sidecars: Sequence[Req] = (),
    inits: Sequence[Req] = (),
    empty_containers: int = 0,
    overhead: Req | None = None,
    pod_requests: Req | None = None,
    uid: str | None = None,
) -> Pod:
    """``st.MakePod().Container(..) (empty_containers times).Req(r)....SidecarReq(s)...Obj()``.

    Empty request maps add no container, as ``PodWrapper.Req`` does.
    """
    containers = [_container(f"con{i}", {}) for i in range(empty_containers)]
    for r in reqs:
        if r:
            containers.append(_container(f"con{len(containers)}", r))
    init_containers = [_container(f"init-con{i}", r, limits=True) for i, r in enumerate(inits) if r]
    for s in sidecars:
        if s:
            init_containers.append(
                _container(f"sidecar-con{len(init_containers)}", s, limits=True, sidecar=True)
            )
    spec: dict[str, Any] = {"containers": containers}
    if init_containers:
        spec["initContainers"] = init_containers
    if node:
        spec["nodeName"] = node
    if overhead:
        spec["overhead"] = dict(overhead)
    if pod_requests:
        spec["resources"] = {"requests": dict(pod_requests)}
    pod_name = name or f"pod-{next(_counter)}"
    meta = {"name": pod_name, "namespace": "default", "uid": uid or f"uid-{pod_name}"}
    return parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


_counter = itertools.count(1)


def st_node(name: str, capacity: Req | None = None) -> Node:
    """``st.MakeNode().Name(name).Capacity(capacity)``; without capacity the node has no allocatable."""
    allocatable: dict[str, str] = {} if capacity is None else {"pods": "32", **capacity}
    return parse_node(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}"},
            "status": {"allocatable": allocatable},
        }
    )


def util_node(name: str, milli_cpu: int, memory: int, extended: Mapping[str, int] | None = None) -> Node:
    """util_test.go ``makeNode``: cpu/memory (and extended resources) as both capacity and allocatable."""
    allocatable = {name_: str(q) for name_, q in (extended or {}).items()}
    allocatable["cpu"] = f"{milli_cpu}m"
    allocatable["memory"] = str(memory)
    return parse_node(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": allocatable},
        }
    )


def resources_list(
    milli_cpu: int, memory: int, pods: int, extended_a: int, storage: int, hugepages_a: int
) -> dict[str, str]:
    """fit_test.go ``makeAllocatableResources``."""
    return {
        "cpu": f"{milli_cpu}m",
        "memory": str(memory),
        "pods": str(pods),
        "example.com/aaa": str(extended_a),
        "ephemeral-storage": str(storage),
        "hugepages-2Mi": str(hugepages_a),
    }


def usage(
    milli_cpu: int = 0, memory: int = 0, storage: int = 0, scalars: Mapping[str, int] | None = None
) -> dict[str, str]:
    """One container's requests as fit_test.go ``newResourcePod`` writes a ``framework.Resource``."""
    out = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "0", "ephemeral-storage": str(storage)}
    out.update({k: str(v) for k, v in (scalars or {}).items()})
    return out


def resource_pod(*usages: Mapping[str, str], inits: Sequence[Mapping[str, str]] = (), **kw: Any) -> Pod:
    """fit_test.go ``newResourcePod(usage...)`` (+ ``newResourceInitPod``): one container per usage."""
    containers = [
        {"name": f"c{i}", "image": "img", "resources": {"requests": dict(u)}} for i, u in enumerate(usages)
    ]
    spec: dict[str, Any] = {"containers": containers}
    if inits:
        spec["initContainers"] = [
            {"name": f"i{i}", "image": "img", "resources": {"requests": dict(u)}} for i, u in enumerate(inits)
        ]
    if "overhead" in kw:
        spec["overhead"] = dict(kw.pop("overhead"))
    if "pod_requests" in kw:
        spec["resources"] = {"requests": dict(kw.pop("pod_requests"))}
    assert not kw, kw
    name = f"rp-{next(_counter)}"
    return parse_pod({"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec})


def snapshot(existing: Sequence[Pod], nodes: Sequence[Node]) -> tuple[FakeHandle, list[NodeInfo]]:
    """``cache.NewSnapshot(pods, nodes)``: NodeInfos with the pods bound to them, and a handle over them."""
    infos = {n.name: NodeInfo(n) for n in nodes}
    for p in existing:
        info = infos.get(p.node_name)
        if info is not None:
            info.add_pod_info(PodInfo(p))
    ordered = [infos[n.name] for n in nodes]
    return FakeHandle(ordered), ordered


EXTENDED = "abc.com/xyz"
DEFAULT = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
EXTENDED_SET = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(EXTENDED, 1)]


def capacity_node(name: str, cpu: str, memory: str, ext: str | None = None) -> Node:
    """``st.MakeNode().Name(name).Capacity({cpu, memory[, abc.com/xyz]})``."""
    capacity = {"cpu": cpu, "memory": memory}
    if ext is not None:
        capacity[EXTENDED] = ext
    return st_node(name, capacity)


def two_container_pod() -> Pod:
    """The two-container pod of the least/most allocated tables."""
    return st_pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
