"""--emulated-version and --min-compatibility-version on berth run, against the real kube-scheduler
v1.36.3: the same versions and gates accepted, the same refused with the same message; and berth
running at 1.33 with the v1.33 behaviour of the gates whose defaults differ there."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from app import featuregates
from app.cli.main import main
from tests.kube.controlplane import ControlPlaneError, LocalControlPlane, default_bin_dir

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


def test_qh_off_at_1_33_is_accepted_by_kube_and_by_berth(capsys: pytest.CaptureFixture[str]) -> None:
    """kube-scheduler runs upstream's QueueingHints-off workloads at 1.33, and so does berth: every
    gate whose default differs there has its v1.33 behaviour in berth."""
    args = ["--emulated-version=1.33", "--feature-gates=SchedulerQueueingHints=false"]
    assert kube_verdict(args) == ACCEPTED
    assert berth_verdict(args, capsys) == ACCEPTED


@pytest.mark.parametrize("version", ["1.33", "1.36"])
def test_async_preemption_off_is_accepted_at_every_version(
    version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """SchedulerAsyncPreemption is Beta and unlocked from 1.33 to 1.36, so kube-scheduler takes it
    off at any emulated version (upstream's PreemptionAsync/5000Nodes compares both settings);
    berth follows it (synchronous preemption in PostFilter) instead of refusing it at 1.33."""
    args = [
        f"--emulated-version={version}",
        "--feature-gates=SchedulerQueueingHints=false,SchedulerAsyncPreemption=false",
    ]
    if version == "1.36":
        args = ["--feature-gates=SchedulerAsyncPreemption=false"]
    assert kube_verdict(args) == ACCEPTED
    assert berth_verdict(args, capsys) == ACCEPTED


@pytest.mark.kube
def test_berth_run_at_1_33_schedules_a_pod_on_a_1_33_control_plane(tmp_path: Path) -> None:
    """``berth run --emulated-version=1.33 --feature-gates=SchedulerQueueingHints=false`` against
    a kube-apiserver emulating 1.33 (as scheduler_perf runs these workloads): it gets ready without
    the resource.k8s.io informers (DynamicResourceAllocation is off there), binds a pod, and one
    left unschedulable by a node selector is scheduled once a matching node appears."""
    cp = LocalControlPlane(
        default_bin_dir(), ready_timeout=120.0, extra_apiserver_args=("--emulated-version=1.33",)
    )
    try:
        cp.start()
    except ControlPlaneError as err:
        pytest.fail(f"could not start the control plane: {err}", pytrace=False)
    berth = None
    api = k8s_config.new_client_from_config(config_file=str(cp.kubeconfig))
    try:
        berth = BerthScheduler.on(
            cp,
            tmp_path,
            namespace="kube-system",
            lease_name="berth-133",
            name="berth-133",
            leader_elect=False,
            extra_args=("--emulated-version=1.33", "--feature-gates=SchedulerQueueingHints=false"),
        ).start()
        deadline = time.monotonic() + 120
        while berth.get("/readyz")[0] != 200:
            assert berth.alive and time.monotonic() < deadline, berth.log.read_text()[-3000:]
            time.sleep(0.2)
        core = k8s_client.CoreV1Api(api)
        core.create_node(_node("n1", {}))
        core.create_namespaced_pod("default", _pod("plain", {}))
        core.create_namespaced_pod("default", _pod("picky", {"zone": "b"}))
        assert _node_of(core, "plain") == "n1"
        core.create_node(_node("n2", {"zone": "b"}))  # a Node/Add: NodeAffinity's event, no hint asked
        assert _node_of(core, "picky") == "n2"
        log = berth.log.read_text()
        assert "resource.k8s.io" not in log
    finally:
        if berth is not None:
            berth.stop()
        api.close()
        cp.stop()


def _node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _pod(name: str, node_selector: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "nodeSelector": node_selector,
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }


def _node_of(core: Any, name: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        node = core.read_namespaced_pod(name, "default").spec.node_name
        if node:
            return str(node)
        time.sleep(0.2)
    raise AssertionError(f"pod {name} was not scheduled in {timeout}s")


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
