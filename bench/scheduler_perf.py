"""kube-scheduler's own benchmark suite (scheduler_perf) against ``berth run`` and kube-scheduler.

Reads ``test/integration/scheduler_perf/*/performance-config.yaml`` and their templates straight from
the Go module cache (``bench/perf_config.py``; nothing is copied into the project), lists the workloads
and runs one, named as upstream names it (``SchedulingBasic/5000Nodes_10000Pods``), the way
scheduler_perf's executor runs it, against each scheduler in turn. Every scheduler gets an identical,
fresh local control plane (``tests/kube/controlplane.py``; the API server with the ``Priority``
admission plugin off too, as scheduler_perf runs it, and the workload's feature gates) and is started
alone on it, before the first op, with client QPS/burst 5000 (scheduler_perf's), no leader election,
and the workload's gates: ``--feature-gates`` for both, ``--emulated-version=1.33`` for kube-scheduler
when the workload turns ``SchedulerQueueingHints`` off (as scheduler_perf emulates 1.33 then), and
``OpportunisticBatching=false`` unless the workload sets it (as scheduler_perf does). berth runs with
the profile named ``default-scheduler``, so it schedules the very pods upstream's templates create.

Measured, for every op that collects metrics (``createPods`` with ``collectMetrics``, or
``startCollectingMetrics`` .. ``stopCollectingMetrics``), over the window from the collector's start
to its stop (pods are created inside the window, as upstream):

* SchedulingThroughput, as scheduler_perf's throughputCollector: measured pods seen scheduled, sampled
  every second, the first sample skipped, a second with nothing new folded into the next sample (which
  is then recorded once per second it spans); Average and Perc50/90/95/99 of those samples (pods/s).
* CPU ms per measured pod: the scheduler process's user+system CPU (``/proc/PID/stat``) over the window.
* API server + etcd CPU ms per measured pod: the same, for the control plane's two processes; the
  bench's own requests are in it too, the same for both schedulers, so the difference is what serving
  each scheduler costs.
* peak RSS: the scheduler process's VmHWM at the end of the workload (MiB).
* API requests per measured pod: the API server's ``apiserver_request_total`` over the window minus the
  requests this bench made itself (counted at its client); includes the API server's own few loopback
  requests.
* Events written per measured pod: ``apiserver_request_total`` POST/PUT/PATCH of ``events`` over the window.

Ops run: createNodes (templates, nodeAllocatable/label/uniqueLabel strategies), createNamespaces,
createPods (templates, count params, collectMetrics, skipWaitToCompletion, createPodSets), deletePods,
createAny, updateAny, churn, barrier, sleep, start/stopCollectingMetrics, createResourceDriver (the
test DRA driver's slices; DRA workloads also get the resourceclaim controller). A workload this bench
or berth cannot run is refused up front, saying which op or plugin and why (``--list`` shows it for all).

Usage::

    bench/scheduler_perf.py --list [--label performance] [--match Basic]
    bench/scheduler_perf.py SchedulingBasic/500Nodes [--scheduler both|kube-scheduler|berth]
        [--set measurePods=200 ...] [--repeat N] [--json FILE] [--keep-logs DIR] [--verbosity 2]
        [--profile DIR]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import perf_config as pc  # noqa: E402
from dra import driver_slice  # noqa: E402
from e2e.stack import KubeScheduler, Process, StackError, scheduler_config  # noqa: E402
from e2e.standalone import BerthScheduler  # noqa: E402
from e2e_throughput import QPS, parse_metrics, process_cpu  # noqa: E402
from standalone import peak_rss_mib  # noqa: E402

from app.featuregates import FeatureGateError, FeatureGates  # noqa: E402
from app.kube.client import KubeClient, KubeError  # noqa: E402
from app.kube.ratelimit import TokenBucket  # noqa: E402
from app.plugins.registry import in_tree_registry  # noqa: E402
from kube.controlplane import ControlPlaneError, LocalControlPlane, default_bin_dir  # noqa: E402

KUBE, BERTH = "kube-scheduler", "berth run"
SCHEDULER_CHOICES = {"kube-scheduler": [KUBE], "berth": [BERTH], "both": [KUBE, BERTH]}
CREATE_WORKERS = 30
"""Parallel creations, as test/utils's CreatePod (workqueue.ParallelizeUntil with 30 workers)."""
WAIT_TIMEOUT = 600.0
"""How long a wait for scheduled pods may take, as scheduler_perf's 10-minute poll."""
DEFAULT_POD_IMAGE = "registry.k8s.io/pause:3.10.1"
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
"""k8s.io/apimachinery's rand.String alphabet (generated node names)."""
CAVEAT = (
    "small-scale numbers from a shared 2-core machine under load from other work: they show the tool works, "
    "not how fast either scheduler is"
)


class BenchError(RuntimeError):
    """The workload could not be run (the message says where)."""


class CountingLimiter:
    """The client's token bucket, counting every request this bench sends (each passes ``accept``)."""

    def __init__(self, bucket: TokenBucket) -> None:
        self.bucket = bucket
        self.count = 0
        self._lock = threading.Lock()

    def accept(self) -> float:
        """Count the request, then wait for a token; the seconds waited (as the bucket's ``accept``)."""
        with self._lock:
            self.count += 1
        return self.bucket.accept()


def selector_matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """Every label of ``selector`` set to its value (scheduler_perf's labelsMatch)."""
    return all(labels.get(k) == v for k, v in selector.items())


# ---- the pods, as scheduler_perf's shared pod informer sees them ------------------------------------


@dataclass
class PodView:
    """What the bench keeps of a pod."""

    namespace: str
    name: str
    labels: dict[str, str]
    node: str
    attempted: bool
    """It has a PodScheduled condition (scheduler_perf's isAttempted)."""


