"""FitError messages and Diagnosis, ported from kube-scheduler v1.36.3 framework/types_test.go
(TestFitError_Error) and schedule_one_test.go's message expectations."""

from __future__ import annotations

import pytest

from app.framework.status import Code, Status
from app.scheduler.algorithm import NoNodesAvailable
from app.scheduler.fit_error import Diagnosis, FitError, NodeToStatus

PRE = "Node(s) failed PreFilter plugin FalsePreFilter"
F1 = "Node(s) failed Filter plugin FalseFilter-1"
F2 = "Node(s) failed Filter plugin FalseFilter-2"
POST = "Error running PostFilter plugin FailedPostFilter"


def unsch(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


def diagnosis(
    statuses: dict[str, Status], pre: str = "", post: str = "", absent: Status | None = None
) -> Diagnosis:
    nts = NodeToStatus(statuses) if absent is None else NodeToStatus(statuses, absent)
    return Diagnosis(node_to_status=nts, pre_filter_msg=pre, post_filter_msg=post)


FIT_ERROR_CASES = [
    (
        "nodes failed Prefilter plugin",
        3,
        diagnosis({"node1": unsch(PRE), "node2": unsch(PRE), "node3": unsch(PRE)}, pre=PRE),
        "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.",
    ),
    (
        "nodes failed Prefilter plugin and the preemption also failed",
        3,
        diagnosis({"node1": unsch(PRE), "node2": unsch(PRE), "node3": unsch(PRE)}, pre=PRE, post=POST),
        "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. "
        "Error running PostFilter plugin FailedPostFilter",
    ),
    (
        "nodes failed one Filter plugin with an empty PostFilterMsg",
        3,
        diagnosis({"node1": unsch(F1), "node2": unsch(F1), "node3": unsch(F1)}),
        "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.",
    ),
    (
        "nodes failed one Filter plugin with a non-empty PostFilterMsg",
        3,
        diagnosis({"node1": unsch(F1), "node2": unsch(F1), "node3": unsch(F1)}, post=POST),
        "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. "
        "Error running PostFilter plugin FailedPostFilter",
    ),
    (
        "nodes failed two Filter plugins with an empty PostFilterMsg",
        3,
        diagnosis({"node1": unsch(F1), "node2": unsch(F1), "node3": unsch(F2)}),
        "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, "
        "2 Node(s) failed Filter plugin FalseFilter-1.",
    ),
    (
        "nodes failed two Filter plugins with a non-empty PostFilterMsg",
        3,
        diagnosis({"node1": unsch(F1), "node2": unsch(F1), "node3": unsch(F2)}, post=POST),
        "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, "
        "2 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter",
    ),
    (
        "failed to Permit on node",
        1,
        diagnosis({"node1": unsch("Node failed Permit plugin Permit-1")}),
        "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
    ),
    (
        "failed to Reserve on node",
        1,
        diagnosis({"node1": unsch("Node failed Reserve plugin Reserve-1")}),
        "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1.",
    ),
]


@pytest.mark.parametrize(
    ("num_all_nodes", "diag", "message"),
    [c[1:] for c in FIT_ERROR_CASES],
    ids=[c[0] for c in FIT_ERROR_CASES],
)
def test_fit_error_message(num_all_nodes: int, diag: Diagnosis, message: str) -> None:
    assert str(FitError("ns/p", num_all_nodes, diag)) == message


def test_reasons_histogram_is_sorted_as_go_strings() -> None:
    # "<count> <reason>" strings are sorted as strings: "10 ..." comes before "2 ...".
    statuses = {f"a{i}": unsch("node(s) had untolerated taint(s)") for i in range(10)}
    statuses |= {"b1": unsch("Insufficient cpu"), "b2": unsch("Insufficient cpu")}
    statuses["c"] = unsch("Insufficient cpu", "Insufficient memory")  # each reason counts
    msg = str(FitError("ns/p", 13, diagnosis(statuses)))
    assert msg == (
        "0/13 nodes are available: 1 Insufficient memory, 10 node(s) had untolerated taint(s), 3 Insufficient cpu."
    )


def test_absent_nodes_get_the_absent_status_reasons() -> None:
    # Nodes narrowed away by a PreFilterResult (absent from the map) count with the absent status.
    absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't satisfy plugin(s) [NodeAffinity]")
    d = diagnosis({"node1": unsch("Insufficient cpu")}, absent=absent)
    assert str(FitError("ns/p", 4, d)) == (
        "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_default_absent_status_has_no_reason() -> None:
    d = diagnosis({"node1": unsch("Insufficient cpu")})
    assert d.node_to_status.absent.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert str(FitError("ns/p", 3, d)) == "0/3 nodes are available: 1 Insufficient cpu."


def test_no_reasons_at_all() -> None:
    assert str(FitError("ns/p", 0, Diagnosis())) == "0/0 nodes are available:"
    assert str(FitError("ns/p", 2, diagnosis({}, post=POST))) == f"0/2 nodes are available: {POST}"


def test_diagnosis_add_plugin_status() -> None:
    d = Diagnosis()
    d.add_plugin_status(Status(Code.UNSCHEDULABLE, plugin="A"))
    d.add_plugin_status(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, plugin="B"))
    d.add_plugin_status(Status(Code.PENDING, plugin="C"))
    d.add_plugin_status(Status(Code.UNSCHEDULABLE))  # no plugin: ignored
    d.add_plugin_status(Status(Code.ERROR, plugin="E"))  # not a rejection: ignored
    assert d.unschedulable_plugins == {"A", "B"}
    assert d.pending_plugins == {"C"}
    assert len(d.node_to_status) == 0


def test_no_nodes_available_message() -> None:
    assert str(NoNodesAvailable()) == "no nodes available to schedule pods"
