"""Reflectors and handlers against the real control plane: pagination, watch events into the cache,
relist after 410, other schedulers' pods, terminated pods, and the sync phases."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
import pytest

from app import featuregates
from app.backend.cache.cache import Cache
from app.kube.client import KubeClient, KubeError
from app.kube.handlers import NodeHandler, ObjectHandler, decode_node, engine_informers
from app.kube.informer import INITIAL_EVENTS_END, NODES, SERVICES, Backoff, InformerSet
from app.scheduler.scheduler import ClusterObjects
from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube


class FastBackoff(Backoff):
    """Backoff in milliseconds, so that error paths do not slow the tests down."""

    def __init__(self) -> None:
        super().__init__(initial=0.01, maximum=0.05)


@pytest.fixture
def kc(control_plane: LocalControlPlane) -> Iterator[KubeClient]:
    client = KubeClient.from_config(str(control_plane.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def eventually(check: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def create(kc: KubeClient, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
    status, data = kc.request("POST", path, body=body)
    assert status == 201, data
    decoded: dict[str, Any] = orjson.loads(data)
    return decoded


def node_body(name: str, cpu: str = "4") -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": resources, "allocatable": resources},
    }


def pod_body(
    name: str, node: str = "", cpu: str = "1", scheduler: str = "default-scheduler"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
        ],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def service_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"ports": [{"port": 80}]},
    }


@pytest.fixture
def engine_side(kc: KubeClient) -> Iterator[tuple[Cache, ClusterObjects, InformerSet]]:
    cache, objects = Cache(), ClusterObjects()
    informers = engine_informers(kc, cache, objects, backoff=FastBackoff)
    informers.start()
    try:
        assert informers.wait_for_cache_sync(30)
        assert informers.wait_for_handlers_sync(30)
        yield cache, objects, informers
    finally:
        informers.stop()


def test_list_is_paginated(kc: KubeClient, namespace: str) -> None:
    for i in range(5):
        create(kc, f"/api/v1/namespaces/{namespace}/services", service_body(f"s{i}"))
    objects = ClusterObjects()
    informers = InformerSet(kc, page_size=2, watch_list=False)  # a paginated list, not a watch-list
    reflector = informers.add(SERVICES, ObjectHandler(objects, "Service"))
    assert not informers.has_synced()
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(30)
        assert informers.has_synced() and informers.handlers_synced()
        assert reflector.stats.pages >= 3  # >= 5 services (plus `kubernetes`) at 2 a page
        names = sorted(o["metadata"]["name"] for o in objects.list("Service", namespace))
        assert names == [f"s{i}" for i in range(5)]
        # List items carry no kind; the reflector sets it, so plugins see whole objects.
        assert all(o["kind"] == "Service" for o in objects.list("Service", namespace))
        assert reflector.resource_version
    finally:
        informers.stop()


def test_node_events_reach_the_cache(
    kc: KubeClient, engine_side: tuple[Cache, ClusterObjects, InformerSet]
) -> None:
    cache, _, _ = engine_side
    name = f"n-{uuid.uuid4().hex[:8]}"
    create(kc, "/api/v1/nodes", node_body(name))
    eventually(lambda: cache.get_node(name) is not None, what="node added")
    status, _ = kc.request("PATCH", f"/api/v1/nodes/{name}", body={"metadata": {"labels": {"zone": "a"}}})
    assert status == 200
    eventually(lambda: _label(cache, name) == "a", what="node updated")
    status, _ = kc.request("DELETE", f"/api/v1/nodes/{name}")
    assert status == 200
    eventually(lambda: cache.get_node(name) is None, what="node removed")


def _label(cache: Cache, node: str) -> str | None:
    n = cache.get_node(node)
    return None if n is None else n.labels.get("zone")


def test_pod_events_reach_the_cache(
    kc: KubeClient, namespace: str, engine_side: tuple[Cache, ClusterObjects, InformerSet]
) -> None:
    cache, _, _ = engine_side
    node = f"n-{uuid.uuid4().hex[:8]}"
    create(kc, "/api/v1/nodes", node_body(node))
    pods = f"/api/v1/namespaces/{namespace}/pods"
    # Bound by another scheduler: it uses capacity all the same.
    create(kc, pods, pod_body("other", node=node, scheduler="someone-else"))
    eventually(lambda: [p.name for p in cache.pods_on(node)] == ["other"], what="other scheduler's pod")
    # Pending pods are not in the cache; binding one adds it.
    pending = create(kc, pods, pod_body("pending"))
    time.sleep(0.3)
    assert sorted(p.name for p in cache.pods_on(node)) == ["other"]
    kc.bind(namespace, "pending", pending["metadata"]["uid"], node)
    eventually(lambda: sorted(p.name for p in cache.pods_on(node)) == ["other", "pending"], what="bound pod")
    # An update keeps one copy, with the new labels.
    kc.request("PATCH", f"{pods}/pending", body={"metadata": {"labels": {"v": "2"}}})
    eventually(
        lambda: [p.labels.get("v") for p in cache.pods_on(node) if p.name == "pending"] == ["2"],
        what="update",
    )
    assert len(cache.pods_on(node)) == 2
    # A terminated pod leaves the cache (the field selector turns it into a DELETED event).
    status, data = kc.request("PATCH", f"{pods}/other/status", body={"status": {"phase": "Succeeded"}})
    assert status == 200, data
    eventually(lambda: [p.name for p in cache.pods_on(node)] == ["pending"], what="terminated pod removed")
    # Deletion.
    kc.request("DELETE", f"{pods}/pending", body={"gracePeriodSeconds": 0})
    eventually(lambda: cache.pods_on(node) == [], what="deleted pod removed")


def test_other_kinds_reach_cluster_objects(
    kc: KubeClient, namespace: str, engine_side: tuple[Cache, ClusterObjects, InformerSet]
) -> None:
    _, objects, informers = engine_side
    assert any(o["metadata"]["name"] == namespace for o in objects.list_cluster("Namespace"))
    create(kc, f"/api/v1/namespaces/{namespace}/services", service_body("web"))
    create(
        kc,
        f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
        {"metadata": {"name": "pdb"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}},
    )
    eventually(lambda: [o["metadata"]["name"] for o in objects.list("Service", namespace)] == ["web"])
    eventually(
        lambda: [o["metadata"]["name"] for o in objects.list("PodDisruptionBudget", namespace)] == ["pdb"]
    )
    kc.request("DELETE", f"/api/v1/namespaces/{namespace}/services/web")
    eventually(lambda: objects.list("Service", namespace) == [], what="service deleted")
    # The volume plugins' kinds: a claim and a cluster-scoped StorageClass arrive too.
    create(
        kc,
        f"/api/v1/namespaces/{namespace}/persistentvolumeclaims",
        {
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )
    eventually(
        lambda: [o["metadata"]["name"] for o in objects.list("PersistentVolumeClaim", namespace)] == ["data"]
    )
    assert set(informers.reflectors) == {
        "nodes",
        "pods",
        "services",
        "replicasets",
        "statefulsets",
        "replicationcontrollers",
        "namespaces",
        "poddisruptionbudgets",
        "persistentvolumes",
        "persistentvolumeclaims",
        "storageclasses",
        "csinodes",
        "csidrivers",
        "csistoragecapacities",
        "volumeattachments",
    }


class GoneOnce:
    """A client whose first watch of ``path`` holds until released, then ends with a 410 ERROR event
    (a watch-list's after its initial state: the real events through the closing bookmark).

    Everything else goes to the real client. While the watch is held, changes in the cluster are
    invisible to the reflector: only the relist that the 410 forces can bring them in.
    """

    def __init__(self, real: KubeClient, path: str) -> None:
        self.real = real
        self.path = path
        self.release = threading.Event()
        self.held = threading.Event()
        self.injected = False

    def get_json(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self.real.get_json(path, params)

    def watch(
        self, path: str, params: Mapping[str, str], loads: Callable[[bytes], Any] = orjson.loads
    ) -> Iterator[dict[str, Any]]:
        if path != self.path or self.injected:
            return iter(self.real.watch(path, params, loads))
        self.injected = True
        initial = (
            self.real.watch(path, params, loads) if params.get("sendInitialEvents") == "true" else iter(())
        )
        return self._gone(initial)

    def _gone(self, initial: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for event in initial:
            yield event
            annotations = event["object"]["metadata"].get("annotations") or {}
            if event["type"] == "BOOKMARK" and INITIAL_EVENTS_END in annotations:
                break
        self.held.set()
        self.release.wait(30)
        yield {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": "too old resource version: 1 (999)",
                "reason": "Expired",
                "code": 410,
            },
        }


@pytest.mark.parametrize("watch_list", [True, False], ids=["watch-list", "paginated-list"])
def test_relist_after_410_replaces_state(kc: KubeClient, namespace: str, watch_list: bool) -> None:
    svc = f"/api/v1/namespaces/{namespace}/services"
    create(kc, svc, service_body("stays"))
    create(kc, svc, service_body("goes"))
    fake = GoneOnce(kc, SERVICES.path)
    objects = ClusterObjects()
    informers = InformerSet(fake, backoff=FastBackoff, watch_list=watch_list)  # type: ignore[arg-type]
    reflector = informers.add(SERVICES, ObjectHandler(objects, "Service"))
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(30)
        assert fake.held.wait(10)
        names = lambda: sorted(o["metadata"]["name"] for o in objects.list("Service", namespace))  # noqa: E731
        assert names() == ["goes", "stays"]
        kc.request("DELETE", f"{svc}/goes")
        create(kc, svc, service_body("new"))
        time.sleep(0.3)
        assert names() == ["goes", "stays"]  # the held watch saw nothing
        fake.release.set()
        eventually(lambda: names() == ["new", "stays"], what="relist after 410")
        assert reflector.stats.gone == 1
        assert reflector.stats.lists == 2
        assert reflector.stats.watch_lists == (2 if watch_list else 0)
        # And the watch that follows the relist works.
        create(kc, svc, service_body("later"))
        eventually(lambda: "later" in names(), what="watch after relist")
    finally:
        fake.release.set()
        informers.stop()


class FakeClient:
    """Scripted list pages and watch answers, for the error paths the API server rarely shows."""

    def __init__(self, pages: list[Any], watches: list[Any]) -> None:
        self.pages = pages
        self.watches = watches
        self.list_calls: list[dict[str, str]] = []
        self.watch_calls: list[dict[str, str]] = []
        self.idle = threading.Event()

    def get_json(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        self.list_calls.append(dict(params or {}))
        page = self.pages.pop(0) if len(self.pages) > 1 else self.pages[0]
        if isinstance(page, KubeError):
            raise page
        return page

    def watch(
        self, path: str, params: Mapping[str, str], loads: Callable[[bytes], Any] = orjson.loads
    ) -> Iterator[dict[str, Any]]:
        self.watch_calls.append(dict(params))
        if not self.watches:
            self.idle.set()
            return iter(())
        answer = self.watches.pop(0)
        if isinstance(answer, KubeError):
            raise answer
        return iter(answer)


def _node_list(rv: str, *nodes: dict[str, Any], cont: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return {"kind": "NodeList", "metadata": meta, "items": list(nodes)}


def _node(name: str, rv: str, cpu: str = "4") -> dict[str, Any]:
    body = node_body(name, cpu)
    body["metadata"]["resourceVersion"] = rv
    del body["kind"], body["apiVersion"]
    return body


def test_bad_objects_are_skipped_and_errors_back_off() -> None:
    bad = _node("bad", "3", cpu="lots")  # an unparsable quantity
    # The first page hands out a continue token and the next 410s: the list starts over. The last
    # page is also what every relist gets (node "a" is gone from it).
    pages: list[Any] = [
        _node_list("5", _node("a", "2"), cont="tok"),
        KubeError(410, "the provided continue parameter is too old", "Expired"),
        _node_list("6", _node("a", "2"), bad, cont="tok2"),
        _node_list("6", _node("b", "4")),
    ]
    fake = FakeClient(pages, watches=[])
    fake.watches = [
        KubeError(0, "connection refused", "TransportError"),  # re-watch from the same version
        [
            {"type": "BOOKMARK", "object": {"kind": "Node", "metadata": {"resourceVersion": "8"}}},
            {"type": "MODIFIED", "object": {**_node("b", "9", cpu="8"), "kind": "Node"}},
            {"type": "ERROR", "object": {"kind": "Status", "code": 500, "message": "boom"}},
        ],
        [],
    ]
    cache = Cache()
    informers = InformerSet(fake, backoff=FastBackoff, min_watch_timeout=1, watch_list=False)  # type: ignore[arg-type]
    reflector = informers.add(NODES, NodeHandler(cache), decode_node)
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(10)
        assert fake.idle.wait(10)
        assert fake.list_calls[0] == {"limit": "500"}
        assert fake.list_calls[1] == {"limit": "500", "continue": "tok"}
        assert "continue" not in fake.list_calls[2]  # restarted after the 410
        assert reflector.stats.decode_errors >= 1 and cache.get_node("bad") is None
        assert reflector.stats.bookmarks == 1 and reflector.stats.events == 1  # the MODIFIED of "b"
        # The relist replaced state: "a" is deleted, "b" is back to the listed version.
        node_b = cache.get_node("b")
        assert cache.get_node("a") is None
        assert node_b is not None and node_b.allocatable["cpu"] == 4
        first, second = fake.watch_calls[0], fake.watch_calls[1]
        assert first["resourceVersion"] == second["resourceVersion"] == "6"
        assert first["allowWatchBookmarks"] == "true"
        assert 1 <= int(first["timeoutSeconds"]) <= 2
        # The 500 ERROR event forced a relist (after a backoff), then a watch from its version.
        assert reflector.stats.errors >= 2 and reflector.stats.lists >= 2
        assert fake.watch_calls[2]["resourceVersion"] == "6"
    finally:
        informers.stop()


def test_the_first_list_is_a_watch_list_like_kube_schedulers(kc: KubeClient, namespace: str) -> None:
    """kube-scheduler v1.36's reflectors list with a watch-list stream (the WatchListClient gate is on
    by default), which the API server serves from its watch cache; berth asks the same, and the
    stream then goes on as the watch."""
    svc = f"/api/v1/namespaces/{namespace}/services"
    for i in range(3):
        create(kc, svc, service_body(f"s{i}"))
    objects = ClusterObjects()
    informers = InformerSet(kc)
    reflector = informers.add(SERVICES, ObjectHandler(objects, "Service"))
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(30)
        names = lambda: sorted(o["metadata"]["name"] for o in objects.list("Service", namespace))  # noqa: E731
        assert names() == ["s0", "s1", "s2"]
        assert reflector.stats.watch_lists == 1 and reflector.stats.pages == 0
        assert reflector.resource_version
        # Objects streamed by a watch carry kind and apiVersion, as listed ones are given them.
        assert all(
            o["kind"] == "Service" and o["apiVersion"] == "v1" for o in objects.list("Service", namespace)
        )
        kc.request("DELETE", f"{svc}/s1")
        create(kc, svc, service_body("s3"))
        eventually(lambda: names() == ["s0", "s2", "s3"], what="events on the watch-list's stream")
        assert reflector.stats.watches == 1  # no second watch request: the same stream went on
    finally:
        informers.stop()


def _initial_events_end(rv: str) -> dict[str, Any]:
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": "Node",
            "metadata": {"resourceVersion": rv, "annotations": {INITIAL_EVENTS_END: "true"}},
        },
    }


def test_a_refused_or_broken_watch_list_falls_back_to_a_paginated_list() -> None:
    """An API server that refuses sendInitialEvents (422: its WatchList gate is off) gets a paginated
    list, as client-go falls back; a watch-list whose stream ends before its initial events did
    falls back too, and the list then replaces what the stream had handed to the cache."""
    refused = FakeClient([_node_list("5", _node("a", "2"))], watches=[])
    refused.watches = [KubeError(422, "sendInitialEvents is forbidden", "Invalid")]
    cache = Cache()
    informers = InformerSet(refused, backoff=FastBackoff, min_watch_timeout=1)  # type: ignore[arg-type]
    reflector = informers.add(NODES, NodeHandler(cache), decode_node)
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(10)
        assert refused.idle.wait(10)
        first = refused.watch_calls[0]
        assert first["sendInitialEvents"] == "true" and first["resourceVersionMatch"] == "NotOlderThan"
        assert "resourceVersion" not in first and first["allowWatchBookmarks"] == "true"
        assert refused.list_calls == [{"limit": "500"}]
        assert cache.get_node("a") is not None
        assert reflector.stats.watch_lists == 0 and reflector.stats.lists == 1
        assert refused.watch_calls[1]["resourceVersion"] == "5"  # the watch after the list
    finally:
        informers.stop()

    added = lambda name, rv: {"type": "ADDED", "object": {**_node(name, rv), "kind": "Node"}}  # noqa: E731
    broken = FakeClient([_node_list("7", _node("a", "2"), _node("c", "6"))], watches=[])
    broken.watches = [[added("a", "2"), added("b", "3")]]  # no closing bookmark
    cache = Cache()
    informers = InformerSet(broken, backoff=FastBackoff, min_watch_timeout=1)  # type: ignore[arg-type]
    reflector = informers.add(NODES, NodeHandler(cache), decode_node)
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(10)
        assert broken.idle.wait(10)
        assert len(broken.list_calls) == 1
        assert cache.get_node("a") is not None and cache.get_node("c") is not None
        assert cache.get_node("b") is None  # streamed, then gone from the list: deleted
    finally:
        informers.stop()

    complete = FakeClient([_node_list("1")], watches=[])
    complete.watches = [[added("a", "2"), _initial_events_end("4")]]
    cache = Cache()
    informers = InformerSet(complete, backoff=FastBackoff, min_watch_timeout=1)  # type: ignore[arg-type]
    reflector = informers.add(NODES, NodeHandler(cache), decode_node)
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(10)
        assert complete.idle.wait(10)
        assert complete.list_calls == [] and reflector.stats.watch_lists == 1
        assert reflector.resource_version == "4" and cache.get_node("a") is not None
        assert (
            complete.watch_calls[1]["resourceVersion"] == "4"
        )  # the stream ended: re-watch from the bookmark
    finally:
        informers.stop()


def test_the_watch_list_client_gate_turns_the_watch_list_off() -> None:
    """``--feature-gates WatchListClient=false`` lists page by page, as kube-scheduler then does."""
    fake = FakeClient([_node_list("3", _node("a", "2"))], watches=[])
    try:
        featuregates.DEFAULT.set("WatchListClient=false")
        informers = InformerSet(fake, backoff=FastBackoff, min_watch_timeout=1)  # type: ignore[arg-type]
        reflector = informers.add(NODES, NodeHandler(Cache()), decode_node)
    finally:
        featuregates.DEFAULT.reset()
    assert not reflector.watch_list
    informers.start()
    try:
        assert informers.wait_for_handlers_sync(10)
        assert fake.idle.wait(10)
        assert fake.list_calls == [{"limit": "500"}]
        assert "sendInitialEvents" not in fake.watch_calls[0]
    finally:
        informers.stop()
    assert InformerSet(fake).add(NODES, NodeHandler(Cache())).watch_list  # type: ignore[arg-type]  # on by default


def test_stop_is_prompt_and_the_sync_check_names_waiting_resources(kc: KubeClient) -> None:
    informers = engine_informers(kc, Cache(), None)
    assert set(informers.reflectors) == {"nodes", "pods"}
    assert informers.handler_sync_check() == "waiting for handlers to sync: nodes, pods"
    informers.start()
    assert informers.wait_for_handlers_sync(30)
    assert informers.handler_sync_check() is None
    started = time.monotonic()
    informers.stop()
    assert time.monotonic() - started < 5
    assert all(not r._thread or not r._thread.is_alive() for r in informers.reflectors.values())
