"""DynamicResources' writes through ``app.kube.dra.ApiClaimWriter`` on the real API server: PreBind
re-reads a claim and tries again after a write conflict (kube's ``retry.RetryOnConflict``), and the
claim for a pod's extended resources is created, recorded in the pod's status, and deleted again
(finalizer first) by Unreserve."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client

from app.api.objects import Pod, parse_pod
from app.api.resource import EXTENDED_RESOURCE_CLAIM_ANNOTATION, FINALIZER
from app.framework.cycle_state import CycleState
from app.framework.dra import DRAStore
from app.framework.types import NodeInfo
from app.kube.dra import ApiClaimWriter
from app.plugins.dynamicresources.plugin import DynamicResources
from builders import make_node
from fakes import FakeHandle
from kube.controlplane import LocalControlPlane
from kube.draobjects import DraObjects
from kube.test_podstatus import CountingClient

pytestmark = pytest.mark.kube

NODE = "worker"


class Objects(DraObjects):
    """The DRA objects of one test, and the pods it hands the plugin."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        super().__init__(api, namespace)
        self.core = client.CoreV1Api(api)
        self.class_name = f"gpu-{self.suffix}"

    def gpu_class(self, extended_resource_name: str = "") -> dict[str, Any]:
        """The DeviceClass of the driver's GPUs."""
        return self.device_class(self.class_name, extended_resource_name=extended_resource_name)

    def node_slice(self) -> dict[str, Any]:
        """Two GPUs on the node ``worker``."""
        return self.slice(NODE, [{"name": "gpu-0"}, {"name": "gpu-1"}])

    def gpu_claim(self, name: str) -> dict[str, Any]:
        """A claim for one GPU."""
        return self.claim(name, self.class_name)

    def pod(self, name: str, requests: dict[str, str] | None = None) -> Pod:
        """A pending pod (no scheduler picks it up), as the API server stored it."""
        resources = {"requests": requests, "limits": requests} if requests else {}
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "schedulerName": "nobody",
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}],
            },
        }
        self.core.create_namespaced_pod(self.namespace, body)
        return parse_pod(self.read_pod(name))

    def read_pod(self, name: str) -> dict[str, Any]:
        response = self.core.read_namespaced_pod(name, self.namespace, _preload_content=False)
        raw: dict[str, Any] = orjson.loads(response.data)
        return raw


@pytest.fixture
def objects(kube_client: client.ApiClient, namespace: str) -> Iterator[Objects]:
    o = Objects(kube_client, namespace)
    try:
        yield o
    finally:
        o.cleanup()


@pytest.fixture
def kc(control_plane: LocalControlPlane) -> Iterator[CountingClient]:
    counting = CountingClient.from_config(str(control_plane.kubeconfig))
    counting.sent = []
    try:
        yield counting
    finally:
        counting.close()


def plugin_over(kc: CountingClient, *raw: dict[str, Any]) -> tuple[DynamicResources, DRAStore]:
    """The plugin over a store holding ``raw`` as the informers delivered them, writing through the API."""
    store = DRAStore()
    for obj in raw:
        store.upsert(obj["kind"], obj["metadata"]["name"], obj)
    store.writer = ApiClaimWriter(kc)
    return DynamicResources(None, FakeHandle(), store), store


