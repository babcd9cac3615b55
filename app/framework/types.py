"""Resource, PodInfo and NodeInfo: the cache's view of pods and nodes (``framework/types.go``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.api.objects import Node, Pod, ResourceList
from app.api.quantity import milli_value_of, value_of
from app.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NON_MISSING_DEFAULTS,
    PODS,
    is_pod_level_requests_set,
    is_scalar_resource,
    pod_requests,
)

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide, monotonically increasing generation (``nextGeneration``)."""
    return next(_generation)


class Resource:
    """Integer resource amounts: cpu in millicores, others in base units (``framework.Resource``)."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, resources: ResourceList) -> Resource:
        """``NewResource``: cpu via MilliValue, pods to AllowedPodNumber, scalars by Value."""
        r = cls()
        for name, q in resources.items():
            if name == CPU:
                r.milli_cpu = milli_value_of(q)
            elif name == MEMORY:
                r.memory = value_of(q)
            elif name == EPHEMERAL_STORAGE:
                r.ephemeral_storage = value_of(q)
            elif name == PODS:
                r.allowed_pod_number = value_of(q)
            elif is_scalar_resource(name):
                r.scalar[name] = value_of(q)
        return r

    def get(self, name: str) -> int:
        """The amount of ``name`` (0 when absent)."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def add(self, other: Resource, sign: int = 1) -> None:
        """Add (or with ``sign=-1`` subtract) ``other`` in place."""
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        self.allowed_pod_number += sign * other.allowed_pod_number
        if other.scalar:
            scalar = self.scalar
            for k, v in other.scalar.items():
                scalar[k] = scalar.get(k, 0) + sign * v

    def clone(self) -> Resource:
        """A copy."""
        return Resource(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar)
        )

    def is_zero(self) -> bool:
        """No cpu, memory, ephemeral storage or scalar requested."""
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or any(self.scalar.values()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and {k: v for k, v in self.scalar.items() if v} == {k: v for k, v in other.scalar.items() if v}
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, ephemeral_storage={self.ephemeral_storage},"
            f" allowed_pod_number={self.allowed_pod_number}, scalar={self.scalar})"
        )


def _request_all(pod: Pod, resources: ResourceList) -> bool:
    """Whether every container, regular and init, requests each of ``resources``."""
    for containers in (pod.containers, pod.init_containers):
        for c in containers:
            for name in resources:
                if name not in c.requests:
                    return False
    return True


def same_request_spec(a: Pod, b: Pod) -> bool:
    """Whether ``a`` and ``b`` share the very objects their requests are computed from (containers,
    init containers, pod-level requests, overhead), so their requests are equal without summing
    quantities: copies of one template share them. Identity, not equality: a parsed pod's spec is
    never changed in place."""
    return (
        a.containers is b.containers
        and a.init_containers is b.init_containers
        and a.pod_requests is b.pod_requests
        and a.overhead is b.overhead
    )


class PodInfo:
    """A pod with what is computed from it once: effective and non-zero requests.

    Plugins that need more precomputed per-pod data (affinity terms, say) cache it in
    ``extra`` under their own name.
    """

    __slots__ = ("extra", "non0_cpu", "non0_mem", "pod", "requests")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        requests = pod_requests(pod)
        self.requests = Resource.from_list(requests)
        # getNonMissingContainerRequests: with pod-level requests, a default only applies to a
        # resource that neither the pod level nor any container (nor overhead) requests.
        non_missing = (
            {k: v for k, v in NON_MISSING_DEFAULTS.items() if k not in requests}
            if is_pod_level_requests_set(pod)
            else NON_MISSING_DEFAULTS
        )
        if not non_missing or _request_all(pod, non_missing):
            # No container misses a defaulted resource: the non-zero requests are the requests.
            self.non0_cpu = self.requests.milli_cpu
            self.non0_mem = self.requests.memory
        else:
            non_zero = pod_requests(pod, non_missing)
            self.non0_cpu = milli_value_of(non_zero[CPU]) if CPU in non_zero else 0
            self.non0_mem = value_of(non_zero[MEMORY]) if MEMORY in non_zero else 0
        self.extra: dict[str, object] = {}

    @classmethod
    def like(cls, pod: Pod, other: PodInfo) -> PodInfo:
        """A PodInfo for ``pod`` with ``other``'s requests, which :func:`same_request_spec` says are
        ``pod``'s too (a copy of the same template, or the bound version of an assumed pod)."""
        info = cls.__new__(cls)
        info.pod = pod
        info.requests = other.requests.clone()
        info.non0_cpu = other.non0_cpu
        info.non0_mem = other.non0_mem
        info.extra = {}
        return info

    @property
    def has_affinity(self) -> bool:
        """Pod affinity or anti-affinity is set (``PodsWithAffinity``)."""
        return self.pod.pod_affinity is not None or self.pod.pod_anti_affinity is not None

    @property
    def has_required_anti_affinity(self) -> bool:
        """Required anti-affinity terms exist (``PodsWithRequiredAntiAffinity``)."""
        anti = self.pod.pod_anti_affinity
        return anti is not None and bool(anti.required)

    def __repr__(self) -> str:
        return f"PodInfo({self.pod.key})"