def pod_view(obj: Mapping[str, Any]) -> PodView:
    """The :class:`PodView` of a pod object."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    attempted = any(c.get("type") == "PodScheduled" for c in status.get("conditions") or [])
    return PodView(
        meta.get("namespace", ""),
        meta.get("name", ""),
        dict(meta.get("labels") or {}),
        spec.get("nodeName", ""),
        attempted,
    )


PodHandler = Callable[[PodView | None, PodView], None]


class PodTracker:
    """Every pod of the cluster from one list and watch, resumed after a break and relisted after a
    410, with handlers called for each added or changed pod (old view or None, new view)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.pods: dict[tuple[str, str], PodView] = {}
        self.handlers: list[PodHandler] = []
        self.lock = threading.Lock()
        self.restarts = 0
        self.stall_seconds: float | None = None
        """Give a wait up after this long without one more pod done (None: only upstream's 10 minutes)."""
        self._stopped = threading.Event()
        self._stream: Any = None
        self._rv = self._relist()
        self._thread = threading.Thread(target=self._run, daemon=True, name="pod-tracker")
        self._thread.start()

    def add_handler(self, handler: PodHandler) -> None:
        """Call ``handler`` for every pod added or changed from now on."""
        with self.lock:
            self.handlers.append(handler)

    def remove_handler(self, handler: PodHandler) -> None:
        """Stop calling ``handler``."""
        with self.lock:
            self.handlers.remove(handler)

    def _update(self, view: PodView) -> None:
        key = (view.namespace, view.name)
        old = self.pods.get(key)
        self.pods[key] = view
        for handler in self.handlers:
            handler(old, view)

    def _relist(self) -> str:
        listed = self.client.get_json("/api/v1/pods")
        with self.lock:
            seen = set()
            for obj in listed["items"]:
                view = pod_view(obj)
                seen.add((view.namespace, view.name))
                self._update(view)
            for key in set(self.pods) - seen:
                del self.pods[key]
        return str(listed["metadata"]["resourceVersion"])

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._stream = self.client.watch(
                    "/api/v1/pods",
                    {"resourceVersion": self._rv, "allowWatchBookmarks": "true", "timeoutSeconds": "600"},
                )
                for event in self._stream:
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        self._rv = self._relist()
                        break
                    self._rv = (obj.get("metadata") or {}).get("resourceVersion", self._rv)
                    if event.get("type") == "BOOKMARK":
                        continue
                    view = pod_view(obj)
                    with self.lock:
                        if event.get("type") == "DELETED":
                            self.pods.pop((view.namespace, view.name), None)
                        else:
                            self._update(view)
            except Exception as err:  # a broken stream of any kind: resume, as a reflector does
                if self._stopped.is_set():
                    break
                if isinstance(err, KubeError) and err.status == 410:
                    self._rv = self._relist()
                else:
                    time.sleep(0.2)
            if not self._stopped.is_set():
                self.restarts += 1

    def stop(self) -> None:
        """End the watch."""
        self._stopped.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(timeout=5)

    def select(self, namespace: str, selector: Mapping[str, str]) -> list[PodView]:
        """The pods of ``namespace`` (every namespace when empty) matching ``selector``."""
        with self.lock:
            return [
                p
                for p in self.pods.values()
                if (not namespace or p.namespace == namespace) and selector_matches(p.labels, selector)
            ]

    def wait(
        self, namespace: str, selector: Mapping[str, str], want: int, stage: str, stop: threading.Event
    ) -> None:
        """Poll every second, as scheduler_perf does, until ``want`` pods of ``namespace`` are
        scheduled (``stage`` Scheduled) or scheduled or attempted (Attempted)."""
        deadline = time.monotonic() + WAIT_TIMEOUT
        last_done, last_change = -1, time.monotonic()
        while True:
            pods = self.select(namespace, selector)
            done = sum(1 for p in pods if p.node or (stage == "Attempted" and p.attempted))
            if done >= want:
                return
            if stop.is_set():
                raise BenchError("stopped")
            now = time.monotonic()
            if done != last_done:
                last_done, last_change = done, now
            elif self.stall_seconds is not None and now - last_change > self.stall_seconds:
                raise BenchError(
                    f"namespace {namespace}: {stage.lower()} pods: want {want}, stalled at {done} "
                    f"for {self.stall_seconds:.0f}s (--stall-timeout)"
                )
            if now > deadline:
                raise BenchError(
                    f"namespace {namespace}: {stage.lower()} pods: want {want}, got {done} after {WAIT_TIMEOUT:.0f}s"
                )
            stop.wait(1.0)


# ---- SchedulingThroughput and the rest of a measured window -----------------------------------------


class ThroughputCollector:
    """scheduler_perf's throughputCollector (util.go), fed by the pod tracker."""

    def __init__(self, tracker: PodTracker, namespaces: Iterable[str], selector: Mapping[str, str]) -> None:
        self.tracker = tracker
        self.namespaces = set(namespaces)
        self.selector = dict(selector)
        self.scheduled = 0
        self.samples: list[float] = []
        self.before_first_sample = 0
        """Pods scheduled by the skipped first tick: in no sample."""
        self.by_last_sample = 0
        """Pods scheduled by the last sample's tick; the ones after it are in no sample either."""
        self.first_scheduled: float | None = None
        self.last_scheduled: float | None = None
        """When the bench saw the first and the last measured pod scheduled (``time.monotonic()``)."""
        self.created = 0
        self._added: dict[tuple[str, str], float] = {}
        """When the bench saw each measured pod created, until it sees it scheduled."""
        self.latencies: list[float] = []
        """Per measured pod seen created in the window, seconds from the bench seeing it created to
        seeing it scheduled (a pod created before the window has none)."""
        self.ticks: list[tuple[int, int]] = []
        """At each tick: measured pods seen created so far, and scheduled so far."""
        self._stop = threading.Event()
        tracker.add_handler(self._on_pod)
        self._thread = threading.Thread(target=self._run, daemon=True, name="throughput")
        self._thread.start()

    def _on_pod(self, old: PodView | None, new: PodView) -> None:
        if new.namespace not in self.namespaces or not selector_matches(new.labels, self.selector):
            return
        now = time.monotonic()
        if old is None:
            self.created += 1
            self._added[(new.namespace, new.name)] = now
        if (old is None or not old.node) and new.node:
            self.scheduled += 1  # under the tracker's lock
            self.last_scheduled = now
            added = self._added.pop((new.namespace, new.name), None)
            if added is not None:
                self.latencies.append(now - added)
            if self.first_scheduled is None:
                self.first_scheduled = self.last_scheduled

    def _counts(self) -> tuple[int, int]:
        """Measured pods seen created so far, and scheduled so far."""
        with self.tracker.lock:
            return self.created, self.scheduled

    def _run(self) -> None:
        last_count, last_time, started, skipped = 0, time.monotonic(), False, 0
        next_tick = time.monotonic() + 1.0
        while not self._stop.wait(max(0.0, next_tick - time.monotonic())):
            next_tick += 1.0
            now, (created, scheduled) = time.monotonic(), self._counts()
            self.ticks.append((created, scheduled))
            if scheduled == 0:
                continue
            if not started:  # the first sample is skipped: sampling and creating pods start independently
                started, last_count, last_time = True, scheduled, now
                self.before_first_sample = self.by_last_sample = scheduled
                continue
            new = scheduled - last_count
            if new == 0:  # no zero samples: wait for the next pod and spread the rate over the gap
                skipped += 1
                continue
            rate = new / (now - last_time)
            self.samples.extend([rate] * (skipped + 1))
            last_count, last_time, skipped = scheduled, now, 0
            self.by_last_sample = scheduled

    def stop(self) -> None:
        """Stop sampling and counting."""
        self._stop.set()
        self._thread.join()
        self.tracker.remove_handler(self._on_pod)

    def summary(self) -> dict[str, float]:
        """Average and Perc50/90/95/99 as upstream's collect() (empty when there was no sample)."""
        samples = sorted(self.samples)
        n = len(samples)
        if not n:
            return {}
        out = {"Average": sum(samples) / n}
        for p in (50, 90, 95, 99):
            out[f"Perc{p}"] = at_rank(samples, p)
        return out


