"""The scheduling queue's cost per operation with thousands of pending pods.

The queue is built as ``berth run`` builds it (``PriorityQueue.for_profiles`` over the default
profile, so PrioritySort's tuple keys and the in-tree plugins' hints). For N pods (one container,
100m / 500Mi) it times:

1. ``add``: N pods into the active queue (PreEnqueue runs for each);
2. ``pop + fail``: pop each and requeue it rejected by NodeResourcesFit with no event in flight
   (it lands in the unschedulable pods);
3. ``node add``: one Node/Add that fits every pod: NodeResourcesFit's hint runs N times and every
   pod moves to backoff;
4. ``node update, no fit``: the same pods back aside, then an allocatable update too small for
   them: N hints, no move;
5. ``flush``: the backoff flush once every backoff ended;
6. ``assigned pod add``: with the N pods aside (rejected by NodeResourcesFit), 1,000 AssignedPod/Add
   events, one per pod bound elsewhere, as every bind of a running scheduler makes: no hint of
   NodeResourcesFit is registered for it, so no pod moves (the cost every later pod pays for the
   unschedulable ones, Unschedulable/5kNodes in scheduler_perf).

Usage: ``.venv/bin/python bench/scheduling_queue.py [--pods 5000]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from app.backend.queue.scheduling_queue import PriorityQueue  # noqa: E402
from app.config import load_config  # noqa: E402
from app.framework.events import EVENT_NODE_ADD, NODE, ActionType, ClusterEvent  # noqa: E402
from app.plugins.registry import in_tree_registry  # noqa: E402
from app.scheduler.scheduler import Engine  # noqa: E402
from builders import make_node, make_pod  # noqa: E402


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def timed(label: str, n: int, fn: Callable[[], None]) -> None:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    print(f"{label:<24} {n:>6} ops  {seconds * 1e3:8.1f} ms  {seconds / n * 1e6:7.1f} us/op")


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5000)
    n = parser.parse_args().pods
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry)
    clock = Clock()
    q = PriorityQueue.for_profiles(engine.profiles, clock=clock)
    pods = [
        make_pod(f"p{i}", requests=[{"cpu": "100m", "memory": "500Mi"}], priority=i % 7) for i in range(n)
    ]

    def add_all() -> None:
        for pod in pods:
            q.add(pod)

    timed("add", n, add_all)

    def pop_and_fail() -> None:
        for _ in range(n):
            qpi = q.pop(timeout=0)
            assert qpi is not None
            qpi.unschedulable_plugins = {"NodeResourcesFit"}
            q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())

    timed("pop + fail", n, pop_and_fail)
    assert q.counts()["unschedulable"] == n
    big = make_node("big", allocatable={"cpu": "64", "memory": "256Gi", "pods": "110"})
    timed("node add (all move)", n, lambda: q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, big))
    assert q.counts()["backoff"] == n

    clock.now += 11
    timed("flush backoff", n, q.flush_backoff_q_completed)
    assert q.counts()["active"] == n
    pop_and_fail()
    small = make_node("small", allocatable={"cpu": "50m", "memory": "256Gi", "pods": "110"})
    smaller = make_node("small", allocatable={"cpu": "40m", "memory": "256Gi", "pods": "110"})
    update = ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
    timed("node update (no move)", n, lambda: q.move_all_to_active_or_backoff_queue(update, smaller, small))
    assert q.counts()["unschedulable"] == n
    bound = [
        make_pod(f"bound{i}", requests=[{"cpu": "100m", "memory": "500Mi"}], node_name="node-1")
        for i in range(1000)
    ]

    def assigned_pods_added() -> None:
        for pod in bound:
            q.assigned_pod_added(pod)

    timed("assigned pod add", len(bound), assigned_pods_added)
    assert q.counts()["unschedulable"] == n


if __name__ == "__main__":
    main()
