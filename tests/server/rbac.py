"""RBAC and ServiceAccount tokens on the real control plane, for the secure-serving tests (berth's KubeClient)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from app.kube.client import KubeClient, KubeError

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def create(kc: KubeClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` to ``path`` and return the created object."""
    status, data = kc.request("POST", path, body=body)
    if status not in (200, 201):
        raise KubeError.from_response(status, data)
    decoded: dict[str, Any] = orjson.loads(data)
    return decoded


def grant_non_resource_urls(
    kc: KubeClient, name: str, subjects: Sequence[dict[str, str]], paths: Sequence[str], verbs: Sequence[str]
) -> None:
    """A ClusterRole allowing ``verbs`` on the non-resource URLs ``paths``, bound to ``subjects``.

    A subject is ``{"kind": "User", "name": ...}`` or ``{"kind": "ServiceAccount", "name": ..., "namespace": ...}``.
    """
    create(
        kc,
        f"{RBAC}/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"nonResourceURLs": list(paths), "verbs": list(verbs)}],
        },
    )
    create(
        kc,
        f"{RBAC}/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [
                {**s, "apiGroup": "rbac.authorization.k8s.io"} if s["kind"] == "User" else dict(s)
                for s in subjects
            ],
        },
    )


def service_account_token(kc: KubeClient, namespace: str, name: str) -> str:
    """Create the ServiceAccount ``namespace/name`` and return a TokenRequest token for it."""
    create(
        kc,
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
    )
    return token(kc, namespace, name)


def token(kc: KubeClient, namespace: str, service_account: str) -> str:
    """A TokenRequest token for ``namespace/service_account`` (what the kubelet mounts into a pod)."""
    answer = create(
        kc,
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    return str(answer["status"]["token"])
