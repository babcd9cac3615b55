"""berth's HTTP server: the extender verbs plus the endpoints a Kubernetes component serves.

Public API: :func:`create_app` and :func:`create_component_app` (:mod:`app.server.app`), the
handler chain (:mod:`app.server.chain`), :class:`HttpServer` and :class:`Listener`
(:mod:`app.server.httpserver`).
"""

from app.server.app import DEFAULT_MAX_REQUEST_BYTES, create_app, create_component_app
from app.server.chain import HandlerChain
from app.server.httpserver import HttpServer, Listener, ListenError

__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "HandlerChain",
    "HttpServer",
    "ListenError",
    "Listener",
    "create_app",
    "create_component_app",
]
