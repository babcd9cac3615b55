"""What Filter and Score over a pool of workers would gain berth (issue 27, "how berth would use 8 or
16 cores"). kube-scheduler runs Filter and Score on 16 goroutines; berth runs them on one core.

On bench/engine.py's SchedulingBasic (scheduler_perf's default nodes and pods, in process), prints:

1. **Where a scheduling cycle goes**: per pod, the time in Filter (``_find_nodes_that_pass_filters``)
   and in PreScore + Score (``prioritize_nodes``), the two phases kube-scheduler parallelizes, and the
   rest (queue-free here: snapshot, PreFilter, selection, Assume, Reserve, Permit, bind bookkeeping).
   Their share bounds any pool's gain (Amdahl): with a fraction p parallel on k workers, at best
   1 / ((1 - p) + p / k).
2. **A thread pool, measured**: Filter split over ``--threads`` threads (each a contiguous slice of
   the nodes). Under the GIL (CPython 3.11 here) the threads take turns, so this shows the cost of
   the handoff, not a gain. A free-threaded CPython (3.13t/3.14t) would run them at once; none is
   installable on this machine (``uv python list`` offers them, but the download host is not
   reachable, and Debian 12 packages no free-threaded build).
3. **A process pool's fixed cost, measured**: a forked worker holding its own copy of the cache
   gets, per pod, the pod and the pods bound since its last round (pickled, over a pipe) and answers
   with the names of its feasible nodes. The round trip with an empty Filter is the per-pod price
   a process pool pays before any gain; with it, the estimated time per pod on k processes.

Nothing here changes how berth schedules; it is a measurement. Usage::

    bench/worker_pool.py [--nodes 5000] [--init-pods 1000] [--measure-pods 500] [--threads 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from engine import make_node, make_pod

from app.api.objects import Pod
from app.config import load_config
from app.framework.types import NodeInfo
from app.plugins.registry import in_tree_registry
from app.scheduler.algorithm import Algorithm
from app.scheduler.scheduler import Engine


def build(nodes: int, init_pods: int) -> Engine:
    """An engine with ``nodes`` default nodes and ``init_pods`` pods already scheduled."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    for i in range(nodes):
        engine.cache.add_node(make_node(i))
    for i in range(init_pods):
        engine.schedule_one(make_pod(i))
    return engine


