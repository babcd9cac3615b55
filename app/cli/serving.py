"""Secure serving, authentication and authorization flags, and the HTTPS server built from them.

Shared by ``berth run`` and ``berth serve``. The flags are kube-scheduler's (``SecureServingOptions``,
``DelegatingAuthenticationOptions``, ``DelegatingAuthorizationOptions``) with the same defaults, plus
``--anonymous-auth`` and berth's ``--authorization-static-rules``.

TokenReviews and SubjectAccessReviews go to the API server of ``--authentication-kubeconfig`` /
``--authorization-kubeconfig``, else of the command's own cluster connection (``--kubeconfig``,
``--master``), else of the in-cluster service account; without any cluster bearer tokens and
SubjectAccessReviews are off (with a warning), and only client certificates, static rules and the
always-allowed paths work.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import itertools
import os
import signal
import ssl
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from starlette.applications import Starlette
from starlette.types import ASGIApp

from app import __version__, logs
from app.api.validation import parse_duration
from app.cli.options import CommandError
from app.kube.client import KubeClient, KubeError, default_kubeconfig
from app.kube.k8s import ApiClient, ConfigException, Configuration, load_incluster_config
from app.server.authn import Authenticator, TokenReviewAuthenticator
from app.server.authz import Authorizer, SubjectAccessReviewer
from app.server.certs import CertKey, TLSConfigError, self_signed_files, server_context
from app.server.chain import HandlerChain
from app.server.health import ShutdownCheck
from app.server.httpserver import HttpServer, Listener
from app.server.limits import DEFAULT_LIMITS, ConnectionLimits
from app.server.paths import PathPatternError, PathSet
from app.server.rules import RulesError, StaticRules

__all__ = [
    "add_authn_authz_flags",
    "add_secure_serving_flags",
    "build_secure_server",
    "connection_limits",
    "duration_flag",
    "in_cluster_client",
    "is_loopback",
    "parse_bool",
    "secure_listener",
    "shutdown_on_signals",
]

DEFAULT_ALWAYS_ALLOW_PATHS = "/healthz,/readyz,/livez"
DEFAULT_CACHE_TTL = "10s"
# kube's delegated clients: high limits, since they effectively limit the server's responsiveness.
DELEGATION_QPS, DELEGATION_BURST = 200.0, 400

_BOOLS = {"1": True, "t": True, "true": True, "0": False, "f": False, "false": False}


def parse_bool(text: str) -> bool:
    """A pflag boolean (``true``, ``false``, ``1``, ``0``, ``t``, ``f``, any case)."""
    value = _BOOLS.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f'invalid boolean "{text}" (want true or false)')
    return value


def duration_flag(text: str) -> float:
    """A non-negative Go duration (``10s``, ``1m``) in seconds."""
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f'"{text}" is negative')
    return seconds


def _ip(text: str) -> str:
    if not text:
        return "0.0.0.0"  # kube: blank means all interfaces
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f'failed to parse IP: "{text}"') from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP or ``localhost``) is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def add_secure_serving_flags(
    parser: argparse.ArgumentParser, *, default_secure_port: int, default_bind_address: str = "0.0.0.0"
) -> None:
    """The "Secure serving flags" group: --bind-address, --secure-port, --cert-dir, --tls-*."""
    group = parser.add_argument_group("Secure serving flags")
    group.add_argument(
        "--bind-address",
        type=_ip,
        default=default_bind_address,
        metavar="IP",
        help="The IP address on which to listen for the --secure-port port. If blank or an unspecified "
        f"address (0.0.0.0 or ::), all interfaces will be used (default {default_bind_address}).",
    )
    group.add_argument(
        "--secure-port",
        type=int,
        default=default_secure_port,
        metavar="PORT",
        help="The port on which to serve HTTPS with authentication and authorization. If 0, don't serve "
        f"HTTPS at all (default {default_secure_port}).",
    )
    group.add_argument(
        "--cert-dir",
        metavar="DIR",
        help="The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file "
        "are provided, this flag will be ignored.",
    )
    group.add_argument(
        "--tls-cert-file",
        metavar="FILE",
        help="File containing the default x509 Certificate for HTTPS (CA cert, if any, concatenated after "
        "server cert). If HTTPS serving is enabled, and --tls-cert-file and --tls-private-key-file are not "
        "provided, a self-signed certificate and key are generated for localhost and 127.0.0.1 and saved to "
        "the directory specified by --cert-dir (kept in memory without it).",
    )
    group.add_argument(
        "--tls-private-key-file",
        metavar="FILE",
        help="File containing the default x509 private key matching --tls-cert-file.",
    )
    _add_connection_flags(parser)


def _add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """The "Connection flags" group: the limits of every listener (kube-apiserver's http.Server values)."""
    group = parser.add_argument_group("Connection flags")
    limits = DEFAULT_LIMITS
    flags: tuple[tuple[str, Callable[[str], Any], float, str], ...] = (
        (
            "--read-header-timeout",
            duration_flag,
            limits.read_header_timeout,
            "Close a connection whose request headers (or TLS handshake) are not complete this long after it "
            "opened or its request began, without an answer (kube-apiserver's ReadHeaderTimeout)",
        ),
        (
            "--read-body-timeout",
            duration_flag,
            limits.read_body_timeout,
            "Answer 408 and close when a request's body is not complete this long after its headers "
            "(kube-apiserver bounds a whole request by --request-timeout, 1m)",
        ),
        (
            "--idle-timeout",
            duration_flag,
            limits.idle_timeout,
            "Close a keep-alive connection that sends no new request for this long (kube-apiserver's IdleTimeout)",
        ),
        (
            "--max-header-bytes",
            int,
            limits.max_header_bytes,
            "Largest request line and headers; larger ones get 431 (kube-apiserver's MaxHeaderBytes)",
        ),
        (
            "--max-connections",
            int,
            limits.max_connections,
            "Open connections per listener. At the limit a new connection closes the oldest one not in a "
            "request (first those that never sent complete headers), or is closed itself when all are in requests",
        ),
    )
    for flag, kind, default, text in flags:
        shown = f"{default:g}s" if kind is duration_flag else str(default)
        group.add_argument(
            flag,
            type=kind,
            default=default,
            metavar="DURATION" if kind is duration_flag else "N",
            help=f"{text} (default {shown}).",
        )


def connection_limits(args: argparse.Namespace) -> ConnectionLimits:
    """The listeners' limits of the "Connection flags"; CommandError for a value out of range."""
    for flag, value in (
        ("--read-header-timeout", args.read_header_timeout),
        ("--read-body-timeout", args.read_body_timeout),
        ("--idle-timeout", args.idle_timeout),
        ("--max-header-bytes", args.max_header_bytes),
        ("--max-connections", args.max_connections),
    ):
        if value <= 0:
            raise CommandError(f"{flag}: must be positive")
    return ConnectionLimits(
        read_header_timeout=args.read_header_timeout,
        idle_timeout=args.idle_timeout,
        read_body_timeout=args.read_body_timeout,
        max_header_bytes=args.max_header_bytes,
        max_connections=args.max_connections,
    )


def _ttl_flag(group: argparse._ArgumentGroup, flag: str, what: str) -> None:
    group.add_argument(
        flag,
        type=duration_flag,
        default=duration_flag(DEFAULT_CACHE_TTL),
        metavar="DURATION",
        help=f"The duration to cache {what} (default {DEFAULT_CACHE_TTL}).",
    )


def add_authn_authz_flags(parser: argparse.ArgumentParser) -> None:
    """The "Authentication flags" and "Authorization flags" groups."""
    authn = parser.add_argument_group("Authentication flags")
    authn.add_argument(
        "--authentication-kubeconfig",
        metavar="FILE",
        help="kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "
        "tokenreviews.authentication.k8s.io. Optional: without it the command's own cluster connection "
        "is used, else the in-cluster service account; with none, bearer tokens are refused.",
    )
    _ttl_flag(
        authn, "--authentication-token-webhook-cache-ttl", "responses from the webhook token authenticator"
    )
    authn.add_argument(
        "--client-ca-file",
        metavar="FILE",
        help="If set, any request presenting a client certificate signed by one of the authorities in the "
        "client-ca-file is authenticated with an identity corresponding to the CommonName of the client "
        "certificate (groups: its Organizations). A certificate from another authority fails the TLS handshake.",
    )
    authn.add_argument(
        "--anonymous-auth",
        type=parse_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        help="Enables anonymous requests to the secure port (user system:anonymous, group "
        "system:unauthenticated), which authorization then decides. Requests to "
        "--authorization-always-allow-paths are always accepted. Default: true on a loopback "
        "--bind-address, false otherwise.",
    )
    authz = parser.add_argument_group("Authorization flags")
    authz.add_argument(
        "--authorization-kubeconfig",
        metavar="FILE",
        help="kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "
        "subjectaccessreviews.authorization.k8s.io. Optional: without it the command's own cluster connection "
        "is used, else the in-cluster service account; with none, all requests not allowed otherwise are "
        "forbidden.",
    )
    authz.add_argument(
        "--authorization-always-allow-paths",
        default=DEFAULT_ALWAYS_ALLOW_PATHS,
        metavar="PATHS",
        help="A comma-separated list of HTTP paths to skip during authorization, i.e. these are authorized "
        f"without contacting the 'core' kubernetes server; a trailing * makes a prefix (default {DEFAULT_ALWAYS_ALLOW_PATHS}).",
    )
    _ttl_flag(
        authz,
        "--authorization-webhook-cache-authorized-ttl",
        "'authorized' responses from the webhook authorizer",
    )
    _ttl_flag(
        authz,
        "--authorization-webhook-cache-unauthorized-ttl",
        "'unauthorized' responses from the webhook authorizer",
    )
    authz.add_argument(
        "--authorization-static-rules",
        metavar="FILE",
        help="A YAML or JSON file of rules granting paths and verbs to users and groups without a "
        "SubjectAccessReview: {rules: [{users: [...], groups: [...], paths: [...], verbs: [...]}]}.",
    )


# --- cluster clients for TokenReview / SubjectAccessReview --------------------------------------


def in_cluster_client(*, qps: float, burst: int, user_agent: str) -> KubeClient | None:
    """A client with the pod's service account, or None when not running in a cluster.

    Raises :class:`~app.kube.client.KubeError` when in a cluster whose config cannot be read.
    """
    if not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    configuration = Configuration()
    try:
        load_incluster_config(client_configuration=configuration)
    except ConfigException as err:
        raise KubeError(0, f"invalid in-cluster config: {err}", "ConfigError") from err
    api = ApiClient(configuration)
    api.user_agent = user_agent
    return KubeClient(api, qps=qps, burst=burst)


class _Clients:
    """The delegation clients, one per distinct source, closed with the server."""

    def __init__(self, kubeconfig: str | None, master: str | None) -> None:
        self.kubeconfig = kubeconfig
        self.master = master
        self.made: dict[tuple[str, str], KubeClient | None] = {}

    def get(self, explicit: str | None, flag: str) -> KubeClient | None:
        source = ("file", explicit) if explicit else ("main", "")
        if source not in self.made:
            self.made[source] = self._make(explicit, flag)
        return self.made[source]

    def _make(self, explicit: str | None, flag: str) -> KubeClient | None:
        agent = f"berth/{__version__} (delegated auth)"
        try:
            if explicit:
                return KubeClient.from_config(
                    explicit, qps=DELEGATION_QPS, burst=DELEGATION_BURST, user_agent=agent
                )
            if self.kubeconfig or self.master or default_kubeconfig():
                return KubeClient.from_config(
                    self.kubeconfig, self.master, qps=DELEGATION_QPS, burst=DELEGATION_BURST, user_agent=agent
                )
            return in_cluster_client(qps=DELEGATION_QPS, burst=DELEGATION_BURST, user_agent=agent)
        except KubeError as err:
            raise CommandError(f"{flag}: {err.message}" if explicit else err.message) from err

    def close(self) -> None:
        for made in self.made.values():
            if made is not None:
                made.close()


# --- the secure listener ------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> None:
    connection_limits(args)
    if not 0 <= args.secure_port <= 65535:
        raise CommandError(
            f"--secure-port {args.secure_port} must be between 0 and 65535, inclusive. 0 for turning off secure port"
        )
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise CommandError("--tls-cert-file and --tls-private-key-file must be given together")
    for flag, path in (
        ("--tls-cert-file", args.tls_cert_file),
        ("--tls-private-key-file", args.tls_private_key_file),
        ("--client-ca-file", args.client_ca_file),
        ("--authorization-static-rules", args.authorization_static_rules),
    ):
        if path and not os.path.isfile(path):
            raise CommandError(f"{flag}: {path}: no such file")


def _tls(args: argparse.Namespace, pair_name: str) -> ssl.SSLContext:
    try:
        if args.tls_cert_file:
            return server_context(CertKey(args.tls_cert_file, args.tls_private_key_file), args.client_ca_file)
        with self_signed_files(args.cert_dir, pair_name, args.bind_address) as files:
            return server_context(files, args.client_ca_file)
    except TLSConfigError as err:
        if err.source == "client-ca":
            flag = "--client-ca-file"
        else:
            flag = "--tls-cert-file/--tls-private-key-file" if args.tls_cert_file else "--cert-dir"
        raise CommandError(f"{flag}: {err}") from err


def _always_allow(args: argparse.Namespace) -> PathSet:
    patterns = [p.strip() for p in args.authorization_always_allow_paths.split(",") if p.strip()]
    try:
        return PathSet(patterns)
    except PathPatternError as err:
        raise CommandError(f"--authorization-always-allow-paths: {err}") from err


def _chain(
    args: argparse.Namespace, app: ASGIApp, clients: _Clients
) -> tuple[HandlerChain, dict[str, object]]:
    always_allow = _always_allow(args)
    rules = None
    if args.authorization_static_rules:
        try:
            rules = StaticRules.load(args.authorization_static_rules)
        except RulesError as err:
            raise CommandError(f"--authorization-static-rules: {err}") from err
    authn_client = clients.get(args.authentication_kubeconfig, "--authentication-kubeconfig")
    authz_client = clients.get(args.authorization_kubeconfig, "--authorization-kubeconfig")
    if authn_client is None:
        logs.warning(
            "No authentication-kubeconfig provided and no cluster connection, so bearer token "
            "authentication won't work"
        )
    if authz_client is None:
        logs.warning(
            "No authorization-kubeconfig provided and no cluster connection, so SubjectAccessReview "
            "of authorization tokens won't work"
        )
    anonymous = is_loopback(args.bind_address) if args.anonymous_auth is None else args.anonymous_auth
    authenticator = Authenticator(
        tokens=None
        if authn_client is None
        else TokenReviewAuthenticator(authn_client, args.authentication_token_webhook_cache_ttl),
        anonymous=anonymous,
        anonymous_paths=always_allow,
    )
    authorizer = Authorizer(
        always_allow=always_allow,
        rules=rules,
        sar=None
        if authz_client is None
        else SubjectAccessReviewer(
            authz_client,
            args.authorization_webhook_cache_authorized_ttl,
            args.authorization_webhook_cache_unauthorized_ttl,
        ),
    )
    summary = {
        "clientCA": args.client_ca_file or "",
        "tokenReview": authn_client is not None,
        "subjectAccessReview": authz_client is not None,
        "staticRules": args.authorization_static_rules or "",
        "anonymous": anonymous,
        "alwaysAllowPaths": ",".join(always_allow.patterns),
    }
    return HandlerChain(app, authenticator=authenticator, authorizer=authorizer), summary


def secure_listener(
    args: argparse.Namespace,
    app: ASGIApp,
    *,
    name: str,
    kubeconfig: str | None = None,
    closers: list[Callable[[], None]] | None = None,
) -> Listener | None:
    """The HTTPS listener of the flags, serving ``app`` behind the full chain (None: --secure-port 0).

    ``name`` names the generated certificate files (``<cert-dir>/<name>.crt``). ``kubeconfig`` is the
    command's cluster kubeconfig when --kubeconfig is not given (clientConnection.kubeconfig); the
    delegation clients' ``close`` is appended to ``closers``. Bad flags raise
    :class:`~app.cli.options.CommandError` naming the flag.
    """
    _validate(args)
    if args.secure_port == 0:
        logs.info("Secure serving is off (--secure-port=0)")
        return None
    ctx = _tls(args, name)
    clients = _Clients(getattr(args, "kubeconfig", None) or kubeconfig, getattr(args, "master", None))
    try:
        chain, summary = _chain(args, app, clients)
    except CommandError:
        clients.close()
        raise
    if closers is not None:
        closers.append(clients.close)
    logs.info("Secure serving", 2, bindAddress=args.bind_address, securePort=args.secure_port, **summary)
    return Listener(chain, args.bind_address, args.secure_port, ctx, connection_limits(args))


def build_secure_server(
    args: argparse.Namespace, app: Starlette, *, name: str, kubeconfig: str | None = None
) -> HttpServer:
    """The HTTPS server of the flags for ``app`` (no listener at all with --secure-port 0).

    Its shutdown flips ``app.state.shutdown`` (the /readyz ``shutdown`` check) first.
    """
    closers: list[Callable[[], None]] = []
    listener = secure_listener(args, app, name=name, kubeconfig=kubeconfig, closers=closers)
    return HttpServer(
        [] if listener is None else [listener],
        name=name,
        shutdown_check=shutdown_check_of(app),
        closers=closers,
    )


def shutdown_check_of(app: Starlette) -> ShutdownCheck | None:
    """The app's /readyz ``shutdown`` check (``create_component_app`` keeps it in ``app.state``)."""
    check = getattr(app.state, "shutdown", None)
    return check if isinstance(check, ShutdownCheck) else None


def shutdown_on_signals(stop: threading.Event) -> None:
    """The first SIGTERM/SIGINT sets ``stop`` (a graceful shutdown); a second exits 1 at once."""

    # Python runs a handler between two bytecodes of whatever the main thread was doing, that
    # handler included: a second signal arriving while the first is being logged runs its handler
    # inside the first one. ``next`` on a C counter is one call, so exactly one handler sees 0.
    received = itertools.count()

    def handle(signum: int, frame: FrameType | None) -> None:
        if next(received) == 0:
            stop.set()
            logs.info("Received signal, shutting down", signal=signal.Signals(signum).name)
            return
        with contextlib.suppress(OSError):
            sys.stderr.write("Received a second signal, exiting immediately\n")
            sys.stderr.flush()
        os._exit(1)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handle)
