"""What ``berth run``'s two cycles cost in process, without an API server.

``berth run`` spends a pod's CPU on three threads (``bench/thread_cpu.py`` reads them end to end):
the scheduling thread (the scheduling cycle), the binding workers (the binding cycle: the POST of the
Binding and its bookkeeping: the queue, the cache, metrics, the trace, the ``Scheduled`` Event handed
to the sink, the log line) and the pod watch. This script times the first two as the standalone
scheduler runs them (``app/standalone/scheduler.py``), on scheduler_perf's default nodes and pods
(``bench/engine.py``'s), with the cache binder in place of the POST and an Event sink that is never
started (events are queued, not written). What is left of a binding worker's CPU end to end is then
the POST itself and the threads' hand-overs.

Prints one row per node count: µs of CPU per pod for each cycle. ``--profile`` adds cProfile's top
functions of the binding cycle (``--profile scheduling`` for the scheduling cycle).

    .venv/bin/python bench/standalone_cycle.py --nodes 500,5000 --pods 1500
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import logging
import os
import pstats
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine import make_node, make_pod

from app import logs
from app.api.objects import Pod
from app.backend.queue.scheduling_queue import PriorityQueue
from app.config import load_config
from app.kube.events import EventBroadcaster
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from app.standalone.scheduler import Scheduler


class _Status:
    """The pod-status writer of ``berth run``; no scheduled pod needs one."""

    def update_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        raise SystemExit(f"pod {pod.key} failed to schedule: {message}")

    def nominate_for_binding(self, pod: Pod, node_name: str) -> None:
        """Nothing to write: scheduler_perf's pods have no claims or volumes."""


def measure(nodes: int, pods: int, profile: str | None) -> tuple[float, float, str]:
    """Schedule and bind ``pods`` pods on ``nodes`` nodes, one by one; CPU µs per pod of the
    scheduling and of the binding cycle, and the profile's text when asked."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    for i in range(nodes):
        engine.cache.add_node(make_node(i))
    queue = PriorityQueue.for_profiles(engine.profiles, nominator=engine.nominator)
    sink = EventBroadcaster(None, queue_size=pods + 1)  # type: ignore[arg-type]  # never started: no writes
    scheduler = Scheduler(
        engine,
        queue,
        lookup_pod=lambda key: None,
        recorders={name: sink.recorder(name) for name in engine.profiles},
        status=_Status(),
    )
    for i in range(pods):
        queue.add(make_pod(i))
    profiler = cProfile.Profile() if profile else None

    @contextlib.contextmanager
    def profiled(phase: str) -> Iterator[None]:
        """Under the profiler when ``phase`` is the cycle profiled."""
        if profiler is None or profile != phase:
            yield
            return
        profiler.enable()
        try:
            yield
        finally:
            profiler.disable()

    scheduling = binding = 0.0
    gc.collect()
    for _ in range(pods):
        qpi = queue.pop(0)
        assert qpi is not None
        fwk = engine.framework_for(qpi.pod)
        assert fwk is not None
        t0 = time.process_time()
        with profiled("scheduling"):
            start = time.perf_counter()
            state = engine.new_cycle_state()
            attempt = engine.scheduling_cycle(fwk, state, qpi.pod)
            trace = scheduler.traces.prepare(attempt, scheduler._node_names, qpi.attempts)
        t1 = time.process_time()
        with profiled("binding"):
            scheduler._binding_cycle(fwk, state, qpi, trace.light, start, trace)
        binding += time.process_time() - t1
        scheduling += t1 - t0
    text = ""
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        text = out.getvalue()
    return 1e6 * scheduling / pods, 1e6 * binding / pods, text


def main() -> None:
    """Print the table (and the profile)."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__)
    parser.add_argument("--nodes", default="500", help="comma-separated node counts")
    parser.add_argument("--pods", type=int, default=1500, help="pods scheduled and bound per row")
    parser.add_argument("--verbosity", type=int, default=2, help="-v, as scheduler_perf runs both schedulers")
    parser.add_argument(
        "--profile", nargs="?", const="binding", choices=["binding", "scheduling"], help="cProfile one cycle"
    )
    args = parser.parse_args()
    logs.configure(args.verbosity)
    devnull = open(os.devnull, "w")  # noqa: SIM115  # the log lines are formatted and written, not shown
    for handler in logging.getLogger(logs.LOGGER_NAME).handlers:
        handler.setStream(devnull)  # type: ignore[attr-defined]
    print("| nodes | pods | scheduling cycle µs/pod | binding cycle without the POST µs/pod |")
    print("|---|---|---|---|")
    profiles = []
    for nodes in (int(n) for n in args.nodes.split(",")):
        scheduling, binding, text = measure(nodes, args.pods, args.profile)
        print(f"| {nodes} | {args.pods} | {scheduling:.0f} | {binding:.0f} |")
        profiles.append((nodes, text))
    for nodes, text in profiles:
        if text:
            print(f"\n{args.profile} cycle at {nodes} nodes (cProfile, by own time):\n{text}")


if __name__ == "__main__":
    main()
