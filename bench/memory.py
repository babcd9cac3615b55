"""Where ``berth run``'s memory goes: the fixed cost, per node, per pod, per kept decision trace, and
the peak against the steady RSS, in process (no API server), one table.

- **fixed cost**: the RSS of a fresh interpreter, then after importing what ``berth run`` imports
  (the CLI, ``app.standalone.run``, ``.setup`` and ``.endpoints``), then each of the largest third-party
  packages (and berth modules that bring them) on that path alone in a fresh interpreter that has already imported the standard library's
  networking (ssl, asyncio, http.client, json): an upper bound of what dropping it would save.
- **per node**: ``tracemalloc`` bytes the cache and the first cycle's snapshot add per node
  (bench/engine.py's scheduler_perf node; the parsed Node itself is the informer's, not counted).
- **per pod**: bytes per scheduled (assumed) pod in the cache, the pod object not counted.
- **per trace**: bytes ``/debug/pods``' store keeps per pod, for a scheduled pod and for a pod that
  failed on every node.
- **peak vs steady**: a fresh process (no tracemalloc) adds the nodes and schedules the pods, recording
  VmRSS and VmHWM after each phase: a peak above the steady RSS is a transient.

Usage: ``python bench/memory.py [--nodes 5000] [--pods 1000]``.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import make_node, make_pod

from app.api.objects import Pod, parse_pod
from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from app.standalone.traces import DecisionTraces

ROOT = Path(__file__).resolve().parent.parent
RUN_MODULES = ("app.cli.main", "app.standalone.run", "app.standalone.setup", "app.standalone.endpoints")
PACKAGES = (
    "fastapi",  # the HTTPS endpoints (app.server.app); brings opentelemetry (fastapi.telemetry)
    "uvicorn",  # the endpoints' server; brings click
    "app.kube.k8s",  # kubernetes' Configuration and ApiClient: requests, yaml, oauthlib, dateutil
    "requests",
    "prometheus_client",
    "opentelemetry.trace",
    "click",
    "app.simulate.report",  # the explanations of /debug/pods, imported on the first request
)
BASELINE_IMPORTS = "import ssl, asyncio, http.client, json"


def _rss_after(statement: str) -> tuple[float, float]:
    """(VmRSS MiB before, after) running ``statement`` in a fresh interpreter."""
    probe = (
        "import sys\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS'):\n"
        "            return int(line.split()[1]) / 1024\n"
        f"{BASELINE_IMPORTS if statement in PACKAGES else ''}\n"
        "before = rss()\n"
        f"import {statement}\n"
        "print(before, rss())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), float(out[1])


def fixed_cost() -> list[tuple[str, str]]:
    """Rows: the interpreter, berth run's imports, and each large package's own cost."""
    bare, imported = _rss_after(", ".join(RUN_MODULES))
    rows = [
        ("interpreter RSS", f"{bare:.1f} MiB"),
        ("+ berth run's imports", f"{imported - bare:.1f} MiB"),
    ]
    for package in PACKAGES:
        before, after = _rss_after(package)
        rows.append((f"  of which at most {package}", f"{after - before:.1f} MiB"))
    return rows


def _engine() -> Engine:
    registry = in_tree_registry()
    return Engine(load_config(None, registry), registry, seed=1)


def _traced(action: Callable[[], Any]) -> int:
    """Bytes of Python objects ``action`` leaves allocated (after a collection)."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    action()
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - before


def _unschedulable_pod(i: int) -> Pod:
    res = {"cpu": "64", "memory": "500Mi"}
    meta = {"name": f"big-{i}", "namespace": "default", "uid": f"big-{i}"}
    spec = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": res}}]}
    return parse_pod({"metadata": meta, "spec": spec})


def per_object(num_nodes: int, num_pods: int) -> list[tuple[str, str]]:
    """Rows: bytes per node, per cached pod, per kept trace (scheduled, failed)."""
    engine = _engine()
    nodes = [make_node(i) for i in range(num_nodes)]
    pods = [make_pod(i) for i in range(num_pods)]
    failing = [_unschedulable_pod(i) for i in range(50)]
    traces = DecisionTraces()
    tracemalloc.start()

    def add_nodes() -> None:
        for node in nodes:
            engine.cache.add_node(node)
        engine.schedule_one(make_pod(-1))  # builds the snapshot's NodeInfos

    node_bytes = _traced(add_nodes)
    pod_bytes = _traced(lambda: [engine.schedule_one(p) for p in pods[: num_pods // 2]])
    scheduled = num_pods - num_pods // 2

    def schedule_and_keep(batch: list[Pod]) -> None:
        for pod in batch:
            traces.record(engine.schedule_one(pod), list)

    with_trace = _traced(lambda: schedule_and_keep(pods[num_pods // 2 :]))
    failed = _traced(lambda: schedule_and_keep(failing))
    tracemalloc.stop()
    scored = engine.schedule_one(make_pod(-2)).result
    return [
        (f"per node (cache + snapshot), {num_nodes} nodes", f"{node_bytes / num_nodes:,.0f} B"),
        ("per scheduled pod in the cache", f"{pod_bytes / (num_pods // 2):,.0f} B"),
        (
            f"per trace of a scheduled pod ({scored.evaluated_nodes if scored else 0} nodes scored)",
            f"{with_trace / scheduled - pod_bytes / (num_pods // 2):,.0f} B",
        ),
        (f"per trace of a pod failed on {num_nodes} nodes", f"{failed / len(failing):,.0f} B"),
    ]


def _phases(num_nodes: int, num_pods: int) -> None:
    """(In a child process) print VmRSS/VmHWM in MiB after each phase."""

    def report(phase: str) -> None:
        status = dict(
            line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line
        )
        rss, hwm = (int(status[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))
        print(f"{phase}\t{rss:.1f}\t{hwm:.1f}")

    report("imported")
    engine = _engine()
    traces = DecisionTraces()
    for i in range(num_nodes):
        engine.cache.add_node(make_node(i))
    report(f"{num_nodes} nodes")
    for i in range(num_pods):
        traces.record(engine.schedule_one(make_pod(i)), list)
    report(f"+ {num_pods} pods scheduled and traced")
    gc.collect()
    report("after a full collection")


def peak_vs_steady(num_nodes: int, num_pods: int) -> list[tuple[str, str]]:
    """Rows: each phase's VmRSS and VmHWM, from a fresh process."""
    code = f"import sys; sys.path.insert(0, 'bench'); import memory; memory._phases({num_nodes}, {num_pods})"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    rows = []
    for line in out.stdout.splitlines():
        phase, rss, hwm = line.split("\t")
        rows.append((f"RSS / peak: {phase}", f"{rss} / {hwm} MiB"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=1000)
    args = parser.parse_args()
    rows = fixed_cost() + per_object(args.nodes, args.pods) + peak_vs_steady(args.nodes, args.pods)
    print("| what | memory |\n|---|---|")
    for what, value in rows:
        print(f"| {what} | {value} |")


if __name__ == "__main__":
    main()
