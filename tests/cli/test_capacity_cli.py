"""``berth capacity`` as a user runs it: the report, JSON, and bad input named by file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.clihelpers import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"
WEB = 'apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: prod}\nspec:\n  containers:\n  - {name: web, image: nginx, resources: {requests: {cpu: "1", memory: 2Gi}}}\n'


@pytest.fixture
def web(tmp_path: Path) -> Path:
    path = tmp_path / "web.yaml"
    path.write_text(WEB)
    return path


def test_table_report(capsys: pytest.CaptureFixture[str]) -> None:
    pod = EXAMPLES.parent / "capacity" / "web.yaml"
    code, out, err = run(capsys, "capacity", str(EXAMPLES / "basic.yaml"), str(pod), "--seed", "1")
    assert code == 0
    # node-a has 4 free cpus, node-b 2 (db-0 runs there), gpu-1 is tainted.
    assert out.splitlines() == [
        "6 more replica(s) of prod/web fit.",
        "",
        "NODE     REPLICAS",
        "node-a   4",
        "node-b   2",
        "",
        "The next one does not fit: 0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.",
        "",
        "Seed 1 (repeat this run exactly with --seed 1)",
    ]
    assert "3 pending pod(s) left out" in err


def test_json_report_with_max(capsys: pytest.CaptureFixture[str], web: Path) -> None:
    code, out, _ = run(
        capsys, "capacity", str(EXAMPLES / "basic.yaml"), str(web), "--max", "2", "-o", "json", "--seed", "1"
    )
    assert code == 0
    assert json.loads(out) == {
        "pod": "prod/web",
        "replicas": 2,
        "nodes": {"node-a": 2, "node-b": 0, "gpu-1": 0},
        "stoppedBy": {"reason": "Max", "message": "stopped at --max 2"},
        "seed": 1,
    }


@pytest.mark.parametrize(
    ("pod_text", "message"),
    [
        (
            WEB.replace('cpu: "1"', "cpu: lots"),
            "pod.yaml: spec.containers[0].resources.requests.cpu: quantities must match",
        ),
        (WEB.replace("spec:\n", "spec:\n  nodeName: node-a\n"), "pod.yaml: spec.nodeName: must be empty"),
        (
            WEB.replace("spec:\n", "spec:\n  schedulerName: volcano\n"),
            'pod.yaml: spec.schedulerName: "volcano" is served by no profile',
        ),
        (WEB.replace("kind: Pod", "kind: Deployment"), "pod.yaml: kind: expected a Pod"),
        (WEB + "---\n" + WEB, "pod.yaml: expected exactly one Pod, found 2 documents"),
        ("spec: [unclosed\n", "pod.yaml: invalid YAML"),
    ],
)
def test_bad_pod_names_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pod_text: str, message: str
) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(pod_text)
    code, out, err = run(capsys, "capacity", str(EXAMPLES / "basic.yaml"), str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"Error: {path.parent}/{message}") or err.startswith(
        f"Error: {tmp_path / message}"
    ), err
    assert "Traceback" not in err


def test_missing_arguments_and_bad_max(capsys: pytest.CaptureFixture[str], web: Path) -> None:
    code, _, err = run(capsys, "capacity", str(EXAMPLES / "basic.yaml"))
    assert code == 1 and "requires a STATE file and a POD file argument" in err
    code, _, err = run(capsys, "capacity", str(EXAMPLES / "basic.yaml"), str(web), "--max", "-1")
    assert code != 0 and "--max: invalid count -1: must be 0 or more" in err
    code, _, err = run(capsys, "capacity", str(EXAMPLES / "missing.yaml"), str(web))
    assert code == 2 and "missing.yaml: no such file" in err