@dataclass(slots=True)
class ImageStateSummary:
    """Size of an image and the set of nodes holding it; ``num_nodes`` is set in snapshots."""

    size: int
    nodes: set[str] = field(default_factory=set)
    num_nodes: int = 0


HostPortKey = tuple[str, int]  # (protocol, port)


class HostPortInfo:
    """Used host ports per IP (``framework.HostPortInfo``); "" and 0.0.0.0 mean all addresses.

    A set, as in kube-scheduler: removing one of two pods that declared the same port frees it.
    Ports <= 0 are ignored, as ``HostPortInfo.Add/Remove/CheckConflict`` do.
    """

    __slots__ = ("ports",)

    def __init__(self) -> None:
        self.ports: dict[str, set[HostPortKey]] = {}

    def add(self, ip: str, protocol: str, port: int) -> None:
        """Record a used port."""
        if port <= 0:
            return
        self.ports.setdefault(ip or "0.0.0.0", set()).add((protocol or "TCP", port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        """Release a used port."""
        if port <= 0:
            return
        ip = ip or "0.0.0.0"
        per_ip = self.ports.get(ip)
        if per_ip is None:
            return
        per_ip.discard((protocol or "TCP", port))
        if not per_ip:
            del self.ports[ip]

    def conflicts(self, ip: str, protocol: str, port: int) -> bool:
        """``CheckConflict``: same protocol/port on the same IP, or either side is 0.0.0.0."""
        if port <= 0:
            return False
        ip = ip or "0.0.0.0"
        key = (protocol or "TCP", port)
        if ip == "0.0.0.0":
            return any(key in per_ip for per_ip in self.ports.values())
        for used_ip in (ip, "0.0.0.0"):
            per_ip = self.ports.get(used_ip)
            if per_ip is not None and key in per_ip:
                return True
        return False

    def clone(self) -> HostPortInfo:
        """A copy."""
        c = HostPortInfo()
        c.ports = {ip: set(v) for ip, v in self.ports.items()}
        return c

    def __len__(self) -> int:
        return sum(len(v) for v in self.ports.values())


def _remove_in_turn(pods: list[PodInfo], removed: Sequence[PodInfo]) -> list[PodInfo]:
    """Remove each of ``removed`` (by UID) from ``pods`` in turn, in place, swapping the last
    element into its place as ``RemovePod`` does; the entries taken out, in that order (those
    not in ``pods`` are skipped)."""
    index = {p.pod.uid: i for i, p in enumerate(pods)}
    taken: list[PodInfo] = []
    for pi in removed:
        i = index.pop(pi.pod.uid, None)
        if i is None:
            continue
        taken.append(pods[i])
        last = pods.pop()
        if i < len(pods):
            pods[i] = last
            index[last.pod.uid] = i
    return taken


class NodeInfo:
    """A node with the pods on it and their aggregated requests (``framework.NodeInfo``).

    ``node`` is None for a ghost: a node deleted while the cache still holds pods on it.
    """

    __slots__ = (
        "allocatable",
        "generation",
        "image_states",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node | None = None, pods: Iterable[PodInfo] = ()) -> None:
        self.node: Node | None = None
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.generation = next_generation()
        if node is not None:
            self.set_node(node)
        for p in pods:
            self.add_pod_info(p)

    @property
    def name(self) -> str:
        """The node's name ("" for a ghost)."""
        return self.node.name if self.node is not None else ""

    def set_node(self, node: Node) -> None:
        """Set the node object; allocatable is recomputed."""
        self.node = node
        self.allocatable = Resource.from_list(node.allocatable)
        self.generation = next_generation()

    def remove_node(self) -> None:
        """Make this a ghost (pods remain until removed)."""
        self.node = None
        self.generation = next_generation()

    def add_pod_info(self, pod_info: PodInfo) -> None:
        """``AddPodInfo``: append the pod and add its requests, ports and affinity lists."""
        self.pods.append(pod_info)
        if pod_info.has_affinity:
            self.pods_with_affinity.append(pod_info)
        if pod_info.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pod_info)
        self._update(pod_info, 1)

    def add_pod(self, pod: Pod) -> None:
        """Add a pod (wrapping it in a PodInfo)."""
        self.add_pod_info(PodInfo(pod))

    def remove_pod(self, pod: Pod) -> bool:
        """``RemovePod`` by UID, swap-with-last as kube-scheduler; False if it was not here."""
        uid = pod.uid
        for lst in (self.pods_with_affinity, self.pods_with_required_anti_affinity):
            for i, p in enumerate(lst):
                if p.pod.uid == uid:
                    lst[i] = lst[-1]
                    lst.pop()
                    break
        pods = self.pods
        for i, p in enumerate(pods):
            if p.pod.uid == uid:
                pods[i] = pods[-1]
                pods.pop()
                self._update(p, -1)
                return True
        return False

    def undo_add_pod_info(self, pod_info: PodInfo) -> None:
        """Take back the last :meth:`add_pod_info` (of ``pod_info``): the state :meth:`remove_pod`
        would leave, without its searches, since the pod is last in each list it went into (the
        preemption dry run's failed reprieve). Falls back to :meth:`remove_pod` otherwise."""
        pods = self.pods
        if not pods or pods[-1] is not pod_info:
            self.remove_pod(pod_info.pod)
            return
        pods.pop()
        if pod_info.has_affinity:
            self.pods_with_affinity.pop()
        if pod_info.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.pop()
        self._update(pod_info, -1)

    def _update(self, pod_info: PodInfo, sign: int) -> None:
        self.requested.add(pod_info.requests, sign)
        self.non_zero_requested.milli_cpu += sign * pod_info.non0_cpu
        self.non_zero_requested.memory += sign * pod_info.non0_mem
        for port in pod_info.pod.host_ports():
            if sign > 0:
                self.used_ports.add(port.host_ip, port.protocol, port.host_port)
            else:
                self.used_ports.remove(port.host_ip, port.protocol, port.host_port)
        self.generation = next_generation()

    def snapshot(self) -> NodeInfo:
        """A copy for the snapshot (``SnapshotConcrete``): lists and aggregates copied, pods shared."""
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = self.used_ports.clone()
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable
        c.image_states = self.image_states
        c.generation = self.generation
        return c

    clone = snapshot

    def snapshot_without(self, removed: Sequence[PodInfo]) -> NodeInfo:
        """A copy with ``removed`` (pods on this node) taken out, as :meth:`remove_pod` on each in
        turn would leave it (the same swap-with-last order of ``pods`` and its affinity lists, the
        same aggregates), in one pass: the preemption dry run's first step when no PreFilter
        extension has to see each removal. This NodeInfo is not changed."""
        c = self.snapshot()
        if c.pods_with_affinity:
            _remove_in_turn(c.pods_with_affinity, removed)
        if c.pods_with_required_anti_affinity:
            _remove_in_turn(c.pods_with_required_anti_affinity, removed)
        requested = c.requested
        non_zero = c.non_zero_requested
        for pi in _remove_in_turn(c.pods, removed):
            requested.add(pi.requests, -1)
            non_zero.milli_cpu -= pi.non0_cpu
            non_zero.memory -= pi.non0_mem
            for port in pi.pod.host_ports():
                c.used_ports.remove(port.host_ip, port.protocol, port.host_port)
        c.generation = next_generation()
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)})"
