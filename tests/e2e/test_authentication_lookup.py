"""berth run reads the cluster's client CA as kube-scheduler does (``--authentication-skip-lookup``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from e2e.standalone import BerthScheduler

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube


def _berth(cp: LocalControlPlane, tmp_path: Path, namespace: str, *extra: str) -> BerthScheduler:
    return BerthScheduler(
        tmp_path,
        cp.kubeconfig,
        name=f"berth-lookup-{uuid.uuid4().hex[:6]}",
        namespace=namespace,
        lease_name=f"lookup-{uuid.uuid4().hex[:6]}",
        client_ca=None,  # no --client-ca-file: the cluster's extension-apiserver-authentication has it
        client_cert=(cp.client_cert, cp.client_key),
        extra_args=extra,
    )


def test_the_cluster_client_ca_authenticates_the_admin_certificate(
    control_plane: LocalControlPlane, tmp_path: Path, namespace: str
) -> None:
    berth = _berth(control_plane, tmp_path, namespace).start()
    try:
        status, body = berth.get("/configz")
    finally:
        berth.stop()
    assert status == 200, body


def test_skip_lookup_leaves_client_certificates_unverified(
    control_plane: LocalControlPlane, tmp_path: Path, namespace: str
) -> None:
    berth = _berth(control_plane, tmp_path, namespace, "--authentication-skip-lookup").start()
    try:
        status, _ = berth.get("/configz")
    finally:
        berth.stop()
    # no client CA: the certificate is not asked for, the request is anonymous, and anonymous may
    # not read /configz (berth's RBAC decision through SubjectAccessReview)
    assert status in (401, 403)
