"""kube-scheduler's HTTP extender client (``pkg/scheduler/extender.go``), for ``berth run`` and ``berth simulate``.

One :class:`HTTPExtender` per ``extenders[]`` entry of the configuration. Calls are synchronous
POSTs of the v1 wire types (:mod:`app.api.extenderv1`) to ``<urlPrefix>/<verb>``; the scheduling
cycle runs on its own thread in ``berth run`` (never on an event loop), as kube-scheduler's
ScheduleOne calls its extenders inline, and bindings run on the binding threads.

Behaviour kept from kube-scheduler:

* ``httpTimeout`` 0 means :data:`~app.config.defaults.DEFAULT_EXTENDER_TIMEOUT` (5s), the timeout
  of the whole request;
* ``enableHTTPS`` without a CA (``caFile``/``caData``) does not verify the server's certificate;
  ``tlsConfig`` gives the CA, client certificate, ``serverName`` and ``insecure``; whether TLS is
  used at all follows the URL's scheme, as in Go;
* ``managedResources`` make the extender interested only in pods that request or limit one of
  them in a container or init container;
* a ``Nodes`` answer of a non-``nodeCacheCapable`` extender becomes fresh NodeInfos *without the
  nodes' pods* (``framework.NewNodeInfo(); SetNode``), so scoring after such an extender sees empty
  nodes, exactly as kube-scheduler's; a ``nodeCacheCapable`` extender's ``NodeNames`` are mapped
  back to the snapshot's NodeInfos;
* failures carry Go's messages: ``Post "<url>": dial tcp <addr>: connect: connection refused``,
  ``Post "<url>": context deadline exceeded (Client.Timeout exceeded while awaiting headers)``,
  ``failed <verb> with extender at URL <url>, code <status>``.
"""

from __future__ import annotations

import contextlib
import os
import re
import ssl
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from urllib.parse import urlsplit

import urllib3

from app import logs
from app.api.extenderv1 import (
    AnswerError,
    decode_binding_result,
    decode_filter_result,
    decode_host_priorities,
    decode_preemption_result,
    encode_binding_args,
    encode_extender_args,
    encode_preemption_args,
)
from app.api.objects import Pod
from app.config.defaults import DEFAULT_EXTENDER_TIMEOUT
from app.config.types import Extender as ExtenderConfig
from app.config.types import ExtenderTLSConfig
from app.framework.interfaces import ExtenderError, ExtenderVictims, NodeInfoLister
from app.framework.runtime import FrameworkError
from app.framework.types import NodeInfo

__all__ = ["HTTPExtender", "build_extenders"]

_HEADERS = {"Content-Type": "application/json"}


@contextlib.contextmanager
def _pem_file(data: bytes, path: str) -> Iterator[str]:
    """``path``, or a temporary file holding ``data`` when it is set (``*Data`` wins over ``*File``)."""
    if not data:
        yield path
        return
    fd, name = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        yield name
    finally:
        os.unlink(name)


def _ssl_context(enable_https: bool, tls: ExtenderTLSConfig | None) -> ssl.SSLContext:
    """``makeTransport``: the CA, client certificate and verification kube-scheduler would use."""
    tls = tls or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    insecure = tls.insecure or (enable_https and not has_ca)
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if tls.ca_data:
        ctx.load_verify_locations(cadata=tls.ca_data.decode("ascii", "replace"))
    elif tls.ca_file:
        ctx.load_verify_locations(cafile=tls.ca_file)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls.cert_data or tls.cert_file:
        with _pem_file(tls.cert_data, tls.cert_file) as cert, _pem_file(tls.key_data, tls.key_file) as key:
            ctx.load_cert_chain(cert, key or None)
    return ctx


def _go_error(url: str, err: Exception) -> str:
    """The ``*url.Error`` text Go's http.Client gives for a failed POST."""
    reason = err
    if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None:
        reason = err.reason
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        cause = reason.__cause__ or reason.__context__
        what = "connection refused" if isinstance(cause, ConnectionRefusedError) else str(cause or reason)
        return f'Post "{url}": dial tcp {parts.hostname}:{port}: connect: {what}'
    # After NewConnectionError, which urllib3 derives from ConnectTimeoutError.
    if isinstance(reason, urllib3.exceptions.TimeoutError):
        return f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    if isinstance(reason, urllib3.exceptions.SSLError):
        return f'Post "{url}": tls: {reason}'
    return f'Post "{url}": {reason}'


