"""What ``berth run`` holds per PersistentVolume, claim and CSINode: a census of the storage kinds.

The objects are what scheduler_perf's SchedulingCSIPVs creates (upstream's ``pv-csi.yaml`` and
``pvc.yaml``: a CSI PV pre-bound to its claim, the claim bound, both with the API server's metadata and
managedFields; a CSINode per node with an attach limit). Each goes through ``berth run``'s own path as a
watch event: the storage informer's reflector decodes the event's text, its handler stores the object
in the engine's objects, then the storage plugins' lister indexes it. ``tracemalloc`` counts what stays
allocated per object (after a collection) and the peak while the events are applied. Run it in two
checkouts to compare them (the numbers depend on the Python version, not on the machine's load):

    .venv/bin/python bench/storage_memory.py --volumes 1500 --nodes 500
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from collections.abc import Callable
from typing import Any, cast

import orjson

from app.backend.queue.scheduling_queue import PriorityQueue
from app.config import load_config
from app.kube.client import KubeClient
from app.kube.informer import CSI_NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, Reflector
from app.plugins.helper.storage import shared_storage_lister
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import ClusterObjects, Engine
from app.standalone.handlers import namespace_labels_lookup, scheduler_informers

NAMESPACE = "namespace-2"
DRIVER = "ebs.csi.aws.com"
TIME = "2026-12-05T08:00:00Z"


def _managed(manager: str, fields: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    entry = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "time": TIME,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    return {**entry, "subresource": subresource} if subresource else entry


def _meta(name: str, i: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "uid": f"0a1b2c3d-0000-4000-8000-{i:012d}",
        "resourceVersion": str(100000 + i),
        "creationTimestamp": TIME,
        **extra,
    }


def pv_event(i: int) -> bytes:
    """A watch event of a CSI PV pre-bound to its claim and Bound, as the API server sends it."""
    spec_fields = {
        "f:accessModes": {},
        "f:capacity": {".": {}, "f:storage": {}},
        "f:claimRef": {".": {}, "f:name": {}, "f:namespace": {}, "f:uid": {}},
        "f:csi": {".": {}, "f:driver": {}, "f:volumeHandle": {}},
        "f:persistentVolumeReclaimPolicy": {},
        "f:volumeMode": {},
    }
    pv = {
        "kind": "PersistentVolume",
        "apiVersion": "v1",
        "metadata": _meta(
            f"pv-{i:05d}",
            i,
            finalizers=["kubernetes.io/pv-protection"],
            managedFields=[
                _managed("scheduler_perf", {"f:spec": spec_fields}),
                _managed("scheduler_perf", {"f:status": {"f:phase": {}}}, "status"),
            ],
        ),
        "spec": {
            "capacity": {"storage": "1Gi"},
            "csi": {"driver": DRIVER, "volumeHandle": f"vol-{i:05d}"},
            "accessModes": ["ReadOnlyMany"],
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": NAMESPACE, "name": f"pvc-{i:05d}"},
            "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Bound", "lastPhaseTransitionTime": TIME},
    }
    return orjson.dumps({"type": "ADDED", "object": pv})


def pvc_event(i: int) -> bytes:
    """A watch event of a bound claim (upstream's ``pvc.yaml`` with its volume)."""
    pvc = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "metadata": _meta(
            f"pvc-{i:05d}",
            i,
            namespace=NAMESPACE,
            annotations={"pv.kubernetes.io/bind-completed": "true"},
            finalizers=["kubernetes.io/pvc-protection"],
            managedFields=[
                _managed(
                    "scheduler_perf",
                    {
                        "f:metadata": {"f:annotations": {".": {}, "f:pv.kubernetes.io/bind-completed": {}}},
                        "f:spec": {
                            "f:accessModes": {},
                            "f:resources": {"f:requests": {".": {}, "f:storage": {}}},
                        },
                    },
                ),
                _managed("scheduler_perf", {"f:status": {"f:phase": {}}}, "status"),
            ],
        ),
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": f"pv-{i:05d}",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Bound"},
    }
    return orjson.dumps({"type": "ADDED", "object": pvc})


def csi_node_event(i: int) -> bytes:
    """A watch event of a node's CSINode with the driver's attach limit (39, as the workload sets)."""
    node = {
        "kind": "CSINode",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": _meta(
            f"node-{i:05d}",
            i,
            managedFields=[_managed("scheduler_perf", {"f:spec": {"f:drivers": {}}})],
        ),
        "spec": {"drivers": [{"name": DRIVER, "nodeID": f"node-{i:05d}", "allocatable": {"count": 39}}]},
    }
    return orjson.dumps({"type": "ADDED", "object": node})


def _feed(reflector: Reflector, events: list[bytes], index: Callable[[], object]) -> tuple[int, int]:
    """Apply ``events`` as the reflector's watch does, then index the kind as the plugins do: the
    bytes that stay allocated, and the peak above the start while applying."""
    index()  # the plugins' first lookup comes before the objects: later ones apply the changes
    gc.collect()
    tracemalloc.reset_peak()
    start, _ = tracemalloc.get_traced_memory()
    for text in events:
        reflector._apply(reflector._loads(text))  # the watch's own path: decode, store, handler
    index()
    gc.collect()
    end, peak = tracemalloc.get_traced_memory()
    return end - start, peak - start


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--volumes", type=int, default=1500, help="PersistentVolumes, and as many claims")
    parser.add_argument("--nodes", type=int, default=500, help="CSINodes")
    args = parser.parse_args()

    registry = in_tree_registry()
    objects = ClusterObjects()
    engine = Engine(load_config(None, registry), registry, objects=objects, seed=1)
    queue = PriorityQueue.for_profiles(
        engine.profiles, nominator=engine.nominator, namespace_labels=namespace_labels_lookup(objects)
    )
    # The client is never called: the events are applied directly.
    informers = scheduler_informers(cast(KubeClient, None), engine, queue, objects)
    lister = shared_storage_lister(objects)
    pvs = [pv_event(i) for i in range(args.volumes)]
    pvcs = [pvc_event(i) for i in range(args.volumes)]
    csi_nodes = [csi_node_event(i) for i in range(args.nodes)]
    rows = []
    tracemalloc.start()
    for rtype, events, index in (
        (PERSISTENT_VOLUMES, pvs, lister.pvs),
        (PERSISTENT_VOLUME_CLAIMS, pvcs, lister.pvcs),
        (CSI_NODES, csi_nodes, lister.csi_nodes),
    ):
        kept, peak = _feed(informers.reflectors[rtype.resource], events, index)
        count = max(len(events), 1)
        rows.append((rtype.kind, len(events), len(events[0]) if events else 0, kept / count, kept, peak))
    tracemalloc.stop()

    print(
        "| kind | objects | watch event JSON, B | kept per object, B | kept, MiB | peak while applying, MiB |"
    )
    print("|---|---|---|---|---|---|")
    for kind, n, text, per, kept, peak in rows:
        print(f"| {kind} | {n} | {text} | {per:,.0f} | {kept / 2**20:.2f} | {peak / 2**20:.2f} |")
    total = sum(r[4] for r in rows)
    print(f"| total | | | | {total / 2**20:.2f} | |")


if __name__ == "__main__":
    main()
