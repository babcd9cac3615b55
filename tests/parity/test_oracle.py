"""The oracle is itself checked: against cases of kube-scheduler's own unit-test tables (expected values
copied from the Go tests, not from berth), and against the real kube-scheduler binary on a control plane
of its own (the node it binds is one of the oracle's best nodes; an unschedulable pod's PodScheduled
message is the oracle's FitError text).
"""

from __future__ import annotations

import copy
import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e.stack import KubeScheduler
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from parity.gen_dra import has_dra
from parity.gen_storage import has_storage
from parity.generator import Scenario, generate
from parity.harness import Oracle, build_oracle, default_registry, disabled_plugins, write_scenario

from kube.controlplane import LocalControlPlane, default_bin_dir

SCHEDULER_NAME = "parity-scheduler"
#: Scenarios sampled for the real kube-scheduler (each is created, decided and deleted in turn).
REAL_SAMPLE = int(os.environ.get("PARITY_REAL_N", "8"))


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    """The oracle with berth's missing plugins disabled (as every parity comparison runs it)."""
    try:
        binary = build_oracle()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)
    o = Oracle(binary, disabled_plugins(default_registry()))
    try:
        yield o
    finally:
        o.close()


def _ask(oracle: Oracle, tmp_path: Path, text: str, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    state = tmp_path / "state.yaml"
    state.write_text(text)
    cfg_path = None
    if cfg is not None:
        cfg_path = tmp_path / "config.yaml"
        cfg_path.write_text(yaml.safe_dump(cfg))
    out = oracle.ask(state, cfg_path)
    assert not out.get("error"), out
    [pod] = out["pods"]
    return pod


def _node(name: str, allocatable: str = '{cpu: "4", memory: 8Gi, pods: "110"}', extra: str = "") -> str:
    return (
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
        f"{extra}status: {{allocatable: {allocatable}}}\n---\n"
    )


def _pod(name: str, spec: str, node: str = "", labels: str = "{}") -> str:
    bound = f"  nodeName: {node}\n" if node else ""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: {name}, labels: {labels}}}\n"
        f"spec:\n{bound}{spec}---\n"
    )


_PLAIN = "  containers: [{name: c, image: x}]\n"


def test_taint_toleration_scores(oracle: Oracle, tmp_path: Path) -> None:
    """taint_toleration_test.go: "the more intolerable taints a node has, the lower score it gets."."""
    prefer = "PreferNoSchedule"
    text = (
        _node("nodeA")
        + _node("nodeB", extra=f"spec: {{taints: [{{key: cpu-type, value: arm64, effect: {prefer}}}]}}\n")
        + _node(
            "nodeC",
            extra=f"spec: {{taints: [{{key: cpu-type, value: arm64, effect: {prefer}}}, "
            f"{{key: disk-type, value: ssd, effect: {prefer}}}]}}\n",
        )
        + _pod(
            "pod1", f"  tolerations: [{{key: foo, operator: Equal, value: bar, effect: {prefer}}}]\n" + _PLAIN
        )
    )
    pod = _ask(oracle, tmp_path, text)
    assert {n: s["TaintToleration"] for n, s in pod["scores"].items()} == {
        "nodeA": 100,
        "nodeB": 50,
        "nodeC": 0,
    }


def test_least_allocated_scores(oracle: Oracle, tmp_path: Path) -> None:
    """least_allocated_test.go: "nothing scheduled, resources requested, differently sized nodes"."""
    text = (
        _node("node1", '{cpu: "4000m", memory: "10000", pods: "110"}')
        + _node("node2", '{cpu: "6000m", memory: "10000", pods: "110"}')
        + _pod(
            "p",
            "  containers:\n"
            '  - {name: a, image: x, resources: {requests: {cpu: "1000m", memory: "2000"}}}\n'
            '  - {name: b, image: x, resources: {requests: {cpu: "2000m", memory: "3000"}}}\n',
        )
    )
    pod = _ask(oracle, tmp_path, text)
    assert {n: s["NodeResourcesFit"] for n, s in pod["scores"].items()} == {"node1": 37, "node2": 50}


_SPREAD_ONLY = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {
                    "disabled": [{"name": "*"}],
                    "enabled": [
                        {"name": "PrioritySort"},
                        {"name": "PodTopologySpread"},
                        {"name": "DefaultBinder"},
                    ],
                }
            },
        }
    ],
}
_SPREAD_POD = (
    "  topologySpreadConstraints:\n  - {maxSkew: SKEW, topologyKey: kubernetes.io/hostname, "
    "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: [{key: foo, operator: Exists}]}}\n"
    + _PLAIN
)


def test_spread_two_nodes_max_skew_1(oracle: Oracle, tmp_path: Path) -> None:
    """schedule_one_test.go TestSchedulerSchedulePod: "test podtopologyspread plugin - 2 nodes with maxskew=1"."""
    text = (
        _node("node1")
        + _node("node2")
        + _pod("pod1", _PLAIN, node="node1", labels='{foo: ""}')
        + _pod("p", _SPREAD_POD.replace("SKEW", "1"), labels='{foo: ""}')
    )
    pod = _ask(oracle, tmp_path, text, _SPREAD_ONLY)
    assert (pod["node"], pod["bestNodes"]) == ("node2", ["node2"])


