"""The FastAPI applications: a component's endpoints, and the extender (those plus the verbs).

:func:`create_component_app` (every berth component; ``berth run`` adds its own routes):

==================  ==========================================================================
GET  /healthz       ping and the caller's ``healthz_checks`` (deprecated in Kubernetes, kept for
                    probes that still use it)
GET  /livez         ping
GET  /readyz        ping, shutdown and the caller's ``readyz_checks`` (:mod:`app.server.health`)
GET  /metrics       Prometheus text: scheduler_* (app.metrics), berth_extender_requests_total and
                    the instrumentator's http_* metrics, all from the default registry
GET  /configz       ``{"componentconfig": <effective configuration>}``
GET  /version       ``version.Info``-like JSON
GET  /docs          Swagger UI over /openapi.json
==================  ==========================================================================

:func:`create_app` (``berth serve``) adds:

==================  ==========================================================================
POST /filter        extender filter verb (:mod:`app.server.verbs`)
POST /prioritize    extender prioritize verb
POST /preempt       extender preempt verb (:mod:`app.extender.preempt`)
POST /bind          extender bind verb (:mod:`app.server.bind`; needs a ``binder``)
==================  ==========================================================================

and /openapi.json then also documents the wire types.

Every non-200 answer of the app is JSON ``{"Error": ...}`` (404, 405, 400, 413, 500); the probes
answer text/plain as Kubernetes components do. Authentication and authorization are not the app's
business: :class:`~app.server.chain.HandlerChain` wraps it for serving.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response
from fastapi.openapi.utils import get_openapi
from prometheus_fastapi_instrumentator import Instrumentator
from prometheus_fastapi_instrumentator import metrics as http_metrics
from pydantic.json_schema import models_json_schema
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import metrics
from app.extender import schema
from app.extender.bind import Binder, RememberingService
from app.extender.service import ExtenderService
from app.extender.wire import encode_error
from app.scheduler.scheduler import Engine
from app.server.bind import DEFAULT_BIND_TIMEOUT, install_bind
from app.server.fastpath import ExtenderApp, HttpSeries, InstrumentationMetrics, internal_error_message
from app.server.health import Check, ShutdownCheck, install_health, ping
from app.server.info import configz, version_info
from app.server.verbs import install_verbs

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "create_app", "create_component_app"]

log = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 64 << 20
"""64 MiB: room for a 5,000-node NodeList of full objects."""

_JSON = "application/json"
_PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"
_PROBES = ("/healthz", "/livez", "/readyz")


def _install_json_document(app: FastAPI, path: str, summary: str, description: str, document: Any) -> None:
    """``GET path`` answering ``document`` (encoded once), documented as a JSON object."""
    body = orjson.dumps(document)

    async def get_document() -> Response:
        return Response(body, media_type=_JSON)

    app.add_api_route(
        path,
        get_document,
        methods=["GET"],
        tags=["debug"],
        summary=summary,
        response_class=Response,
        responses={200: {"description": description, "content": {_JSON: {"schema": {"type": "object"}}}}},
        name=f"get_{path.strip('/')}",
    )


def create_component_app(
    *,
    config_dump: dict[str, Any],
    version: str,
    healthz_checks: Mapping[str, Check] | None = None,
    readyz_checks: Mapping[str, Check] | None = None,
    summary: str = "A Kubernetes scheduler with kube-scheduler v1.36.3 semantics.",
    app_class: type[FastAPI] = FastAPI,
) -> FastAPI:
    """The endpoints every berth component serves: health, /metrics, /configz, /version, /docs.

    ``config_dump`` is what /configz shows; ``version`` feeds /version. ``healthz_checks`` are added
    to /healthz after ``ping``; ``readyz_checks`` to /readyz after ``ping`` and ``shutdown`` (an
    informer-sync check, say). ``app.state.shutdown`` is the :class:`~app.server.health.ShutdownCheck`;
    a server flips it when a graceful shutdown begins, and the lifespan flips it when the app stops,
    then calls each of ``app.state.closers``. Callers add their own routes to the returned app, an
    instance of ``app_class``.
    """
    shutdown = ShutdownCheck()
    closers: list[Callable[[], None]] = []

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        shutdown.shutting_down = True
        for close in closers:
            close()

    app = app_class(title="berth", version=version, summary=summary, lifespan=lifespan)
    app.state.shutdown = shutdown
    app.state.closers = closers
    install_health(
        app,
        {
            "healthz": {"ping": ping, **(healthz_checks or {})},
            "livez": {"ping": ping},
            "readyz": {"ping": ping, "shutdown": shutdown, **(readyz_checks or {})},
        },
    )
    _install_json_document(
        app, "/configz", "The effective configuration", '`{"componentconfig": ...}`', configz(config_dump)
    )
    _install_json_document(
        app, "/version", "Version information", "A version.Info-like object.", version_info(version)
    )
    _install_error_handlers(app)
    _instrument(app)
    return app


def create_app(
    engine: Engine,
    *,
    profile: str | None,
    config_dump: dict[str, Any],
    version: str,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    readyz_checks: Mapping[str, Check] | None = None,
    binder: Binder | None = None,
    bind_timeout: float = DEFAULT_BIND_TIMEOUT,
) -> FastAPI:
    """The extender server for ``engine``: :func:`create_component_app` plus the verbs.

    ``profile`` names the profile the verbs run (None: the engine's first); bodies over
    ``max_request_bytes`` get 413. ``binder`` serves /bind (None: /bind answers that berth has no
    cluster connection); the verbs then remember the pods they see, so that a bind can count its
    pod in the cache at once. A /bind answers within ``bind_timeout`` seconds.

    The app is an :class:`~app.server.fastpath.ExtenderApp`: ``POST`` to a verb skips FastAPI's
    middleware and routing (the verbs' routes stay, documented, for anything else).
    """
    app = create_component_app(
        config_dump=config_dump,
        version=version,
        readyz_checks=readyz_checks,
        summary="A Kubernetes scheduler extender with kube-scheduler v1.36.3 semantics.",
        app_class=ExtenderApp,
    )
    assert isinstance(app, ExtenderApp)
    service = (
        ExtenderService(engine, profile) if binder is None else RememberingService(engine, profile, binder)
    )
    app.state.decisions = service.decisions  # what the verbs decided, for the web UI
    for verb in install_verbs(app, service, max_request_bytes):
        app.add_fast_verb(f"/{verb.name}", verb)
    bind_verb = install_bind(app, binder, max_request_bytes, bind_timeout)
    app.add_fast_verb("/bind", bind_verb)
    app.state.closers.append(bind_verb.close)
    if _http_instrumentation is not None:
        app.http_metrics = HttpSeries.find() or InstrumentationMetrics(_http_instrumentation)
    app.openapi = _openapi_with_wire_types(app)  # type: ignore[method-assign]
    return app


def _install_error_handlers(app: FastAPI) -> None:
    async def http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        return Response(encode_error(str(exc.detail)), exc.status_code, exc.headers, _JSON)

    async def internal_error(request: Request, exc: Exception) -> Response:
        # The verbs catch their own exceptions (answering 200 + Error); this is the last resort for
        # the other routes, and it never shows a traceback. Starlette re-raises the exception after
        # this answer, so the handler chain (or, for a bare app, uvicorn) logs it once, with the
        # request ID this body quotes.
        return Response(encode_error(internal_error_message(request.scope)), 500, media_type=_JSON)

    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)


# One set of HTTP collectors per process: prometheus_client refuses to register a name twice in
# the default registry, and the instrumentator would then silently count nothing for a second app.
_http_instrumentation: Callable[[Any], None] | None = None


def _instrument(app: FastAPI) -> None:
    global _http_instrumentation
    if _http_instrumentation is None:
        _http_instrumentation = _tolerant(http_metrics.default())
    instrumentator = Instrumentator(excluded_handlers=["^/metrics$", *(f"^{p}(/.*)?$" for p in _PROBES)])
    if _http_instrumentation is not None:
        instrumentator.add(_http_instrumentation)
    instrumentator.instrument(app)

    @app.get(
        "/metrics",
        tags=["debug"],
        summary="Prometheus metrics",
        response_class=Response,
        responses={
            200: {
                "description": "Prometheus text format 0.0.4.",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            }
        },
    )
    async def get_metrics() -> Response:
        # kube's text format: Go numbers (le="1"), stability markers, no _created series
        return Response(metrics.render(), media_type=_PROMETHEUS)


def _tolerant(instrumentation: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
    """Never let a metric fail a request (the instrumentator int()s a malformed Content-Length)."""
    if instrumentation is None:
        return None
    inner = instrumentation

    def observe(info: Any) -> None:
        try:
            inner(info)
        except ValueError:
            log.debug("HTTP metrics skipped for a request", exc_info=True)

    return observe


def _openapi_with_wire_types(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """app.openapi that also publishes ExtenderArgs and ExtenderPreemptionArgs, which the verbs read by hand."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            _, defs = models_json_schema(
                [(schema.ExtenderArgs, "validation"), (schema.ExtenderPreemptionArgs, "validation")],
                ref_template="#/components/schemas/{model}",
            )
            components = doc.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in defs.get("$defs", {}).items():
                components.setdefault(name, definition)
            app.openapi_schema = doc
        return app.openapi_schema

    return openapi
