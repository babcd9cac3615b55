"""Scheduler metrics with kube-scheduler's names, labels and buckets (``pkg/scheduler/metrics``)."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """``prometheus.ExponentialBuckets``: ``count`` bucket bounds from ``start``, each ``factor`` times the last."""
    return [start * factor**i for i in range(count)]


SCHEDULE_ATTEMPTS = Counter(
    "scheduler_schedule_attempts",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.",
    ["result", "profile"],
)
SCHEDULING_ATTEMPT_DURATION = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15),
)
FRAMEWORK_EXTENSION_POINT_DURATION = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12),
)


class BulkHistogram:
    """A labelled histogram for observations made by the thousand: plain bucket counts behind one
    lock, exposed as a regular Prometheus histogram family (``_bucket``/``_sum``/``_count``).

    prometheus_client's ``Histogram.observe`` takes a lock and scans the buckets per observation
    (microseconds in CPython); plugin durations are observed per plugin *and node* in sampled
    cycles, as kube-scheduler does, which made them a tenth of a scheduling cycle's CPU. Here an
    observation is a bisect and two additions, and :meth:`observe_many` records a whole per-node
    batch under one lock.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self._bounds = list(buckets)
        self._les = [floatToGoString(b) for b in self._bounds] + ["+Inf"]
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def _get(self, labels: tuple[str, ...]) -> tuple[list[int], list[float]]:
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = ([0] * len(self._les), [0.0])
        return series

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        """Record one observation for the label values ``labels`` (in ``labelnames`` order)."""
        i = bisect_left(self._bounds, value)  # le: the first bound >= value
        with self._lock:
            counts, total = self._get(labels)
            counts[i] += 1
            total[0] += value

    def observe_many(self, labels: tuple[str, ...], values: Iterable[float]) -> None:
        """Record every value in ``values`` for ``labels``."""
        bounds = self._bounds
        with self._lock:
            counts, total = self._get(labels)
            acc = 0.0
            for v in values:
                counts[bisect_left(bounds, v)] += 1
                acc += v
            total[0] += acc

    def observe_repeated(self, labels: tuple[str, ...], value: float, times: int) -> None:
        """Record ``value`` ``times`` times for ``labels``."""
        i = bisect_left(self._bounds, value)
        with self._lock:
            counts, total = self._get(labels)
            counts[i] += times
            total[0] += value * times

    def sample_count(self, labels: tuple[str, ...]) -> int:
        """How many observations ``labels`` has (0 when none)."""
        with self._lock:
            series = self._series.get(labels)
            return sum(series[0]) if series is not None else 0

    def describe(self) -> list[Metric]:
        """The family without samples (what the registry checks names against)."""
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[Metric]:
        """Cumulative buckets per label set."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        with self._lock:
            snapshot = [(k, list(c), t[0]) for k, (c, t) in self._series.items()]
        for labels, counts, total in snapshot:
            cumulative, buckets = 0, []
            for le, count in zip(self._les, counts, strict=True):
                cumulative += count
                buckets.append((le, float(cumulative)))
            family.add_metric(list(labels), buckets, total)
        yield family


PLUGIN_EXECUTION_DURATION = BulkHistogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
)

PREEMPTION_ATTEMPTS = Counter(
    "scheduler_preemption_attempts",
    "Total preemption attempts in the cluster till now",
)
PREEMPTION_VICTIMS = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    buckets=exponential_buckets(1, 2, 7),
)

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"


def observe_attempt(result: str, profile: str, seconds: float) -> None:
    """Count one scheduling attempt and its duration."""
    SCHEDULE_ATTEMPTS.labels(result, profile).inc()
    SCHEDULING_ATTEMPT_DURATION.labels(result, profile).observe(seconds)


# prometheus_client's labels() costs microseconds per call: the labelled children of the
# extension-point histogram are looked up once and kept.
_point_children: dict[tuple[str, str, str], Any] = {}


def observe_plugin(plugin: str, extension_point: str, status: str, seconds: float) -> None:
    """Record one plugin call's duration (scheduler_plugin_execution_duration_seconds)."""
    PLUGIN_EXECUTION_DURATION.observe((plugin, extension_point, status), seconds)


def observe_plugin_many(plugin: str, extension_point: str, status: str, seconds: Iterable[float]) -> None:
    """Record many calls' durations of one plugin at one extension point (e.g. Score, per node)."""
    PLUGIN_EXECUTION_DURATION.observe_many((plugin, extension_point, status), seconds)


def observe_plugin_repeated(
    plugin: str, extension_point: str, status: str, seconds: float, times: int
) -> None:
    """Record ``times`` calls of one plugin that took ``seconds`` each (a bulk call's per-node mean)."""
    PLUGIN_EXECUTION_DURATION.observe_repeated((plugin, extension_point, status), seconds, times)


def observe_extension_point(extension_point: str, status: str, profile: str, seconds: float) -> None:
    """Record one extension point's duration (scheduler_framework_extension_point_duration_seconds)."""
    key = (extension_point, status, profile)
    child = _point_children.get(key)
    if child is None:
        child = _point_children[key] = FRAMEWORK_EXTENSION_POINT_DURATION.labels(
            extension_point, status, profile
        )
    child.observe(seconds)


# --- scheduling queue ---------------------------------------------------------------------------

PENDING_PODS = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
    "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler "
    "attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never "
    "attempted to schedule because they are gated.",
    ["queue"],
)
QUEUE_INCOMING_PODS = Counter(
    "scheduler_queue_incoming_pods",
    "Number of pods added to scheduling queues by event and queue type.",
    ["queue", "event"],
)
UNSCHEDULABLE_PODS = Gauge(
    "scheduler_unschedulable_pods",
    "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all "
    "plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin.",
    ["plugin", "profile"],
)
QUEUEING_HINT_EXECUTION_DURATION = Histogram(
    "scheduler_queueing_hint_execution_duration_seconds",
    "Duration for running a queueing hint function of a plugin.",
    ["plugin", "event", "hint"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
)

# Queue moves happen per pod per event, so their labelled children are cached as above.
_queue_children: dict[tuple[str, ...], Any] = {}


def _child(metric: Any, *labels: str) -> Any:
    key = (str(id(metric)), *labels)
    child = _queue_children.get(key)
    if child is None:
        child = _queue_children[key] = metric.labels(*labels)
    return child


def set_pending_pods(active: int, backoff: int, unschedulable: int, gated: int) -> None:
    """Set ``scheduler_pending_pods`` for each queue."""
    _child(PENDING_PODS, "active").set(active)
    _child(PENDING_PODS, "backoff").set(backoff)
    _child(PENDING_PODS, "unschedulable").set(unschedulable)
    _child(PENDING_PODS, "gated").set(gated)


def observe_queue_incoming(queue: str, event: str) -> None:
    """Count a pod entering ``queue`` ("active", "backoff", "unschedulable") on ``event``."""
    _child(QUEUE_INCOMING_PODS, queue, event).inc()


def add_unschedulable_pods(plugin: str, profile: str, delta: int) -> None:
    """Move ``scheduler_unschedulable_pods{plugin, profile}`` by ``delta``."""
    _child(UNSCHEDULABLE_PODS, plugin, profile).inc(delta)


def observe_queueing_hint(plugin: str, event: str, hint: str, seconds: float) -> None:
    """Record one queueing hint call (hint "Queue", "QueueSkip" or "Error")."""
    _child(QUEUEING_HINT_EXECUTION_DURATION, plugin, event, hint).observe(seconds)
