"""The plugins' node loops alone: Filter and Score time per node, for the pods of scheduler_perf.

``bench/engine.py`` times whole scheduling cycles; this isolates what a cycle pays per node, the
part that grows with the cluster: every active Filter plugin on one node (as the algorithm's
inlined loop calls them), and Score (every Score plugin's ``score_nodes``, normalization and the
weighted totals, as ``Framework.run_score_plugins``) divided by the nodes scored.

Nodes and pods are ``bench/engine.py``'s (scheduler_perf's node-default and pod-default), plus a
pod with scheduler_perf's pod-with-node-affinity.yaml requirement (``topology.kubernetes.io/zone In
[zone-a, zone-b]``: a third of the nodes fail it). ``--init-pods`` are scheduled first so that the
nodes hold pods; then the same ``--nodes-per-cycle`` nodes (500 of 5000 at the default adaptive
percentage) are filtered and scored ``--number`` times per repeat, and the fastest of
``--repeat`` repeats is printed: on a shared machine the minimum is the reading least disturbed by
other processes. The loop is warm (the same nodes each time); in a real run the nodes are colder.

Usage: ``python bench/node_loops.py [--nodes 5000] [--init-pods 300] [--repeat 40]``.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from typing import Any

from engine import make_node, make_pod

from app.api.objects import Pod, parse_pod
from app.config import load_config
from app.framework.cycle_state import CycleState
from app.framework.runtime import Framework
from app.framework.types import NodeInfo
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine


def node_affinity_pod() -> Pod:
    """A pod-default pod with pod-with-node-affinity.yaml's required term (zones a and b of three)."""
    res = {"cpu": "100m", "memory": "500Mi"}
    term = {
        "matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a", "zone-b"]}
        ]
    }
    raw: dict[str, Any] = {
        "metadata": {"name": "node-affinity", "namespace": "default", "uid": "node-affinity"},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            },
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10.2",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": res, "requests": res},
                }
            ],
        },
    }
    return parse_pod(raw)


def fastest_ns_per_node(work: Callable[[], object], nodes: int, number: int, repeat: int) -> float:
    """The fastest repeat of ``number`` calls of ``work``, in nanoseconds per node."""
    return min(timeit.repeat(work, number=number, repeat=repeat)) / number / nodes * 1e9


def measure(
    fwk: Framework, all_nodes: list[NodeInfo], pod: Pod, args: argparse.Namespace
) -> tuple[float, float]:
    """(Filter ns per node, Score ns per node) for ``pod`` over the first ``--nodes-per-cycle`` nodes."""
    nodes = all_nodes[: args.nodes_per_cycle]
    state = CycleState()
    _, status, _ = fwk.run_pre_filter_plugins(state, pod, all_nodes)
    if status is not None:
        raise SystemExit(f"node_loops.py: PreFilter failed: {status.message()}")
    filters = fwk.active_filters(state)

    def filter_nodes() -> None:
        for info in nodes:
            for pl in filters:
                if pl.filter(state, pod, info) is not None:
                    break

    if fwk.run_pre_score_plugins(state, pod, nodes) is not None:
        raise SystemExit("node_loops.py: PreScore failed")
    filter_ns = fastest_ns_per_node(filter_nodes, len(nodes), args.number, args.repeat)
    score_ns = fastest_ns_per_node(
        lambda: fwk.run_score_plugins(state, pod, nodes), len(nodes), args.number, args.repeat
    )
    return filter_ns, score_ns


def main() -> None:
    """Build the cluster, then print one row per pod kind."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--init-pods", type=int, default=300)
    parser.add_argument("--nodes-per-cycle", type=int, default=500)
    parser.add_argument("--number", type=int, default=4, help="calls per repeat")
    parser.add_argument("--repeat", type=int, default=40, help="repeats; the fastest is printed")
    args = parser.parse_args()
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    for i in range(args.nodes):
        engine.cache.add_node(make_node(i))
    for i in range(args.init_pods):
        engine.schedule_one(make_pod(i))
    fwk = next(iter(engine.profiles.values()))
    snapshot = fwk.handle.snapshot
    print(f"{'pod':<16} {'active filters':<78} {'Filter ns/node':>14} {'Score ns/node':>13}")
    for label, pod in (("pod-default", make_pod(args.init_pods)), ("node-affinity", node_affinity_pod())):
        filter_ns, score_ns = measure(fwk, snapshot.list(), pod, args)
        state = CycleState()
        fwk.run_pre_filter_plugins(state, pod, snapshot.list())
        names = ",".join(pl.name for pl in fwk.active_filters(state))
        print(f"{label:<16} {names:<78} {filter_ns:>14.0f} {score_ns:>13.0f}", flush=True)


if __name__ == "__main__":
    main()
