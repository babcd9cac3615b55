"""``hack/control-plane.sh up --nodes N``: a local cluster kept running, and the lines it prints to paste."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kube.controlplane import NO_KUBELET_LABEL, REPO_ROOT, k8s_version

SCRIPT = REPO_ROOT / "hack" / "control-plane.sh"
_EXPORT = re.compile(r"^export (\w+)=(.*)$")


def read_until_paste_lines_end(proc: subprocess.Popen[str], timeout: float = 120.0) -> list[str]:
    """stdout lines up to the last one ``up`` prints (the /debug/pods URL); fail if it exits first."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            pytest.fail(f"up exited with {proc.wait()} after printing {lines}")
        lines.append(line.rstrip("\n"))
        if "/debug/pods/default/NAME" in line:
            return lines
    pytest.fail(f"up printed no paste lines in {timeout:.0f}s: {lines}")


def pasted_env(lines: list[str]) -> dict[str, str]:
    """The environment a shell has after pasting ``lines`` (``$PATH`` expanded as a shell would)."""
    env = dict(os.environ)
    for line in lines:
        match = _EXPORT.match(line)
        if match:
            env[match.group(1)] = match.group(2).strip('"').replace("$PATH", os.environ["PATH"])
    return env


@pytest.mark.kube
def test_up_with_nodes_prints_lines_that_work_when_pasted(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [str(SCRIPT), "up", "--nodes", "3"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        lines = read_until_paste_lines_end(proc)
        env = pasted_env(lines)
        assert {"KUBECONFIG", "BERTH_CLIENT_CA", "BERTH_CLIENT_CERT", "BERTH_CLIENT_KEY"} <= env.keys()
        workdir = Path(env["KUBECONFIG"]).parent
        assert (workdir / "env.sh").read_text() == "\n".join(lines) + "\n"

        # PATH puts the built kubectl first, whatever kubectl the machine has.
        version = subprocess.run(
            ["kubectl", "version", "--client", "-o", "json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(version.stdout)["clientVersion"]["gitVersion"] == k8s_version()

        listed = subprocess.run(
            ["kubectl", "get", "nodes", "-o", "json"], env=env, capture_output=True, text=True, check=True
        )
        nodes = {n["metadata"]["name"]: n for n in json.loads(listed.stdout)["items"]}
        assert sorted(nodes) == ["node-1", "node-2", "node-3"]
        zones = [nodes[name]["metadata"]["labels"]["topology.kubernetes.io/zone"] for name in sorted(nodes)]
        assert zones == ["zone-a", "zone-b", "zone-c"]
        for node in nodes.values():
            assert node["metadata"]["labels"][NO_KUBELET_LABEL] == "true"
            assert {"type": "Ready", "status": "True"}.items() <= node["status"]["conditions"][0].items()
            assert not node["spec"].get("taints")

        # The client certificate is signed by the CA printed for berth's --client-ca-file.
        verify = subprocess.run(
            ["openssl", "verify", "-CAfile", env["BERTH_CLIENT_CA"], env["BERTH_CLIENT_CERT"]],
            capture_output=True,
            text=True,
            check=False,
        )
        assert verify.returncode == 0, verify.stderr
        assert any('--client-ca-file "$BERTH_CLIENT_CA"' in line for line in lines)
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    assert code == 0
    assert not workdir.exists(), "up left its data behind"


def test_up_refuses_a_node_count_that_is_not_a_number() -> None:
    proc = subprocess.run(
        [str(SCRIPT), "up", "--nodes", "three"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "--nodes wants a whole number from 0 to 1000, got 'three'" in proc.stderr


def test_help_names_up_nodes_and_no_file_outside_the_repository() -> None:
    out = subprocess.run([str(SCRIPT), "help"], capture_output=True, text=True, check=True).stdout
    assert "hack/control-plane.sh up [--nodes N]" in out
    for path in re.findall(r"(?:\.\./|\b)((?:tests|hack)/[\w./-]+\.\w+)", out):
        assert (REPO_ROOT / path).is_file(), path
