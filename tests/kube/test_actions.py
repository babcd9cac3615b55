"""``app.kube.actions`` against the real control plane: preemption's evictions and the Binding.

No kubelet runs, so a deleted pod that is bound to a node keeps its ``deletionTimestamp`` (the
default 30 s grace period waits for a kubelet that never comes), while an unbound one is removed at
once: the API server deletes a pod no node runs without grace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s_client

from app.api.objects import Pod
from app.framework.status import Code
from app.kube.actions import ApiBinder, ApiClusterActions
from app.kube.client import KubeClient
from app.kube.events import EventBroadcaster, EventRecorder
from app.kube.podstatus import PodStatusWriter
from kube.apiwrites import get_pod, list_events, make_pod, raw_client  # noqa: F401  (the kc fixture)
from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube


@pytest.fixture
def broadcaster(kc: KubeClient) -> Iterator[EventBroadcaster]:
    b = EventBroadcaster(kc, reporting_instance="berth-test")
    b.start()
    try:
        yield b
    finally:
        b.shutdown()


@pytest.fixture
def actions(kc: KubeClient, broadcaster: EventBroadcaster) -> ApiClusterActions:
    recorders = {"default-scheduler": broadcaster.recorder("default-scheduler")}

    def recorder_for(pod: Pod) -> EventRecorder | None:
        return recorders.get(pod.scheduler_name)

    return ApiClusterActions(kc, recorder_for, PodStatusWriter(kc))


def events(kc: KubeClient, broadcaster: EventBroadcaster, namespace: str) -> list[dict[str, Any]]:
    broadcaster.shutdown()  # flush
    return list_events(kc, namespace)


def test_bound_victim_is_marked_deleted_and_told(
    kc: KubeClient, actions: ApiClusterActions, broadcaster: EventBroadcaster, namespace: str
) -> None:
    victim = make_pod(kc, namespace, "victim", node="n1")
    preemptor = make_pod(kc, namespace, "preemptor")
    assert actions.preempt_pod(preemptor, victim, "n1", "DefaultPreemption") is None
    after = get_pod(kc, victim)
    assert after is not None
    assert after.deletion_timestamp  # graceful: no kubelet finishes it
    [cond] = [c for c in after.raw["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
    )
    [event] = events(kc, broadcaster, namespace)
    assert (event["type"], event["reason"], event["action"]) == ("Normal", "Preempted", "Preempting")
    assert event["note"] == f"Preempted by pod {preemptor.uid} on node n1"
    assert (event["regarding"]["name"], event["regarding"]["uid"]) == ("victim", victim.uid)
    assert (event["related"]["name"], event["related"]["uid"]) == ("preemptor", preemptor.uid)
    assert event["reportingController"] == "default-scheduler"


def test_unbound_victim_is_removed_at_once(
    kc: KubeClient, actions: ApiClusterActions, namespace: str
) -> None:
    victim = make_pod(kc, namespace, "victim")
    preemptor = make_pod(kc, namespace, "preemptor")
    assert actions.preempt_pod(preemptor, victim, "n1", "DefaultPreemption") is None
    assert get_pod(kc, victim) is None


def test_a_victim_already_gone_is_success_without_an_event(
    kc: KubeClient, actions: ApiClusterActions, broadcaster: EventBroadcaster, namespace: str
) -> None:
    victim = make_pod(kc, namespace, "victim", node="n1")
    preemptor = make_pod(kc, namespace, "preemptor")
    kc.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/victim", body={"gracePeriodSeconds": 0})
    assert actions.preempt_pod(preemptor, victim, "n1", "DefaultPreemption") is None
    # Deleted and re-created under the same name: the namesake is not the victim and is left alone.
    namesake = make_pod(kc, namespace, "victim", node="n1")
    assert actions.preempt_pod(preemptor, victim, "n1", "DefaultPreemption") is None
    after = get_pod(kc, namesake)
    assert after is not None
    assert after.deletion_timestamp is None
    assert "conditions" not in after.raw["status"]
    assert events(kc, broadcaster, namespace) == []


def test_api_failures_are_error_statuses(
    control_plane: LocalControlPlane, kc: KubeClient, namespace: str
) -> None:
    victim = make_pod(kc, namespace, "victim", node="n1")
    preemptor = make_pod(kc, namespace, "preemptor", nominated="n1")
    # A client without credentials: RBAC refuses the anonymous user's status patch.
    config = k8s_client.Configuration()
    config.host = control_plane.server
    config.ssl_ca_cert = str(control_plane.ca_file)
    anonymous = KubeClient(k8s_client.ApiClient(config))
    denied = ApiClusterActions(anonymous, lambda pod: None, PodStatusWriter(anonymous))
    status = denied.preempt_pod(preemptor, victim, "n1", "DefaultPreemption")
    assert status is not None and status.code is Code.ERROR
    assert status.message().startswith(f"adding the DisruptionTarget condition to pod {namespace}/victim: ")
    cleared = denied.clear_nominated_node_name([preemptor])
    assert cleared is not None and cleared.code is Code.ERROR
    assert f"pod {namespace}/preemptor: " in cleared.message()
    assert get_pod(kc, victim) is not None


def test_nominations_are_cleared(kc: KubeClient, actions: ApiClusterActions, namespace: str) -> None:
    nominated = make_pod(kc, namespace, "low", nominated="n1")
    assert nominated.nominated_node_name == "n1"
    assert actions.clear_nominated_node_name([nominated]) is None
    after = get_pod(kc, nominated)
    assert after is not None and after.nominated_node_name == ""


def test_binder_binds_the_pod(kc: KubeClient, namespace: str) -> None:
    pod = make_pod(kc, namespace, "p")
    assert ApiBinder(kc).bind(pod, "n1") is None
    after = get_pod(kc, pod)
    assert after is not None and after.node_name == "n1"


def test_binder_failures_say_why(kc: KubeClient, namespace: str) -> None:
    binder = ApiBinder(kc)
    pod = make_pod(kc, namespace, "p")
    stale = dataclasses.replace(pod, uid="0b7a9f3e-0000-4000-8000-000000000000")
    status = binder.bind(stale, "n1")
    assert status is not None and status.code is Code.ERROR
    assert status.message() == (
        f'pod {namespace}/p was deleted and re-created (its UID is now "{pod.uid}", not "{stale.uid}")'
    )
    assert binder.bind(pod, "n1") is None
    status = binder.bind(pod, "n2")
    assert status is not None
    assert (
        status.message()
        == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    )
    missing = dataclasses.replace(pod, name="missing")
    status = binder.bind(missing, "n1")
    assert status is not None and status.message() == 'pods "missing" not found'
