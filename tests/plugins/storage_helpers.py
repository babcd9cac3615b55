"""Builders for the storage plugins' tests: raw storage objects and a handle holding them."""

from __future__ import annotations

from typing import Any

from app.api.objects import Pod, parse_pod
from app.framework.types import NodeInfo
from builders import pod_dict
from fakes import FakeHandle, FakeObjects


def pv(
    name: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A raw PersistentVolume; ``status`` (a phase string) may be passed as ``phase=``."""
    phase = spec.pop("phase", None)
    meta: dict[str, Any] = {"name": name, "labels": labels or {}, "annotations": annotations or {}}
    if "resourceVersion" in spec:
        meta["resourceVersion"] = spec.pop("resourceVersion")
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}
    if phase:
        out["status"] = {"phase": phase}
    return out


def pvc(
    name: str,
    namespace: str = "default",
    annotations: dict[str, str] | None = None,
    uid: str = "",
    deleting: bool = False,
    phase: str = "",
    **spec: Any,
) -> dict[str, Any]:
    """A raw PersistentVolumeClaim."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
    }
    if phase:
        out["status"] = {"phase": phase}
    return out


def storage_class(name: str, mode: str = "Immediate", provisioner: str = "", **extra: Any) -> dict[str, Any]:
    """A raw StorageClass."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def csi_node(
    name: str, limits: dict[str, int | None], annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A raw CSINode with one driver per entry of ``limits`` (None: no allocatable count)."""
    drivers = []
    for driver, count in limits.items():
        d: dict[str, Any] = {"name": driver, "nodeID": name}
        if count is not None:
            d["allocatable"] = {"count": count}
        drivers.append(d)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"drivers": drivers},
    }


def objects(*raws: dict[str, Any]) -> FakeObjects:
    """FakeObjects holding ``raws`` by their kind."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for raw in raws:
        by_kind.setdefault(raw["kind"], []).append(raw)
    return FakeObjects(by_kind)


def handle(*raws: dict[str, Any], nodes: tuple[NodeInfo, ...] = ()) -> FakeHandle:
    """A handle over ``nodes`` whose cluster objects are ``raws``."""
    return FakeHandle(nodes, objects(*raws))


def pod_with_claims(name: str, *claims: str, namespace: str = "default", **spec: Any) -> Pod:
    """A pod with one persistentVolumeClaim volume per claim name."""
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return parse_pod(pod_dict(name, namespace, volumes=volumes, **spec))
