"""A stock kube-scheduler v1.36.3 using ``berth serve --kubeconfig`` as its extender, end to end.

What a user sees: pods bound (by berth's /bind) to the node berth's filter allowed and its score
favoured, FailedScheduling events naming berth's reasons, both node modes (``nodeCacheCapable``
true and false), berth recovering its cache by a relist after a restart, and what an unreachable
extender does to scheduling when it is ``ignorable`` and when it is not.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.cluster import PREFERRED_LABEL, WAIT, Cluster
from e2e.stack import BerthServer, ExtenderEntry, KubeScheduler, free_port, scheduler_config

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

NOT_IN_CACHE = "not found in berth's cache"
AVOID_ANNOTATION = "example.com/avoid-label"
DOWN_SCHEDULER = "berth-e2e-down"


def probe_pod(cpu: str) -> dict[str, Any]:
    """A pod body for /filter probes (never created)."""
    return {
        "metadata": {"name": "probe", "namespace": "default", "uid": "probe"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
    }


def wait_berth_filter(berth: BerthServer, nodes: list[str], cpu: str, failed: set[str]) -> None:
    """Wait until berth's cache has caught up: /filter of a ``cpu`` pod fails exactly ``failed``.

    Without this a pod created right after its nodes could reach berth before berth's informer
    delivered them, and an extender's FailedNodes would park it until the next cluster event.
    """
    deadline = time.monotonic() + WAIT
    answer: Any = None
    while time.monotonic() < deadline:
        answer = berth.post("filter", {"Pod": probe_pod(cpu), "NodeNames": nodes})
        if set(answer["FailedNodes"] or {}) == failed:
            return
        time.sleep(0.1)
    pytest.fail(f"berth's cache did not catch up: {answer}")


def bound_by_berth(berth: BerthServer, cluster: Cluster, pod: str) -> bool:
    """berth logged that its /bind bound ``pod`` (``berth serve -v 2``)."""
    key = f'pod="{cluster.namespace}/{pod}"'
    return any(
        "Successfully bound pod to node" in line and key in line
        for line in berth.log.read_text().splitlines()
    )


def bind_successes(berth: BerthServer) -> float:
    return berth.metric("berth_extender_requests_total", {"verb": "bind", "result": "success"})


# --- berth as the extender of the default scheduler, both node modes -----------------------------


def test_pod_lands_where_berth_allows_and_berth_binds_it(
    scheduler: KubeScheduler, berth: BerthServer, cluster: Cluster
) -> None:
    """``full`` has 1500m of its 2 CPUs taken by a running pod; a 1-CPU pod can only go to ``free``."""
    full, free = cluster.create_node("full"), cluster.create_node("free")
    cluster.create_pod("busy", cpu="1500m", node_name=full)
    wait_berth_filter(berth, [full, free], "1", {full})
    binds = bind_successes(berth)

    cluster.create_pod("web", cpu="1")

    assert cluster.wait_bound("web") == free
    assert bind_successes(berth) >= binds + 1
    assert bound_by_berth(berth, cluster, "web")


def test_berth_counts_the_pods_it_bound(
    scheduler: KubeScheduler, berth: BerthServer, cluster: Cluster
) -> None:
    """Two 1500m pods on two 2-CPU nodes: the second goes where the first is not."""
    a, b = cluster.create_node("a"), cluster.create_node("b")
    wait_berth_filter(berth, [a, b], "1500m", set())
    cluster.create_pod("first", cpu="1500m")
    first = cluster.wait_bound("first")
    cluster.create_pod("second", cpu="1500m")
    second = cluster.wait_bound("second")
    assert {first, second} == {a, b}


def test_out_of_tree_plugin_steers_the_stock_scheduler(
    scheduler: KubeScheduler, berth: BerthServer, cluster: Cluster
) -> None:
    """The headline use case: berth's PreferLabel (examples/plugins) decides where pods land.

    Four identical nodes, one labelled example.com/fast-disk: kube-scheduler alone would spread
    the pods; berth's score (PreferLabel weight 5 of 17) puts them all on the labelled node.
    """
    plain = [cluster.create_node(f"plain{i}", cpu="8") for i in range(3)]
    fast = cluster.create_node("fast", cpu="8", labels={PREFERRED_LABEL: "true"})
    wait_berth_filter(berth, [*plain, fast], "100m", set())
    for i in range(3):
        cluster.create_pod(f"app{i}")
    assert [cluster.wait_bound(f"app{i}") for i in range(3)] == [fast] * 3


def test_pod_berth_rejects_stays_pending_with_berths_reason(
    scheduler: KubeScheduler, berth: BerthServer, cluster: Cluster
) -> None:
    """PreferLabel's Filter rejects labelled nodes for pods annotated to avoid the label."""
    fast = cluster.create_node("fast", labels={PREFERRED_LABEL: "true"})
    wait_berth_filter(berth, [fast], "100m", set())

    cluster.create_pod("shy", annotations={AVOID_ANNOTATION: "true"})

    message = cluster.wait_event("shy", "FailedScheduling", "that the pod avoids")
    assert f"node(s) had label {PREFERRED_LABEL} that the pod avoids" in message
    assert message.startswith("0/"), message
    assert cluster.read_pod("shy").spec.node_name is None


