"""DRA against the API server: the resource.k8s.io/v1 informers and the claim writer
(kube-scheduler's ResourceClaim/ResourceSlice/DeviceClass informers and the client calls of the
DynamicResources plugin's PreBind, PostFilter and Unreserve).

The informers feed the engine's ``ClusterObjects`` (whose DRA store parses them); the writer
PUTs a claim (to add the finalizer) and its status subresource, as the plugin's ``Update`` and
``UpdateStatus`` calls do, creates and deletes the claim for a pod's extended resources, and
patches the pod's ``status.extendedResourceClaimStatus``. A 409 is reported as a conflict, which
the plugin retries after re-reading the claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from app.api.decoding import loads_without_managed_fields
from app.api.errors import FieldError
from app.api.objects import Pod
from app.api.resource import FINALIZER, ResourceClaim, parse_resource_claim
from app.framework.dra import ClaimWriteError, retry_on_conflict
from app.kube.client import KubeClient, KubeError
from app.kube.informer import ResourceType
from app.kube.podstatus import PodStatusWriter

__all__ = ["DRA_RESOURCES", "ApiClaimWriter"]

_BASE = "/apis/resource.k8s.io/v1"
HTTP_CONFLICT = 409
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


def _claims_path(namespace: str) -> str:
    return f"{_BASE}/namespaces/{quote(namespace, safe='')}/resourceclaims"


def _claim_path(namespace: str, name: str) -> str:
    return f"{_claims_path(namespace)}/{quote(name, safe='')}"


def _as_claim(raw: dict[str, Any]) -> ResourceClaim:
    raw.setdefault("apiVersion", "resource.k8s.io/v1")
    raw.setdefault("kind", "ResourceClaim")
    try:
        return parse_resource_claim(raw)
    except FieldError as err:
        raise ClaimWriteError(str(err)) from None


class ApiClaimWriter:
    """Claim writes through the API server (``berth run``)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.pod_status = PodStatusWriter(client)

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        try:
            status, data = self.client.request(method, path, body=body)
        except KubeError as err:
            raise ClaimWriteError(err.message, conflict=err.status == HTTP_CONFLICT) from None
        if not 200 <= status < 300:
            raise ClaimWriteError(
                KubeError.from_response(status, data).message, conflict=status == HTTP_CONFLICT
            )
        # The written claim is what the store assumes until the informer's copy comes: without
        # its managedFields, as the informer delivers claims (nothing reads them).
        decoded = loads_without_managed_fields(data)
        if not isinstance(decoded, dict):
            raise ClaimWriteError(f"{method} {path}: expected a ResourceClaim")
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
        path = _claim_path(claim.namespace, claim.name)
        if finalizers is not None:
            raw["metadata"] = {**dict(raw.get("metadata") or {}), "finalizers": finalizers}
            raw = self._call("PUT", path, raw)
            raw.setdefault("apiVersion", "resource.k8s.io/v1")
            raw.setdefault("kind", "ResourceClaim")
        raw["status"] = dict(status)
        return _as_claim(self._call("PUT", path + "/status", raw))

    def get(self, namespace: str, name: str) -> ResourceClaim:
        """``Get`` of the claim."""
        return _as_claim(self._call("GET", _claim_path(namespace, name)))

    def create(self, raw: Mapping[str, Any]) -> ResourceClaim:
        """``Create`` in the claim's namespace."""
        meta = raw.get("metadata")
        namespace = str(meta.get("namespace") or "default") if isinstance(meta, Mapping) else "default"
        body = {**dict(raw), "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"}
        return _as_claim(self._call("POST", _claims_path(namespace), body))

    def delete(self, claim: ResourceClaim) -> None:
        """``deleteClaim``: remove the delete-protection finalizer with ``Update`` (re-reading the
        claim after a conflict, client-go's ``retry.DefaultRetry``), then ``Delete``."""

        def remove_finalizer(refresh: bool) -> None:
            current = self.get(claim.namespace, claim.name) if refresh else claim
            raw = {**dict(current.raw), "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"}
            raw["metadata"] = {
                **dict(raw.get("metadata") or {}),
                "finalizers": [f for f in current.finalizers if f != FINALIZER],
            }
            try:
                self._call("PUT", _claim_path(claim.namespace, claim.name), raw)
            except ClaimWriteError as err:
                raise ClaimWriteError(
                    f"update resourceclaim {claim.namespace}/{claim.name}: {err}", conflict=err.conflict
                ) from None

        retry_on_conflict(remove_finalizer)
        self._call("DELETE", _claim_path(claim.namespace, claim.name))

    def record_extended_resource_claim(self, pod: Pod, status: Mapping[str, Any]) -> None:
        """``PatchPodStatus`` with ``status.extendedResourceClaimStatus``."""
        old = pod.raw.get("status")
        new_status = {
            **(dict(old) if isinstance(old, Mapping) else {}),
            "extendedResourceClaimStatus": dict(status),
        }
        try:
            self.pod_status.patch_status(pod, new_status)
        except KubeError as err:
            raise ClaimWriteError(
                f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {err.message}"
            ) from None
