"""``berth serve --kubeconfig`` as a process against the real control plane: readiness waits for the
informers, /filter in NodeNames mode answers from the cluster, and watch events change its answers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.kube.client import KubeClient
from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def post(url: str, body: Any) -> Any:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def node_body(name: str) -> dict[str, Any]:
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": resources, "allocatable": resources},
    }


def pod(name: str, cpu: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
        ]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "uid": str(uuid.uuid4())},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def cluster_nodes(control_plane: LocalControlPlane) -> list[str]:
    names = [f"serve-{uuid.uuid4().hex[:6]}-{i}" for i in range(2)]
    with KubeClient.from_config(str(control_plane.kubeconfig)) as kc:
        for name in names:
            status, data = kc.request("POST", "/api/v1/nodes", body=node_body(name))
            assert status == 201, data
    return names


@pytest.fixture(scope="module")
def serve(
    control_plane: LocalControlPlane, cluster_nodes: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "stderr.log"
    config = log.parent / "config.yaml"
    # qps/burst come from clientConnection, the kubeconfig from the flag.
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "clientConnection:\n  qps: 100\n  burst: 200\n"
    )
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app.cli.main",
                "serve",
                "--port",
                str(port),
                # A free secure port too: 8889 may be a `make run` in another terminal.
                "--secure-port",
                str(free_port()),
                "--bind-address",
                "127.0.0.1",
                "--kubeconfig",
                str(control_plane.kubeconfig),
                "--config",
                str(config),
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if get(f"{base}/livez")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"berth serve did not start: {log.read_text()}")
            time.sleep(0.2)
        yield base, log
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_readyz_waits_for_handler_sync(serve: tuple[str, Path]) -> None:
    base, log = serve
    deadline = time.monotonic() + 30
    while True:
        status, body = get(f"{base}/readyz?verbose")
        if status == 200:
            break
        assert "[-]sched-handler-sync failed" in body
        assert time.monotonic() < deadline, body
        time.sleep(0.2)
    assert "[+]sched-handler-sync ok" in body
    assert get(f"{base}/readyz/sched-handler-sync") == (200, "ok")
    text = log.read_text()
    starting, synced, handlers = (
        text.index(s) for s in ("Starting informers", "Caches are synced", "Handlers synced")
    )
    assert starting < synced < handlers


def _filter(base: str, nodes: list[str], cpu: str) -> dict[str, Any]:
    result: dict[str, Any] = post(
        f"{base}/filter", {"Pod": pod("big", cpu), "NodeNames": nodes, "Nodes": None}
    )
    return result


def test_filter_sees_the_cluster_and_its_changes(
    serve: tuple[str, Path], cluster_nodes: list[str], control_plane: LocalControlPlane, namespace: str
) -> None:
    base, _ = serve
    deadline = time.monotonic() + 30
    while get(f"{base}/readyz")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    result = _filter(base, [*cluster_nodes, "no-such-node"], "3")
    assert result["Error"] in ("", None)
    assert sorted(result["NodeNames"]) == sorted(cluster_nodes)
    assert "no-such-node" in (result["FailedNodes"] or {})
    # A pod bound to the first node through the API (by "someone else") uses its capacity.
    busy = cluster_nodes[0]
    with KubeClient.from_config(str(control_plane.kubeconfig)) as kc:
        body = pod("running", "2", node=busy)
        del body["metadata"]["uid"]
        status, data = kc.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=body)
        assert status == 201, orjson.loads(data)
    deadline = time.monotonic() + 15
    while True:
        result = _filter(base, cluster_nodes, "3")
        failed = result["FailedNodes"] or {}
        if busy in failed:
            break
        assert time.monotonic() < deadline, result
        time.sleep(0.2)
    assert "Insufficient cpu" in failed[busy]
    assert result["NodeNames"] == [cluster_nodes[1]]


def test_state_and_kubeconfig_are_mutually_exclusive(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli.main",
            "serve",
            "--state",
            "examples/state.yaml",
            "--kubeconfig",
            "kc",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "--state and --kubeconfig are mutually exclusive" in proc.stderr


def test_a_missing_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli.main", "serve", "--kubeconfig", str(tmp_path / "nope")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "no such file" in proc.stderr
