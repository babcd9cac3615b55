"""DRA against the API server: the resource.k8s.io/v1 informers and the claim writer
(kube-scheduler's ResourceClaim/ResourceSlice/DeviceClass informers and the client calls of the
DynamicResources plugin's PreBind, PostFilter and Unreserve).

The informers feed the engine's ``ClusterObjects`` (whose DRA store parses them); the writer
PUTs a claim (to add the finalizer) and its status subresource, as the plugin's ``Update`` and
``UpdateStatus`` calls do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson

from app.api.errors import FieldError
from app.api.resource import ResourceClaim, parse_resource_claim
from app.framework.dra import ClaimWriteError
from app.kube.client import KubeClient, KubeError
from app.kube.informer import ResourceType

__all__ = ["DRA_RESOURCES", "ApiClaimWriter"]

_BASE = "/apis/resource.k8s.io/v1"
DEVICE_CLASSES = ResourceType("deviceclasses", "DeviceClass", "resource.k8s.io/v1", f"{_BASE}/deviceclasses")
RESOURCE_CLAIMS = ResourceType(
    "resourceclaims", "ResourceClaim", "resource.k8s.io/v1", f"{_BASE}/resourceclaims"
)
RESOURCE_CLAIM_TEMPLATES = ResourceType(
    "resourceclaimtemplates", "ResourceClaimTemplate", "resource.k8s.io/v1", f"{_BASE}/resourceclaimtemplates"
)
RESOURCE_SLICES = ResourceType(
    "resourceslices", "ResourceSlice", "resource.k8s.io/v1", f"{_BASE}/resourceslices"
)

DRA_RESOURCES: tuple[ResourceType, ...] = (
    DEVICE_CLASSES,
    RESOURCE_CLAIMS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_SLICES,
)
"""What DynamicResources reads (kube-scheduler watches all four when DRA is on, as it is in v1.36)."""


def _claim_path(claim: ResourceClaim) -> str:
    return f"{_BASE}/namespaces/{quote(claim.namespace, safe='')}/resourceclaims/{quote(claim.name, safe='')}"


class ApiClaimWriter:
    """Claim updates through the API server (``berth run``)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def _put(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        try:
            status, data = self.client.request("PUT", path, body=body)
        except KubeError as err:
            raise ClaimWriteError(err.message) from None
        if not 200 <= status < 300:
            raise ClaimWriteError(KubeError.from_response(status, data).message)
        decoded = orjson.loads(data)
        if not isinstance(decoded, dict):
            raise ClaimWriteError(f"PUT {path}: expected a ResourceClaim")
        return decoded

    def update_status(
        self, claim: ResourceClaim, status: Mapping[str, Any], finalizers: list[str] | None = None
    ) -> ResourceClaim:
        """``Update`` (finalizers) then ``UpdateStatus``, each with the claim's resourceVersion."""
        raw: dict[str, Any] = {
            **dict(claim.raw),
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
        }
        if finalizers is not None:
            raw["metadata"] = {**dict(raw.get("metadata") or {}), "finalizers": finalizers}
            raw = self._put(_claim_path(claim), raw)
            raw.setdefault("apiVersion", "resource.k8s.io/v1")
            raw.setdefault("kind", "ResourceClaim")
        raw["status"] = dict(status)
        updated = self._put(_claim_path(claim) + "/status", raw)
        updated.setdefault("kind", "ResourceClaim")
        updated.setdefault("apiVersion", "resource.k8s.io/v1")
        try:
            return parse_resource_claim(updated)
        except FieldError as err:
            raise ClaimWriteError(str(err)) from None
