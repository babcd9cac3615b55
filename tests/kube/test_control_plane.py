"""Smoke tests of the real control plane (etcd + kube-apiserver) through the official ``kubernetes`` client."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kube.controlplane import BINARIES, LocalControlPlane, k8s_version, missing_binaries, read_versions

pytestmark = pytest.mark.kube


def make_node(name: str) -> client.V1Node:
    """A fake Node with capacity/allocatable and a Ready condition (nothing else would set them)."""
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name, labels={"kubernetes.io/hostname": name}),
        status=client.V1NodeStatus(
            capacity=resources,
            allocatable=resources,
            conditions=[client.V1NodeCondition(type="Ready", status="True")],
        ),
    )


def make_pod(name: str) -> client.V1Pod:
    """A minimal unscheduled Pod (no ServiceAccount: that admission plugin is disabled)."""
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"app": "berth-test"}),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="c",
                    image="registry.k8s.io/pause:3.10",
                    resources=client.V1ResourceRequirements(requests={"cpu": "100m", "memory": "64Mi"}),
                )
            ]
        ),
    )


def unique(prefix: str) -> str:
    """A DNS-1123 name unique within the session."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def impersonating_client(control_plane: LocalControlPlane) -> Iterator[tuple[client.ApiClient, str]]:
    """An admin ``ApiClient`` that impersonates a fresh user with no RBAC rights; yields (client, user)."""
    user = unique("nobody")
    api = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    api.set_default_header("Impersonate-User", user)
    try:
        yield api, user
    finally:
        api.close()


# ---- unit-level checks of the helpers (no API server needed) ---------------------------------------------


def test_versions_file_pins_the_kubernetes_release() -> None:
    versions = read_versions()
    assert versions["K8S_VERSION"].startswith("v1.")
    assert versions["ETCD_VERSION"].startswith("v3.6.")


def test_missing_binaries_lists_every_absent_binary(tmp_path: Path) -> None:
    assert missing_binaries(tmp_path) == list(BINARIES)


# ---- against the real control plane ---------------------------------------------------------------------


def test_apiserver_ready_and_reports_pinned_version(
    control_plane: LocalControlPlane, kube_client: client.ApiClient
) -> None:
    ctx = ssl.create_default_context(cafile=str(control_plane.ca_file))
    ctx.load_cert_chain(str(control_plane.client_cert), str(control_plane.client_key))
    with urllib.request.urlopen(f"{control_plane.server}/readyz", context=ctx, timeout=10) as resp:
        assert resp.status == 200
        assert resp.read() == b"ok"

    info = client.VersionApi(kube_client).get_code()
    assert info.git_version == k8s_version()
    assert (info.major, info.minor) == ("1", k8s_version().split(".")[1])

    names = {ns.metadata.name for ns in client.CoreV1Api(kube_client).list_namespace().items if ns.metadata}
    assert {"default", "kube-system"} <= names


def test_built_binaries_report_pinned_versions(control_plane: LocalControlPlane) -> None:
    bin_dir = control_plane.bin_dir
    for name in ("kube-apiserver", "kube-scheduler"):
        out = subprocess.run([str(bin_dir / name), "--version"], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == f"Kubernetes {k8s_version()}"
    out = subprocess.run(
        [str(bin_dir / "kubectl"), "version", "-o", "json", "--kubeconfig", str(control_plane.kubeconfig)],
        capture_output=True,
        text=True,
        check=True,
    )
    versions = json.loads(out.stdout)
    assert versions["clientVersion"]["gitVersion"] == k8s_version()
    assert versions["serverVersion"]["gitVersion"] == k8s_version()
    etcd = subprocess.run([str(bin_dir / "etcd"), "--version"], capture_output=True, text=True, check=True)
    assert "etcd Version: 3.6." in etcd.stdout


def test_node_and_pod_round_trip(kube_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(kube_client)
    node_name = unique("node")
    core.create_node(make_node(node_name))
    node = core.read_node(node_name)
    assert node.status is not None and node.status.allocatable is not None
    assert node.status.allocatable["cpu"] == "4"
    # TaintNodesByCondition is disabled, so no node.kubernetes.io/not-ready taint was added.
    assert node.spec is None or not node.spec.taints

    pod_name = unique("pod")
    core.create_namespaced_pod(namespace, make_pod(pod_name))
    pod = core.read_namespaced_pod(pod_name, namespace)
    assert pod.metadata is not None and pod.spec is not None and pod.status is not None
    assert pod.metadata.uid
    assert pod.spec.scheduler_name == "default-scheduler"
    assert not pod.spec.node_name
    assert pod.status.phase == "Pending"
    # ServiceAccount admission is disabled: no default ServiceAccount is required nor token volume injected.
    assert not pod.spec.volumes


def test_binding_sets_node_name(kube_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(kube_client)
    node_name, pod_name = unique("node"), unique("pod")
    core.create_node(make_node(node_name))
    core.create_namespaced_pod(namespace, make_pod(pod_name))

    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod_name, namespace=namespace),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node_name),
    )
    # The server answers a pods/binding POST with a Status, not a Binding; the generated model cannot
    # deserialize it, so read the raw response (style-and-ecosystem.md §B1).
    resp = cast(
        urllib3.BaseHTTPResponse,
        core.create_namespaced_pod_binding(pod_name, namespace, binding, _preload_content=False),
    )
    assert resp.status == 201
    status = json.loads(resp.data)
    assert status["kind"] == "Status"
    assert status["status"] == "Success"

    pod = core.read_namespaced_pod(pod_name, namespace)
    assert pod.spec is not None and pod.status is not None
    assert pod.spec.node_name == node_name
    conditions = {c.type: c.status for c in pod.status.conditions or []}
    assert conditions.get("PodScheduled") == "True"

    # A second binding of the same pod is a conflict.
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding(pod_name, namespace, binding, _preload_content=False)
    assert exc.value.status == 409


def test_rbac_denies_a_user_without_rights(
    kube_client: client.ApiClient, impersonating_client: tuple[client.ApiClient, str], namespace: str
) -> None:
    api, user = impersonating_client
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api).list_namespaced_pod(namespace)
    assert exc.value.status == 403
    status = json.loads(exc.value.body or "{}")
    assert status["reason"] == "Forbidden"
    assert f'User "{user}" cannot list resource "pods"' in status["message"]


def test_rbac_grants_what_a_role_binding_allows(
    kube_client: client.ApiClient, impersonating_client: tuple[client.ApiClient, str], namespace: str
) -> None:
    api, user = impersonating_client
    rbac = client.RbacAuthorizationV1Api(kube_client)
    rbac.create_namespaced_role(
        namespace,
        client.V1Role(
            metadata=client.V1ObjectMeta(name="pod-reader"),
            rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list", "watch"])],
        ),
    )
    rbac.create_namespaced_role_binding(
        namespace,
        client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name="pod-reader"),
            role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="pod-reader"),
            subjects=[client.RbacV1Subject(api_group="rbac.authorization.k8s.io", kind="User", name=user)],
        ),
    )
    core = client.CoreV1Api(api)
    # The RBAC authorizer reads bindings from an informer: the grant takes effect within moments.
    deadline = time.monotonic() + 10
    while True:
        try:
            assert core.list_namespaced_pod(namespace).items == []
            break
        except ApiException as err:
            if err.status != 403 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with pytest.raises(ApiException) as exc:  # the Role grants reads only
        core.create_namespaced_pod(namespace, make_pod(unique("pod")))
    assert exc.value.status == 403
    with pytest.raises(ApiException) as exc:  # and only in its namespace
        core.list_namespaced_pod("default")
    assert exc.value.status == 403
