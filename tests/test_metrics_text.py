"""/metrics as kube components write it: Go numbers, stability markers, no _created, the flags."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram

from app import metrics
from app.cli.metricsdoc import metrics_markdown

DOC = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"


def test_kube_text_format() -> None:
    registry = CollectorRegistry()
    h = Histogram("scheduler_x_seconds", "X.", ["b", "a"], buckets=[0.5, 1.0, 1e6], registry=registry)
    h.labels("2", "1").observe(0.7)
    Counter("scheduler_schedule_attempts", "Y.", registry=registry).inc()
    text = metrics.render(registry, metrics.Exposition.of()).decode()
    assert 'scheduler_x_seconds_bucket{a="1",b="2",le="1"} 1' in text
    assert 'le="1e+06"' in text
    assert "_created" not in text
    assert "# HELP scheduler_schedule_attempts_total [STABLE] Y." in text
    assert "# HELP scheduler_x_seconds [ALPHA] X." in text


def test_disabled_metrics_and_label_allow_lists() -> None:
    registry = CollectorRegistry()
    c = Counter("scheduler_y", "Y.", ["result"], registry=registry)
    c.labels("ok").inc()
    c.labels("odd").inc(2)
    c.labels("odder").inc(3)
    rules = metrics.Exposition.of(allow_list={"scheduler_y_total,result": "ok"})
    text = metrics.render(registry, rules).decode()
    assert 'scheduler_y_total{result="unexpected"} 5' in text
    assert (
        "scheduler_y_total"
        not in metrics.render(registry, metrics.Exposition.of(disabled=["scheduler_y_total"])).decode()
    )


def test_metrics_doc_is_generated_from_the_registry() -> None:
    assert DOC.read_text() == metrics_markdown(), "run hack/gen-metrics-doc.py"
    assert (
        "| `scheduler_plugin_evaluation_total` | counter | plugin, extension_point, profile | BETA |"
        in DOC.read_text()
    )


def test_exponential_buckets_are_gos_doubles() -> None:
    # Go multiplies step by step; kube-scheduler prints these exact bounds for the plugin histogram
    buckets = metrics.exponential_buckets(0.00001, 1.5, 20)
    assert [metrics.go_float(b) for b in buckets[:3]] == [
        "1e-05",
        "1.5000000000000002e-05",
        "2.2500000000000005e-05",
    ]
