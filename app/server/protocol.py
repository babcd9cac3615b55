"""uvicorn's httptools protocol, plus the TLS peer's verified certificate subject in the ASGI scope,
and one send per response.

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
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from starlette.types import Scope
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["BerthHttpProtocol", "CoalescingTransport", "Subject", "client_subject"]

Subject = tuple[tuple[str, str], ...]
"""A certificate subject's attributes as ``(name, value)`` pairs (``getpeercert()`` names)."""


def _subject(peercert: Mapping[str, Any] | None) -> Subject | None:
    if not peercert:
        return None  # no certificate, or (without CERT_OPTIONAL) one that was not verified
    return tuple((str(name), str(value)) for rdn in peercert.get("subject", ()) for name, value in rdn)


class CoalescingTransport:
    """A transport whose writes during one event-loop step leave in one ``write`` at its end.

    Everything else is the wrapped transport's; closing sends what is pending first (an abort drops
    it, as it drops the transport's own buffer).
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data`` for the end of this loop step."""
        if not data:
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
        self._transport.write_eof()

    def close(self) -> None:
        """Send what is pending, then close."""
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class BerthHttpProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that answers in one send and adds ``scope["extensions"]["tls"]`` on TLS
    connections."""

    _tls: dict[str, object] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Wrap the transport; read the TLS details of the new connection."""
        coalescing = CoalescingTransport(transport, self.loop)
        super().connection_made(coalescing)  # type: ignore[arg-type]
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            self._tls = {
                "tls_version": ssl_object.version(),
                "client_cert_subject": _subject(transport.get_extra_info("peercert")),
            }

    def on_message_begin(self) -> None:
        """Start the request's scope with the connection's TLS extension."""
        super().on_message_begin()
        if self._tls is not None:
            self.scope["extensions"] = {"tls": self._tls}  # type: ignore[dict-item]


def client_subject(scope: Scope) -> Subject | None:
    """The verified client certificate's subject of this request, if it came with one."""
    tls = scope.get("extensions", {}).get("tls")
    if not tls:
        return None
    subject = tls.get("client_cert_subject")
    return subject if isinstance(subject, tuple) else None
