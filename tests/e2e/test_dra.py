"""DynamicResources under ``berth run`` on the real control plane (resource.k8s.io/v1 is GA and served
by the test kube-apiserver). The test publishes ResourceSlices itself, as a DRA driver would; no
kubelet is needed to schedule. Without a kube-controller-manager the test also does what its
resourceclaim controller would do after a pod is gone: it clears the claim's reservation and
allocation."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.cluster import TEST_LABEL, WAIT, Cluster
from e2e.stack import KubeScheduler, scheduler_config
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from kubernetes import client

from kube.controlplane import LocalControlPlane
from kube.draobjects import DraObjects

pytestmark = pytest.mark.kube


def create_claiming_pod(
    cluster: Cluster, name: str, claim: str, template: bool = False, scheduler_name: str = SCHEDULER_NAME
) -> str:
    source = {"resourceClaimTemplateName": claim} if template else {"resourceClaimName": claim}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler_name,
            "nodeSelector": {TEST_LABEL: cluster.label},
            "resourceClaims": [{"name": "dev", **source}],
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"claims": [{"name": "dev"}], "requests": {"cpu": "100m"}},
                }
            ],
        },
    }
    cluster.core.create_namespaced_pod(cluster.namespace, body)
    cluster.pods.append(name)
    return name


def gpu(name: str, model: str, numa: int) -> dict[str, Any]:
    return {"name": name, "attributes": {"model": {"string": model}, "numa": {"int": numa}}}


@pytest.fixture
def dra(kube_client: client.ApiClient, namespace: str) -> Iterator[DraObjects]:
    """The test's DRA objects, for a driver of its own."""
    objects = DraObjects(kube_client, namespace)
    try:
        yield objects
    finally:
        objects.cleanup()


@pytest.fixture
def resourceclaim_controller(control_plane: LocalControlPlane) -> Iterator[None]:
    """kube-controller-manager v1.36.3 running only its resourceclaim controller (templates become
    claims, recorded in the pod's status)."""
    with control_plane.controller_manager(["resourceclaim-controller"]):
        yield


def wait_for(check: Any, what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def test_claim_allocated_and_reserved_then_a_second_pod_waits_for_the_device(
    berth_run: BerthScheduler, cluster: Cluster, dra: DraObjects
) -> None:
    plain = cluster.create_node("plain")
    with_gpu = cluster.create_node("gpu")
    dra.slice(with_gpu, [gpu("gpu-0", "a100", 0)])
    cls = f"gpu-{cluster.label}"
    dra.device_class(cls)
    dra.claim("first", cls)
    dra.claim("second", cls)

    create_claiming_pod(cluster, "first", "first")
    assert cluster.wait_bound("first") == with_gpu != plain
    claim = dra.read_claim("first")
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"], result["device"]) == (dra.driver, with_gpu, "gpu-0")
    first_uid = cluster.read_pod("first").metadata.uid
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [first_uid]
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]

    create_claiming_pod(cluster, "second", "second")
    message = cluster.wait_event("second", "FailedScheduling", "cannot allocate all claims")
    assert message.startswith("0/") and "still not schedulable, preemption: " in message

    cluster.core.delete_namespaced_pod("first", cluster.namespace, grace_period_seconds=0)
    dra.release("first")
    assert cluster.wait_bound("second") == with_gpu
    reserved = dra.read_claim("second")["status"]["reservedFor"]
    assert [r["name"] for r in reserved] == ["second"]


