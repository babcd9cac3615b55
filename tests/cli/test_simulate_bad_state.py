"""Mutated state files: ``berth simulate`` and ``berth serve --state`` name the file and field, exit non-zero,
and never print a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli.test_serve import free_port

ROOT = Path(__file__).resolve().parents[2]
NODE = 'apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable: {cpu: "2", pods: "10"}\n'
POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: [{name: c}]\n"
NODE_JSON = '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"2","pods":"10"}}'

BAD = {
    "nul.yaml": (
        NODE + "---\n" + POD.replace("name: web", "name: we\x00b"),
        "line 11, column 11: invalid YAML: unacceptable character #x0000",
    ),
    "escape.yaml": (
        NODE + "---\n" + POD.replace("name: web", 'name: "\\U0011FFFF"'),
        "line 11, column 12: invalid YAML (document 2): while scanning a double-quoted scalar found an "
        "escape beyond Unicode's last code point U+10FFFF",
    ),
    "big-int.yaml": (
        NODE + "---\n" + POD + "  priority: " + "1" * 5000 + "\n",
        "document 2 (Pod default/web): spec.priority: integer of 5000 digits is out of range",
    ),
    "big-int.json": (
        "[" + NODE_JSON + ', "spec": {"podCIDR": -' + "9" * 4400 + "}}]",
        "document 1 (Node n1): spec.podCIDR: integer of 4400 digits is out of range",
    ),
    "deep.json": (
        "[" + NODE_JSON + ', "extra": ' + "[" * 1000 + "]" * 1000 + "}]",
        "document 1 (Node n1): extra[0][0]",
    ),
    "deep.yaml": (NODE + "extra: " + "[" * 500 + "]" * 500 + "\n", "document 1 (Node n1): extra[0][0]"),
    "deep-block.yaml": (
        NODE + "extra:\n" + "".join(" " * i + "- " + "\n" for i in range(0, 600, 2)),
        "nested more than 254 levels deep",
    ),
}


def berth(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("name", BAD)
def test_simulate_names_the_file_and_field_without_a_traceback(tmp_path: Path, name: str) -> None:
    text, expected = BAD[name]
    state = tmp_path / name
    state.write_text(text, encoding="utf-8")
    proc = berth("simulate", str(state))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"Error: {state}: ")
    assert expected in proc.stderr


def test_serve_state_shares_the_loader(tmp_path: Path) -> None:
    text, expected = BAD["big-int.yaml"]
    state = tmp_path / "state.yaml"
    state.write_text(text)
    proc = berth("serve", "--state", str(state), "--port", str(free_port()), "--secure-port", "0")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1
    assert f"Error: {state}: {expected}" in proc.stderr


@pytest.mark.parametrize("output", ["json", "table"])
def test_lone_surrogates_are_replaced_as_go_decodes_them(tmp_path: Path, output: str) -> None:
    # Go's encoding/json turns an unpaired \\ud800 into U+FFFD; so does berth, and it can print the result.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "x\ud800"}}}
    pod["spec"] = {"containers": [{"name": "c"}]}
    state = tmp_path / "state.json"
    state.write_text("[" + NODE_JSON + "}, " + json.dumps(pod) + "]")
    proc = berth("simulate", str(state), "-o", output)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0
    assert "default/web" in proc.stdout
