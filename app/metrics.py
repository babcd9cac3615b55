"""Scheduler metrics with kube-scheduler's names, labels and buckets (``pkg/scheduler/metrics``)."""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """``prometheus.ExponentialBuckets``: ``count`` bucket bounds from ``start``, each ``factor`` times the last.

    Multiplied step by step as Go does, so that the bounds are the same doubles and print the same
    ``le`` (``2.2500000000000005e-05`` for 1e-05 x 1.5, where ``1e-05 * 1.5**1`` would give 2.25e-05)."""
    bounds = []
    for _ in range(count):
        bounds.append(start)
        start *= factor
    return bounds


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

    def series(self, labels: tuple[str, ...]) -> tuple[list[int], list[float]]:
        """The series of ``labels``, for :meth:`observe_series` (callers keep it: no lookup per call)."""
        with self._lock:
            return self._get(labels)

    def observe_series(self, series: tuple[list[int], list[float]], value: float) -> None:
        """Record one observation in a series from :meth:`series`."""
        i = bisect_left(self._bounds, value)
        with self._lock:
            series[0][i] += 1
            series[1][0] += value

    def observe_series_repeated(
        self, series: tuple[list[int], list[float]], value: float, times: int
    ) -> None:
        """Record ``value`` ``times`` times in a series from :meth:`series`."""
        i = bisect_left(self._bounds, value)
        with self._lock:
            series[0][i] += times
            series[1][0] += value * times

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


SCHEDULING_ALGORITHM_DURATION = BulkHistogram(
    "scheduler_scheduling_algorithm_duration_seconds",
    "Scheduling algorithm latency in seconds",
    [],
    buckets=exponential_buckets(0.001, 2, 15),
)
FRAMEWORK_EXTENSION_POINT_DURATION = BulkHistogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12),
)


