"""--emulated-version and --min-compatibility-version on berth run, against the real kube-scheduler
v1.36.3: the same versions and gates accepted, the same refused with the same message; and berth
refusing to run an emulation whose behaviour it does not implement."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator

import pytest

from app import featuregates
from app.cli.main import main
from tests.kube.controlplane import default_bin_dir

ACCEPTED = "accepted"
"""Both got past the version and gate checks (and then failed on the missing kubeconfig)."""


@pytest.fixture(autouse=True)
def default_gates() -> Iterator[None]:
    featuregates.DEFAULT.reset()
    yield
    featuregates.DEFAULT.reset()


def kube_verdict(args: list[str]) -> str:
    binary = default_bin_dir() / "kube-scheduler"
    if not binary.exists():
        pytest.skip("kube-scheduler v1.36.3 is not built (hack/control-plane.sh build)")
    out = subprocess.run(
        [str(binary), *args, "--kubeconfig=/nonexistent/kubeconfig"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stderr
    error = re.search(r'"command failed" err="(.*)"\s*$', out, re.M)
    assert error is not None, out
    message = error.group(1).replace('\\"', '"')
    return ACCEPTED if "/nonexistent/kubeconfig" in message else message


def berth_verdict(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["run", *args, "--kubeconfig=/nonexistent/kubeconfig"]) != 0
    message = capsys.readouterr().err.strip().splitlines()[-1].removeprefix("Error: ")
    return ACCEPTED if "/nonexistent/kubeconfig" in message else message


@pytest.mark.parametrize(
    "args",
    [
        ["--emulated-version=1.32"],
        ["--emulated-version=1.37"],
        ["--emulated-version=kube=1.36"],
        ["--emulated-version=1.36", "--min-compatibility-version=1.33"],
        ["--emulated-version=1.34", "--min-compatibility-version=1.35"],
        ["--emulated-version=1.33", "--min-compatibility-version=1.34"],
        ["--emulated-version=1.32", "--feature-gates=SchedulerQueueingHints=false"],
        ["--emulated-version=1.37", "--feature-gates=SchedulerQueueingHints=false"],
        ["--emulated-version=1.34", "--feature-gates=SchedulerQueueingHints=false"],
        ["--emulated-version=1.33", "--feature-gates=OpportunisticBatching=false"],
        ["--emulated-version=1.35", "--feature-gates=InPlacePodVerticalScaling=false"],
        ["--emulated-version=1.36", "--feature-gates=SchedulerQueueingHints=true"],
        ["--emulated-version=1.36", "--feature-gates=CRIListStreaming=true"],
        ["--emulated-version=1.35", "--feature-gates=CRIListStreaming=true"],
        ["--emulated-version=1.36.1"],
        ["--emulated-version=sched=1.35"],
    ],
    ids=lambda args: " ".join(args),
)
def test_versions_and_gates_are_accepted_and_refused_as_by_kube_scheduler(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert berth_verdict(args, capsys) == kube_verdict(args)


def test_qh_off_at_1_33_is_accepted_by_kube_and_refused_by_berth_with_every_gate_it_lacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """kube-scheduler runs upstream's QueueingHints-off workloads at 1.33; berth names the gates
    whose v1.33 behaviour it does not have instead of scheduling differently."""
    args = ["--emulated-version=1.33", "--feature-gates=SchedulerQueueingHints=false"]
    assert kube_verdict(args) == ACCEPTED
    refusal = berth_verdict(args, capsys)
    assert refusal.startswith("--emulated-version=1.33: berth implements kube-scheduler v1.36.3's behaviour")
    assert "SchedulerQueueingHints=false" in refusal
    assert "DynamicResourceAllocation=false" in refusal  # v1.33's default: the plugin is off there


def test_gate_defaults_follow_the_emulated_version() -> None:
    gates = featuregates.FeatureGates()
    assert gates.enabled("SchedulerQueueingHints") and gates.spec("SchedulerQueueingHints")[2]  # locked, GA
    gates.set_emulation(33)
    assert gates.spec("SchedulerQueueingHints") == (True, "Beta", False)
    gates.set("SchedulerQueueingHints=false")
    assert not gates.enabled("SchedulerQueueingHints")
    assert not gates.enabled("DynamicResourceAllocation")  # Beta, off by default at 1.33
    assert gates.spec("OpportunisticBatching")[1] == "PreAlpha"
    assert not gates.enabled("OpportunisticBatching")
    with pytest.raises(featuregates.FeatureGateError, match=r"PreAlpha at emulated version 1\.33"):
        gates.set("OpportunisticBatching=true")


def test_at_v1_36_nothing_changes_what_runs() -> None:
    gates = featuregates.FeatureGates()
    gates.set("OpportunisticBatching=true")
    assert gates.unsupported() == []


def test_all_alpha_turns_on_the_gates_alpha_at_the_emulated_version() -> None:
    gates = featuregates.FeatureGates()
    gates.set_emulation(33)
    # DRADeviceTaints is Alpha at 1.33 and needs DynamicResourceAllocation, Beta and off there
    with pytest.raises(featuregates.FeatureGateError, match="depends on features that are disabled"):
        gates.set("AllAlpha=true")
    gates.set("AllAlpha=true,AllBeta=true")
    assert gates.enabled("DRADeviceTaints")  # Alpha at 1.33 (Beta, on by default, at 1.36)
    assert gates.enabled("DynamicResourceAllocation")  # Beta at 1.33
    assert not gates.enabled("DRAConsumableCapacity")  # PreAlpha at 1.33: AllAlpha leaves it off
