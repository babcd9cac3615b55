"""Requests answered inline by the HTTP protocol, without an ASGI task: the interfaces.

For every request, uvicorn builds a request-response cycle, starts an asyncio task that runs the
ASGI app, passes the body and the answer as ``receive`` and ``send`` messages, and writes the answer
one loop step later. For a /filter or /prioritize that is about 0.15 ms per call, and kube-scheduler's
scheduling loop waits through all of it, twice per pod.

A :class:`DirectRoute` is a request the app can answer synchronously once its whole body is in:
the extender's engine verbs, which run the engine inline on the event loop anyway. The protocol
(:class:`~app.server.protocol.BerthHttpProtocol`) asks the listener's app for a route when a
request's headers are complete. If the app has one, the protocol collects the body and calls
:meth:`DirectRoute.serve` from the parser's callback, and the answer is written at once. Everything
else (other paths and methods, a body without a ``Content-Length``, ``Expect: 100-continue``,
proxy headers, HTTP/1.0, pipelined requests behind an unfinished answer) goes through ASGI as before.

The app layers (:class:`~app.server.chain.HandlerChain`, :class:`~app.server.fastpath.ExtenderApp`)
each wrap the route of the layer below, so a direct answer keeps what each layer does for an ASGI one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from starlette.types import Scope

__all__ = ["DirectApp", "DirectRoute", "Headers", "Respond", "direct_app"]

Headers = list[tuple[bytes, bytes]]
"""Response headers, lower-case names, as in ASGI."""

Respond = Callable[[int, Headers, bytes], None]
"""Writes one whole answer: ``respond(status, headers, body)``. Called at most once per request."""


class DirectRoute(Protocol):
    """One request type an app answers without ASGI."""

    limit: int
    """The largest body taken directly; a larger declared ``Content-Length`` goes through ASGI (and its 413)."""

    def serve(self, scope: Scope, body: bytes, respond: Respond) -> None:
        """Answer the request in ``scope`` (an ASGI HTTP scope) whose whole body is ``body``.

        Exceptions after an answer are the caller's to log; an exception before one means no answer.
        """
        ...


@runtime_checkable
class DirectApp(Protocol):
    """An ASGI app that answers some requests directly."""

    def direct_route(self, method: str, path: str) -> DirectRoute | None:
        """The route for ``method`` on the URL path ``path``, or None: serve it through ASGI."""
        ...


def direct_app(app: object) -> DirectApp | None:
    """``app`` if it can answer requests directly, else None."""
    return app if isinstance(app, DirectApp) else None
