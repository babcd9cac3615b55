"""``app.kube.podstatus``: what a pending pod's status says after berth failed to schedule it."""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pytest

from app.api.objects import Pod, parse_pod
from app.kube.client import KubeClient, KubeError
from app.kube.podstatus import PodStatusWriter, status_patch
from app.kube.times import format_time
from kube.apiwrites import get_pod, make_pod
from kube.controlplane import LocalControlPlane

T0 = 1_700_000_000 * 1_000_000_000
MINUTE = 60 * 1_000_000_000


class CountingClient(KubeClient):
    """A KubeClient that remembers the requests it sent."""

    sent: list[tuple[str, str, Any]]

    def request(
        self,
        method: str,
        path: str,
        *,
        body: object | None = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = 30,
        content_type: str | None = None,
    ) -> tuple[int, bytes]:
        self.sent.append((method, path, body))
        return super().request(
            method, path, body=body, params=params, timeout=timeout, content_type=content_type
        )


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def kc(control_plane: LocalControlPlane) -> Iterator[CountingClient]:
    client = CountingClient.from_config(str(control_plane.kubeconfig))
    client.sent = []
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def writer(kc: CountingClient, clock: Clock) -> PodStatusWriter:
    return PodStatusWriter(kc, clock=clock)


def reread(kc: KubeClient, pod: Pod) -> Pod:
    found = get_pod(kc, pod)
    assert found is not None
    return found


def condition(pod: Pod, type_: str) -> dict[str, Any]:
    [found] = [c for c in pod.raw["status"].get("conditions", []) if c["type"] == type_]
    return dict(found)


@pytest.mark.kube
def test_unschedulable_condition_is_written(
    kc: CountingClient, writer: PodStatusWriter, namespace: str
) -> None:
    pod = make_pod(kc, namespace, "p")
    kc.sent.clear()
    writer.update_pod_scheduled_condition(pod, reason="Unschedulable", message="0/3 nodes are available")
    assert [(m, p) for m, p, _ in kc.sent] == [("PATCH", f"/api/v1/namespaces/{namespace}/pods/p/status")]
    after = reread(kc, pod)
    assert condition(after, "PodScheduled") == {
        "type": "PodScheduled",
        "observedGeneration": 1,
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": format_time(T0),
        "reason": "Unschedulable",
        "message": "0/3 nodes are available",
    }
    assert "nominatedNodeName" not in after.raw["status"]


@pytest.mark.kube
def test_transition_time_changes_only_with_the_status(
    kc: CountingClient, writer: PodStatusWriter, clock: Clock, namespace: str
) -> None:
    pod = make_pod(kc, namespace, "p")
    writer.update_pod_scheduled_condition(pod, reason="Unschedulable", message="first")
    clock.now += MINUTE
    pod = reread(kc, pod)
    writer.update_pod_scheduled_condition(pod, reason="SchedulerError", message="second")
    pod = reread(kc, pod)
    cond = condition(pod, "PodScheduled")
    assert (cond["reason"], cond["message"]) == ("SchedulerError", "second")
    assert cond["lastTransitionTime"] == format_time(T0)
    clock.now += MINUTE
    assert writer.set_condition(pod, "PodScheduled", "True", "", "")
    assert condition(reread(kc, pod), "PodScheduled")["lastTransitionTime"] == format_time(T0 + 2 * MINUTE)


@pytest.mark.kube
def test_an_update_that_changes_nothing_sends_nothing(
    kc: CountingClient, writer: PodStatusWriter, clock: Clock, namespace: str
) -> None:
    pod = make_pod(kc, namespace, "p")
    writer.update_pod_scheduled_condition(
        pod, reason="Unschedulable", message="no fit", nominated_node_name="n1"
    )
    pod = reread(kc, pod)
    clock.now += MINUTE  # a later attempt with the same outcome
    kc.sent.clear()
    writer.update_pod_scheduled_condition(pod, reason="Unschedulable", message="no fit")
    writer.update_pod_scheduled_condition(
        pod, reason="Unschedulable", message="no fit", nominated_node_name="n1"
    )
    assert not writer.set_condition(pod, "PodScheduled", "False", "Unschedulable", "no fit")
    writer.clear_nominated_node_name([make_pod(kc, namespace, "never-nominated")])
    assert [m for m, _, _ in kc.sent] == ["POST"]  # only the make_pod above