def at_rank(ordered: list[float], p: int) -> float:
    """The value at rank ⌈p% of the count⌉ of ``ordered`` (sorted, not empty): upstream's PercN."""
    return ordered[-(-len(ordered) * p // 100) - 1]


def request_totals(client: KubeClient) -> dict[str, float]:
    """The API server's ``apiserver_request_total``, summed per ``verb resource[/subresource]``."""
    status, data = client.request("GET", "/metrics")
    if status != 200:
        raise BenchError(f"GET /metrics: HTTP {status}")
    totals: dict[str, float] = {}
    for key, value in parse_metrics(data.decode(), "apiserver_request_total{").items():
        labels = dict(part.split("=", 1) for part in key[key.index("{") + 1 : -1].split(",") if "=" in part)
        labels = {k: v.strip('"') for k, v in labels.items()}
        what = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        name = f"{labels.get('verb', '?')} {what or '(non-resource)'}"
        totals[name] = totals.get(name, 0.0) + value
    return totals


@dataclass
class Window:
    """One measured window: scheduler_perf's DataItem for SchedulingThroughput, plus the costs."""

    name: str
    measured_pods: int = 0
    seconds: float = 0.0
    throughput: dict[str, float] = field(default_factory=dict)
    samples: list[float] = field(default_factory=list)
    pods_before_samples: int = 0
    """Measured pods scheduled by the first (skipped) tick: upstream's samples leave them out."""
    pods_after_samples: int = 0
    """Measured pods scheduled after the last sample's tick: left out too. When a window ends in a
    burst, this decides the average more than the pace before it."""
    scheduling_span: float = 0.0
    """Seconds from the first measured pod seen scheduled to the last: the pace without the
    sampling's edges (the window also holds the wait before the first and the final poll)."""
    latency_ms: dict[str, float] = field(default_factory=dict)
    """From the bench seeing a measured pod created to seeing it scheduled: p50, p90, p99 and max.
    Together with :attr:`ticks` it tells a scheduler that keeps pace from one that falls behind
    creation and catches up after it."""
    ticks: list[tuple[int, int]] = field(default_factory=list)
    """At each of the collector's ticks: measured pods seen created so far, and scheduled so far."""
    cpu_ms_per_pod: float = 0.0
    control_plane_cpu_ms_per_pod: float = 0.0
    """etcd's and kube-apiserver's CPU over the window per measured pod: what serving the scheduler
    (its watches, binds and Events, in its encoding) costs the API server, besides the bench's own
    requests (the same for both schedulers)."""
    api_requests_per_pod: float = 0.0
    events_per_pod: float = 0.0
    scheduled_events_per_pod: float = 0.0
    """``Scheduled`` Events of the window's namespaces once the workload is done and the scheduler has
    written what it still had queued (see :func:`settle_events`), per measured pod."""
    namespaces: list[str] = field(default_factory=list)
    api_requests: dict[str, float] = field(default_factory=dict)
    """Requests the API server served in the window by ``verb resource``, the bench's own included."""
    bench_requests: int = 0


def percentiles_ms(seconds: list[float]) -> dict[str, float]:
    """p50, p90, p99 (ranked as upstream's PercN) and max of ``seconds``, in milliseconds (empty
    when there are none)."""
    if not seconds:
        return {}
    ordered = sorted(seconds)
    out = {f"p{p}": 1e3 * at_rank(ordered, p) for p in (50, 90, 99)}
    out["max"] = 1e3 * ordered[-1]
    return out


class Measurement:
    """A window being measured: the collector, and the counters at its start."""

    def __init__(self, name: str, run: Run, namespaces: Iterable[str], selector: Mapping[str, str]) -> None:
        self.run = run
        self.window = Window(name, namespaces=list(namespaces))
        self.bench_before = run.limiter.count
        self.api_before = request_totals(run.client)
        self.cpu_before = process_cpu(run.scheduler_pid)
        self.control_plane_before = sum(process_cpu(pid) for pid in run.control_plane_pids)
        self.start = time.monotonic()
        self.collector = ThroughputCollector(run.tracker, namespaces, selector)

    def finish(self) -> Window:
        """Stop the collector and read the counters again: the window's :class:`Window`."""
        self.collector.stop()
        w = self.window
        w.seconds = time.monotonic() - self.start
        cpu = process_cpu(self.run.scheduler_pid) - self.cpu_before
        control_plane = (
            sum(process_cpu(pid) for pid in self.run.control_plane_pids) - self.control_plane_before
        )
        w.bench_requests = self.run.limiter.count - self.bench_before
        after = request_totals(self.run.client)
        w.api_requests = {
            k: v - self.api_before.get(k, 0.0) for k, v in after.items() if v - self.api_before.get(k, 0.0)
        }
        w.measured_pods = self.collector.scheduled
        w.throughput = self.collector.summary()
        w.samples = self.collector.samples
        w.pods_before_samples = self.collector.before_first_sample
        w.pods_after_samples = w.measured_pods - self.collector.by_last_sample
        first, last = self.collector.first_scheduled, self.collector.last_scheduled
        w.scheduling_span = last - first if first is not None and last is not None else 0.0
        w.latency_ms = percentiles_ms(self.collector.latencies)
        w.ticks = list(self.collector.ticks)
        pods = max(w.measured_pods, 1)
        w.cpu_ms_per_pod = 1e3 * cpu / pods
        w.control_plane_cpu_ms_per_pod = 1e3 * control_plane / pods
        w.api_requests_per_pod = max(0.0, sum(w.api_requests.values()) - w.bench_requests) / pods
        event_writes = sum(
            v
            for k, v in w.api_requests.items()
            if k.split()[0] in ("POST", "PUT", "PATCH") and k.split()[1] == "events"
        )
        w.events_per_pod = event_writes / pods
        return w


# ---- running the ops ---------------------------------------------------------------------------------


class RestMapper:
    """apiVersion + kind to a resource path, from the API server's discovery (cached)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._cache: dict[tuple[str, str], tuple[str, bool]] = {}

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """``(base path, namespaced)``, e.g. ``('/api/v1/{ns}pods', True)`` with ``{ns}`` to fill."""
        key = (api_version, kind)
        if key not in self._cache:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                resources = self.client.get_json(base)["resources"]
            except KubeError as err:
                raise BenchError(f"discovery of {api_version}: {err}") from err
            for r in resources:
                if r.get("kind") == kind and "/" not in r["name"]:
                    self._cache[key] = (f"{base}/{{ns}}{r['name']}", bool(r.get("namespaced")))
                    break
            else:
                raise BenchError(f"the API server serves no {kind} in {api_version}")
        return self._cache[key]

    def path(self, obj: Mapping[str, Any], namespace: str, where: str) -> str:
        """The collection path to create ``obj`` in (``namespace`` only for namespaced kinds, as upstream)."""
        base, namespaced = self.resource(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if namespace and not namespaced:
            raise BenchError(f"{where}: namespace {namespace!r} set, but {obj.get('kind')} is cluster-scoped")
        if namespaced and not namespace:
            raise BenchError(f"{where}: namespace not set, but {obj.get('kind')} is namespaced")
        return base.format(ns=f"namespaces/{quote(namespace)}/" if namespaced else "")


def base_node(prefix: str) -> dict[str, Any]:
    """scheduler_perf's makeBaseNode: 110 pods, 4 cpu, 32Gi, Ready."""
    resources = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": prefix},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def base_pod() -> dict[str, Any]:
    """scheduler_perf's makeBasePod (test/utils MakePodSpec): pause, port 80, 100m / 500Mi."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    container = {
        "name": "pause",
        "image": DEFAULT_POD_IMAGE,
        "ports": [{"containerPort": 80}],
        "resources": {"limits": resources, "requests": dict(resources)},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {"containers": [container]},
    }


class Run:
    """One scheduler on its own fresh cluster, running one workload's ops (scheduler_perf's WorkloadExecutor)."""

    def __init__(
        self,
        client: KubeClient,
        limiter: CountingLimiter,
        scheduler_pid: int,
        control_plane_pids: Iterable[int] = (),
    ) -> None:
        self.client = client
        self.limiter = limiter
        self.scheduler_pid = scheduler_pid
        self.control_plane_pids = list(control_plane_pids)
        self.tracker = PodTracker(client)
        self.mapper = RestMapper(client)
        self.pods_per_namespace: dict[str, int] = {}
        self.next_node_index = 0
        self.windows: list[Window] = []
        self.measuring: Measurement | None = None
        self.stop = threading.Event()
        self.background: list[threading.Thread] = []
        self.errors: list[str] = []
        self.apiserver_profile: tuple[Path, int] | None = None
        """(file name prefix, seconds): profile kube-apiserver from each window's start."""

    # -- helpers

    def post(
        self, path: str, body: Mapping[str, Any], params: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """POST ``body`` to ``path``; the created object (non-2xx raises :class:`KubeError`)."""
        status, data = self.client.request("POST", path, body=body, params=params)
        if status != 201 and status != 200:
            raise KubeError.from_response(status, data)
        result: dict[str, Any] = json.loads(data)
        return result

    def parallel(self, count: int, create: Callable[[int], None]) -> None:
        """``create(i)`` for every i, from :data:`CREATE_WORKERS` threads; the first error is raised."""
        with ThreadPoolExecutor(min(CREATE_WORKERS, max(count, 1))) as pool:
            for _ in pool.map(create, range(count)):
                pass

    def ensure_namespace(self, namespace: str) -> None:
        """scheduler_perf's createNamespaceIfNotPresent: create it unless this run already knows it."""
        if namespace in self.pods_per_namespace:
            return
        try:
            self.post("/api/v1/namespaces", {"metadata": {"name": namespace}})
        except KubeError as err:
            raise BenchError(f"failed to create namespace for Pod: {namespace}: {err}") from err
        self.pods_per_namespace[namespace] = 0

    def in_background(self, name: str, work: Callable[[], None]) -> None:
        """Run ``work`` in a thread until the workload ends; its error fails the next op."""

        def guarded() -> None:
            try:
                work()
            except (KubeError, BenchError, OSError) as err:
                if not self.stop.is_set():
                    self.errors.append(f"{name}: {err}")

        thread = threading.Thread(target=guarded, daemon=True, name=name)
        thread.start()
        self.background.append(thread)

    def start_window(self, name: str, namespaces: Iterable[str], selector: Mapping[str, str]) -> None:
        """startCollectingMetrics: open a measured window (one at a time, as upstream)."""
        if self.measuring is not None:
            raise BenchError(
                "metrics collection is overlapping: a second collector was started before the first stopped"
            )
        self.measuring = Measurement(name, self, namespaces, selector)
        if self.apiserver_profile is not None:
            prefix, seconds = self.apiserver_profile
            target = prefix.with_name(f"{prefix.name}-window{len(self.windows) + 1}.pprof")
            self.in_background("apiserver profile", lambda: self.profile_apiserver(target, seconds))

    def profile_apiserver(self, target: Path, seconds: int) -> None:
        """kube-apiserver's ``/debug/pprof/profile`` over ``seconds``, written to ``target``: what
        serving the scheduler costs the API server, by Go function (``go tool pprof -top``)."""
        status, data = self.client.request("GET", "/debug/pprof/profile", params={"seconds": str(seconds)})
        if status != 200:
            raise BenchError(f"GET /debug/pprof/profile: HTTP {status}")
        target.write_bytes(data)

    def stop_window(self) -> None:
        """stopCollectingMetrics: close the open window and keep its numbers."""
        if self.measuring is None:
            raise BenchError("missing startCollectingMetrics operation before stopping")
        self.windows.append(self.measuring.finish())
        self.measuring = None

    # -- the ops

    def run(self, ops: list[pc.Op]) -> None:
        """Run the ops in order, as scheduler_perf's runWorkload; an op's failure names the op."""
        handlers: dict[type, Callable[[Any], None]] = {
            pc.CreateNodes: self.create_nodes,
            pc.CreateNamespaces: self.create_namespaces,
            pc.CreatePods: self.create_pods,
            pc.DeletePods: self.delete_pods,
            pc.Churn: self.churn,
            pc.Barrier: self.barrier,
            pc.Sleep: self.sleep,
            pc.CreateAny: self.create_any,
            pc.UpdateAny: self.update_any,
            pc.CreateResourceDriver: self.create_resource_driver,
            pc.StartCollecting: lambda op: self.start_window(
                op.name or f"op {op.index} startCollectingMetrics", op.namespaces, op.label_selector
            ),
            pc.StopCollecting: lambda op: self.stop_window(),
        }
        for op in ops:
            handler = handlers.get(type(op))
            if handler is None:
                raise BenchError(f"op {op.index}: {type(op).__name__} cannot be run")
            started = time.monotonic()
            try:
                handler(op)
            except (KubeError, pc.ConfigError) as err:
                raise BenchError(f"op {op.index} ({type(op).__name__}): {err}") from err
            except BenchError as err:
                raise BenchError(f"op {op.index} ({type(op).__name__}): {err}") from err
            print(
                f"  op {op.index} {type(op).__name__} done in {time.monotonic() - started:.1f}s",
                file=sys.stderr,
            )
            if self.errors:
                raise BenchError("; ".join(self.errors))

    def create_nodes(self, op: pc.CreateNodes) -> None:
        """createNodes: ``count`` nodes from the template or the base node, then the prepare strategy."""

        def create(i: int) -> None:
            base = (
                pc.load_object(op.template, {"Index": i, "Count": op.count})
                if op.template
                else base_node(f"node-{op.index}-")
            )
            for attempt in range(5):
                node = json.loads(json.dumps(base))
                meta = node.setdefault("metadata", {})
                if not meta.get("name"):
                    meta["name"] = meta.get("generateName", "") + "".join(random.choices(NAME_CHARS, k=5))
                    meta.pop("generateName", None)
                meta.setdefault("labels", {})["kubernetes.io/hostname"] = meta["name"]
                try:
                    self.post("/api/v1/nodes", node)
                    return
                except KubeError:
                    if attempt == 4:
                        raise

        self.parallel(op.count, create)
        if op.strategy is not None:
            # As upstream: the nodes listed (in name order) from the next index on get the strategy,
            # whichever op created them.
            nodes = self.client.get_json("/api/v1/nodes")["items"]
            targets = nodes[self.next_node_index : self.next_node_index + op.count]
            self.parallel(len(targets), lambda i: self.prepare_node(op.strategy, targets[i], i))  # type: ignore[arg-type]
        self.next_node_index += op.count

    def prepare_node(self, strategy: pc.NodeStrategy, node: Mapping[str, Any], i: int) -> None:
        """test/utils's DoPrepareNode: a merge patch to the node, then its dependent objects."""
        name = node["metadata"]["name"]
        if strategy.kind == "label":
            patch: dict[str, Any] = {
                "metadata": {
                    "labels": {strategy.label_key: strategy.label_values[i % len(strategy.label_values)]}
                }
            }
        elif strategy.kind == "uniqueLabel":
            patch = {"metadata": {"labels": {strategy.label_key: str(uuid.uuid4())}}}
        else:
            # Sent to the node itself, not its status, as upstream: the API server keeps the old status
            # on such an update, so this changes nothing (a quirk of scheduler_perf, kept).
            patch = {"status": {"allocatable": dict(strategy.allocatable)}}
        status, data = self.client.request("PATCH", f"/api/v1/nodes/{quote(name)}", body=patch)
        if status != 200:
            raise KubeError.from_response(status, data)
        if strategy.kind == "allocatable":
            drivers = [
                {"name": driver, "nodeID": name, "allocatable": dict(allocatable or {})}
                for driver, allocatable in strategy.csi_allocatable.items()
            ]
            csi_node = {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {
                    "name": name,
                    "annotations": {
                        "storage.alpha.kubernetes.io/migrated-plugins": ",".join(strategy.migrated_plugins)
                    },
                },
                "spec": {"drivers": drivers},
            }
            self.post("/apis/storage.k8s.io/v1/csinodes", csi_node)

    def create_namespaces(self, op: pc.CreateNamespaces) -> None:
        """createNamespaces: ``<prefix>-<i>`` from the template, existing ones accepted."""
        base = pc.load_object(op.template) if op.template else {}
        for i in range(op.count):
            namespace = json.loads(json.dumps(base))
            namespace.setdefault("metadata", {})["name"] = f"{op.prefix}-{i}"
            namespace.setdefault("apiVersion", "v1")
            namespace.setdefault("kind", "Namespace")
            status, data = self.client.request("POST", "/api/v1/namespaces", body=namespace)
            if status not in (200, 201, 409):
                raise KubeError.from_response(status, data)
            self.pods_per_namespace.setdefault(f"{op.prefix}-{i}", 0)

    def create_pods(self, op: pc.CreatePods) -> None:
        """createPods: the pods from 30 threads, measured if asked, then waited for unless skipWaitToCompletion."""
        self.ensure_namespace(op.namespace)
        if op.collect_metrics:
            self.start_window(f"op {op.index} createPods", [op.namespace], {})
        path = f"/api/v1/namespaces/{quote(op.namespace)}/pods"

        def create(i: int) -> None:
            pod = pc.load_object(op.template, {"Index": i, "Count": op.count}) if op.template else base_pod()
            if op.pvc_template is not None and op.pv_template is not None:
                claim = self.create_bound_volume(op.namespace, i, op.pv_template, op.pvc_template)
                volume = {"name": "vol", "persistentVolumeClaim": {"claimName": claim}}
                pod.setdefault("spec", {})["volumes"] = [volume]
            self.post(path, pod)

        print(f"  creating {op.count} pods in namespace {op.namespace}", file=sys.stderr)
        self.parallel(op.count, create)
        if op.skip_wait:
            self.pods_per_namespace[op.namespace] += op.count
        else:
            self.tracker.wait(op.namespace, {}, op.count, "Scheduled", self.stop)
        if op.collect_metrics:
            self.stop_window()

    def create_bound_volume(self, namespace: str, i: int, pv_template: Path, pvc_template: Path) -> str:
        """test/utils's CreatePodWithPersistentVolume with bindVolume: a claim ``pvc-<i>`` and a volume
        ``<namespace>-vol-<i>`` bound to each other (specs and statuses), for pod ``i``; the claim's name."""
        claim_name, volume_name = f"pvc-{i}", f"{namespace}-vol-{i}"
        claim, volume = pc.load_object(pvc_template), pc.load_object(pv_template)
        claim.setdefault("metadata", {})["name"] = claim_name
        claim.setdefault("spec", {})["volumeName"] = volume_name
        claim["status"] = {"phase": "Bound"}
        volume.setdefault("metadata", {})["name"] = volume_name
        spec = volume.setdefault("spec", {})
        if "csi" in spec:
            spec["csi"]["volumeHandle"] = volume_name
        elif "awsElasticBlockStore" in spec:
            spec["awsElasticBlockStore"]["volumeID"] = f"vol-{i}"
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": claim_name,
            "apiVersion": "v1",
        }
        volume["status"] = {"phase": "Bound"}
        claims = f"/api/v1/namespaces/{quote(namespace)}/persistentvolumeclaims"
        for collection, obj in ((claims, claim), ("/api/v1/persistentvolumes", volume)):
            self.post(collection, obj)
            name = quote(obj["metadata"]["name"])
            status, data = self.client.request("PUT", f"{collection}/{name}/status", body=obj)
            if status != 200:
                raise KubeError.from_response(status, data)
        return claim_name

    def delete_pods(self, op: pc.DeletePods) -> None:
        """deletePods: the namespace's matching pods, at a rate or all at once, in the background if asked."""
        pods = self.tracker.select(op.namespace, op.label_selector)
        base = f"/api/v1/namespaces/{quote(op.namespace)}/pods"

        def delete() -> None:
            if op.per_second > 0:
                for pod in pods:
                    if self.stop.wait(1.0 / op.per_second):
                        return
                    status, data = self.client.request("DELETE", f"{base}/{quote(pod.name)}")
                    if status not in (200, 202, 404):
                        raise KubeError.from_response(status, data)
                return
            selector = ",".join(f"{k}={v}" for k, v in op.label_selector.items())
            status, data = self.client.request(
                "DELETE", base, params={"labelSelector": selector} if selector else None
            )
            if status not in (200, 202):
                raise KubeError.from_response(status, data)

        if op.skip_wait:
            self.in_background(f"op {op.index} deletePods", delete)
        else:
            delete()

    def churn(self, op: pc.Churn) -> None:
        """churn: create (or create and delete in turn) objects from templates every interval until the end."""
        status, data = self.client.request(
            "POST", "/api/v1/namespaces", body={"metadata": {"name": op.namespace}}
        )
        if status not in (200, 201, 409):
            raise KubeError.from_response(status, data)
        objects = [pc.load_object(path) for path in op.templates]
        paths = []
        for obj in objects:
            base, namespaced = self.mapper.resource(str(obj.get("apiVersion")), str(obj.get("kind")))
            paths.append(base.format(ns=f"namespaces/{quote(op.namespace)}/" if namespaced else ""))

        def churn_one(i: int, name: str) -> str:
            """Delete ``name`` if set, else create template ``i``; the new name ("" on failure)."""
            if name:
                self.client.request("DELETE", f"{paths[i]}/{quote(name)}")
                return ""
            status, data = self.client.request("POST", paths[i], body=objects[i])
            return str(json.loads(data)["metadata"]["name"]) if status == 201 else ""

        def create_mode() -> None:
            count, limit = 0, op.number or 2**31 - 1
            while count < limit and not self.stop.wait(op.interval):
                for i in range(len(objects)):
                    churn_one(i, "")
                count += 1

        def recreate_mode() -> None:
            names = [[""] * op.number for _ in objects]
            count = 0
            while not self.stop.wait(op.interval):
                for i in range(len(objects)):
                    names[i][count % op.number] = churn_one(i, names[i][count % op.number])
                count += 1

        self.in_background(f"op {op.index} churn", create_mode if op.mode == "create" else recreate_mode)

    def barrier(self, op: pc.Barrier) -> None:
        """barrier: wait until the namespaces' pods are scheduled (or attempted)."""
        for namespace in op.namespaces:
            if namespace not in self.pods_per_namespace:
                raise BenchError(f"unknown namespace {namespace}")
        namespaces = list(op.namespaces) or list(self.pods_per_namespace)
        for namespace in namespaces:
            self.tracker.wait(
                namespace, op.label_selector, self.pods_per_namespace[namespace], op.stage, self.stop
            )
        if op.stage == "Scheduled":
            for namespace in namespaces:
                del self.pods_per_namespace[namespace]

    def sleep(self, op: pc.Sleep) -> None:
        """sleep: wait, unless the run is stopped."""
        self.stop.wait(op.seconds)

    def create_any(self, op: pc.CreateAny) -> None:
        """createAny: objects from a template, each retried for 20 s as upstream."""
        if op.namespace:
            self.ensure_namespace(op.namespace)
        for i in range(op.count):
            obj = pc.load_object(op.template, {"Index": i, "Count": op.count})
            where = f"{op.template.name}"
            deadline = time.monotonic() + 20  # retried, as upstream: a CRD may not be served yet
            while True:
                try:
                    self.post(self.mapper.path(obj, op.namespace, where), obj, {"fieldValidation": "Strict"})
                    break
                except (KubeError, BenchError) as err:
                    if time.monotonic() > deadline:
                        raise BenchError(f"{where}: timed out creating {obj.get('kind')}: {err}") from err
                    self.stop.wait(1.0)

    def update_any(self, op: pc.UpdateAny) -> None:
        """updateAny: PUT each templated object (and its subresources), then its status."""
        if op.namespace:
            self.ensure_namespace(op.namespace)
        for i in range(op.count):
            if op.per_second and self.stop.wait(1.0 / op.per_second):
                return
            obj = pc.load_object(op.template, {"Index": i, "Count": op.count})
            base = self.mapper.path(obj, op.namespace, op.template.name)
            item = f"{base}/{quote(str(obj['metadata']['name']))}"
            for target in ("/".join([item, *op.subresources]), f"{item}/status"):
                status, data = self.client.request(
                    "PUT", target, body=obj, params={"fieldValidation": "Strict"}
                )
                if status != 200:
                    raise KubeError.from_response(status, data)

    def create_resource_driver(self, op: pc.CreateResourceDriver) -> None:
        """createResourceDriver: publish the test driver's ResourceSlice for every node whose name
        matches the glob, one after the other, as scheduler_perf's createResourceDriverOp.

        Upstream then waits until the scheduler's own DRA manager lists every slice; from outside
        the scheduler's process the bench cannot see its informer, so the op ends once the API server
        has them all (each create has returned). The measured pods come after the init pods, which
        need the slices, so a scheduler is never measured before it has seen them."""
        nodes = self.client.get_json("/api/v1/nodes")["items"]
        names = [n["metadata"]["name"] for n in nodes if fnmatch.fnmatchcase(n["metadata"]["name"], op.nodes)]
        print(
            f"  creating resource driver {op.driver_name!r} for {len(names)} nodes matching {op.nodes!r}",
            file=sys.stderr,
        )
        for name in names:
            self.post(
                "/apis/resource.k8s.io/v1/resourceslices",
                driver_slice(op.driver_name, name, op.max_claims_per_node),
            )

    def close(self) -> None:
        """Stop the background work, an open collector and the pod tracker."""
        self.stop.set()
        if self.measuring is not None:
            self.measuring.collector.stop()
        for thread in self.background:
            thread.join(timeout=10)
        self.tracker.stop()


# ---- one scheduler, one fresh cluster ----------------------------------------------------------------


@dataclass
class RunResult:
    """A scheduler's run of the workload."""

    scheduler: str
    repeat: int
    windows: list[Window] = field(default_factory=list)
    peak_rss_mib: float = 0.0
    wall_seconds: float = 0.0
    watch_restarts: int = 0
    event_settle_seconds: float = 0.0
    """How long after the workload the scheduler still wrote Scheduled Events (see :func:`settle_events`)."""
    error: str = ""


@dataclass
class Plan:
    """What a run needs: the workload, its ops, gates and how both schedulers are started."""

    name: str
    case: pc.TestCase
    workload: pc.Workload
    ops: list[pc.Op]
    gates: dict[str, bool]
    emulated_version: str | None
    verbosity: int
    profile_dir: Path | None = None
    """Where py-spy's flame graphs of ``berth run`` go (None: not profiled)."""
    apiserver_profile_dir: Path | None = None
    """Where kube-apiserver's CPU profiles of each measured window go (None: not profiled)."""
    apiserver_profile_seconds: int = 3
    stall_seconds: float | None = None
    """``--stall-timeout``: fail a run whose wait sees no pod done for this long."""

    def gate_flag(self) -> str:
        """The gates as a ``--feature-gates`` value."""
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self.gates.items()))

    def apiserver_args(self) -> list[str]:
        """kube-apiserver's extra flags: Priority admission off, the gates, the emulated version, and
        the profiling handlers when they are to be profiled."""
        # Appended to the control plane's own --disable-admission-plugins list (a string-slice flag).
        args = ["--disable-admission-plugins=Priority"]
        if self.apiserver_profile_dir is not None:
            args.append("--profiling=true")  # after the control plane's --profiling=false: the last wins
        if self.gates:
            args.append(f"--feature-gates={self.gate_flag()}")
        if self.emulated_version:
            args.append(f"--emulated-version={self.emulated_version}")
        if self.emulated_version and self.dra:
            # Serving APIs newer than the emulated version, as kube-apiserver's test server (which
            # scheduler_perf starts) allows whenever it emulates: resource.k8s.io/v1 is from 1.34.
            args.append("--runtime-config-emulation-forward-compatible=true")
        if self.dra:  # the resource.k8s.io versions scheduler_perf's mustSetupCluster turns on
            versions = ("v1", "v1beta2", "v1beta1", "v1alpha3")
            args.append("--runtime-config=" + ",".join(f"resource.k8s.io/{v}=true" for v in versions))
        return args

    @property
    def dra(self) -> bool:
        """Whether the workload turns DynamicResourceAllocation on: scheduler_perf then serves the
        resource.k8s.io versions and runs the resourceclaim controller (claims from templates)."""
        return bool(self.gates.get("DynamicResourceAllocation"))


