"""Diagnosis and FitError, with kube-scheduler's exact message (``framework/types.go``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.framework.status import NO_NODE_AVAILABLE_MSG, Code, NodeToStatus, Status, fit_error_message

__all__ = ["ERR_NO_NODES_AVAILABLE", "NO_NODE_AVAILABLE_MSG", "Diagnosis", "FitError", "NodeToStatus"]


ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass(slots=True)
class Diagnosis:
    """Why a pod did not fit: per-node statuses and the plugins that rejected it."""

    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    #: The nodes a PreFilterResult narrowed the search to (None: every node); the others carry the
    #: absent-node status. Not in kube-scheduler's Diagnosis: explanations of scheduled pods need it.
    pre_filter_nodes: frozenset[str] | None = None

    def add_plugin_status(self, status: Status) -> None:
        """Record the rejecting plugin (``Diagnosis.AddPluginStatus``)."""
        if not status.plugin:
            return
        if status.code is Code.PENDING:
            self.pending_plugins.add(status.plugin)
        elif status.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
            self.unschedulable_plugins.add(status.plugin)


class FitError(Exception):
    """No node fits the pod."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__()

    def __str__(self) -> str:
        d = self.diagnosis
        return fit_error_message(self.num_all_nodes, d.node_to_status, d.pre_filter_msg, d.post_filter_msg)
