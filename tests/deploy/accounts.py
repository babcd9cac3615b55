"""ServiceAccounts, their tokens and their roles on the test control plane (as the admin, with berth's client)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deploy.capabilities import DENIED, Capability
from deploy.manifests import token_kubeconfig
from server.rbac import RBAC, create

from app.kube.client import KubeClient, KubeError
from kube.controlplane import LocalControlPlane

PROPAGATION_TIMEOUT = 20.0
"""How long the API server's RBAC authorizer may take to see new roles and bindings (its informers)."""


def grant(
    kc: KubeClient,
    namespace: str,
    service_account: str,
    cluster_rules: Sequence[dict[str, Any]],
    namespace_rules: Sequence[dict[str, Any]],
) -> None:
    """Create the ServiceAccount with a ClusterRole of ``cluster_rules`` and a Role (in ``namespace``) of
    ``namespace_rules``, each bound to it: the shape of the manifests' RBAC, with other rules."""
    create(kc, f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": service_account}})
    subject = {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}
    name = f"{namespace}-{service_account}"
    if cluster_rules:
        _bound_role(kc, RBAC, "ClusterRole", name, cluster_rules, subject)
    if namespace_rules:
        _bound_role(kc, f"{RBAC}/namespaces/{namespace}", "Role", name, namespace_rules, subject)


def _bound_role(
    kc: KubeClient,
    prefix: str,
    kind: str,
    name: str,
    rules: Sequence[dict[str, Any]],
    subject: dict[str, str],
) -> None:
    """A Role or ClusterRole ``name`` of ``rules``, and its binding (same name) to ``subject``."""
    create(kc, f"{prefix}/{kind.lower()}s", {"metadata": {"name": name}, "rules": list(rules)})
    create(
        kc,
        f"{prefix}/{kind.lower()}bindings",
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
            "subjects": [subject],
        },
    )


def client_for(
    control_plane: LocalControlPlane, directory: Path, name: str, bearer: str
) -> tuple[Path, KubeClient]:
    """A kubeconfig authenticating with ``bearer``, and berth's client made from it."""
    path = token_kubeconfig(
        directory / f"{name}.kubeconfig", control_plane.server, control_plane.ca_file, bearer, name
    )
    return path, KubeClient.from_config(str(path))


def outcomes(
    client: KubeClient, namespace: str, caps: Sequence[Capability]
) -> dict[Capability, tuple[int, str]]:
    """Every capability's ``(status, message)`` as ``client``'s identity."""
    return {cap: cap.send(client, namespace) for cap in caps}


def wait_readable(client: KubeClient, path: str) -> None:
    """Wait until ``client``'s identity may GET ``path`` (a binding just applied reaches the authorizer's
    cache within moments); an AssertionError with the last refusal after the propagation timeout."""
    deadline = time.monotonic() + PROPAGATION_TIMEOUT
    while True:
        try:
            client.get_json(path)
            return
        except KubeError as err:
            if err.status not in DENIED or time.monotonic() > deadline:
                raise AssertionError(f"GET {path}: {err}") from err
        time.sleep(0.2)


def settle(
    client: KubeClient, namespace: str, allowed: Sequence[Capability]
) -> dict[Capability, tuple[int, str]]:
    """Wait until every ``allowed`` capability is authorized (new bindings reach the authorizer's cache
    within moments); their outcomes, or an AssertionError naming the ones still refused."""
    deadline = time.monotonic() + PROPAGATION_TIMEOUT
    while True:
        got = outcomes(client, namespace, allowed)
        refused = {str(c): v for c, v in got.items() if v[0] in DENIED}
        if not refused:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"still refused after {PROPAGATION_TIMEOUT:.0f}s: {refused}")
        time.sleep(0.2)
