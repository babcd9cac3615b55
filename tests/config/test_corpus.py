"""berth and the real kube-scheduler v1.36.3 on a corpus of configuration files (tests/config/corpus/):
the same verdict (accepted or refused), and for every file both accept the same completed
configuration, berth's ``dump_config`` against ``kube-scheduler --write-config-to``.

The corpus: kubernetes' own scheduler test configurations (extracted from the v1.36.3 sources in the
Go module cache; each file names its origin), examples written from the Kubernetes scheduler
documentation, the configurations HAMi, TopoLVM, gpushare and Intel's TAS/GAS document for their
extenders, and edge cases. ``@KUBECONFIG@`` in a file stands for a kubeconfig the test writes
(kube-scheduler reads ``clientConnection.kubeconfig`` before it writes the configuration).

berth's registry lacks some of kube-scheduler's default plugins (the volume plugins, DynamicResources,
NodeDeclaredFeatures), computed from the registry: they are taken out of kube-scheduler's completed
configuration before comparing, and a file that enables such a plugin or gives it args is compared
only when both accept it (berth refuses to enable a plugin it does not have, and cannot validate its
args).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.api.errors import FieldError
from app.config import dump_config, load_config
from app.config.defaults import KUBE_SCHEDULER_DEFAULT_PLUGINS
from app.config.load import ConfigFileError
from app.plugins.registry import in_tree_registry
from kube.controlplane import BUILD_HINT, default_bin_dir, kube_scheduler_write_config

pytestmark = pytest.mark.kube

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(CORPUS.glob("*.yaml"))
REGISTRY = in_tree_registry()
MISSING = {p.name for p in KUBE_SCHEDULER_DEFAULT_PLUGINS if not REGISTRY.has(p.name)}
"""kube-scheduler's default plugins berth's registry does not have."""

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "http://127.0.0.1:1"}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
users:
- name: nobody
  user: {}
"""


@pytest.fixture(scope="module")
def kube_scheduler() -> Path:
    binary = default_bin_dir() / "kube-scheduler"
    if not binary.exists():
        pytest.fail(f"{binary} is missing.\n{BUILD_HINT}")
    return binary


def _kube_verdict(config: Path, out: Path) -> tuple[dict[str, Any] | None, str]:
    """kube-scheduler's completed configuration (None when it refuses) and its error output."""
    proc = kube_scheduler_write_config(out, f"--config={config}")
    if proc.returncode != 0 or not out.exists():
        return None, proc.stderr[-2000:]
    return yaml.safe_load(out.read_text()), ""


def _berth_verdict(config: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        completed = dump_config(load_config(str(config), REGISTRY))
    except (FieldError, ConfigFileError) as err:
        return None, str(err)
    return json.loads(json.dumps(completed)), ""


def _without_missing_plugins(completed: dict[str, Any]) -> dict[str, Any]:
    """kube-scheduler's completed configuration without the plugins berth's registry lacks."""
    for profile in completed.get("profiles") or []:
        configs = [pc for pc in profile.get("pluginConfig") or [] if pc["name"] not in MISSING]
        profile.pop("pluginConfig", None)
        if configs:
            profile["pluginConfig"] = configs
        for plugin_set in (profile.get("plugins") or {}).values():
            enabled = [p for p in plugin_set.get("enabled") or [] if p["name"] not in MISSING]
            plugin_set.pop("enabled", None)
            if enabled:
                plugin_set["enabled"] = enabled
    return completed


def _configures_missing_plugin(text: str) -> set[str]:
    """The plugins berth lacks that the file enables or gives args to."""
    try:
        doc = next(yaml.safe_load_all(text), None)
    except yaml.YAMLError:
        return set()
    named: set[str] = set()
    for profile in (doc or {}).get("profiles") or [] if isinstance(doc, dict) else []:
        profile = profile or {}
        named.update(pc.get("name") for pc in profile.get("pluginConfig") or [] if isinstance(pc, dict))
        for plugin_set in (profile.get("plugins") or {}).values():
            named.update(
                p.get("name") for p in (plugin_set or {}).get("enabled") or [] if isinstance(p, dict)
            )
    return named & MISSING


def test_the_corpus_covers_kubernetes_docs_extenders_and_edge_cases() -> None:
    names = {f.name for f in FILES}
    assert {"hami.yaml", "topolvm.yaml", "gpushare.yaml", "intel-tas.yaml"} <= names
    assert all(any(n.startswith(prefix) for n in names) for prefix in ("k8s-", "docs-", "edge-"))
    assert len(FILES) >= 80


@pytest.mark.parametrize("source", FILES, ids=[f.name for f in FILES])
def test_same_verdict_and_completed_configuration_as_kube_scheduler(
    source: Path,
    kube_scheduler: Path,
    tmp_path: Path,  # kube_scheduler: the binary is there
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    text = source.read_text().replace("@KUBECONFIG@", str(kubeconfig))
    config = tmp_path / source.name
    config.write_text(text)
    kube, kube_error = _kube_verdict(config, tmp_path / "completed.yaml")
    berth, berth_error = _berth_verdict(config)
    if (kube is None) != (berth is None):
        missing = _configures_missing_plugin(text)
        if missing:
            pytest.skip(f"configures {', '.join(sorted(missing))}, which berth's registry does not have")
        verdict = {"kube-scheduler": kube_error or "accepted", "berth": berth_error or "accepted"}
        pytest.fail(f"different verdicts on {source.name}: {json.dumps(verdict, indent=2)}")
    if kube is None:
        assert berth_error  # both refuse; berth says why
        return
    assert berth == _without_missing_plugins(kube)