def test_spread_three_nodes_max_skew_2(oracle: Oracle, tmp_path: Path) -> None:
    """TestSchedulerSchedulePod: "test podtopologyspread plugin - 3 nodes with maxskew=2" (wantNodes 2, 3)."""
    text = (
        _node("node1")
        + _node("node2")
        + _node("node3")
        + _pod("pod1a", _PLAIN, node="node1", labels='{foo: ""}')
        + _pod("pod1b", _PLAIN, node="node1", labels='{foo: ""}')
        + _pod("pod2", _PLAIN, node="node2", labels='{foo: ""}')
        + _pod("p", _SPREAD_POD.replace("SKEW", "2"), labels='{foo: ""}')
    )
    pod = _ask(oracle, tmp_path, text, _SPREAD_ONLY)
    assert pod["bestNodes"] == ["node2", "node3"] and pod["node"] in ("node2", "node3")


_ONE_POD = '{cpu: "4", memory: 8Gi, pods: "1"}'


def test_preemption_on_the_one_node_it_helps(oracle: Oracle, tmp_path: Path) -> None:
    """default_preemption_test.go TestPostFilter: "pod can be made schedulable on one node"."""
    text = (
        _node("node1", _ONE_POD)
        + _node("node2", _ONE_POD)
        + _pod("p1", "  priority: 1000\n" + _PLAIN, node="node1")
        + _pod("p2", "  priority: 0\n" + _PLAIN, node="node2")
        + _pod("p", "  priority: 100\n" + _PLAIN)
    )
    pod = _ask(oracle, tmp_path, text)
    assert (pod["nominatedNode"], pod["victims"]) == ("node2", ["default/p2"])
    # berth simulate's retry after the victims are gone: the pod lands on its nominated node.
    assert (pod["status"], pod["node"]) == ("Scheduled", "node2")


def test_tied_priority_is_still_unschedulable(oracle: Oracle, tmp_path: Path) -> None:
    """TestPostFilter: "pod with tied priority is still unschedulable" (its status, inside the FitError)."""
    text = _node("node1", _ONE_POD) + _pod("p1", _PLAIN, node="node1") + _pod("p", _PLAIN)
    pod = _ask(oracle, tmp_path, text)
    assert pod["status"] == "Unschedulable" and pod["victims"] == []
    assert pod["message"] == (
        "0/1 nodes are available: 1 Too many pods. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


# --- against the real kube-scheduler ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def parity_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalControlPlane, client.ApiClient]]:
    """A control plane of its own: scenarios create and delete Nodes, which other tests must not see."""
    cp = LocalControlPlane(default_bin_dir(), ready_timeout=120.0)
    try:
        cp.start()
    except Exception as err:
        pytest.fail(f"could not start the control plane: {err}", pytrace=False)
    api = config.new_client_from_config(config_file=str(cp.kubeconfig))
    try:
        yield cp, api
    finally:
        api.close()
        cp.stop()


def _scheduler_config(scenario: Scenario, kubeconfig: Path, disabled: list[str]) -> dict[str, Any]:
    profile: dict[str, Any] = {}
    if scenario.config is not None:
        profile = copy.deepcopy(scenario.config["profiles"][0])
    profile["schedulerName"] = SCHEDULER_NAME
    multi = profile.setdefault("plugins", {}).setdefault("multiPoint", {})
    multi["disabled"] = [*multi.get("disabled", []), *({"name": n} for n in disabled)]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 200, "burst": 400},
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }


