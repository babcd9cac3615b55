"""What the node memo (app/scheduler/node_memo.py) costs where it cannot help, and what it keeps.

berth run turns the memo on for every pod. Two things must stay small for that to be free when pods
are not copies of each other:

- the lookup per cycle (``NodeMemos.for_pod``: ``same_shape`` against up to 8 kept shapes), timed
  here on a stream of all-distinct pods, next to the whole cycle's CPU with the memo off and on;
- the memory of the memos' per-node lists at scheduler_perf's node counts, measured with
  tracemalloc after SchedulingBasic's identical pods (allocations made in node_memo.py, plus the
  rejection statuses only the memo keeps alive).

Nodes and pods are ``bench/engine.py``'s (scheduler_perf's node-default and pod-default).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import make_node, make_pod

from app.api.objects import Pod, parse_pod
from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler import node_memo
from app.scheduler.scheduler import Engine


def _engine(nodes: int, memo: bool) -> Engine:
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    engine.algorithm.memoize_node_local = memo
    engine.algorithm.time_sampled_cycles_in_full = True  # as berth run
    for i in range(nodes):
        engine.cache.add_node(make_node(i))
    return engine


def _distinct_pod(i: int) -> Pod:
    """pod-default with a label of its own: a shape never seen before (as a stream of unrelated pods)."""
    res = {"cpu": "100m", "memory": "500Mi"}
    return parse_pod(
        {
            "metadata": {
                "name": f"distinct-{i}",
                "namespace": "default",
                "uid": f"d-{i}",
                "labels": {"i": str(i)},
            },
            "spec": {
                "containers": [
                    {"name": "pause", "image": "registry.k8s.io/pause:3.10.2", "resources": {"requests": res}}
                ]
            },
        }
    )


def lookup_cost(nodes: int, pods: int) -> dict[str, float]:
    """µs per ``for_pod`` on distinct pods with 8 followed memos kept, and the cycle's CPU ms."""
    out: dict[str, float] = {}
    for memo in (False, True):
        engine = _engine(nodes, memo)
        fwk = engine.profiles["default-scheduler"]
        # 8 kept shapes that the memo follows (each seen twice), as after 8 Deployments
        for k in range(node_memo.MAX_MEMOS):
            for j in range(2):
                pod = make_pod(1_000_000 + 2 * k + j, "SchedulingBasic")
                pod.labels = {"app": f"shape-{k}"}  # a shape per k, copies within it
                pod.raw["metadata"]["labels"] = pod.labels
                engine.schedule_one(pod)
        stream = [_distinct_pod(i) for i in range(pods)]
        started = time.process_time()
        for pod in stream:
            engine.schedule_one(pod)
        out["cycle_ms_" + ("on" if memo else "off")] = (time.process_time() - started) * 1000 / pods
        if memo:
            memos = engine.algorithm._memos
            snapshot = engine.algorithm.snapshot
            probe = [_distinct_pod(pods + i) for i in range(10 * pods)]
            gc.collect()
            gc.disable()  # a collection of the whole heap would be timed as the lookup's
            started = time.perf_counter()
            for pod in probe:
                memos.for_pod(fwk, pod, snapshot)
            out["for_pod_us"] = (time.perf_counter() - started) * 1e6 / len(probe)
            gc.enable()
            kept = memos._memos
            out["followed_kept"] = sum(1 for m in kept if m.cycles >= 2)
    return out


def memory(nodes: int, pods: int) -> dict[str, float]:
    """KiB the memos hold after ``pods`` identical pods on ``nodes`` nodes (one shape)."""
    engine = _engine(nodes, True)
    for i in range(2):  # the shape is followed from its second cycle; measure from there
        engine.schedule_one(make_pod(i, "SchedulingBasic"))
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for i in range(2, pods):
        engine.schedule_one(make_pod(i, "SchedulingBasic"))
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    here = tracemalloc.Filter(True, node_memo.__file__)
    grown = sum(
        s.size_diff for s in after.filter_traces([here]).compare_to(before.filter_traces([here]), "filename")
    )
    memos = engine.algorithm._memos._memos
    statuses: dict[int, Any] = {}
    for m in memos:
        for v in m.verdicts:
            if v is not None:
                statuses[id(v)] = v
    status_bytes = sum(sys.getsizeof(s) + sys.getsizeof(s.reasons) for s in statuses.values())
    index = memos[0].index
    shared = sys.getsizeof(index.names) + sys.getsizeof(index.ring) + sys.getsizeof(index._index_of or {})
    shared += sum(sys.getsizeof(i) for i in index.ring[: len(index.nodes)] if i > 256)
    per_memo = [
        sum(sys.getsizeof(x) for x in (m.verdicts, m.filter_generations, m.score_generations, m._statics))
        + sum(sys.getsizeof(c) for c in m.score_columns)
        for m in memos
        if m.cycles >= 2
    ]
    return {
        "shared_kib": shared / 1024,
        "per_memo_kib": max(per_memo) / 1024,
        "node_memo_kib": grown / 1024,
        "statuses": len(statuses),
        "statuses_kib": status_bytes / 1024,
        "scored_rows": sum(1 for m in memos for g in m.score_generations if g != -1),
    }


def main() -> None:
    """Print both tables."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__)
    parser.add_argument("--nodes", default="500,5000", help="comma-separated node counts")
    parser.add_argument("--pods", type=int, default=300, help="pods per measurement")
    args = parser.parse_args()
    print(f"{'nodes':>6} {'for_pod µs':>11} {'cycle ms off':>13} {'cycle ms on':>12} {'lookup share':>13}")
    for n in (int(x) for x in args.nodes.split(",")):
        r = lookup_cost(n, args.pods)
        share = r["for_pod_us"] / 1000 / r["cycle_ms_off"]
        print(
            f"{n:>6} {r['for_pod_us']:>11.2f} {r['cycle_ms_off']:>13.3f} {r['cycle_ms_on']:>12.3f} {share:>12.2%}",
            flush=True,
        )
    print()
    print(
        f"{'nodes':>6} {'pods':>6} {'shared KiB':>11} {'per memo KiB':>13} {'node_memo.py KiB':>17}"
        f" {'kept statuses':>14} {'their KiB':>10} {'scored nodes':>13}"
    )
    for n in (int(x) for x in args.nodes.split(",")):
        m = memory(n, args.pods * 10)
        print(
            f"{n:>6} {args.pods * 10:>6} {m['shared_kib']:>11.1f} {m['per_memo_kib']:>13.1f}"
            f" {m['node_memo_kib']:>17.1f} {m['statuses']:>14.0f} {m['statuses_kib']:>10.1f}"
            f" {m['scored_rows']:>13.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
