"""The secure port against the real control plane: every route, every kind of caller.

berth serve's secure listener is built from its flags by ``build_secure_server`` (the path
``berth run`` uses too), with TokenReview and SubjectAccessReview through ``--kubeconfig``:

- no credentials → 401, except the always-allowed probes;
- a ServiceAccount token without RBAC → 403 naming the ServiceAccount user (except /version, which
  the default ClusterRole ``system:public-info-viewer`` grants to every authenticated user);
- a ServiceAccount token whose ClusterRole grants the non-resource URLs → 200;
- a client certificate from ``--client-ca-file`` → its CN is the user (403 without RBAC, 200 with);
- a client certificate from another CA → the TLS handshake fails, on every route.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from server.conftest import cluster_engine
from server.pki import CA, client_context, request
from server.rbac import grant_non_resource_urls, service_account_token

from app.cli.main import build_parser
from app.cli.serving import build_secure_server
from app.config import dump_config
from app.kube.client import KubeClient
from app.server import HttpServer, create_app
from kube.controlplane import LocalControlPlane, free_ports

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]
BIND = {"PodName": "p", "PodNamespace": "default", "PodUID": "u", "Node": "n1"}
ROUTES: list[tuple[str, str, Any]] = [
    ("POST", "/filter", json.loads((ROOT / "examples/filter-nodenames.json").read_text())),
    ("POST", "/prioritize", json.loads((ROOT / "examples/prioritize.json").read_text())),
    ("POST", "/preempt", json.loads((ROOT / "examples/preempt.json").read_text())),
    ("POST", "/bind", BIND),
    ("GET", "/metrics", None),
    ("GET", "/configz", None),
    ("GET", "/version", None),
    ("GET", "/docs", None),
    ("GET", "/openapi.json", None),
    ("GET", "/healthz", None),
    ("GET", "/livez", None),
    ("GET", "/readyz", None),
]
PROBES = {"/healthz", "/livez", "/readyz"}
# The default ClusterRole system:public-info-viewer grants GET /version to every authenticated user.
PUBLIC_INFO = {"/version"}
GRANTED = [path for _, path, _ in ROUTES if path not in PROBES]


@dataclass
class Secured:
    server: HttpServer
    namespace: str
    tokens: dict[str, str]
    certs: dict[str, tuple[Path, Path]]

    def call(self, method: str, path: str, body: Any, caller: str) -> tuple[int, Any]:
        """One request as ``caller``: ``anonymous``, ``token:<sa>`` or ``cert:<name>``."""
        headers: dict[str, str] = {}
        cert = None
        if caller.startswith("token:"):
            headers["Authorization"] = f"Bearer {self.tokens[caller[6:]]}"
        elif caller.startswith("cert:"):
            cert = self.certs[caller[5:]]
        url = f"https://127.0.0.1:{self.server.port}{path}"
        return request(url, body=body, method=method, headers=headers, ctx=client_context(cert))


@pytest.fixture(scope="module")
def secured(control_plane: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    d = tmp_path_factory.mktemp("auth")
    clients, other = CA.create(d, "clients"), CA.create(d, "other")
    tag = uuid.uuid4().hex[:8]
    namespace = f"auth-{tag}"
    with KubeClient.from_config(str(control_plane.kubeconfig)) as kc:
        kc.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
        tokens = {sa: service_account_token(kc, namespace, sa) for sa in ("reader", "nobody")}
        grant_non_resource_urls(
            kc,
            f"berth-auth-{tag}",
            [
                {"kind": "ServiceAccount", "name": "reader", "namespace": namespace},
                {"kind": "User", "name": "carol"},
            ],
            GRANTED,
            ["get", "post"],
        )
    certs = {
        "alice": clients.issue(d, "alice", ("team-a",)),
        "carol": clients.issue(d, "carol"),
        "other-ca": other.issue(d, "carol"),
    }
    (port,) = free_ports(1)
    args = build_parser().parse_args(
        [
            "serve",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--secure-port",
            str(port),
            "--bind-address",
            "127.0.0.1",
            "--anonymous-auth=false",
            "--client-ca-file",
            str(clients.cert_file),
            # Denials are not cached, so the wait below for the new RoleBinding to apply is short.
            "--authorization-webhook-cache-unauthorized-ttl=0s",
        ]
    )
    engine = cluster_engine()
    app = create_app(engine, profile=None, config_dump=dump_config(engine.cfg), version="0.1.0")
    server = build_secure_server(args, app, name="berth")
    server.start()
    made = Secured(server, namespace, tokens, certs)
    try:
        deadline = time.monotonic() + 30
        while made.call("GET", "/metrics", None, "cert:carol")[0] != 200:  # RBAC caches catch up
            assert time.monotonic() < deadline, "the ClusterRoleBinding never applied"
            time.sleep(0.2)
        yield made
    finally:
        server.shutdown()


CALLERS = ["anonymous", "token:nobody", "token:reader", "cert:alice", "cert:carol"]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[r[1] for r in ROUTES])
@pytest.mark.parametrize("caller", CALLERS)
def test_route_by_caller(secured: Secured, caller: str, method: str, path: str, body: Any) -> None:
    status, answer = secured.call(method, path, body, caller)
    users = {
        "token:nobody": f"system:serviceaccount:{secured.namespace}:nobody",
        "cert:alice": "alice",
    }
    if path in PROBES or caller in ("token:reader", "cert:carol"):
        assert status == 200, answer
    elif caller == "anonymous":
        assert (status, answer["reason"]) == (401, "Unauthorized")
    elif path in PUBLIC_INFO:
        assert status == 200, answer  # the API server's own RBAC defaults decide, through the SAR
    else:
        assert status == 403, answer
        assert answer["message"] == f'forbidden: User "{users[caller]}" cannot {method.lower()} path "{path}"'


@pytest.mark.parametrize("path", ["/healthz", "/filter", "/metrics"])
def test_a_certificate_from_another_ca_never_gets_an_http_answer(secured: Secured, path: str) -> None:
    with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
        secured.call("GET", path, None, "cert:other-ca")


def test_the_verbs_answer_for_real_when_allowed(secured: Secured) -> None:
    status, answer = secured.call("POST", "/filter", ROUTES[0][2], "token:reader")
    assert status == 200 and answer["Error"] == ""
    status, answer = secured.call("POST", "/bind", BIND, "cert:carol")
    assert status == 200 and "no cluster connection" in answer["Error"]  # this app has no binder
