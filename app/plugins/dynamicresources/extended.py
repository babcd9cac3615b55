"""Extended resources backed by DRA (DRAExtendedResource, ``extendeddynamicresources.go``, v1.36.3).

A DeviceClass with ``spec.extendedResourceName`` (and every class through its implicit name
``deviceclass.resource.kubernetes.io/<class>``) backs an extended resource: a pod asking for it in
``resources.requests`` gets its devices from ResourceSlices on nodes whose allocatable lacks the
resource (a device plugin's node keeps serving it the classic way). The scheduler keeps one
special claim per pod for all such resources:

- PreFilter: the claim a previous cycle created for the pod (annotation
  ``resource.kubernetes.io/extended-resource-claim: "true"``, the pod as controller), else an
  in-memory claim named ``<extended-resources>`` with no requests;
- Filter: per node, the claim's requests are built from the resources the node does not provide
  itself (one ``container-<i>-request-<j>`` per container, init containers reusing later
  requests), and allocated with the user's claims;
- PreBind: the claim is created (``<pod>-extended-resources-<random>``), allocated and reserved,
  and the pod's ``status.extendedResourceClaimStatus`` maps containers to requests;
- PostFilter / Unreserve: a claim created in an earlier cycle is deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.api.objects import Container, Pod
from app.api.resource import (
    ALLOCATION_MODE_EXACT_COUNT,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    RESOURCE_DEVICE_CLASS_PREFIX,
    DeviceClass,
    ResourceClaim,
    parse_resource_claim,
)
from app.api.resources import pod_requests
from app.api.validation import is_extended_resource_name
from app.framework.types import NodeInfo, Resource

#: ``specialClaimInMemName``: deliberately not a valid object name.
SPECIAL_CLAIM_NAME = "<extended-resources>"

ClassResolver = Callable[[str], DeviceClass | None]
"""``DeviceClassResolver.GetDeviceClass``: the class backing an extended resource, or None."""


def is_dra_extended_resource_name(name: str) -> bool:
    """``IsDRAExtendedResourceName``: an extended resource, or a class's implicit name."""
    return is_extended_resource_name(name) or name.startswith(RESOURCE_DEVICE_CLASS_PREFIX)


def pod_scalar_resources(pod: Pod, resolve: ClassResolver) -> dict[str, int] | None:
    """The pod's scalar requests when one of them (non-zero) is backed by a DeviceClass, else None
    (``hasDeviceClassMappedExtendedResource``)."""
    if not _names_a_class_backs(pod, resolve):
        return None  # what every pod without such a request costs: no sum of its requests
    requests = pod_requests(pod)
    if not any(
        q and is_dra_extended_resource_name(n) and resolve(n) is not None for n, q in requests.items()
    ):
        return None
    return Resource.from_list(requests).scalar


def _names_a_class_backs(pod: Pod, resolve: ClassResolver) -> bool:
    """Whether some container, init container or the overhead requests a resource a DeviceClass
    backs. The pod's effective requests name no other resource of that kind (pod-level requests
    set only cpu, memory and hugepages), so without one :func:`pod_scalar_resources` is None."""
    for containers in (pod.containers, pod.init_containers):
        for container in containers:
            for name in container.requests:
                if is_dra_extended_resource_name(name) and resolve(name) is not None:
                    return True
    return any(is_dra_extended_resource_name(name) and resolve(name) is not None for name in pod.overhead)


def find_extended_resource_claim(pod: Pod, claims: list[ResourceClaim]) -> ResourceClaim | None:
    """``findExtendedResourceClaim``: the annotated claim the pod controls."""
    for claim in claims:
        if claim.extended_resources and claim.controller_uid == pod.uid and claim.controller_name == pod.name:
            return claim
    return None


def in_memory_claim(pod: Pod) -> ResourceClaim:
    """The special claim before PreBind creates it: no requests, a temporary UID."""
    return parse_resource_claim(
        {
            "metadata": {
                "namespace": pod.namespace,
                "name": SPECIAL_CLAIM_NAME,
                "uid": str(uuid.uuid4()),
                "generateName": f"{pod.name}-extended-resources-",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
                ],
                "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            },
            "spec": {},
        }
    )


