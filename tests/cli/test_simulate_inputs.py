"""``berth simulate`` input as a user feeds it: stdin, kubectl's List output, other schedulers' pods, seeds."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli.clihelpers import run

ROOT = Path(__file__).resolve().parents[2]
KUBECTL_LIST = ROOT / "examples" / "simulate" / "kubectl-list.yaml"


def pods_by_name(out: str) -> dict[str, dict[str, object]]:
    return {p["pod"]: p for p in json.loads(out)["pods"]}


def test_stdin_reads_kubectl_list_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(KUBECTL_LIST.read_text()))
    code, out, err = run(capsys, "simulate", "-", "-o", "json", "--seed", "5")
    assert code == 0, err
    pods = pods_by_name(out)
    # api-... runs on worker-1 (3 of 4 cpu), so the 2-cpu web pod can only go to worker-2.
    assert (pods["shop/web-5c8d7f9b6-abcde"]["status"], pods["shop/web-5c8d7f9b6-abcde"]["node"]) == (
        "Scheduled",
        "worker-2",
    )
    assert "shop/api-7d9f6c7b5-x2k4p" not in pods  # running pods have no row


def test_bad_stdin_names_stdin_and_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        sys, "stdin", io.StringIO("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n")
    )
    code, out, err = run(capsys, "simulate", "-")
    assert code == 2 and out == ""
    assert err.startswith("Error: <stdin>: document 1 (Pod default/p): spec.containers")
    assert "Traceback" not in err


def test_pods_of_other_schedulers_are_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", str(KUBECTL_LIST), "-o", "json", "--seed", "1")
    assert code == 0
    batch = pods_by_name(out)["jobs/batch-1"]
    assert (batch["status"], batch["node"], batch["message"]) == (
        "Skipped",
        None,
        'no profile serves schedulerName "volcano"',
    )
    code, out, _ = run(capsys, "simulate", str(KUBECTL_LIST), "--seed", "1")
    assert re.search(r"^jobs/batch-1 +Skipped +<none> +no profile serves", out, re.M)


def test_schedule_all_gives_them_to_the_first_profile(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", str(KUBECTL_LIST), "-o", "json", "--seed", "1", "--schedule-all")
    assert code == 0
    batch = pods_by_name(out)["jobs/batch-1"]
    assert batch["status"] == "Scheduled" and batch["node"] in ("worker-1", "worker-2")


def test_seed_is_printed_and_recorded_when_not_given(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", str(KUBECTL_LIST))
    assert code == 0
    match = re.search(r"^Seed (\d+) \(repeat this run exactly with --seed \1\)$", out, re.M)
    assert match, out
    code, out, _ = run(capsys, "simulate", str(KUBECTL_LIST), "-o", "json")
    assert isinstance(json.loads(out)["seed"], int)
    code, out, _ = run(capsys, "simulate", str(KUBECTL_LIST), "-o", "json", "--seed", "42")
    assert json.loads(out)["seed"] == 42


def _ties_state(tmp_path: Path) -> Path:
    """Eight identical nodes and twelve identical pods: every placement is a tie broken at random."""
    docs = [
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}, labels: {{kubernetes.io/hostname: n{i}}}}}\n"
        'status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}\n'
        for i in range(8)
    ]
    docs += [
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\n"
        'spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}\n'
        for i in range(12)
    ]
    path = tmp_path / "ties.yaml"
    path.write_text("---\n".join(docs))
    return path


def _berth_json(state: Path, seed: str, hash_seed: str) -> dict[str, object]:
    """One run in a fresh interpreter, so string hashing (set order) differs between runs too."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    argv = [sys.executable, "-m", "app.cli.main", "simulate", str(state), "-o", "json", "--seed", seed]
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout)


def test_same_seed_repeats_a_run_exactly(tmp_path: Path) -> None:
    state = _ties_state(tmp_path)
    first = _berth_json(state, "123", "1")
    assert first == _berth_json(state, "123", "2")
    placements = {json.dumps(_berth_json(state, str(seed), "1")["pods"]) for seed in (1, 2, 3)}
    assert len(placements) > 1, "ties among equal nodes are broken at random: seeds must matter"
