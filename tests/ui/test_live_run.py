"""``/ui/`` of ``berth run`` on the real control plane, in chromium: behind the same authentication
and authorization as ``/debug/pods``, and a pod created during the test appears live, with its
per-node Filter verdicts and weighted score bars matching ``/debug/pods``."""

from __future__ import annotations

import contextlib
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.cluster import Cluster, two_node_cluster
from e2e.standalone import SCHEDULER_NAME, BerthScheduler, insecure_context
from kubernetes import client
from ui.conftest import open_page, screenshot

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

POLL_WAIT_MS = 30_000  # the page polls every 2 s; scheduling on a loaded machine takes a few


@pytest.fixture
def cluster(kube_client: client.ApiClient, namespace: str) -> Iterator[Cluster]:
    with two_node_cluster(kube_client, namespace) as c:
        yield c


@pytest.fixture
def berth(control_plane: LocalControlPlane, tmp_path: Path, cluster: Cluster) -> Iterator[BerthScheduler]:
    """``berth run`` with its lease in the test's namespace, stopped before the cluster is cleaned up."""
    lease = f"ui-{uuid.uuid4().hex[:6]}"
    with contextlib.ExitStack() as stack:
        proc = BerthScheduler.on(
            control_plane, tmp_path, namespace=cluster.namespace, lease_name=lease, name="berth-ui"
        )
        stack.callback(proc.stop)
        yield proc.start()


def _status_without_credentials(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5, context=insecure_context()) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_ui_is_guarded_like_debug_pods(berth: BerthScheduler, namespace: str) -> None:
    guarded = _status_without_credentials(f"{berth.base}/debug/pods/{namespace}/x")
    assert guarded in (401, 403)
    for path in (
        "/ui/",
        "/ui/assets/berth-ui.js",
        "/ui/api/decisions",
        "/ui/api/nodes",
        f"/ui/api/pods/{namespace}/x",
    ):
        assert _status_without_credentials(berth.base + path) == guarded, path
    status, body = berth.get("/ui/")
    assert status == 200 and "berth-ui.js" in body


def _browser_page(browser: Any, berth: BerthScheduler) -> tuple[Any, list[str]]:
    assert berth.client_cert is not None
    cert, key = berth.client_cert
    return open_page(
        browser,
        ignore_https_errors=True,  # berth's serving certificate is self-signed here
        client_certificates=[{"origin": berth.base, "certPath": str(cert), "keyPath": str(key)}],
    )


def test_a_pod_scheduled_during_the_test_appears_live_with_its_decision(
    browser: Any, berth: BerthScheduler, cluster: Cluster
) -> None:
    page, errors = _browser_page(browser, berth)
    try:
        page.goto(f"{berth.base}/ui/")
        page.wait_for_selector("#status:has-text('live')")
        name = cluster.create_pod("live-0", cpu="1", scheduler_name=SCHEDULER_NAME)
        key = f"{cluster.namespace}/{name}"
        row = page.wait_for_selector(f'#decisions tr[data-pod="{key}"]', timeout=POLL_WAIT_MS)
        node = cluster.wait_bound(name)
        page.wait_for_selector(f'#decisions tr[data-pod="{key}"] td:has-text("{node}")', timeout=POLL_WAIT_MS)
        assert "Scheduled" in row.inner_text()
        screenshot(page, "live-decisions")

        page.click(f'#decisions a:text-is("{key}")')
        page.wait_for_selector("#filter-table")
        trace = berth.get_json(f"/debug/pods/{key}")
        weights = berth.get_json("/ui/api/info")["weights"][SCHEDULER_NAME]
        verdicts = dict(
            page.eval_on_selector_all(
                "#filter-table tbody tr", "rs => rs.map(r => [r.dataset.node, r.dataset.verdict])"
            )
        )
        assert all(verdicts[n] == "passed" for n in cluster.nodes)
        bars = page.eval_on_selector_all(
            "#score-bars .stack",
            """bars => bars.map(b => [b.dataset.node, Number(b.dataset.total),
                Object.fromEntries([...b.children].map(s => [s.dataset.plugin, Number(s.dataset.weighted)]))])""",
        )
        assert {b[0] for b in bars} == set(trace["scores"]) == set(cluster.nodes)
        for bar_node, total, segments in bars:
            scores = trace["scores"][bar_node]
            assert total == scores["total"]
            assert segments == {p: s * weights[p] for p, s in scores.items() if p != "total" and s}
        assert (
            f"{trace['winner']['node']} ({trace['winner']['total']})"
            in page.locator(".card", has_text="winner").inner_text()
        )
        screenshot(page, "live-pod")

        page.click(f'a:text-is("{node}")')
        page.wait_for_selector("#node-pods")
        assert key in page.inner_text("#node-pods")
        page.goto(f"{berth.base}/ui/#/nodes")
        page.wait_for_selector(f'#nodes-table tr[data-node="{node}"]')
        screenshot(page, "live-nodes")

        # A later pod arrives through the polls that ask only for what is new, above the first.
        page.click("nav a:text-is('Decisions')")
        later = f"{cluster.namespace}/{cluster.create_pod('live-1', cpu='1', scheduler_name=SCHEDULER_NAME)}"
        page.wait_for_selector(f'#decisions tr[data-pod="{later}"]', timeout=POLL_WAIT_MS)
        shown = page.eval_on_selector_all("#decisions tbody tr", "rows => rows.map(r => r.dataset.pod)")
        assert shown == [later, key]
    finally:
        page.context.close()
    assert errors == []


def test_an_unschedulable_pod_shows_its_fit_error_live(
    browser: Any, berth: BerthScheduler, cluster: Cluster
) -> None:
    page, errors = _browser_page(browser, berth)
    try:
        name = cluster.create_pod("too-big", cpu="6", scheduler_name=SCHEDULER_NAME)
        key = f"{cluster.namespace}/{name}"
        page.goto(f"{berth.base}/ui/#/pod/{key}")
        page.wait_for_selector("#fiterror", timeout=POLL_WAIT_MS)
        trace = berth.get_json(f"/debug/pods/{key}")
        assert trace["status"] == "Unschedulable"
        assert page.inner_text("#fiterror") == trace["message"]
        for node in cluster.nodes:
            row = page.locator(f'#filter-table tr[data-node="{node}"]')
            assert row.get_attribute("data-verdict") == "rejected"
            assert "Insufficient cpu" in row.inner_text()
    finally:
        page.context.close()
    assert errors == []
