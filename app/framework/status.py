"""Plugin statuses with kube-scheduler's codes and meanings.

Success is represented by ``None`` on hot paths (as kube-scheduler's nil ``*Status``), so a
passing Filter call allocates nothing; :func:`is_success` accepts both.
"""

from __future__ import annotations

from enum import IntEnum


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


SKIP = Code.SKIP


def skip() -> Status:
    """A Skip status."""
    return Status(Code.SKIP)
