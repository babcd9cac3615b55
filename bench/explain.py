"""What explanations and verified hints cost ``berth simulate``: the same generated state simulated
without the explainer, with details and weights only, and with hints, interleaved, best of N.

``python bench/explain.py [--nodes 1000] [--running 4000] [--pending 400] [--unschedulable 40] [--repeat 3]``

The state: nodes in three zones (a tenth tainted ``dedicated=batch:NoSchedule``), running pods filling
them about half, pending pods that fit, and pending pods that do not (too big for any node, or asking
for a label no node has): each of those gets its hints checked. Prints one table; run it on an idle
machine or compare the columns of one run (they are interleaved).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.simulate import ClusterState, new_engine, parse_state, run_simulation
from app.simulate.hints import RecordExplainer


def generate(nodes: int, running: int, pending: int, unschedulable: int) -> str:
    docs = []
    for i in range(nodes):
        taint = "\n  taints: [{key: dedicated, value: batch, effect: NoSchedule}]" if i % 10 == 9 else ""
        docs.append(
            f"apiVersion: v1\nkind: Node\nmetadata:\n  name: n{i}\n  labels: {{kubernetes.io/hostname: n{i}, "
            f"topology.kubernetes.io/zone: z{i % 3}}}\nspec:{taint or ' {}'}\n"
            f'status:\n  allocatable: {{cpu: "16", memory: 64Gi, pods: "110"}}\n'
        )
    for i in range(running):
        docs.append(
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: r{i}, namespace: default}}\nspec:\n  nodeName: n{i % nodes}\n"
            f'  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{8 * nodes // max(running, 1) or 1}"}}}}}}]\n'
        )
    every = max(pending // max(unschedulable, 1), 1)
    for i in range(pending):
        # Spread through the queue, so the cluster changes between two of them (no reuse of hints).
        if i % every == 0 and i // every < unschedulable:
            extra = "  nodeSelector: {disk: nvme}\n" if (i // every) % 2 else ""
            cpu = "2" if (i // every) % 2 else "40"
        else:
            extra, cpu = "", "500m"
        docs.append(
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: default}}\nspec:\n{extra}"
            f'  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]\n'
        )
    return "---\n".join(docs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--running", type=int, default=4000)
    parser.add_argument("--pending", type=int, default=400)
    parser.add_argument("--unschedulable", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    registry = in_tree_registry()
    cfg = load_config(None, registry)
    text = generate(args.nodes, args.running, args.pending, args.unschedulable)

    def run(mode: str) -> Callable[[], float]:
        def once() -> float:
            state: ClusterState = parse_state(text, "bench.yaml")
            start = time.perf_counter()
            engine = new_engine(state, cfg, registry, 1)
            observer = (
                None
                if mode == "off"
                else RecordExplainer(
                    state, cfg, registry, 1, max_hinted_pods=args.pending if mode == "hints" else 0
                )
            )
            result = run_simulation(state, engine, observer)
            assert result.count("Unschedulable") >= args.unschedulable
            return time.perf_counter() - start

        return once

    modes = {"no explainer": run("off"), "details + weights": run("details"), "details + hints": run("hints")}
    best = dict.fromkeys(modes, float("inf"))
    for _ in range(args.repeat):
        for name, once in modes.items():
            best[name] = min(best[name], once())
    print(
        f"{args.nodes} nodes, {args.running} running pods, {args.pending} pending "
        f"({args.unschedulable} unschedulable), best of {args.repeat}"
    )
    print(f"{'mode':<20}{'seconds':>10}{'vs none':>10}{'per unschedulable pod (ms)':>30}")
    base = best["no explainer"]
    for name, seconds in best.items():
        extra = (seconds - base) / max(args.unschedulable, 1) * 1000
        print(f"{name:<20}{seconds:>10.2f}{seconds / base:>9.2f}x{extra:>30.0f}")


if __name__ == "__main__":
    main()
