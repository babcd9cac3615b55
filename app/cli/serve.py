"""``berth serve``: the extender face, HTTP endpoints a stock kube-scheduler calls.

Two listeners on one event loop: HTTPS on ``--bind-address:--secure-port`` (default 0.0.0.0:8889)
behind the full handler chain (client certificates, TokenReview, SubjectAccessReview), and plain
HTTP on the loopback ``--address:--port`` (default 127.0.0.1:8888) behind the chain without
authentication, for a kube-scheduler in the same pod. Both serve the same app.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from app import __version__, gcpolicy, logs
from app.cli.common import build_registry, load_configuration, write_config
from app.cli.options import CommandError
from app.cli.serving import (
    add_authn_authz_flags,
    add_secure_serving_flags,
    connection_limits,
    duration_flag,
    in_cluster_client,
    is_loopback,
    secure_listener,
    shutdown_check_of,
    shutdown_on_signals,
)
from app.config import dump_config
from app.framework.runtime import FrameworkError
from app.kube.client import KubeClient, KubeError
from app.kube.dra import DRA_RESOURCES
from app.kube.handlers import OBJECT_RESOURCES, engine_informers
from app.kube.informer import InformerSet
from app.scheduler.scheduler import ClusterObjects, Engine
from app.server.bind import DEFAULT_BIND_TIMEOUT
from app.server.chain import HandlerChain
from app.server.httpserver import HttpServer, Listener

DEFAULT_MAX_REQUEST_BYTES = 64 << 20
DEFAULT_SECURE_PORT = 8889
"""berth serve's HTTPS port (kube-scheduler's own is 10259, which a co-located kube-scheduler uses)."""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register the ``serve`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="Serve the scheduler-extender verbs (/filter, /prioritize, /preempt, /bind) for a stock "
        "kube-scheduler.",
        description="Serve /filter, /prioritize, /preempt and /bind as a kube-scheduler extender, plus "
        "/healthz, /readyz, /livez, /metrics, /configz and /version: over HTTPS with authentication and "
        f"authorization on --secure-port (default {DEFAULT_SECURE_PORT}), and over plain HTTP without "
        "them on the loopback --address/--port (default 127.0.0.1:8888) for a sidecar kube-scheduler.",
    )
    serving = parser.add_argument_group("Serving flags")
    serving.add_argument(
        "--address",
        default="127.0.0.1",
        help="The IP address of the plain-HTTP listener, which has no authentication: loopback only, "
        "unless --allow-insecure-non-loopback (default 127.0.0.1).",
    )
    serving.add_argument(
        "--port",
        type=int,
        default=8888,
        help="The port of the plain-HTTP listener; 0 turns it off (default 8888).",
    )
    serving.add_argument(
        "--allow-insecure-non-loopback",
        action="store_true",
        help="Allow a non-loopback --address: anyone who reaches it can call /bind and /filter.",
    )
    serving.add_argument(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_REQUEST_BYTES,
        metavar="N",
        help="Largest request body accepted; larger ones get 413 (default 64 MiB).",
    )
    add_secure_serving_flags(parser, default_secure_port=DEFAULT_SECURE_PORT)
    add_authn_authz_flags(parser)
    ext = parser.add_argument_group("Extender flags")
    ext.add_argument(
        "--profile",
        metavar="NAME",
        help="The profile (schedulerName) whose plugins the verbs run (default: the first profile).",
    )
    ext.add_argument(
        "--bind-timeout",
        type=duration_flag,
        default=DEFAULT_BIND_TIMEOUT,
        metavar="DURATION",
        help="Longest a /bind waits for the API server before answering that the Binding is still in flight "
        "(a retry reports its outcome); keep it under the extender's httpTimeout in kube-scheduler's "
        f"configuration (5s by default) (default {DEFAULT_BIND_TIMEOUT:g}s).",
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
    misc.add_argument(
        "--in-cluster",
        action="store_true",
        help="Connect to the cluster with the pod's service account (the in-cluster config), as with "
        "--kubeconfig (not with --state, --kubeconfig or --master).",
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
        from app.simulate.state import (
            StateError,
            load_state,
        )  # only serve --state needs the simulator's reader

        try:
            state = load_state(args.state)
        except StateError as err:
            raise CommandError(str(err)) from err
        for node in state.nodes:
            engine.cache.add_node(node)
        for pod in state.running:
            engine.cache.add_pod(pod)
        # The other kinds (Services for spreading, storage objects for the volume plugins, ...).
        if isinstance(engine.objects, ClusterObjects):
            for obj in state.other_objects:
                engine.objects.add(obj)
        for warning in state.warnings:
            logs.warning(warning)
        logs.info(
            "Preloaded cache from state file",
            file=args.state,
            nodes=len(state.nodes),
            pods=len(state.running),
        )
    return engine, dump_config(cfg)


def _validate(args: argparse.Namespace) -> None:
    if not 0 <= args.port < 65536:
        raise CommandError(
            f"--port: {args.port} must be between 0 and 65535 (0 turns the plain listener off)"
        )
    if args.port == 0 and args.secure_port == 0:
        raise CommandError("--port and --secure-port are both 0: nothing would be served")
    if args.max_request_bytes <= 0:
        raise CommandError("--max-request-bytes: must be positive")
    if args.bind_timeout <= 0:
        raise CommandError("--bind-timeout: must be positive")
    if args.port and not is_loopback(args.address):
        if not args.allow_insecure_non_loopback:
            raise CommandError(
                f"--address {args.address} is not a loopback address, and the plain-HTTP listener has no "
                "authentication: serve remote clients on --secure-port, turn the listener off with --port 0, "
                "or pass --allow-insecure-non-loopback"
            )
        logs.warning(
            "Serving the extender verbs over plain HTTP without authentication on a non-loopback address: "
            "anyone who reaches it can bind pods",
            address=args.address,
            port=args.port,
        )
    # The cache comes from one place; --master may only override a kubeconfig's server.
    sources = [
        flag
        for flag, given in (
            ("--state", args.state),
            ("--in-cluster", args.in_cluster),
            ("--kubeconfig", args.kubeconfig),
            ("--master", args.master),
        )
        if given
    ]
    if len(sources) > 1 and sources[:2] != ["--kubeconfig", "--master"]:
        raise CommandError(
            f"{sources[0]} and {sources[1]} are mutually exclusive: the cache comes either from a state file "
            "or from the cluster (a kubeconfig, or the in-cluster config)"
        )


def run(args: argparse.Namespace) -> int:
    """Build the engine and serve until a signal."""
    if args.write_config_to:
        registry = build_registry(args.plugin_module)
        write_config(load_configuration(args.config, registry), args.write_config_to)
        return 0
    _validate(args)
    engine, config_dump = build_engine(args)
    informers = None if args.state else connect(args, engine)

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
        bind_timeout=args.bind_timeout,
    )
    from app.ui.live import UiSource, install_ui

    decisions = app.state.decisions
    install_ui(app, UiSource(engine, "serve", decisions.recent, decisions.explain), __version__)
    try:
        server = _server(args, app, engine)
    except CommandError:
        if informers is not None:
            informers.client.close()
        raise
    # The preloaded cache is long-lived: keep the collector from re-walking it on every large
    # request body (each full collection would otherwise traverse every cached node and pod).
    gcpolicy.install()
    logs.info("Starting berth extender", version=__version__)
    stop = threading.Event()
    shutdown_on_signals(stop)
    try:
        # Informers start before serving, and /readyz fails (sched-handler-sync) until they sync.
        if informers is not None:
            informers.start()
        try:
            server.start()
        except OSError as err:  # a port is taken, ...
            raise CommandError(str(err)) from err
        while not stop.wait(0.5):
            if server.wait(0):
                logs.error("The HTTP server stopped unexpectedly")
                return 1
    finally:
        server.shutdown()
        if informers is not None:
            informers.stop()
            informers.client.close()
    return 0


def _server(args: argparse.Namespace, app: FastAPI, engine: Engine) -> HttpServer:
    """The plain loopback listener (no authentication: the sidecar path) and the secure one, on one loop."""
    closers: list[Callable[[], None]] = []
    listeners = []
    if args.port:
        listeners.append(Listener(HandlerChain(app), args.address, args.port, limits=connection_limits(args)))
    secure = secure_listener(
        args, app, name="berth", kubeconfig=engine.cfg.client_connection.kubeconfig or None, closers=closers
    )
    if secure is not None:
        listeners.append(secure)
    return HttpServer(listeners, name="berth", shutdown_check=shutdown_check_of(app), closers=closers)


def connect(args: argparse.Namespace, engine: Engine) -> InformerSet | None:
    """The cluster connection, when --kubeconfig, --master, --in-cluster or clientConnection.kubeconfig asks for one.

    Without any of them ``berth serve`` keeps its offline behaviour (an empty cache, or --state).
    """
    conn = engine.cfg.client_connection
    kubeconfig = args.kubeconfig or conn.kubeconfig or None
    agent = f"berth/{__version__}"
    try:
        if args.in_cluster:
            client = in_cluster_client(qps=conn.qps, burst=conn.burst, user_agent=agent)
            if client is None:
                raise CommandError(
                    "--in-cluster: not running in a cluster (KUBERNETES_SERVICE_HOST is not set)"
                )
        elif kubeconfig or args.master:
            client = KubeClient.from_config(
                kubeconfig, args.master, qps=conn.qps, burst=conn.burst, user_agent=agent
            )
        else:
            return None
    except KubeError as err:
        raise CommandError(err.message) from err
    objects = engine.objects if isinstance(engine.objects, ClusterObjects) else None
    where = "in-cluster" if args.in_cluster else kubeconfig or ""
    logs.info("Connecting to the cluster", server=client.host, kubeconfig=where)
    # DynamicResources reads resource.k8s.io/v1 objects too (issue 19).
    return engine_informers(
        client, engine.cache, objects, object_resources=(*OBJECT_RESOURCES, *DRA_RESOURCES)
    )
