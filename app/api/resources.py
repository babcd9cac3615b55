"""Pod effective requests, as ``k8s.io/component-helpers/resource.PodRequests`` computes them."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from app.api.objects import Container, Pod, ResourceList
from app.api.validation import is_extended_resource_name

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what scoring assumes for a
# container that does not say.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
NON_MISSING_DEFAULTS: ResourceList = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}


def is_hugepages(name: str) -> bool:
    """``hugepages-*`` resources."""
    return name.startswith("hugepages-")


@lru_cache(maxsize=1024)
def is_scalar_resource(name: str) -> bool:
    """``IsScalarResourceName``: extended, hugepages, prefixed-native and attachable-volumes resources.

    Extended means ``IsExtendedResourceName``, which also requires ``requests.<name>`` to be a
    qualified name (so ``Example.com/gpu`` or ``a/b/c`` are not scalar resources).
    """
    if is_hugepages(name) or name.startswith("attachable-volumes-"):
        return True
    if "kubernetes.io/" in name:
        return True  # prefixed native resource
    return is_extended_resource_name(name)


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


def is_supported_pod_level_resource(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and hugepages-*."""
    return name in (CPU, MEMORY) or is_hugepages(name)


def is_pod_level_requests_set(pod: Pod) -> bool:
    """``IsPodLevelRequestsSet``: spec.resources.requests names a supported resource."""
    return any(is_supported_pod_level_resource(name) for name in pod.pod_requests)


def pod_requests(pod: Pod, non_missing: ResourceList | None = None) -> ResourceList:
    """The pod's effective requests (containers, sidecar/regular init containers, pod-level, overhead).

    ``non_missing`` is ``NonMissingContainerRequests``: every container (regular or init) that
    does not request one of its resources counts as requesting the given amount; an explicit 0
    stays 0. Pod-level requests then override the resources they set.
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
    # Pod-level resources (PodLevelResources, on in v1.36) override cpu, memory and hugepages.
    for name, value in pod.pod_requests.items():
        if is_supported_pod_level_resource(name):
            reqs[name] = value
    if pod.overhead:
        _add(reqs, pod.overhead)
    return reqs
