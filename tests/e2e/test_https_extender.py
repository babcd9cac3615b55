"""A stock kube-scheduler calling berth's /filter, /prioritize and /bind over HTTPS, end to end.

berth serves its secure port with a certificate it generated into ``--cert-dir``, which the
kube-scheduler's ``tlsConfig.caFile`` trusts; kube-scheduler presents a client certificate
(``tlsConfig.certFile``/``keyFile``) signed by berth's ``--client-ca-file``, and a ClusterRole grants
its CN the verbs' non-resource URLs (berth asks the API server with a SubjectAccessReview).
Without the client certificate the same kube-scheduler is refused (401: anonymous access is off, as
on a non-loopback bind address) and the pod stays pending with a FailedScheduling event.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.cluster import WAIT, Cluster
from e2e.stack import BerthServer, ExtenderEntry, KubeScheduler, scheduler_config
from server.pki import CA
from server.rbac import grant_non_resource_urls

from app.kube.client import KubeClient
from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

CLIENT_CN = "berth-e2e-kube-scheduler"
WITH_CERT, WITHOUT_CERT = "berth-https", "berth-https-nocert"


@pytest.fixture(scope="module")
def client_cert(e2e_dir: Path, control_plane: LocalControlPlane) -> tuple[Path, tuple[Path, Path]]:
    """The client CA file and kube-scheduler's certificate, whose CN may POST the verbs."""
    ca = CA.create(e2e_dir / "extender-pki", "extender-clients")
    with KubeClient.from_config(str(control_plane.kubeconfig)) as kc:
        grant_non_resource_urls(
            kc,
            "berth-e2e-extender-client",
            [{"kind": "User", "name": CLIENT_CN}],
            ["/filter", "/prioritize", "/preempt", "/bind"],
            ["post"],
        )
    return ca.cert_file, ca.issue(e2e_dir / "extender-pki", CLIENT_CN)


@pytest.fixture(scope="module")
def https_berth(
    control_plane: LocalControlPlane, e2e_dir: Path, client_cert: tuple[Path, tuple[Path, Path]]
) -> Iterator[BerthServer]:
    server = BerthServer(
        control_plane.kubeconfig,
        e2e_dir,
        # Anonymous off, as it is by default on a non-loopback --bind-address (this one is 127.0.0.1).
        ["--client-ca-file", str(client_cert[0]), "--anonymous-auth=false", "-v", "3"],
        name="berth-https",
        https=True,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def start_scheduler(
    cp: LocalControlPlane, e2e_dir: Path, berth: BerthServer, name: str, cert: tuple[Path, Path] | None
) -> KubeScheduler:
    tls: dict[str, Any] = {"caFile": str(berth.ca_file)}
    if cert is not None:
        tls |= {"certFile": str(cert[0]), "keyFile": str(cert[1])}
    entry = ExtenderEntry(berth.secure_url, enable_https=True, tls_config=tls)
    config = scheduler_config(cp.kubeconfig, [entry], scheduler_name=name)
    return KubeScheduler(cp.bin_dir, cp.kubeconfig, e2e_dir, config, name).start()


def wait_nodes_known(berth: BerthServer, nodes: list[str]) -> None:
    """berth's cache has the test's nodes (else its filter would fail them as unknown)."""
    probe = {
        "metadata": {"name": "probe", "namespace": "default", "uid": "probe"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    deadline = time.monotonic() + WAIT
    while berth.post("filter", {"Pod": probe, "NodeNames": nodes})["FailedNodes"]:
        assert time.monotonic() < deadline, "berth's cache never saw the test's nodes"
        time.sleep(0.1)


def test_pods_are_scheduled_through_the_https_verbs_with_a_client_certificate(
    control_plane: LocalControlPlane,
    e2e_dir: Path,
    https_berth: BerthServer,
    client_cert: tuple[Path, tuple[Path, Path]],
    cluster: Cluster,
) -> None:
    nodes = [cluster.create_node("a"), cluster.create_node("b")]
    wait_nodes_known(https_berth, nodes)
    scheduler = start_scheduler(control_plane, e2e_dir, https_berth, WITH_CERT, client_cert[1])
    try:
        for name in ("p1", "p2"):
            cluster.create_pod(name, scheduler_name=WITH_CERT)
            assert cluster.wait_bound(name) in nodes
    finally:
        scheduler.stop()
    log = https_berth.log.read_text()
    for pod in ("p1", "p2"):
        assert any(
            "Successfully bound pod to node" in line and f'pod="{cluster.namespace}/{pod}"' in line
            for line in log.splitlines()
        ), f"{pod} was not bound by berth's /bind"
    for verb in ("/filter", "/prioritize", "/bind"):
        assert any(
            '"HTTP" verb="POST"' in line
            and f'URI="{verb}"' in line
            and f'user="{CLIENT_CN}"' in line
            and "resp=200" in line
            for line in log.splitlines()
        ), f"no authenticated 200 for {verb} in berth's log"


def test_without_the_client_certificate_kube_scheduler_cannot_reach_the_verbs(
    control_plane: LocalControlPlane, e2e_dir: Path, https_berth: BerthServer, cluster: Cluster
) -> None:
    nodes = [cluster.create_node("a")]
    wait_nodes_known(https_berth, nodes)
    scheduler = start_scheduler(control_plane, e2e_dir, https_berth, WITHOUT_CERT, None)
    try:
        cluster.create_pod("p", scheduler_name=WITHOUT_CERT)
        message = cluster.wait_event("p", "FailedScheduling", "code 401")
    finally:
        scheduler.stop()
    assert f"{https_berth.secure_url}/filter" in message
    assert cluster.read_pod("p").spec.node_name is None
