"""resource.k8s.io/v1 objects one test creates on the real API server, as a DRA driver and its user would.

Shared by the DRA tests under ``tests/kube`` (the plugin's writes) and ``tests/e2e`` (``berth run``):
DeviceClasses and ResourceSlices are cluster-scoped and deleted by :meth:`DraObjects.cleanup`; claims
and templates live in the test's namespace, which is never deleted (no namespace controller runs).
"""

from __future__ import annotations

import uuid
from typing import Any

from kubernetes import client

GROUP, VERSION = "resource.k8s.io", "v1"
API_VERSION = f"{GROUP}/{VERSION}"


class DraObjects:
    """One test's DRA objects, through the generic custom-objects API, for a driver of its own.

    Each ``create`` method returns the object as the API server stored it (defaults, uid, resourceVersion).
    """

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.namespace = namespace
        self.suffix = uuid.uuid4().hex[:8]
        self.driver = f"gpu-{self.suffix}.example.com"
        self.cluster_scoped: list[tuple[str, str]] = []

    def _create_cluster_scoped(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        got: dict[str, Any] = self.custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
        self.cluster_scoped.append((plural, body["metadata"]["name"]))
        return got

    def _create_namespaced(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        got: dict[str, Any] = self.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, plural, body
        )
        return got

    def device_class(self, name: str, *selectors: str, extended_resource_name: str = "") -> dict[str, Any]:
        """A DeviceClass of this test's driver's devices that also pass the CEL ``selectors``."""
        expressions = [f'device.driver == "{self.driver}"', *selectors]
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in expressions]}
        if extended_resource_name:
            spec["extendedResourceName"] = extended_resource_name
        body = {"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}
        return self._create_cluster_scoped("deviceclasses", body)

    def slice(self, node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
        """The driver's ResourceSlice for ``node``: one pool named after the node, holding ``devices``."""
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{self.driver}"},
            "spec": {
                "driver": self.driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
        return self._create_cluster_scoped("resourceslices", body)

    def claim(
        self, name: str, device_class: str, count: int = 1, constraints: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """A ResourceClaim for ``count`` devices of ``device_class`` (request ``dev``)."""
        devices: dict[str, Any] = {
            "requests": [{"name": "dev", "exactly": {"deviceClassName": device_class, "count": count}}]
        }
        if constraints:
            devices["constraints"] = constraints
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {"devices": devices},
        }
        return self._create_namespaced("resourceclaims", body)

    def template(self, name: str, device_class: str) -> dict[str, Any]:
        """A ResourceClaimTemplate for one device of ``device_class`` (request ``dev``)."""
        claim_spec = {
            "devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": device_class}}]}
        }
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"spec": claim_spec},
        }
        return self._create_namespaced("resourceclaimtemplates", body)

    def read_claim(self, name: str) -> dict[str, Any]:
        """The claim as stored now."""
        got: dict[str, Any] = self.custom.get_namespaced_custom_object(
            GROUP, VERSION, self.namespace, "resourceclaims", name
        )
        return got

    def list_claims(self) -> list[dict[str, Any]]:
        """Every claim in the test's namespace."""
        got = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "resourceclaims")
        items: list[dict[str, Any]] = got["items"]
        return items

    def label_claim(self, name: str) -> None:
        """Another writer's update: the claim's resourceVersion moves on."""
        claim = self.read_claim(name)
        claim["metadata"].setdefault("labels", {})["touched-by"] = "someone-else"
        self.custom.replace_namespaced_custom_object(
            GROUP, VERSION, self.namespace, "resourceclaims", name, claim
        )

    def release(self, name: str) -> None:
        """What the resourceclaim controller does once the claim's pod is gone: clear its status."""
        claim = self.read_claim(name)
        claim["status"] = {}
        self.custom.replace_namespaced_custom_object_status(
            GROUP, VERSION, self.namespace, "resourceclaims", name, claim
        )

    def cleanup(self) -> None:
        """Delete the cluster-scoped objects (one already gone is fine)."""
        for plural, name in self.cluster_scoped:
            try:
                self.custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
            except client.ApiException as err:
                if err.status != 404:
                    raise