def test_cel_selector_and_match_attribute_constraint(
    berth_run: BerthScheduler, cluster: Cluster, dra: DraObjects
) -> None:
    mixed = cluster.create_node("mixed")
    dra.slice(
        mixed,
        [gpu("gpu-0", "a100", 0), gpu("gpu-1", "h100", 0), gpu("gpu-2", "h100", 1), gpu("gpu-3", "h100", 1)],
    )
    h100 = f"h100-{cluster.label}"
    dra.device_class(h100, f'device.attributes["{dra.driver}"].model == "h100"')
    dra.claim("pair", h100, count=2, constraints=[{"matchAttribute": f"{dra.driver}/numa"}])
    create_claiming_pod(cluster, "pair", "pair")
    assert cluster.wait_bound("pair") == mixed
    devices = sorted(
        r["device"] for r in dra.read_claim("pair")["status"]["allocation"]["devices"]["results"]
    )
    # gpu-1 (numa 0) has no h100 partner on its NUMA node, so the pair is gpu-2 and gpu-3.
    assert devices == ["gpu-2", "gpu-3"]


def test_claim_from_a_template_waits_for_the_controller_then_schedules(
    resourceclaim_controller: None, berth_run: BerthScheduler, cluster: Cluster, dra: DraObjects
) -> None:
    """berth's PreEnqueue keeps the pod back until the resourceclaim controller has made its claim
    and recorded it in the pod's status; that pod update requeues it and the claim gets a device."""
    node = cluster.create_node("gpu")
    dra.slice(node, [gpu("gpu-0", "a100", 0)])
    cls = f"gpu-{cluster.label}"
    dra.device_class(cls)
    dra.template("one-gpu", cls)
    create_claiming_pod(cluster, "templated", "one-gpu", template=True)
    assert cluster.wait_bound("templated", timeout=60) == node
    [status] = cluster.read_pod("templated").status.resource_claim_statuses
    claim = dra.read_claim(status.resource_claim_name)
    assert claim["metadata"]["ownerReferences"][0]["name"] == "templated"
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert result["device"] == "gpu-0"
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["templated"]


@pytest.fixture
def kube_scheduler(control_plane: LocalControlPlane, tmp_path: Path) -> Iterator[str]:
    """A stock kube-scheduler v1.36.3 (no extender) under its own schedulerName."""
    name = f"kube-dra-{uuid.uuid4().hex[:6]}"
    cfg = scheduler_config(control_plane.kubeconfig, scheduler_name=name)
    proc = KubeScheduler(control_plane.bin_dir, control_plane.kubeconfig, tmp_path, cfg, name).start()
    try:
        yield name
    finally:
        proc.stop()


def test_fit_error_for_a_taken_device_matches_kube_scheduler(
    berth_run: BerthScheduler, kube_scheduler: str, cluster: Cluster, dra: DraObjects
) -> None:
    """The only device is allocated to a running pod's claim: berth and kube-scheduler explain the
    waiting pods' failure with the same FailedScheduling text."""
    node = cluster.create_node("gpu")
    dra.slice(node, [gpu("gpu-0", "a100", 0)])
    cls = f"gpu-{cluster.label}"
    dra.device_class(cls)
    for claim in ("holder", "berth-wait", "kube-wait"):
        dra.claim(claim, cls)
    create_claiming_pod(cluster, "holder", "holder")
    assert cluster.wait_bound("holder") == node
    create_claiming_pod(cluster, "berth-wait", "berth-wait")
    create_claiming_pod(cluster, "kube-wait", "kube-wait", scheduler_name=kube_scheduler)
    berth_says = cluster.wait_event("berth-wait", "FailedScheduling", "cannot allocate all claims")
    kube_says = cluster.wait_event("kube-wait", "FailedScheduling", "cannot allocate all claims")
    assert berth_says == kube_says
    assert (
        "cannot allocate all claims" in berth_says and ". still not schedulable, preemption: 0/" in berth_says
    )


def pod_status(cluster: Cluster, name: str) -> dict[str, Any]:
    """The pod's status as JSON (the Python client's model predates extendedResourceClaimStatus)."""
    response = cluster.core.read_namespaced_pod(name, cluster.namespace, _preload_content=False)
    status: dict[str, Any] = json.loads(response.data)["status"]
    return status


