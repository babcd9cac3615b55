"""The example files the docs hand to other programs: they load where the docs say they do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from docs.blocks import REPO_ROOT

from app.cli.main import build_parser
from kube.controlplane import kube_scheduler_write_config

KUBE_SCHEDULER_CONFIG = REPO_ROOT / "examples" / "kube-scheduler-config.yaml"


@pytest.mark.kube
def test_the_kube_scheduler_example_loads_in_the_stock_kube_scheduler(tmp_path: Path) -> None:
    """``examples/kube-scheduler-config.yaml``, with its kubeconfig path filled in as the README's
    quickstart does, is a configuration kube-scheduler v1.36.3 accepts, and its extender is berth at the
    address ``berth serve`` listens on by default, for filter, prioritize and bind."""
    kubeconfig = tmp_path / "scheduler.kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(
        KUBE_SCHEDULER_CONFIG.read_text().replace("/path/to/scheduler.kubeconfig", str(kubeconfig))
    )
    out = tmp_path / "completed.yaml"
    done = kube_scheduler_write_config(out, f"--config={config}")
    assert done.returncode == 0, done.stderr[-3000:]
    completed: dict[str, Any] = yaml.safe_load(out.read_text())
    (extender,) = completed["extenders"]
    serve_defaults = build_parser().parse_args(["serve"])
    assert extender["urlPrefix"] == f"http://{serve_defaults.address}:{serve_defaults.port}"
    assert (extender["filterVerb"], extender["prioritizeVerb"], extender["bindVerb"]) == (
        "filter",
        "prioritize",
        "bind",
    )
    assert extender["nodeCacheCapable"] is True
