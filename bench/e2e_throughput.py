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
from the first bind to the last, ``p50`` the median of the full one-second samples. It is taken
again from the API server's own timestamps (the ``PodScheduled`` condition the binding sets, whole
seconds, as ``bench/standalone.py`` does), which do not depend on this process keeping up with its
watch: on 2 busy cores the API server drops a watcher that falls behind and the binds it resumes
with arrive in a lump. Whole seconds are coarse for a round of a few seconds: the server average
counts the seconds spanned inclusively, so it reads low by up to a second's worth of the round.
The third reading has neither problem: ``events`` is bound pods over the time between the first and
the last ``Scheduled`` event, whose ``eventTime`` kube-scheduler stamps to the microsecond once a
bind has succeeded (berth's or its own).
kube-scheduler's clientConnection qps/burst are 5000/5000 as in scheduler_perf; berth's are the same.

Each round also reports the CPU seconds per bound pod of every process of the stack (from
``/proc/PID/stat``, sched start to last bind) and of everything else on the machine (``/proc/stat``
minus those): the machine is shared, and on 2 cores kube-scheduler, kube-apiserver, etcd and berth
compete for CPU, so a round's throughput is bounded by what they need per pod together. ('other'
includes the time the hypervisor gave to other machines: CPU steal.) The mean time per call, from
the metrics of kube-scheduler, the API server (its own time per Binding) and berth (inside its app),
shows where a pod's time goes; etcd's own count of the gRPC calls it handled, by method, shows what
the API server asked of it, and its CPU per ``Txn`` what each write cost; for rounds with berth, how
many /prioritize answers berth computed ahead and how many of those it could use.
``--repeat N`` measures every setup N times (each round in a fresh namespace) and reports, per
setup, the median of its ratios to the kube-scheduler round of the same repeat, which is steadier
than one pair on a noisy machine. Each repeat starts one setup later than the one before, so that no
setup always runs first. ``--warmup N`` (default 1) first runs every setup N times, shown in the
tables but left out of the ratios: the stack's first rounds are slower whatever runs in them (every
process, the Go ones too, spends more CPU per pod while its heap and caches grow).

