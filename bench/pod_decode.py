"""Per-stage CPU of one bound pod's watch event in ``berth run``, in process: cutting managedFields
and ``orjson.loads``, ``decode_pod`` (parse and slim document), and the handler path (the informer's
timed handler, the cache's add, the queue's AssignedPod event, the event-handling metric).

Events come from ``--events FILE`` (JSON lines as the API server streams them, e.g. captured from
``bench/scale.py``'s cluster) or are built from ``bench/scale.py``'s pod template with the fields the
API server adds (defaults, uid, resourceVersion, managedFields). ``--baseline DIR`` runs the same
measurement on another checkout's ``app/`` in a subprocess, alternating rounds, and prints both
columns side by side: a before/after in one run.

    .venv/bin/python bench/pod_decode.py --pods 3000 --rounds 5 --baseline /work/main
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STAGES = ("loads (cut + orjson)", "decode_pod", "handler (cache, queue, metric)", "total")


def synthetic_events(count: int) -> list[bytes]:
    """``count`` ADDED events of bench/scale.py's pod template as the API server returns them."""
    sys.path.insert(0, str(ROOT / "bench"))
    import orjson
    from scale import namespace_of, pod_body

    lines: list[tuple[str, str, bytes]] = []
    for i in range(count):
        pod = pod_body(i, f"node-{i % 5000:05d}")
        meta = pod["metadata"]
        meta["namespace"] = namespace_of(i)
        meta["uid"] = f"{i:08x}-7d8c-434b-a07f-4e3685164888"
        meta["resourceVersion"] = str(1000 + i)
        meta["creationTimestamp"] = "2026-12-04T17:52:55Z"
        meta["managedFields"] = [
            {
                "manager": "bench",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-12-04T17:52:55Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {key: {} for key in meta["labels"]}}},
            }
        ]
        spec = pod["spec"]
        spec.update(
            restartPolicy="Always",
            dnsPolicy="ClusterFirst",
            securityContext={},
            schedulerName="default-scheduler",
            priority=0,
            enableServiceLinks=True,
            preemptionPolicy="PreemptLowerPriority",
        )
        for container in spec["containers"]:
            container.update(terminationMessagePath="/dev/termination-log", imagePullPolicy="IfNotPresent")
        pod["status"] = {"phase": "Pending", "qosClass": "Burstable"}
        lines.append((meta["namespace"], meta["name"], orjson.dumps({"type": "ADDED", "object": pod})))
    # In the order the API server's watch cache streams them: by namespace and name.
    return [line for _, _, line in sorted(lines)]


def measure(lines: list[bytes]) -> dict[str, float]:
    """Microseconds per event of each stage, on a fresh engine and queue (hints off, the default)."""
    from app.api.decoding import loads_without_managed_fields
    from app.backend.queue.scheduling_queue import PriorityQueue
    from app.config import load_config
    from app.kube.handlers import decode_pod
    from app.plugins.registry import in_tree_registry
    from app.scheduler.scheduler import ClusterObjects, Engine
    from app.standalone.handlers import QueuePodHandler, TimedHandler, namespace_labels_lookup

    registry = in_tree_registry()
    objects = ClusterObjects()
    engine = Engine(load_config(None, registry), registry, objects=objects, seed=1)
    queue = PriorityQueue.for_profiles(
        engine.profiles,
        nominator=engine.nominator,
        queueing_hints_enabled=False,
        namespace_labels=namespace_labels_lookup(objects),
    )
    handler = TimedHandler(QueuePodHandler(engine, queue))
    clock = time.process_time
    gc.disable()  # as the informers' initial lists run
    start = clock()
    events = [loads_without_managed_fields(line) for line in lines]
    loaded = clock()
    raws = [event["object"] for event in events]
    pods = [decode_pod(raw) for raw in raws]
    decoded = clock()
    for pod in pods:
        handler.on_add(pod)
    handled = clock()
    gc.enable()
    per = 1e6 / len(lines)
    return {
        STAGES[0]: (loaded - start) * per,
        STAGES[1]: (decoded - loaded) * per,
        STAGES[2]: (handled - decoded) * per,
        STAGES[3]: (handled - start) * per,
    }


def run_child(app_root: Path, events: Path) -> dict[str, float]:
    """One round in a fresh interpreter importing ``app`` from ``app_root``."""
    env = {**os.environ, "PYTHONPATH": str(app_root)}
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--events", str(events)],
        env=env,
        cwd=app_root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def main() -> int:
    """Alternate rounds of this checkout (and the baseline) and print the medians."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=Path, help="JSON lines of pod watch events (default: synthesized)")
    parser.add_argument("--pods", type=int, default=3000, help="synthesized events (without --events)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per checkout, alternated")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure beside this one")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        lines = [line for line in args.events.read_bytes().splitlines() if line]
        print(json.dumps(measure(lines)))
        return 0
    events = args.events
    if events is None:
        events = Path(os.environ.get("TMPDIR", "/tmp")) / f"berth-pod-decode-{args.pods}.jsonl"
        events.write_bytes(b"\n".join(synthetic_events(args.pods)) + b"\n")
    columns = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in columns}
    for _ in range(args.rounds):
        for name, root in columns.items():
            samples[name].append(run_child(root, events))
    print(f"µs per pod event, median of {args.rounds} rounds (CPU time, alternated)")
    header = "| stage | " + " | ".join(columns) + (" | this/baseline |" if args.baseline else " |")
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for stage in STAGES:
        medians = {name: sorted(s[stage] for s in samples[name])[len(samples[name]) // 2] for name in columns}
        row = f"| {stage} | " + " | ".join(f"{medians[name]:.1f}" for name in columns)
        if args.baseline:
            row += f" | {medians['this'] / medians['baseline']:.2f}x"
        print(row + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
