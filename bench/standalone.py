"""``berth run`` versus a stock kube-scheduler, side by side on one real control plane.

SchedulingBasic-like (scheduler_perf's node-default and pod-default templates): N nodes
(4 cpu / 32Gi / 110 pods over three zones) and two rounds of M pods (100m / 500Mi), each round in
a fresh namespace with its pods created before the scheduler starts:

1. the stock ``kube-scheduler`` (schedulerName default-scheduler);
2. ``berth run`` (leader election on, as deployed), for pods with schedulerName berth-scheduler.

Both at clientConnection qps/burst 5000/5000. Pods/s are sampled once per second from a watch of
the pods being bound (``avg`` = binds over first-to-last bind, ``p50`` = median full second);
peak RSS is the process's VmHWM at the end of its round.

Usage: ``.venv/bin/python bench/standalone.py [--nodes 500] [--pods 2000]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from e2e.stack import KubeScheduler, Process, scheduler_config  # noqa: E402
from e2e.standalone import SCHEDULER_NAME, BerthScheduler  # noqa: E402
from e2e_throughput import QPS, BindWatch, Round, create_all, measure, node_body, pod_body  # noqa: E402

from app.kube.client import KubeClient  # noqa: E402
from kube.controlplane import LocalControlPlane, default_bin_dir  # noqa: E402


def peak_rss_mib(proc: Process) -> float:
    """VmHWM of a running process, in MiB (0 when unknown)."""
    if proc.popen is None:
        return 0.0
    try:
        for line in Path(f"/proc/{proc.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_round(
    name: str, cp: LocalControlPlane, client: KubeClient, workdir: Path, pods: int, berth: bool
) -> tuple[Round, float]:
    namespace = "berth-run" if berth else "kube-scheduler"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    bodies = [pod_body(i) for i in range(pods)]
    if berth:
        for body in bodies:
            body["spec"]["schedulerName"] = SCHEDULER_NAME  # type: ignore[index]
    print(f"[{name}] creating {pods} pods", file=sys.stderr)
    create_all(client, f"/api/v1/namespaces/{namespace}/pods", bodies)
    watch = BindWatch(client, namespace)
    proc: Process
    if berth:
        proc = BerthScheduler(
            workdir, cp.kubeconfig, namespace=namespace, lease_name="berth-bench", lease=15, renew=10, retry=2
        )
        print(f"[{name}] starting berth run", file=sys.stderr)
        proc.start()
    else:
        config = scheduler_config(cp.kubeconfig, [], qps=QPS, burst=QPS)
        proc = KubeScheduler(cp.bin_dir, cp.kubeconfig, workdir, config, "kube-scheduler-bench")
        print(f"[{name}] starting kube-scheduler", file=sys.stderr)
        proc.start(verbosity=1)  # type: ignore[attr-defined]
    try:
        watch.wait(pods, timeout=600)
        rss = peak_rss_mib(proc)
    finally:
        proc.stop()
    client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", params={"gracePeriodSeconds": "0"})
    return measure(name, watch, pods), rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the process logs here")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="berth-run-bench-"))
    cp = LocalControlPlane(default_bin_dir(), ready_timeout=120.0)
    cp.start()
    try:
        client = KubeClient.from_config(str(cp.kubeconfig), qps=QPS, burst=QPS)
        print(f"creating {args.nodes} nodes", file=sys.stderr)
        create_all(client, "/api/v1/nodes", [node_body(i) for i in range(args.nodes)])
        results = [
            run_round("kube-scheduler", cp, client, workdir, args.pods, berth=False),
            run_round("berth run", cp, client, workdir, args.pods, berth=True),
        ]
    finally:
        cp.stop()
        if args.keep_logs:
            shutil.copytree(workdir, args.keep_logs, dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{args.nodes} nodes x {args.pods} pods (SchedulingBasic-like), qps/burst {QPS}/{QPS}\n")
    print("| scheduler | bound | seconds | avg pods/s | p50 pods/s | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for r, rss in results:
        print(
            f"| {r.name} | {r.bound}/{r.pods} | {r.seconds:.1f} | {r.average:.0f} | {r.p50:.0f} | {rss:.0f} |"
        )
    (base, _), (ours, _) = results
    ratio = ours.average / base.average if base.average else 0.0
    print(f"\nberth run / kube-scheduler: {ratio:.2f}x average (target >= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
