"""NodeName, ported from plugins/nodename/node_name_test.go (v1.36.3)."""

from __future__ import annotations

import pytest

from app.framework.cycle_state import CycleState
from app.framework.status import Code, Status, unresolvable
from app.framework.types import NodeInfo
from app.plugins.nodename.node_name import ERR_REASON, NodeName, fits
from builders import make_node, make_pod
from fakes import FakeHandle

CASES: list[tuple[str, str, str, Status | None]] = [
    ("no host specified", "", "foo", None),
    ("host matches", "foo", "foo", None),
    ("host doesn't match", "bar", "foo", unresolvable(ERR_REASON)),
]


@pytest.mark.parametrize(("name", "pod_node", "node_name", "want"), CASES, ids=[c[0] for c in CASES])
def test_node_name(name: str, pod_node: str, node_name: str, want: Status | None) -> None:
    pod = make_pod("p", nodeName=pod_node) if pod_node else make_pod("p")
    ni = NodeInfo(make_node(node_name))
    got = NodeName(None, FakeHandle()).filter(CycleState(), pod, ni)
    assert got == want
    assert fits(pod, ni) is (want is None)
    if got is not None:
        assert got.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
