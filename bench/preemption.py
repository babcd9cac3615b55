"""Preemption latency: attempts of pods that must preempt, or that nothing fits, on a full cluster.

Workloads (``--workload``), each in process on a seeded engine (repeatable):

- ``full-nodes`` (default): every node (4 cpu) is full with four 1-cpu low-priority pods; each
  measured pod (priority 1000, 1 cpu) fits nowhere, so its attempt runs DefaultPreemption: the dry
  run over the candidates (``max(10%, 100)`` of the nodes), pickOneNodeForPreemption and the
  eviction of one victim.
- ``preemption-basic``: scheduler_perf's PreemptionBasic shapes (its pod-low-priority and
  pod-high-priority templates): four 900m pods of priority 0 per 4-cpu node, measured pods of
  3 cpu and priority 10 that evict three of them.
- ``unschedulable``: scheduler_perf's Unschedulable shapes: 100 small pods on the first nodes,
  measured pods of 9 cpu and priority 10 that no node can hold, so every attempt fails on every
  node and preemption finds it cannot help.

The table gives p50/p99 wall time and the mean CPU time per attempt.

    .venv/bin/python bench/preemption.py [--workload full-nodes] [--nodes 500] [--pods 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.api.objects import parse_node, parse_pod
from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine


@dataclass(frozen=True)
class Workload:
    """Per node: ``init_per_node`` pods of ``init_cpu`` (priority 0) on the first
    ``init_nodes`` nodes (None: every node); measured pods of ``cpu`` at ``priority``."""

    init_cpu: str
    init_per_node: int
    init_nodes: int | None
    cpu: str
    priority: int
    preempts: bool


WORKLOADS = {
    "full-nodes": Workload("1", 4, None, "1", 1000, True),
    "preemption-basic": Workload("900m", 4, None, "3", 10, True),
    "unschedulable": Workload("100m", 1, 100, "9", 10, False),
}


def _pod(name: str, priority: int, cpu: str, node: str = "") -> dict[str, object]:
    spec: dict[str, object] = {
        "priority": priority,
        "containers": [
            {
                "name": "c",
                "image": "x",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def run(workload: Workload, num_nodes: int, num_pods: int, seed: int) -> tuple[list[float], float]:
    """Per-attempt wall seconds of ``num_pods`` attempts, and their total CPU seconds."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=seed)
    init_nodes = num_nodes if workload.init_nodes is None else min(num_nodes, workload.init_nodes)
    for i in range(num_nodes):
        name = f"node-{i}"
        zone = f"zone-{i % 3}"
        engine.cache.add_node(
            parse_node(
                {
                    "metadata": {
                        "name": name,
                        "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
                    },
                    "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
                }
            )
        )
        for j in range(workload.init_per_node if i < init_nodes else 0):
            engine.cache.add_pod(parse_pod(_pod(f"low-{i}-{j}", 0, workload.init_cpu, name)))
    times: list[float] = []
    cpu_start = time.process_time()
    for k in range(num_pods):
        pod = parse_pod(_pod(f"high-{k}", workload.priority, workload.cpu))
        start = time.perf_counter()
        attempt = engine.schedule_one(pod)
        times.append(time.perf_counter() - start)
        if workload.preempts:
            assert attempt.victims, attempt.message
        else:
            assert attempt.status == "Unschedulable" and not attempt.victims, attempt.message
    return times, time.process_time() - cpu_start


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="full-nodes")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    times, cpu = run(WORKLOADS[args.workload], args.nodes, args.pods, args.seed)
    times.sort()
    p50 = statistics.median(times) * 1000
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] * 1000
    print("| workload | nodes | attempts | p50 | p99 | CPU per attempt |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {args.workload} | {args.nodes} | {len(times)} | {p50:.1f} ms | {p99:.1f} ms"
        f" | {cpu / len(times) * 1000:.2f} ms |"
    )


if __name__ == "__main__":
    main()
