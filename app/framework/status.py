"""Plugin statuses with kube-scheduler's codes and meanings.

Success is represented by ``None`` on hot paths (as kube-scheduler's nil ``*Status``), so a
passing Filter call allocates nothing; :func:`is_success` accepts both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from app.framework.types import NodeInfo


class Code(IntEnum):
    """``fwk.Code``, same order and numbering as kube-scheduler."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        """The name kube-scheduler prints (``Code.String()``)."""
        return _CODE_LABELS[self]


_CODE_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Status:
    """The result of running a plugin: a code, reasons, and the plugin that returned it."""

    __slots__ = ("code", "plugin", "reasons")

    def __init__(self, code: Code, *reasons: str, plugin: str = "") -> None:
        self.code = code
        self.reasons: list[str] = list(reasons)
        self.plugin = plugin

    def message(self) -> str:
        """Reasons joined with ", " (``Status.Message``)."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        """Code is Success."""
        return self.code is Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending (``Status.IsRejected``)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def is_skip(self) -> bool:
        """Code is Skip."""
        return self.code is Code.SKIP

    def with_plugin(self, plugin: str) -> Status:
        """Set the plugin that returned this status and return self."""
        self.plugin = plugin
        return self

    def as_error(self) -> Status:
        """The same reasons as an Error (a non-rejection code where only rejections are allowed)."""
        return Status(Code.ERROR, *self.reasons, plugin=self.plugin)

    def __repr__(self) -> str:
        return f"Status({self.code.label}, {self.reasons!r}, plugin={self.plugin!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.reasons == other.reasons

    __hash__ = None  # type: ignore[assignment]


def is_success(status: Status | None) -> bool:
    """``nil`` or Success."""
    return status is None or status.code is Code.SUCCESS


def unschedulable(*reasons: str) -> Status:
    """An Unschedulable status."""
    return Status(Code.UNSCHEDULABLE, *reasons)


def unresolvable(*reasons: str) -> Status:
    """An UnschedulableAndUnresolvable status."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


def error(message: str) -> Status:
    """An Error status."""
    return Status(Code.ERROR, message)


def skip() -> Status:
    """A Skip status."""
    return Status(Code.SKIP)


class _NodeLister(Protocol):
    def list(self) -> list[NodeInfo]: ...

    def get(self, name: str) -> NodeInfo | None: ...


@dataclass(slots=True)
class NodeToStatus:
    """Statuses of nodes that failed, plus the status assumed for nodes not listed (``framework.NodeToStatus``).

    By default an absent node is UnschedulableAndUnresolvable; a PreFilter rejection sets the absent
    status to the rejection, so that (when it is Unschedulable) preemption considers every node.
    """

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status = field(default_factory=lambda: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))

    def __len__(self) -> int:
        return len(self.statuses)

    @classmethod
    def of(cls, statuses: NodeToStatus | Mapping[str, Status]) -> NodeToStatus:
        """``statuses`` itself, or a NodeToStatus over a plain mapping (absent nodes unresolvable)."""
        return statuses if isinstance(statuses, NodeToStatus) else cls(dict(statuses))

    def get(self, name: str) -> Status:
        """The node's status, or the absent status when the node is not listed."""
        return self.statuses.get(name, self.absent)

    def set(self, name: str, status: Status) -> None:
        """Record a node's status."""
        self.statuses[name] = status

    def nodes_for_status_code(self, lister: _NodeLister, code: Code) -> list[NodeInfo]:
        """``NodesForStatusCode``: the nodes whose status (explicit or absent) has ``code``.

        When the absent status has ``code``, every node of ``lister`` not listed with another code;
        otherwise the listed nodes with ``code`` that ``lister`` knows, in the map's order.
        """
        if self.absent.code is code:
            nodes = lister.list()
            if not self.statuses:
                return list(nodes)
            return [n for n in nodes if self.get(n.name).code is code]
        out: list[NodeInfo] = []
        for name, status in self.statuses.items():
            if status.code is code:
                info = lister.get(name)
                if info is not None:
                    out.append(info)
        return out

    def names(self) -> Iterable[str]:
        """The explicitly listed nodes."""
        return self.statuses.keys()


NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


def fit_error_message(
    num_all_nodes: int, node_to_status: NodeToStatus, pre_filter_msg: str = "", post_filter_msg: str = ""
) -> str:
    """``FitError.Error()``: the reason histogram, or the PreFilter message, then the PostFilter message.

    Here rather than with FitError because preemption (a framework package) formats its own FitError.
    """
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        histogram: dict[str, int] = {}
        for status in node_to_status.statuses.values():
            for reason in status.reasons:
                histogram[reason] = histogram.get(reason, 0) + 1
        missing = num_all_nodes - len(node_to_status)
        if missing > 0:
            for reason in node_to_status.absent.reasons:
                histogram[reason] = histogram.get(reason, 0) + missing
        # Go sorts the formatted "<count> <reason>" strings, so "10 x" sorts before "2 y".
        parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
        if parts:
            msg += f" {', '.join(parts)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}"
    return msg
