"""Pod effective requests, as ``k8s.io/component-helpers/resource.PodRequests`` computes them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from app import featuregates
from app.api.objects import Container, Pod, ResourceList, parse_resource_list
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
        # A first amount is taken as it is: ``0 + v`` is the same value (and type) at the price of
        # Fraction arithmetic, and most pods have one container.
        into[k] = into[k] + v if k in into else v


def _max(into: ResourceList, other: ResourceList) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def is_supported_pod_level_resource(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and hugepages-*."""
    return name in (CPU, MEMORY) or is_hugepages(name)


def is_pod_level_requests_set(pod: Pod) -> bool:
    """``IsPodLevelRequestsSet``: spec.resources.requests names a supported resource, and the
    PodLevelResources gate is on (kube-scheduler's one caller checks it first)."""
    return (
        bool(pod.pod_requests)
        and _pod_level_enabled()
        and any(is_supported_pod_level_resource(name) for name in pod.pod_requests)
    )


def _pod_level_enabled() -> bool:
    """PodLevelResources (on in v1.36, off at ``--emulated-version=1.33``): read only for pods that
    set spec.resources, so other pods pay nothing for it."""
    return featuregates.DEFAULT.enabled("PodLevelResources")


def _effective(regular: Iterable[ResourceList], init: Iterable[tuple[ResourceList, bool]]) -> ResourceList:
    """Containers summed, sidecars (restartable init containers) added, then the max with each
    regular init container (which runs alongside the sidecars started before it)."""
    total: ResourceList = {}
    for amounts in regular:
        _add(total, amounts)
    restartable: ResourceList = {}
    init_max: ResourceList = {}
    for amounts, sidecar in init:
        if sidecar:
            _add(total, amounts)
            _add(restartable, amounts)
            effective = dict(restartable)
        else:
            effective = dict(amounts)
            _add(effective, restartable)
        _max(init_max, effective)
    _max(total, init_max)
    return total


def pod_requests(
    pod: Pod, non_missing: ResourceList | None = None, *, pod_level: bool = True
) -> ResourceList:
    """The pod's effective requests (containers, sidecar/regular init containers, pod-level, overhead).

    ``non_missing`` is ``NonMissingContainerRequests``: every container (regular or init) that
    does not request one of its resources counts as requesting the given amount; an explicit 0
    stays 0. Pod-level requests then override the resources they set, unless ``pod_level`` is false
    or the PodLevelResources gate is off (``SkipPodLevelResources``).
    """
    reqs = _effective(
        [_with_defaults(c, non_missing) for c in pod.containers],
        [(_with_defaults(c, non_missing), c.restartable) for c in pod.init_containers],
    )
    # Pod-level resources (PodLevelResources, on in v1.36) override cpu, memory and hugepages.
    for name, value in (
        pod.pod_requests.items() if pod_level and pod.pod_requests and _pod_level_enabled() else ()
    ):
        if is_supported_pod_level_resource(name):
            reqs[name] = value
    if pod.overhead:
        _add(reqs, pod.overhead)
    return reqs


def _limits(raw: Any, path: str) -> ResourceList:
    resources = raw.get("resources") if isinstance(raw, Mapping) else None
    return parse_resource_list(resources, "limits", path) if isinstance(resources, Mapping) else {}


def pod_limits(pod: Pod) -> ResourceList:
    """The pod's effective limits (``resource.PodLimits``), read from the raw pod: the scheduler
    itself only keeps requests. Overhead is added to the resources that have a limit."""
    spec = pod.raw.get("spec") or {}
    containers = spec.get("containers") or []
    init = spec.get("initContainers") or []
    limits = _effective(
        [_limits(c, f"spec.containers[{i}]") for i, c in enumerate(containers)],
        [
            (_limits(raw, f"spec.initContainers[{i}]"), parsed.restartable)
            for i, (raw, parsed) in enumerate(zip(init, pod.init_containers, strict=False))
        ],
    )
    for name, value in _limits(spec, "spec").items():
        if is_supported_pod_level_resource(name):
            limits[name] = value
    for name, value in pod.overhead.items():
        if name in limits:
            limits[name] += value
    return limits
