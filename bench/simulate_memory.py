"""``berth simulate`` peak RSS per cached pod of bench/scale.py's realistic template (issue 25).

Writes two JSON ``List`` state files as ``kubectl get nodes,pods -o json`` prints them (``kind`` and
``metadata`` after ``items``): the nodes alone, and the nodes with N bound pods plus a few pending ones,
each pod with the managedFields the API server adds. Runs ``berth simulate`` on both, one process per
row, interleaved with a baseline checkout when given, and prints each run's peak RSS (``wait4``) and the
peak per bound pod (the difference of the two files' peaks over N). Usage::

    python bench/simulate_memory.py [--nodes 5000] [--pods 30000] [--repeat 2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from scale import node_body, pod_body
from simulate import measure

PENDING = 20  # a few pods to schedule, so the run simulates


def managed(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as the API server returns it: a uid, a namespace and managedFields for what was set."""
    meta = doc["metadata"]
    meta["uid"] = f"uid-{meta['name']}"
    meta.setdefault("namespace", "default")
    containers: dict[str, Any] = {
        f'k:{{"name":"{c["name"]}"}}': {
            ".": {},
            "f:image": {},
            "f:env": {
                f'k:{{"name":"{e["name"]}"}}': {".": {}, "f:name": {}, "f:value": {}}
                for e in c.get("env", [])
            },
        }
        for c in doc["spec"]["containers"]
    }
    meta["managedFields"] = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {f"f:{k}": {} for k in meta.get("labels", {})}},
                "f:spec": {"f:containers": containers},
            },
        }
    ]
    return doc


def write_state(path: Path, nodes: int, pods: int) -> None:
    """``nodes`` nodes, ``pods`` running pods spread over them and, with pods, PENDING pending ones."""
    items: list[dict[str, Any]] = [node_body(i) for i in range(nodes)]
    for i in range(pods):
        pod = managed(pod_body(i, f"node-{i % nodes:05d}"))
        pod["status"] = {"phase": "Running"}
        items.append(pod)
    items += [managed(pod_body(pods + i, None)) for i in range(PENDING if pods else 0)]
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {}}))


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=30000, help="bound pods in the state")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each row (the lowest peak counts)")
    parser.add_argument("--baseline", metavar="DIR", help="a checkout of berth to compare (git archive)")
    args = parser.parse_args()
    versions: list[tuple[str, str | None]] = [("this", None)] + (
        [("baseline", args.baseline)] if args.baseline else []
    )
    with tempfile.TemporaryDirectory() as tmp:
        files = {"nodes": Path(tmp) / "nodes.json", "state": Path(tmp) / "state.json"}
        # Written by a child process: a berth forked from a parent that built the state would start with
        # the parent's pages in its RSS.
        spawn = multiprocessing.get_context("spawn")
        for path, pods in ((files["nodes"], 0), (files["state"], args.pods)):
            writer = spawn.Process(target=write_state, args=(path, args.nodes, pods))
            writer.start()
            writer.join()
        print(
            f"state: {files['state'].stat().st_size / 2**20:.0f} MiB JSON, {args.nodes} nodes, {args.pods} bound pods"
        )
        peaks: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeat):
            for version, checkout in versions:  # interleaved: the machine's load falls on both alike
                for name, path in files.items():
                    _, cpu, rss = measure(["simulate", str(path), "--seed", "1"], checkout)
                    peaks.setdefault((version, name), []).append(rss)
                    cpus.setdefault((version, name), []).append(cpu)
    print(f"{'version':<10}{'nodes only MiB':>16}{'with pods MiB':>15}{'KiB per pod':>13}{'CPU s':>8}")
    for version, _ in versions:
        alone, full = min(peaks[version, "nodes"]), min(peaks[version, "state"])
        per_pod = (full - alone) * 1024 / args.pods
        print(f"{version:<10}{alone:>16.0f}{full:>15.0f}{per_pod:>13.1f}{min(cpus[version, 'state']):>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
