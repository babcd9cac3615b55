"""NodeUnschedulable, ported from plugins/nodeunschedulable/node_unschedulable_test.go (v1.36.3)."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.objects import parse_node
from app.framework.cycle_state import CycleState
from app.framework.status import Code, Status, unresolvable
from app.framework.types import NodeInfo
from app.plugins.nodeunschedulable.node_unschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from builders import make_pod
from fakes import FakeHandle

CASES: list[tuple[str, list[dict[str, Any]], bool, Status | None]] = [
    (
        "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        [],
        True,
        unresolvable(ERR_REASON_UNSCHEDULABLE),
    ),
    ("Schedule pod to normal node", [], False, None),
    (
        "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
        True,
        None,
    ),
    # Not in the Go table: other tolerations do not help; Exists without a key does.
    (
        "unrelated toleration does not exempt",
        [{"key": "other", "operator": "Exists"}],
        True,
        unresolvable(ERR_REASON_UNSCHEDULABLE),
    ),
    (
        "NoExecute toleration of the taint does not exempt",
        [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}],
        True,
        unresolvable(ERR_REASON_UNSCHEDULABLE),
    ),
    ("tolerate-everything exempts", [{"operator": "Exists"}], True, None),
]


@pytest.mark.parametrize(("name", "tolerations", "unschedulable", "want"), CASES, ids=[c[0] for c in CASES])
def test_node_unschedulable(
    name: str, tolerations: list[dict[str, Any]], unschedulable: bool, want: Status | None
) -> None:
    node = parse_node({"metadata": {"name": "n"}, "spec": {"unschedulable": unschedulable}})
    got = NodeUnschedulable(None, FakeHandle()).filter(
        CycleState(), make_pod("p", tolerations=tolerations), NodeInfo(node)
    )
    assert got == want
    if got is not None:
        assert got.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_ghost_node_is_an_error() -> None:
    got = NodeUnschedulable(None, FakeHandle()).filter(CycleState(), make_pod("p"), NodeInfo())
    assert got is not None and got.code is Code.ERROR
