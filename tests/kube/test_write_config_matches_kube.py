"""berth's default configuration against kube-scheduler v1.36.3's own ``--write-config-to``.

Both binaries write their defaulted configuration; everything must be equal, DynamicResources
(weight 2, before DefaultPreemption, DynamicResourcesArgs filterTimeout 10s and bindingTimeout
10m0s) and NodeDeclaredFeatures (last) included. The four volume plugins are another issue's
(VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone): while berth's registry lacks
them, they are taken out of kube-scheduler's side only, so the rest still compares exactly.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.plugins.registry import in_tree_registry
from kube.controlplane import default_bin_dir, kube_scheduler_write_config

pytestmark = pytest.mark.kube

VOLUME_PLUGINS = {"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"}


def _without_missing_volume_plugins(cfg: dict[str, Any]) -> dict[str, Any]:
    missing = {name for name in VOLUME_PLUGINS if not in_tree_registry().has(name)}
    for profile in cfg["profiles"]:
        profile["pluginConfig"] = [pc for pc in profile["pluginConfig"] if pc["name"] not in missing]
        for point in profile["plugins"].values():
            if point.get("enabled"):
                point["enabled"] = [p for p in point["enabled"] if p["name"] not in missing]
    return cfg


def test_default_configuration_equals_kube_schedulers(tmp_path: Path) -> None:
    kube_scheduler = default_bin_dir() / "kube-scheduler"
    if not kube_scheduler.exists():
        pytest.fail(f"{kube_scheduler} missing: run hack/control-plane.sh build", pytrace=False)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "unused"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    kube_out, berth_out = tmp_path / "kube.yaml", tmp_path / "berth.yaml"
    done = kube_scheduler_write_config(kube_out, "--kubeconfig", str(kubeconfig))
    assert done.returncode == 0, done.stderr[-3000:]
    subprocess.run(
        [sys.executable, "-m", "app.cli.main", "simulate", "--write-config-to", str(berth_out)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    kube_cfg = yaml.safe_load(kube_out.read_text())
    kube_cfg["clientConnection"]["kubeconfig"] = ""  # the flag's file, not a default
    berth_cfg = yaml.safe_load(berth_out.read_text())
    assert berth_cfg == _without_missing_volume_plugins(kube_cfg)
    names = [p["name"] for p in berth_cfg["profiles"][0]["plugins"]["multiPoint"]["enabled"]]
    assert names.index("DynamicResources") == names.index("DefaultPreemption") - 1
    assert names[-1] == "NodeDeclaredFeatures"
