"""SchedulingGates, ported from plugins/schedulinggates/scheduling_gates_test.go (v1.36.3)."""

from __future__ import annotations

from app.framework.status import Code, unresolvable
from app.plugins.schedulinggates.scheduling_gates import SchedulingGates
from builders import make_pod
from fakes import FakeHandle


def test_pod_does_not_carry_scheduling_gates() -> None:
    assert SchedulingGates(None, FakeHandle()).pre_enqueue(make_pod("p")) is None


def test_pod_carries_scheduling_gates() -> None:
    pod = make_pod("p", schedulingGates=[{"name": "foo"}, {"name": "bar"}])
    got = SchedulingGates(None, FakeHandle()).pre_enqueue(pod)
    assert got == unresolvable("waiting for scheduling gates: [foo bar]")
    assert got is not None and got.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_single_gate_format() -> None:
    got = SchedulingGates(None, FakeHandle()).pre_enqueue(
        make_pod("p", schedulingGates=[{"name": "example.com/x"}])
    )
    assert got is not None and got.message() == "waiting for scheduling gates: [example.com/x]"
