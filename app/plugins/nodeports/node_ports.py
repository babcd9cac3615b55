"""NodePorts (``plugins/nodeports/node_ports.go``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from app.api.objects import Pod
from app.framework.cycle_state import CycleState, StateData
from app.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    as_pods,
    node_actions,
)
from app.framework.interfaces import EnqueueExtensions, FilterPlugin, PreFilterPlugin, PreFilterResult
from app.framework.status import Status, error, skip, unschedulable
from app.framework.types import HostPortInfo, NodeInfo

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

HostPort = tuple[str, str, int]  # (hostIP, protocol, hostPort)


def get_host_ports(pod: Pod) -> list[HostPort]:
    """The pod's host ports (``util.GetHostPorts``) as (hostIP, protocol, hostPort) tuples."""
    return [(p.host_ip, p.protocol, p.host_port) for p in pod.host_ports()]


def fits_ports(want: Sequence[HostPort], used: HostPortInfo) -> bool:
    """``fitsPorts``: no wanted port conflicts with a used one."""
    return not any(used.conflicts(ip, protocol, port) for ip, protocol, port in want)


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """``nodeports.Fits``: whether the pod's host ports are free on the node."""
    return fits_ports(get_host_ports(pod), node_info.used_ports)


class _PreFilterState(StateData):
    """The pod's wanted host ports (immutable, so clone returns self)."""

    __slots__ = ("ports",)

    def __init__(self, ports: tuple[HostPort, ...]) -> None:
        self.ports = ports


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    """Rejects nodes where a host port the pod asks for is already in use."""

    name: ClassVar[str] = NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Skip for pods without host ports; otherwise store them for Filter."""
        ports = get_host_ports(pod)
        if not ports:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(tuple(ports)))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Unschedulable (resolvable by preemption) when a wanted port is taken."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        used = node_info.used_ports
        if not used.ports:
            return None
        for ip, protocol, port in s.ports:
            if used.conflicts(ip, protocol, port):
                return unschedulable(ERR_REASON)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod deleted (host ports are immutable, so updates never free one); a node added (no hint)."""
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions(ActionType.ADD))),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the deleted pod was assigned (or nominated) and held a host port ``pod`` wants."""
        deleted, _ = as_pods(old, None)
        if deleted is None or (not deleted.node_name and not deleted.nominated_node_name):
            return QueueingHint.QUEUE_SKIP
        ports = get_host_ports(deleted)
        if not ports:
            return QueueingHint.QUEUE_SKIP
        in_use = HostPortInfo()
        for ip, protocol, port in ports:
            in_use.add(ip, protocol, port)
        if fits_ports(get_host_ports(pod), in_use):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
