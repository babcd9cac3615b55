"""``berth simulate STATE --config A --compare-config B`` as a user runs it: the comparison block within
120 columns, the JSON ``comparison``, and a bad B configuration named by file and field (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.clihelpers import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "compare"
STATE = str(EXAMPLES / "state.yaml")
LEAST = str(EXAMPLES / "least-allocated.yaml")
MOST = str(EXAMPLES / "most-allocated.yaml")


def test_table_shows_the_moves_the_node_deltas_and_the_empty_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "simulate", STATE, "--config", LEAST, "--compare-config", MOST, "--seed", "1"
    )
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 120
    start = lines.index("Comparison (same state, same seed):")
    assert lines[start + 1 : start + 3] == [f"  A = {LEAST}", f"  B = {MOST}"]
    assert "Scheduled: A 6, B 6; unschedulable: A 1, B 1 (0); 5 of 7 pending pods placed differently" in lines
    assert "shop/web-0   node-4   node-1   NodeResourcesFit 81→340" in lines
    assert "node-2   50% → 0% (-50)     25% → 0% (-25)    2 → 0 (-2)" in lines
    assert "             B 2 (node-2, node-4)" in lines
    # A's own report comes first, unchanged; the seed line stays last.
    assert lines[0].startswith("POD ")
    assert lines[-1] == "Seed 1 (repeat this run exactly with --seed 1)"


def test_same_seed_same_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = {run(capsys, "simulate", STATE, "--compare-config", MOST, "--seed", "5")[1] for _ in range(2)}
    assert len(outputs) == 1


def test_json_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", STATE, "--compare-config", MOST, "-o", "json", "--seed", "1")
    assert code == 0
    doc = json.loads(out)
    assert doc["comparison"]["a"]["config"] is None  # no --config: the defaults
    assert doc["comparison"]["b"]["config"] == MOST
    assert doc["comparison"]["emptyNodes"]["b"] == ["node-2", "node-4"]
    code, out, _ = run(capsys, "simulate", STATE, "-o", "json", "--seed", "1")
    assert "comparison" not in json.loads(out)


def test_bad_compare_config_names_file_and_field(capsys: pytest.CaptureFixture[str]) -> None:
    bad = str(EXAMPLES / "bad-config.yaml")
    code, out, err = run(capsys, "simulate", STATE, "--compare-config", bad)
    assert (code, out) == (2, "")
    assert err == (
        f"Error: {bad}: profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "
        '"MostAlocated": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"\n'
    )


def test_missing_or_unbuildable_compare_config_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "simulate", STATE, "--compare-config", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert err == f"Error: {tmp_path / 'nope.yaml'}: no such file\n"
    # Valid as a file, but its profile has no bind plugin: the engine cannot be built from it.
    no_bind = tmp_path / "no-bind.yaml"
    no_bind.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  plugins:\n    bind: {disabled: [{name: DefaultBinder}]}\n"
    )
    code, _, err = run(capsys, "simulate", STATE, "--compare-config", str(no_bind))
    assert code == 2
    assert err.startswith(f"Error: {no_bind}: ")
    assert "bind plugin" in err
