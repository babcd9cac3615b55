"""The offline report (``berth simulate --html``, ``berth capacity --html``) in a real chromium:
the pages load from disk without console errors, show the run's pods, and a pod's page shows its
per-node Filter verdicts and its weighted score bars with the run's numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ui.conftest import PHONE, open_page, screenshot
from ui.reports import EXAMPLES, SIMULATE, write_report

from app.ui.report import render_report

# The default profile's Score weights (kube-scheduler's): what the bars multiply each score by.
DEFAULT_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "DynamicResources": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


@pytest.fixture
def basic(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    return write_report(tmp_path, "simulate", str(SIMULATE / "basic.yaml"))


def test_every_page_loads_and_lists_the_runs_pods(page: Any, basic: tuple[Path, dict[str, Any]]) -> None:
    html, doc = basic
    page.goto(html.as_uri())
    page.wait_for_selector("#decisions tbody tr")
    shown = page.eval_on_selector_all("#decisions tbody tr", "rows => rows.map(r => r.dataset.pod)")
    assert shown == [p["pod"] for p in doc["pods"]]
    assert page.inner_text("#decisions").count("Scheduled") == len(doc["pods"])
    screenshot(page, "report-decisions")
    page.goto(html.as_uri() + "#/nodes")
    page.wait_for_selector("#nodes-table tbody tr")
    rows = page.eval_on_selector_all("#nodes-table tbody tr", "rows => rows.map(r => r.dataset.node)")
    assert rows == [n["node"] for n in doc["nodes"]]
    assert page.locator("#heatmap a").count() == len(doc["nodes"])
    screenshot(page, "report-nodes")


def test_clicking_a_pod_shows_its_filter_verdicts_and_weighted_scores(
    page: Any, basic: tuple[Path, dict[str, Any]]
) -> None:
    html, doc = basic
    record = next(p for p in doc["pods"] if len(p["scores"]) > 1)
    page.goto(html.as_uri())
    page.click(f'#decisions a:text-is("{record["pod"]}")')
    page.wait_for_selector("#score-bars")
    # Filter: the rejected node with its plugin and reason, the scored nodes passed.
    verdicts = dict(
        page.eval_on_selector_all(
            "#filter-table tbody tr", "rs => rs.map(r => [r.dataset.node, r.dataset.verdict])"
        )
    )
    for node, verdict in record["filter"].items():
        assert verdicts[node] == "rejected"
        row = page.locator(f'#filter-table tr[data-node="{node}"]')
        assert verdict["plugin"] in row.inner_text() and verdict["reasons"][0] in row.inner_text()
    assert all(verdicts[n] == "passed" for n in record["scores"])
    # Scores: one stacked bar per node, best first, each segment the plugin's score times its weight.
    bars = page.eval_on_selector_all(
        "#score-bars .stack",
        """bars => bars.map(b => [b.dataset.node, Number(b.dataset.total),
            Object.fromEntries([...b.children].map(s => [s.dataset.plugin, Number(s.dataset.weighted)]))])""",
    )
    assert [b[0] for b in bars] == sorted(record["scores"], key=lambda n: -record["scores"][n]["total"])
    for node, total, segments in bars:
        scores = record["scores"][node]
        assert total == scores["total"]
        expected = {p: s * DEFAULT_WEIGHTS[p] for p, s in scores.items() if p != "total" and s}
        assert segments == expected
        assert sum(segments.values()) == total  # the weighted parts add up to the total kube compares
    winner = page.locator(".card", has_text="winner").inner_text()
    assert f"{record['winner']['node']} ({record['winner']['total']})" in winner
    runner_up = page.locator(".card", has_text="runner-up").inner_text()
    assert f"{record['runnerUp']['node']} ({record['runnerUp']['total']})" in runner_up
    screenshot(page, "report-pod")


def test_an_unschedulable_pod_shows_its_fit_error_and_every_rejection(page: Any, tmp_path: Path) -> None:
    html, doc = write_report(tmp_path, "simulate", str(SIMULATE / "unschedulable.yaml"))
    record = next(p for p in doc["pods"] if p["status"] == "Unschedulable")
    page.goto(html.as_uri() + "#/pod/" + record["pod"])
    assert page.inner_text("#fiterror") == record["message"]
    summary = page.inner_text("#filter-summary")
    for verdict in record["filter"].values():
        assert f"{verdict['plugin']}: {verdict['reasons'][0]}" in summary
    assert page.locator('#filter-table tr[data-verdict="rejected"]').count() == len(record["filter"])
    screenshot(page, "report-unschedulable")


def test_filters_narrow_the_decisions(page: Any, tmp_path: Path) -> None:
    html, doc = write_report(tmp_path, "simulate", str(SIMULATE / "unschedulable.yaml"))
    page.goto(html.as_uri())
    page.select_option("#filter-outcome", "Unschedulable")
    shown = page.eval_on_selector_all("#decisions tbody tr", "rows => rows.map(r => r.dataset.pod)")
    assert shown == [p["pod"] for p in doc["pods"] if p["status"] == "Unschedulable"]
    page.fill("#filter-text", shown[0])
    assert page.locator("#decisions tbody tr").count() == 1


def test_keyboard_alone_reaches_a_pod_and_comes_back(page: Any, basic: tuple[Path, dict[str, Any]]) -> None:
    html, doc = basic
    page.goto(html.as_uri())
    page.wait_for_selector("#decisions tbody tr")
    first = doc["pods"][0]["pod"]
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == first:
            break
    else:
        pytest.fail(f"Tab never reached the link of {first}")
    page.keyboard.press("Enter")
    page.wait_for_selector("h1:has-text('" + first + "')")
    assert page.url.endswith("#/pod/" + first)
    page.keyboard.press("Shift+Tab")  # back up to the "← Decisions" link, which comes first in main
    for _ in range(10):
        if page.evaluate("document.activeElement.textContent") == "← Decisions":
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#decisions")


def test_phone_width_keeps_the_pages_inside_the_screen(
    browser: Any, basic: tuple[Path, dict[str, Any]]
) -> None:
    html, doc = basic
    page, errors = open_page(browser, PHONE)
    try:
        pod = next(p["pod"] for p in doc["pods"] if len(p["scores"]) > 1)
        for name, hash_ in (("decisions", ""), ("pod", "#/pod/" + pod), ("nodes", "#/nodes")):
            page.goto(html.as_uri() + hash_)
            page.wait_for_selector("main h1")
            # nothing but the scrollable tables may be wider than the screen
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], (name, width)
            screenshot(page, f"report-{name}-phone")
    finally:
        page.context.close()
    assert errors == []


def test_capacity_report_shows_the_count_per_node_and_what_stops_the_next(page: Any, tmp_path: Path) -> None:
    html, doc = write_report(
        tmp_path, "capacity", str(SIMULATE / "basic.yaml"), str(EXAMPLES / "capacity" / "web.yaml")
    )
    page.goto(html.as_uri())
    assert page.inner_text("main h1") == f"{doc['replicas']} more replica(s) of {doc['pod']} fit"
    bars = dict(
        page.eval_on_selector_all(
            "#capacity-bars .stack", "bs => bs.map(b => [b.dataset.node, Number(b.dataset.replicas)])"
        )
    )
    assert bars == doc["nodes"]
    assert page.inner_text("#fiterror") == doc["stoppedBy"]["message"]
    screenshot(page, "report-capacity")


def test_a_comparison_shows_the_moved_pods_and_both_utilizations(page: Any, tmp_path: Path) -> None:
    _, doc = write_report(tmp_path, "simulate", str(SIMULATE / "basic.yaml"))
    pod = doc["pods"][-1]
    nodes = [n["node"] for n in doc["nodes"]]
    # A comparison as CONTRACT.md specifies it (berth simulate --compare-config writes it)
    doc["comparison"] = {
        "a": {"config": "a.yaml", "summary": doc["summary"]},
        "b": {"config": "b.yaml", "summary": {**doc["summary"], "unschedulable": 1, "scheduled": 2}},
        "moved": [
            {
                "pod": pod["pod"],
                "a": pod["node"],
                "b": None,
                "plugins": {"NodeResourcesFit": {"a": 40, "b": 0}},
            }
        ],
        "unschedulable": {"a": 0, "b": 1, "delta": 1},
        "nodes": [{"node": n["node"], "a": n["resources"], "b": n["resources"]} for n in doc["nodes"]],
        "emptyNodes": {"a": [], "b": nodes[:1]},
    }
    html = tmp_path / "compare.html"
    html.write_text(render_report(doc))
    page.goto(html.as_uri())
    page.click("nav a:text-is('Comparison')")
    page.wait_for_selector("#moved-table")
    row = page.inner_text("#moved-table tbody tr")
    assert pod["pod"] in row and pod["node"] in row and "NodeResourcesFit 40→0" in row
    assert page.locator("#compare-nodes tbody tr").count() == len(nodes)
    assert "+1" in page.inner_text("main .cards")
    screenshot(page, "report-compare")
