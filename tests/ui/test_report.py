"""The offline report's file: what ``--html`` writes and prints, its trimming of large runs, and bad input."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from cli.clihelpers import run
from ui.reports import SIMULATE

from app.ui.report import REJECTED_NODES_KEPT, SCORED_NODES_KEPT, render_report, trim_pod


def _embedded(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="berth-data">(.*?)</script>', html, re.S)
    assert match is not None
    return orjson.loads(match.group(1))


def test_html_with_json_output_prints_the_same_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = str(SIMULATE / "basic.yaml")
    code, plain, _ = run(capsys, "simulate", state, "--seed", "3", "-o", "json")
    assert code == 0
    code, out, _ = run(
        capsys, "simulate", state, "--seed", "3", "-o", "json", "--html", str(tmp_path / "r.html")
    )
    assert code == 0 and out == plain
    report = _embedded((tmp_path / "r.html").read_text())
    assert (
        report["kind"] == "simulate"
        and report["doc"]["pods"][0]["pod"] == orjson.loads(plain)["pods"][0]["pod"]
    )
    assert report["weights"]["default-scheduler"]["NodeAffinity"] == 2


def test_html_with_table_output_names_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "r.html"
    code, out, _ = run(capsys, "simulate", str(SIMULATE / "unschedulable.yaml"), "--html", str(path))
    assert code == 0
    assert out == f"Wrote {path}: simulation: 4 pods (2 unschedulable, 2 scheduled), 4 nodes\n"
    html = path.read_text()
    assert "<script src=" not in html and '<link rel="stylesheet"' not in html  # everything inline
    assert "http://" not in html and "https://" not in html  # nothing fetched from anywhere


def test_an_unwritable_html_path_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "missing-dir" / "r.html"
    code, out, err = run(capsys, "simulate", str(SIMULATE / "basic.yaml"), "--html", str(path))
    assert code != 0 and out == ""
    assert f"--html {path}: No such file or directory" in err
    assert "Traceback" not in err


def test_names_cannot_end_the_embedded_script() -> None:
    doc = {"pods": [{"pod": "ns/</script><script>alert(1)</script>", "status": "Scheduled"}], "nodes": []}
    html = render_report(doc)
    assert "</script><script>alert" not in html
    assert _embedded(html)["doc"]["pods"][0]["pod"] == doc["pods"][0]["pod"]


def test_large_pods_keep_the_best_nodes_and_count_the_rest() -> None:
    rejected = {
        f"n{i:04}": {"plugin": "NodeResourcesFit", "status": "Unschedulable", "reasons": ["Insufficient cpu"]}
        for i in range(300)
    }
    rejected["t0"] = {
        "plugin": "TaintToleration",
        "status": "UnschedulableAndUnresolvable",
        "reasons": ["taint"],
    }
    scores = {f"s{i:04}": {"NodeResourcesFit": i % 100, "total": i} for i in range(100)}
    pod = {
        "pod": "ns/p",
        "filter": rejected,
        "scores": scores,
        "winner": {"node": "s0099", "total": 99},
        "runnerUp": {"node": "s0098", "total": 98},
    }
    trimmed = trim_pod(pod)
    assert (
        len(trimmed["filter"]) == REJECTED_NODES_KEPT
        and trimmed["filterOmitted"] == 301 - REJECTED_NODES_KEPT
    )
    assert trimmed["filterSummary"] == [
        {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "nodes": 300},
        {"plugin": "TaintToleration", "reason": "taint", "nodes": 1},
    ]
    assert sorted(trimmed["scores"]) == [f"s{i:04}" for i in range(100 - SCORED_NODES_KEPT, 100)]
    assert trimmed["scoresOmitted"] == 100 - SCORED_NODES_KEPT
    assert pod["filter"] is rejected and len(rejected) == 301  # the run's own document is left alone