@pytest.mark.kube
def test_nominated_node_name_is_set_then_cleared(
    kc: CountingClient, writer: PodStatusWriter, namespace: str
) -> None:
    pod = make_pod(kc, namespace, "p")
    writer.update_pod_scheduled_condition(
        pod, reason="Unschedulable", message="preempting", nominated_node_name="n1"
    )
    pod = reread(kc, pod)
    assert pod.nominated_node_name == "n1"
    kc.sent.clear()
    # Same condition, nomination cleared: only that field is patched ("" clears, None keeps).
    writer.update_pod_scheduled_condition(
        pod, reason="Unschedulable", message="preempting", nominated_node_name=""
    )
    assert kc.sent[0][2] == {"status": {"nominatedNodeName": None}, "metadata": {"uid": pod.uid}}
    assert reread(kc, pod).nominated_node_name == ""
    writer.update_pod_scheduled_condition(
        pod, reason="Unschedulable", message="again", nominated_node_name="n2"
    )
    pod = reread(kc, pod)
    assert pod.nominated_node_name == "n2"
    writer.clear_nominated_node_name([pod])
    pod = reread(kc, pod)
    assert pod.nominated_node_name == ""
    assert condition(pod, "PodScheduled")["message"] == "again"


@pytest.mark.kube
def test_conditions_of_other_writers_are_kept(
    kc: CountingClient, writer: PodStatusWriter, namespace: str
) -> None:
    pod = make_pod(kc, namespace, "p")
    assert writer.set_condition(pod, "example.com/Gate", "True", "Checked", "by someone else")
    stale = pod  # berth's view does not have that condition yet
    writer.update_pod_scheduled_condition(stale, reason="Unschedulable", message="no fit")
    after = reread(kc, pod)
    assert sorted(c["type"] for c in after.raw["status"]["conditions"]) == [
        "PodScheduled",
        "example.com/Gate",
    ]


@pytest.mark.kube
def test_a_recreated_namesake_is_not_written(
    kc: CountingClient, writer: PodStatusWriter, namespace: str
) -> None:
    old = make_pod(kc, namespace, "p")
    kc.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/p")
    new = make_pod(kc, namespace, "p")
    with pytest.raises(KubeError) as err:
        writer.set_condition(old, "DisruptionTarget", "True", "PreemptionByScheduler", "x")
    assert err.value.status == 404
    assert err.value.message == f"pod {namespace}/p with UID {old.uid} no longer exists"
    assert "conditions" not in reread(kc, new).raw["status"]


