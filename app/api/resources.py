"""Pod effective requests, as ``k8s.io/component-helpers/resource.PodRequests`` computes them."""

from __future__ import annotations

from fractions import Fraction

from app.api.objects import Container, Pod, ResourceList

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what scoring assumes for a
# container that does not say.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
NON_MISSING_DEFAULTS: ResourceList = {CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), MEMORY: Fraction(DEFAULT_MEMORY_REQUEST)}


def is_hugepages(name: str) -> bool:
    """``hugepages-*`` resources."""
    return name.startswith("hugepages-")


def is_scalar_resource(name: str) -> bool:
    """``IsScalarResourceName``: extended, hugepages, prefixed-native and attachable-volumes resources."""
    if is_hugepages(name) or name.startswith("attachable-volumes-"):
        return True
    if "kubernetes.io/" in name:
        return True  # prefixed native resource
    return "/" in name and not name.startswith("requests.")  # extended resource


def _with_defaults(container: Container, defaults: ResourceList | None) -> ResourceList:
    if not defaults:
        return container.requests
    missing = [k for k in defaults if k not in container.requests]
    if not missing:
        return container.requests
    merged = dict(container.requests)
    for k in missing:
        merged[k] = defaults[k]
    return merged


def _add(into: ResourceList, other: ResourceList) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: ResourceList, other: ResourceList) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def pod_requests(pod: Pod, non_missing: ResourceList | None = None) -> ResourceList:
    """The pod's effective requests (containers, sidecar/regular init containers, pod-level, overhead).

    With ``non_missing`` (the scoring defaults), a container or pod missing cpu/memory counts as
    the default; an explicit 0 stays 0.
    """
    reqs: ResourceList = {}
    for c in pod.containers:
        _add(reqs, _with_defaults(c, non_missing))
    restartable: ResourceList = {}
    init_max: ResourceList = {}
    for c in pod.init_containers:
        requests = _with_defaults(c, non_missing)
        if c.restartable:
            _add(reqs, requests)
            _add(restartable, requests)
            effective = dict(restartable)
        else:
            effective = dict(requests)
            _add(effective, restartable)
        _max(init_max, effective)
    _max(reqs, init_max)
    if pod.pod_requests:
        # Pod-level resources (PodLevelResources, on in v1.36) override cpu, memory and hugepages.
        for name, value in pod.pod_requests.items():
            if name in (CPU, MEMORY) or is_hugepages(name):
                reqs[name] = value
        if non_missing:
            for name, default in non_missing.items():
                if name not in pod.pod_requests and not any(name in c.requests for c in pod.containers):
                    reqs[name] = reqs.get(name, default)
    if pod.overhead:
        _add(reqs, pod.overhead)
    return reqs
