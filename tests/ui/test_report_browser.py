"""The offline report (``berth simulate --html``, ``berth capacity --html``) in a real chromium:
the pages load from disk without console errors, show the run's pods, and a pod's page shows its
per-node Filter verdicts and its weighted score bars with the run's numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ui.colours import SIMULATIONS, closest_pair, contrast, parse_css_colour, seen_as
from ui.conftest import DESKTOP, PHONE, open_page, screenshot
from ui.reports import EXAMPLES, SIMULATE, write_report

COMPARE = EXAMPLES / "compare"
NONE = "\u2013"  # the en dash the tables show for "no node"

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


@pytest.fixture
def compared(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """``berth simulate examples/compare/state.yaml --config A --compare-config B --html``."""
    return write_report(
        tmp_path,
        "simulate",
        str(COMPARE / "state.yaml"),
        "--config",
        str(COMPARE / "least-allocated.yaml"),
        "--compare-config",
        str(COMPARE / "most-allocated.yaml"),
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280x800", "390px"])
def test_every_page_is_readable_inside_the_screen(
    browser: Any, tmp_path: Path, basic: tuple[Path, dict[str, Any]], viewport: dict[str, int]
) -> None:
    html, doc = basic
    capacity, _ = write_report(
        tmp_path / "capacity",
        "capacity",
        str(SIMULATE / "basic.yaml"),
        str(EXAMPLES / "capacity" / "web.yaml"),
    )
    compare, _ = write_report(
        tmp_path / "compare",
        "simulate",
        str(COMPARE / "state.yaml"),
        "--compare-config",
        str(COMPARE / "most-allocated.yaml"),
    )
    pod = next(p["pod"] for p in doc["pods"] if len(p["scores"]) > 1)
    pages = {
        "decisions": html.as_uri(),
        "pod": html.as_uri() + "#/pod/" + pod,
        "nodes": html.as_uri() + "#/nodes",
        "node": html.as_uri() + "#/node/" + doc["nodes"][0]["node"],
        "compare": compare.as_uri() + "#/compare",
        "capacity": capacity.as_uri(),
    }
    size = "phone" if viewport is PHONE else "desktop"
    page, errors = open_page(browser, viewport)
    try:
        for name, url in pages.items():
            page.goto(url)
            page.wait_for_selector("main h1")
            # nothing but the scrollable tables may be wider than the screen
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport["width"], (name, width)
            # the page's title and the navigation start on the first screen, in a readable size
            top = page.evaluate("document.querySelector('main h1').getBoundingClientRect().top")
            assert 0 <= top < viewport["height"] / 3, (name, top)
            text_px = page.evaluate("parseFloat(getComputedStyle(document.querySelector('main')).fontSize)")
            assert text_px >= 14, (name, text_px)
            assert page.locator("nav a:visible").count() >= 1
            screenshot(page, f"report-{name}-{size}")
    finally:
        page.context.close()
    assert errors == []


def test_colours_survive_colour_blindness(page: Any, basic: tuple[Path, dict[str, Any]]) -> None:
    """Every plugin colour of the score bars stays apart from every other with protanopia,
    deuteranopia and tritanopia (ΔE >= 15; Okabe-Ito's closest pair is about 16), the ninth and
    later plugins are hatched, the outcome badges keep AA contrast for their white text and carry a
    sign besides their colour, and utilization colours get lighter as nodes fill with every vision."""
    html, doc = basic
    pod = next(p["pod"] for p in doc["pods"] if len(p["scores"]) > 1)
    page.goto(html.as_uri() + "#/pod/" + pod)
    page.wait_for_selector("#score-bars")
    # The stylesheet's whole plugin palette, from the browser's computed styles.
    styles = page.evaluate(
        """() => Array.from({length: 12}, (_, i) => {
            const probe = document.createElement("span"); probe.className = "p" + i;
            document.body.append(probe); const s = getComputedStyle(probe);
            const out = [s.backgroundColor, s.backgroundImage]; probe.remove(); return out; })"""
    )
    solid = {f"p{i}": parse_css_colour(colour) for i, (colour, image) in enumerate(styles) if image == "none"}
    assert list(solid) == [f"p{i}" for i in range(8)]
    assert all("repeating-linear-gradient" in image for _, image in styles[8:])
    for simulation in SIMULATIONS:
        delta, a, b = closest_pair(solid, simulation)
        assert delta >= 15, f"plugins {a} and {b} look alike with {simulation} (ΔE {delta:.1f})"
    # The legend names each plugin next to its swatch: the colour is never the only key.
    legend = page.inner_text(".legend")
    drawn = set(page.eval_on_selector_all("#score-bars .stack span", "ss => ss.map(s => s.dataset.plugin)"))
    assert drawn and all(plugin in legend for plugin in drawn)

    badges = page.evaluate(
        """() => ["Scheduled", "Unschedulable", "Error", "Filtered", "Gated", "pass", "reject"].map((c) => {
            const b = document.createElement("span"); b.className = "badge " + c; document.body.append(b);
            const s = getComputedStyle(b); const out = [c, s.color, s.backgroundColor]; b.remove(); return out; })"""
    )
    backgrounds = {}
    for name, text, background in badges:
        ratio = contrast(parse_css_colour(text), parse_css_colour(background))
        assert ratio >= 4.5, f"badge {name}: contrast {ratio:.2f}"
        backgrounds[name] = parse_css_colour(background)
    outcomes = {k: backgrounds[k] for k in ("Scheduled", "Unschedulable")}
    for simulation in SIMULATIONS:
        assert closest_pair(outcomes, simulation)[0] >= 15, simulation
    assert page.inner_text(".badge.Scheduled").startswith("✓")

    page.goto(html.as_uri() + "#/nodes")
    page.wait_for_selector("#nodes-table td[data-fraction]")
    cells = page.eval_on_selector_all(
        "#nodes-table td[data-fraction]",
        "cs => cs.map(c => [Number(c.dataset.fraction), getComputedStyle(c.querySelector('.meter span')).backgroundColor])",
    )
    ramp = sorted({(fraction, colour) for fraction, colour in cells})
    assert len({f for f, _ in ramp}) >= 3, ramp  # the example has nodes at several utilizations
    for simulation in SIMULATIONS:
        lightness = [seen_as(parse_css_colour(colour), simulation)[0] for _, colour in ramp]
        assert lightness == sorted(lightness), (simulation, ramp)


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


def test_a_comparison_shows_the_moved_pods_and_both_utilizations(
    page: Any, compared: tuple[Path, dict[str, Any]]
) -> None:
    html, doc = compared
    comparison = doc["comparison"]
    assert comparison["moved"], "the example's two configurations place some pods differently"
    page.goto(html.as_uri())
    page.click("nav a:text-is('Comparison')")
    page.wait_for_selector("#moved-table")
    rows = page.eval_on_selector_all("#moved-table tbody tr", "rs => rs.map(r => r.innerText)")
    assert len(rows) == len(comparison["moved"])
    for row, moved in zip(rows, comparison["moved"], strict=True):
        assert moved["pod"] in row and (moved["a"] or NONE) in row and (moved["b"] or NONE) in row
        for plugin, scores in moved["plugins"].items():
            assert f"{plugin} {scores['a']}→{scores['b']}" in row
    assert page.locator("#compare-nodes tbody tr").count() == len(comparison["nodes"])
    delta = comparison["unschedulable"]["delta"]
    assert f"{'+' if delta > 0 else ''}{delta}" in page.inner_text("main .cards")
    assert "least-allocated.yaml" in page.inner_text("main .cards")
    assert "most-allocated.yaml" in page.inner_text("main .cards")
    screenshot(page, "report-compare")