def extended_resource_claim(
    cluster: Cluster, dra: DraObjects, pod: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod's ``status.extendedResourceClaimStatus`` and the claim it names."""
    status = wait_for(
        lambda: pod_status(cluster, pod).get("extendedResourceClaimStatus"),
        f"extendedResourceClaimStatus of {pod}",
    )
    return status, dra.read_claim(status["resourceClaimName"])


def comparable(pod: str, status: dict[str, Any], claim: dict[str, Any]) -> dict[str, Any]:
    """What kube-scheduler decides about the claim, without names, UIDs, times and the device picked."""
    meta = claim["metadata"]
    allocation = claim["status"]["allocation"]
    return {
        "claim name prefix": meta["name"][: -len("xxxxx")].replace(pod, "<pod>"),
        "generateName": meta["generateName"].replace(pod, "<pod>"),
        "annotations": meta["annotations"],
        "finalizers": meta["finalizers"],
        "owners": [
            {k: (v.replace(pod, "<pod>") if k == "name" else v) for k, v in o.items() if k != "uid"}
            for o in meta["ownerReferences"]
        ],
        "spec": claim["spec"],
        "results": [{k: v for k, v in r.items() if k != "device"} for r in allocation["devices"]["results"]],
        "nodeSelector": allocation["nodeSelector"],
        "timestamped": "allocationTimestamp" in allocation,
        "reservedFor": [
            {k: v for k, v in r.items() if k != "uid"} | {"name": "<pod>"}
            for r in claim["status"]["reservedFor"]
        ],
        "mappings": status["requestMappings"],
        "status names the claim": status["resourceClaimName"] == meta["name"],
    }


def test_extended_resource_backed_by_a_device_class_is_allocated_as_kube_scheduler_does(
    berth_run: BerthScheduler, kube_scheduler: str, cluster: Cluster, dra: DraObjects
) -> None:
    """A pod asking for an extended resource no node lists in its allocatable, backed by a
    DeviceClass: berth and a stock kube-scheduler each place their pod on the node whose
    ResourceSlice has the devices, and write the same special claim and pod status."""
    plain = cluster.create_node("plain")
    with_gpu = cluster.create_node("gpu")
    dra.slice(with_gpu, [gpu("gpu-0", "a100", 0), gpu("gpu-1", "a100", 0)])
    resource = f"example.com/gpu-{cluster.label}"
    dra.device_class(f"gpu-{cluster.label}", extended_resource_name=resource)

    # One after the other: two schedulers do not see each other's in-flight allocations.
    cluster.create_pod("kube-gpu", extended={resource: "1"}, scheduler_name=kube_scheduler)
    assert cluster.wait_bound("kube-gpu") == with_gpu
    extended_resource_claim(cluster, dra, "kube-gpu")
    cluster.create_pod("berth-gpu", extended={resource: "1"}, scheduler_name=SCHEDULER_NAME)
    assert cluster.wait_bound("berth-gpu") == with_gpu != plain

    berth_status, berth_claim = extended_resource_claim(cluster, dra, "berth-gpu")
    kube_status, kube_claim = extended_resource_claim(cluster, dra, "kube-gpu")
    assert berth_claim["status"]["allocation"]["devices"]["results"][0]["pool"] == with_gpu
    assert comparable("berth-gpu", berth_status, berth_claim) == comparable(
        "kube-gpu", kube_status, kube_claim
    )
    devices = {
        c["status"]["allocation"]["devices"]["results"][0]["device"] for c in (berth_claim, kube_claim)
    }
    assert devices == {"gpu-0", "gpu-1"}  # no device handed out twice

    # Both devices are taken: a third pod waits, with kube-scheduler's reason.
    cluster.create_pod("berth-wait", extended={resource: "1"}, scheduler_name=SCHEDULER_NAME)
    message = cluster.wait_event("berth-wait", "FailedScheduling", "cannot allocate all claims")
    assert message.startswith("0/") and "still not schedulable, preemption: " in message
