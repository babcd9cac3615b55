"""``berth simulate --config`` with ``extenders:``: the configured extenders take part as they do
in ``berth run`` (and kube-scheduler), seen through the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from extenderstub import stub_extender, unused_url

from app.cli.main import main
from builders import node_dict, pod_dict


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _files(tmp_path: Path, extenders: list[dict[str, Any]]) -> tuple[str, str]:
    state = tmp_path / "state.yaml"
    docs = [node_dict(n) for n in ("a", "b", "c")]
    docs += [pod_dict(f"web-{i}", requests=[{"cpu": "1"}]) for i in range(2)]
    state.write_text(yaml.safe_dump_all(docs))
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "extenders": extenders,
            }
        )
    )
    return str(state), str(config)


def test_simulate_calls_the_configured_extenders(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def no_license_on_c(body: dict[str, Any]) -> tuple[int, Any]:
        names = body["NodeNames"]
        return 200, {
            "NodeNames": [n for n in names if n != "c"],
            "FailedNodes": {"c": "no license"} if "c" in names else {},
        }

    def prefer_b(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, [{"Host": n, "Score": 10 if n == "b" else 0} for n in body["NodeNames"]]

    with stub_extender({"filter": no_license_on_c, "prioritize": prefer_b}) as stub:
        state, config = _files(
            tmp_path,
            [
                {
                    "urlPrefix": stub.url,
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "weight": 10,
                    "nodeCacheCapable": True,
                }
            ],
        )
        code, out, err = _run(capsys, "simulate", state, "--config", config, "-o", "json", "--seed", "1")
    assert code == 0, err
    pods = json.loads(out)["pods"]
    assert [(p["pod"], p["node"]) for p in pods] == [("default/web-0", "b"), ("default/web-1", "b")]
    assert pods[0]["filter"]["c"]["reasons"] == ["no license"]
    assert pods[0]["scores"]["b"][stub.url] == 10 * 10 * 10
    assert stub.verbs() == ["filter", "prioritize"] * 2


def test_simulate_reports_a_required_extender_that_is_down(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = unused_url()
    state, config = _files(tmp_path, [{"urlPrefix": url, "filterVerb": "filter"}])
    code, out, err = _run(capsys, "simulate", state, "--config", config, "-o", "json")
    assert code == 0, err
    pods = json.loads(out)["pods"]
    assert {p["status"] for p in pods} == {"Error"}
    assert pods[0]["message"].startswith(f'Post "{url}/filter": dial tcp 127.0.0.1:')