PY_SPY = Path(sys.executable).with_name("py-spy")


def start_profiler(plan: Plan, pid: int, repeat: int) -> subprocess.Popen[bytes] | None:
    """py-spy recording ``berth run`` into ``plan.profile_dir`` as a speedscope file, or None when
    not asked for. Only the thread holding the GIL is sampled (``--gil``): where berth's one core of
    Python goes, without the threads waiting on sockets."""
    if plan.profile_dir is None:
        return None
    if not PY_SPY.exists():
        raise BenchError(f"--profile needs py-spy next to {sys.executable} (uv add --dev py-spy)")
    target = plan.profile_dir / f"{plan.name.replace('/', '_')}-berth-{repeat}.speedscope.json"
    return subprocess.Popen(
        [
            *(str(PY_SPY), "record", "--pid", str(pid), "--rate", "100", "--nonblocking", "--gil"),
            *("--format", "speedscope", "--output", str(target)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_profiler(profiler: subprocess.Popen[bytes] | None) -> None:
    """Stop py-spy with SIGINT so that it writes its file."""
    if profiler is None:
        return
    profiler.send_signal(signal.SIGINT)
    try:
        profiler.wait(timeout=60)
    except subprocess.TimeoutExpired:
        profiler.kill()


def start_scheduler(kind: str, plan: Plan, cp: LocalControlPlane, workdir: Path) -> Process:
    """kube-scheduler or ``berth run``, alone on ``cp``, with the workload's gates; ready."""
    if kind == KUBE:
        extra = [f"--feature-gates={plan.gate_flag()}"] if plan.gates else []
        if plan.emulated_version:
            extra.append(f"--emulated-version={plan.emulated_version}")
        config = scheduler_config(cp.kubeconfig, [], qps=QPS, burst=QPS)
        return KubeScheduler(cp.bin_dir, cp.kubeconfig, workdir, config, "kube-scheduler").start(
            verbosity=plan.verbosity, extra_args=extra
        )
    berth = BerthScheduler(
        workdir,
        cp.kubeconfig,
        name="berth-run",
        namespace="kube-system",
        lease_name="berth-bench",
        leader_elect=False,
        qps=QPS,
        burst=QPS,
        verbosity=plan.verbosity,
        scheduler_name="default-scheduler",
        extra_args=(
            *(("--feature-gates", plan.gate_flag()) if plan.gates else ()),
            *((f"--emulated-version={plan.emulated_version}",) if plan.emulated_version else ()),
        ),
    )
    berth.start()
    deadline = time.monotonic() + 120
    while berth.get("/readyz")[0] != 200:  # informers synced
        if time.monotonic() > deadline or not berth.alive:
            raise StackError(f"berth run not ready after 120s; see {berth.log}")
        time.sleep(0.2)
    return berth


EVENT_SETTLE_QUIET = 5.0
"""Seconds without a new ``Scheduled`` Event after which the scheduler is taken to have written them all."""
EVENT_SETTLE_MAX = 120.0
"""The longest the bench waits for queued Events after the workload."""


def count_scheduled_events(client: KubeClient, namespaces: Iterable[str]) -> int:
    """``Scheduled`` Events (events.k8s.io/v1, where both schedulers write) in ``namespaces``."""
    total = 0
    for namespace in namespaces:
        events = client.get_json(f"/apis/events.k8s.io/v1/namespaces/{quote(namespace)}/events")["items"]
        total += sum(1 for e in events if e.get("reason") == "Scheduled")
    return total


def settle_events(client: KubeClient, windows: list[Window]) -> float:
    """Wait until the windows' namespaces hold a ``Scheduled`` Event per measured pod, or none has
    been added for :data:`EVENT_SETTLE_QUIET` seconds (or :data:`EVENT_SETTLE_MAX` passed); then set
    each window's ``scheduled_events_per_pod``. Returns the seconds waited."""
    started = time.monotonic()
    want = sum(w.measured_pods for w in windows)
    last, last_change = -1, started
    while True:
        counts = [count_scheduled_events(client, w.namespaces) for w in windows]
        now = time.monotonic()
        if sum(counts) != last:
            last, last_change = sum(counts), now
        if last >= want or now - last_change >= EVENT_SETTLE_QUIET or now - started >= EVENT_SETTLE_MAX:
            break
        time.sleep(1.0)
    for window, count in zip(windows, counts, strict=True):
        window.scheduled_events_per_pod = count / max(window.measured_pods, 1)
    return time.monotonic() - started


def run_once(kind: str, plan: Plan, repeat: int, logs: Path | None) -> RunResult:
    """``plan`` against one scheduler on a fresh control plane."""
    result = RunResult(kind, repeat)
    workdir = Path(tempfile.mkdtemp(prefix="berth-scheduler-perf-"))
    cp = LocalControlPlane(default_bin_dir(), ready_timeout=120.0, extra_apiserver_args=plan.apiserver_args())
    started = time.monotonic()
    proc: Process | None = None
    run: Run | None = None
    profiler: subprocess.Popen[bytes] | None = None
    try:
        print(f"[{kind} #{repeat}] starting a fresh control plane", file=sys.stderr)
        cp.start()
        if plan.dra:
            # As scheduler_perf's in-process controller: 5 workers, the test client's 5000 QPS (the
            # default 20 QPS would cap every DRA workload at ~10 pods/s: two writes per pod).
            cp.start_controller_manager(
                ["resourceclaim-controller"],
                ready_timeout=120.0,
                extra_args=[
                    f"--kube-api-qps={QPS}",
                    f"--kube-api-burst={QPS}",
                    "--concurrent-resourceclaim-syncs=5",
                ],
            )
        client = KubeClient.from_config(
            str(cp.kubeconfig), qps=QPS, burst=QPS, user_agent="scheduler-perf-bench"
        )
        limiter = CountingLimiter(client.limiter)
        client.limiter = limiter  # type: ignore[assignment]
        print(f"[{kind} #{repeat}] starting {kind}", file=sys.stderr)
        proc = start_scheduler(kind, plan, cp, workdir)
        assert proc.popen is not None
        if kind == BERTH:
            profiler = start_profiler(plan, proc.popen.pid, repeat)
        served_by = cp.process_ids()
        run = Run(client, limiter, proc.popen.pid, [served_by[n] for n in ("etcd", "kube-apiserver")])
        run.tracker.stall_seconds = plan.stall_seconds
        if plan.apiserver_profile_dir is not None:
            prefix = plan.apiserver_profile_dir / f"{plan.name.replace('/', '_')}-{kind.split()[0]}-{repeat}"
            run.apiserver_profile = (prefix, plan.apiserver_profile_seconds)
        run.run(plan.ops)
        stop_profiler(profiler)
        profiler = None
        result.peak_rss_mib = peak_rss_mib(proc)
        result.event_settle_seconds = settle_events(client, run.windows)
        result.windows = run.windows
        result.watch_restarts = run.tracker.restarts
        if proc.popen.poll() is not None:
            raise BenchError(
                f"{kind} exited with {proc.popen.returncode} during the workload; see {proc.log}"
            )
    except (BenchError, ControlPlaneError, StackError, KubeError, pc.ConfigError) as err:
        result.error = str(err)
        print(f"[{kind} #{repeat}] FAILED: {err}", file=sys.stderr)
    finally:
        result.wall_seconds = time.monotonic() - started
        stop_profiler(profiler)
        if run is not None:
            run.close()
        if proc is not None:
            proc.stop()
        cp.stop()
        if logs is not None:
            target = logs / f"{kind.replace(' ', '-')}-{repeat}"
            shutil.copytree(workdir, target, dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)
    return result


# ---- what can run ------------------------------------------------------------------------------------


def berth_problems(
    plan_gates: dict[str, bool], emulated_version: str | None, required: Mapping[str, str]
) -> list[str]:
    """Why ``berth run`` cannot run a workload (empty: it can)."""
    problems = []
    gates = FeatureGates()
    if emulated_version:
        gates.set_emulation(int(emulated_version.split(".")[1]))
    try:
        gates.set(",".join(f"{k}={str(v).lower()}" for k, v in plan_gates.items()))
    except FeatureGateError as err:
        problems.append(f"berth refuses its feature gates: {err}")
    else:
        unsupported = gates.unsupported()
        if unsupported:
            problems.append(
                f"runs at --emulated-version={emulated_version} (scheduler_perf emulates it when "
                "SchedulerQueueingHints is off), where berth refuses gates whose behaviour it does not "
                f"have: {', '.join(unsupported)}"
            )
    registry = in_tree_registry()
    for plugin, why in sorted(required.items()):
        if not registry.has(plugin):
            problems.append(f"needs the {plugin} plugin ({why}), which berth does not have yet")
    return problems


@dataclass
class Support:
    """Who can run a workload."""

    harness: list[str]
    berth: list[str]

    def runs(self, kind: str) -> bool:
        """Whether ``kind`` can run the workload."""
        return not self.harness and (kind == KUBE or not self.berth)

    def describe(self) -> str:
        """One line for ``--list`` and refusals."""
        if self.harness:
            return "cannot run: " + "; ".join(self.harness)
        if self.berth:
            return "kube-scheduler only: " + "; ".join(self.berth)
        return "both"


def support_of(case: pc.TestCase, workload: pc.Workload, ops: list[pc.Op]) -> Support:
    """Who can run ``workload``: the bench's own limits, and berth's."""
    gates, emulated = pc.feature_gates(case, workload)
    return Support(
        pc.harness_problems(case, ops), berth_problems(gates, emulated, pc.required_plugins(case, ops))
    )


def list_workloads(cases: list[pc.TestCase], labels: list[str], match: str) -> int:
    """``--list``: every workload (filtered by labels and name) with its params, gates and who can run it."""
    counts = {"both": 0, "kube-scheduler only": 0, "cannot run": 0}
    for case in cases:
        for workload in case.workloads:
            name = pc.full_name(case, workload)
            all_labels = case.labels + workload.labels
            if match.lower() not in name.lower() or not all(label in all_labels for label in labels):
                continue
            try:
                ops = pc.expand(case, workload)
                status = support_of(case, workload, ops).describe()
            except pc.ConfigError as err:
                status = f"cannot run: {err}"
            counts[status.split(":")[0]] += 1
            gates, emulated = pc.feature_gates(case, workload)
            params = " ".join(f"{k}={v}" for k, v in workload.params.items())
            extra = f" emulated-version={emulated}" if emulated else ""
            print(f"{name}\n    suite={case.suite} labels=[{','.join(all_labels)}] {params}{extra}")
            print(f"    gates: {', '.join(f'{k}={v}' for k, v in sorted(gates.items())) or '-'}")
            print(f"    runs: {status}")
    print(f"\n{sum(counts.values())} workloads: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return 0


# ---- report ------------------------------------------------------------------------------------------


def _throughput(bucket: str) -> Callable[[RunResult, Window], float | None]:
    return lambda r, w: w.throughput.get(bucket)


COLUMNS: list[tuple[str, Callable[[RunResult, Window], float | None]]] = [
    ("throughput avg pods/s", _throughput("Average")),
    ("p50", _throughput("Perc50")),
    ("p90", _throughput("Perc90")),
    ("p95", _throughput("Perc95")),
    ("p99", _throughput("Perc99")),
    ("CPU ms/pod", lambda r, w: w.cpu_ms_per_pod),
    ("API server + etcd CPU ms/pod", lambda r, w: w.control_plane_cpu_ms_per_pod),
    ("peak RSS MiB", lambda r, w: r.peak_rss_mib),
    ("API requests/pod", lambda r, w: w.api_requests_per_pod),
    ("Events/pod", lambda r, w: w.events_per_pod),
    ("Scheduled Events/pod at the end", lambda r, w: w.scheduled_events_per_pod),
]
"""Table columns: name, and its value for a run's window (None: no throughput sample was taken)."""


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _median(
    runs: list[RunResult], i: int, value: Callable[[RunResult, Window], float | None]
) -> float | None:
    """The median of ``value`` over the runs' window ``i`` (None when no run has it)."""
    values = [v for r in runs if i < len(r.windows) and (v := value(r, r.windows[i])) is not None]
    return statistics.median(values) if values else None


def side_by_side(kube: list[RunResult], berth: list[RunResult], i: int) -> dict[str, float | None]:
    """Print window ``i`` as one row per column: kube-scheduler's median, berth's, and berth/kube;
    return the ratios (None where either has no value)."""
    print("\n| | kube-scheduler | berth run | berth / kube |")
    print("|---|---|---|---|")
    ratios: dict[str, float | None] = {}
    for name, value in COLUMNS:
        k, b = _median(kube, i, value), _median(berth, i, value)
        ratios[name] = b / k if k and b is not None else None
        print(f"| {name} | {_cell(k)} | {_cell(b)} | {_cell(ratios[name])} |")
    return ratios


def print_report(plan: Plan, results: list[RunResult]) -> dict[str, dict[str, float | None]]:
    """The side-by-side table and the berth/kube ratios (medians over repeats, per window)."""
    print(f"\n{plan.name} (params: {plan.workload.params}); gates: {plan.gate_flag() or '-'}", end="")
    print(f"; emulated version {plan.emulated_version}" if plan.emulated_version else "")
    print(f"caveat: {CAVEAT}\n")
    header = ["scheduler", "#", "window", "measured pods", "seconds"] + [c[0] for c in COLUMNS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in results:
        if r.error:
            print(f"| {r.scheduler} | {r.repeat} | FAILED: {r.error} |")
        for w in r.windows:
            cells = [r.scheduler, str(r.repeat), w.name, str(w.measured_pods), f"{w.seconds:.1f}"]
            cells += [_cell(value(r, w)) for _, value in COLUMNS]
            print("| " + " | ".join(cells) + " |")
    ratios: dict[str, dict[str, float | None]] = {}
    kube = [r for r in results if r.scheduler == KUBE and not r.error]
    berth = [r for r in results if r.scheduler == BERTH and not r.error]
    if kube and berth:
        for i, w in enumerate(kube[0].windows):
            print(
                f"\nSide by side, {w.name} (medians over the runs; throughput: a ratio above 1 is berth faster;"
            )
            print("the other rows: below 1 is berth cheaper):")
            ratios[w.name] = side_by_side(kube, berth, i)
    for r in results:
        for w in r.windows:
            samples = " ".join(f"{s:.0f}" for s in w.samples)
            if not samples:
                samples = (
                    "none: the window was too short for a sample (as upstream warns: more pods or nodes)"
                )
            print(f"\n{r.scheduler} #{r.repeat} {w.name}: one-second samples (pods/s): {samples}")
            print(
                f"  In no sample: {w.pods_before_samples} pods scheduled by the first (skipped) tick, "
                f"{w.pods_after_samples} after the last sample; the first to the last pod scheduled: "
                f"{w.scheduling_span:.2f}s"
            )
            if w.latency_ms:
                print(
                    "  Created to scheduled, as the bench saw them (ms): "
                    + ", ".join(f"{k} {v:.0f}" for k, v in w.latency_ms.items())
                    + "; at each tick, created/scheduled: "
                    + " ".join(f"{c}/{s}" for c, s in w.ticks)
                )
            print(
                f"  Scheduled Events: {w.scheduled_events_per_pod:.2f} per measured pod, waited for "
                f"{r.event_settle_seconds:.0f}s after the workload (until one per pod, or {EVENT_SETTLE_QUIET:.0f}s "
                "without a new one)"
            )
            top = sorted(w.api_requests.items(), key=lambda kv: -kv[1])[:8]
            print(
                f"  API requests in the window ({w.bench_requests} of them the bench's): "
                + ", ".join(f"{k} {v:.0f}" for k, v in top)
            )
    return ratios


def parse_overrides(values: list[str], workload: pc.Workload) -> dict[str, Any]:
    """The workload's params with ``--set NAME=VALUE`` applied (NAME must be one of them)."""
    params = dict(workload.params)
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or key not in params:
            raise pc.ConfigError(f"--set {item}: expected NAME=VALUE with NAME one of {', '.join(params)}")
        try:
            params[key] = int(raw)
        except ValueError:
            params[key] = raw
    return params


def main() -> int:
    """The command line (see the module docstring); exit 0, 1 when a run failed, 2 on bad input."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("workload", nargs="?", help="TestCase/Workload, e.g. SchedulingBasic/500Nodes")
    parser.add_argument(
        "--list", action="store_true", help="list the upstream workloads and who can run them"
    )
    parser.add_argument(
        "--label", action="append", default=[], help="with --list: only workloads with this label"
    )
    parser.add_argument("--match", default="", help="with --list: only names containing this")
    parser.add_argument("--scheduler", choices=sorted(SCHEDULER_CHOICES), default="both")
    parser.add_argument(
        "--set", action="append", default=[], metavar="PARAM=VALUE", help="override a workload param"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per scheduler, alternating which goes first"
    )
    parser.add_argument(
        "--verbosity", type=int, default=2, help="-v of both schedulers (scheduler_perf's default: 2)"
    )
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the results as JSON")
    parser.add_argument("--keep-logs", metavar="DIR", type=Path, help="copy each run's scheduler logs here")
    parser.add_argument(
        "--profile", metavar="DIR", type=Path, help="record berth run with py-spy (speedscope) into DIR"
    )
    parser.add_argument(
        "--apiserver-profile",
        metavar="DIR",
        type=Path,
        help="write kube-apiserver's CPU profile (pprof) of each measured window's first seconds into DIR",
    )
    parser.add_argument(
        "--apiserver-profile-seconds", type=int, default=3, help="with --apiserver-profile: how many"
    )
    parser.add_argument(
        "--stall-timeout",
        metavar="SECONDS",
        type=float,
        help="fail a run as soon as a wait sees no more pods scheduled for this long (upstream: none, "
        "only its 10-minute limit); for a scheduler that stalls, as kube-scheduler on PreemptionBasic",
    )
    args = parser.parse_args()
    try:
        cases = pc.load_test_cases()
        if args.list:
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--list | head` ends quietly
            return list_workloads(cases, args.label, args.match)
        if not args.workload:
            parser.error("name a workload (TestCase/Workload) or use --list")
        case, workload = pc.find_workload(cases, args.workload)
        workload = pc.Workload(
            workload.name,
            parse_overrides(args.set, workload),
            workload.labels,
            workload.feature_gates,
            workload.threshold,
        )
        ops = pc.expand(case, workload)
    except pc.ConfigError as err:
        print(f"scheduler_perf.py: {err}", file=sys.stderr)
        return 2
    gates, emulated = pc.feature_gates(case, workload)
    plan = Plan(
        args.workload,
        case,
        workload,
        ops,
        gates,
        emulated,
        args.verbosity,
        args.profile,
        args.apiserver_profile,
        args.apiserver_profile_seconds,
        args.stall_timeout,
    )
    for flag, folder in (("--profile", args.profile), ("--apiserver-profile", args.apiserver_profile)):
        try:
            if folder:
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            print(
                f"scheduler_perf.py: {flag} {folder}: cannot create the folder: {err.strerror}",
                file=sys.stderr,
            )
            return 2
    support = support_of(case, workload, ops)
    kinds = [k for k in SCHEDULER_CHOICES[args.scheduler] if support.runs(k)]
    refused = {k: support.describe() for k in SCHEDULER_CHOICES[args.scheduler] if not support.runs(k)}
    for kind, why in refused.items():
        print(f"scheduler_perf.py: {kind} cannot run {args.workload}: {why}", file=sys.stderr)
    if not kinds:
        return 2
    if args.keep_logs:
        args.keep_logs.mkdir(parents=True, exist_ok=True)
    results = []
    load_before = os.getloadavg()
    for repeat in range(1, args.repeat + 1):
        for kind in kinds if repeat % 2 else kinds[::-1]:
            results.append(run_once(kind, plan, repeat, args.keep_logs))
    ratios = print_report(plan, results)
    if args.json:
        report = {
            "workload": args.workload,
            "suite": case.suite,
            "params": workload.params,
            "feature_gates": gates,
            "emulated_version": emulated,
            "qps": QPS,
            "caveat": CAVEAT,
            "machine": {
                "cpus": os.cpu_count(),
                "loadavg_before": load_before,
                "loadavg_after": os.getloadavg(),
            },
            "refused": refused,
            "runs": [asdict(r) for r in results],
            "ratios_berth_over_kube": ratios,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
