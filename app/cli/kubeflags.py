"""kube-scheduler's flag sets that ``berth run`` adds to the shared ones: "Deprecated", "Metrics",
"Feature gate" (with ``--emulated-version``), the logging flags beyond ``-v`` and ``--version``.

Precedence is kube-scheduler's (``Options.ApplyTo``): without ``--config`` the deprecated flags
set the configuration (``--kubeconfig``, ``--kube-api-*``, ``--profiling``,
``--contention-profiling``); with ``--config`` the file alone decides and they are ignored.
kube-scheduler ignores them silently; berth logs one warning naming them, since a manifest that
passes both usually expects the flag to win. ``--pod-max-in-unschedulable-pods-duration`` always
applies (it has no configuration field).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import re
import sys
from typing import Any

from app import __version__, featuregates, logs
from app.cli.options import (
    KUBE_VERSION,
    CommandError,
    StringSliceAction,
    add_bool_flag,
    go_duration,
    parse_bool,
    version_text,
)
from app.config.types import SchedulerConfiguration
from app.server.info import version_info

__all__ = [
    "DEPRECATED_FLAGS",
    "VersionAction",
    "add_deprecated_flags",
    "add_feature_gate_flags",
    "add_metrics_flags",
    "apply_deprecated",
    "apply_emulation",
    "check_versions",
]

PROTOBUF = "application/vnd.kubernetes.protobuf"
# Deprecated flag -> (configuration field path, attribute of the parsed arguments)
DEPRECATED_FLAGS = {
    "--profiling": "profiling",
    "--contention-profiling": "contention_profiling",
    "--kubeconfig": "kubeconfig",
    "--kube-api-content-type": "kube_api_content_type",
    "--kube-api-qps": "kube_api_qps",
    "--kube-api-burst": "kube_api_burst",
}
_IGNORED = "This parameter is ignored if a config file is specified in --config."


def add_deprecated_flags(parser: argparse.ArgumentParser) -> None:
    """kube-scheduler's "Deprecated flags" (``DeprecatedOptions``); unset ones stay None."""
    group = parser.add_argument_group("Deprecated flags")
    add_bool_flag(
        group,
        "--contention-profiling",
        None,
        "DEPRECATED: enable block profiling, if profiling is enabled (berth: /debug/pprof/block, a sampled "
        f"profile of waiting threads) (default true). {_IGNORED}",
    )
    group.add_argument(
        "--kube-api-burst",
        type=int,
        metavar="INT32",
        help=f"DEPRECATED: burst to use while talking with kubernetes apiserver (default 100). {_IGNORED}",
    )
    group.add_argument(
        "--kube-api-content-type",
        metavar="STRING",
        help="DEPRECATED: content type of requests sent to apiserver (default "
        f'"{PROTOBUF}"; berth always speaks JSON, which every API server accepts). {_IGNORED}',
    )
    group.add_argument(
        "--kube-api-qps",
        type=float,
        metavar="FLOAT32",
        help=f"DEPRECATED: QPS to use while talking with kubernetes apiserver (default 50). {_IGNORED}",
    )
    group.add_argument(
        "--kubeconfig",
        metavar="STRING",
        help="DEPRECATED: path to kubeconfig file with authorization and master location information. "
        f"{_IGNORED} Where neither it nor clientConnection.kubeconfig names one, berth uses "
        "$KUBECONFIG, else ~/.kube/config, else the in-cluster config.",
    )
    group.add_argument(
        "--pod-max-in-unschedulable-pods-duration",
        type=go_duration,
        default=300.0,
        metavar="DURATION",
        help="DEPRECATED: the maximum time a pod can stay in unschedulablePods. If a pod stays in "
        "unschedulablePods for longer than this value, the pod will be moved from unschedulablePods to "
        "backoffQ or activeQ. This flag is deprecated and will be removed in a future version (default 5m0s).",
    )
    add_bool_flag(
        group,
        "--profiling",
        None,
        "DEPRECATED: enable profiling via web interface host:port/debug/pprof/ (berth's Python "
        f"equivalents: thread stacks, a sampled CPU profile, object counts) (default true). {_IGNORED}",
    )


def apply_deprecated(
    cfg: SchedulerConfiguration, args: argparse.Namespace, config_given: bool
) -> SchedulerConfiguration:
    """``ApplyDeprecated``: the deprecated flags given override ``cfg``, unless ``--config`` was given."""
    given = [flag for flag, attr in DEPRECATED_FLAGS.items() if getattr(args, attr, None) is not None]
    if not given:
        return cfg
    if config_given:
        logs.warning(
            "Deprecated flags are ignored because --config is given (kube-scheduler ignores them silently); "
            "set the configuration's fields instead",
            flags=",".join(given),
        )
        return cfg
    conn = cfg.client_connection
    conn_changes: dict[str, Any] = {}
    if args.kubeconfig is not None:
        conn_changes["kubeconfig"] = args.kubeconfig
    if args.kube_api_content_type is not None:
        conn_changes["content_type"] = args.kube_api_content_type
    if args.kube_api_qps is not None:
        conn_changes["qps"] = float(args.kube_api_qps)
    if args.kube_api_burst is not None:
        conn_changes["burst"] = int(args.kube_api_burst)
    changes: dict[str, Any] = {"client_connection": dataclasses.replace(conn, **conn_changes)}
    if args.profiling is not None:
        changes["enable_profiling"] = args.profiling
    if args.contention_profiling is not None:
        changes["enable_contention_profiling"] = args.contention_profiling
    return dataclasses.replace(cfg, **changes)


