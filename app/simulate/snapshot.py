"""``berth snapshot``: the live cluster's scheduling-relevant objects as a state file for ``berth simulate``.

Every kind berth's plugins read is listed (paged, as the informers list them): Nodes, Pods (not the
terminated ones, as kube-scheduler's informer leaves them out), PriorityClasses, Namespaces, the
owners and budgets PodTopologySpread, SelectorSpread and preemption read (Services,
ReplicationControllers, ReplicaSets, StatefulSets, PodDisruptionBudgets), the storage kinds (PV,
PVC, StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment) and the DRA kinds
(DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice). A kind the API server does not
serve (404, e.g. DRA turned off) is left out with a warning.

What the scheduler never reads is dropped: ``metadata.managedFields``, ``resourceVersion``,
``selfLink`` and kubectl's last-applied annotation everywhere; a Node's status but its capacity,
allocatable, images and declaredFeatures; a Pod's status but its phase, nominatedNodeName, DRA
claim statuses and DisruptionTarget condition (preemption reads it). Other kinds keep their status:
claim allocations and volume phases are scheduling state.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

from app.kube.client import KubeClient, KubeError
from app.kube.dra import DRA_RESOURCES
from app.kube.informer import (
    NAMESPACES,
    NODES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICASETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFULSETS,
    STORAGE_RESOURCES,
    ResourceType,
)

__all__ = ["SNAPSHOT_RESOURCES", "Snapshot", "clean", "format_snapshot", "take_snapshot"]

PRIORITY_CLASSES = ResourceType(
    "priorityclasses", "PriorityClass", "scheduling.k8s.io/v1", "/apis/scheduling.k8s.io/v1/priorityclasses"
)
#: What a snapshot lists, in the order the state file holds it.
SNAPSHOT_RESOURCES: tuple[ResourceType, ...] = (
    PRIORITY_CLASSES,
    NAMESPACES,
    NODES,
    PODS,
    SERVICES,
    REPLICATION_CONTROLLERS,
    REPLICASETS,
    STATEFULSETS,
    POD_DISRUPTION_BUDGETS,
    *STORAGE_RESOURCES,
    *DRA_RESOURCES,
)
#: Objects per list page.
PAGE_SIZE = 500

_NOISY_METADATA = ("managedFields", "resourceVersion", "selfLink")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_NODE_STATUS = ("capacity", "allocatable", "images", "declaredFeatures")
_POD_STATUS = ("phase", "nominatedNodeName", "resourceClaimStatuses", "extendedResourceClaimStatus")
_KEPT_POD_CONDITIONS = ("DisruptionTarget",)


@dataclass(slots=True)
class Snapshot:
    """The objects listed, and one warning per kind left out."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # kind -> objects
    warnings: list[str] = field(default_factory=list)


def clean(kind: str, api_version: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The object with its kind and apiVersion set (list items lack them) and the noise dropped."""
    obj = {
        "apiVersion": api_version,
        "kind": kind,
        **{k: v for k, v in raw.items() if k not in ("apiVersion", "kind")},
    }
    meta = dict(obj.get("metadata") or {})
    for key in _NOISY_METADATA:
        meta.pop(key, None)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != _LAST_APPLIED}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    obj["metadata"] = meta
    status = obj.get("status")
    if isinstance(status, Mapping) and kind in ("Node", "Pod"):
        kept = _NODE_STATUS if kind == "Node" else _POD_STATUS
        slim = {k: status[k] for k in kept if k in status}
        conditions = [c for c in status.get("conditions") or [] if c.get("type") in _KEPT_POD_CONDITIONS]
        if kind == "Pod" and conditions:
            slim["conditions"] = conditions
        obj["status"] = slim
    return obj


def _list(client: KubeClient, resource: ResourceType) -> Iterator[dict[str, Any]]:
    """Every object of ``resource``, page by page (``limit``/``continue``)."""
    params: dict[str, str] = {"limit": str(PAGE_SIZE)}
    if resource.field_selector:
        params["fieldSelector"] = resource.field_selector
    while True:
        page = client.get_json(resource.path, params)
        for item in page.get("items") or []:
            yield clean(resource.kind, resource.api_version, item)
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return
        params["continue"] = token


def take_snapshot(client: KubeClient, resources: Sequence[ResourceType] = SNAPSHOT_RESOURCES) -> Snapshot:
    """List ``resources`` from the API server; KubeError for anything but a kind it does not serve."""
    snap = Snapshot()
    for resource in resources:
        try:
            objects = list(_list(client, resource))
        except KubeError as err:
            if err.status != 404:
                raise
            snap.warnings.append(f"{resource.resource} ({resource.api_version}) is not served: left out")
            continue
        snap.objects.extend(objects)
        snap.counts[resource.kind] = len(objects)
    return snap


def format_snapshot(snap: Snapshot, as_json: bool = False) -> str:
    """The state file: one ``v1 List`` of every object, YAML (or JSON)."""
    doc = {"apiVersion": "v1", "kind": "List", "items": snap.objects}
    if as_json:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter when it is built in
    return yaml.dump(doc, Dumper=dumper, sort_keys=False, allow_unicode=True)
