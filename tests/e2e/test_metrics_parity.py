"""berth run's /metrics against a real kube-scheduler's on the same cluster: names, types, labels."""

from __future__ import annotations

import re
import ssl
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.cluster import Cluster, two_node_cluster
from e2e.stack import KubeScheduler, scheduler_config
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from kubernetes import client

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

KUBE_PROFILE = "kube-parity"
IN_SCOPE = ("scheduler_", "rest_client_", "leader_election_master_status")
# client-go families about its transport cache, retries and exec plugins: berth's client has none
# of those mechanisms (one connection pool per client, no retries, no exec-plugin metrics).
NOT_IN_BERTH = {
    "rest_client_request_retries_total",
    "rest_client_transport_cache_entries",
    "rest_client_transport_create_calls_total",
    "rest_client_exec_plugin_certificate_rotation_age",
    "rest_client_exec_plugin_ttl_seconds",
    "rest_client_exec_plugin_call_total",
    "rest_client_transport_cert_rotation_gc_calls_total",
    # kube 1.36's OpportunisticBatching (reusing the previous pod's scores for an identical pod):
    # berth scores every pod afresh, so it has no batch cache to report on.
    "scheduler_batch_attempts_total",
    "scheduler_batch_cache_flushed_total",
    "scheduler_get_node_hint_duration_seconds",
    "scheduler_store_schedule_results_duration_seconds",
}
# Observed in a sample of the attempts (10%, in kube and berth): present in either scrape by chance.
SAMPLED = {"scheduler_plugin_execution_duration_seconds"}


def families(text: str) -> dict[str, tuple[str, frozenset[str], str]]:
    """``name -> (type, label names, stability marker)`` of the in-scope families of a scrape."""
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    markers = dict(re.findall(r"^# HELP (\S+) (\[[A-Z]+\])?", text, re.M))
    labels: dict[str, set[str]] = {name: set() for name in types}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        match = re.match(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})? ", line)
        if not match:
            continue
        sample = match.group(1)
        family = next(
            (
                sample.removesuffix(s)
                for s in ("_bucket", "_sum", "_count", "")
                if sample.removesuffix(s) in types
            ),
            None,
        )
        if family is not None:
            labels[family] |= {
                n for n in re.findall(r'(\w+)="', match.group(2) or "") if n not in ("le", "quantile")
            }
    return {n: (types[n], frozenset(labels[n]), markers.get(n, "")) for n in types if n.startswith(IN_SCOPE)}


def bucket_bounds(text: str) -> dict[str, frozenset[str]]:
    """``histogram -> its le values`` as printed."""
    bounds: dict[str, set[str]] = {}
    for name, le in re.findall(r'^(\w+)_bucket\{(?:.*?,)?le="([^"]+)"', text, re.M):
        bounds.setdefault(name, set()).add(le)
    return {n: frozenset(v) for n, v in bounds.items()}


@pytest.fixture
def cluster(kube_client: client.ApiClient, namespace: str) -> Iterator[Cluster]:
    """Two 4-cpu nodes for this test."""
    with two_node_cluster(kube_client, namespace) as c:
        yield c


def test_berth_run_exposes_kube_schedulers_families(
    control_plane: LocalControlPlane, tmp_path: Path, namespace: str, cluster: Cluster
) -> None:
    config = scheduler_config(control_plane.kubeconfig, scheduler_name=KUBE_PROFILE)
    lease = f"parity-{uuid.uuid4().hex[:6]}"
    config["leaderElection"] = {"leaderElect": True, "resourceName": lease, "resourceNamespace": namespace}
    kube = KubeScheduler(control_plane.bin_dir, control_plane.kubeconfig, tmp_path, config, "kube-parity")
    kube.start()
    berth = BerthScheduler.on(
        control_plane, tmp_path, namespace=namespace, lease_name=f"berth-{lease}", name="berth-parity"
    ).start()
    try:
        for i in range(3):
            cluster.create_pod(f"kube-{i}", scheduler_name=KUBE_PROFILE)
            cluster.create_pod(f"berth-{i}", scheduler_name=SCHEDULER_NAME)
        cluster.create_pod("kube-big", cpu="64", scheduler_name=KUBE_PROFILE)
        cluster.create_pod("berth-big", cpu="64", scheduler_name=SCHEDULER_NAME)
        for i in range(3):
            cluster.wait_bound(f"kube-{i}")
            cluster.wait_bound(f"berth-{i}")
        cluster.wait_event("kube-big", "FailedScheduling", "Insufficient cpu")
        cluster.wait_event("berth-big", "FailedScheduling", "Insufficient cpu")
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(
            f"https://127.0.0.1:{kube.port}/metrics", context=ctx, timeout=10
        ) as resp:
            their_text = resp.read().decode()
        theirs = families(their_text)
        status, body = berth.get("/metrics")
        assert status == 200
        ours = families(body)
    finally:
        berth.stop()
        kube.stop()
    expected = {n: v for n, v in theirs.items() if n not in NOT_IN_BERTH}
    assert len(expected) > 20
    missing = sorted(set(expected) - set(ours) - SAMPLED)
    assert missing == [], f"kube-scheduler families berth lacks: {missing}"
    different = {n: (expected[n], ours[n]) for n in expected if n in ours and ours[n] != expected[n]}
    assert different == {}
    their_bounds, our_bounds = bucket_bounds(their_text), bucket_bounds(body)
    shared = set(their_bounds) & set(our_bounds)
    assert "scheduler_framework_extension_point_duration_seconds" in shared
    assert {n: our_bounds[n] for n in shared} == {n: their_bounds[n] for n in shared}
    assert 'leader_election_master_status{name="kube-scheduler"} 1' in body
    assert 'le="1"' in body and "_created" not in body
