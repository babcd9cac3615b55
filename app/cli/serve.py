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
from app.kube.client import KubeClient, KubeError
from app.kube.handlers import engine_informers
from app.kube.informer import InformerSet
from app.scheduler.scheduler import ClusterObjects, Engine
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
    # kube-scheduler's misc flags; add_misc_flags (--config, ...) joins this group.
    misc = parser.add_argument_group("Misc flags")
    misc.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="Path to a kubeconfig file: berth then watches the cluster's Nodes, Pods and the objects "
        "plugins read, and answers NodeNames requests from that cache (overrides "
        "clientConnection.kubeconfig; not with --state).",
    )
    misc.add_argument(
        "--master",
        metavar="URL",
        help="The address of the Kubernetes API server (overrides any value in kubeconfig).",
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
    if args.state and (args.kubeconfig or args.master):
        flag = "--kubeconfig" if args.kubeconfig else "--master"
        raise CommandError(
            f"--state and {flag} are mutually exclusive: the cache comes either from a state file "
            "or from the cluster"
        )
    engine, config_dump = build_engine(args)
    informers = None if args.state else connect(args, engine)
    # The preloaded cache is long-lived: keep the collector from re-walking it on every large
    # request body (each full collection would otherwise traverse every cached node and pod).
    gc.collect()
    gc.freeze()

    import uvicorn

    from app.extender.bind import Binder
    from app.server.app import create_app

    app = create_app(
        engine,
        profile=args.profile,
        config_dump=config_dump,
        version=__version__,
        max_request_bytes=args.max_request_bytes,
        readyz_checks=None if informers is None else {"sched-handler-sync": informers.handler_sync_check},
        # /bind creates pods/binding through the informers' client (same credentials and rate limit).
        binder=None if informers is None else Binder(informers.client, engine),
    )
    logs.info("Starting berth extender", version=__version__, address=args.address, port=args.port)
    try:
        # Informers start before serving, and /readyz fails (sched-handler-sync) until they sync.
        if informers is not None:
            informers.start()
        uvicorn.run(app, host=args.address, port=args.port, log_level="warning", access_log=False)
    finally:
        if informers is not None:
            informers.stop()
            informers.client.close()
    return 0


def connect(args: argparse.Namespace, engine: Engine) -> InformerSet | None:
    """The cluster connection, when --kubeconfig, --master or clientConnection.kubeconfig asks for one.

    Without any of them ``berth serve`` keeps its offline behaviour (an empty cache, or --state).
    """
    conn = engine.cfg.client_connection
    kubeconfig = args.kubeconfig or conn.kubeconfig or None
    if not kubeconfig and not args.master:
        return None
    try:
        client = KubeClient.from_config(
            kubeconfig, args.master, qps=conn.qps, burst=conn.burst, user_agent=f"berth/{__version__}"
        )
    except KubeError as err:
        raise CommandError(err.message) from err
    objects = engine.objects if isinstance(engine.objects, ClusterObjects) else None
    logs.info("Connecting to the cluster", server=client.host, kubeconfig=kubeconfig or "")
    return engine_informers(client, engine.cache, objects)
