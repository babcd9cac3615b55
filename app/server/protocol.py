"""uvicorn's httptools protocol, plus the TLS peer's verified certificate subject in the ASGI scope.

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

__all__ = ["Subject", "TLSHttpToolsProtocol", "client_subject"]

Subject = tuple[tuple[str, str], ...]
"""A certificate subject's attributes as ``(name, value)`` pairs (``getpeercert()`` names)."""


def _subject(peercert: Mapping[str, Any] | None) -> Subject | None:
    if not peercert:
        return None  # no certificate, or (without CERT_OPTIONAL) one that was not verified
    return tuple((str(name), str(value)) for rdn in peercert.get("subject", ()) for name, value in rdn)


class TLSHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that adds ``scope["extensions"]["tls"]`` on TLS connections."""

    _tls: dict[str, object] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Read the TLS details of the new connection."""
        super().connection_made(transport)
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