class PhaseTimer:
    """Wraps an Algorithm method to add up the time spent in it."""

    def __init__(self, algorithm: Algorithm, name: str) -> None:
        self.seconds = 0.0
        original: Callable[..., Any] = getattr(algorithm, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        setattr(algorithm, name, timed)


def phases(engine: Engine, first: int, count: int) -> dict[str, float]:
    """Milliseconds per pod: the whole cycle, Filter, PreScore + Score."""
    filters = PhaseTimer(engine.algorithm, "_find_nodes_that_pass_filters")
    scores = PhaseTimer(engine.algorithm, "prioritize_nodes")
    start = time.perf_counter()
    for i in range(first, first + count):
        engine.schedule_one(make_pod(i))
    total = time.perf_counter() - start
    return {
        "cycle": total * 1000 / count,
        "filter": filters.seconds * 1000 / count,
        "score": scores.seconds * 1000 / count,
    }


def thread_pooled_filter(engine: Engine, threads: int) -> ThreadPoolExecutor:
    """Make the engine's Filter run over ``threads`` slices of the nodes at once (each slice with
    its own share of the nodes to find); returns the pool to shut down."""
    pool = ThreadPoolExecutor(threads)
    algorithm = engine.algorithm
    original = algorithm._find_nodes_that_pass_filters

    def pooled(
        fwk: Any,
        state: Any,
        pod: Pod,
        diagnosis: Any,
        nodes: Sequence[NodeInfo],
        feasible: Any = None,
        memo: Any = None,
    ) -> list[NodeInfo]:
        # ``memo`` (berth capacity's remembered verdicts) follows the whole node list, not a slice
        # of it: the slices are filtered in full, which gives the same verdicts.
        size = (len(nodes) + threads - 1) // threads
        slices = [nodes[i : i + size] for i in range(0, len(nodes), size)]
        parts = pool.map(lambda part: original(fwk, state, pod, diagnosis, part), slices)
        found = [] if feasible is None else feasible
        for part in parts:
            found.extend(part)
        return found

    algorithm._find_nodes_that_pass_filters = pooled  # type: ignore[method-assign]
    return pool


def worker(conn: Connection, engine: Engine) -> None:
    """A forked worker: apply the binds it is sent, answer with the feasible nodes of its slice."""
    while True:
        message = conn.recv_bytes()
        if not message:
            return
        pod, bound = pickle.loads(message)
        for bound_pod in bound:
            engine.cache.add_pod(bound_pod)
        conn.send_bytes(pickle.dumps([pod.name]))


def process_round_trip(engine: Engine, pods: list[Pod], bound: list[Pod]) -> float:
    """Milliseconds per pod for the pickled round trip to a forked worker (pod and one bound pod
    out, a list of names back), the fixed price of a process pool."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=worker, args=(child, engine), daemon=True)
    process.start()
    start = time.perf_counter()
    for pod, done in zip(pods, bound, strict=True):
        parent.send_bytes(pickle.dumps((pod, [done])))
        parent.recv_bytes()
    elapsed = time.perf_counter() - start
    parent.send_bytes(b"")
    process.join(5)
    return elapsed * 1000 / len(pods)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--init-pods", type=int, default=1000)
    parser.add_argument("--measure-pods", type=int, default=500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are printed")
    args = parser.parse_args()
    engine = build(args.nodes, args.init_pods)
    pooled_engine = build(args.nodes, args.init_pods)
    pool = thread_pooled_filter(pooled_engine, args.threads)
    rounds: list[tuple[dict[str, float], dict[str, float]]] = []
    first = args.init_pods
    try:
        for _ in range(args.rounds):  # interleaved: the machine's load hits both alike
            rounds.append(
                (phases(engine, first, args.measure_pods), phases(pooled_engine, first, args.measure_pods))
            )
            first += args.measure_pods
    finally:
        pool.shutdown()
    serial = {k: statistics.median(r[0][k] for r in rounds) for k in rounds[0][0]}
    threaded = {k: statistics.median(r[1][k] for r in rounds) for k in rounds[0][1]}
    p = (serial["filter"] + serial["score"]) / serial["cycle"]

    bound = [
        dataclasses.replace(make_pod(i), node_name="scheduler-perf-0")
        for i in range(first, first + args.measure_pods)
    ]
    pods = [make_pod(first + args.measure_pods + i) for i in range(args.measure_pods)]
    ipc = statistics.median(process_round_trip(engine, pods, bound) for _ in range(3))

    print(
        f"SchedulingBasic, {args.nodes} nodes, {args.rounds} rounds of {args.measure_pods} pods "
        f"after {args.init_pods} (medians)"
    )
    print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print("| | ms per pod |")
    print("|---|---|")
    print(f"| whole cycle, serial | {serial['cycle']:.3f} |")
    print(f"| of it Filter | {serial['filter']:.3f} |")
    print(f"| of it PreScore + Score | {serial['score']:.3f} |")
    print(f"| Filter on {args.threads} threads (GIL): whole cycle | {threaded['cycle']:.3f} |")
    print(f"| of it Filter | {threaded['filter']:.3f} |")
    print(f"| process pool round trip (pickled pod + one bind out, names back) | {ipc:.3f} |")
    print(f"\nparallel share p = {p:.2f}")
    print("\n| workers | Amdahl bound (speed-up) | process pool estimate ms/pod | speed-up |")
    print("|---|---|---|---|")
    for k in (2, 8, 16):
        bound_speedup = 1 / ((1 - p) + p / k)
        estimate = serial["cycle"] * (1 - p) + serial["cycle"] * p / k + ipc
        print(f"| {k} | {bound_speedup:.2f} | {estimate:.3f} | {serial['cycle'] / estimate:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
