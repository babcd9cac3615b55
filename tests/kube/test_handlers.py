"""What the informers' cache keeps of each pod and node (the slim cache, issue 25).

A cached object keeps its parsed fields and a slim document: no managedFields, env, probes, mounts,
configMap/secret volumes or container statuses, labels shared with the parsed map. The readers of
that document (limits, event references, status patches, preemption, the queue's change detection)
answer as they do on the whole document. One test reads a pod back through a real reflector.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import orjson
import pytest

from app.api.decoding import cut_managed_fields
from app.api.objects import Pod, parse_node, parse_pod
from app.api.resources import pod_limits
from app.backend.cache.cache import Cache
from app.backend.queue.events import node_scheduling_properties_change, pod_scheduling_properties_change
from app.framework.preemption.util import pod_start_time
from app.kube.client import KubeClient
from app.kube.handlers import decode_node, decode_pod, decode_whole_pod, engine_informers
from app.kube.objectref import ObjectRef
from app.kube.podstatus import PodStatusWriter
from app.plugins.defaultpreemption.default_preemption import pod_terminating_by_preemption
from kube.controlplane import LocalControlPlane

MANAGED_FIELDS = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {}}},
    }
]


def realistic_pod(name: str = "web-1") -> dict[str, Any]:
    """A running Deployment pod as the API server returns it (kubelet status included)."""
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "generateName": "web-",
            "namespace": "shop",
            "uid": f"uid-{name}",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "abc"},
            "annotations": {"prometheus.io/scrape": "true"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-abc",
                    "uid": "rs",
                    "controller": True,
                }
            ],
            "managedFields": MANAGED_FIELDS,
        },
        "spec": {
            "volumes": [
                {"name": "config", "configMap": {"name": "web"}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "model", "image": {"reference": "registry.example.com/model:v1"}},
            ],
            "initContainers": [
                {
                    "name": "sidecar",
                    "image": "proxy:v1",
                    "restartPolicy": "Always",
                    "env": [{"name": "A", "value": "1"}],
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example.com/web:v1",
                    "command": ["/bin/web"],
                    "env": [{"name": f"ENV_{i}", "value": str(i)} for i in range(10)],
                    "ports": [{"containerPort": 8080, "hostPort": 80, "protocol": "TCP"}],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"cpu": "1", "memory": "128Mi"},
                    },
                    "livenessProbe": {"httpGet": {"path": "/", "port": 8080}},
                    "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}],
                }
            ],
            "nodeName": "node-1",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
            "priority": 10,
            "preemptionPolicy": "PreemptLowerPriority",
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-01-01T00:00:05Z",
            "qosClass": "Burstable",
            "podIP": "10.0.0.7",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:09Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"},
            ],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "image": "web:v1"}],
        },
    }


def realistic_node(name: str = "node-1") -> dict[str, Any]:
    """A node as its kubelet reports it."""
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "a"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "managedFields": MANAGED_FIELDS,
        },
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "7", "memory": "30Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.1.0.1"}],
            "nodeInfo": {"kubeletVersion": "v1.36.3", "machineID": "m"},
            "images": [{"names": ["registry.example.com/web:v1"], "sizeBytes": 1000}],
        },
    }


def test_a_cached_pod_keeps_no_managed_fields_and_no_unread_parts() -> None:
    pod = decode_pod(realistic_pod())
    assert set(pod.raw) == {"kind", "apiVersion", "metadata", "spec", "status"}
    assert "managedFields" not in pod.raw["metadata"]
    assert "generateName" not in pod.raw["metadata"]
    # Containers keep their limits (the only part read from the document), in their positions.
    assert pod.raw["spec"]["containers"] == [{"resources": {"limits": {"cpu": "1", "memory": "128Mi"}}}]
    assert pod.raw["spec"]["initContainers"] == [{"restartPolicy": "Always"}]
    # Only volumes some plugin reads: the claim and the image volume, not the configMap.
    assert [v["name"] for v in pod.raw["spec"]["volumes"]] == ["data", "model"]
    for unread in ("tolerations", "dnsPolicy", "securityContext"):
        assert unread not in pod.raw["spec"]
    assert set(pod.raw["status"]) == {"phase", "startTime", "conditions"}
    # The parsed fields are all there.
    assert pod.tolerations[0].key == "node.kubernetes.io/not-ready"
    assert [p.host_port for p in pod.containers[0].host_ports] == [80]
    assert pod.init_containers[0].restartable


def test_a_cached_pods_labels_are_shared_with_its_document_and_interned() -> None:
    a, b = decode_pod(realistic_pod("web-1")), decode_pod(realistic_pod("web-2"))
    assert a.raw["metadata"]["labels"] is a.labels
    assert a.raw["metadata"]["annotations"] is a.annotations
    key_a, key_b = next(iter(a.labels)), next(iter(b.labels))
    assert key_a is key_b and a.labels[key_a] is b.labels[key_b]
    assert a.namespace is b.namespace and a.containers[0].image is b.containers[0].image
    # One workload's owner references and limits are one object in every cached document.
    assert a.raw["metadata"]["ownerReferences"] is b.raw["metadata"]["ownerReferences"]
    assert a.raw["spec"]["containers"][0] is b.raw["spec"]["containers"][0] or (
        a.raw["spec"]["containers"][0]["resources"] is b.raw["spec"]["containers"][0]["resources"]
    )


def test_copies_of_a_template_share_their_slim_containers_and_keep_the_same_document() -> None:
    def without_host_port(name: str) -> dict[str, Any]:
        raw = realistic_pod(name)
        del raw["spec"]["containers"][0]["ports"][0]["hostPort"]
        return raw

    first, second = decode_pod(without_host_port("web-1")), decode_pod(without_host_port("web-2"))
    assert second.containers is first.containers
    assert second.raw["spec"]["containers"] is first.raw["spec"]["containers"]
    assert second.raw["spec"]["initContainers"] is first.raw["spec"]["initContainers"]
    # The same document a pod decoded alone keeps (its containers read as mappings: never shared).
    alone = without_host_port("web-2")
    for key in ("containers", "initContainers"):
        alone["spec"][key] = [MappingProxyType(c) for c in alone["spec"][key]]
    assert orjson.loads(orjson.dumps(second.raw)) == orjson.loads(
        orjson.dumps(decode_pod(alone).raw, default=dict)
    )
    assert pod_limits(second) == pod_limits(parse_pod(without_host_port("web-2")))


def test_readers_of_a_slim_pod_answer_as_on_the_whole_document() -> None:
    whole, slim = parse_pod(realistic_pod()), decode_pod(realistic_pod())
    assert pod_limits(slim) == pod_limits(whole)
    assert ObjectRef.of(slim) == ObjectRef.of(whole)
    assert pod_start_time(slim) == pod_start_time(whole)
    writer = PodStatusWriter(KubeClient.__new__(KubeClient), clock=lambda: 1_767_225_600_000_000_000)
    assert writer.condition(slim, "PodScheduled", "False", "Unschedulable", "x") == writer.condition(
        whole, "PodScheduled", "False", "Unschedulable", "x"
    )
    # A pod being deleted by preemption is recognised from the cached conditions.
    terminating = realistic_pod()
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    terminating["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    )
    assert pod_terminating_by_preemption(decode_pod(terminating))
    # A change the queue hears about is the same on slim documents.
    changed = realistic_pod()
    changed["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "web-1-gpu"}]
    assert pod_scheduling_properties_change(decode_pod(changed), slim) == pod_scheduling_properties_change(
        parse_pod(changed), whole
    )


def test_a_pod_for_extenders_keeps_its_whole_document_without_managed_fields() -> None:
    raw = realistic_pod()
    pod = decode_whole_pod(copy.deepcopy(raw))
    del raw["metadata"]["managedFields"]
    assert pod.raw == raw


def test_a_cached_node_keeps_its_spec_and_conditions_not_its_images_or_node_info() -> None:
    node = decode_node(realistic_node())
    assert "managedFields" not in node.raw["metadata"]
    assert node.raw["metadata"]["labels"] is node.labels
    assert node.raw["status"] == {"conditions": [{"type": "Ready", "status": "True"}]}
    assert node.allocatable and node.allocatable["cpu"] == 7
    assert node.images[0].names == ["registry.example.com/web:v1"]
    tainted = realistic_node()
    tainted["spec"]["taints"] = []
    tainted["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    whole_old, whole_new = parse_node(realistic_node()), parse_node(copy.deepcopy(tainted))
    assert node_scheduling_properties_change(decode_node(tainted), node) == node_scheduling_properties_change(
        whole_new, whole_old
    )


@pytest.fixture
def kc(control_plane: LocalControlPlane) -> Iterator[KubeClient]:
    client = KubeClient.from_config(str(control_plane.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def create_realistic_pod(kc: KubeClient, namespace: str) -> dict[str, Any]:
    """``realistic_pod`` created in a new ``namespace`` (the API server adds its managedFields)."""
    status, data = kc.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    assert status == 201, data
    body = realistic_pod()
    del body["metadata"]["managedFields"], body["metadata"]["uid"], body["metadata"]["resourceVersion"]
    del body["metadata"]["generation"], body["metadata"]["creationTimestamp"], body["status"]
    del body["metadata"]["ownerReferences"], body["spec"]["priority"]  # priority comes from admission
    body["metadata"]["namespace"] = namespace
    body["spec"]["nodeName"] = f"absent-node-{uuid.uuid4().hex[:6]}"
    status, data = kc.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=body)
    assert status == 201, data
    created: dict[str, Any] = orjson.loads(data)
    assert created["metadata"]["managedFields"], "the API server records who created the pod"
    return created


@pytest.mark.kube
def test_the_api_servers_watch_events_have_their_managed_fields_cut_from_the_text(kc: KubeClient) -> None:
    """The cut's premise (compact JSON, managedFields last in metadata) holds for v1.36.3's API server."""
    namespace = f"cut-{uuid.uuid4().hex[:8]}"
    created = create_realistic_pod(kc, namespace)
    lines: list[bytes] = []

    def keep(line: bytes) -> Any:
        lines.append(line)
        return orjson.loads(line)

    try:
        params = {
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
        }
        stream = kc.watch(f"/api/v1/namespaces/{namespace}/pods", {**params, "timeoutSeconds": "5"}, keep)
        added = next(iter(stream))
        stream.close()
        assert added["object"]["metadata"]["uid"] == created["metadata"]["uid"]
        cut = cut_managed_fields(lines[0])
        assert len(cut) < len(lines[0])
        whole = orjson.loads(lines[0])
        del whole["object"]["metadata"]["managedFields"]
        assert orjson.loads(cut) == whole
    finally:
        kc.request("DELETE", f"/api/v1/namespaces/{namespace}")


@pytest.mark.kube
def test_a_pod_listed_from_the_api_server_is_cached_slim(kc: KubeClient) -> None:
    namespace = f"slim-{uuid.uuid4().hex[:8]}"
    created = create_realistic_pod(kc, namespace)
    cache = Cache()
    informers = engine_informers(kc, cache, None, page_size=2)
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(30)
        deadline = time.monotonic() + 15
        while (cached := cache.get_pod(created["metadata"]["uid"])) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert isinstance(cached, Pod)
        assert "managedFields" not in cached.raw["metadata"]
        assert "env" not in cached.raw["spec"]["containers"][0]
        assert cached.raw["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert ObjectRef.of(cached) == ObjectRef.of(created)
    finally:
        informers.stop()
        kc.request("DELETE", f"/api/v1/namespaces/{namespace}")
