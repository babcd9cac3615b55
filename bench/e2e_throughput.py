"""kube-scheduler throughput with and without berth as its extender, against a real control plane.

One run, same machine, same control plane (etcd + kube-apiserver from ``tests/kube/controlplane.py``),
the same N nodes (4 cpu / 32Gi / 110 pods over three zones, as scheduler_perf's node-default) and
two rounds of M pods (100m / 500Mi, scheduler_perf's pod-default), each round in a fresh namespace:

1. ``kube-scheduler``: the stock binary with no extender;
2. ``kube-scheduler + berth``: the same binary with ``berth serve --kubeconfig`` as its extender
   (filterVerb, prioritizeVerb and bindVerb, ``nodeCacheCapable: true``): every pod is filtered,
   scored and bound by berth.

The pods of a round are created before its kube-scheduler starts, so the round measures scheduling,
not pod creation. Throughput is sampled once per second from a watch of the pods being bound (as
scheduler_perf's throughput collector samples scheduled pods): ``avg`` is bound pods over the time
from the first bind to the last, ``p50`` the median of the full one-second samples. kube-scheduler's
clientConnection qps/burst are 5000/5000 as in scheduler_perf; berth's are the same.

Usage: ``.venv/bin/python bench/e2e_throughput.py [--nodes 200] [--pods 1000] [--keep-logs DIR]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from e2e.stack import BerthServer, ExtenderEntry, KubeScheduler, scheduler_config  # noqa: E402

from app.kube.client import KubeClient  # noqa: E402
from kube.controlplane import LocalControlPlane, default_bin_dir  # noqa: E402

QPS = 5000
ZONES = ("zone-a", "zone-b", "zone-c")


@dataclass
class Round:
    """One measured round."""

    name: str
    pods: int
    bound: int
    seconds: float
    average: float
    p50: float


def node_body(i: int) -> dict[str, object]:
    resources = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    name = f"node-{i:04d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": ZONES[i % len(ZONES)]},
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_body(i: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                }
            ]
        },
    }


def create_all(client: KubeClient, path: str, bodies: list[dict[str, object]]) -> None:
    """POST every body to ``path`` from a few threads (the API server is the bottleneck)."""

    def post(body: dict[str, object]) -> None:
        status, data = client.request("POST", path, body=body)
        if status != 201:
            raise RuntimeError(f"POST {path}: {status} {data[:300]!r}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(post, bodies))


class BindWatch:
    """Timestamps of pods seen bound in a namespace, from a watch started before the scheduler.

    The API server ends a watch whose consumer falls behind (its cacher drops slow watchers), so,
    like a reflector, the watch resumes from the last resourceVersion it saw.
    """

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.times: dict[str, float] = {}
        self._client = client
        self._path = f"/api/v1/namespaces/{namespace}/pods"
        self._rv = client.get_json(self._path, {"limit": "1"})["metadata"]["resourceVersion"]
        self._stopped = threading.Event()
        self._stream: Any = None
        self.restarts = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._stream = self._client.watch(
                    self._path, {"resourceVersion": self._rv, "timeoutSeconds": "600"}
                )
                for event in self._stream:
                    obj = event.get("object") or {}
                    meta = obj.get("metadata") or {}
                    if event.get("type") == "ERROR":
                        print(f"watch event: {str(event)[:300]}", file=sys.stderr)
                        self._relist()
                        break
                    self._rv = meta.get("resourceVersion", self._rv)
                    if (obj.get("spec") or {}).get("nodeName"):
                        self.times.setdefault(meta["name"], time.monotonic())
            except Exception as err:
                if self._stopped.is_set():
                    break
                print(f"watch failed after {len(self.times)} binds: {err!r}", file=sys.stderr)
                time.sleep(0.2)
            if not self._stopped.is_set():
                self.restarts += 1
        print(f"watch ended after {len(self.times)} binds ({self.restarts} restarts)", file=sys.stderr)

    def _relist(self) -> None:
        """After a 410: take the bound pods from a list (their times are approximate)."""
        listed = self._client.get_json(self._path)
        now = time.monotonic()
        for pod in listed["items"]:
            if pod["spec"].get("nodeName"):
                self.times.setdefault(pod["metadata"]["name"], now)
        self._rv = listed["metadata"]["resourceVersion"]

    def wait(self, count: int, timeout: float, stall: float = 10.0) -> None:
        """Until ``count`` pods are seen bound, nothing new for ``stall`` seconds, or ``timeout``."""
        deadline = time.monotonic() + timeout
        seen, last_change = 0, time.monotonic()
        while len(self.times) < count and time.monotonic() < deadline:
            time.sleep(0.2)
            if len(self.times) != seen:
                seen, last_change = len(self.times), time.monotonic()
            elif self.times and time.monotonic() - last_change > stall:
                break
        self._stopped.set()
        if self._stream is not None:
            self._stream.close()


def measure(name: str, watch: BindWatch, pods: int) -> Round:
    times = sorted(watch.times.values())
    if len(times) < 2:
        return Round(name, pods, len(times), 0.0, 0.0, 0.0)
    start, end = times[0], times[-1]
    seconds = end - start
    buckets = [0] * (int(seconds) + 1)
    for t in times:
        buckets[int(t - start)] += 1
    full = buckets[:-1] or buckets  # the last second is partial
    return Round(name, pods, len(times), seconds, (len(times) - 1) / seconds, statistics.median(full))


def run_round(
    name: str,
    cp: LocalControlPlane,
    client: KubeClient,
    workdir: Path,
    pods: int,
    extenders: list[ExtenderEntry],
) -> Round:
    namespace = "-".join(w for w in name.replace("+", " ").lower().split())
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    print(f"[{name}] creating {pods} pods", file=sys.stderr)
    create_all(client, f"/api/v1/namespaces/{namespace}/pods", [pod_body(i) for i in range(pods)])
    watch = BindWatch(client, namespace)
    config = scheduler_config(cp.kubeconfig, extenders, qps=QPS, burst=QPS)
    sched = KubeScheduler(cp.bin_dir, cp.kubeconfig, workdir, config, f"kube-scheduler-{namespace}")
    print(f"[{name}] starting kube-scheduler", file=sys.stderr)
    sched.start(verbosity=1)
    try:
        watch.wait(pods, timeout=300)
    finally:
        sched.stop()
    result = measure(name, watch, pods)
    listed = client.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"]
    bound = sum(1 for p in listed if p["spec"].get("nodeName"))
    if bound != result.bound:
        print(
            f"[{name}] the watch saw {result.bound} binds, the API server has {bound} bound pods",
            file=sys.stderr,
        )
    # Free the nodes for the next round: force-delete (no kubelet confirms a graceful deletion).
    client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", params={"gracePeriodSeconds": "0"})
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument(
        "--no-bind-round", action="store_true", help="also measure berth as a filter/prioritize-only extender"
    )
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the process logs here")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="berth-e2e-bench-"))
    cp = LocalControlPlane(default_bin_dir(), ready_timeout=120.0)
    cp.start()
    berth: BerthServer | None = None
    try:
        client = KubeClient.from_config(str(cp.kubeconfig), qps=QPS, burst=QPS)
        print(f"creating {args.nodes} nodes", file=sys.stderr)
        create_all(client, "/api/v1/nodes", [node_body(i) for i in range(args.nodes)])
        rounds = [run_round("kube-scheduler", cp, client, workdir, args.pods, [])]

        berth_config = workdir / "berth-config.yaml"
        berth_config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"clientConnection:\n  qps: {QPS}\n  burst: {QPS}\n"
        )
        berth = BerthServer(cp.kubeconfig, workdir, ["--config", str(berth_config)]).start()
        entry = ExtenderEntry(berth.url, node_cache_capable=True)
        rounds.append(run_round("kube-scheduler + berth", cp, client, workdir, args.pods, [entry]))
        binds = berth.metric("berth_extender_requests_total", {"verb": "bind", "result": "success"})
        if args.no_bind_round:
            # Where the time goes: the same extender without bindVerb (kube-scheduler binds itself).
            entry = ExtenderEntry(berth.url, node_cache_capable=True, bind_verb="")
            rounds.append(
                run_round("kube-scheduler + berth no bindVerb", cp, client, workdir, args.pods, [entry])
            )
    finally:
        if berth is not None:
            berth.stop()
        cp.stop()
        if args.keep_logs:
            shutil.copytree(workdir, args.keep_logs, dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"\n{args.nodes} nodes x {args.pods} pods (scheduler_perf templates), pods/s sampled once a second\n"
    )
    print("| setup | bound | seconds | avg pods/s | p50 pods/s |")
    print("|---|---|---|---|---|")
    for r in rounds:
        print(f"| {r.name} | {r.bound}/{r.pods} | {r.seconds:.1f} | {r.average:.0f} | {r.p50:.0f} |")
    base, ext = rounds[0], rounds[1]
    ratio = ext.average / base.average if base.average else 0.0
    print(
        f"\nwith berth / without: {ratio:.2f}x average, {ext.p50 / base.p50 if base.p50 else 0:.2f}x p50 ",
        end="",
    )
    print(f"(target >= 0.6x); berth /bind successes: {binds:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