class _Objects:
    """Creating a scenario's objects through the API and deleting them again."""

    def __init__(self, api: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.policy = client.PolicyV1Api(api)
        self.scheduling = client.SchedulingV1Api(api)
        self.node = client.NodeV1Api(api)

    def create(self, obj: dict[str, Any]) -> None:
        kind, meta = obj["kind"], obj["metadata"]
        ns = meta.get("namespace", "default")
        body = {k: v for k, v in obj.items() if k != "status"}
        if kind == "Namespace":
            try:
                self.core.create_namespace(body)
            except ApiException as err:
                if err.status != 409:
                    raise
                self.core.patch_namespace(meta["name"], {"metadata": {"labels": meta.get("labels", {})}})
        elif kind == "Node":
            self.core.create_node(obj)  # a node keeps the status it is created with
        elif kind == "Pod":
            self.core.create_namespaced_pod(ns, body)
            if obj.get("status"):  # what a kubelet would report: startTime, phase
                self.core.patch_namespaced_pod_status(meta["name"], ns, {"status": obj["status"]})
        elif kind == "RuntimeClass":
            if not any(rc.metadata.name == meta["name"] for rc in self.node.list_runtime_class().items):
                self.node.create_runtime_class(body)
        elif kind == "PriorityClass":
            self.scheduling.create_priority_class(body)
        elif kind == "Service":
            self.core.create_namespaced_service(ns, body)
        elif kind in ("ReplicaSet", "StatefulSet"):
            create = (
                self.apps.create_namespaced_replica_set
                if kind == "ReplicaSet"
                else self.apps.create_namespaced_stateful_set
            )
            create(ns, body)
        elif kind == "PodDisruptionBudget":
            self.policy.create_namespaced_pod_disruption_budget(ns, body)
            self.policy.patch_namespaced_pod_disruption_budget_status(
                meta["name"], ns, {"status": obj["status"]}
            )
        else:
            raise AssertionError(f"unexpected kind {kind}")

    def delete_all(self) -> None:
        for ns in ("default", "team-a", "team-b"):
            self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
            self.core.delete_collection_namespaced_service(ns)
            self.apps.delete_collection_namespaced_replica_set(ns)
            self.apps.delete_collection_namespaced_stateful_set(ns)
            self.policy.delete_collection_namespaced_pod_disruption_budget(ns)
        self.core.delete_collection_node()
        for pc in self.scheduling.list_priority_class().items:
            if not pc.metadata.name.startswith("system-"):
                self.scheduling.delete_priority_class(pc.metadata.name)
        deadline = time.monotonic() + 30
        while any(self.core.list_namespaced_pod(ns).items for ns in ("default", "team-a", "team-b")):
            assert time.monotonic() < deadline, "pods not deleted"
            time.sleep(0.1)


def _decision(
    core: client.CoreV1Api, namespace: str, name: str, timeout: float = 30
) -> tuple[str | None, str]:
    """(bound node, "") or (None, PodScheduled message) once kube-scheduler decided."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod(name, namespace)
        if pod.spec.node_name:
            return pod.spec.node_name, ""
        for cond in pod.status.conditions or []:
            if cond.type == "PodScheduled" and cond.status == "False" and cond.reason == "Unschedulable":
                return None, cond.message
        time.sleep(0.05)
    raise AssertionError(f"kube-scheduler did not decide on {namespace}/{name} in {timeout} s")


@pytest.mark.kube
def test_oracle_agrees_with_the_real_kube_scheduler(
    oracle: Oracle, parity_cluster: tuple[LocalControlPlane, client.ApiClient], tmp_path: Path
) -> None:
    cp, api = parity_cluster
    objects = _Objects(api)
    seed = int(os.environ.get("PARITY_SEED") or random.SystemRandom().randrange(1, 10**9))
    checked, mismatches = 0, []
    # Preemption is left out: its victims never finish terminating without a kubelet.
    candidates = (generate(seed + i) for i in range(REAL_SAMPLE * 20))
    for scenario in candidates:
        if checked == REAL_SAMPLE:
            break
        if has_storage(scenario):
            # Without a PV controller a pod with claims never gets past PreBind; claimRef UIDs would
            # not match the API server's either. The storage plugins are checked by the e2e tests.
            continue
        if has_dra(scenario):
            # This check creates objects of the kinds it knows; DRA's (and nodes' declared features, a
            # status field) are left to the e2e tests on the real control plane (tests/e2e/test_dra.py).
            continue
        state, cfg_path = write_scenario(scenario, tmp_path, f"scenario-{scenario.seed}")
        [verdict] = oracle.ask(state, cfg_path)["pods"]
        if verdict["victims"] or verdict["status"] not in ("Scheduled", "Unschedulable"):
            continue
        sched_config = _scheduler_config(scenario, cp.kubeconfig, oracle.disable)
        scheduler = KubeScheduler(
            default_bin_dir(), cp.kubeconfig, tmp_path, sched_config, f"ks-{scenario.seed}"
        )
        objects.delete_all()
        for obj in scenario.objects:
            if obj["kind"] == "Pod" and not obj["spec"].get("nodeName"):
                continue
            objects.create(obj)
        scheduler.start()
        try:
            pending = copy.deepcopy(scenario.objects[-1])
            pending["spec"]["schedulerName"] = SCHEDULER_NAME
            objects.create(pending)
            node, message = _decision(objects.core, pending["metadata"]["namespace"], "pending")
        finally:
            scheduler.stop()
        checked += 1
        if verdict["status"] == "Scheduled" and node not in verdict["bestNodes"]:
            mismatches.append(
                f"seed {scenario.seed}: kube-scheduler bound {node}, oracle best {verdict['bestNodes']}"
            )
        elif verdict["status"] == "Unschedulable" and message != verdict["message"]:
            mismatches.append(
                f"seed {scenario.seed}: PodScheduled {message!r}\n  oracle {verdict['message']!r}"
            )
    assert checked == REAL_SAMPLE, f"only {checked} scenarios without preemption among {REAL_SAMPLE * 20}"
    assert not mismatches, f"seed {seed}:\n" + "\n".join(mismatches) + "\n" + json.dumps(oracle.disable)
