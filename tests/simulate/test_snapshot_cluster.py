"""``berth snapshot`` against the real control plane: the state it writes, simulated, gives the decisions
a stock kube-scheduler v1.36.3 then makes for the same pending pods."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e.stack import KubeScheduler, scheduler_config

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0


def berth(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def node(
    name: str, cpu: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "FakeNode"}],
        },
    }


def pod(name: str, cpu: str, scheduler: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


def test_snapshot_then_simulate_matches_kube_scheduler(
    control_plane: LocalControlPlane, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:8]
    scheduler = f"snapshot-{run}"
    namespace = f"snapshot-{run}"
    web_node, db_node = f"snap-web-{run}", f"snap-db-{run}"
    cp = control_plane
    cp.request_json("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    cp.request_json("POST", "/api/v1/nodes", node(web_node, "4", {"snapshot-run": run, "tier": "web"}))
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    cp.request_json("POST", "/api/v1/nodes", node(db_node, "4", {"snapshot-run": run, "tier": "db"}, [taint]))
    pods = f"/api/v1/namespaces/{namespace}/pods"
    # A running pod (bound by name) leaves 1 cpu on the web node.
    cp.request_json("POST", pods, pod("running", "3", scheduler, {"nodeName": web_node}))
    # Each pending pod has one node it can take, whatever the order: the decisions do not depend on timing.
    cp.request_json("POST", pods, pod("web", "1", scheduler, {"nodeSelector": {"tier": "web"}}))
    toleration = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
    cp.request_json(
        "POST", pods, pod("db", "2", scheduler, {"nodeSelector": {"tier": "db"}, "tolerations": [toleration]})
    )
    cp.request_json("POST", pods, pod("big", "8", scheduler, {"nodeSelector": {"snapshot-run": run}}))

    state = tmp_path / "cluster.yaml"
    taken = berth("snapshot", "--kubeconfig", str(cp.kubeconfig), "-o", str(state))
    assert taken.returncode == 0, taken.stderr
    assert "Snapshot: " in taken.stderr and " Node" in taken.stderr
    items = yaml.safe_load(state.read_text())["items"]
    assert {"Node", "Pod", "PriorityClass", "Namespace"} <= {item["kind"] for item in items}
    assert all("managedFields" not in item["metadata"] for item in items)
    snapped_node = next(i for i in items if i["kind"] == "Node" and i["metadata"]["name"] == web_node)
    assert snapped_node["status"] == {
        "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
    }  # conditions dropped

    config = tmp_path / "config.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": scheduler}],
            }
        )
    )
    simulated = berth("simulate", str(state), "--config", str(config), "--seed", "1", "-o", "json")
    assert simulated.returncode == 0, simulated.stderr
    ours = {p["pod"]: p for p in json.loads(simulated.stdout)["pods"] if p["pod"].startswith(namespace + "/")}
    assert {k: (p["status"], p["node"]) for k, p in ours.items()} == {
        f"{namespace}/web": ("Scheduled", web_node),
        f"{namespace}/db": ("Scheduled", db_node),
        f"{namespace}/big": ("Unschedulable", None),
    }

    # The stock kube-scheduler on the same cluster.
    kube = KubeScheduler(
        cp.bin_dir,
        cp.kubeconfig,
        tmp_path,
        scheduler_config(cp.kubeconfig, scheduler_name=scheduler),
        "kube-scheduler",
    )
    kube.start()
    try:
        deadline = time.monotonic() + WAIT
        placed: dict[str, tuple[str, str | None]] = {}
        while time.monotonic() < deadline:
            listed: Any = cp.request_json("GET", pods)
            placed = {}
            for item in listed["items"]:
                name = item["metadata"]["name"]
                if name == "running":
                    continue
                conditions = {c["type"]: c for c in item.get("status", {}).get("conditions", [])}
                scheduled = conditions.get("PodScheduled")
                if item["spec"].get("nodeName"):
                    placed[f"{namespace}/{name}"] = ("Scheduled", item["spec"]["nodeName"])
                elif scheduled is not None and scheduled.get("reason") == "Unschedulable":
                    placed[f"{namespace}/{name}"] = ("Unschedulable", None)
                    assert scheduled["message"] == ours[f"{namespace}/{name}"]["message"]
            if len(placed) == 3:
                break
            time.sleep(0.2)
    finally:
        kube.stop()
    assert placed == {k: (p["status"], p["node"]) for k, p in ours.items()}


def test_snapshot_errors_name_the_problem(tmp_path: Path) -> None:
    missing = berth("snapshot", "--kubeconfig", str(tmp_path / "nope"))
    assert (missing.returncode, missing.stderr) == (
        1,
        f"Error: snapshot: kubeconfig {tmp_path / 'nope'}: no such file\n",
    )
