"""Secure serving, authentication and authorization flags, and the HTTPS server built from them.

Shared by ``berth run`` and ``berth serve``. The flags are kube-scheduler's (``SecureServingOptions``,
``DelegatingAuthenticationOptions``, ``DelegatingAuthorizationOptions``) with the same defaults, plus
``--anonymous-auth`` and berth's ``--authorization-static-rules``.

TokenReviews and SubjectAccessReviews go to the API server of ``--authentication-kubeconfig`` /
``--authorization-kubeconfig``, else of the command's own cluster connection (``--kubeconfig``,
``--master``), else of the in-cluster service account; without any cluster bearer tokens and
SubjectAccessReviews are off (with a warning), and only client certificates, static rules and the
always-allowed paths work.

The TLS flags (``--tls-min-version``, ``--tls-cipher-suites``, ``--tls-curve-preferences``,
``--tls-sni-cert-key``) configure the listener's context (:mod:`app.server.tlsoptions`);
``--permit-port-sharing`` sets SO_REUSEPORT. Without ``--client-ca-file`` or
``--requestheader-client-ca-file``, and unless ``--authentication-skip-lookup``, the missing ones are
read once from the cluster's ``kube-system/extension-apiserver-authentication`` configmap through the
authentication client, as kube's DelegatingAuthenticationOptions do (a failed request-header lookup
is fatal only with ``--authentication-tolerate-lookup-failure=false``).
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

import orjson
from starlette.applications import Starlette
from starlette.types import ASGIApp

from app import __version__, logs
from app.cli.options import CommandError, StringSliceAction, add_bool_flag, go_duration, parse_bool
from app.kube.client import KubeClient, KubeError, default_kubeconfig
from app.kube.k8s import ApiClient, ConfigException, Configuration, load_incluster_config
from app.server.authn import Authenticator, RequestHeaderAuthenticator, TokenReviewAuthenticator
from app.server.authz import Authorizer, SubjectAccessReviewer
from app.server.certs import CertKey, TLSConfigError, ca_subjects, self_signed_files, server_context
from app.server.chain import HandlerChain
from app.server.health import ShutdownCheck
from app.server.httpserver import HttpServer, Listener
from app.server.limits import DEFAULT_LIMITS, ConnectionLimits
from app.server.paths import PathPatternError, PathSet
from app.server.rules import RulesError, StaticRules
from app.server.tlsoptions import (
    GO_CIPHERS,
    GO_CURVES,
    INSECURE_CIPHERS,
    TLS_VERSIONS,
    NamedCertKey,
    TLSOptionError,
    TLSOptions,
    parse_named_cert_key,
)

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


def duration_flag(text: str) -> float:
    """A non-negative Go duration (``10s``, ``1m``) in seconds."""
    seconds = go_duration(text)
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


def _named_cert_key(text: str) -> NamedCertKey:
    try:
        return parse_named_cert_key(text)
    except TLSOptionError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


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
    group.add_argument(
        "--tls-cipher-suites",
        action=StringSliceAction,
        default=[],
        metavar="STRINGS",
        help="Comma-separated list of cipher suites for the server (Go's names, mapped to OpenSSL's). If "
        "omitted, the default cipher suites will be used; TLS 1.3 suites are accepted and not configurable. "
        f"Preferred values: {', '.join(sorted(set(GO_CIPHERS) - set(INSECURE_CIPHERS)))}. "
        f"Insecure values: {', '.join(INSECURE_CIPHERS)}.",
    )
    group.add_argument(
        "--tls-curve-preferences",
        action=StringSliceAction,
        item=int,
        default=[],
        metavar="INT32S",
        help="Comma-separated list of numeric Go crypto/tls CurveID values, as the allowed key exchange "
        f"mechanisms for the server ({', '.join(f'{k}={v}' for k, v in GO_CURVES.items())}). A single value "
        "restricts the server to that group; with several the OpenSSL defaults apply (Python's ssl sets "
        "one group only). If omitted, the default curves will be used.",
    )
    group.add_argument(
        "--tls-min-version",
        default="",
        metavar="STRING",
        help=f"Minimum TLS version supported. Possible values: {', '.join(TLS_VERSIONS)} (default VersionTLS12).",
    )
    group.add_argument(
        "--tls-sni-cert-key",
        type=_named_cert_key,
        action="append",
        default=[],
        metavar="CERT,KEY[:NAMES]",
        help="A pair of x509 certificate and private key file paths, optionally suffixed with a list of domain "
        "patterns which are fully qualified domain names, possibly with prefixed wildcard segments. The domain "
        "patterns also allow IP addresses, but IPs should only be used if the client connects to that IP. If no "
        "domain patterns are provided, the names of the certificate are extracted. Non-wildcard matches trump "
        "over wildcard matches, explicit domain patterns trump over extracted names. For multiple key/certificate "
        'pairs, use the --tls-sni-cert-key multiple times. Examples: "example.crt,example.key" or '
        '"foo.crt,foo.key:*.foo.com,foo.com".',
    )
    add_bool_flag(
        group,
        "--disable-http2-serving",
        False,
        "If true, HTTP2 serving will be disabled [default=false]. berth serves HTTP/1.1 only (it "
        "negotiates http/1.1 by ALPN), so this changes nothing.",
    )
    group.add_argument(
        "--http2-max-streams-per-connection",
        type=int,
        default=0,
        metavar="INT",
        help="The limit that the server gives to clients for the maximum number of streams in an HTTP/2 "
        "connection. Zero means to use golang's default. Accepted for compatibility: berth serves HTTP/1.1.",
    )
    add_bool_flag(
        group,
        "--permit-address-sharing",
        False,
        "If true, SO_REUSEADDR will be used when binding the port. This allows binding to wildcard IPs "
        "like 0.0.0.0 and specific IPs in parallel, and it avoids waiting for the kernel to release sockets "
        "in TIME_WAIT state. [default=false] (berth, like Go's listeners on Linux, always sets SO_REUSEADDR.)",
    )
    add_bool_flag(
        group,
        "--permit-port-sharing",
        False,
        "If true, SO_REUSEPORT will be used when binding the port, which allows more than one instance "
        "to bind on the same address and port. [default=false]",
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
    add_bool_flag(
        authn,
        "--authentication-skip-lookup",
        False,
        "If false, the authentication-kubeconfig will be used to lookup missing authentication "
        "configuration from the cluster (configmap kube-system/extension-apiserver-authentication: the "
        "client CA and the request-header settings; read once at startup).",
    )
    add_bool_flag(
        authn,
        "--authentication-tolerate-lookup-failure",
        True,
        "If true, failures to look up missing authentication configuration from the cluster are not "
        "considered fatal. Note that this can result in authentication that treats all requests as anonymous "
        "(default true).",
    )
    for flag, default, text in (
        (
            "--requestheader-allowed-names",
            [],
            "List of client certificate common names to allow to provide "
            "usernames in headers specified by --requestheader-username-headers. If empty, any client certificate "
            "validated by the authorities in --requestheader-client-ca-file is allowed.",
        ),
        (
            "--requestheader-extra-headers-prefix",
            ["x-remote-extra-"],
            "List of request header prefixes to inspect. X-Remote-Extra- is suggested",
        ),
        (
            "--requestheader-group-headers",
            ["x-remote-group"],
            "List of request headers to inspect for groups. X-Remote-Group is suggested",
        ),
        (
            "--requestheader-uid-headers",
            [],
            "List of request headers to inspect for UIDs. X-Remote-Uid is "
            "suggested. Requires the RemoteRequestHeaderUID feature to be enabled.",
        ),
        (
            "--requestheader-username-headers",
            ["x-remote-user"],
            "List of request headers to inspect for usernames. X-Remote-User is common",
        ),
    ):
        shown = f" (default [{','.join(default)}])" if default else ""
        authn.add_argument(
            flag, action=StringSliceAction, default=default, metavar="STRINGS", help=text + shown
        )
    authn.add_argument(
        "--requestheader-client-ca-file",
        metavar="FILE",
        help="Root certificate bundle to use to verify client certificates on incoming requests before "
        "trusting usernames in headers specified by --requestheader-username-headers. WARNING: generally do "
        "not depend on authorization being already done for incoming requests.",
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
        action=StringSliceAction,
        default=DEFAULT_ALWAYS_ALLOW_PATHS.split(","),
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
        ("--requestheader-client-ca-file", args.requestheader_client_ca_file),
        ("--authorization-static-rules", args.authorization_static_rules),
    ):
        if path and not os.path.isfile(path):
            raise CommandError(f"{flag}: {path}: no such file")
    try:
        _tls_options(args).validate()
    except TLSOptionError as err:
        raise CommandError(str(err)) from err


def _tls_options(args: argparse.Namespace) -> TLSOptions:
    return TLSOptions(
        min_version=args.tls_min_version,
        cipher_suites=tuple(args.tls_cipher_suites),
        curve_preferences=tuple(args.tls_curve_preferences),
        sni_cert_keys=tuple(args.tls_sni_cert_key),
    )


def _tls(args: argparse.Namespace, pair_name: str, client_ca_data: list[str]) -> ssl.SSLContext:
    def context(files: CertKey) -> ssl.SSLContext:
        return server_context(files, args.client_ca_file, client_ca_data=client_ca_data)

    try:
        if args.tls_cert_file:
            ctx = context(CertKey(args.tls_cert_file, args.tls_private_key_file))
        else:
            with self_signed_files(args.cert_dir, pair_name, args.bind_address) as files:
                ctx = context(files)
    except TLSConfigError as err:
        if err.source == "client-ca":
            flag = "--client-ca-file"
        else:
            flag = "--tls-cert-file/--tls-private-key-file" if args.tls_cert_file else "--cert-dir"
        raise CommandError(f"{flag}: {err}") from err
    try:
        _tls_options(args).apply(ctx, lambda cert, key: context(CertKey(cert, key)))
    except (TLSOptionError, TLSConfigError, OSError, ValueError) as err:
        raise CommandError(
            f"failed to load SNI cert and key: {err}" if args.tls_sni_cert_key else str(err)
        ) from err
    return ctx


AUTHENTICATION_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


class _Lookup:
    """The cluster's ``kube-system/extension-apiserver-authentication`` configmap, read once."""

    def __init__(self, client: KubeClient | None) -> None:
        self.client = client
        self._data: dict[str, str] | None = None

    def data(self) -> dict[str, str]:
        """The configmap's data ({} when it does not exist); raises KubeError when it cannot be read."""
        if self._data is None:
            assert self.client is not None
            try:
                found = self.client.get_json(AUTHENTICATION_CONFIGMAP)
            except KubeError as err:
                if err.status != 404:
                    raise
                found = {}
            self._data = {str(k): str(v) for k, v in (found.get("data") or {}).items()}
        return self._data


