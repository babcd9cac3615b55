"""berth's HTTP server: the extender verbs plus the endpoints a Kubernetes component serves.

Public API: :func:`create_app` and :func:`create_component_app` (:mod:`app.server.app`), the
handler chain (:mod:`app.server.chain`), :class:`HttpServer` and :class:`Listener`
(:mod:`app.server.httpserver`).

The names are imported from their modules on first use (PEP 562): importing one submodule (the
version info ``berth``'s parser needs, say) does not load the extender's verbs with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_MODULE_OF = {
    "DEFAULT_MAX_REQUEST_BYTES": "app.server.app",
    "create_app": "app.server.app",
    "create_component_app": "app.server.app",
    "HandlerChain": "app.server.chain",
    "HttpServer": "app.server.httpserver",
    "Listener": "app.server.httpserver",
    "ListenError": "app.server.httpserver",
}


def __getattr__(name: str) -> Any:
    """A public name from its module, imported now; a submodule (``app.server.verbs``) as usual."""
    module = _MODULE_OF.get(name)
    if module is None:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
