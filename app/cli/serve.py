"""``berth serve``: the extender face, HTTP endpoints a stock kube-scheduler calls."""

from __future__ import annotations

import argparse
import gc
from typing import Any

from app import __version__, logs
from app.cli.common import build_registry, load_configuration, write_config
from app.cli.options import CommandError
from app.config import dump_config
from app.framework.runtime import FrameworkError
from app.scheduler.scheduler import Engine
from app.simulate import StateError, load_state

DEFAULT_MAX_REQUEST_BYTES = 64 << 20


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register the ``serve`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="Serve the scheduler-extender verbs (/filter, /prioritize) for a stock kube-scheduler.",
        description="Serve /filter and /prioritize as a kube-scheduler extender, plus /healthz, /readyz, "
        "/livez, /metrics, /configz and /version.",
    )
    serving = parser.add_argument_group("Serving flags")
    serving.add_argument(
        "--address", default="127.0.0.1", help="The IP address to listen on (default 127.0.0.1)."
    )
    serving.add_argument("--port", type=int, default=8888, help="The port to listen on (default 8888).")
    serving.add_argument(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_REQUEST_BYTES,
        metavar="N",
        help="Largest request body accepted; larger ones get 413 (default 64 MiB).",
    )
    ext = parser.add_argument_group("Extender flags")
    ext.add_argument(
        "--profile",
        metavar="NAME",
        help="The profile (schedulerName) whose plugins the verbs run (default: the first profile).",
    )
    ext.add_argument(
        "--state",
        metavar="FILE",
        help="Preload berth's cache with the Nodes and bound Pods of a cluster-state file "
        "(berth simulate's format), for NodeNames requests without a cluster connection.",
    )
    return parser


def build_engine(args: argparse.Namespace) -> tuple[Engine, dict[str, Any]]:
    """Setup: registry, configuration, engine and preloaded cache."""
    registry = build_registry(args.plugin_module)
    cfg = load_configuration(args.config, registry)
    if args.profile and args.profile not in {p.scheduler_name for p in cfg.profiles}:
        raise CommandError(f'--profile: no profile with schedulerName "{args.profile}"')
    try:
        engine = Engine(cfg, registry)
    except FrameworkError as err:
        raise CommandError(f"{args.config or 'configuration'}: {err}") from err
    if args.state:
        try:
            state = load_state(args.state)
        except StateError as err:
            raise CommandError(str(err)) from err
        for node in state.nodes:
            engine.cache.add_node(node)
        for pod in state.running:
            engine.cache.add_pod(pod)
        for warning in state.warnings:
            logs.warning(warning)
        logs.info(
            "Preloaded cache from state file",
            file=args.state,
            nodes=len(state.nodes),
            pods=len(state.running),
        )
    return engine, dump_config(cfg)


def run(args: argparse.Namespace) -> int:
    """Build the engine and serve until interrupted."""
    if args.write_config_to:
        registry = build_registry(args.plugin_module)
        write_config(load_configuration(args.config, registry), args.write_config_to)
        return 0
    if not 0 < args.port < 65536:
        raise CommandError(f"--port: {args.port} must be between 1 and 65535")
    if args.max_request_bytes <= 0:
        raise CommandError("--max-request-bytes: must be positive")
    engine, config_dump = build_engine(args)
    # The preloaded cache is long-lived: keep the collector from re-walking it on every large
    # request body (each full collection would otherwise traverse every cached node and pod).
    gc.collect()
    gc.freeze()

    import uvicorn

    from app.server.app import create_app

    app = create_app(
        engine,
        profile=args.profile,
        config_dump=config_dump,
        version=__version__,
        max_request_bytes=args.max_request_bytes,
    )
    logs.info("Starting berth extender", version=__version__, address=args.address, port=args.port)
    uvicorn.run(app, host=args.address, port=args.port, log_level="warning", access_log=False)
    return 0
