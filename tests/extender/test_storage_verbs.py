"""The extender's /filter and /prioritize apply the volume plugins, in both node modes, over the storage
objects berth's informers (or a state file) hold."""

from __future__ import annotations

from typing import Any

import pytest

from app.config import load_config
from app.extender.service import ExtenderService
from app.extender.wire import ExtenderArgs
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import ClusterObjects, Engine
from builders import make_node, make_pod

HOSTNAME = "kubernetes.io/hostname"
OBJECTS: list[dict[str, Any]] = [
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    },
    {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "local-n2"},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["n2"]}]}
                    ]
                }
            },
        },
        "status": {"phase": "Available"},
    },
    {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {
            "storageClassName": "local",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    },
]
NO_PV = "node(s) didn't find available persistent volumes to bind"


@pytest.fixture
def engine() -> Engine:
    registry = in_tree_registry()
    objects = ClusterObjects({"": OBJECTS})
    e = Engine(load_config(None, registry), registry, objects=objects)
    for name in ("n1", "n2"):
        e.cache.add_node(make_node(name))
    return e


def claim_pod() -> Any:
    return make_pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])


def test_filter_node_names_mode(engine: Engine) -> None:
    result = ExtenderService(engine).filter(ExtenderArgs(claim_pod(), None, ["n1", "n2"]))
    assert result.node_names == ["n2"]
    assert result.unresolvable == {"n1": NO_PV}


def test_filter_nodes_mode(engine: Engine) -> None:
    nodes = [make_node("n1"), make_node("n2")]
    result = ExtenderService(engine).filter(ExtenderArgs(claim_pod(), nodes, None))
    assert result.nodes is not None and [n.name for n in result.nodes] == ["n2"]
    assert result.unresolvable == {"n1": NO_PV}


def test_filter_missing_claim_rejects_every_node(engine: Engine) -> None:
    pod = make_pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "nope"}}])
    result = ExtenderService(engine).filter(ExtenderArgs(pod, None, ["n1", "n2"]))
    assert result.node_names == []
    assert result.unresolvable == {n: 'persistentvolumeclaim "nope" not found' for n in ("n1", "n2")}


def test_prioritize_and_filter_write_nothing(engine: Engine) -> None:
    """kube-scheduler binds the volumes in its own PreBind: the extender's verbs only evaluate."""
    service = ExtenderService(engine)
    priorities, error = service.prioritize(ExtenderArgs(claim_pod(), None, ["n2"]))
    assert error == "" and [p.host for p in priorities] == ["n2"]
    assert isinstance(engine.objects, ClusterObjects)
    pv = engine.objects.list_cluster("PersistentVolume")[0]
    assert "claimRef" not in pv["spec"]
