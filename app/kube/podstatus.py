"""The scheduler's writes of pod status: the PodScheduled condition, nominatedNodeName, and the
DisruptionTarget condition of a preemption victim.

Each write is kube-scheduler's ``util.PatchPodStatus``: the new status is computed from the pod as
the informer last saw it, the difference is sent as a strategic-merge PATCH of ``pods/status``
(conditions merge by ``type``, so conditions other writers own are left alone), and nothing is sent
when nothing would change. Conflicts, 500/503 answers and refused connections are retried with
client-go's ``retry.DefaultBackoff`` (four tries, 10 ms growing fivefold).

Unlike kube-scheduler, the patch also carries the pod's ``metadata.uid``, which the API server
checks like a precondition: a pod deleted and re-created under the same name (a StatefulSet's) is
not given the old pod's condition; that write fails as NotFound, as for a pod that is just gone.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import orjson
import urllib3

from app import logs
from app.api.objects import Pod
from app.kube.client import KubeClient, KubeError
from app.kube.times import format_time

__all__ = [
    "CONDITION_DISRUPTION_TARGET",
    "CONDITION_POD_SCHEDULED",
    "PodStatusWriter",
    "status_patch",
    "update_pod_condition",
]

CONDITION_POD_SCHEDULED = "PodScheduled"
CONDITION_DISRUPTION_TARGET = "DisruptionTarget"

_STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_CONDITIONS = "conditions"
_NOMINATED = "nominatedNodeName"
# The fields podutil.UpdatePodCondition compares (observedGeneration alone is no change).
_COMPARED = ("status", "reason", "message", "lastProbeTime", "lastTransitionTime")
_BACKOFF_STEPS = 4
_BACKOFF_FIRST = 0.010
_BACKOFF_FACTOR = 5.0
_BACKOFF_JITTER = 0.1
_RETRIABLE_STATUSES = frozenset({409, 500, 503})
_HTTP_NOT_FOUND = 404
_HTTP_UNPROCESSABLE = 422

Status = dict[str, Any]


def _norm(value: Any) -> Any:
    """Go's ``omitempty`` view of a field: "" and a missing value are the same (null)."""
    return None if value == "" else value


def update_pod_condition(status: Mapping[str, Any], condition: dict[str, Any]) -> tuple[Status, bool]:
    """``podutil.UpdatePodCondition``: ``status`` with ``condition`` added or replacing the one of its
    type, and whether anything changed. The condition keeps the old ``lastTransitionTime`` when its
    ``status`` is the same (``condition`` is updated in place, as the Go function does)."""
    conditions = [c for c in status.get(_CONDITIONS) or [] if isinstance(c, Mapping)]
    for i, old in enumerate(conditions):
        if old.get("type") != condition["type"]:
            continue
        if condition.get("status") == old.get("status"):
            condition["lastTransitionTime"] = old.get("lastTransitionTime")
        changed = any(_norm(condition.get(k)) != _norm(old.get(k)) for k in _COMPARED)
        conditions[i] = condition
        return {**status, _CONDITIONS: conditions}, changed
    conditions.append(condition)
    return {**status, _CONDITIONS: conditions}, True


