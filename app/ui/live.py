"""``/ui/``: the web UI of ``berth run`` and ``berth serve``, and the JSON it polls.

==============================  ===============================================================
GET /ui, /ui/                   the page (``/ui`` redirects to ``/ui/``)
GET /ui/assets/{file}           its script and stylesheet, from the package (no CDN)
GET /ui/api/info                the face (``run`` or ``serve``), the version, each profile's Score
                                plugin weights
GET /ui/api/decisions           the most recent decisions, newest first (``?limit=``, 1-5000;
                                ``?since=T``: only those recorded after T, epoch seconds)
GET /ui/api/pods/{ns}/{name}    one pod's decision: what ``/debug/pods/{ns}/{name}`` answers
GET /ui/api/nodes               every node's requested/allocatable resources and the pods on it
==============================  ===============================================================

The routes are plain app routes, so the handler chain that wraps the app authenticates and
authorizes them exactly as it does ``/debug/pods`` (and ``berth serve``'s plain loopback port
serves them as it serves the verbs). The page polls while it is visible; each poll reads what the
scheduler keeps anyway (the decision traces, the cache through an incrementally updated snapshot),
so an open browser costs the scheduling loop a lock and a copy of what changed.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import FastAPI, Response
from fastapi.responses import RedirectResponse

from app.backend.cache.snapshot import Snapshot
from app.scheduler.scheduler import Engine
from app.ui.assets import ASSET_TYPES, asset_bytes

__all__ = ["DEFAULT_DECISIONS", "MAX_DECISIONS", "UiSource", "install_ui"]

_JSON = "application/json"
#: Decisions the page asks for by default, and the most one request may ask for.
DEFAULT_DECISIONS = 500
MAX_DECISIONS = 5000

Recent = Callable[[int, float], list[dict[str, Any]]]
Explain = Callable[[str], dict[str, Any] | None]


class UiSource:
    """What the pages show, read from a running face.

    ``recent(limit, since)`` lists the latest decisions (those recorded after ``since``) and
    ``explain(key)`` explains one: ``berth run``'s decision traces (the call ``/debug/pods`` answers
    with), or ``berth serve``'s record of what its extender verbs decided
    (:class:`~app.extender.decisions.ExtenderDecisions`). Without them the pages show only the
    cache's nodes.
    """

    def __init__(
        self, engine: Engine, face: str, recent: Recent | None = None, explain: Explain | None = None
    ) -> None:
        self.engine = engine
        self.face = face
        self._recent = recent
        self._explain = explain
        self._snapshot = Snapshot()
        self._snapshot_lock = threading.Lock()
        self._nodes: tuple[int, list[dict[str, Any]]] | None = None  # (snapshot generation, nodes())
        self._entries: dict[str, tuple[int, dict[str, Any]]] = {}  # node -> (its generation, entry)

    def info(self, version: str) -> dict[str, Any]:
        """The face, the version and each profile's Score weights (``{profile: {plugin: weight}}``)."""
        weights = {name: dict(fwk.score_weights) for name, fwk in self.engine.profiles.items()}
        return {
            "face": self.face,
            "version": version,
            "decisions": self._recent is not None,
            "weights": weights,
        }

    def decisions(self, limit: int, since: float = 0.0) -> list[dict[str, Any]]:
        """The ``limit`` latest decisions recorded after ``since`` (epoch s), newest first (none on a
        face that records none)."""
        return [] if self._recent is None else self._recent(limit, since)

    def explain(self, key: str) -> dict[str, Any] | None:
        """Pod ``namespace/name``'s last decision in ``berth simulate -o json``'s shape, or None."""
        return None if self._explain is None else self._explain(key)

    def nodes(self) -> list[dict[str, Any]]:
        """Each node as simulate's ``nodes[]`` lists it, plus ``pods``: the keys of the pods on it."""
        # simulate's report gives the JSON shape; imported on the first poll, not at start-up
        # (``berth run`` would otherwise load the whole simulator for a page few open).
        from app.simulate.report import node_dict
        from app.simulate.utilization import node_usage

        with self._snapshot_lock:
            # One snapshot kept across polls: update_snapshot copies only the nodes changed since,
            # an unchanged cache answers with the list built last time, and a changed one rebuilds
            # only the entries of nodes whose generation moved (a poll during a burst of binds
            # touches a few nodes, not all of them: building every entry was 90% of a poll).
            self.engine.cache.update_snapshot(self._snapshot)
            if self._nodes is not None and self._nodes[0] == self._snapshot.generation:
                return self._nodes[1]
            previous, entries = self._entries, {}
            out = []
            for info in self._snapshot.list():
                if info.node is None:
                    continue
                name = info.node.name
                built = previous.get(name)
                if built is None or built[0] != info.generation:
                    entry = node_dict(node_usage(name, info))
                    entry["pods"] = [p.pod.key for p in info.pods]
                    built = (info.generation, entry)
                entries[name] = built
                out.append(built[1])
            self._entries = entries
            self._nodes = (self._snapshot.generation, out)
        return out


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, media_type=_JSON)


def _error(message: str, status: int) -> Response:
    return _json({"Error": message}, status)


def install_ui(app: FastAPI, source: UiSource, version: str) -> None:
    """Add ``/ui/`` and its API (the module's table) to ``app``."""

    @app.get("/ui", include_in_schema=False)
    async def ui_root() -> Response:
        return RedirectResponse("/ui/", status_code=307)

    @app.get("/ui/", tags=["ui"], summary="The web UI", response_class=Response)
    async def ui_page() -> Response:
        return Response(asset_bytes("index.html"), media_type=ASSET_TYPES["index.html"])

    @app.get("/ui/assets/{name}", tags=["ui"], summary="A file of the web UI", response_class=Response)
    async def ui_asset(name: str) -> Response:
        if name not in ASSET_TYPES:
            return _error(f"no UI asset named {name!r}", 404)
        return Response(
            asset_bytes(name), media_type=ASSET_TYPES[name], headers={"Cache-Control": "no-cache"}
        )

    info = source.info(version)

    @app.get("/ui/api/info", tags=["ui"], summary="The face, version and Score weights")
    async def ui_info() -> Response:
        return _json(info)

    @app.get("/ui/api/decisions", tags=["ui"], summary="The latest scheduling decisions")
    async def ui_decisions(limit: str = str(DEFAULT_DECISIONS), since: str = "0") -> Response:
        try:
            count = int(limit)
        except ValueError:
            count = 0
        if not 1 <= count <= MAX_DECISIONS:
            return _error(f"limit: {limit!r} must be a whole number from 1 to {MAX_DECISIONS}", 400)
        try:
            after = float(since)
        except ValueError:
            after = math.nan
        if not math.isfinite(after):
            return _error(f"since: {since!r} must be a time in seconds since the epoch", 400)
        return _json({"decisions": source.decisions(count, after)})

    @app.get("/ui/api/pods/{namespace}/{name}", tags=["ui"], summary="One pod's last decision")
    async def ui_pod(namespace: str, name: str) -> Response:
        trace = source.explain(f"{namespace}/{name}")
        if trace is None:
            return _error(f"no scheduling attempt recorded for pod {namespace}/{name}", 404)
        return _json(trace)

    @app.get("/ui/api/nodes", tags=["ui"], summary="Node utilization and the pods on each node")
    async def ui_nodes() -> Response:
        return _json({"nodes": source.nodes()})