class BulkCounter:
    """A labelled counter incremented by the thousand (plugin evaluations per node): a dict of
    floats behind one lock, exposed as a regular counter family (a gauge with ``gauge=True``, whose
    amounts may then be negative)."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], *, gauge: bool = False
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self._family = GaugeMetricFamily if gauge else CounterMetricFamily
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()
        REGISTRY.register(self)

    def add(self, labels: tuple[str, ...], amount: float = 1.0) -> None:
        """Add ``amount`` to the series ``labels``."""
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def value(self, labels: tuple[str, ...]) -> float:
        """The series' value (0 when it has none)."""
        with self._lock:
            return self._values.get(labels, 0.0)

    def describe(self) -> list[Metric]:
        """The family without samples."""
        return [self._family(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[Metric]:
        """Every series."""
        family = self._family(self.name, self.documentation, labels=self.labelnames)
        with self._lock:
            snapshot = list(self._values.items())
        for labels, value in snapshot:
            family.add_metric(list(labels), value)
        yield family


class PluginEvaluations:
    """``scheduler_plugin_evaluation_total``: one plain ``{plugin: count}`` table per profile and
    extension point, which a framework fetches once and increments in place (a dict update per
    plugin and cycle). No lock: each framework's cycles run on one thread at a time (berth's engine
    is not thread-safe), and a scrape copies each table in one C call under the GIL."""

    name = "scheduler_plugin_evaluation"
    documentation = (
        "Number of attempts to schedule pods by each plugin and the extension point (available only in "
        "PreFilter, Filter, PreScore, and Score)."
    )

    def __init__(self) -> None:
        self._tables: dict[tuple[str, str], dict[str, float]] = {}
        REGISTRY.register(self)

    def table(self, profile: str, extension_point: str) -> dict[str, float]:
        """The counts of ``profile`` at ``extension_point``, by plugin (to increment in place)."""
        return self._tables.setdefault((profile, extension_point), {})

    def value(self, plugin: str, extension_point: str, profile: str) -> float:
        """One series' value (0 when it has none)."""
        return self._tables.get((profile, extension_point), {}).get(plugin, 0.0)

    def describe(self) -> list[Metric]:
        """The family without samples."""
        return [
            CounterMetricFamily(
                self.name, self.documentation, labels=["plugin", "extension_point", "profile"]
            )
        ]

    def collect(self) -> Iterator[Metric]:
        """Every series."""
        family = CounterMetricFamily(
            self.name, self.documentation, labels=["plugin", "extension_point", "profile"]
        )
        for (profile, point), table in list(self._tables.items()):
            for plugin, count in dict(table).items():
                family.add_metric([plugin, point, profile], count)
        yield family


PLUGIN_EVALUATION_TOTAL = PluginEvaluations()


def count_evaluations(table: dict[str, float], plugins: Iterable[str], times: float) -> None:
    """Each of ``plugins`` ran ``times`` times (``table`` from :meth:`PluginEvaluations.table`)."""
    for name in plugins:
        table[name] = table.get(name, 0.0) + times


PLUGIN_EXECUTION_DURATION = BulkHistogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
)

RESOURCE_CLAIM_CREATES = Counter(
    "scheduler_resourceclaim_creates",
    "Number of ResourceClaims creation requests within scheduler",
    ["status"],
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
    FRAMEWORK_EXTENSION_POINT_DURATION.observe((extension_point, status, profile), seconds)


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
# Observed per pod and cluster event (hundreds of pods asked about each claim event while a claim
# controller catches up): the plain bucket counts of BulkHistogram, not prometheus_client's lock
# and bucket scan per observation.
QUEUEING_HINT_EXECUTION_DURATION = BulkHistogram(
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


_PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")
_pending_set: list[int | None] = [None] * len(_PENDING_QUEUES)  # what each child was last set to
_pending_lock = threading.Lock()


def set_pending_pods(active: int, backoff: int, unschedulable: int, gated: int) -> None:
    """Set ``scheduler_pending_pods`` for each queue. The queue calls this after every operation and
    usually one count moved: only the children whose value changed are set (they alone are set
    here, so the others already hold their value)."""
    with _pending_lock:
        for i, value in enumerate((active, backoff, unschedulable, gated)):
            if _pending_set[i] != value:
                _pending_set[i] = value
                _child(PENDING_PODS, _PENDING_QUEUES[i]).set(value)


def observe_queue_incoming(queue: str, event: str) -> None:
    """Count a pod entering ``queue`` ("active", "backoff", "unschedulable") on ``event``."""
    _child(QUEUE_INCOMING_PODS, queue, event).inc()


def add_unschedulable_pods(plugin: str, profile: str, delta: int) -> None:
    """Move ``scheduler_unschedulable_pods{plugin, profile}`` by ``delta``."""
    _child(UNSCHEDULABLE_PODS, plugin, profile).inc(delta)


def observe_queueing_hint(plugin: str, event: str, hint: str, seconds: float) -> None:
    """Record one queueing hint call (hint "Queue", "QueueSkip" or "Error")."""
    QUEUEING_HINT_EXECUTION_DURATION.observe((plugin, event, hint), seconds)


def observe_queueing_hints(durations: Mapping[tuple[str, str, str], Iterable[float]]) -> None:
    """Record many queueing hint calls: their durations by (plugin, event, hint), one lock each."""
    for labels, seconds in durations.items():
        QUEUEING_HINT_EXECUTION_DURATION.observe_many(labels, seconds)


# --- the rest of kube-scheduler's families ----------------------------------------------------

# Observed for every informer event (two or more per pod): a BulkHistogram's observation costs a
# third of prometheus_client's Histogram.observe.
EVENT_HANDLING_DURATION = BulkHistogram(
    "scheduler_event_handling_duration_seconds",
    "Event handling latency in seconds.",
    ["event"],
    buckets=exponential_buckets(0.0001, 2, 12),
)
INFLIGHT_EVENTS = BulkCounter(
    "scheduler_inflight_events",
    "Number of events currently tracked in the scheduling queue.",
    ["event"],
    gauge=True,
)
POD_POPPED_IN_FLIGHT_EVENT = "PodPopped"
GOROUTINES = Gauge(
    "scheduler_goroutines",
    "Number of running goroutines split by the work they do such as binding.",
    ["operation"],
)
PERMIT_WAIT_DURATION = Histogram(
    "scheduler_permit_wait_duration_seconds",
    "Duration of waiting on permit.",
    ["result"],
    buckets=exponential_buckets(0.001, 2, 15),
)


class CacheSizeCollector:
    """``scheduler_cache_size{type}``: the scheduler cache's nodes, pods and assumed pods, read from
    the cache at each scrape (kube copies them into a gauge every second)."""

    name = "scheduler_cache_size"
    documentation = "Number of nodes, pods, and assumed (bound) pods in the scheduler cache."

    def __init__(self) -> None:
        self.sizes: Callable[[], tuple[int, int, int]] | None = None
        REGISTRY.register(self)

    def describe(self) -> list[Metric]:
        """The family without samples."""
        return [GaugeMetricFamily(self.name, self.documentation, labels=["type"])]

    def collect(self) -> Iterator[Metric]:
        """The cache's current sizes (no series before a cache is tracked)."""
        family = GaugeMetricFamily(self.name, self.documentation, labels=["type"])
        if self.sizes is not None:
            nodes, pods, assumed = self.sizes()
            family.add_metric(["assumed_pods"], assumed)
            family.add_metric(["pods"], pods)
            family.add_metric(["nodes"], nodes)
        yield family


CACHE_SIZE = CacheSizeCollector()
POD_SCHEDULED_AFTER_FLUSH = Counter(
    "scheduler_pod_scheduled_after_flush",
    "Number of pods that were successfully scheduled after being flushed from unschedulablePods due to timeout. "
    "This metric helps detect potential queueing hint misconfigurations or event handling issues.",
)
PREEMPTION_GOROUTINES_DURATION = Histogram(
    "scheduler_preemption_goroutines_duration_seconds",
    "Duration in seconds for running goroutines for the preemption.",
    ["result"],
    buckets=exponential_buckets(0.01, 2, 20),
)
PREEMPTION_GOROUTINES_EXECUTION = Counter(
    "scheduler_preemption_goroutines_execution",
    "Number of preemption goroutines executed.",
    ["result"],
)
ASYNC_API_CALL_EXECUTION = Counter(
    "scheduler_async_api_call_execution",
    "Total number of API calls executed by the async dispatcher.",
    ["call_type", "result"],
)
ASYNC_API_CALL_DURATION = Histogram(
    "scheduler_async_api_call_execution_duration_seconds",
    "Duration in seconds for executing API call in the async dispatcher.",
    ["call_type", "result"],
    buckets=exponential_buckets(0.001, 2, 15),
)
PENDING_ASYNC_API_CALLS = Gauge(
    "scheduler_pending_async_api_calls",
    "Number of API calls currently pending in the async queue.",
    ["call_type"],
)
BINDING = "binding"
PRIORITIZING_EXTENDER = "prioritizing_extender"
PRIORITIZING_EXTENDER = "prioritizing_extender"


def observe_event_handling(event: str, seconds: float) -> None:
    """One informer event handled (``scheduler_event_handling_duration_seconds``)."""
    EVENT_HANDLING_DURATION.observe((event,), seconds)


def observe_async_call(call_type: str, result: str, seconds: float) -> None:
    """One API call of berth's asynchronous writers finished (``call_type`` as kube's dispatcher:
    ``pod_binding``, ``pod_status_patch``, ...)."""
    _child(ASYNC_API_CALL_EXECUTION, call_type, result).inc()
    _child(ASYNC_API_CALL_DURATION, call_type, result).observe(seconds)


# --- client-go's rest_client_* (berth's own API calls) --------------------------------------------

REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "host", "method"],
)
REST_CLIENT_REQUEST_DURATION = BulkHistogram(
    "rest_client_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, and host.",
    ["host", "verb"],
    buckets=[0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0],
)
REST_CLIENT_RATE_LIMITER_DURATION = BulkHistogram(
    "rest_client_rate_limiter_duration_seconds",
    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
    ["host", "verb"],
    buckets=[0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0],
)
_SIZE_BUCKETS = [
    64.0,
    256.0,
    512.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262144.0,
    1048576.0,
    4194304.0,
    16777216.0,
]
REST_CLIENT_REQUEST_SIZE = BulkHistogram(
    "rest_client_request_size_bytes",
    "Request size in bytes. Broken down by verb and host.",
    ["host", "verb"],
    buckets=_SIZE_BUCKETS,
)
REST_CLIENT_RESPONSE_SIZE = BulkHistogram(
    "rest_client_response_size_bytes",
    "Response size in bytes. Broken down by verb and host.",
    ["host", "verb"],
    buckets=_SIZE_BUCKETS,
)


# Two requests per scheduled pod (the Binding, the Event): the four histograms are BulkHistograms
# (prometheus_client's observe scanned the buckets under a lock, 4.7 us a request for the five
# families) and each (host, verb)'s series are looked up once.
_REST_HISTOGRAMS = (
    REST_CLIENT_REQUEST_DURATION,
    REST_CLIENT_RATE_LIMITER_DURATION,
    REST_CLIENT_REQUEST_SIZE,
    REST_CLIENT_RESPONSE_SIZE,
)
_rest_series: dict[tuple[str, str], tuple[tuple[list[int], list[float]], ...]] = {}


def observe_rest_call(
    host: str, method: str, code: int, seconds: float, waited: float, sent: int, received: int
) -> None:
    """One request of berth's API client (``code`` 0: no answer, kube's ``<error>``)."""
    verb = method.upper()
    _child(REST_CLIENT_REQUESTS, str(code) if code else "<error>", host, verb).inc()
    series = _rest_series.get((host, verb))
    if series is None:
        series = _rest_series[host, verb] = tuple(h.series((host, verb)) for h in _REST_HISTOGRAMS)
    duration, limiter, request_size, response_size = series
    REST_CLIENT_REQUEST_DURATION.observe_series(duration, seconds)
    REST_CLIENT_RATE_LIMITER_DURATION.observe_series(limiter, waited)
    REST_CLIENT_REQUEST_SIZE.observe_series(request_size, sent)
    REST_CLIENT_RESPONSE_SIZE.observe_series(response_size, received)


# --- exposition: kube's text format and the metrics flags ----------------------------------------

# Stability of each family (component-base prefixes HELP with it); families not listed are ALPHA.
STABILITY: dict[str, str] = {
    "scheduler_schedule_attempts": "STABLE",
    "scheduler_scheduling_attempt_duration_seconds": "STABLE",
    "scheduler_preemption_victims": "STABLE",
    "scheduler_preemption_attempts": "STABLE",
    "scheduler_pending_pods": "STABLE",
    "scheduler_pod_scheduling_attempts": "STABLE",
    "scheduler_framework_extension_point_duration_seconds": "STABLE",
    "scheduler_queue_incoming_pods": "STABLE",
    "scheduler_goroutines": "BETA",
    "rest_client_requests": "ALPHA",
    "scheduler_pod_scheduling_sli_duration_seconds": "BETA",
    "scheduler_permit_wait_duration_seconds": "BETA",
    "scheduler_unschedulable_pods": "BETA",
    "scheduler_plugin_evaluation": "BETA",
}
# Families outside kube's stability framework print no marker (client-go's, component-base's own).
UNMARKED_PREFIXES = ("http_", "python_", "process_", "berth_")


def go_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)``, as Prometheus' Go client writes numbers and
    ``le`` labels: ``1`` (not ``1.0``), ``0.005``, ``1e-05``, ``1.6384e+06``, ``+Inf``."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    text = repr(float(value))
    mantissa, _, exp_text = text.partition("e")
    sign = "-" if mantissa.startswith("-") else ""
    mantissa = mantissa.lstrip("-")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # decimal exponent of the first significant digit
    if whole.strip("0"):
        exp = len(whole.lstrip("0")) - 1
    else:
        exp = -(len(frac) - len(frac.lstrip("0")) + 1)
    exp += int(exp_text or 0)
    digits = digits.rstrip("0") or "0"
    if exp < -4 or exp >= 6:  # the shortest form decides with precision 6
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= len(digits) - 1:
        return sign + digits + "0" * (exp - len(digits) + 1)
    if exp >= 0:
        return sign + digits[: exp + 1] + "." + digits[exp + 1 :]
    return sign + "0." + "0" * (-exp - 1) + digits


