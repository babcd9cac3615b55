"""The offline report: ``berth simulate --html FILE`` and ``berth capacity --html FILE``.

One self-contained HTML file: the UI's page with its stylesheet and script inlined and the
``-o json`` document embedded (``<script type="application/json" id="berth-data">``). It opens from
disk with no server and no network.

Large runs are trimmed so the file stays small enough to open fast (5,000 nodes and 2,000 pods:
see docs/ui.md): each pod keeps its :data:`SCORED_NODES_KEPT` best-scored nodes (the winner and
runner-up always among them) and :data:`REJECTED_NODES_KEPT` rejected nodes, with counts of what
was left out (``scoresOmitted``, ``filterOmitted``) and ``filterSummary``, the rejections of every
node grouped by plugin and reason, so the page says how many nodes each reason held back.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping
from typing import Any

import orjson

from app.config.types import SchedulerConfiguration
from app.config.validation import expand_plugins
from app.framework.registry import Registry
from app.ui.assets import asset_text

__all__ = [
    "REJECTED_NODES_KEPT",
    "SCORED_NODES_KEPT",
    "profile_weights",
    "render_report",
    "report_summary",
    "trim_pod",
]

SCORED_NODES_KEPT = 20
REJECTED_NODES_KEPT = 50

_STYLESHEET = '<link rel="stylesheet" href="assets/berth-ui.css">'
_SCRIPT = '<script src="assets/berth-ui.js"></script>'


def _filter_summary(filter_: Mapping[str, Any]) -> list[dict[str, Any]]:
    counts: Counter[tuple[str, str]] = Counter()
    for verdict in filter_.values():
        for reason in verdict.get("reasons") or [verdict.get("status", "")]:
            counts[(verdict.get("plugin", ""), reason)] += 1
    return [{"plugin": p, "reason": r, "nodes": n} for (p, r), n in counts.most_common()]


def trim_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """``pod`` (a ``pods[]`` entry) with at most the kept scored and rejected nodes, and the counts."""
    out = dict(pod)
    filter_ = pod.get("filter") or {}
    out["filterSummary"] = _filter_summary(filter_)
    if len(filter_) > REJECTED_NODES_KEPT:
        kept = sorted(filter_)[:REJECTED_NODES_KEPT]
        out["filter"] = {name: filter_[name] for name in kept}
        out["filterOmitted"] = len(filter_) - len(kept)
    scores = pod.get("scores") or {}
    if len(scores) > SCORED_NODES_KEPT:
        best = heapq.nlargest(SCORED_NODES_KEPT, scores, key=lambda n: (scores[n].get("total", 0), n))
        for must in (pod.get("winner"), pod.get("runnerUp")):
            if must and must.get("node") in scores and must["node"] not in best:
                best.append(must["node"])
        out["scores"] = {name: scores[name] for name in best}
        out["scoresOmitted"] = len(scores) - len(best)
    return out


def report_summary(kind: str, doc: Mapping[str, Any]) -> str:
    """One line about the report, for the page's header and the CLI."""
    if kind == "capacity":
        return f"capacity: {doc.get('replicas', 0)} more replica(s) of {doc.get('pod', '?')}"
    counts = Counter(p.get("status", "") for p in doc.get("pods") or [])
    parts = ", ".join(f"{n} {status.lower()}" for status, n in counts.most_common())
    return f"simulation: {len(doc.get('pods') or [])} pods ({parts or 'none'}), {len(doc.get('nodes') or [])} nodes"


def profile_weights(cfg: SchedulerConfiguration, registry: Registry) -> dict[str, dict[str, int]]:
    """Each profile's Score plugin weights (``{schedulerName: {plugin: weight}}``), as its framework
    applies them (MultiPoint expanded, 0 meaning 1): the bars multiply each normalized score by them."""
    return {
        profile.scheduler_name: {
            plugin.name: plugin.weight or 1
            for plugin in expand_plugins(profile.plugins, registry).points["score"]
        }
        for profile in cfg.profiles
    }


def render_report(
    doc: Mapping[str, Any], kind: str = "simulate", weights: Mapping[str, Mapping[str, int]] | None = None
) -> str:
    """The self-contained HTML report of ``doc`` (a ``berth simulate``/``berth capacity`` ``-o json``
    document; ``kind`` says which). ``weights`` (:func:`profile_weights`) lets the score bars show
    weighted scores where the pods carry no ``weights`` of their own."""
    if kind == "simulate":
        doc = {**doc, "pods": [trim_pod(p) for p in doc.get("pods") or []]}
    report = {"kind": kind, "title": report_summary(kind, doc), "weights": weights or {}, "doc": doc}
    data = orjson.dumps(report).decode()
    # Inside <script>, "</script" or "<!--" would end or upset the element; "<" only occurs inside JSON
    # strings, where the escape \u003c reads the same to JSON.parse.
    data = data.replace("<", "\\u003c")
    page = asset_text("index.html")
    css = asset_text("berth-ui.css")
    script = asset_text("berth-ui.js").replace("</", "<\\/")
    page = page.replace(_STYLESHEET, f"<style>\n{css}</style>")
    page = page.replace(
        _SCRIPT,
        f'<script type="application/json" id="berth-data">{data}</script>\n<script>\n{script}</script>',
    )
    return page
