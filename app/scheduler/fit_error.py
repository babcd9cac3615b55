"""Diagnosis and FitError, with kube-scheduler's exact message (``framework/types.go``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.framework.status import Code, Status

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass(slots=True)
class NodeToStatus:
    """Statuses of nodes that failed, plus the status assumed for nodes not listed."""

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status = field(default_factory=lambda: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))

    def __len__(self) -> int:
        return len(self.statuses)


@dataclass(slots=True)
class Diagnosis:
    """Why a pod did not fit: per-node statuses and the plugins that rejected it."""

    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

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
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            histogram: dict[str, int] = {}
            for status in d.node_to_status.statuses.values():
                for reason in status.reasons:
                    histogram[reason] = histogram.get(reason, 0) + 1
            missing = self.num_all_nodes - len(d.node_to_status)
            if missing > 0:
                for reason in d.node_to_status.absent.reasons:
                    histogram[reason] = histogram.get(reason, 0) + missing
            # Go sorts the formatted "<count> <reason>" strings, so "10 x" sorts before "2 y".
            parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
            if parts:
                msg += f" {', '.join(parts)}."
        if d.post_filter_msg:
            msg += f" {d.post_filter_msg}"
        return msg