_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


class Exposition:
    """What ``--disabled-metrics`` and ``--allow-metric-labels`` ask of /metrics.

    A disabled family is left out. A label with an allow-list shows values outside it as
    ``unexpected``, the series that then share labels summed, as component-base's constrained
    label values do.
    """

    def __init__(self, disabled: frozenset[str], allow_list: dict[tuple[str, str], frozenset[str]]) -> None:
        self.disabled = disabled
        self.allow_list = allow_list

    @classmethod
    def of(cls, *, disabled: Iterable[str] = (), allow_list: dict[str, str] | None = None) -> Exposition:
        """From the flags' values (``"metric,label" -> "v1,v2"``); ValueError on a malformed key."""
        allowed: dict[tuple[str, str], frozenset[str]] = {}
        for key, values in (allow_list or {}).items():
            metric, sep, label = key.partition(",")
            if (
                not (_METRIC_NAME.fullmatch(metric.strip()) and _LABEL_NAME.fullmatch(label.strip()))
                or not sep
            ):
                raise ValueError(
                    f"metrics.allowListMapping: Invalid value: {key!r}: must have keys with format "
                    f'`metricName,labelName` where metricName matches "{_METRIC_NAME.pattern}" and labelName '
                    f'matches "{_LABEL_NAME.pattern}"'
                )
            allowed[(metric.strip(), label.strip())] = frozenset(
                v.strip() for v in values.split(",") if v.strip()
            )
        return cls(frozenset(d.strip() for d in disabled if d.strip()), allowed)