@dataclass(slots=True)
class NodeClaim:
    """The special claim as one node needs it, and the pod's container-to-request mappings."""

    claim: ResourceClaim
    mappings: list[dict[str, str]]


class Unfit(Exception):
    """``filterExtendedResources``' Unschedulable reasons."""


def resources_needing_dra(
    claim: ResourceClaim, scalars: Mapping[str, int], node_info: NodeInfo, resolve: ClassResolver
) -> dict[str, int]:
    """The extended resources this node must provide through DRA (its allocatable has none);
    raises Unfit for a stale claim or a resource neither the node nor a class provides."""
    if claim.requests:
        raise Unfit("cannot schedule extended resource claim")
    needed: dict[str, int] = {}
    allocatable = node_info.allocatable.scalar
    for name, quantity in scalars.items():
        if not quantity or not is_dra_extended_resource_name(name):
            continue
        if resolve(name) is not None and not allocatable.get(name):
            needed[name] = quantity
        elif name not in allocatable:
            raise Unfit("cannot fit resource")
    return needed


def node_claim(
    pod: Pod, claim: ResourceClaim, needed: Mapping[str, int], resolve: ClassResolver
) -> NodeClaim:
    """The special claim with the requests for ``needed`` (``createRequestsAndMappings``)."""
    requests, mappings = requests_and_mappings(pod, needed, resolve)
    raw = dict(claim.raw)
    raw["spec"] = {"devices": {"requests": requests}}
    return NodeClaim(parse_resource_claim(raw), mappings)


def _partition(containers: list[Container], init_count: int) -> tuple[list[int], list[int]]:
    """``partitionContainerIndices``: long-lived (sidecars, regular) and short-lived init containers."""
    long_lived, short_lived = [], []
    for index, container in enumerate(containers):
        if index < init_count and not container.restartable:
            short_lived.append(index)
        else:
            long_lived.append(index)
    return long_lived, short_lived


def _request_and_mappings(
    index: int, container: Container, resource: str, class_name: str, reusable: list[dict[str, Any] | None]
) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """``createResourceRequestAndMappings``: the container's own request (None when requests it may
    reuse cover it) and its mappings."""
    quantity = container.requests.get(resource)
    if quantity is None or quantity.denominator != 1 or quantity == 0:
        return None, []  # AsInt64 fails on fractions; zero asks for nothing
    wanted = int(quantity)
    mappings: list[dict[str, str]] = []
    covered = 0
    for request in reusable:
        if request is None:
            continue
        covered += request["exactly"]["count"]
        mappings.append(
            {"containerName": container.name, "resourceName": resource, "requestName": request["name"]}
        )
        if covered >= wanted:
            return None, mappings
    position = sorted(container.requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {
            "deviceClassName": class_name,
            "allocationMode": ALLOCATION_MODE_EXACT_COUNT,
            "count": wanted - covered,
        },
    }
    mappings.append({"containerName": container.name, "resourceName": resource, "requestName": name})
    return request, mappings


def requests_and_mappings(
    pod: Pod, needed: Mapping[str, int], resolve: ClassResolver
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """``createRequestsAndMappings``: device requests sorted by name, and the mappings (per
    resource: long-lived containers', then short-lived init containers', the latter renamed to the
    largest short-lived request they share)."""
    containers = [*pod.init_containers, *pod.containers]
    long_lived, short_lived = _partition(containers, len(pod.init_containers))
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(needed):
        device_class = resolve(resource)
        if device_class is None:
            continue
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[dict[str, str]] = []
        for i in long_lived:
            request, found = _request_and_mappings(i, containers[i], resource, device_class.name, [])
            long_requests[i] = request
            long_mappings.extend(found)
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for i in short_lived:
            request, found = _request_and_mappings(
                i, containers[i], resource, device_class.name, long_requests[i:]
            )
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r["name"])
    return requests, mappings
