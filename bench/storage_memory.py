"""What ``berth run`` holds per PersistentVolume, claim and CSINode: a census of the storage kinds.

The objects are what scheduler_perf's SchedulingCSIPVs creates (upstream's ``pv-csi.yaml`` and
``pvc.yaml``: a CSI PV pre-bound to its claim, the claim bound, both with the API server's metadata and
managedFields; a CSINode per node with an attach limit). Each goes through ``berth run``'s own path as a
watch event: the storage informer's reflector decodes the event's text, its handler stores the object
in the engine's objects, then the storage plugins' lister indexes it. ``tracemalloc`` counts what stays
allocated per object (after a collection) and the peak while the events are applied; the CPU per event
is the fastest of ``--rounds`` untraced rounds (that one follows the machine's load). Run it in two
checkouts to compare them (the bytes depend on the Python version, not on the machine's load):

    .venv/bin/python bench/storage_memory.py --volumes 1500 --nodes 500
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any, cast

import orjson

from app.backend.queue.scheduling_queue import PriorityQueue
from app.config import load_config
from app.kube.client import KubeClient
from app.kube.informer import CSI_NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, InformerSet, Reflector
from app.plugins.helper.storage import StorageLister, shared_storage_lister
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
    spec_fields: dict[str, Any] = {
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


def _apply_all(reflector: Reflector, events: list[bytes], index: Callable[[], object]) -> None:
    """Apply ``events`` as the reflector's watch does, then index the kind as the plugins do."""
    for text in events:
        reflector._apply(reflector._loads(text))  # the watch's own path: decode, store, handler
    index()


def _setup() -> tuple[InformerSet, StorageLister]:
    """``berth run``'s informers over a fresh engine, and the storage plugins' lister."""
    registry = in_tree_registry()
    objects = ClusterObjects()
    engine = Engine(load_config(None, registry), registry, objects=objects, seed=1)
    queue = PriorityQueue.for_profiles(
        engine.profiles, nominator=engine.nominator, namespace_labels=namespace_labels_lookup(objects)
    )
    # The client is never called: the events are applied directly.
    informers = scheduler_informers(cast(KubeClient, None), engine, queue, objects)
    lister = shared_storage_lister(objects)
    for index in (lister.pvs, lister.pvcs, lister.csi_nodes):
        index()  # the plugins' first lookup comes before the objects: later ones apply the changes
    return informers, lister


def _indexes(lister: StorageLister) -> list[Callable[[], object]]:
    return [lister.pvs, lister.pvcs, lister.csi_nodes]


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--volumes", type=int, default=1500, help="PersistentVolumes, and as many claims")
    parser.add_argument("--nodes", type=int, default=500, help="CSINodes")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (the fastest counts)")
    args = parser.parse_args()

    kinds = (PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, CSI_NODES)
    events = [
        [pv_event(i) for i in range(args.volumes)],
        [pvc_event(i) for i in range(args.volumes)],
        [csi_node_event(i) for i in range(args.nodes)],
    ]
    cpu = [float("inf")] * len(kinds)
    for _ in range(max(args.rounds, 1)):
        informers, lister = _setup()
        for i, (rtype, index) in enumerate(zip(kinds, _indexes(lister), strict=True)):
            start = time.process_time()
            _apply_all(informers.reflectors[rtype.resource], events[i], index)
            cpu[i] = min(cpu[i], time.process_time() - start)

    informers, lister = _setup()
    print(
        "| kind | objects | watch event JSON, B | kept per object, B | kept, MiB "
        "| peak while applying, MiB | CPU per event, µs |"
    )
    print("|---|---|---|---|---|---|---|")
    total = 0
    tracemalloc.start()
    for i, (rtype, index) in enumerate(zip(kinds, _indexes(lister), strict=True)):
        gc.collect()
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        _apply_all(informers.reflectors[rtype.resource], events[i], index)
        gc.collect()
        after, peak = tracemalloc.get_traced_memory()
        n = max(len(events[i]), 1)
        kept = after - before
        total += kept
        print(
            f"| {rtype.kind} | {len(events[i])} | {len(events[i][0]) if events[i] else 0} "
            f"| {kept / n:,.0f} | {kept / 2**20:.2f} | {(peak - before) / 2**20:.2f} | {cpu[i] / n * 1e6:.0f} |"
        )
    tracemalloc.stop()
    print(f"| total | | | | {total / 2**20:.2f} | | |")


if __name__ == "__main__":
    main()
