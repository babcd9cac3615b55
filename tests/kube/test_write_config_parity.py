"""``--write-config-to`` parity with the real kube-scheduler v1.36.3 binary, for the plugins berth has.

kube-scheduler's own default configuration is the reference: its default profile's MultiPoint list
(order and weights) restricted to berth's plugins, and its pluginConfig entries for them, must be what
berth writes. Plugins berth does not have yet (another issue's DynamicResources, NodeDeclaredFeatures)
are left out of the comparison, not out of kube's list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from app.config import dump_config, load_config
from app.plugins.registry import in_tree_registry
from kube.controlplane import default_bin_dir, kube_scheduler_write_config, missing_binaries

pytestmark = pytest.mark.kube


def kube_default_config(tmp_path: Path) -> dict[str, Any]:
    bin_dir = default_bin_dir()
    if missing_binaries(bin_dir):
        pytest.skip(f"control-plane binaries missing in {bin_dir}")
    out = tmp_path / "kube.yaml"
    done = kube_scheduler_write_config(out)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded: dict[str, Any] = yaml.safe_load(out.read_text())
    return loaded


def test_default_profile_and_plugin_args_match_kube_scheduler(tmp_path: Path) -> None:
    kube = kube_default_config(tmp_path)["profiles"][0]
    registry = in_tree_registry()
    berth: Any = dump_config(load_config(None, registry))["profiles"][0]
    ours = set(registry.names())
    kube_enabled = [p for p in kube["plugins"]["multiPoint"]["enabled"] if p["name"] in ours]
    assert berth["plugins"]["multiPoint"]["enabled"] == kube_enabled
    kube_args = [c for c in kube["pluginConfig"] if c["name"] in ours]
    assert berth["pluginConfig"] == kube_args
    # The volume plugins are among them, as kube-scheduler writes them.
    names = [p["name"] for p in kube_enabled]
    assert names[names.index("NodeResourcesFit") + 1 : names.index("PodTopologySpread")] == [
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
    ]
    assert {
        "args": {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "bindTimeoutSeconds": 600,
            "kind": "VolumeBindingArgs",
        },
        "name": "VolumeBinding",
    } in kube_args


def test_kube_schedulers_own_config_loads_in_berth(tmp_path: Path) -> None:
    """kube-scheduler's written default configuration, minus the plugins berth lacks, loads unchanged."""
    kube = kube_default_config(tmp_path)
    registry = in_tree_registry()
    ours = set(registry.names())
    for profile in kube["profiles"]:
        enabled = profile["plugins"]["multiPoint"]["enabled"]
        profile["plugins"]["multiPoint"]["enabled"] = [p for p in enabled if p["name"] in ours]
        profile["pluginConfig"] = [c for c in profile["pluginConfig"] if c["name"] in ours]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(kube))
    cfg = load_config(str(path), registry)
    volume_binding = next(c for c in cfg.profiles[0].plugin_config if c.name == "VolumeBinding")
    assert volume_binding.args.bind_timeout_seconds == 600
