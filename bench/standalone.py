"""``berth run`` versus a stock kube-scheduler, side by side on one real control plane.

SchedulingBasic-like (scheduler_perf's node-default and pod-default templates): N nodes
(4 cpu / 32Gi / 110 pods over three zones) and rounds of M pods (100m / 500Mi), each round in a
fresh namespace with its pods created before its scheduler starts:

* ``kube-scheduler``: the stock binary (schedulerName default-scheduler);
* ``berth run`` (leader election on, as deployed), for pods with schedulerName berth-scheduler.

Both at clientConnection qps/burst 5000/5000. Pods/s are sampled once per second from a watch of
the pods being bound (``avg`` = binds over first-to-last bind, ``p50`` = median full second, and
every one-second sample is printed), and again from the API server's own timestamps (the
``PodScheduled`` condition the binding sets, whole seconds), which do not depend on this process
keeping up with the watch: on 2 busy cores the API server drops a watcher that falls behind, and
the binds it resumes with arrive in a lump; peak RSS is the process's VmHWM at the end of its round, CPU
the scheduler process's user+system seconds from the first bind to the last, per bound pod.

The machine is shared and noisy: ``--repeat N`` runs N pairs of rounds, alternating which
scheduler goes first, and the ratio reported is the median of the pairs' ratios.
``--profile FILE`` samples ``berth run`` with py-spy (``--py-spy PATH``, default: on PATH) during
its rounds and writes collapsed stacks to FILE (one per round, ``FILE.N``), summarised at the end.

Usage: ``.venv/bin/python bench/standalone.py [--nodes 500] [--pods 2000] [--repeat 1]
[--only kube-scheduler|berth] [--profile FILE] [--keep-logs DIR]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from e2e.stack import KubeScheduler, Process, scheduler_config  # noqa: E402
from e2e.standalone import SCHEDULER_NAME, BerthScheduler  # noqa: E402
from e2e_throughput import (  # noqa: E402
    QPS,
    BindWatch,
    Profiler,
    create_all,
    node_body,
    pod_body,
    print_profile,
    server_bind_times,
    server_rate,
)

from app.kube.client import KubeClient  # noqa: E402
from kube.controlplane import LocalControlPlane, default_bin_dir  # noqa: E402

KUBE, BERTH = "kube-scheduler", "berth run"
RoundT = TypeVar("RoundT")


@dataclass
class Result:
    """One measured round of one scheduler."""

    name: str
    pods: int
    bound: int = 0
    seconds: float = 0.0
    average: float = 0.0
    p50: float = 0.0
    rss_mib: float = 0.0
    cpu_seconds: float = 0.0
    samples: list[int] = field(default_factory=list)
    """Pods bound in each second from the first bind (the last one partial)."""
    restarts: int = 0
    """Times the watch had to be re-opened (the API server drops a watcher that falls behind)."""
    server_average: float = 0.0
    """Bound pods / seconds spanned, from the API server's PodScheduled transition times."""
    server_samples: list[int] = field(default_factory=list)
    """Pods bound in each wall-clock second, by the API server's PodScheduled transition times."""


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


def cpu_seconds(proc: Process) -> float:
    """User + system CPU seconds of a running process and its waited-for children since it started
    (0 when unknown): berth makes its serving certificate in a child process (app.server.x509tool)."""
    if proc.popen is None:
        return 0.0
    try:
        stat = Path(f"/proc/{proc.popen.pid}/stat").read_text()
    except OSError:
        return 0.0
    ticks = stat.rsplit(")", 1)[1].split()[11:15]  # utime, stime, cutime, cstime: fields 14 to 17 of proc(5)
    return sum(int(v) for v in ticks) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """Samples a process's CPU seconds every 50 ms, so that the CPU of the measured window alone
    (first bind to last, as the throughput) can be told apart from its start-up (the initial lists)."""

    def __init__(self, proc: Process) -> None:
        self.proc = proc
        self.samples: list[tuple[float, float]] = []  # (monotonic, CPU seconds)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), cpu_seconds(self.proc)))
            self._stop.wait(0.05)

    def stop(self) -> None:
        """Take a last sample and stop."""
        self._stop.set()
        self._thread.join()
        self.samples.append((time.monotonic(), cpu_seconds(self.proc)))

    def between(self, start: float, end: float) -> float:
        """CPU seconds used from the last sample before ``start`` to the first after ``end``."""
        before = [cpu for t, cpu in self.samples if t <= start] or [0.0]
        after = [cpu for t, cpu in self.samples if t >= end] or [self.samples[-1][1]]
        return after[0] - before[-1]


def summarise(result: Result, times: list[float]) -> None:
    """Fill ``result`` from the bind times seen by the watch."""
    times = sorted(times)
    result.bound = len(times)
    if len(times) < 2:
        return
    start = times[0]
    result.seconds = times[-1] - start
    result.samples = [0] * (int(result.seconds) + 1)
    for t in times:
        result.samples[int(t - start)] += 1
    full = result.samples[:-1] or result.samples  # the last second is partial
    result.average = (len(times) - 1) / result.seconds
    result.p50 = statistics.median(full)


def summarise_server(result: Result, times: list[float]) -> None:
    """Per-second counts and the average rate from whole-second server timestamps."""
    result.server_average, result.server_samples = server_rate(times)


