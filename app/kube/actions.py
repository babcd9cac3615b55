"""What the scheduling framework does to the cluster through the API server (``berth run``).

:class:`ApiClusterActions` is preemption's ``Executor.PreemptPod`` and ``clearNominatedNodeName``;
:class:`ApiBinder` is the DefaultBinder's Binding. Both implement the framework's interfaces
(:class:`~app.framework.interfaces.ClusterActions`, :class:`~app.framework.interfaces.Binder`) and
turn API failures into Error statuses; the cache learns of the results from the informers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import orjson

from app import featuregates, logs, metrics
from app.api.objects import Pod
from app.framework.status import Code, Status
from app.kube.client import KubeClient, KubeError
from app.kube.events import TYPE_NORMAL, EventRecorder
from app.kube.podstatus import CONDITION_DISRUPTION_TARGET, PodStatusWriter

__all__ = ["REASON_PREEMPTION_BY_SCHEDULER", "ApiBinder", "ApiClusterActions"]

REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

_HTTP_NOT_FOUND = 404
_HTTP_CONFLICT = 409


def _pod_path(pod: Pod) -> str:
    return f"/api/v1/namespaces/{quote(pod.namespace, safe='')}/pods/{quote(pod.name, safe='')}"


class ApiClusterActions:
    """Preemption against the API server: mark the victim, delete it, tell with an event.

    ``recorder_for`` gives the recorder of the preemptor's profile (None: no event).
    """

    def __init__(
        self,
        client: KubeClient,
        recorder_for: Callable[[Pod], EventRecorder | None],
        status: PodStatusWriter,
    ) -> None:
        self.client = client
        self.recorder_for = recorder_for
        self.status = status

    def preempt_pod(self, preemptor: Pod, victim: Pod, node_name: str, plugin: str) -> Status | None:
        """``PreemptPod``: the DisruptionTarget condition, then DELETE, then a Preempted event.

        A victim already gone is success without an event, as in kube-scheduler. The DELETE carries
        the victim's UID as a precondition (kube-scheduler sends none) so that a namesake created
        meanwhile (a StatefulSet's replacement pod) is not deleted; its Conflict means the victim is
        gone. The DELETE uses the default grace period: a victim bound to a node only gets its
        ``deletionTimestamp`` until the kubelet stops it, an unbound one is removed at once.
        """
        message = f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod"
        try:
            self.status.set_condition(
                victim, CONDITION_DISRUPTION_TARGET, "True", REASON_PREEMPTION_BY_SCHEDULER, message
            )
        except KubeError as err:
            if err.status == _HTTP_NOT_FOUND:
                return self._already_deleted(preemptor, victim, node_name)
            logs.error(
                "Could not add DisruptionTarget condition due to preemption",
                preemptor=preemptor.key,
                victim=victim.key,
                err=err.message,
            )
            return Status(
                Code.ERROR, f"adding the DisruptionTarget condition to pod {victim.key}: {err.message}"
            )
        try:
            deleted = self._delete(victim)
        except KubeError as err:
            logs.error("Tried to preempted pod", pod=victim.key, preemptor=preemptor.key, err=err.message)
            return Status(Code.ERROR, f"deleting pod {victim.key}: {err.message}")
        if not deleted:
            return self._already_deleted(preemptor, victim, node_name)
        logs.info(
            "Preemptor Pod preempted victim Pod",
            2,
            preemptor=preemptor.key,
            victim=victim.key,
            node=node_name,
        )
        recorder = self.recorder_for(preemptor)
        if recorder is not None:
            recorder.eventf(
                victim,
                preemptor,
                TYPE_NORMAL,
                "Preempted",
                "Preempting",
                f"Preempted by pod {preemptor.uid} on node {node_name}",
            )
        return None

    def clear_nominated_node_name(self, pods: Sequence[Pod]) -> Status | None:
        """Remove the nominated node of ``pods``; an Error status names the pods that failed."""
        try:
            self.status.clear_nominated_node_name(pods)
        except KubeError as err:
            return Status(Code.ERROR, err.message)
        return None

    def _delete(self, victim: Pod) -> bool:
        """DELETE ``victim`` (this UID only); False when it is already gone."""
        body: dict[str, object] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if victim.uid:
            body["preconditions"] = {"uid": victim.uid}
        status, data = self.client.request("DELETE", _pod_path(victim), body=body)
        if 200 <= status < 300:
            return True
        if status == _HTTP_NOT_FOUND or (status == _HTTP_CONFLICT and victim.uid):
            return False
        raise KubeError.from_response(status, data)

    @staticmethod
    def _already_deleted(preemptor: Pod, victim: Pod, node_name: str) -> None:
        logs.info(
            "Victim Pod is already deleted", 2, preemptor=preemptor.key, victim=victim.key, node=node_name
        )


POD_BINDING_CALL = "pod_binding"  # kube's api_calls.PodBinding


class ApiBinder:
    """``DefaultBinder``: POST the pod's Binding (with its UID as precondition) to the API server."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        # With SchedulerAsyncAPICalls kube sends the Binding through its API dispatcher and counts it
        # as an asynchronous "pod_binding" call; berth's bindings always run on binding workers, off
        # the scheduling loop, and are counted the same way when the gate is on.
        self.count_async = featuregates.DEFAULT.enabled("SchedulerAsyncAPICalls")

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        """Bind ``pod`` to ``node_name``; on failure an Error status with the API server's message,
        as the DefaultBinder returns it (it becomes the FailedScheduling event's note)."""
        logs.info("Attempting to bind pod to node", 3, pod=pod.key, node=node_name)
        start = time.perf_counter()
        try:
            self.client.bind(pod.namespace, pod.name, pod.uid, node_name)
        except KubeError as err:
            if self.count_async:
                metrics.observe_async_call(POD_BINDING_CALL, "error", time.perf_counter() - start)
            return Status(Code.ERROR, self._explain(pod, err))
        if self.count_async:
            metrics.observe_async_call(POD_BINDING_CALL, "success", time.perf_counter() - start)
        return None

    def _explain(self, pod: Pod, err: KubeError) -> str:
        """The Binding's error, made plain when the pod this cycle scheduled no longer exists: the
        API server's UID-precondition Conflict is a storage error that does not say so."""
        if err.status != _HTTP_CONFLICT or not pod.uid:
            return err.message
        try:
            current = self.client.get_json(_pod_path(pod))
        except KubeError as read:
            return f"pod {pod.key} no longer exists" if read.status == _HTTP_NOT_FOUND else err.message
        meta = current.get("metadata")
        uid = meta.get("uid") if isinstance(meta, dict) else None
        if isinstance(uid, str) and uid != pod.uid:
            return f'pod {pod.key} was deleted and re-created (its UID is now "{uid}", not "{pod.uid}")'
        return err.message


# --- storage: VolumeBinding's PreBind writes ---------------------------------------------------------


class ApiVolumeWriter:
    """VolumeBinding's PreBind against the API server: PUT the PersistentVolume (its claimRef) or the
    claim (its selected-node annotation), as kube-scheduler's volume binder does with Update; the PV
    controller (kube-controller-manager) then completes the binding, which PreBind waits for."""

    completes_bindings = False

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        #: The pod informer's lookup by ``namespace/name`` (set once the informers exist); PreBind's
        #: wait ends when the pod is gone from it.
        self.lookup_pod: Callable[[str], Pod | None] | None = None

    def pod_exists(self, pod: Pod) -> bool:
        """Whether the pod informer still has the pod (by namespace and name, like the pod lister)."""
        return self.lookup_pod is None or self.lookup_pod(pod.key) is not None

    def update(self, kind: str, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """PUT ``raw``; the stored object, or :class:`KubeError` with the API server's message."""
        meta = raw.get("metadata") or {}
        name = quote(str(meta.get("name") or ""), safe="")
        if kind == "PersistentVolume":
            path = f"/api/v1/persistentvolumes/{name}"
        else:
            namespace = quote(str(meta.get("namespace") or "default"), safe="")
            path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"
        body = {**raw, "apiVersion": "v1", "kind": kind}
        status, data = self.client.request("PUT", path, body=body)
        if not 200 <= status < 300:
            raise KubeError.from_response(status, data)
        stored: dict[str, Any] = orjson.loads(data)
        logs.info("Updated volume binding object", 4, kind=kind, object=str(meta.get("name")))
        return stored
