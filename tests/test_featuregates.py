"""--feature-gates: kube-scheduler's gates, defaults and error messages."""

from __future__ import annotations

import pytest

from app.featuregates import COORDINATED_LEADER_ELECTION, FeatureGateError, FeatureGates


def test_defaults_are_kube_scheduler_v1_36s() -> None:
    gates = FeatureGates()
    assert gates.enabled(COORDINATED_LEADER_ELECTION) is False
    assert gates.enabled("SchedulerQueueingHints") is True
    assert gates.enabled("SchedulerPopFromBackoffQ") is True


def test_set_overrides_and_keeps_the_rest() -> None:
    gates = FeatureGates()
    gates.set("CoordinatedLeaderElection=true, SchedulerAsyncPreemption=false")
    assert gates.enabled(COORDINATED_LEADER_ELECTION) is True
    assert gates.enabled("SchedulerAsyncPreemption") is False
    assert gates.overrides() == {"CoordinatedLeaderElection": True, "SchedulerAsyncPreemption": False}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        ("CoordinatedLeaderElection", "missing bool value for CoordinatedLeaderElection"),
        (
            "CoordinatedLeaderElection=yes",
            'invalid value of CoordinatedLeaderElection=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
        ),
        (
            "SchedulerQueueingHints=false",
            "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true",
        ),
    ],
)
def test_bad_values_are_rejected_with_component_bases_message(value: str, message: str) -> None:
    gates = FeatureGates()
    with pytest.raises(FeatureGateError) as err:
        gates.set(f"CoordinatedLeaderElection=true,{value}")
    assert str(err.value) == message
    assert gates.overrides() == {}  # nothing applied from a bad flag


def test_all_alpha_turns_on_unlocked_alpha_gates() -> None:
    gates = FeatureGates()
    gates.set("AllAlpha=true")
    assert gates.enabled("LoggingAlphaOptions") is True
    assert gates.enabled(COORDINATED_LEADER_ELECTION) is False  # a Beta gate
