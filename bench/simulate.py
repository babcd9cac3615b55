"""``berth simulate`` and ``berth capacity`` at cluster scale: time and peak memory by input format and
output mode (issue 23, item 6).

Writes one synthetic cluster state (by default 5,000 nodes, 20,000 running pods, 2,000 pending pods) as
JSON and as YAML, then runs ``berth`` as a user would, one process per row, and reads each process's
peak RSS from the kernel (``wait4``): ``simulate`` from JSON and from YAML with ``-o table``, and with
``-o json``; then ``berth capacity`` of a basic pod on the same nodes. Every run is seeded, so repeated
runs do the same work. CPU time (the process's user plus system time) is the number to compare on a
shared machine: wall time there includes waiting for the other processes' turn. Usage::

    python bench/simulate.py [--nodes 5000] [--running 20000] [--pending 2000] [--repeat 1]
        [--only simulate|capacity] [--capacity-max N] [--baseline DIR]

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


def measure(argv: Sequence[str], baseline: str | None = None) -> tuple[float, float, float]:
    """Run ``berth ARGV`` with its output discarded: (wall seconds, CPU seconds, peak RSS in MiB).

    With ``baseline`` (a checkout of berth, e.g. ``git archive main``), that checkout's ``app`` runs instead.
    """
    command, env, cwd = [*BERTH, *argv], None, None
    if baseline is not None:
        cwd = baseline  # ``-c`` puts the working directory first on sys.path
        command = [sys.executable, "-c", "import sys; from app.cli.main import main; sys.exit(main())", *argv]
        env = {**os.environ, "PYTHONPATH": baseline, "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"berth {' '.join(argv)} exited {proc.returncode}: {stderr[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=20000)
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=1, help="Runs of each row (the best time is printed).")
    parser.add_argument("--only", choices=("simulate", "capacity"), default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--capacity-max",
        type=int,
        default=None,
        metavar="N",
        help="berth capacity --max N (default: count all).",
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        default=None,
        help="Another checkout of berth to run each row with too, interleaved (before/after in one run).",
    )
    args = parser.parse_args()
    print(f"{args.nodes} nodes, {args.running} running pods, {args.pending} pending pods; seed {args.seed}")
    with tempfile.TemporaryDirectory(prefix="berth-bench-") as tmp:
        json_path, yaml_path, pod_path = write_states(Path(tmp), args.nodes, args.running, args.pending)
        print(
            f"state: JSON {json_path.stat().st_size / 2**20:.1f} MiB, YAML {yaml_path.stat().st_size / 2**20:.1f} MiB"
        )
        rows: list[tuple[str, str, str, str, float, float, float]] = []
        seed = ["--seed", str(args.seed)]
        cases: list[tuple[str, str, str, list[str]]] = []
        if args.only in (None, "simulate"):
            cases += [
                ("simulate", "json", "table", ["simulate", str(json_path), *seed]),
                ("simulate", "yaml", "table", ["simulate", str(yaml_path), *seed]),
                ("simulate", "json", "json", ["simulate", str(json_path), "-o", "json", *seed]),
            ]
        if args.only in (None, "capacity"):
            limit = [] if args.capacity_max is None else ["--max", str(args.capacity_max)]
            cases.append(
                ("capacity", "json", "table", ["capacity", str(json_path), str(pod_path), *seed, *limit])
            )
        versions = [("this", None)] + ([("baseline", args.baseline)] if args.baseline else [])
        print(
            f"{'BERTH':<10}{'COMMAND':<10}{'INPUT':<7}{'OUTPUT':<8}{'WALL (s)':>10}{'CPU (s)':>10}{'PEAK RSS (MiB)':>16}"
        )
        for command, fmt, output, argv in cases:
            for version, checkout in versions:
                # The best of the repeats: on a shared machine the slowest runs measure the neighbours.
                runs = [measure(argv, checkout) for _ in range(args.repeat)]
                wall, cpu, peak = min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)
                rows.append((version, command, fmt, output, wall, cpu, peak))
                # Row by row: a full run takes long on a loaded machine.
                print(
                    f"{version:<10}{command:<10}{fmt:<7}{output:<8}{wall:>10.1f}{cpu:>10.1f}{peak:>16.0f}",
                    flush=True,
                )
    by = {(c, f, o): (cpu, peak) for v, c, f, o, _, cpu, peak in rows if v == "this"}
    table = by.get(("simulate", "json", "table"))
    if table is not None and ("simulate", "yaml", "table") in by:
        ratio = by["simulate", "yaml", "table"][0] / table[0]
        print(f"YAML / JSON input, CPU time: {ratio:.2f}x (target at most 1.5x)")
    if table is not None and ("simulate", "json", "json") in by:
        ratio = by["simulate", "json", "json"][1] / table[1]
        print(f"-o json / -o table, peak RSS: {ratio:.2f}x (target at most 1.5x)")
    capacity = by.get(("capacity", "json", "table"))
    if capacity is not None:
        before = [cpu for v, c, _, _, _, cpu, _ in rows if v == "baseline" and c == "capacity"]
        versus = (
            f", {before[0] / capacity[0]:.1f}x less than the baseline's {before[0]:.1f} s" if before else ""
        )
        print(f"capacity, CPU time: {capacity[0]:.1f} s{versus} (target under 30 s)")


if __name__ == "__main__":
    main()