def run_round(
    kind: str,
    n: int,
    cp: LocalControlPlane,
    client: KubeClient,
    workdir: Path,
    pods: int,
    profile: Path | None,
    py_spy: str,
) -> Result:
    berth = kind == BERTH
    namespace = f"{'berth-run' if berth else 'kube-scheduler'}-{n}"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    bodies = [pod_body(i) for i in range(pods)]
    if berth:
        for body in bodies:
            body["spec"]["schedulerName"] = SCHEDULER_NAME  # type: ignore[index]
    print(f"[{kind} #{n}] creating {pods} pods", file=sys.stderr)
    create_all(client, f"/api/v1/namespaces/{namespace}/pods", bodies)
    watch = BindWatch(client, namespace)
    proc: Process
    profiler: Profiler | None = None
    if berth:
        proc = BerthScheduler(
            workdir,
            cp.kubeconfig,
            name=f"berth-run-{n}",
            namespace=namespace,
            lease_name="berth-bench",
            lease=15,
            renew=10,
            retry=2,
            verbosity=1,  # as kube-scheduler's round: logging a line per pod costs CPU
        )
        print(f"[{kind} #{n}] starting berth run", file=sys.stderr)
        proc.start()
        if profile is not None and proc.popen is not None:
            profiler = Profiler(py_spy, proc.popen.pid, profile.with_name(f"{profile.name}.{n}"))
    else:
        config = scheduler_config(cp.kubeconfig, [], qps=QPS, burst=QPS)
        stock = KubeScheduler(cp.bin_dir, cp.kubeconfig, workdir, config, f"kube-scheduler-{n}")
        print(f"[{kind} #{n}] starting kube-scheduler", file=sys.stderr)
        proc = stock.start(verbosity=1)
    result = Result(kind, pods)
    meter = CpuMeter(proc)
    try:
        watch.wait(pods, timeout=600)
        result.rss_mib = peak_rss_mib(proc)
    finally:
        meter.stop()
        if profiler is not None:
            profiler.stop()
        proc.stop()
    summarise(result, list(watch.times.values()))
    result.restarts = watch.restarts
    summarise_server(result, server_bind_times(client, namespace))
    result.cpu_seconds = meter.between(
        min(watch.times.values(), default=0), max(watch.times.values(), default=0)
    )
    client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", params={"gracePeriodSeconds": "0"})
    return result


def interleaved_rounds(
    nodes: int,
    repeat: int,
    kinds: list[str],
    run: Callable[[str, int, LocalControlPlane, KubeClient], RoundT],
) -> list[RoundT]:
    """A control plane with ``nodes`` SchedulingBasic nodes, and ``repeat`` passes of ``run(kind, n,
    cp, client)`` over ``kinds``, every other pass in reverse order (so that neither kind always
    goes first on a machine whose load drifts); the control plane is stopped at the end."""
    results: list[RoundT] = []
    with contextlib.ExitStack() as stack:
        cp = LocalControlPlane(default_bin_dir(), ready_timeout=120.0)
        cp.start()
        stack.callback(cp.stop)
        client = KubeClient.from_config(str(cp.kubeconfig), qps=QPS, burst=QPS)
        print(f"creating {nodes} nodes", file=sys.stderr)
        create_all(client, "/api/v1/nodes", [node_body(i) for i in range(nodes)])
        n = 0
        for i in range(repeat):
            for kind in kinds if i % 2 == 0 else kinds[::-1]:
                n += 1
                results.append(run(kind, n, cp, client))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=1, help="pairs of rounds, alternating the order")
    parser.add_argument("--only", choices=[KUBE, "berth"], help="run only one scheduler's rounds")
    parser.add_argument("--profile", metavar="FILE", type=Path, help="py-spy berth run into FILE.N")
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy", help="the py-spy binary")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the process logs here")
    args = parser.parse_args()
    kinds = [KUBE, BERTH] if args.only is None else [KUBE if args.only == KUBE else BERTH]
    if args.profile is not None:
        args.profile.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="berth-run-bench-"))
    try:
        results = interleaved_rounds(
            args.nodes,
            args.repeat,
            kinds,
            lambda kind, n, cp, client: run_round(
                kind, n, cp, client, workdir, args.pods, args.profile, args.py_spy
            ),
        )
    finally:
        if args.keep_logs:
            shutil.copytree(workdir, args.keep_logs, dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{args.nodes} nodes x {args.pods} pods (SchedulingBasic-like), qps/burst {QPS}/{QPS}\n")
    print(
        "| scheduler | bound | seconds | avg pods/s (watch) | p50 pods/s | avg pods/s (server) "
        "| CPU ms/pod | peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        cpu = 1e3 * r.cpu_seconds / max(r.bound, 1)
        restarts = f" ({r.restarts} watch restarts)" if r.restarts else ""
        print(
            f"| {r.name} | {r.bound}/{r.pods} | {r.seconds:.1f} | {r.average:.0f}{restarts} | {r.p50:.0f} "
            f"| {r.server_average:.0f} | {cpu:.2f} | {r.rss_mib:.0f} |"
        )
    print("\npods bound per second, as the watch saw them / as the API server stamped them:")
    for r in results:
        print(f"  {r.name}: {' '.join(str(s) for s in r.samples)}")
        print(f"  {' ' * len(r.name)}  {' '.join(str(s) for s in r.server_samples)}")
    if args.profile is not None:
        print_profile(sorted(args.profile.parent.glob(f"{args.profile.name}.*")))
    base = [r for r in results if r.name == KUBE]
    ours = [r for r in results if r.name == BERTH]
    if base and ours:
        print()
        for what, avg in (("watch", lambda r: r.average), ("server", lambda r: r.server_average)):
            ratios = [avg(b) / avg(k) if avg(k) else 0.0 for k, b in zip(base, ours, strict=False)]
            detail = f" (pairs: {', '.join(f'{x:.2f}' for x in ratios)})" if len(ratios) > 1 else ""
            print(
                f"berth run / kube-scheduler, {what} times: {statistics.median(ratios):.2f}x average{detail} "
                "(target >= 1.0)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