def _diff_map(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Changed and added keys with their new values, removed keys as null (a merge patch of flat maps)."""
    patch = {k: v for k, v in new.items() if _norm(v) != _norm(old.get(k))}
    patch.update({k: None for k, v in old.items() if k not in new and _norm(v) is not None})
    return patch


def _conditions_patch(old: list[Mapping[str, Any]], new: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The strategic-merge patch of a list merged by ``type``, as ``CreateTwoWayMergePatch`` writes it."""
    if not old:
        return {_CONDITIONS: list(new)} if new else {}
    old_by_type = {c.get("type"): c for c in old}
    new_types = {c.get("type") for c in new}
    changes: list[dict[str, Any]] = []
    for cond in new:
        before = old_by_type.get(cond.get("type"))
        if before is None:
            changes.append(dict(cond))
            continue
        diff = _diff_map(before, cond)
        if diff:
            changes.append({"type": cond.get("type"), **diff})
    changes.extend({"type": t, "$patch": "delete"} for t in old_by_type if t not in new_types)
    if not changes:
        return {}
    return {f"$setElementOrder/{_CONDITIONS}": [{"type": c.get("type")} for c in new], _CONDITIONS: changes}


def status_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any] | None:
    """The strategic-merge patch turning pod status ``old`` into ``new`` (``{"status": {...}}``), or
    None when they are the same. Scalar and map fields are replaced whole, conditions merge by type:
    what the scheduler changes."""
    patch = _diff_map(
        {k: v for k, v in old.items() if k != _CONDITIONS},
        {k: v for k, v in new.items() if k != _CONDITIONS},
    )
    patch.update(
        _conditions_patch(
            [c for c in old.get(_CONDITIONS) or [] if isinstance(c, Mapping)],
            [c for c in new.get(_CONDITIONS) or [] if isinstance(c, Mapping)],
        )
    )
    return {"status": patch} if patch else None


def _status_of(pod: Pod) -> Mapping[str, Any]:
    status = pod.raw.get("status")
    return status if isinstance(status, Mapping) else {}


def _generation(pod: Pod) -> int:
    meta = pod.raw.get("metadata")
    generation = meta.get("generation") if isinstance(meta, Mapping) else None
    return generation if isinstance(generation, int) else 0


