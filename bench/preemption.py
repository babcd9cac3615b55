"""Preemption latency: one attempt of a pod that must preempt, on a full cluster of 500 nodes.

Every node (4 cpu) is full with four 1-cpu low-priority pods; each measured pod (priority 1000,
1 cpu) fits nowhere, so its attempt runs DefaultPreemption: the dry run over the candidates
(``max(10%, 100)`` of the nodes), pickOneNodeForPreemption and the eviction of one victim. The
table gives p50/p99 per preempting attempt. Repeatable: the engine is seeded.

    .venv/bin/python bench/preemption.py [--nodes 500] [--pods 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.api.objects import parse_node, parse_pod
from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine


def _pod(name: str, priority: int, node: str = "") -> dict[str, object]:
    spec: dict[str, object] = {
        "priority": priority,
        "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "500Mi"}}}
        ],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def run(num_nodes: int, num_pods: int, seed: int) -> list[float]:
    """Per-attempt seconds of ``num_pods`` preempting attempts."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=seed)
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
        for j in range(4):
            engine.cache.add_pod(parse_pod(_pod(f"low-{i}-{j}", 0, name)))
    times: list[float] = []
    for k in range(num_pods):
        pod = parse_pod(_pod(f"high-{k}", 1000))
        start = time.perf_counter()
        attempt = engine.schedule_one(pod)
        times.append(time.perf_counter() - start)
        assert attempt.victims, attempt.message
    return times


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    times = sorted(run(args.nodes, args.pods, args.seed))
    p50 = statistics.median(times) * 1000
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] * 1000
    print("| nodes | preempting attempts | p50 | p99 |")
    print("|---|---|---|---|")
    print(f"| {args.nodes} | {len(times)} | {p50:.1f} ms | {p99:.1f} ms |")


if __name__ == "__main__":
    main()