def _read(path: str, flag: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as err:
        raise CommandError(f"{flag}: {path}: {err.strerror}") from err


def _json_list(data: dict[str, str], key: str) -> tuple[str, ...]:
    raw = data.get(key, "")
    if not raw:
        return ()
    try:
        decoded = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise KubeError(0, f"configmap key {key}: not a JSON list: {err}") from err
    return tuple(str(v) for v in decoded or ())


def _subjects(pem: str, flag: str) -> frozenset[tuple[tuple[str, str], ...]]:
    try:
        return ca_subjects(pem.encode())
    except TLSConfigError as err:
        raise CommandError(f"{flag}: {err}") from err


def _client_ca(args: argparse.Namespace, lookup: _Lookup) -> str:
    """The client CA's PEM: --client-ca-file, else the cluster's (unless --authentication-skip-lookup)."""
    if args.client_ca_file:
        return _read(args.client_ca_file, "--client-ca-file")
    if args.authentication_skip_lookup:
        return ""
    if lookup.client is None:
        logs.warning(
            "No authentication-kubeconfig provided in order to lookup client-ca-file in configmap/"
            "extension-apiserver-authentication in kube-system, so client certificate authentication won't work."
        )
        return ""
    try:
        return lookup.data().get("client-ca-file", "")
    except KubeError as err:  # kube's CA controller keeps retrying; it never fails the start
        logs.error("Unable to look up client-ca-file in the cluster", err=err.message)
        return ""


def _request_header(
    args: argparse.Namespace, lookup: _Lookup
) -> tuple[RequestHeaderAuthenticator, str] | None:
    """The request-header authenticator and its CA's PEM, from the flags or the cluster's configmap."""
    if args.requestheader_client_ca_file:
        pem = _read(args.requestheader_client_ca_file, "--requestheader-client-ca-file")
        return (
            RequestHeaderAuthenticator(
                issuers=_subjects(pem, "--requestheader-client-ca-file"),
                allowed_names=tuple(args.requestheader_allowed_names),
                username_headers=tuple(args.requestheader_username_headers),
                uid_headers=tuple(args.requestheader_uid_headers),
                group_headers=tuple(args.requestheader_group_headers),
                extra_prefixes=tuple(args.requestheader_extra_headers_prefix),
            ),
            pem,
        )
    if args.authentication_skip_lookup:
        return None
    if lookup.client is None:
        logs.warning(
            "No authentication-kubeconfig provided in order to lookup requestheader-client-ca-file in "
            "configmap/extension-apiserver-authentication in kube-system, so request-header client certificate "
            "authentication won't work."
        )
        return None
    try:
        data = lookup.data()
        pem = data.get("requestheader-client-ca-file", "")
        if not pem:
            return None
        found = RequestHeaderAuthenticator(
            issuers=ca_subjects(pem.encode()),
            allowed_names=_json_list(data, "requestheader-allowed-names"),
            username_headers=_json_list(data, "requestheader-username-headers"),
            uid_headers=_json_list(data, "requestheader-uid-headers"),
            group_headers=_json_list(data, "requestheader-group-headers"),
            extra_prefixes=_json_list(data, "requestheader-extra-headers-prefix"),
        )
    except (KubeError, TLSConfigError) as err:
        message = err.message if isinstance(err, KubeError) else str(err)
        if not args.authentication_tolerate_lookup_failure:
            raise CommandError(
                f"unable to load configmap based request-header-client-ca-file: {message}"
            ) from err
        logs.warning(f"Error looking up in-cluster authentication configuration: {message}")
        logs.warning(
            "Continuing without authentication configuration. This may treat all requests as anonymous."
        )
        logs.warning(
            "To require authentication configuration lookup to succeed, set --authentication-tolerate-lookup-failure=false"
        )
        return None
    return found, pem


def _always_allow(args: argparse.Namespace) -> PathSet:
    patterns = [p.strip() for p in args.authorization_always_allow_paths if p.strip()]
    try:
        return PathSet(patterns)
    except PathPatternError as err:
        raise CommandError(f"--authorization-always-allow-paths: {err}") from err


def _chain(
    args: argparse.Namespace, app: ASGIApp, clients: _Clients, name: str
) -> tuple[HandlerChain, ssl.SSLContext, dict[str, object]]:
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
    lookup = _Lookup(authn_client)
    client_ca = _client_ca(args, lookup)
    request_header = _request_header(args, lookup)
    looked_up = [client_ca] if client_ca and not args.client_ca_file else []
    ctx = _tls(args, name, looked_up + ([request_header[1]] if request_header else []))
    anonymous = is_loopback(args.bind_address) if args.anonymous_auth is None else args.anonymous_auth
    authenticator = Authenticator(
        tokens=None
        if authn_client is None
        else TokenReviewAuthenticator(authn_client, args.authentication_token_webhook_cache_ttl),
        anonymous=anonymous,
        anonymous_paths=always_allow,
        request_header=request_header[0] if request_header else None,
        client_ca_issuers=_subjects(client_ca, "--client-ca-file") if client_ca else frozenset(),
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
        "clientCA": args.client_ca_file or ("cluster" if client_ca else ""),
        "requestHeader": args.requestheader_client_ca_file or ("cluster" if request_header else ""),
        "tokenReview": authn_client is not None,
        "subjectAccessReview": authz_client is not None,
        "staticRules": args.authorization_static_rules or "",
        "anonymous": anonymous,
        "alwaysAllowPaths": ",".join(always_allow.patterns),
    }
    return HandlerChain(app, authenticator=authenticator, authorizer=authorizer), ctx, summary


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
    clients = _Clients(getattr(args, "kubeconfig", None) or kubeconfig, getattr(args, "master", None))
    try:
        chain, ctx, summary = _chain(args, app, clients, name)
    except CommandError:
        clients.close()
        raise
    if closers is not None:
        closers.append(clients.close)
    logs.info("Secure serving", 2, bindAddress=args.bind_address, securePort=args.secure_port, **summary)
    return Listener(
        chain,
        args.bind_address,
        args.secure_port,
        ctx,
        connection_limits(args),
        reuse_port=args.permit_port_sharing,
    )


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