def _rejects_uid(data: bytes) -> bool:
    """Whether a 422 answer is about ``metadata.uid``: the patch's UID is not the pod's (it was
    deleted and a namesake created)."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    details = body.get("details") if isinstance(body, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    return isinstance(causes, list) and any(
        isinstance(c, dict) and c.get("field") == "metadata.uid" for c in causes
    )


def _retriable(err: KubeError) -> bool:
    """``util.Retriable``: internal errors, unavailability, conflicts and refused connections."""
    if err.status in _RETRIABLE_STATUSES:
        return True
    return err.status == 0 and isinstance(err.__cause__, urllib3.exceptions.NewConnectionError)


class PodStatusWriter:
    """Writes the status fields kube-scheduler owns, through ``client``."""

    def __init__(
        self,
        client: KubeClient,
        *,
        clock: Callable[[], int] = time.time_ns,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.clock = clock
        self.sleep = sleep

    def condition(self, pod: Pod, condition_type: str, status: str, reason: str, message: str) -> Status:
        """A new condition of ``pod``; ``observedGeneration`` is the pod's generation
        (PodObservedGenerationTracking is GA), ``lastTransitionTime`` now."""
        condition: Status = {"type": condition_type}
        generation = _generation(pod)
        if generation:
            condition["observedGeneration"] = generation
        condition.update(
            status=status,
            lastProbeTime=None,
            lastTransitionTime=format_time(self.clock()),
        )
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        return condition

    def update_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        """kube-scheduler's ``updatePod`` after a failed attempt: PodScheduled=False with ``reason``
        (Unschedulable, SchedulerError) and ``message``, and ``status.nominatedNodeName`` set to
        ``nominated_node_name`` ("" clears it, None leaves it). No request when nothing changes;
        a failed write is logged (the next attempt writes again), never raised."""
        old = _status_of(pod)
        cond = self.condition(pod, CONDITION_POD_SCHEDULED, "False", reason, message)
        new, condition_changed = update_pod_condition(old, cond)
        nominated_changed = nominated_node_name is not None and nominated_node_name != (
            old.get(_NOMINATED) or ""
        )
        if not condition_changed and not nominated_changed:
            return
        if nominated_changed:
            if nominated_node_name:
                new[_NOMINATED] = nominated_node_name
            else:
                new.pop(_NOMINATED, None)
        logs.info(
            "Updating pod condition and nominated node name",
            3,
            pod=pod.key,
            conditionType=CONDITION_POD_SCHEDULED,
            conditionStatus="False",
            conditionReason=reason,
            nominatedNodeName=nominated_node_name or "",
        )
        try:
            self.patch_status(pod, new)
        except KubeError as err:
            logs.error("Error updating pod", pod=pod.key, err=err.message)

    def nominate_for_binding(self, pod: Pod, node_name: str) -> None:
        """The binding cycle's ``updatePod`` under NominatedNodeNameForExpectation: set
        ``status.nominatedNodeName`` to the node the pod is about to be bound to (no request when it
        already says so). A failed write is logged and binding goes on, as in kube-scheduler."""
        old = _status_of(pod)
        if (old.get(_NOMINATED) or "") == node_name:
            return
        logs.info(
            "Updating pod condition and nominated node name", 3, pod=pod.key, nominatedNodeName=node_name
        )
        try:
            self.patch_status(pod, {**old, _NOMINATED: node_name})
        except KubeError as err:
            logs.error(
                "Failed to update the nominated node name in the binding cycle",
                pod=pod.key,
                nominatedNodeName=node_name,
                err=err.message,
            )

    def set_condition(self, pod: Pod, condition_type: str, status: str, reason: str, message: str) -> bool:
        """Add or update one condition of ``pod``; False (and no request) when it is already so.
        Raises :class:`KubeError` when the write fails (404: the pod is gone)."""
        cond = self.condition(pod, condition_type, status, reason, message)
        new, changed = update_pod_condition(_status_of(pod), cond)
        return changed and self.patch_status(pod, new)

    def clear_nominated_node_name(self, pods: Sequence[Pod]) -> None:
        """``clearNominatedNodeName``: remove ``status.nominatedNodeName`` of every pod that has one.

        Every pod is tried; failures raise one :class:`KubeError` naming them all (with the status and
        reason of the first)."""
        failures: list[tuple[Pod, KubeError]] = []
        for pod in pods:
            old = _status_of(pod)
            if not old.get(_NOMINATED):
                continue
            new = {k: v for k, v in old.items() if k != _NOMINATED}
            try:
                self.patch_status(pod, new)
            except KubeError as err:
                failures.append((pod, err))
        if failures:
            first = failures[0][1]
            message = "; ".join(f"pod {p.key}: {e.message}" for p, e in failures)
            raise KubeError(first.status, f"clearing the nominated node name: {message}", first.reason)

    def patch_status(self, pod: Pod, new_status: Mapping[str, Any]) -> bool:
        """``util.PatchPodStatus``: PATCH the difference between ``pod``'s status and ``new_status``;
        False when there is none. Raises :class:`KubeError` once the retries are spent."""
        patch = status_patch(_status_of(pod), new_status)
        if patch is None:
            return False
        if pod.uid:
            patch["metadata"] = {"uid": pod.uid}
        path = f"/api/v1/namespaces/{quote(pod.namespace, safe='')}/pods/{quote(pod.name, safe='')}/status"
        delay = _BACKOFF_FIRST
        tries = 0
        while True:
            err = self._send_patch(pod, path, patch)
            if err is None:
                return True
            tries += 1
            if tries >= _BACKOFF_STEPS or not _retriable(err):
                raise err
            self.sleep(delay * (1 + _BACKOFF_JITTER * random.random()))
            delay *= _BACKOFF_FACTOR

    def _send_patch(self, pod: Pod, path: str, patch: Mapping[str, Any]) -> KubeError | None:
        try:
            status, data = self.client.request("PATCH", path, body=patch, content_type=_STRATEGIC_MERGE_PATCH)
        except KubeError as err:
            return err
        if 200 <= status < 300:
            return None
        if status == _HTTP_UNPROCESSABLE and _rejects_uid(data):
            return KubeError(
                _HTTP_NOT_FOUND, f"pod {pod.key} with UID {pod.uid} no longer exists", "NotFound"
            )
        return KubeError.from_response(status, data)
