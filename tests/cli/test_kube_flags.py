"""kube-scheduler's flags on berth run: names against the real binary, precedence, gates, version."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from app import featuregates
from app.api.validation import parse_duration
from app.cli.flagsdoc import flags_markdown, run_parser
from app.cli.kubeflags import apply_deprecated
from app.cli.main import main
from app.config import load_config
from app.config.types import SchedulerConfiguration
from app.plugins.registry import in_tree_registry
from tests.kube.controlplane import default_bin_dir

ROOT = Path(__file__).resolve().parents[2]
BERTH_ONLY = {
    "anonymous-auth",
    "authorization-static-rules",
    "plugin-module",
    # every listener's limits (docs/limits.md): kube-scheduler has them built in, without flags
    "read-header-timeout",
    "read-body-timeout",
    "idle-timeout",
    "max-header-bytes",
    "max-connections",
}


def _names(help_text: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^\s+(?:-\w(?: \w+)?, )?--([a-z0-9-]+)", help_text, re.M)}


def test_berth_run_has_every_flag_of_the_real_kube_scheduler() -> None:
    binary = default_bin_dir() / "kube-scheduler"
    if not binary.exists():
        pytest.skip("kube-scheduler v1.36.3 is not built (hack/control-plane.sh build)")
    kube = _names(subprocess.run([str(binary), "--help"], capture_output=True, text=True, check=False).stdout)
    berth = _names(run_parser().format_help())
    assert len(kube) > 60
    assert kube - berth == set()
    assert berth - kube == BERTH_ONLY


def test_flags_doc_is_generated_from_the_parser() -> None:
    assert (ROOT / "docs" / "flags.md").read_text() == flags_markdown(), "run hack/gen-flags-doc.py"


def _args(*argv: str) -> argparse.Namespace:
    return run_parser().parse_args(list(argv))


def test_deprecated_flags_set_the_configuration_without_config() -> None:
    args = _args("--kubeconfig", "/k", "--kube-api-qps", "7", "--kube-api-burst", "9", "--profiling=false")
    cfg = apply_deprecated(SchedulerConfiguration(), args, config_given=False)
    assert (cfg.client_connection.kubeconfig, cfg.client_connection.qps, cfg.client_connection.burst) == (
        "/k",
        7.0,
        9,
    )
    assert cfg.enable_profiling is False


def test_deprecated_flags_are_ignored_with_config() -> None:
    base = SchedulerConfiguration()
    args = _args("--kubeconfig", "/k", "--kube-api-qps", "7")
    assert apply_deprecated(base, args, config_given=True) == base


def test_feature_gates_take_the_kube_prefix_and_check_dependencies() -> None:
    gates = featuregates.FeatureGates()
    gates.set_flag(["kube:DynamicResourceAllocation=true"])
    assert gates.enabled("DynamicResourceAllocation")
    with pytest.raises(featuregates.FeatureGateError, match="do not mix use"):
        gates.set_flag(["kube:A=true,B=true"])
    with pytest.raises(featuregates.FeatureGateError, match=r"GangScheduling is enabled, but depends on"):
        gates.set_flag(["GangScheduling=true,GenericWorkload=false"])


def test_version_raw_prints_the_version_struct(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--version=raw"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith('version.Info{Major:"')


def test_bad_tls_min_version_names_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--tls-min-version", "VersionTLS9", "--secure-port", "0", "--write-config-to", "-"])
    assert code == 0  # --write-config-to exits before serving, as kube's
    code = main(["run", "--tls-min-version", "VersionTLS9", "--master", "http://127.0.0.1:1"])
    assert code == 1
    assert 'unknown tls version "VersionTLS9"' in capsys.readouterr().err


def test_deprecated_flags_with_config_log_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    code = main(["run", "--config", str(config), "--kube-api-qps", "7", "--write-config-to", "-"])
    captured = capsys.readouterr()
    assert code == 0
    assert "qps: 50" in captured.out  # the file's (default) value, not the flag's
    assert "Deprecated flags are ignored because --config is given" in captured.err
    assert 'flags="--kube-api-qps"' in captured.err


def test_show_hidden_metrics_accepts_only_the_previous_minor(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--show-hidden-metrics-for-version", "1.30"]) == 1
    assert (
        "must be omitted or have the value '1.35'; only the previous minor version" in capsys.readouterr().err
    )


def test_allow_metric_labels_keys_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--allow-metric-labels", "a=b"]) == 1
    assert "must have keys with format `metricName,labelName`" in capsys.readouterr().err


def test_split_stream_needs_the_alpha_gate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--log-text-split-stream", "--write-config-to", "/dev/null"]) == 1
    assert "Feature LoggingAlphaOptions is disabled" in capsys.readouterr().err


def test_vmodule_raises_the_level_of_matching_files() -> None:
    from app import logs

    try:
        logs.configure(0, vmodule=[("test_kube_*", 4)])
        assert logs.enabled(4)
        assert not logs.enabled(5)
    finally:
        logs.configure(0)
    assert not logs.enabled(4)


def _kube_help() -> str:
    binary = default_bin_dir() / "kube-scheduler"
    if not binary.exists():
        pytest.skip("kube-scheduler v1.36.3 is not built (hack/control-plane.sh build)")
    return subprocess.run([str(binary), "--help"], capture_output=True, text=True, check=False).stdout


def _kube_defaults(help_text: str) -> dict[str, tuple[str, str]]:
    """``flag -> (type, default)`` of every flag whose help ends with ``(default ...)``."""
    flags: dict[str, list[str]] = {}
    current = ""
    for line in help_text.splitlines():
        match = re.match(r"^\s+(?:-\w, )?--([a-z0-9-]+)(?: (\S+))?\s{2,}(.*)$", line)
        if match:
            current = match.group(1)
            flags[current] = [match.group(2) or "bool", match.group(3)]
        elif current and line.strip():
            flags[current][1] += " " + line.strip()
    found = {}
    for flag, (kind, text) in flags.items():
        default = re.search(r"\(default (.*)\)\s*$", text)
        if default:
            found[flag] = (kind, default.group(1).strip('"'))
    return found


def _go_value(kind: str, text: str) -> object:
    if kind == "duration":
        return parse_duration(text)
    if kind in ("int", "int32", "float32"):
        return float(text)
    if kind == "bool":
        return text == "true"
    if kind in ("strings", "int32Slice", "stringToString"):
        inner = text.strip("[]")
        return inner.split(",") if inner else []
    return text


# Flags berth leaves unset (None) to know whether they were given, as kube's flagset.Changed: their
# effective default is the configuration's, which must then be kube's.
CONFIG_DEFAULTS = {
    "contention-profiling": lambda c: c.enable_contention_profiling,
    "kube-api-burst": lambda c: c.client_connection.burst,
    "kube-api-content-type": lambda c: c.client_connection.content_type,
    "kube-api-qps": lambda c: c.client_connection.qps,
    "leader-elect": lambda c: c.leader_election.leader_elect,
    "leader-elect-lease-duration": lambda c: c.leader_election.lease_duration,
    "leader-elect-renew-deadline": lambda c: c.leader_election.renew_deadline,
    "leader-elect-resource-lock": lambda c: c.leader_election.resource_lock,
    "leader-elect-resource-name": lambda c: c.leader_election.resource_name,
    "leader-elect-resource-namespace": lambda c: c.leader_election.resource_namespace,
    "profiling": lambda c: c.enable_profiling,
}


def test_defaults_are_kube_schedulers() -> None:
    defaults = _kube_defaults(_kube_help())
    assert len(defaults) > 20
    actions = {o[2:]: a for a in run_parser()._actions for o in a.option_strings if o.startswith("--")}
    cfg = load_config(None, in_tree_registry())
    for flag, (kind, text) in defaults.items():
        ours = actions[flag].default
        if ours is None:
            ours = CONFIG_DEFAULTS[flag](cfg)
        if isinstance(ours, dict):
            ours = [f"{k}={v}" for k, v in ours.items()]
        if isinstance(ours, (int, float)) and not isinstance(ours, bool):
            ours = float(ours)
        assert ours == _go_value(kind, text), flag
