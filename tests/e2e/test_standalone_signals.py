"""``berth run``'s shutdown on signals, as kube-scheduler's: the first SIGTERM/SIGINT stops taking pods,
releases the Lease and exits 0; a second one exits 1 at once."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pytest
from e2e.standalone import BerthScheduler
from kubernetes import client

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

WAIT = 30.0


def _lease(api: client.ApiClient, namespace: str, name: str) -> client.V1Lease | None:
    try:
        return client.CoordinationV1Api(api).read_namespaced_lease(name, namespace)
    except client.ApiException:
        return None


def _leading(
    control_plane: LocalControlPlane, tmp_path: Path, api: client.ApiClient, namespace: str
) -> tuple[BerthScheduler, str]:
    """A started ``berth run`` that holds its Lease (lease 15 s, so only a release frees it early)."""
    lease_name = f"berth-{uuid.uuid4().hex[:6]}"
    proc = BerthScheduler(
        tmp_path,
        control_plane.kubeconfig,
        namespace=namespace,
        lease_name=lease_name,
        lease=15.0,
        renew=10.0,
        retry=0.5,
    ).start()
    deadline = time.monotonic() + WAIT
    while True:
        lease = _lease(api, namespace, lease_name)
        holder = lease.spec.holder_identity if lease is not None else None
        if holder:  # the only candidate for this Lease
            return proc, lease_name
        assert time.monotonic() < deadline, f"berth never took the Lease (holder {holder!r})"
        time.sleep(0.1)


def test_sigterm_releases_the_lease_and_exits_0(
    control_plane: LocalControlPlane, kube_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    proc, lease_name = _leading(control_plane, tmp_path, kube_client, namespace)
    assert proc.popen is not None
    proc.popen.send_signal(signal.SIGTERM)
    try:
        assert proc.popen.wait(timeout=WAIT) == 0
    finally:
        proc.stop()
    lease = _lease(kube_client, namespace, lease_name)
    assert lease is not None
    # ReleaseOnCancel, as client-go: no holder and a 1 s duration, so a follower takes over at once
    # rather than after the 15 s lease.
    assert not lease.spec.holder_identity
    assert lease.spec.lease_duration_seconds == 1
    log = proc.log.read_text()
    assert "Python settings" in log and "Starting berth scheduler" in log
    assert "Received signal, shutting down" in log and "berth scheduler stopped" in log


def test_a_second_signal_exits_1_at_once(
    control_plane: LocalControlPlane, kube_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    proc, _ = _leading(control_plane, tmp_path, kube_client, namespace)
    assert proc.popen is not None
    proc.popen.send_signal(signal.SIGINT)
    proc.popen.send_signal(signal.SIGTERM)
    try:
        assert proc.popen.wait(timeout=WAIT) == 1
    finally:
        proc.stop()
    assert "Received a second signal, exiting immediately" in proc.log.read_text()
