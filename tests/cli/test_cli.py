"""The ``berth`` command as a user runs it: exit codes, messages, --write-config-to, simulate, plugins."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from cli.clihelpers import run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.startswith("berth v") and "v1.36.3" in out


def test_help_groups_flags_by_set(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "serve", "--help")
    assert code == 0
    for group in ("Misc flags", "Serving flags", "Logs flags"):
        assert group in out


def test_positional_arguments_are_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "serve", "extra")
    assert code == 1
    assert 'Error: "berth serve" does not take any arguments, got ["extra"]' in err


def test_unknown_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "simulate", "--nope")
    assert code == 1
    assert "unknown flag: --nope" in err


def test_write_config_to_stdout_has_every_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "--write-config-to", "-")
    assert code == 0
    cfg = yaml.safe_load(out)
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    assert cfg["parallelism"] == 16
    assert cfg["podInitialBackoffSeconds"] == 1 and cfg["podMaxBackoffSeconds"] == 10
    profile = cfg["profiles"][0]
    assert profile["schedulerName"] == "default-scheduler"
    names = [p["name"] for p in profile["plugins"]["multiPoint"]["enabled"]]
    assert names[:4] == ["SchedulingGates", "PrioritySort", "NodeUnschedulable", "NodeName"]
    args = {pc["name"]: pc["args"] for pc in profile["pluginConfig"]}
    assert args["NodeResourcesFit"]["scoringStrategy"]["type"] == "LeastAllocated"


def test_write_config_round_trips_through_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "out.yaml"
    assert run(capsys, "serve", "--write-config-to", str(target))[0] == 0
    again = tmp_path / "again.yaml"
    code, _, err = run(capsys, "serve", "--config", str(target), "--write-config-to", str(again))
    assert code == 0, err
    assert yaml.safe_load(target.read_text()) == yaml.safe_load(again.read_text())


def test_bad_config_names_file_and_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args:\n      scoringStrategy:\n        type: Foo\n"
    )
    code, _, err = run(capsys, "simulate", "--config", str(cfg), str(EXAMPLES / "simulate" / "basic.yaml"))
    assert code == 1
    assert str(cfg) in err
    assert "profiles[0].pluginConfig[0].args.scoringStrategy.type" in err
    assert "Traceback" not in err


def test_missing_config_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "serve", "--config", str(tmp_path / "missing.yaml"))
    assert code == 1
    assert "missing.yaml" in err and "Traceback" not in err


def test_simulate_json_exact_fit_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "simulate", str(EXAMPLES / "simulate" / "unschedulable.yaml"), "-o", "json", "--seed", "1"
    )
    assert code == 0
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    big = pods["default/big"]
    assert big["status"] == "Unschedulable" and big["node"] is None
    assert big["message"] == (
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. "
        # The cpu request exceeds the node's allocatable (UnschedulableAndUnresolvable): no preemption helps.
        "no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )


def test_simulate_bad_state_exits_2_naming_document_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = tmp_path / "state.yaml"
    state.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4'}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n"
    )
    code, _, err = run(capsys, "simulate", str(state))
    assert code == 2
    assert "state.yaml" in err and "document 2" in err
    assert "spec.containers[0].resources.requests.cpu" in err


def test_simulate_requires_state(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "simulate")
    assert code == 1 and "STATE" in err


def test_out_of_tree_plugin_from_module(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES / "plugins"))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n      enabled:\n"
        "      - {name: PreferLabel, weight: 50}\n  pluginConfig:\n  - name: PreferLabel\n"
        "    args: {label: example.com/fast}\n"
    )
    state = tmp_path / "state.yaml"
    nodes = "".join(
        f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: {n}, labels: {{{labels}}}}}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
        for n, labels in (("plain-1", ""), ("fast-1", "example.com/fast: 'yes'"), ("plain-2", ""))
    )
    pods = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: wants-fast}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: avoids, annotations: {example.com/avoid-label: 'true'}}\n"
        "spec: {nodeName: '', containers: [{name: c, resources: {requests: {cpu: 100m}}}],"
        " nodeSelector: {example.com/fast: 'yes'}}\n"
    )
    state.write_text(nodes + pods)
    code, out, err = run(
        capsys, "simulate", str(state), "--config", str(cfg), "--plugin-module", "prefer_label", "-o", "json"
    )
    assert code == 0, err
    result = {p["pod"]: p for p in json.loads(out)["pods"]}
    assert result["default/wants-fast"]["node"] == "fast-1"
    assert result["default/wants-fast"]["scores"]["fast-1"]["PreferLabel"] == 100
    avoids = result["default/avoids"]
    assert avoids["status"] == "Unschedulable"
    assert avoids["filter"]["fast-1"]["plugin"] == "PreferLabel"
    assert avoids["filter"]["fast-1"]["reasons"] == ["node(s) had label example.com/fast that the pod avoids"]


def test_unknown_plugin_module(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "simulate", "x.yaml", "--plugin-module", "no_such_module_xyz")
    assert code == 1
    assert 'cannot import plugin module "no_such_module_xyz"' in err


def test_python_module_entry(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "app.cli.main", "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0 and "berth" in proc.stdout


def test_verbosity_and_json_logging(capsys: pytest.CaptureFixture[str]) -> None:
    state = str(EXAMPLES / "simulate" / "gated-priority.yaml")
    code, _, err = run(capsys, "simulate", state, "-v", "3", "--seed", "1")
    assert code == 0
    assert 'Attempting to schedule pod" pod="apps/payments"' in err
    assert "scheduler.py:" in err  # the caller, not the logging helper

    code, _, err = run(capsys, "simulate", state, "--v", "2", "--logging-format", "json", "--seed", "1")
    assert code == 0
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    bound = [entry for entry in lines if entry["msg"] == "Successfully bound pod to node"]
    assert bound and bound[0]["pod"] == "apps/payments" and bound[0]["v"] == 2
    assert not any(entry["msg"] == "Attempting to schedule pod" for entry in lines)  # that is V(3)

    code, _, err = run(capsys, "simulate", state, "--seed", "1")
    assert code == 0 and "Successfully bound" not in err


def test_the_readme_standalone_example_config_loads_in_berth_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "run", "--config", str(EXAMPLES / "standalone-config.yaml"), "--write-config-to", "-"
    )
    assert code == 0
    cfg = yaml.safe_load(out)
    assert [p["schedulerName"] for p in cfg["profiles"]] == ["berth-scheduler"]
    assert cfg["leaderElection"]["leaderElect"] is True
    assert cfg["leaderElection"]["resourceName"] == "berth-scheduler"


@pytest.mark.parametrize(
    ("command", "prefix"),
    [("serve", "--stat"), ("simulate", "--outp"), ("run", "--leader-el"), ("serve", "--max-request")],
)
def test_flag_prefixes_are_unknown_flags(
    capsys: pytest.CaptureFixture[str], command: str, prefix: str
) -> None:
    # pflag has no abbreviations: `--stat` is not `--state`.
    code, _, err = run(capsys, command, prefix, "x")
    assert code == 1
    assert f"unknown flag: {prefix}" in err


def test_a_plugin_exception_in_simulate_is_that_pods_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plugin from tests/server/plugins raises RuntimeError in Filter for annotated pods.
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "server" / "plugins"))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  plugins:\n    filter:\n      enabled: [{name: ExplodingFilter}]\n"
    )
    state = tmp_path / "state.yaml"
    state.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', pods: '10'}}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: boom, annotations: {example.com/explode: 'true'}}\n"
        "spec: {containers: [{name: c}]}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: fine}\nspec: {containers: [{name: c}]}\n"
    )
    code, out, err = run(
        capsys,
        "simulate",
        str(state),
        "--config",
        str(cfg),
        "--plugin-module",
        "exploding_filter",
        "-o",
        "json",
    )
    assert code == 0, err
    result = {p["pod"]: p for p in json.loads(out)["pods"]}
    assert result["default/boom"]["status"] == "Error"
    assert result["default/boom"]["message"] == (
        'plugin "ExplodingFilter" raised RuntimeError: plugin exploded on node n1'
    )
    assert result["default/fine"]["status"] == "Scheduled"  # one plugin bug costs one pod, not the run
    assert 'Warning: default/boom: plugin "ExplodingFilter" raised RuntimeError' in err


def test_a_duplicate_plugin_names_both_sources(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (EXAMPLES / "plugins" / "prefer_label.py").read_text()
    (tmp_path / "prefer_label_copy.py").write_text(source)
    monkeypatch.syspath_prepend(str(EXAMPLES / "plugins"))
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run(
        capsys,
        "simulate",
        "x.yaml",
        "--plugin-module",
        "prefer_label",
        "--plugin-module",
        "prefer_label_copy",
    )
    assert code == 1
    assert (
        'a plugin named "PreferLabel" already exists (from --plugin-module prefer_label); '
        "--plugin-module prefer_label_copy registers another"
    ) in err
