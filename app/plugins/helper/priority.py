"""``corev1helpers.PodPriority``."""

from __future__ import annotations

from app.api.objects import Pod


def pod_priority(pod: Pod) -> int:
    """The pod's ``spec.priority``, 0 when unset (no admission controller resolved it)."""
    priority = pod.priority
    return 0 if priority is None else priority
