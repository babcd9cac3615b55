"""Status codes and helpers, PreFilterResult.Merge and CycleState, ported from kube-scheduler
v0.36.3 framework/interface_test.go (TestStatus, TestIsStatusEqual, TestPreFilterResultMerge) and
framework/cycle_state_test.go."""

from __future__ import annotations

import pytest

from app.framework.cycle_state import CycleState, StateData
from app.framework.interfaces import PreFilterResult
from app.framework.status import (
    Code,
    Status,
    error,
    is_success,
    skip,
    unresolvable,
    unschedulable,
)


def test_codes_match_kube_scheduler_numbering_and_labels() -> None:
    assert [(c.value, c.label) for c in Code] == [
        (0, "Success"),
        (1, "Error"),
        (2, "Unschedulable"),
        (3, "UnschedulableAndUnresolvable"),
        (4, "Wait"),
        (5, "Skip"),
        (6, "Pending"),
    ]


# TestStatus: code, message, IsSuccess, IsWait, IsSkip; plus IsRejected.
@pytest.mark.parametrize(
    ("status", "code", "message", "success", "skipped", "rejected"),
    [
        (Status(Code.SUCCESS, ""), Code.SUCCESS, "", True, False, False),
        (Status(Code.WAIT, ""), Code.WAIT, "", False, False, False),
        (Status(Code.ERROR, "unknown error"), Code.ERROR, "unknown error", False, False, False),
        (Status(Code.SKIP, ""), Code.SKIP, "", False, True, False),
        (Status(Code.UNSCHEDULABLE, "a", "b"), Code.UNSCHEDULABLE, "a, b", False, False, True),
        (
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "x"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "x",
            False,
            False,
            True,
        ),
        (Status(Code.PENDING, "later"), Code.PENDING, "later", False, False, True),
    ],
)
def test_status(
    status: Status, code: Code, message: str, success: bool, skipped: bool, rejected: bool
) -> None:
    assert status.code is code
    assert status.message() == message
    assert status.is_success() is success
    assert is_success(status) is success
    assert status.is_skip() is skipped
    assert status.is_rejected() is rejected


def test_nil_status_is_success() -> None:
    assert is_success(None)


@pytest.mark.parametrize(
    ("x", "y", "equal"),
    [
        (Status(Code.SUCCESS), Status(Code.SUCCESS), True),
        (Status(Code.UNSCHEDULABLE, "unschedulable"), Status(Code.UNSCHEDULABLE, "unschedulable"), True),
        (Status(Code.ERROR, "error"), Status(Code.ERROR, "error"), True),
        (
            Status(Code.UNSCHEDULABLE, "unschedulable"),
            Status(Code.UNSCHEDULABLE, "unschedulable", "injected filter status"),
            False,
        ),
        (Status(Code.ERROR, "internal error"), Status(Code.UNSCHEDULABLE, "internal error"), False),
        # the plugin is not part of equality, as in Go's Status.Equal
        (Status(Code.UNSCHEDULABLE, "r", plugin="A"), Status(Code.UNSCHEDULABLE, "r", plugin="B"), True),
    ],
)
def test_status_equal(x: Status, y: Status, equal: bool) -> None:
    assert (x == y) is equal


def test_status_helpers() -> None:
    s = unschedulable("Insufficient cpu", "Insufficient memory").with_plugin("NodeResourcesFit")
    assert (s.code, s.plugin, s.message()) == (
        Code.UNSCHEDULABLE,
        "NodeResourcesFit",
        "Insufficient cpu, Insufficient memory",
    )
    e = s.as_error()
    assert (e.code, e.plugin, e.reasons) == (Code.ERROR, "NodeResourcesFit", s.reasons)
    assert unresolvable("x").code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert error("boom") == Status(Code.ERROR, "boom")
    assert skip().is_skip()
    assert (
        repr(s)
        == "Status(Unschedulable, ['Insufficient cpu', 'Insufficient memory'], plugin='NodeResourcesFit')"
    )
    with pytest.raises(TypeError):
        hash(s)


# TestPreFilterResultMerge: None node names means "all nodes" (Go's nil result).
@pytest.mark.parametrize(
    ("receiver", "other", "want"),
    [
        (None, None, None),
        (None, set(), set()),
        (set(), None, set()),
        (set(), set(), set()),
        (None, {"node1"}, {"node1"}),
        (set(), {"node1"}, set()),
        ({"node1"}, None, {"node1"}),
        ({"node1"}, set(), set()),
        ({"node1", "node2"}, {"node2", "node3"}, {"node2"}),
    ],
)
def test_pre_filter_result_merge(
    receiver: set[str] | None, other: set[str] | None, want: set[str] | None
) -> None:
    merged = PreFilterResult(receiver).merge(PreFilterResult(other))
    assert merged.node_names == want
    assert merged.all_nodes() is (want is None)
    assert PreFilterResult(receiver).merge(None).node_names == receiver


# --- CycleState (cycle_state_test.go) -------------------------------------------------------------


class _Counter(StateData):
    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def clone(self) -> StateData:
        return _Counter(self.n)


def test_cycle_state_read_write_delete() -> None:
    state = CycleState()
    state.write("k", 1)
    assert state.read("k") == 1 and state.get("k") == 1
    state.delete("k")
    state.delete("k")  # deleting twice is fine
    assert state.get("k") is None
    with pytest.raises(KeyError):
        state.read("k")


def test_cycle_state_clone_clones_state_data_and_skip_sets() -> None:
    state = CycleState()
    counter = _Counter(1)
    plain = [1]
    state.write("counter", counter)
    state.write("plain", plain)
    state.skip_filter_plugins.add("A")
    state.skip_score_plugins.add("B")
    state.record_plugin_metrics = True
    copy = state.clone()
    counter.n = 2
    state.skip_filter_plugins.add("C")
    assert copy.read("counter").n == 1  # StateData is cloned
    assert copy.read("plain") is plain  # other values are shared
    assert copy.skip_filter_plugins == {"A"} and copy.skip_score_plugins == {"B"}
    assert copy.record_plugin_metrics is True