@pytest.mark.kube
def test_failures_are_logged_or_raised_clearly(
    kc: CountingClient, writer: PodStatusWriter, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    nominated = make_pod(kc, namespace, "nominated")
    writer.update_pod_scheduled_condition(
        nominated, reason="Unschedulable", message="m", nominated_node_name="n1"
    )
    nominated = reread(kc, nominated)
    gone = make_pod(kc, namespace, "gone")
    kc.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/gone")
    with caplog.at_level(logging.ERROR, logger="berth"):
        writer.update_pod_scheduled_condition(gone, reason="Unschedulable", message="no fit")
    assert [r.getMessage() for r in caplog.records] == ["Error updating pod"]
    gone_nominated = dataclasses.replace(gone, raw={**gone.raw, "status": {"nominatedNodeName": "n1"}})
    with pytest.raises(KubeError) as err:
        writer.clear_nominated_node_name([gone_nominated, nominated])
    assert err.value.message == (
        f'clearing the nominated node name: pod {namespace}/gone: pods "gone" not found'
    )
    assert reread(kc, nominated).nominated_node_name == ""  # the others are still cleared


class ScriptedClient:
    """Answers PATCHes with the given statuses, in order."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.calls = 0

    def request(self, method: str, path: str, **kw: Any) -> tuple[int, bytes]:
        self.calls += 1
        status = self.statuses.pop(0)
        return status, orjson.dumps({"kind": "Status", "code": status, "message": f"answer {status}"})


def scripted_pod() -> Pod:
    return parse_pod({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"containers": []}})


@pytest.mark.parametrize(
    ("statuses", "calls", "error"),
    [
        ([409, 503, 200], 3, None),
        ([500, 500, 500, 500], 4, "answer 500"),  # retry.DefaultBackoff: four tries
        ([422], 1, "answer 422"),  # not retriable
    ],
)
def test_conflicts_and_server_errors_are_retried(statuses: list[int], calls: int, error: str | None) -> None:
    client = ScriptedClient(*statuses)
    sleeps: list[float] = []
    writer = PodStatusWriter(client, sleep=sleeps.append)  # type: ignore[arg-type]
    if error is None:
        assert writer.set_condition(scripted_pod(), "PodScheduled", "False", "Unschedulable", "m")
    else:
        with pytest.raises(KubeError, match=error):
            writer.set_condition(scripted_pod(), "PodScheduled", "False", "Unschedulable", "m")
    assert client.calls == calls
    assert all(b > 4 * a for a, b in itertools.pairwise(sleeps))  # backing off


# What strategicpatch.CreateTwoWayMergePatch returns for the same changes (from a Go run against
# k8s.io/apimachinery v0.36.3): berth sends the patches kube-scheduler sends.
COND = {
    "type": "PodScheduled",
    "observedGeneration": 1,
    "status": "False",
    "lastProbeTime": None,
    "lastTransitionTime": "2023-11-14T22:13:20Z",
    "reason": "Unschedulable",
    "message": "m1",
}
BASE = {"phase": "Pending", "qosClass": "BestEffort"}
WITH_COND = {**BASE, "conditions": [COND]}
DISRUPTION = {
    "type": "DisruptionTarget",
    "status": "True",
    "lastProbeTime": None,
    "lastTransitionTime": "2023-11-14T22:13:20Z",
    "reason": "PreemptionByScheduler",
    "message": "x",
}


@pytest.mark.parametrize(
    ("old", "new", "patch"),
    [
        (BASE, WITH_COND, {"conditions": [COND]}),
        (
            WITH_COND,
            {**BASE, "conditions": [{**COND, "message": "m2"}]},
            {
                "$setElementOrder/conditions": [{"type": "PodScheduled"}],
                "conditions": [{"type": "PodScheduled", "message": "m2"}],
            },
        ),
        (WITH_COND, {**WITH_COND, "nominatedNodeName": "n1"}, {"nominatedNodeName": "n1"}),
        ({**WITH_COND, "nominatedNodeName": "n1"}, WITH_COND, {"nominatedNodeName": None}),
        (
            WITH_COND,
            {**BASE, "conditions": [COND, DISRUPTION]},
            {
                "$setElementOrder/conditions": [{"type": "PodScheduled"}, {"type": "DisruptionTarget"}],
                "conditions": [DISRUPTION],
            },
        ),
    ],
)
def test_status_patch_is_kubes_strategic_merge_patch(
    old: dict[str, Any], new: dict[str, Any], patch: dict[str, Any]
) -> None:
    assert status_patch(old, new) == {"status": patch}


def test_identical_statuses_need_no_patch() -> None:
    # A condition's empty reason is the same as none (Go's omitempty).
    assert status_patch(WITH_COND, {**BASE, "conditions": [COND]}) is None
    assert (
        status_patch(
            {"conditions": [{**COND, "reason": ""}]},
            {"conditions": [{k: v for k, v in COND.items() if k != "reason"}]},
        )
        is None
    )


@pytest.mark.kube
def test_nomination_before_prebind_is_written_once(
    kc: CountingClient, writer: PodStatusWriter, namespace: str
) -> None:
    # NominatedNodeNameForExpectation: the binding cycle tells other components where the pod goes.
    pod = make_pod(kc, namespace, "p")
    kc.sent.clear()
    writer.nominate_for_binding(pod, "n1")
    assert [(m, p) for m, p, _ in kc.sent] == [("PATCH", f"/api/v1/namespaces/{namespace}/pods/p/status")]
    pod = reread(kc, pod)
    assert pod.raw["status"]["nominatedNodeName"] == "n1"
    kc.sent.clear()
    writer.nominate_for_binding(pod, "n1")
    assert kc.sent == []
