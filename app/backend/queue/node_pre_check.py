"""The node pre-check of the QueueingHints-off queue (kube-scheduler v1.36.3 ``eventhandlers.go``).

With SchedulerQueueingHints off (kube-scheduler's default at ``--emulated-version=1.33``) a Node/Add
or Node/Update event does not move every unschedulable pod registered for it: kube-scheduler first
runs ``preCheckForNode`` on each, and only pods that pass it are considered. The check is
``AdmissionCheck`` (the first failure of resources fit, required node affinity and
``spec.nodeSelector``, node name, host ports, in that order) and then the node's NoSchedule and
NoExecute taints against the pod's tolerations. It is evaluated against the node's cache entry
with the pods already on it, and takes no preemption into account (kube's own note: a pod that
fails it may still get in by preempting; it is retried after the unschedulable timeout anyway).

With the gate on, QueueingHints replace it and :func:`pre_check_for_node` returns None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.api.objects import Pod
from app.framework.types import NodeInfo
from app.plugins.nodeaffinity import node_affinity
from app.plugins.nodename import node_name
from app.plugins.nodeports import node_ports
from app.plugins.noderesources.fit import InsufficientResource, fits
from app.plugins.tainttoleration.taint_toleration import has_untolerated_taint

__all__ = ["AdmissionResult", "admission_check", "pre_check_for_node"]


@dataclass(frozen=True, slots=True)
class AdmissionResult:
    """Why a pod cannot be admitted on a node (``AdmissionResult``): a plugin's name and reason,
    or, for resources, the resource the node lacks."""

    name: str = ""
    reason: str = ""
    insufficient_resource: InsufficientResource | None = None


def admission_check(pod: Pod, node_info: NodeInfo, include_all_failures: bool) -> list[AdmissionResult]:
    """``AdmissionCheck``: the failures of NodeResourcesFit (no DRA resolver, as kube passes none),
    NodeAffinity, NodeName and NodePorts for ``pod`` on ``node_info``; only the first kind of
    failure unless ``include_all_failures`` (every insufficient resource counts as one kind)."""
    results = [AdmissionResult(insufficient_resource=r) for r in fits(pod, node_info)]
    if results and not include_all_failures:
        return results
    node = node_info.node
    checks = (
        (
            node is not None and node_affinity.pod_matches_node_selector_and_affinity(pod, node),
            node_affinity.NAME,
            node_affinity.ERR_REASON_POD,
        ),
        (node_name.fits(pod, node_info), node_name.NodeName.name, node_name.ERR_REASON),
        (node_ports.fits(pod, node_info), node_ports.NAME, node_ports.ERR_REASON),
    )
    for passed, name, reason in checks:
        if not passed:
            results.append(AdmissionResult(name, reason))
            if not include_all_failures:
                return results
    return results


def pre_check_for_node(node_info: NodeInfo, queueing_hints_enabled: bool) -> Callable[[Pod], bool] | None:
    """``preCheckForNode``: None with QueueingHints (no pre-check), else a check that a pod passes
    :func:`admission_check` on ``node_info`` and tolerates its NoSchedule/NoExecute taints."""
    if queueing_hints_enabled:
        return None
    node = node_info.node
    taints = node.taints if node is not None else []

    def check(pod: Pod) -> bool:
        if admission_check(pod, node_info, False):
            return False
        return not has_untolerated_taint(taints, pod.tolerations)

    return check
