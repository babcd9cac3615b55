"""The parts of uvicorn berth's HTTP server uses, without ``uvicorn/__init__``.

``import uvicorn`` runs ``uvicorn.main``, its command line, and with it click: about 5 MiB and
30 ms that ``berth run`` and ``berth serve`` never use (they build ``Config`` and ``Server``
themselves). The ``uvicorn`` package is put in ``sys.modules`` as a
:func:`~app.lazypackage.placeholder` holding the names its submodules import from it (``Config``,
``Server``); anything asking for another (``uvicorn.run``, ``uvicorn.main``) still gets the real
package. If uvicorn was imported already, or its layout differs, it is imported the usual way.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING

from app.lazypackage import placeholder

__all__ = ["STATUS_LINE", "Config", "HttpToolsProtocol", "Server"]


def _install_placeholder() -> None:
    if "uvicorn" in sys.modules:
        return
    spec = importlib.util.find_spec("uvicorn")
    if spec is None or spec.submodule_search_locations is None:
        return  # let the import below fail as it would
    package = placeholder(spec)
    try:
        from uvicorn.config import Config
        from uvicorn.server import Server

        # What uvicorn's own modules import from the package (uvicorn.lifespan.on: ``Config``).
        package.Config = Config  # type: ignore[attr-defined]
        package.Server = Server  # type: ignore[attr-defined]
    except Exception:  # a uvicorn release laid out differently: import it whole
        for name in [m for m in sys.modules if m == "uvicorn" or m.startswith("uvicorn.")]:
            del sys.modules[name]


if not TYPE_CHECKING:
    _install_placeholder()

from uvicorn.config import Config  # noqa: E402 (after the placeholder, by design)
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol  # noqa: E402
from uvicorn.server import Server  # noqa: E402