def test_prebind_rereads_the_claim_after_a_conflict_and_keeps_the_other_writers_change(
    kc: CountingClient, objects: Objects
) -> None:
    cls, pool, claim = objects.gpu_class(), objects.node_slice(), objects.gpu_claim("gpu-claim")
    plugin, _ = plugin_over(kc, cls, pool, claim)
    pod = objects.pod("claiming")
    pod = parse_pod(
        {
            **pod.raw,
            "spec": {
                **pod.raw["spec"],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
            },
        }
    )
    state = CycleState()
    assert plugin.pre_filter(state, pod, []) == (None, None)
    assert plugin.filter(state, pod, NodeInfo(make_node(NODE))) is None
    assert plugin.reserve(state, pod, NODE) is None

    objects.label_claim("gpu-claim")  # between Reserve and PreBind: the plugin's copy is stale now
    kc.sent.clear()
    assert plugin.pre_bind(state, pod, NODE) is None

    stored = objects.read_claim("gpu-claim")
    assert stored["metadata"]["labels"] == {"touched-by": "someone-else"}
    assert FINALIZER in stored["metadata"]["finalizers"]
    assert [r["device"] for r in stored["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
    assert [(r["name"], r["uid"]) for r in stored["status"]["reservedFor"]] == [("claiming", pod.uid)]
    # The first update was refused (409); a GET and the updates that worked followed.
    assert [method for method, _, _ in kc.sent] == ["PUT", "GET", "PUT", "PUT"]


def test_claim_writes_without_managed_fields_keep_the_servers_field_owners(
    kc: CountingClient, objects: Objects
) -> None:
    """berth keeps claims without their managedFields (the informers cut them, and the writer's
    responses), so PreBind's PUT of the claim sends none: the API server then keeps its own,
    and the claim's creator still owns its fields, beside the writer's new entries."""
    cls, pool, claim = objects.gpu_class(), objects.node_slice(), objects.gpu_claim("owned")
    created = objects.read_claim("owned")["metadata"]["managedFields"]
    slim = {**claim, "metadata": {k: v for k, v in claim["metadata"].items() if k != "managedFields"}}
    plugin, store = plugin_over(kc, cls, pool, slim)
    pod = objects.pod("owner")
    pod = parse_pod(
        {
            **pod.raw,
            "spec": {**pod.raw["spec"], "resourceClaims": [{"name": "gpu", "resourceClaimName": "owned"}]},
        }
    )
    state = CycleState()
    assert plugin.pre_filter(state, pod, []) == (None, None)
    assert plugin.filter(state, pod, NodeInfo(make_node(NODE))) is None
    assert plugin.reserve(state, pod, NODE) is None
    assert plugin.pre_bind(state, pod, NODE) is None

    stored = objects.read_claim("owned")
    assert FINALIZER in stored["metadata"]["finalizers"]
    owners = stored["metadata"]["managedFields"]
    assert [m for m in owners if m["manager"] == created[0]["manager"]] == created
    assert {m.get("subresource", "") for m in owners if m not in created} == {"", "status"}
    written = store.get_claim(objects.namespace, "owned")
    assert written is not None and written.allocation is not None
    assert "managedFields" not in written.raw["metadata"]


def test_the_extended_resource_claim_is_created_recorded_and_deleted_by_unreserve(
    kc: CountingClient, objects: Objects
) -> None:
    resource = f"example.com/gpu-{objects.suffix}"
    plugin, store = plugin_over(kc, objects.gpu_class(resource), objects.node_slice())
    pod = objects.pod("wants-gpus", {resource: "2"})
    state = CycleState()
    assert plugin.pre_filter(state, pod, []) == (None, None)
    assert plugin.filter(state, pod, NodeInfo(make_node(NODE))) is None
    assert plugin.reserve(state, pod, NODE) is None
    assert plugin.pre_bind(state, pod, NODE) is None

    [claim] = objects.list_claims()
    assert claim["metadata"]["generateName"] == "wants-gpus-extended-resources-"
    assert claim["metadata"]["annotations"] == {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-0", "gpu-1"]
    assert objects.read_pod("wants-gpus")["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [
            {"containerName": "c", "resourceName": resource, "requestName": "container-0-request-0"}
        ],
        "resourceClaimName": claim["metadata"]["name"],
    }
    assert store.get_claim(objects.namespace, claim["metadata"]["name"]) is not None  # assumed until watched

    plugin.unreserve(state, pod, NODE)  # binding failed after PreBind
    assert objects.list_claims() == []  # the finalizer was removed, so the claim is gone at once