``--null-extender`` adds a third round to each repeat: the same kube-scheduler with
``bench/nullextender``, a Go extender that passes every node, scores them all 0 and binds over
HTTP/2 (built with ``go build``, seconds with Go's build cache). It prices the protocol itself:
what kube-scheduler, the API server and etcd spend on two HTTP calls and a delegated bind per pod.

``--plugin-only`` adds another: a second ``berth serve`` whose profile runs only the example
out-of-tree plugin (``examples/plugins``: PreferLabel, with the queue sort and binder), as a platform
team deploys berth when kube-scheduler already runs the in-tree plugins. Every extender runs from the
first round to the last, so that all rounds share one background.

``--profile FILE`` samples ``berth serve`` with py-spy (``--py-spy PATH``, default: on PATH) during
the rounds with berth and writes collapsed stacks to FILE (one per round, ``FILE.N``), summarised
at the end.

Usage: ``.venv/bin/python bench/e2e_throughput.py [--nodes 200] [--pods 1000] [--repeat 1] [--warmup 1]
[--null-extender] [--plugin-only] [--no-bind-round] [--profile FILE] [--keep-logs DIR]``
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from e2e.stack import (  # noqa: E402
    PLUGINS_DIR,
    BerthServer,
    ExtenderEntry,
    KubeScheduler,
    Process,
    free_port,
    scheduler_config,
)

from app.kube.client import KubeClient  # noqa: E402
from kube.controlplane import LocalControlPlane, default_bin_dir  # noqa: E402

QPS = 5000
ZONES = ("zone-a", "zone-b", "zone-c")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and its waited-for children (0.0
    once it is gone): berth makes its serving certificate in a child process (app.server.x509tool)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime, stime, cutime, cstime (fields 14 to 17)
    return sum(int(v) for v in fields[11:15]) / _TICK


def machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (all cores, everything but idle and iowait)."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return 0.0
    return (sum(values[:8]) - values[3] - values[4]) / _TICK


def scrape(url: str, ctx: ssl.SSLContext | None = None) -> dict[str, float]:
    """A Prometheus text endpoint as ``{'name{labels}': value}`` (empty if it cannot be read)."""
    try:
        with urllib.request.urlopen(url, timeout=10, context=ctx) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    return parse_metrics(text)


def parse_metrics(text: str, prefix: str = "") -> dict[str, float]:
    """Prometheus text as ``{'name{labels}': value}``, only the series starting with ``prefix``."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and line.startswith(prefix) and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            with contextlib.suppress(ValueError):
                out[key] = float(value)
    return out


def mean_ms(after: dict[str, float], before: dict[str, float], series: str) -> float | None:
    """Mean of a histogram/summary ``series`` (``name{labels}`` without _sum/_count) over the round, ms."""
    name, _, labels = series.partition("{")
    labels = "{" + labels if labels else ""
    count = after.get(f"{name}_count{labels}", 0.0) - before.get(f"{name}_count{labels}", 0.0)
    total = after.get(f"{name}_sum{labels}", 0.0) - before.get(f"{name}_sum{labels}", 0.0)
    return 1e3 * total / count if count else None


def api_metrics(client: KubeClient) -> dict[str, float]:
    """The API server's request-duration series (the client is the admin: /metrics is allowed)."""
    status, data = client.request("GET", "/metrics")
    return parse_metrics(data.decode(), "apiserver_request_duration_seconds_") if status == 200 else {}


def etcd_calls(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """gRPC calls etcd handled between two scrapes of its /metrics, by method (``Txn``, ``Range``...)."""
    calls: dict[str, float] = {}
    for key, value in after.items():
        if key.startswith(ETCD_CALLS) and (delta := value - before.get(key, 0.0)):
            method = re.search(r'grpc_method="([^"]+)"', key)
            name = method.group(1) if method else key
            calls[name] = calls.get(name, 0.0) + delta
    return calls


def mean_ms_matching(
    after: dict[str, float], before: dict[str, float], name: str, labels: list[str]
) -> float | None:
    """Mean of histogram ``name`` over the round, ms, summed over every series with all ``labels``
    (``'key="value"'`` strings) among its own."""
    count = total = 0.0
    for key, value in after.items():
        if not all(label in key for label in labels):
            continue
        if key.startswith(f"{name}_count{{"):
            count += value - before.get(key, 0.0)
        elif key.startswith(f"{name}_sum{{"):
            total += value - before.get(key, 0.0)
    return 1e3 * total / count if count else None


API_BINDING: tuple[str, list[str]] = (
    "apiserver_request_duration_seconds",
    ['resource="pods"', 'subresource="binding"', 'verb="POST"'],
)
"""The API server's own time per Binding (its ``apiserver_request_duration_seconds``)."""

ETCD_CALLS = "grpc_server_handled_total{"
"""etcd's count of the gRPC calls it handled, by method and code (on its plain-HTTP client URL)."""

# Where a pod's time goes, per round: kube-scheduler's own view, and berth's (in the app, request in
# to answer out; the difference to kube-scheduler's view is the network, HTTP parsing outside the
# app, and waiting for a CPU or the GIL).
KUBE_SCHEDULER_SERIES = {
    "ks attempt": "scheduler_scheduling_attempt_duration_seconds"
    '{profile="default-scheduler",result="scheduled"}',
    "ks algorithm": "scheduler_scheduling_algorithm_duration_seconds",
}
BERTH_SERIES = {
    f"berth {verb}": f'http_request_duration_seconds{{handler="/{verb}",method="POST"}}'
    for verb in ("filter", "prioritize", "bind")
}


class CpuMeter:
    """CPU seconds used by named processes, and by the rest of the machine, between two readings."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self._start = {name: process_cpu(pid) for name, pid in pids.items()}
        self._machine = machine_cpu()

    def read(self) -> dict[str, float]:
        """Seconds per process since construction, plus ``other`` (the rest of the machine)."""
        used = {name: process_cpu(pid) - self._start[name] for name, pid in self.pids.items()}
        used["other"] = max(0.0, machine_cpu() - self._machine - sum(used.values()))
        return used


@dataclass
class Round:
    """One measured round."""

    name: str
    pods: int
    bound: int
    seconds: float
    average: float
    p50: float
    cpu: dict[str, float]
    """CPU seconds per process over the round (kube-scheduler start to last bind)."""
    latency: dict[str, float | None]
    """Mean ms per call of :data:`KUBE_SCHEDULER_SERIES` and :data:`BERTH_SERIES` over the round."""
    server_average: float = 0.0
    """Bound pods / seconds spanned, from the API server's PodScheduled transition times."""
    server_samples: list[int] = field(default_factory=list)
    """Pods bound in each wall-clock second, by the API server's PodScheduled transition times."""
    event_average: float = 0.0
    """Bound pods / seconds, from the microsecond times of kube-scheduler's Scheduled events."""
    speculations: dict[str, float] = field(default_factory=dict)
    """berth's /prioritize answers computed ahead over the round, by result (used, discarded)."""
    etcd_calls: dict[str, float] = field(default_factory=dict)
    """gRPC calls etcd handled over the round, by method: what the API server asked of it."""

    @property
    def pods_per_cpu_second(self) -> float:
        """Bound pods per CPU second of the measured stack (every process but ``other``): a pair's
        ratio of it is the inverse ratio of their CPU per pod, which neighbours disturb less than time."""
        used = sum(seconds for name, seconds in self.cpu.items() if name != "other")
        return self.bound / used if used else 0.0


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


def server_bind_times(client: KubeClient, namespace: str) -> list[float]:
    """When each bound pod was bound, as the API server stamped it (whole seconds): the binding
    subresource sets ``PodScheduled=True`` with ``lastTransitionTime`` now. Independent of how
    promptly this process's watch saw the binds."""
    pods = client.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"]
    times = []
    for pod in pods:
        for cond in pod.get("status", {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
                stamp = datetime.strptime(cond["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ")
                times.append(stamp.replace(tzinfo=UTC).timestamp())
    return times


def scheduled_event_times(client: KubeClient, namespace: str) -> list[float]:
    """When kube-scheduler saw each pod bound, to the microsecond: the ``eventTime`` of its
    ``Scheduled`` event (events.k8s.io/v1), which it records once the bind has succeeded, whoever
    bound. The earliest per pod."""
    events = client.get_json(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
    first: dict[str, float] = {}
    for event in events:
        if event.get("reason") != "Scheduled" or not event.get("eventTime"):
            continue
        pod = (event.get("regarding") or {}).get("name", "")
        stamp = datetime.strptime(event["eventTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
        first[pod] = min(stamp, first.get(pod, stamp))
    return sorted(first.values())


def event_rate(times: list[float]) -> float:
    """Pods per second between the first and the last ``Scheduled`` event."""
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and times[-1] > times[0] else 0.0


def server_rate(times: list[float]) -> tuple[float, list[int]]:
    """The average rate and the per-second counts of whole-second server timestamps."""
    if not times:
        return 0.0, []
    first, last = min(times), max(times)
    samples = [0] * (int(last - first) + 1)
    for t in times:
        samples[int(t - first)] += 1
    return len(times) / (last - first + 1), samples  # the seconds are inclusive


class Profiler:
    """``py-spy record`` attached to a process, writing collapsed stacks when stopped."""

    def __init__(self, py_spy: str, pid: int, output: Path) -> None:
        self.output = output
        self.popen = subprocess.Popen(
            [
                py_spy,
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--rate",
                "200",
                "--nonblocking",
                "--gil",  # only the thread holding the GIL: where berth's one core of Python goes
                "--output",
                str(output),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        """SIGINT makes py-spy write its output and exit."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
        self.popen.wait(timeout=60)


class NullExtender(Process):
    """``bench/nullextender``: the extender protocol with nothing decided (Go; see its source)."""

    def __init__(self, cp: LocalControlPlane, workdir: Path) -> None:
        super().__init__("nullextender", workdir / "nullextender.log")
        self.cp = cp
        self.binary = workdir / "nullextender"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> NullExtender:
        """Build it (seconds with Go's build cache) and serve."""
        subprocess.run(
            ["go", "build", "-o", str(self.binary), "."], cwd=ROOT / "bench" / "nullextender", check=True
        )
        cp = self.cp
        api = [
            "-server",
            cp.server,
            "-ca",
            str(cp.ca_file),
            "-cert",
            str(cp.client_cert),
            "-key",
            str(cp.client_key),
        ]
        self.spawn([str(self.binary), "-listen", f"127.0.0.1:{self.port}", *api])
        self.wait_ready(f"{self.url}/healthz")
        return self


def print_profile(files: list[Path], top: int = 30) -> None:
    """The functions with the most samples of berth's busy threads: self and inclusive."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for path in files:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            # "function (file:line)" frames, counted per function, not per line
            frames = [f.rsplit(":", 1)[0] + ")" if f.endswith(")") else f for f in stack.split(";")]
            total += int(count)
            if frames:
                own[frames[-1]] += int(count)
            for frame in set(frames):
                inclusive[frame] += int(count)
    if not total:
        print("\n(no profile samples)")
        return
    print(f"\nberth profile: {total} samples of the thread holding the GIL\n")
    print("| self % | function |")
    print("|---|---|")
    for frame, samples in own.most_common(top):
        print(f"| {100 * samples / total:.1f} | `{frame}` |")
    print("\n| inclusive % | function |")
    print("|---|---|")
    for frame, samples in inclusive.most_common(top):
        print(f"| {100 * samples / total:.1f} | `{frame}` |")


def measure(name: str, watch: BindWatch, pods: int) -> Round:
    times = sorted(watch.times.values())
    if len(times) < 2:
        return Round(name, pods, len(times), 0.0, 0.0, 0.0, {}, {})
    start, end = times[0], times[-1]
    seconds = end - start
    buckets = [0] * (int(seconds) + 1)
    for t in times:
        buckets[int(t - start)] += 1
    full = buckets[:-1] or buckets  # the last second is partial
    return Round(name, pods, len(times), seconds, (len(times) - 1) / seconds, statistics.median(full), {}, {})


def run_round(
    name: str,
    cp: LocalControlPlane,
    client: KubeClient,
    workdir: Path,
    pods: int,
    extenders: list[ExtenderEntry],
    stack_pids: dict[str, int],
    berth_url: str = "",
    profiler: Profiler | None = None,
) -> Round:
    """One round; ``profiler``, if any, is stopped when the last pod is bound."""
    namespace = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")  # a DNS label
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    print(f"[{name}] creating {pods} pods", file=sys.stderr)
    create_all(client, f"/api/v1/namespaces/{namespace}/pods", [pod_body(i) for i in range(pods)])
    watch = BindWatch(client, namespace)
    config = scheduler_config(cp.kubeconfig, extenders, qps=QPS, burst=QPS)
    sched = KubeScheduler(cp.bin_dir, cp.kubeconfig, workdir, config, f"kube-scheduler-{namespace}")
    etcd_before = scrape(f"{cp.etcd_url}/metrics")  # before the start: its parsing stays out of the round
    print(f"[{name}] starting kube-scheduler", file=sys.stderr)
    sched.start(verbosity=1)
    assert sched.popen is not None
    meter = CpuMeter({"kube-scheduler": sched.popen.pid, **stack_pids})
    berth_before = scrape(f"{berth_url}/metrics") if berth_url else {}
    api_before = api_metrics(client)
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # kube-scheduler's serving certificate is self-signed
    try:
        watch.wait(pods, timeout=300)
        cpu = meter.read()
        ks = scrape(f"https://127.0.0.1:{sched.port}/metrics", insecure)
        berth_after = scrape(f"{berth_url}/metrics") if berth_url else {}
        api_after = api_metrics(client)
        etcd_after = scrape(f"{cp.etcd_url}/metrics")
    finally:
        if profiler is not None:
            profiler.stop()
        sched.stop()
    result = measure(name, watch, pods)
    result.cpu = cpu
    result.etcd_calls = etcd_calls(etcd_after, etcd_before)
    result.latency = {label: mean_ms(ks, {}, series) for label, series in KUBE_SCHEDULER_SERIES.items()}
    result.latency["apiserver binding"] = mean_ms_matching(api_after, api_before, *API_BINDING)
    if berth_url:
        result.latency |= {
            label: mean_ms(berth_after, berth_before, series) for label, series in BERTH_SERIES.items()
        }
        for outcome in ("used", "discarded"):
            key = f'berth_extender_prioritize_speculations_total{{result="{outcome}"}}'
            result.speculations[outcome] = berth_after.get(key, 0.0) - berth_before.get(key, 0.0)
    result.server_average, result.server_samples = server_rate(server_bind_times(client, namespace))
    result.event_average = event_rate(scheduled_event_times(client, namespace))
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


PLUGIN_ONLY_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: {QPS}
  burst: {QPS}
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: PrioritySort
      - name: DefaultBinder
      - name: PreferLabel
        weight: 5
      disabled:
      - name: "*"
  pluginConfig:
  - name: PreferLabel
    args:
      label: example.com/fast-disk
"""
"""berth's profile for ``--plugin-only``: the example out-of-tree plugin (examples/plugins/prefer_label.py) and nothing in-tree to decide."""


@dataclass
class Contender:
    """One setup measured in every repeat: kube-scheduler alone (no ``server``) or with one extender."""

    name: str
    server: Process | None = None
    label: str = ""
    """The extender's column in the CPU table."""
    url: str = ""
    metrics_url: str = ""
    """A berth's, whose /metrics the round reads; empty for other extenders."""
    bind_verb: str = "bind"
    profile: Path | None = None
    """py-spy the server into ``profile.N`` during its measured rounds (N: the repeat)."""

    def extenders(self) -> list[ExtenderEntry]:
        """kube-scheduler's ``extenders:`` for this setup."""
        if self.server is None:
            return []
        return [ExtenderEntry(self.url, node_cache_capable=True, bind_verb=self.bind_verb)]


@dataclass
class RoundSetup:
    """What every round of a run shares."""

    cp: LocalControlPlane
    client: KubeClient
    workdir: Path
    pods: int
    plane: dict[str, int]
    py_spy: str = "py-spy"

    def run(self, contender: Contender, suffix: str, repeat: int = 0) -> Round:
        """A round of ``contender``, named with ``suffix``; profiled in measured repeat ``repeat``
        (from 1) when the contender asks for it."""
        pids = dict(self.plane)
        profiler = None
        if contender.server is not None:
            assert contender.server.popen is not None
            pids[contender.label] = contender.server.popen.pid
            if contender.profile is not None and repeat:
                output = contender.profile.with_name(f"{contender.profile.name}.{repeat}")
                profiler = Profiler(self.py_spy, contender.server.popen.pid, output)
        return run_round(
            contender.name + suffix,
            self.cp,
            self.client,
            self.workdir,
            self.pods,
            contender.extenders(),
            pids,
            contender.metrics_url,
            profiler,
        )


def rotated(items: list[Contender], by: int) -> list[Contender]:
    """``items`` started at index ``by`` (modulo its length), so that no setup always runs first."""
    k = by % len(items)
    return items[k:] + items[:k]


def plugin_only_berth(cp: LocalControlPlane, workdir: Path) -> BerthServer:
    """A second ``berth serve`` that runs only PreferLabel (:data:`PLUGIN_ONLY_CONFIG`), started."""
    config = workdir / "berth-plugin-only.yaml"
    config.write_text(PLUGIN_ONLY_CONFIG)
    args = ["--config", str(config), "--plugin-module", "prefer_label"]
    env = {"PYTHONPATH": str(PLUGINS_DIR)}
    return BerthServer(cp.kubeconfig, workdir, args, env=env, name="berth-plugin-only").start()


READINGS = (
    ("watch", "average"),
    ("Scheduled event times", "event_average"),
    ("API server times", "server_average"),
    ("p50 of the one-second samples", "p50"),
    ("stack CPU per pod (alone's over this one's)", "pods_per_cpu_second"),
)
"""What a pair's ratios are taken of: a round's throughput by each timing, and its stack's CPU per pod
(label, :class:`Round` attribute)."""


def pair_ratios(pairs: list[tuple[Round, Round]], attr: str) -> list[float]:
    """``attr`` of each pair's second round over its first's."""
    return [getattr(e, attr) / getattr(b, attr) if getattr(b, attr) else 0.0 for b, e in pairs]


def print_ratios(who: str, pairs: list[tuple[Round, Round]], readings: tuple[tuple[str, str], ...]) -> None:
    """One line per reading: the median ratio of the pairs, and each pair's."""
    for label, attr in readings:
        ratio = pair_ratios(pairs, attr)
        detail = f", median of the pairs: {', '.join(f'{r:.2f}' for r in ratio)}" if len(ratio) > 1 else ""
        print(f"{who}, {label}: {statistics.median(ratio):.2f}x{detail}")


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1, help="measure every setup this many times")
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="repeats of every setup run first and left out of the ratios (the stack's start-up)",
    )
    parser.add_argument(
        "--no-bind-round", action="store_true", help="also measure berth as a filter/prioritize-only extender"
    )
    parser.add_argument(
        "--null-extender",
        action="store_true",
        help="also measure, in each repeat, a Go extender that decides nothing (bench/nullextender)",
    )
    parser.add_argument(
        "--plugin-only",
        action="store_true",
        help="also measure, in each repeat, berth running only the example out-of-tree plugin",
    )
    parser.add_argument("--profile", metavar="FILE", type=Path, help="py-spy berth serve into FILE.N")
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy", help="the py-spy binary")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the process logs here")
    args = parser.parse_args()
    if args.profile is not None:
        args.profile.parent.mkdir(parents=True, exist_ok=True)

    workdir = Path(tempfile.mkdtemp(prefix="berth-e2e-bench-"))
    cp = LocalControlPlane(default_bin_dir(), ready_timeout=120.0)
    cp.start()
    servers: list[Process] = []
    rounds: list[Round] = []
    pairs: dict[str, list[tuple[Round, Round]]] = {}
    binds = 0.0
    try:
        client = KubeClient.from_config(str(cp.kubeconfig), qps=QPS, burst=QPS)
        print(f"creating {args.nodes} nodes", file=sys.stderr)
        create_all(client, "/api/v1/nodes", [node_body(i) for i in range(args.nodes)])
        plane = {p.name: p.popen.pid for p in cp._procs if p.popen.poll() is None}

        berth_config = workdir / "berth-config.yaml"
        berth_config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"clientConnection:\n  qps: {QPS}\n  burst: {QPS}\n"
        )
        # Every extender runs from the first round to the last, so that all rounds share one background
        # (each berth's informers take in every pod event, whichever round it belongs to).
        berth = BerthServer(cp.kubeconfig, workdir, ["--config", str(berth_config)]).start()
        servers.append(berth)
        alone = Contender("kube-scheduler")
        contenders = [
            alone,
            Contender("kube-scheduler + berth", berth, "berth", berth.url, berth.url, profile=args.profile),
        ]
        if args.null_extender:
            null = NullExtender(cp, workdir).start()
            servers.append(null)
            contenders.append(Contender("kube-scheduler + null extender", null, "null extender", null.url))
        if args.plugin_only:
            plugin_berth = plugin_only_berth(cp, workdir)
            servers.append(plugin_berth)
            url = plugin_berth.url
            contenders.append(
                Contender("kube-scheduler + berth plugin-only", plugin_berth, "berth", url, url)
            )
        if args.no_bind_round:
            # Where the time goes: the same extender without bindVerb (kube-scheduler binds itself).
            contenders.append(
                Contender("kube-scheduler + berth no bindVerb", berth, "berth", berth.url, berth.url, "")
            )
        setup = RoundSetup(cp, client, workdir, args.pods, plane, args.py_spy)
        for n in range(args.warmup + args.repeat):
            repeat = n - args.warmup + 1  # <= 0 while warming up
            if repeat <= 0:  # each round needs a namespace of its own
                suffix = f" (warm-up {n + 1})" if args.warmup > 1 else " (warm-up)"
            else:
                suffix = f" #{repeat}" if args.repeat > 1 else ""
            # Each measured repeat starts one setup later, so no setup always runs first.
            results = {c.name: setup.run(c, suffix, max(repeat, 0)) for c in rotated(contenders, n)}
            rounds.extend(results.values())
            if repeat > 0:
                for c in contenders[1:]:
                    pairs.setdefault(c.name, []).append((results[alone.name], results[c.name]))
        binds = berth.metric("berth_extender_requests_total", {"verb": "bind", "result": "success"})
    finally:
        for server in servers:
            server.stop()
        cp.stop()
        if args.keep_logs:
            shutil.copytree(workdir, args.keep_logs, dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"\n{args.nodes} nodes x {args.pods} pods (scheduler_perf templates), pods/s sampled once a second; "
        f"{args.warmup} warm-up repeat(s) left out of the ratios\n"
    )
    print(
        "| setup | bound | seconds | avg pods/s | p50 pods/s | avg pods/s (events) | avg pods/s (server) "
        "| per second (server) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rounds:
        print(
            f"| {r.name} | {r.bound}/{r.pods} | {r.seconds:.1f} | {r.average:.0f} | {r.p50:.0f} "
            f"| {r.event_average:.0f} | {r.server_average:.0f} | {' '.join(str(n) for n in r.server_samples)} |"
        )
    print("\nCPU ms per bound pod, kube-scheduler start to last bind ('other': the rest of the machine):\n")
    names = ["kube-scheduler", "berth", "null extender", "kube-apiserver", "etcd", "other"]
    print("| setup | " + " | ".join(names) + " | total |")
    print("|---" * (len(names) + 2) + "|")
    for r in rounds:
        per_pod = {k: 1e3 * v / max(r.bound, 1) for k, v in r.cpu.items()}
        cells = [f"{per_pod[k]:.2f}" if k in per_pod else "-" for k in names]
        print(f"| {r.name} | " + " | ".join(cells) + f" | {sum(per_pod.values()):.2f} |")
    print("\nMean ms per call over the round (ks: kube-scheduler's metrics; berth: inside its app):\n")
    labels = [*KUBE_SCHEDULER_SERIES, "apiserver binding", *BERTH_SERIES]
    print("| setup | " + " | ".join(labels) + " |")
    print("|---" * (len(labels) + 1) + "|")
    for r in rounds:
        cells = [f"{v:.2f}" if (v := r.latency.get(k)) is not None else "-" for k in labels]
        print(f"| {r.name} | " + " | ".join(cells) + " |")
    print("\netcd over the round: the gRPC calls it handled, and its CPU per Txn (its writes and reads):\n")
    methods = sorted({m for r in rounds for m in r.etcd_calls}, key=lambda m: (m != "Txn", m))
    print("| setup | " + " | ".join(methods) + " | etcd CPU µs per Txn |")
    print("|---" * (len(methods) + 2) + "|")
    for r in rounds:
        cells = [f"{r.etcd_calls.get(m, 0):.0f}" for m in methods]
        txns = r.etcd_calls.get("Txn", 0.0)
        per_txn = f"{1e6 * r.cpu.get('etcd', 0.0) / txns:.0f}" if txns else "-"
        print(f"| {r.name} | " + " | ".join(cells) + f" | {per_txn} |")
    for r in rounds:
        if r.speculations:
            used, discarded = r.speculations["used"], r.speculations["discarded"]
            print(
                f"\n{r.name}: /prioritize answers computed ahead: {used:.0f} used, {discarded:.0f} discarded"
            )
    if args.profile is not None:
        print_profile(sorted(args.profile.parent.glob(f"{args.profile.name}.*")))
    print(f"\nberth /bind successes: {binds:.0f}; target: with berth / without >= 0.6x (watch average)")
    for name, setup_pairs in pairs.items():
        print_ratios(f"{name.removeprefix('kube-scheduler + ')} / without", setup_pairs, READINGS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
