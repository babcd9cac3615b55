"""``/ui/`` of ``berth serve`` as the extender of a real kube-scheduler (berth under ``extenders:``,
with its filter, prioritize and bind verbs) on the test control plane: a pod scheduled during the
test appears on the live decisions page, and its page shows berth's Filter verdicts (the rejected
node with its plugin and reason) and the weighted score bars of the nodes /prioritize scored."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from e2e.cluster import PREFERRED_LABEL, Cluster
from e2e.conftest import berth, cluster, e2e_dir  # noqa: F401 (the e2e tests' fixtures, shared)
from e2e.stack import BerthServer, ExtenderEntry, KubeScheduler, scheduler_config
from e2e.test_stock_scheduler import AVOID_ANNOTATION, wait_berth_filter
from ui.conftest import open_page, screenshot

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

# berth: ``berth serve`` with the e2e tests' configuration, the default profile plus PreferLabel,
# whose Filter rejects a node with the label for a pod that avoids it (kube-scheduler's does not);
# cluster: a fresh namespace and label, its nodes and pods deleted after the test.

SCHEDULER = "berth-ui-extender"
"""The kube-scheduler profile of this module's pods, so no other scheduler of the suite takes them."""
POLL_WAIT_MS = 30_000


@pytest.fixture(scope="module")
def scheduler(
    control_plane: LocalControlPlane,
    berth: BerthServer,  # noqa: F811 (the imported fixture)
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[KubeScheduler]:
    """The stock kube-scheduler with berth as its extender for filter, prioritize and bind."""
    config = scheduler_config(control_plane.kubeconfig, [ExtenderEntry(berth.url)], scheduler_name=SCHEDULER)
    sched = KubeScheduler(
        control_plane.bin_dir, control_plane.kubeconfig, tmp_path_factory.mktemp("ui-ks"), config, "ks-ui"
    )
    sched.start()
    try:
        yield sched
    finally:
        sched.stop()


def test_a_pod_kube_scheduler_schedules_appears_with_berths_verdicts_and_scores(
    browser: Any,
    scheduler: KubeScheduler,
    berth: BerthServer,  # noqa: F811 (the imported fixture)
    cluster: Cluster,  # noqa: F811 (the imported fixture)
) -> None:
    # kube-scheduler's own filters pass all three nodes; berth's PreferLabel rejects the labelled one
    # for a pod that avoids the label, so berth's verdicts differ from kube-scheduler's there.
    labelled = cluster.create_node("labelled", cpu="8", labels={PREFERRED_LABEL: "true"})
    roomy, small = cluster.create_node("roomy", cpu="8"), cluster.create_node("small")
    wait_berth_filter(berth, [labelled, roomy, small], "1", set())

    page, errors = open_page(browser)
    try:
        page.goto(f"{berth.url}/ui/")
        page.wait_for_selector("#status:has-text('live')")
        assert "kube-scheduler's extender" in page.inner_text("#extender-note")
        name = cluster.create_pod(
            "web", cpu="1", scheduler_name=SCHEDULER, annotations={AVOID_ANNOTATION: "true"}
        )
        key = f"{cluster.namespace}/{name}"
        node = cluster.wait_bound(name)
        assert node in (roomy, small)
        row = f'#decisions tr[data-pod="{key}"]'
        page.wait_for_selector(f'{row} td:has-text("{node}")', timeout=POLL_WAIT_MS)
        assert "Scheduled" in page.inner_text(row)  # berth's /bind bound it
        screenshot(page, "live-serve-decisions")

        page.click(f'#decisions a:text-is("{key}")')
        page.wait_for_selector("#filter-table")
        record = berth_json(berth, f"/ui/api/pods/{key}")
        weights = berth_json(berth, "/ui/api/info")["weights"]["default-scheduler"]
        assert record["node"] == node and record["evaluatedNodes"] == 3 and record["feasibleNodes"] == 2
        verdicts = dict(
            page.eval_on_selector_all(
                "#filter-table tbody tr", "rs => rs.map(r => [r.dataset.node, r.dataset.verdict])"
            )
        )
        ours = {labelled, roomy, small}
        assert {n: v for n, v in verdicts.items() if n in ours} == {
            labelled: "rejected",
            roomy: "passed",
            small: "passed",
        }
        # the session's cluster has other tests' nodes too: berth was not asked about them
        assert {v for n, v in verdicts.items() if n not in ours} <= {"none"}
        rejected = page.locator(f'#filter-table tr[data-node="{labelled}"]').inner_text()
        assert "PreferLabel" in rejected and f"had label {PREFERRED_LABEL} that the pod avoids" in rejected
        bars = page.eval_on_selector_all(
            "#score-bars .stack",
            """bars => bars.map(b => [b.dataset.node, Number(b.dataset.total),
                Object.fromEntries([...b.children].map(s => [s.dataset.plugin, Number(s.dataset.weighted)]))])""",
        )
        assert {b[0] for b in bars} == set(record["scores"]) == {roomy, small}
        for bar_node, total, segments in bars:
            scores = record["scores"][bar_node]
            assert total == scores["total"]
            assert segments == {p: s * weights[p] for p, s in scores.items() if p != "total" and s}
        # the 8-CPU node is the emptier one: berth's scores prefer it (kube-scheduler adds its own)
        assert record["scores"][roomy]["total"] > record["scores"][small]["total"]
        screenshot(page, "live-serve-pod")
    finally:
        page.context.close()
    assert errors == []


def berth_json(server: BerthServer, path: str) -> Any:
    """GET ``path`` on berth's plain port (no credentials there), decoded."""
    with urllib.request.urlopen(server.url + path, timeout=10) as resp:
        return json.loads(resp.read())
