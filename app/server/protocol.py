"""uvicorn's httptools protocol, plus the TLS peer's verified certificate subject in the ASGI scope,
one send per response, and direct answers.

uvicorn writes a response's head as soon as the app starts it and the body when it sends it: two
sends, so two TCP segments, and on loopback two wake-ups of kube-scheduler's reading goroutine for
every /filter and /prioritize answer, all while berth holds the GIL. :class:`CoalescingTransport`
joins the writes made in one step of the event loop into one send at the end of that step; an answer
whose head and body are sent in one step (every berth answer) leaves in one segment.

uvicorn does not put TLS details in the scope. This protocol reads them once per connection (the
handshake, and with it the client-certificate check against ``--client-ca-file``, is over when
``connection_made`` runs) and adds the ASGI TLS extension to each request's scope::

    scope["extensions"]["tls"] = {
        "tls_version": "TLSv1.3",
        "client_cert_subject": (("commonName", "alice"), ("organizationName", "team-a"), ...) or None,
    }

``client_cert_subject`` is berth's key (the standard extension only has the PEM chain): the verified
client certificate's subject attributes, in order; None when the client sent no certificate.

A request the listener's app has a direct route for (:mod:`app.server.direct`) is answered from the
parser's ``on_message_complete`` callback, with no ASGI task: the answer is written at once, with
the ``date`` header uvicorn adds and ``connection: close`` when the connection ends after it, as
uvicorn writes an ASGI answer.

Each listener's protocol carries its :class:`~app.server.limits.ConnectionLimits` and a
:class:`~app.server.limits.ConnectionTable`: a connection gets ``read_header_timeout`` from its
start (and from a keep-alive request's first byte) to the end of its headers, then
``read_body_timeout`` for its body, and ``idle_timeout`` between requests (uvicorn's keep-alive
timer). A header timeout closes the connection without an answer, as Go's server does; a body
timeout answers ``408``, headers over ``max_header_bytes`` ``431``, a request the parser refuses
(``Content-Length: abc``) ``400``, each with an ``{"Error": ...}`` body. After such an answer the
connection stops reading requests, half-closes and discards what the client still sends for
``DRAIN_SECONDS`` before closing (Go's ``rstAvoidanceDelay``): closing a socket with unread data
sends a reset, which would reach the client before it read the answer.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httptools
import orjson
from starlette.types import Scope

from app.server.direct import DirectApp, DirectRoute, Headers, direct_app
from app.server.limits import DEFAULT_LIMITS, HEADER_SLACK, ConnectionLimits, ConnectionTable
from app.server.uvicorn_parts import STATUS_LINE, HttpToolsProtocol

__all__ = [
    "DRAIN_SECONDS",
    "BerthHttpProtocol",
    "CoalescingTransport",
    "Subject",
    "client_issuer",
    "client_subject",
]

DRAIN_SECONDS = 0.5

Subject = tuple[tuple[str, str], ...]
"""A certificate subject's attributes as ``(name, value)`` pairs (``getpeercert()`` names)."""


def _subject(peercert: Mapping[str, Any] | None) -> Subject | None:
    if not peercert:
        return None  # no certificate, or (without CERT_OPTIONAL) one that was not verified
    return _name(peercert, "subject")


def _name(peercert: Mapping[str, Any], field: str) -> Subject:
    return tuple((str(name), str(value)) for rdn in peercert.get(field, ()) for name, value in rdn)


def _issuer(peercert: Mapping[str, Any] | None) -> Subject | None:
    return _name(peercert, "issuer") if peercert else None


class CoalescingTransport:
    """A transport whose writes during one event-loop step leave in one ``write`` at its end.

    Everything else is the wrapped transport's; closing sends what is pending first (an abort drops
    it, as it drops the transport's own buffer).
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._eof = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data`` for the end of this loop step (dropped after :meth:`write_eof`: the connection
        ended with an error answer, and an ASGI task still under way may answer after it)."""
        if not data or self._eof:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, chunks: Any) -> None:
        """Queue every chunk."""
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        """Send what is pending, in one write."""
        pending = self._pending
        if not pending:
            return
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        """The transport's buffer plus what waits for the end of the step."""
        return self._transport.get_write_buffer_size() + sum(len(d) for d in self._pending)

    def write_eof(self) -> None:
        """Send what is pending, then half-close."""
        self.flush()
        self._eof = True
        self._transport.write_eof()

    def close(self) -> None:
        """Send what is pending, then close."""
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


@dataclass(slots=True)
class _DirectRequest:
    """A request on its way to a direct route: its body so far, and whether the connection stays open."""

    route: DirectRoute
    keep_alive: bool
    chunks: list[bytes] = field(default_factory=list)


class BerthHttpProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that answers in one send, adds ``scope["extensions"]["tls"]`` on TLS
    connections, answers the app's direct routes inline (:mod:`app.server.direct`), and enforces
    the listener's connection limits.

    :meth:`serving` gives the protocol class of one listener.
    """

    direct_app: ClassVar[DirectApp | None] = None
    limits: ClassVar[ConnectionLimits] = DEFAULT_LIMITS
    table: ClassVar[ConnectionTable[BerthHttpProtocol] | None] = None
    _tls: dict[str, object] | None = None
    _direct: _DirectRequest | None = None
    _timer: asyncio.TimerHandle | None = None
    _awaiting_headers = True  # no request between its first byte and its complete headers
    _header_bytes = 0  # bytes received while awaiting headers
    _requests_open = 0  # headers complete, answer not yet complete
    _refused = False  # an error answer was written; the rest of the connection is discarded

    @classmethod
    def serving(cls, app: object, limits: ConnectionLimits = DEFAULT_LIMITS) -> type[BerthHttpProtocol]:
        """The protocol for one listener of ``app``: its direct routes, if any, and its limits."""
        attrs: dict[str, object] = {
            "limits": limits,
            "table": ConnectionTable[BerthHttpProtocol](limits.max_connections, _close),
        }
        direct = direct_app(app)
        if direct is not None:
            attrs["direct_app"] = direct
        return type(cls.__name__, (cls,), attrs)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Wrap the transport; read the TLS details of the new connection; admit it or close it."""
        coalescing = CoalescingTransport(transport, self.loop)
        super().connection_made(coalescing)  # type: ignore[arg-type]
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            peercert = transport.get_extra_info("peercert")
            self._tls = {
                "tls_version": ssl_object.version(),
                "client_cert_subject": _subject(peercert),
                "client_cert_issuer": _issuer(peercert),
            }
        if self.table is not None and not self.table.admit(self):
            transport.close()  # every open connection is in a request
            return
        self._arm(self.limits.read_header_timeout, self._header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        """Drop a direct request still waiting for its body, and the connection's timer and slot."""
        self._direct = None
        self._cancel_timer()
        if self.table is not None:
            self.table.remove(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed the parser; a request it refuses, or whose headers are too large, gets its answer."""
        if self._refused:
            return  # draining after an error answer
        if self._awaiting_headers:
            self._header_bytes += len(data)
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError as err:
            self._refuse(400, f"malformed HTTP request: {err}")
            return
        if self._awaiting_headers and self._header_bytes > self.limits.max_header_bytes + HEADER_SLACK:
            self._refuse_large_headers()

    def on_message_begin(self) -> None:
        """Start the request's scope with the connection's TLS extension, and its header timeout."""
        super().on_message_begin()
        if self._tls is not None:
            self.scope["extensions"] = {"tls": self._tls}  # type: ignore[dict-item]
        if self._timer is None and self._requests_open == 0:
            self._arm(self.limits.read_header_timeout, self._header_timeout)

    def on_headers_complete(self) -> None:
        """Check the header size, start the body timeout, and take the request directly when its
        app has a route for it and nothing asks for ASGI."""
        if self._refused:
            return
        self._awaiting_headers = False
        self._header_bytes = 0
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > self.limits.max_header_bytes:
            self._refuse_large_headers()
            return
        self._requests_open += 1
        if self.table is not None:
            self.table.busy(self)
        self._arm(self.limits.read_body_timeout, self._body_timeout)
        route = self._direct_route()
        if route is None:
            super().on_headers_complete()
            return
        self._direct = _DirectRequest(route, keep_alive=self.parser.should_keep_alive())

    def _direct_route(self) -> DirectRoute | None:
        if self.direct_app is None or self.root_path or self.limit_concurrency is not None:
            return None
        if self.parser.get_method() != b"POST" or self.parser.get_http_version() != "1.1":
            return None
        if self.expect_100_continue or self.parser.should_upgrade():
            return None
        if self.cycle is not None and not self.cycle.response_complete:
            return None  # behind an answer still being written: keep the order through uvicorn's pipeline
        length = None
        for name, value in self.headers:
            if name == b"content-length":
                if length is not None or not value.isdigit():
                    return None
                length = int(value)
            elif name == b"transfer-encoding" or name.startswith(b"x-forwarded-"):
                return None  # a chunked body; proxy headers uvicorn's middleware reads
        if length is None:
            return None
        url = httptools.parse_url(self.url)
        path = url.path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        route = self.direct_app.direct_route("POST", path)
        if route is None or length > route.limit:
            return None
        self.scope["method"] = "POST"
        self.scope["path"] = path
        self.scope["raw_path"] = url.path
        self.scope["query_string"] = url.query or b""
        return route

    def on_body(self, body: bytes) -> None:
        """Collect a direct request's body."""
        if self._refused:
            return
        if self._direct is not None:
            self._direct.chunks.append(body)
        else:
            super().on_body(body)

    def on_message_complete(self) -> None:
        """Answer a direct request now that its body is complete."""
        if self._refused:
            return
        self._cancel_timer()
        self._awaiting_headers = True
        request = self._direct
        if request is None:
            super().on_message_complete()
            return
        self._direct = None
        chunks = request.chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        answered = False

        def respond(status: int, headers: Headers, answer: bytes) -> None:
            nonlocal answered
            if answered:
                raise RuntimeError("a direct route answered twice")
            answered = True
            self._write_answer(status, headers, answer, request.keep_alive)

        try:
            request.route.serve(self.scope, body, respond)  # type: ignore[arg-type]
        except Exception:
            # The handler chain logs and answers its routes' exceptions; this is uvicorn's last resort.
            self.logger.exception("Exception in a direct route")
            if not answered:
                self._write_answer(500, _INTERNAL_ERROR_HEADERS, b"Internal Server Error", keep_alive=False)
                request.keep_alive = False
        if not request.keep_alive:
            self.transport.close()
        self.on_response_complete()

    def _write_answer(self, status: int, headers: Headers, body: bytes, keep_alive: bool) -> None:
        """Status line, uvicorn's default headers (``date``), ``headers`` and ``body``, in one send."""
        out = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            out += (name, b": ", value, b"\r\n")
        for name, value in headers:
            out += (name, b": ", value, b"\r\n")
        if not keep_alive:
            out.append(b"connection: close\r\n")
        out += (b"\r\n", body)
        transport = self.transport
        transport.write(b"".join(out))
        if isinstance(transport, CoalescingTransport):
            transport.flush()  # now: the route's follow-up work runs later in this loop step

    def on_response_complete(self) -> None:
        """As uvicorn's (which arms the idle timeout), and the connection may again make room for others."""
        self._requests_open = max(self._requests_open - 1, 0)
        super().on_response_complete()
        if self._requests_open or self.transport.is_closing():
            return
        if self.table is not None:
            self.table.idle(self)
        if self._header_bytes and self._timer is None:
            # The next request's first bytes came while this one was answered: its headers' clock runs.
            self._arm(self.limits.read_header_timeout, self._header_timeout)

    # --- limits ---------------------------------------------------------------------------------

    def _arm(self, seconds: float, then: Any) -> None:
        self._cancel_timer()
        self._timer = self.loop.call_later(seconds, then)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _header_timeout(self) -> None:
        """No complete headers in time: close without an answer, as Go's server does."""
        self._timer = None
        if self._requests_open == 0 and not self.transport.is_closing():
            self.transport.close()

    def _body_timeout(self) -> None:
        """The body did not arrive in time: 408, unless the app already answers."""
        self._timer = None
        if self.cycle is not None and self.cycle.response_started and self._direct is None:
            self.transport.close()
            return
        self._refuse(408, f"request body not received within {self.limits.read_body_timeout:g}s")

    def _refuse_large_headers(self) -> None:
        self._refuse(431, f"request headers larger than the limit of {self.limits.max_header_bytes} bytes")

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with an ``Error`` body, then stop reading requests and close gracefully."""
        self._refused = True
        self._direct = None
        self._cancel_timer()
        self._unset_keepalive_if_required()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
        if self.transport.is_closing():
            return
        body = orjson.dumps({"Error": message})
        headers: Headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        self._write_answer(status, headers, body, keep_alive=False)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._timer = self.loop.call_later(DRAIN_SECONDS, self.transport.close)

    def shutdown(self) -> None:
        """As uvicorn's, and a direct request still coming in gets its answer, then the connection closes."""
        if self._direct is not None:
            self._direct.keep_alive = False
        else:
            super().shutdown()


_INTERNAL_ERROR_HEADERS: Headers = [
    (b"content-type", b"text/plain; charset=utf-8"),
    (b"content-length", b"21"),
]


def _close(connection: BerthHttpProtocol) -> None:
    """Close a connection the table evicts: it is waiting, so it owes no answer."""
    if not connection.transport.is_closing():
        connection.transport.close()


def client_subject(scope: Scope) -> Subject | None:
    """The verified client certificate's subject of this request, if it came with one."""
    return _tls_name(scope, "client_cert_subject")


def _tls_name(scope: Scope, key: str) -> Subject | None:
    tls = scope.get("extensions", {}).get("tls")
    if not tls:
        return None
    name = tls.get(key)
    return name if isinstance(name, tuple) else None


def client_issuer(scope: Scope) -> Subject | None:
    """The issuer name of the request's verified client certificate, if it came with one."""
    return _tls_name(scope, "client_cert_issuer")