def load_allow_list_manifest(path: str) -> dict[str, str]:
    """``--allow-metric-labels-manifest``: a YAML file ``allowListMapping: {"metric,label": "v1,v2"}``."""
    import yaml

    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    mapping = data.get("allowListMapping") if isinstance(data, dict) else None
    if not isinstance(mapping, dict):
        raise ValueError("allowListMapping: expected a map of 'metric,label' to 'value,value'")
    return {str(k): str(v) for k, v in mapping.items()}


_exposition = Exposition(frozenset(), {})


def configure_exposition(exposition: Exposition) -> None:
    """Apply the metrics flags to every later /metrics answer of this process."""
    global _exposition
    _exposition = exposition


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _help(name: str, base: str, documentation: str) -> str:
    if name.startswith(UNMARKED_PREFIXES):
        text = documentation
    else:
        text = f"[{STABILITY.get(base, 'ALPHA')}] {documentation}"
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def render(registry: CollectorRegistry = REGISTRY, exposition: Exposition | None = None) -> bytes:
    """The registry in Prometheus text format 0.0.4 as kube components write it: Go number format,
    stability markers in HELP, no ``_created`` series, the metrics flags applied, families with no
    series left out (as Prometheus' Go client does)."""
    rules = exposition or _exposition
    out: list[str] = []
    for family in registry.collect():
        name = family.name
        type_ = family.type
        exposed = name + "_total" if type_ == "counter" and not name.endswith("_total") else name
        if exposed in rules.disabled or name in rules.disabled:
            continue
        samples = [s for s in family.samples if not s.name.endswith("_created")]
        if not samples:
            continue
        constrained = {
            label: allowed for (metric, label), allowed in rules.allow_list.items() if metric == exposed
        }
        merged: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for sample in samples:
            labels = sample.labels
            if constrained:
                labels = {
                    k: (v if k not in constrained or v in constrained[k] or k == "le" else "unexpected")
                    for k, v in labels.items()
                }
            # Go's client sorts label pairs by name; a bucket's le comes last
            key = (sample.name, tuple(sorted(labels.items(), key=lambda kv: (kv[0] == "le", kv[0]))))
            merged[key] = merged.get(key, 0.0) + sample.value
        out.append(f"# HELP {exposed} {_help(exposed, name, family.documentation)}\n")
        out.append(f"# TYPE {exposed} {'untyped' if type_ == 'unknown' else type_}\n")
        for (sample_name, pairs), value in merged.items():
            if pairs:
                text = ",".join(
                    f'{k}="{go_float(float(v)) if k == "le" and v != "+Inf" else _escape(v)}"'
                    for k, v in pairs
                )
                out.append(f"{sample_name}{{{text}}} {go_float(value)}\n")
            else:
                out.append(f"{sample_name} {go_float(value)}\n")
    return "".join(out).encode()