class HTTPExtender:
    """``HTTPExtender``: one configured extender, called over HTTP(S) (implements ``framework.Extender``)."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.name = config.url_prefix
        self.ignorable = config.ignorable
        self.weight = config.weight
        self.node_cache_capable = config.node_cache_capable
        self.filter_verb = config.filter_verb
        self.prioritize_verb = config.prioritize_verb
        self.preempt_verb = config.preempt_verb
        self.bind_verb = config.bind_verb
        self.managed_resources = frozenset(r.name for r in config.managed_resources)
        self.timeout = config.http_timeout or DEFAULT_EXTENDER_TIMEOUT
        tls = config.tls_config
        context = _ssl_context(config.enable_https, tls)
        if context.verify_mode == ssl.CERT_NONE and urlsplit(self.name).scheme == "https":
            # Configured so (kube-scheduler says nothing either): no urllib3 warning per call.
            warnings.filterwarnings(
                "ignore",
                message=f"Unverified HTTPS request is being made to host '{re.escape(urlsplit(self.name).hostname or '')}'",
                category=urllib3.exceptions.InsecureRequestWarning,
            )
        self._pool = urllib3.PoolManager(
            num_pools=4,
            maxsize=8,
            ssl_context=context,
            server_hostname=(tls.server_name or None) if tls else None,
            retries=False,
            timeout=urllib3.Timeout(total=self.timeout),
        )

    def __repr__(self) -> str:
        return f"HTTPExtender({self.name!r})"

    def close(self) -> None:
        """Close the kept-alive connections."""
        self._pool.clear()

    # --- what the extender does -------------------------------------------------------------------

    def is_filter(self) -> bool:
        """Whether the extender has a filter verb."""
        return bool(self.filter_verb)

    def is_prioritizer(self) -> bool:
        """Whether the extender has a prioritize verb."""
        return bool(self.prioritize_verb)

    def is_binder(self) -> bool:
        """Whether the extender has a bind verb."""
        return bool(self.bind_verb)

    def supports_preemption(self) -> bool:
        """Whether the extender has a preempt verb."""
        return bool(self.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """``IsInterested``: no managed resources, or a (init) container requests or limits one."""
        if not self.managed_resources:
            return True
        # A parsed container's requests include every resource it only limits (API defaulting).
        managed = self.managed_resources
        return any(not managed.isdisjoint(c.requests) for c in (*pod.containers, *pod.init_containers))

    # --- the verbs ---------------------------------------------------------------------------------

    def _send(self, verb: str, body: bytes) -> bytes:
        """POST ``body`` to ``<urlPrefix>/<verb>``; the answer's body, or :class:`ExtenderError`."""
        url = self.name.rstrip("/") + "/" + verb
        scheme = urlsplit(url).scheme
        if scheme not in ("http", "https"):
            raise ExtenderError(f'Post "{url}": unsupported protocol scheme "{scheme}"')
        try:
            resp = self._pool.request("POST", url, body=body, headers=_HEADERS, preload_content=True)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise ExtenderError(_go_error(url, err)) from None
        if resp.status != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status}")
        return bytes(resp.data)

    def _args(self, pod: Pod, nodes: Sequence[NodeInfo]) -> bytes:
        if self.node_cache_capable:
            return encode_extender_args(pod, None, [n.name for n in nodes])
        return encode_extender_args(pod, [n.node for n in nodes if n.node is not None], None)

    def filter(
        self, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], Mapping[str, str], Mapping[str, str]]:
        """``Filter``: the nodes that pass, FailedNodes and FailedAndUnresolvableNodes."""
        if not self.filter_verb:
            return list(nodes), {}, {}
        body = self._send(self.filter_verb, self._args(pod, nodes))
        try:
            result = decode_filter_result(body)
        except AnswerError as err:
            raise ExtenderError(str(err)) from None
        if result.error:
            raise ExtenderError(result.error)
        passed: list[NodeInfo] = []
        if self.node_cache_capable and result.node_names is not None:
            by_name = {n.name: n for n in nodes}
            for name in result.node_names:
                info = by_name.get(name)
                if info is None:
                    raise ExtenderError(
                        f'extender "{self.name}" claims a filtered node "{name}" which is not found '
                        "in the input node list"
                    )
                passed.append(info)
        elif result.nodes is not None:
            passed = [NodeInfo(node) for node in result.nodes]
        return passed, result.failed or {}, result.unresolvable or {}

    def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> list[tuple[str, int]]:
        """``Prioritize``: (host, score) as the extender answered; all zeros without a prioritize verb."""
        if not self.prioritize_verb:
            return [(n.name, 0) for n in nodes]
        body = self._send(self.prioritize_verb, self._args(pod, nodes))
        try:
            return [(p.host, p.score) for p in decode_host_priorities(body)]
        except AnswerError as err:
            raise ExtenderError(str(err)) from None

    def process_preemption(
        self, pod: Pod, victims: ExtenderVictims, lister: NodeInfoLister
    ) -> ExtenderVictims:
        """``ProcessPreemption``: the candidates kept, the answer's UIDs resolved to the nodes' pods."""
        if not self.preempt_verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.name} but run into ProcessPreemption"
            )
        body = self._send(
            self.preempt_verb, encode_preemption_args(pod, victims, meta=self.node_cache_capable)
        )
        try:
            answer = decode_preemption_result(body)
        except AnswerError as err:
            raise ExtenderError(str(err)) from None
        out: ExtenderVictims = {}
        for node_name, meta in answer.items():
            info = lister.get(node_name)
            if info is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node_name}"')
            on_node = {p.pod.uid: p.pod for p in info.pods}
            pods = []
            for uid in meta.uids:
                found = on_node.get(uid)
                if found is None:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on node: "
                        f"{node_name}, but the pod is not found on that node"
                    )
                pods.append(found)
            out[node_name] = (pods, meta.num_pdb_violations)
        return out

    def bind(self, pod: Pod, node_name: str) -> None:
        """``Bind``: the extender binds the pod (an ``Error`` in its answer is a failure)."""
        if not self.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        body = self._send(self.bind_verb, encode_binding_args(pod, node_name))
        try:
            error = decode_binding_result(body)
        except AnswerError as err:
            raise ExtenderError(str(err)) from None
        if error:
            raise ExtenderError(error)


def build_extenders(configs: Sequence[ExtenderConfig]) -> list[HTTPExtender]:
    """``buildExtenders``: a client per configured extender, the ignorable ones moved to the end.

    Raises :class:`~app.framework.runtime.FrameworkError` naming the entry whose TLS files cannot
    be read or used.
    """
    built = []
    for i, config in enumerate(configs):
        logs.info("Creating extender", 2, extender=config.url_prefix)
        try:
            built.append(HTTPExtender(config))
        except (OSError, ssl.SSLError, ValueError) as err:
            raise FrameworkError(f"extenders[{i}].tlsConfig: {err}") from err
    return [e for e in built if not e.ignorable] + [e for e in built if e.ignorable]
