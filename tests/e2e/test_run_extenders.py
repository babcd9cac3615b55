"""``berth run`` calling extenders on the real control plane: ``berth serve`` as its extender (filter,
prioritize and bind; then preempt, narrowing the preemption candidates), and failing extenders (slow,
answering 500, down and ignorable, down and required, rejecting every node) side by side with a
stock kube-scheduler given the same extenders, whose behaviour and messages berth must repeat.

The failing extenders manage one extended resource each, marked ``ignoredByScheduler`` (TopoLVM's
pattern): only a pod requesting it is sent to that extender, and NodeResourcesFit ignores it, so the
nodes, which have none, still fit.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.cluster import PREFERRED_LABEL, Cluster
from e2e.stack import BerthServer, ExtenderEntry, KubeScheduler, scheduler_config
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from e2e.test_preemption import (  # the fixtures kubelet and priorities are used by name
    AVOID_ANNOTATION,
    FakeKubelet,
    Priorities,
    create_pod,
    kubelet,
    preempt_successes,
    priorities,
    wait_berth_knows_nodes,
)
from extenderstub import StubExtender, stub_extender, unused_url

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube
__all__ = ["kubelet", "priorities"]  # fixtures shared with test_preemption.py

KUBE_NAME = "kube-with-extenders"


def _berth_run(
    control_plane: LocalControlPlane, workdir: Path, namespace: str, name: str, entries: list[ExtenderEntry]
) -> BerthScheduler:
    extenders = json.dumps([e.to_dict() for e in entries])
    return BerthScheduler.on(
        control_plane,
        workdir,
        namespace=namespace,
        lease_name=f"{name}-{uuid.uuid4().hex[:6]}",
        name=name,
        leader_elect=False,
        extra_config=f"extenders: {extenders}\n",
    )


def test_berth_serve_as_the_extender_of_berth_run(
    control_plane: LocalControlPlane, berth: BerthServer, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.create_node("plain", cpu="4")
    preferred = cluster.create_node("fast", cpu="4", labels={PREFERRED_LABEL: "true"})
    verbs = ("filter", "prioritize", "bind")
    before = {
        v: berth.metric("berth_extender_requests_total", {"verb": v, "result": "success"}) for v in verbs
    }
    # berth serve's profile prefers the labelled node (PreferLabel); berth run's own does not.
    entry = ExtenderEntry(berth.url, weight=10)
    run = _berth_run(control_plane, tmp_path, cluster.namespace, "berth-run-serve", [entry]).start()
    try:
        pods = [cluster.create_pod(f"p{i}", cpu="100m", scheduler_name=SCHEDULER_NAME) for i in range(3)]
        assert [cluster.wait_bound(p) for p in pods] == [preferred] * 3
        for p in pods:
            cluster.wait_event(
                p, "Scheduled", f"Successfully assigned {cluster.namespace}/{p} to {preferred}"
            )
    finally:
        run.stop()
    after = {
        v: berth.metric("berth_extender_requests_total", {"verb": v, "result": "success"}) for v in verbs
    }
    # Each pod: one /filter and one /prioritize (two nodes fit), and the binding by berth serve.
    assert {v: after[v] - before[v] for v in verbs} == {"filter": 3, "prioritize": 3, "bind": 3}


def _reject_all(body: dict[str, Any]) -> tuple[int, Any]:
    """Fails the first node it is asked about as Unschedulable, the others as unresolvable."""
    first, *rest = sorted(body["NodeNames"])
    return 200, {
        "NodeNames": [],
        "FailedNodes": {first: "no GPU here"},
        "FailedAndUnresolvableNodes": dict.fromkeys(rest, "zone closed"),
    }


@pytest.fixture
def failing() -> Iterator[tuple[StubExtender, StubExtender, StubExtender]]:
    """A slow extender (3s per answer), one answering 500 and one rejecting every node."""
    with (
        stub_extender({"filter": lambda body: (200, {"NodeNames": body["NodeNames"]})}, delay=3.0) as slow,
        stub_extender({"filter": lambda body: (500, {"Error": "internal"})}) as broken,
        stub_extender({"filter": _reject_all}) as rejecting,
    ):
        yield slow, broken, rejecting


def _managing(url: str, resource: str, **kw: object) -> ExtenderEntry:
    entry = ExtenderEntry(url, filter_verb="filter", prioritize_verb="", bind_verb="", **kw)  # type: ignore[arg-type]
    entry.managed_resources = [{"name": resource, "ignoredByScheduler": True}]
    return entry


def test_failing_extenders_behave_and_read_as_in_kube_scheduler(
    control_plane: LocalControlPlane,
    cluster: Cluster,
    tmp_path: Path,
    failing: tuple[StubExtender, StubExtender, StubExtender],
) -> None:
    slow, broken, rejecting = failing
    down_optional, down_required = unused_url(), unused_url()
    entries = [
        _managing(slow.url, "example.com/slow", http_timeout="1s"),
        _managing(broken.url, "example.com/broken"),
        _managing(down_optional, "example.com/optional", ignorable=True),
        _managing(down_required, "example.com/required"),
        _managing(rejecting.url, "example.com/rejected"),
    ]
    cluster.create_node("a", cpu="4")
    cluster.create_node("b", cpu="4")
    kube_config = scheduler_config(control_plane.kubeconfig, entries, scheduler_name=KUBE_NAME)
    kube = KubeScheduler(
        control_plane.bin_dir, control_plane.kubeconfig, tmp_path, kube_config, "kube-scheduler-extenders"
    ).start()
    run = _berth_run(control_plane, tmp_path, cluster.namespace, "berth-run-extenders", entries).start()
    expected = {
        "slow": f'Post "{slow.url}/filter": context deadline exceeded '
        "(Client.Timeout exceeded while awaiting headers)",
        "broken": f"failed filter with extender at URL {broken.url}/filter, code 500",
        "required": f'Post "{down_required}/filter": dial tcp 127.0.0.1:{down_required.rsplit(":", 1)[1]}: '
        "connect: connection refused",
    }
    try:
        for who, scheduler in (("kube", KUBE_NAME), ("berth", SCHEDULER_NAME)):
            for case in (*expected, "optional", "rejected"):
                cluster.create_pod(
                    f"{who}-{case}", scheduler_name=scheduler, extended={f"example.com/{case}": "1"}
                )
        for who in ("kube", "berth"):
            # The ignorable extender that is down is skipped: the pod is scheduled without it.
            assert cluster.wait_bound(f"{who}-optional") in cluster.nodes
            for case, message in expected.items():
                got = cluster.wait_event(
                    f"{who}-{case}", "FailedScheduling", "extender" if case == "broken" else "Post"
                )
                assert got == message, (who, case)
                pod = cluster.read_pod(f"{who}-{case}")
                assert pod.spec.node_name is None
                condition = next(c for c in pod.status.conditions or [] if c.type == "PodScheduled")
                assert (condition.reason, condition.message) == ("SchedulerError", message), (who, case)
        # The extender's FailedNodes and FailedAndUnresolvableNodes in the FitError, and preemption's
        # verdict after it (it skips unresolvable nodes), worded as kube-scheduler words them.
        fit_errors = {
            who: cluster.wait_event(f"{who}-rejected", "FailedScheduling", "no GPU here")
            for who in ("kube", "berth")
        }
        assert fit_errors["berth"] == fit_errors["kube"]
        assert "1 no GPU here, 1 zone closed" in fit_errors["berth"]
    finally:
        run.stop()
        kube.stop()
    # The slow extender was asked, and each call was cut at the 1s httpTimeout (not its 3s answer).
    assert "filter" in slow.verbs()


def test_berth_run_asks_berth_serve_which_preemption_candidates_it_keeps(
    control_plane: LocalControlPlane,
    berth: BerthServer,
    cluster: Cluster,
    kubelet: FakeKubelet,
    priorities: Priorities,
    tmp_path: Path,
) -> None:
    """test_preemption.py's stock-scheduler scenario with ``berth run`` as the scheduler: two full
    2-cpu nodes; berth run's own dry run prefers evicting on ``fast`` (its victim has the lower
    priority), but its extender, berth serve, rejects ``fast`` for the annotated pod (PreferLabel)
    and its /preempt drops that candidate, so the ``plain`` node's pod is evicted instead."""
    fast = cluster.create_node("fast", cpu="2", labels={PREFERRED_LABEL: "true"})
    plain = cluster.create_node("plain", cpu="2")
    create_pod(cluster, "fast-low", cpu="2", priority_class=priorities.low, node=fast)
    create_pod(cluster, "plain-mid", cpu="2", priority_class=priorities.mid, node=plain)
    wait_berth_knows_nodes(berth, [fast, plain])
    asked = preempt_successes(berth)
    entry = ExtenderEntry(berth.url, preempt_verb="preempt")
    run = _berth_run(control_plane, tmp_path, cluster.namespace, "berth-run-preempt", [entry]).start()
    try:
        create_pod(
            cluster,
            "shy",
            cpu="1",
            priority_class=priorities.high,
            annotations={AVOID_ANNOTATION: "true"},
        )
        assert cluster.wait_bound("shy") == plain
    finally:
        run.stop()
    assert kubelet.nominations("shy") == [plain]
    assert preempt_successes(berth) >= asked + 1
    kubelet.wait_deleted("plain-mid")
    untouched = cluster.read_pod("fast-low")
    assert untouched.metadata.deletion_timestamp is None
