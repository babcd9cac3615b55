"""Engine throughput on scheduler_perf-like workloads (kube-scheduler's test/integration/scheduler_perf).

Nodes: 4 cpu, 32Gi, 110 pods (node-default.yaml), spread over three zones. Pods: 100m cpu / 500Mi
requests (pod-default.yaml), plus, per workload:

- SchedulingBasic: nothing else.
- TopologySpreading: pod-with-topology-spreading.yaml (maxSkew 5 over zones, DoNotSchedule).
- SchedulingPodAntiAffinity: pod-with-pod-anti-affinity.yaml (required anti-affinity on hostname).
- SpreadingWithPreferredAntiAffinity: the zone spread constraint of TopologySpreading plus a
  preferred anti-affinity term on hostname (pod-with-preferred-pod-anti-affinity.yaml's term), so
  that both PodTopologySpread and InterPodAffinity filter and score every pod.

``initPods`` are scheduled first, then ``measurePods`` are timed. Prints one table row per
workload and node count. Usage: ``python bench/engine.py [--nodes 500,5000] [--workloads ...] [--kube]``.

``--kube`` runs kube-scheduler's own framework on the same nodes and pods next to each row
(``bench/kubeframework``, a Go program built from the Go module cache by ``bench/kube_framework.py``:
scheduler.New, then UpdateSnapshot + SchedulePod + Assume + Reserve + Permit per pod) and prints both
with the ratios berth/kube: pods/s (higher is better for berth) and CPU ms per pod (lower is better).
kube-scheduler filters and scores on 16 goroutines, so its CPU per pod counts every core it used.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import kube_framework

from app.api.objects import Node, Pod, parse_node, parse_pod
from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Attempt, Engine

ZONES = ("zone-a", "zone-b", "zone-c")


def make_node(i: int) -> Node:
    """A scheduler_perf default node, in one of three zones."""
    name = f"scheduler-perf-{i}"
    raw: dict[str, Any] = {
        "metadata": {
            "name": name,
            "uid": f"node-{i}",
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": ZONES[i % 3]},
        },
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"},
        },
    }
    return parse_node(raw)


def make_pod(i: int, workload: str = "SchedulingBasic") -> Pod:
    """A scheduler_perf pod of ``workload``."""
    res = {"cpu": "100m", "memory": "500Mi"}
    meta: dict[str, Any] = {"name": f"pod-{i}", "namespace": "default", "uid": f"pod-{i}"}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10.2",
                "ports": [{"containerPort": 80}],
                "resources": {"limits": res, "requests": res},
            }
        ]
    }
    if workload in ("TopologySpreading", "SpreadingWithPreferredAntiAffinity"):
        meta["labels"] = {"color": "blue"}
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 5,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    if workload == "SpreadingWithPreferredAntiAffinity":
        term = {"labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": "kubernetes.io/hostname"}
        preferred = [{"weight": 1, "podAffinityTerm": term}]
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    elif workload == "SchedulingPodAntiAffinity":
        meta["labels"] = {"color": "green"}
        term = {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname"}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return parse_pod({"metadata": meta, "spec": spec})


WORKLOADS = (
    "SchedulingBasic",
    "TopologySpreading",
    "SpreadingWithPreferredAntiAffinity",
    "SchedulingPodAntiAffinity",
)


def run(
    workload: str, num_nodes: int, init_pods: int, measure_pods: int, node_memo: bool = True
) -> dict[str, float]:
    """Schedule init pods, then time the measured pods (see :func:`time_pods`). ``node_memo``: the
    node-local memo as ``berth run`` has it (sampled cycles in full), else the full path always."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    engine.algorithm.memoize_node_local = node_memo
    engine.algorithm.time_sampled_cycles_in_full = True
    for i in range(num_nodes):
        engine.cache.add_node(make_node(i))
    for i in range(init_pods):
        engine.schedule_one(make_pod(i, workload))
    pods = [make_pod(init_pods + i, workload) for i in range(measure_pods)]
    return time_pods(lambda i: engine.schedule_one(pods[i - init_pods]), init_pods, measure_pods)


def time_pods(schedule: Callable[[int], Attempt], first: int, count: int) -> dict[str, float]:
    """Time ``schedule(i)`` for ``count`` pods from ``first``: pods/s, per-pod latency and CPU time.

    CPU time per pod is reported beside wall time because on a shared machine it is the steadier of
    the two: other processes lengthen the wall time of a run, much less the CPU time it uses.
    """
    gc.collect()
    latencies = []
    cpu_start = time.process_time()
    start = time.perf_counter()
    for i in range(first, first + count):
        t0 = time.perf_counter()
        attempt = schedule(i)
        latencies.append(time.perf_counter() - t0)
        if attempt.status != "Scheduled":
            raise SystemExit(f"pod {attempt.pod.key} not scheduled: {attempt.message}")
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    latencies.sort()
    return {
        "pods_per_s": count / elapsed,
        "cpu_ms": cpu * 1000 / count,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


def main() -> None:
    """Run the workloads and print a table."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__)
    parser.add_argument("--nodes", default="500,5000", help="comma-separated node counts")
    parser.add_argument("--init-pods", type=int, default=1000)
    parser.add_argument("--measure-pods", type=int, default=1000)
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated workload names")
    parser.add_argument(
        "--kube", action="store_true", help="also time kube-scheduler's framework (Go) on the same pods"
    )
    parser.add_argument(
        "--node-memo",
        choices=("on", "off", "both"),
        default="on",
        help="berth's node memo (app/scheduler/node_memo.py): on as in berth run, off, or a row for each",
    )
    args = parser.parse_args()
    memos = {"on": (True,), "off": (False,), "both": (False, True)}[args.node_memo]
    binary = None
    if args.kube:
        try:
            binary = kube_framework.build()
        except kube_framework.BuildError as err:
            raise SystemExit(f"engine.py --kube: {err}") from err
    header = f"{'workload':<36} {'nodes':>6} {'memo':>4} {'pods/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'cpu ms/pod':>11}"
    if binary is not None:
        header += f" {'kube pods/s':>11} {'kube cpu ms':>11} {'pods/s ratio':>12} {'cpu ratio':>9}"
    print(header, flush=True)
    for workload in args.workloads.split(","):
        if workload not in WORKLOADS:
            raise SystemExit(f"engine.py: unknown workload {workload!r} (one of {', '.join(WORKLOADS)})")
        for n in (int(x) for x in args.nodes.split(",")):
            init, measure = args.init_pods, args.measure_pods
            if workload == "SchedulingPodAntiAffinity":
                # At most one such pod per node: keep the pod count within the node count.
                init, measure = min(init, n // 5), min(measure, n - n // 5)
            kube = None
            for memo in memos:
                r = run(workload, n, init, measure, memo)
                row = (
                    f"{workload:<36} {n:>6} {'on' if memo else 'off':>4} {r['pods_per_s']:>9.1f}"
                    f" {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['cpu_ms']:>11.2f}"
                )
                if binary is not None:
                    if kube is None:
                        kube = kube_framework.run(binary, workload, n, init, measure)
                    row += (
                        f" {kube['pods_per_s']:>11.1f} {kube['cpu_ms']:>11.2f}"
                        f" {r['pods_per_s'] / kube['pods_per_s']:>12.2f} {r['cpu_ms'] / kube['cpu_ms']:>9.2f}"
                    )
                print(row, flush=True)


if __name__ == "__main__":
    main()
