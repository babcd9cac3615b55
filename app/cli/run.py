"""``berth run``: the standalone, leader-elected scheduler (kube-scheduler's ``runCommand``).

The flags are kube-scheduler's: misc (``--config``, ``--write-config-to``, ``--kubeconfig``,
``--master``), secure serving, authentication, authorization, leader election (which alone
still override ``--config``), feature gates, logs. Feature gates are applied before anything
else is built, so a bad gate fails first. The first SIGTERM/SIGINT starts a clean shutdown
(exit 0); a second one exits 1 at once.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import threading
from typing import Any

from app import featuregates, logs
from app.api.errors import FieldError
from app.api.validation import parse_duration
from app.cli.common import build_registry, load_configuration, write_config
from app.cli.options import CommandError
from app.cli.serving import (
    add_authn_authz_flags,
    add_secure_serving_flags,
    build_secure_server,
    parse_bool,
    shutdown_on_signals,
)
from app.config.validation import validate_configuration
from app.framework.runtime import FrameworkError
from app.kube.client import KubeError
from app.standalone.run import Runner
from app.standalone.setup import Options, setup, with_leader_election_overrides

DEFAULT_SECURE_PORT = 10259


def _duration(text: str) -> float:
    """A Go duration; unlike ``serving.duration_flag``, negatives pass, so that the configuration's
    validation names the leaderElection field, as kube-scheduler does."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register the ``run`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "run",
        help="Run berth as a standalone, leader-elected scheduler for the pods whose schedulerName "
        "matches one of its profiles.",
        description="Run berth as a second scheduler next to the cluster's default one: pods opt in with "
        "spec.schedulerName. Serves /healthz, /readyz, /livez, /metrics, /metrics/resources, /configz and "
        "/debug/pods/{namespace}/{name} over HTTPS.",
    )
    misc = parser.add_argument_group("Misc flags")
    misc.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="Path to a kubeconfig file (default: clientConnection.kubeconfig, else $KUBECONFIG, else "
        "~/.kube/config, else the in-cluster config).",
    )
    misc.add_argument(
        "--master", metavar="URL", help="The address of the Kubernetes API server (overrides kubeconfig)."
    )
    add_secure_serving_flags(parser, default_secure_port=DEFAULT_SECURE_PORT)
    add_authn_authz_flags(parser)
    le = parser.add_argument_group("Leader election flags")
    le.add_argument(
        "--leader-elect",
        type=parse_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        help="Start a leader election client and gain leadership before executing the main loop (default true).",
    )
    le.add_argument("--leader-elect-lease-duration", type=_duration, metavar="DURATION", help="default 15s")
    le.add_argument("--leader-elect-renew-deadline", type=_duration, metavar="DURATION", help="default 10s")
    le.add_argument("--leader-elect-retry-period", type=_duration, metavar="DURATION", help="default 2s")
    le.add_argument("--leader-elect-resource-lock", metavar="TYPE", help="Only 'leases' is supported.")
    le.add_argument("--leader-elect-resource-name", metavar="NAME", help="default kube-scheduler")
    le.add_argument("--leader-elect-resource-namespace", metavar="NAMESPACE", help="default kube-system")
    fg = parser.add_argument_group("Feature gate flags")
    fg.add_argument(
        "--feature-gates",
        metavar="KEY=BOOL,...",
        default="",
        help="A set of key=value pairs that describe feature gates for alpha/experimental features, as "
        "kube-scheduler v1.36.3 knows them (e.g. CoordinatedLeaderElection=true).",
    )
    return parser


def _configuration(args: argparse.Namespace) -> Any:
    registry = build_registry(args.plugin_module)
    cfg = load_configuration(args.config, registry)
    if args.leader_elect_resource_lock not in (None, "leases"):
        raise CommandError(
            f'--leader-elect-resource-lock: "{args.leader_elect_resource_lock}" is not supported (only "leases")'
        )
    cfg = with_leader_election_overrides(
        cfg,
        leader_elect=args.leader_elect,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        resource_name=args.leader_elect_resource_name,
        resource_namespace=args.leader_elect_resource_namespace,
    )
    errors: list[FieldError] = validate_configuration(cfg)
    if errors:
        raise CommandError("invalid configuration: " + "; ".join(str(e) for e in errors))
    return registry, cfg


def run(args: argparse.Namespace) -> int:
    """Setup, then Run until a signal (0) or a lost lease (1)."""
    try:
        featuregates.DEFAULT.set(args.feature_gates)
    except featuregates.FeatureGateError as err:
        raise CommandError(f"--feature-gates: {err}") from err
    registry, cfg = _configuration(args)
    if args.write_config_to:
        write_config(cfg, args.write_config_to)
        return 0
    if featuregates.DEFAULT.overrides():
        gates = featuregates.DEFAULT.overrides()
        logs.info("Feature gates", gates=",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items())))
    try:
        components = setup(cfg, registry, Options(kubeconfig=args.kubeconfig, master=args.master))
    except KubeError as err:
        raise CommandError(err.message) from err
    except FrameworkError as err:
        raise CommandError(f"{args.config or 'configuration'}: {err}") from err
    _log_python_settings()
    runner = Runner(components)
    server = build_secure_server(
        args, runner.app, name="berth-scheduler", kubeconfig=cfg.client_connection.kubeconfig or None
    )
    stop = threading.Event()
    shutdown_on_signals(stop)
    try:
        return runner.run([server], stop)
    except OSError as err:  # the secure port is taken, ...
        raise CommandError(str(err)) from err


def _log_python_settings() -> None:
    """kube-scheduler logs its "Golang settings" (GOGC, GOMAXPROCS); these are the Python equivalents
    that decide berth's speed: the interpreter, the collector's thresholds and the CPUs it may use."""
    logs.info(
        "Python settings",
        python=platform.python_version(),
        implementation=platform.python_implementation(),
        gcThreshold=",".join(str(t) for t in gc.get_threshold()),
        cpus=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        optimize=sys.flags.optimize,
    )
