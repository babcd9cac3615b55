"""Builders for DRA objects in tests, named after structured/internal/allocatortesting's helpers."""

from __future__ import annotations

from typing import Any

from app.api.resource import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)

DRIVER_A, DRIVER_B = "driver-a", "driver-b"
CLASS_A, CLASS_B = "class-a", "class-b"
NODE_1, NODE_2 = "node-1", "node-2"
REGION_1, REGION_2 = "region-1", "region-2"
POOL_1, POOL_2, POOL_3, POOL_4 = "pool-1", "pool-2", "pool-3", "pool-4"


def device_class(name: str, driver: str, config: list[dict[str, Any]] | None = None) -> DeviceClass:
    """``class(name, driver)``: selects the driver's devices."""
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if config:
        spec["config"] = config
    return parse_device_class({"metadata": {"name": name}, "spec": spec})


def exact(name: str, cls: str, count: int = 1, *selectors: str, **extra: Any) -> dict[str, Any]:
    """``request(name, class, count, selectors...)``: an ExactCount request."""
    body: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count, **extra}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": body}


def all_devices(name: str, cls: str, **extra: Any) -> dict[str, Any]:
    """An ``All`` request."""
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All", **extra}}


def sub(name: str, cls: str, count: int = 1, *selectors: str, **extra: Any) -> dict[str, Any]:
    """``subRequest(name, class, count, selectors...)``."""
    body: dict[str, Any] = {
        "name": name,
        "deviceClassName": cls,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {**body, **extra}


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    """``requestWithPrioritizedList``."""
    return {"name": name, "firstAvailable": list(subs)}


def claim_raw(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
    namespace: str = "default",
    uid: str | None = None,
    status: dict[str, Any] | None = None,
    owner_uid: str | None = None,
) -> dict[str, Any]:
    """A raw ResourceClaim."""
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}",
        "resourceVersion": "1",
    }
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}
        ]
    raw: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": devices},
    }
    if status:
        raw["status"] = status
    return raw


def claim(name: str, *requests: dict[str, Any], **kw: Any) -> ResourceClaim:
    """A parsed ResourceClaim (see :func:`claim_raw`)."""
    return parse_resource_claim(claim_raw(name, *requests, **kw))


def dev(
    name: str,
    capacity: dict[str, str] | None = None,
    attributes: dict[str, dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """``device(name, capacity, attributes)``."""
    out: dict[str, Any] = {"name": name, **extra}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        out["attributes"] = attributes
    return out


def node_label_selector(key: str, value: str) -> dict[str, Any]:
    """``nodeLabelSelector``."""
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}


def local_node_selector(node: str) -> dict[str, Any]:
    """``localNodeSelector``: the allocation can only be used on ``node``."""
    return {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }


def slice_raw(
    name: str,
    where: str | dict[str, Any] | None,
    pool: str,
    driver: str,
    *devices: dict[str, Any],
    count: int = 1,
    generation: int = 1,
    counters: dict[str, dict[str, str]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """``sliceWithDevices``: ``where`` is a node name, "all", a node selector, or None (per device)."""
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        **spec,
    }
    if isinstance(where, dict):
        body["nodeSelector"] = where
    elif where == "all":
        body["allNodes"] = True
    elif where:
        body["nodeName"] = where
    if devices:
        body["devices"] = list(devices)
    if counters:
        body["sharedCounters"] = [
            {"name": n, "counters": {k: {"value": v} for k, v in c.items()}} for n, c in counters.items()
        ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": body,
    }


def resource_slice(*args: Any, **kw: Any) -> ResourceSlice:
    """A parsed ResourceSlice (see :func:`slice_raw`)."""
    return parse_resource_slice(slice_raw(*args, **kw))


def result(request: str, driver: str, pool: str, device: str, admin: bool = False) -> dict[str, Any]:
    """``deviceAllocationResult``."""
    out: dict[str, Any] = {"request": request, "driver": driver, "pool": pool, "device": device}
    if admin:
        out["adminAccess"] = True
    return out
