"""``berth simulate`` and ``berth capacity`` at cluster scale: time and peak memory by input format and
output mode (issue 23, item 6).

Writes one synthetic cluster state (by default 5,000 nodes, 20,000 running pods, 2,000 pending pods) as
JSON and as YAML, then runs ``berth`` as a user would, one process per row, and reads each process's
peak RSS from the kernel (``wait4``): ``simulate`` from JSON and from YAML with ``-o table``, and with
``-o json``; then ``berth capacity`` of a basic pod on the same nodes. Every run is seeded, so repeated
runs do the same work. Usage::

    python bench/simulate.py [--nodes 5000] [--running 20000] [--pending 2000] [--repeat 1] [--only simulate|capacity]

The nodes: 16 cpus, 64Gi, 110 pods, in 10 zones and three instance types; every tenth node has a
NoSchedule taint. Running pods: four a node, 0.5 to 2 cpus and 1 to 4Gi each. Pending pods: half plain
requests, a quarter with a zone nodeSelector, a quarter tolerating the taint; some do not fit (48 cpus).
The capacity pod asks for 1 cpu and 2Gi.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml

BERTH = [str(Path(sys.executable).parent / "berth")]  # the venv's entry point, as a user runs it
ZONES = 10
INSTANCE_TYPES = ("m5.4xlarge", "c5.4xlarge", "r5.4xlarge")
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}


def make_node(i: int) -> dict[str, Any]:
    """Node ``i``: labelled with hostname, zone and instance type; every tenth one tainted."""
    name = f"node-{i:05d}"
    spec: dict[str, Any] = {"taints": [TAINT]} if i % 10 == 9 else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{i % ZONES}",
                "node.kubernetes.io/instance-type": INSTANCE_TYPES[i % len(INSTANCE_TYPES)],
            },
        },
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
        },
    }


def make_pod(i: int, node: str | None) -> dict[str, Any]:
    """Pod ``i``: running on ``node``, or pending (then shaped by ``i``: see the module doc)."""
    cpu_milli = 500 + (i % 4) * 500
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": f"registry.example.com/app-{i % 50}:1.0",
                "resources": {"requests": {"cpu": f"{cpu_milli}m", "memory": f"{1 + i % 4}Gi"}},
            }
        ]
    }
    if node is not None:
        spec["nodeName"] = node
    elif i % 4 == 1:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": f"zone-{i % ZONES}"}
    elif i % 4 == 2:
        spec["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}
        ]
    if node is None and i % 100 == 99:
        spec["containers"][0]["resources"]["requests"]["cpu"] = "48"  # fits no node: a FitError to explain
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{'run' if node else 'pending'}-{i:05d}",
            "namespace": f"team-{i % 20}",
            "uid": f"uid-{'r' if node else 'p'}-{i}",
            "labels": {"app": f"app-{i % 50}", "tier": "backend" if i % 2 else "frontend"},
        },
        "spec": spec,
    }


def make_state(nodes: int, running: int, pending: int) -> list[dict[str, Any]]:
    """The state's objects: nodes, then running pods spread evenly over them, then pending pods."""
    objects = [make_node(i) for i in range(nodes)]
    objects.extend(make_pod(i, f"node-{i % nodes:05d}") for i in range(running))
    objects.extend(make_pod(i, None) for i in range(pending))
    return objects


CAPACITY_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "containers": [
            {"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}
        ]
    },
}


def write_states(directory: Path, nodes: int, running: int, pending: int) -> tuple[Path, Path, Path]:
    """The state as one JSON ``v1 List`` and as multi-document YAML, and the capacity pod."""
    objects = make_state(nodes, running, pending)
    json_path, yaml_path, pod_path = (
        directory / "state.json",
        directory / "state.yaml",
        directory / "pod.yaml",
    )
    json_path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    with yaml_path.open("w") as fh:
        yaml.dump_all(objects, fh, Dumper=yaml.CSafeDumper, sort_keys=False)
    pod_path.write_text(yaml.safe_dump(CAPACITY_POD))
    return json_path, yaml_path, pod_path


def measure(argv: Sequence[str]) -> tuple[float, float]:
    """Run ``berth ARGV`` with its output discarded: (wall seconds, peak RSS in MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen([*BERTH, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"berth {' '.join(argv)} exited {proc.returncode}: {stderr[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=20000)
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=1, help="Runs of each row (the best time is printed).")
    parser.add_argument("--only", choices=("simulate", "capacity"), default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.nodes} nodes, {args.running} running pods, {args.pending} pending pods; seed {args.seed}")
    with tempfile.TemporaryDirectory(prefix="berth-bench-") as tmp:
        json_path, yaml_path, pod_path = write_states(Path(tmp), args.nodes, args.running, args.pending)
        print(
            f"state: JSON {json_path.stat().st_size / 2**20:.1f} MiB, YAML {yaml_path.stat().st_size / 2**20:.1f} MiB"
        )
        rows: list[tuple[str, str, str, float, float]] = []
        seed = ["--seed", str(args.seed)]
        cases: list[tuple[str, str, str, list[str]]] = []
        if args.only in (None, "simulate"):
            cases += [
                ("simulate", "json", "table", ["simulate", str(json_path), *seed]),
                ("simulate", "yaml", "table", ["simulate", str(yaml_path), *seed]),
                ("simulate", "json", "json", ["simulate", str(json_path), "-o", "json", *seed]),
            ]
        if args.only in (None, "capacity"):
            cases.append(("capacity", "json", "table", ["capacity", str(json_path), str(pod_path), *seed]))
        for command, fmt, output, argv in cases:
            best_time, peak = float("inf"), 0.0
            for _ in range(args.repeat):
                elapsed, rss = measure(argv)
                best_time, peak = min(best_time, elapsed), max(peak, rss)
            rows.append((command, fmt, output, best_time, peak))
    print(f"{'COMMAND':<10}{'INPUT':<7}{'OUTPUT':<8}{'TIME (s)':>10}{'PEAK RSS (MiB)':>16}")
    for command, fmt, output, elapsed, peak in rows:
        print(f"{command:<10}{fmt:<7}{output:<8}{elapsed:>10.1f}{peak:>16.0f}")
    by = {(c, f, o): (t, m) for c, f, o, t, m in rows}
    if ("simulate", "json", "table") in by and ("simulate", "yaml", "table") in by:
        json_time, table_rss = by["simulate", "json", "table"]
        print(
            f"YAML / JSON time: {by['simulate', 'yaml', 'table'][0] / json_time:.2f}x (target at most 1.5x)"
        )
        if ("simulate", "json", "json") in by:
            print(
                f"-o json / table peak RSS: {by['simulate', 'json', 'json'][1] / table_rss:.2f}x (target at most 1.5x)"
            )


if __name__ == "__main__":
    main()
