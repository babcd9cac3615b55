"""Engine throughput on kube-scheduler's scheduler_perf storage workloads, beside SchedulingBasic.

Nodes and pods as ``bench/engine.py`` (scheduler_perf's node-default and pod-default templates); every
pod of a storage workload also has one PersistentVolumeClaim, bound to a PersistentVolume of its own,
created (as scheduler_perf's createPods does with its PV and PVC templates) just before the pod:

- SchedulingBasic: no volume (the baseline of the same run).
- SchedulingCSIPVs: pv-csi.yaml (CSI driver ebs.csi.aws.com), and a CSINode per node reporting an
  attach limit of 39 for that driver: VolumeBinding checks the bound PV, NodeVolumeLimits counts the
  node's CSI volumes, VolumeRestrictions looks the claim up.
- SchedulingInTreePVs: pv-aws.yaml (in-tree AWS EBS, migrated to the CSI driver): the same, with the
  CSINode announcing the migration.
- SchedulingWaitForFirstConsumerPVs (not in scheduler_perf): the claim is unbound, of a
  WaitForFirstConsumer class, and each node has a local PV of its own: VolumeBinding matches a PV on
  every node in Filter, assumes it in Reserve and binds it in PreBind.

``initPods`` are scheduled first, then ``measurePods`` are timed. Prints one table row per workload
and node count, and the per-pod CPU time of each storage workload relative to SchedulingBasic's at the
same node count. Usage: ``python bench/storage.py [--nodes 500,5000] [--init-pods N] [--measure-pods N]``.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine import make_node, make_pod, time_pods

from app.api.objects import Pod, parse_pod
from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Attempt, ClusterObjects, Engine

DRIVER = "ebs.csi.aws.com"
WORKLOADS = (
    "SchedulingBasic",
    "SchedulingCSIPVs",
    "SchedulingInTreePVs",
    "SchedulingWaitForFirstConsumerPVs",
)
WFFC_CLASS = "local-wffc"


def csi_node(name: str, in_tree: bool) -> dict[str, Any]:
    """The node's CSINode: the EBS driver with scheduler_perf's limit of 39 volumes."""
    annotations = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"} if in_tree else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"drivers": [{"name": DRIVER, "nodeID": name, "allocatable": {"count": 39}}]},
    }


def bound_pair(i: int, workload: str) -> list[dict[str, Any]]:
    """Pod ``i``'s claim and the PV it is bound to (pv-csi.yaml or pv-aws.yaml, pvc.yaml)."""
    pv_name, claim = f"pv-{i}", f"pvc-{i}"
    source: dict[str, Any] = (
        {"csi": {"driver": DRIVER, "volumeHandle": f"vol-{i}"}}
        if workload == "SchedulingCSIPVs"
        else {"awsElasticBlockStore": {"volumeID": f"vol-{i}"}}
    )
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadOnlyMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": claim, "uid": f"uid-{claim}"},
            **source,
        },
        "status": {"phase": "Bound"},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim,
            "namespace": "default",
            "uid": f"uid-{claim}",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": pv_name,
        },
        "status": {"phase": "Bound"},
    }
    return [pv, pvc]


def wffc_claim(i: int) -> dict[str, Any]:
    """An unbound claim of the WaitForFirstConsumer class."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": f"pvc-{i}", "namespace": "default", "uid": f"uid-pvc-{i}"},
        "spec": {
            "storageClassName": WFFC_CLASS,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def local_pv(node: str, j: int) -> dict[str, Any]:
    """A local PV on ``node``."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"local-{node}-{j}"},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": WFFC_CLASS,
            "local": {"path": f"/mnt/disk{j}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            },
        },
        "status": {"phase": "Available"},
    }


def storage_pod(i: int) -> Pod:
    """pod-default.yaml with the pod's claim as its one volume."""
    pod = make_pod(i)
    volumes = [{"name": "vol", "persistentVolumeClaim": {"claimName": f"pvc-{i}"}}]
    return parse_pod({**pod.raw, "spec": {**pod.raw["spec"], "volumes": volumes}})


def run(workload: str, num_nodes: int, init_pods: int, measure_pods: int) -> dict[str, float]:
    """Schedule init pods, then time the measured pods (each created with its storage objects)."""
    registry = in_tree_registry()
    objects = ClusterObjects()
    engine = Engine(load_config(None, registry), registry, seed=1, objects=objects)
    per_node = (init_pods + measure_pods) // num_nodes + 2
    for i in range(num_nodes):
        node = make_node(i)
        engine.cache.add_node(node)
        if workload in ("SchedulingCSIPVs", "SchedulingInTreePVs"):
            objects.add(csi_node(node.name, workload == "SchedulingInTreePVs"))
        elif workload == "SchedulingWaitForFirstConsumerPVs":
            for j in range(per_node):
                objects.add(local_pv(node.name, j))
    if workload == "SchedulingWaitForFirstConsumerPVs":
        objects.add(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": WFFC_CLASS},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )

    def schedule(i: int) -> Attempt:
        if workload == "SchedulingBasic":
            return engine.schedule_one(make_pod(i))
        for obj in (
            [wffc_claim(i)] if workload == "SchedulingWaitForFirstConsumerPVs" else bound_pair(i, workload)
        ):
            objects.add(obj)
        return engine.schedule_one(storage_pod(i))

    for i in range(init_pods):
        schedule(i)
    return time_pods(schedule, init_pods, measure_pods)


def main() -> None:
    """Run the workloads and print a table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", default="500,5000", help="comma-separated node counts")
    parser.add_argument("--init-pods", type=int, default=1000)
    parser.add_argument("--measure-pods", type=int, default=1000)
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated workload names")
    args = parser.parse_args()
    print(
        f"{'workload':<36} {'nodes':>6} {'pods/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'cpu ms/pod':>11} {'x basic':>8}",
        flush=True,
    )
    for n in (int(x) for x in args.nodes.split(",")):
        basic: float | None = None
        for workload in args.workloads.split(","):
            r = run(workload, n, args.init_pods, args.measure_pods)
            if workload == "SchedulingBasic":
                basic = r["cpu_ms"]
            ratio = f"{r['cpu_ms'] / basic:>8.2f}" if basic else f"{'':>8}"
            print(
                f"{workload:<36} {n:>6} {r['pods_per_s']:>9.1f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}"
                f" {r['cpu_ms']:>11.2f} {ratio}",
                flush=True,
            )


if __name__ == "__main__":
    main()