def test_berth_restarted_resumes_from_a_relist(
    scheduler: KubeScheduler, berth: BerthServer, cluster: Cluster
) -> None:
    """berth is killed, a node is created while it is down, and after the restart (once /readyz
    says its informers have synced) a pod that needs that node is scheduled through berth."""
    berth.stop()  # SIGTERM; the cache is rebuilt from scratch either way
    try:
        late = cluster.create_node("late", cpu="3")
        cluster.create_node("small", cpu="1")
    finally:
        berth.start()
    binds = bind_successes(berth)

    cluster.create_pod("needs-late", cpu="2")  # no waiting on berth: /readyz must be enough

    assert cluster.wait_bound("needs-late") == late
    assert bind_successes(berth) == binds + 1


# --- an extender that is down ------------------------------------------------------------------


@pytest.fixture(scope="module")
def down_scheduler(
    control_plane: LocalControlPlane, e2e_dir: Path
) -> Iterator[tuple[KubeScheduler, int, int]]:
    """A kube-scheduler (schedulerName berth-e2e-down) with two extenders nothing listens for.

    ``managedResources`` picks which pods each is asked about (IsInterested): pods requesting
    example.com/ignorable meet the ``ignorable: true`` one, pods requesting example.com/required the
    other. ``ignoredByScheduler`` keeps NodeResourcesFit from requiring nodes to have them.
    """
    ignorable_port, required_port = free_port(), free_port()
    entries = [
        ExtenderEntry(
            f"http://127.0.0.1:{ignorable_port}",
            ignorable=True,
            managed_resources=[{"name": "example.com/ignorable", "ignoredByScheduler": True}],
        ),
        ExtenderEntry(
            f"http://127.0.0.1:{required_port}",
            bind_verb="",  # at most one extender may bind
            managed_resources=[{"name": "example.com/required", "ignoredByScheduler": True}],
        ),
    ]
    config = scheduler_config(control_plane.kubeconfig, entries, scheduler_name=DOWN_SCHEDULER)
    sched = KubeScheduler(
        control_plane.bin_dir, control_plane.kubeconfig, e2e_dir, config, "kube-scheduler-down"
    )
    sched.start()
    try:
        yield sched, ignorable_port, required_port
    finally:
        sched.stop()


def test_an_ignorable_extender_that_is_down_does_not_block(
    down_scheduler: tuple[KubeScheduler, int, int], cluster: Cluster
) -> None:
    node = cluster.create_node("n")
    cluster.create_pod("p", scheduler_name=DOWN_SCHEDULER, extended={"example.com/ignorable": "1"})
    # Filter, prioritize and bind all fail to connect; the default binder binds it.
    assert cluster.wait_bound("p") == node


def test_a_required_extender_that_is_down_blocks(
    down_scheduler: tuple[KubeScheduler, int, int], cluster: Cluster
) -> None:
    _, _, required_port = down_scheduler
    cluster.create_node("n")
    cluster.create_pod("p", scheduler_name=DOWN_SCHEDULER, extended={"example.com/required": "1"})
    message = cluster.wait_event("p", "FailedScheduling", f"127.0.0.1:{required_port}/filter")
    assert "connection refused" in message, message
    assert cluster.read_pod("p").spec.node_name is None
