"""DRA throughput like scheduler_perf's SchedulingWithResourceClaimTemplate (test/integration/
scheduler_perf/dra), beside SchedulingBasic on the same nodes.

500 nodes each publish one ResourceSlice of ``--devices-per-node`` devices, exactly as scheduler_perf's
test driver publishes them (createResourceDriver with maxClaimsPerNode 10; ``driver_slice``, which
bench/scheduler_perf.py uses for that op too) for one DeviceClass; every pod has its own ResourceClaim asking for
one device of that class (what the resourceclaim controller makes from the template: that step is
the controller's, not the scheduler's). ``initPods`` are scheduled first (their claims stay
allocated, so later pods search past more used devices), then ``measurePods`` are timed through the
engine's whole cycle (PreFilter to PreBind, the claim written back). Prints pods/s, latency and CPU
ms per pod for both workloads. Usage: ``python bench/dra.py [--nodes 500] [--init-pods 2500]
[--measure-pods 2500]``.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine import make_node, time_pods
from engine import make_pod as basic_pod

from app.api.objects import Pod, parse_pod
from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import ClusterObjects, Engine

DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"
SHARERS = 5  # pods per claim in SchedulingWithResourceClaim (upstream's resourceclaim.yaml, 5 consumers)


def driver_slice(driver: str, node: str, devices: int) -> dict[str, Any]:
    """The ResourceSlice scheduler_perf's test driver publishes for ``node`` (createResourceDriver,
    ``resourceSlice`` in test/integration/scheduler_perf/dra.go): named after the node, a one-slice
    pool of the same name, ``devices`` devices ``instance-<i>`` with its four attributes and a 1Gi
    ``memory`` capacity each."""
    spec: dict[str, Any] = {
        "driver": driver,
        "nodeName": node,
        "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
    }
    if devices:  # a nil list in Go: no field at all
        spec["devices"] = [
            {
                "name": f"instance-{i}",
                "attributes": {
                    "model": {"string": "A100"},
                    "family": {"string": "GPU"},
                    "driverVersion": {"version": "1.2.3"},
                    "dra.example.com/numa": {"int": i},
                },
                "capacity": {"memory": {"value": "1Gi"}},
            }
            for i in range(devices)
        ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": spec,
    }


def dra_objects(num_nodes: int, devices_per_node: int) -> list[dict[str, Any]]:
    """The DeviceClass (templates/deviceclass.yaml) and the test driver's slice for every node
    (node names as bench/engine.py makes them)."""
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    return [
        device_class,
        *(driver_slice(DRIVER, f"scheduler-perf-{i}", devices_per_node) for i in range(num_nodes)),
    ]


def claim_for(i: int) -> dict[str, Any]:
    """The claim the resourceclaim controller would make for pod ``i`` from the template."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"pod-{i}-claim", "namespace": "default", "uid": f"claim-{i}"},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": CLASS}}]}},
    }


def claiming_pod(i: int, claim: int | None = None) -> Pod:
    """pod-with-claim-template.yaml, with its generated claim recorded in the status (``claim``:
    the number of the claim it uses, its own by default)."""
    res = {"cpu": "100m", "memory": "500Mi"}
    return parse_pod(
        {
            "metadata": {"name": f"pod-{i}", "namespace": "default", "uid": f"pod-{i}"},
            "spec": {
                "resourceClaims": [
                    {"name": "resource", "resourceClaimName": f"pod-{i if claim is None else claim}-claim"}
                ],
                "containers": [
                    {"name": "pause", "image": "registry.k8s.io/pause:3.10.2", "resources": {"requests": res}}
                ],
            },
        }
    )


def run(workload: str, num_nodes: int, devices: int, init_pods: int, measure_pods: int) -> dict[str, float]:
    """Schedule init pods, then time the measured ones; pods/s, latency and CPU ms per pod."""
    registry = in_tree_registry()
    dra = workload != "SchedulingBasic"
    # SchedulingWithResourceClaim: every claim is shared by SHARERS consecutive pods (the first
    # allocates it, the others find it allocated and reserved), as upstream's workload shares them.
    sharers = SHARERS if workload == "SchedulingWithResourceClaim" else 1
    objects = ClusterObjects()
    if dra:
        for obj in dra_objects(num_nodes, devices):
            objects.add(obj)
        for i in range(0, init_pods + measure_pods, sharers):
            objects.add(claim_for(i))
    engine = Engine(load_config(None, registry), registry, objects=objects, seed=1)
    for i in range(num_nodes):
        engine.cache.add_node(make_node(i))

    def make(i: int) -> Pod:
        return claiming_pod(i, i - i % sharers) if dra else basic_pod(i)

    for i in range(init_pods):
        engine.schedule_one(make(i))
    pods = [make(init_pods + i) for i in range(measure_pods)]
    return time_pods(lambda i: engine.schedule_one(pods[i - init_pods]), init_pods, measure_pods)


def main() -> None:
    """Run both workloads and print a table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices-per-node", type=int, default=10)
    parser.add_argument("--init-pods", type=int, default=2500)
    parser.add_argument("--measure-pods", type=int, default=2500)
    parser.add_argument(
        "--workloads",
        default="SchedulingBasic,SchedulingWithResourceClaimTemplate,SchedulingWithResourceClaim",
        help="comma-separated: SchedulingBasic, SchedulingWithResourceClaimTemplate, SchedulingWithResourceClaim",
    )
    args = parser.parse_args()
    print(
        f"{'workload':<38} {'nodes':>6} {'pods/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'cpu ms/pod':>11}",
        flush=True,
    )
    for workload in args.workloads.split(","):
        r = run(workload, args.nodes, args.devices_per_node, args.init_pods, args.measure_pods)
        print(
            f"{workload:<38} {args.nodes:>6} {r['pods_per_s']:>9.1f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}"
            f" {r['cpu_ms']:>11.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