def add_metrics_flags(parser: argparse.ArgumentParser) -> None:
    """kube's "Metrics flags" (component-base ``metrics.Options``)."""
    group = parser.add_argument_group("Metrics flags")
    group.add_argument(
        "--allow-metric-labels",
        action=_StringToString,
        default={},
        metavar="STRINGTOSTRING",
        help="The map from metric-label to value allow-list of this label. The key's format is "
        "<MetricName>,<LabelName>. The value's format is <allowed_value>,<allowed_value>...e.g. "
        "metric1,label1='v1,v2,v3', metric1,label2='v1,v2,v3' metric2,label1='v1,v2,v3'. (default [])",
    )
    group.add_argument(
        "--allow-metric-labels-manifest",
        metavar="STRING",
        help="The path to the manifest file that contains the allow-list mapping. The format of the file is the "
        'same as the flag --allow-metric-labels, i.e., allowListMapping: {"metric1,label1": "value11,value12"}. '
        "Note that the flag --allow-metric-labels will override the manifest file.",
    )
    group.add_argument(
        "--disabled-metrics",
        action=StringSliceAction,
        default=[],
        metavar="STRINGS",
        help="This flag provides an escape hatch for misbehaving metrics. You must provide the fully qualified "
        "metric name in order to disable it. Disclaimer: disabling metrics is higher in precedence than "
        "showing hidden metrics.",
    )
    group.add_argument(
        "--show-hidden-metrics-for-version",
        default="",
        metavar="STRING",
        help="The previous version for which you want to show hidden metrics. Only the previous minor version is "
        "meaningful, other values will not be allowed. The format is <major>.<minor>, e.g.: '1.16'. The purpose "
        "of this format is make sure you have the opportunity to notice if the next release hides additional "
        "metrics, rather than being surprised when they are permanently removed in the release after that.",
    )


class _StringToString(argparse.Action):
    """pflag's ``StringToString``: ``k=v`` pairs; later uses add to earlier ones."""

    def __call__(
        self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        current = dict(getattr(namespace, self.dest) or {})
        try:
            current.update(parse_string_to_string(str(values)))
        except ValueError as err:
            raise argparse.ArgumentError(self, f'invalid argument "{values}": {err}') from None
        setattr(namespace, self.dest, current)


def parse_string_to_string(text: str) -> dict[str, str]:
    """pflag's parsing: with one ``=`` the whole value is one pair (so ``metric,label=v1,v2`` keeps its
    commas); with several, a CSV record of pairs (quote a pair that holds commas)."""
    equals = text.count("=")
    if equals == 0:
        raise ValueError(f"{text} must be formatted as key=value")
    pairs = [text.strip('"')] if equals == 1 else next(csv.reader([text]))
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"{pair} must be formatted as key=value")
        result[key] = value
    return result


def add_feature_gate_flags(parser: argparse.ArgumentParser) -> None:
    """kube's "Feature gate flags": --emulated-version, --feature-gates, --min-compatibility-version."""
    group = parser.add_argument_group("Feature gate flags")
    group.add_argument(
        "--emulated-version",
        action=StringSliceAction,
        default=[],
        metavar="STRINGS",
        help="The versions different components emulate their capabilities (APIs, features, ...) of. Version "
        "format could only be major.minor. Options are: kube=1.33..1.36(default:1.36): the gates' "
        "defaults, stages and locks of that version; berth runs it when the gates kube-scheduler reads "
        'have the values of the behaviour berth implements (v1.36\'s). If the component is not specified, defaults to "kube"',
    )
    group.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="COLONSEPARATEDMULTIMAPSTRINGSTRING",
        help="Comma-separated list of component:key=value pairs that describe feature gates for "
        'alpha/experimental features of different components. If the component is not specified, defaults to "kube". '
        "This flag can be repeatedly invoked. For example: --feature-gates 'kube:featureC=true'. The gates are "
        f"kube-scheduler {KUBE_VERSION}'s, with their dependencies checked.",
    )
    group.add_argument(
        "--min-compatibility-version",
        action=StringSliceAction,
        default=[],
        metavar="STRINGS",
        help="The min version of control plane components the server should be compatible with. Must be less or "
        "equal to the emulated-version. Version format could only be major.minor. Options are: "
        "kube=1.33..1.36(default:1.35). "
        'If the component is not specified, defaults to "kube"',
    )


_MINOR = KUBE_VERSION.removeprefix("v").rsplit(".", 1)[0]  # "1.36"


