"""What the scheduler's metric observations cost per scheduling cycle (prints a table).

``bench/engine.py`` measures whole cycles on a shared machine, where the difference the metrics
make drowns in noise; this script times the observation calls themselves, with the counts one
default-profile cycle makes on a 500-node cluster (SchedulingBasic), and sets them against that
cycle's cost. Usage: ``python bench/metrics_overhead.py [--cycle-ms 0.5]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from prometheus_client import Histogram

from app import metrics

PLUGINS_PREFILTER = ["NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
                     "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"]  # fmt: skip
PLUGINS_FILTER = [
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
]
PLUGINS_SCORE = ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
                 "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"]  # fmt: skip


PROFILE = "default-scheduler"
TABLES = {
    p: metrics.PLUGIN_EVALUATION_TOTAL.table(PROFILE, p) for p in ("PreFilter", "Filter", "PreScore", "Score")
}
HISTOGRAM = metrics.FRAMEWORK_EXTENSION_POINT_DURATION
POINTS = ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind")
SERIES = {p: HISTOGRAM.series((p, "Success", PROFILE)) for p in POINTS}


def one_cycle() -> None:
    """The observations berth makes in one cycle of the default profile, as the framework makes
    them (kept tables and series handles)."""
    metrics.count_evaluations(TABLES["PreFilter"], PLUGINS_PREFILTER, 1)
    HISTOGRAM.observe_series(SERIES["PreFilter"], 0.0001)
    HISTOGRAM.observe_series_repeated(SERIES["Filter"], 0.000002, 500)
    filters = TABLES["Filter"]
    for name in PLUGINS_FILTER:
        filters[name] = filters.get(name, 0.0) + 500
    metrics.count_evaluations(TABLES["PreScore"], PLUGINS_SCORE, 1)
    metrics.count_evaluations(TABLES["Score"], PLUGINS_SCORE, 500)
    for point in ("PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"):
        HISTOGRAM.observe_series(SERIES[point], 0.0001)
    metrics.SCHEDULING_ALGORITHM_DURATION.observe((), 0.0004)


_OLD = Histogram(
    "bench_old_extension_point_seconds", "The old extension-point histogram's kind.", ["extension_point", "status",
    "profile"], buckets=metrics.exponential_buckets(0.0001, 2, 12), registry=None)  # fmt: skip
BEFORE = [_OLD.labels(p, "Success", PROFILE) for p in ("PreFilter", "PreScore", "Score", "Bind")]


def before_this_change() -> None:
    """The observations the cycle made before kube's missing series were added: four extension
    points through prometheus_client's labelled children (what the framework did then)."""
    for child in BEFORE:
        child.observe(0.0001)


def per_call_us(fn: Callable[[], None], n: int = 20000) -> float:
    """Microseconds per call of ``fn`` (best of three runs)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycle-ms", type=float, default=0.5, help="a cycle's CPU cost (bench/engine.py)")
    args = parser.parse_args()
    now, before = per_call_us(one_cycle), per_call_us(before_this_change)
    cycle_us = args.cycle_ms * 1000
    print(f"{'observations':28s} {'us/cycle':>9s} {'share of a cycle':>17s}")
    print(f"{'before (4 extension points)':28s} {before:9.1f} {before / cycle_us:16.1%}")
    print(f"{'now (all series)':28s} {now:9.1f} {now / cycle_us:16.1%}")
    print(f"{'added':28s} {now - before:9.1f} {(now - before) / cycle_us:16.1%}")
    print(f"cycle-time ratio now/before: {(cycle_us + now - before) / cycle_us:.3f}")


if __name__ == "__main__":
    main()