def _version_flag(flag: str, values: list[str]) -> int | None:
    """One of --emulated-version / --min-compatibility-version as component-base's ``toVersionMap``
    parses it: ``[kube=]1.N`` (only the kube component is registered); the minor, or None unset."""
    seen: dict[str, str] = {}
    for value in values:
        component, sep, version = value.partition("=")
        if not sep:
            component, version = "kube", value
        component, version = component.strip(), version.strip()
        if component != "kube":
            raise CommandError(f"component not registered: {component}")
        if not re.fullmatch(r"v?\d+\.\d+", version):
            if re.fullmatch(r"v?\d+\.\d+\.\d+", version):
                raise CommandError(f"patch version not allowed, got: {component}={version}")
            raise CommandError(f'{flag}: could not parse "{version}" as version')
        if component in seen:
            raise CommandError(
                f"duplicate version flag, {component}={seen[component]} and {component}={version}"
            )
        seen[component] = version
    if "kube" not in seen:
        return None
    major, minor = seen["kube"].removeprefix("v").split(".")
    if int(major) != 1:
        raise CommandError(
            f"{flag} {seen['kube']} is not between [1.{featuregates.EMULATION_FLOOR_MINOR}, {_MINOR}]"
        )
    return int(minor)


def apply_emulation(args: argparse.Namespace) -> None:
    """Set the process's gates to the emulated version before ``--feature-gates`` is applied, as
    component-base's ``ComponentGlobalsRegistry.Set`` does (the range is checked afterwards, by
    :func:`check_versions`, as kube validates it after setting the gates)."""
    emulated = _version_flag("--emulated-version", args.emulated_version)
    min_compat = _version_flag("--min-compatibility-version", args.min_compatibility_version)
    if emulated is not None or min_compat is not None:
        featuregates.DEFAULT.set_emulation(
            emulated if emulated is not None else featuregates.BINARY_MINOR, min_compat
        )


def check_versions(args: argparse.Namespace) -> None:
    """component-base's ``effectiveVersion.Validate``: the emulated version within 1.33..1.36, the
    minimum compatibility version within 1.33..the emulated one (both errors at once); then that
    berth has the behaviour the gates now ask for (:meth:`FeatureGates.unsupported`)."""
    floor = featuregates.EMULATION_FLOOR_MINOR
    emulated = featuregates.DEFAULT.emulated_minor
    min_compat = featuregates.DEFAULT.min_compatibility_minor
    errors = []
    if not floor <= emulated <= featuregates.BINARY_MINOR:
        errors.append(
            f"emulation version 1.{emulated} is not between [1.{floor}, 1.{featuregates.BINARY_MINOR}.0]"
        )
    if not floor <= min_compat <= emulated:
        errors.append(
            f"minCompatibilityVersion version 1.{min_compat} is not between [1.{floor}, 1.{emulated}]"
        )
    if errors:
        raise CommandError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    unsupported = featuregates.DEFAULT.unsupported()
    if unsupported:
        raise CommandError(
            f"--emulated-version=1.{emulated}: berth implements kube-scheduler {KUBE_VERSION}'s behaviour, "
            f"and these gates kube-scheduler reads would need another: {', '.join(unsupported)} "
            "(set them to their v1.36 values with --feature-gates where the emulated version allows it)"
        )


def _previous_minor() -> str:
    major, minor = _MINOR.split(".")
    return f"{major}.{int(minor) - 1}"


def check_metrics_flags(args: argparse.Namespace) -> None:
    """component-base's ``metrics.Options.Validate`` for --show-hidden-metrics-for-version."""
    version = args.show_hidden_metrics_for_version
    if version and version != _previous_minor():
        raise CommandError(
            f'metrics.showHiddenMetricsForVersion: Invalid value: "{version}": must be omitted or have the '
            f"value '{_previous_minor()}'; only the previous minor version is allowed"
        )


class VersionAction(argparse.Action):
    """component-base's ``--version``: ``--version`` / ``--version=true`` prints the version,
    ``--version=raw`` the ``version.Info`` struct as Go's ``%#v`` does, ``--version=false`` nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("nargs", "?")
        kwargs.setdefault("const", "true")
        kwargs.setdefault("default", "false")
        super().__init__(*args, **kwargs)

    def __call__(
        self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        value = str(values)
        if value == "raw":
            info = version_info(__version__)
            # version.Info's field order; berth emulates no other version, so those fields are empty
            info = {
                "major": info["major"],
                "minor": info["minor"],
                **dict.fromkeys(
                    ("emulationMajor", "emulationMinor", "minCompatibilityMajor", "minCompatibilityMinor"), ""
                ),
                **{k: v for k, v in info.items() if k not in ("major", "minor")},
            }
            fields = ", ".join(f'{k[0].upper()}{k[1:]}:"{v}"' for k, v in info.items())
            sys.stdout.write(f"version.Info{{{fields}}}\n")
            parser.exit(0)
        if value.startswith("v"):
            raise argparse.ArgumentError(
                self, f'invalid argument "{value}": berth reports its own version only'
            )
        try:
            wanted = parse_bool(value)
        except argparse.ArgumentTypeError as err:
            raise argparse.ArgumentError(self, f'invalid argument "{value}": {err}') from None
        if wanted:
            sys.stdout.write(version_text() + "\n")
            parser.exit(0)
