"""The extender verbs straight on ASGI, ahead of FastAPI's stack.

kube-scheduler calls /filter and /prioritize once each per pod, in its scheduling loop, and waits
for the answers; /bind once per pod from its binding goroutines. Every microsecond the server
spends around the engine is added to each pod's scheduling time. Through FastAPI a verb call went
through Starlette's error middleware, the body-limit and telemetry wrappers, the Prometheus
instrumentator (which builds a ``Request``, a ``Response`` and an ``Info`` per call), the exception
middleware, an ``AsyncExitStack``, route matching over every route and FastAPI's endpoint
machinery: about as much CPU as scoring 100 nodes.

:class:`ExtenderApp` is the FastAPI app of ``berth serve`` with one difference: a ``POST`` to a
verb's path goes straight to that :class:`~app.server.verbs.Verb`, and everything else
(probes, /metrics, /configz, /docs, wrong methods, unknown paths, apps under a root path) goes to
FastAPI as before. What the fast path keeps identical to the FastAPI route:

- the answers: the verb object is the same one the route runs, and the headers are those
  Starlette's ``Response`` sets (``content-length``, ``content-type: application/json``);
- an unexpected exception: ``500 {"Error": "internal server error (request ID ...)"}``, then
  re-raised so that the handler chain logs it with its stack trace, as the app's
  ``internal_error`` handler and Starlette's ``ServerErrorMiddleware`` do;
- the metrics: ``berth_extender_requests_total`` (counted by the verb) and the instrumentator's
  ``http_*`` series with the same labels (``handler`` the path, ``method``, ``status`` grouped as
  ``2xx``/``4xx``/``5xx``) and values, recorded through the instrumentator's own collectors
  (:class:`HttpSeries`).

The verbs that answer synchronously once they have their body (the engine verbs,
:class:`~app.server.verbs.InlineVerb`) are also offered to the protocol as direct routes
(:class:`DirectVerb`, :mod:`app.server.direct`), with the same answers, metrics and follow-up.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import FastAPI
from prometheus_client import REGISTRY, CollectorRegistry
from starlette.types import Receive, Scope, Send

from app.extender.wire import encode_error
from app.server.body import content_length
from app.server.chain import REQUEST_ID
from app.server.direct import DirectRoute, Headers, Respond
from app.server.verbs import OFF_LOOP_BYTES, InlineVerb, Verb

__all__ = [
    "DirectVerb",
    "ExtenderApp",
    "HttpMetrics",
    "HttpSeries",
    "InstrumentationMetrics",
    "internal_error_message",
]

log = logging.getLogger(__name__)

_HEADERS_JSON = (b"content-type", b"application/json")


def internal_error_message(scope: Scope) -> str:
    """The ``Error`` of a 500 answer, quoting the request ID the handler chain logs it under."""
    request_id = scope.get(REQUEST_ID)
    return f"internal server error (request ID {request_id})" if request_id else "internal server error"


class HttpMetrics(Protocol):
    """Where the fast path records a call in the instrumentator's ``http_*`` series."""

    def observe(
        self, method: str, handler: str, status: int, request_length: str | None, size: int, duration: float
    ) -> None:
        """Count one answered request (``request_length``: its Content-Length header, if any)."""
        ...


class HttpSeries:
    """The instrumentator's default ``http_*`` collectors, fed directly with cached label children.

    Records exactly what ``prometheus_fastapi_instrumentator.metrics.default()`` records (status
    grouped as ``2xx``..., sizes from Content-Length, both latency histograms) without building an
    ``Info``, label lists and a ``labels()`` lookup per series per call.
    """

    def __init__(
        self, total: Any, in_size: Any, out_size: Any, latency_highr: Any, latency_lowr: Any
    ) -> None:
        self.total = total
        self.in_size = in_size
        self.out_size = out_size
        self.latency_highr = latency_highr
        self.latency_lowr = latency_lowr
        self._children: dict[tuple[str, str, str], tuple[Any, Any, Any, Any]] = {}

    @classmethod
    def find(cls, registry: CollectorRegistry = REGISTRY) -> HttpSeries | None:
        """The collectors ``metrics.default()`` registered in ``registry``; None if they are not all
        there with the labels it gives them (then :class:`InstrumentationMetrics` is used instead)."""
        # prometheus_client has no public lookup by name; the mapping is stable across its versions.
        by_name = getattr(registry, "_names_to_collectors", {})
        wanted = {
            "http_requests_total": ("method", "status", "handler"),
            "http_request_size_bytes": ("handler",),
            "http_response_size_bytes": ("handler",),
            "http_request_duration_highr_seconds": (),
            "http_request_duration_seconds": ("method", "handler"),
        }
        found = []
        for name, labels in wanted.items():
            collector = by_name.get(name)
            if collector is None or tuple(getattr(collector, "_labelnames", ())) != labels:
                return None
            found.append(collector)
        return cls(*found)

    def observe(
        self, method: str, handler: str, status: int, request_length: str | None, size: int, duration: float
    ) -> None:
        """As the instrumentation function does, in its order (a bad Content-Length stops it there)."""
        status_group = f"{str(status)[0]}xx"
        try:
            length = int(request_length or 0)
        except ValueError:
            # The instrumentator int()s the header after counting the request, and app._tolerant
            # then skips the rest: count it, create no other series.
            self.total.labels(method, status_group, handler).inc()
            return
        key = (method, handler, status_group)
        children = self._children.get(key)
        if children is None:
            children = (
                self.total.labels(method, status_group, handler),
                self.in_size.labels(handler),
                self.out_size.labels(handler),
                self.latency_lowr.labels(method, handler),
            )
            self._children[key] = children
        total, in_size, out_size, latency_lowr = children
        total.inc()
        in_size.observe(length)
        out_size.observe(size)
        self.latency_highr.observe(duration)
        latency_lowr.observe(duration)


class InstrumentationMetrics:
    """Any instrumentation function of the instrumentator, fed a minimal ``Info`` per call."""

    def __init__(self, instrumentation: Callable[[Any], None]) -> None:
        self.instrumentation = instrumentation

    def observe(
        self, method: str, handler: str, status: int, request_length: str | None, size: int, duration: float
    ) -> None:
        """Build the ``Info`` the function reads and call it."""
        self.instrumentation(
            _Info(
                request=_Message(_Headers(request_length)),
                response=_Message(_Headers(str(size))),
                method=method,
                modified_handler=handler,
                modified_status=f"{str(status)[0]}xx",
                modified_duration=duration,
                modified_duration_without_streaming=duration,
            )
        )


class _Headers:
    """The one header the instrumentation reads (``Content-Length``), without building Starlette Headers."""

    __slots__ = ("_length",)

    def __init__(self, length: str | None) -> None:
        self._length = length

    def get(self, key: str, default: Any = None) -> Any:
        if key.lower() == "content-length" and self._length is not None:
            return self._length
        return default


@dataclass(slots=True)
class _Message:
    """The request or response side of :class:`_Info`."""

    headers: _Headers


@dataclass(slots=True)
class _Info:
    """What ``prometheus_fastapi_instrumentator.metrics.Info`` offers its instrumentation functions."""

    request: _Message
    response: _Message
    method: str
    modified_handler: str
    modified_status: str
    modified_duration: float
    modified_duration_without_streaming: float


class ExtenderApp(FastAPI):
    """FastAPI with the extender verbs dispatched before its middleware stack (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fast_verbs: dict[str, Verb] = {}
        """Path -> verb, served on ``POST`` without FastAPI."""
        self.http_metrics: HttpMetrics | None = None
        """Where fast-path calls are counted in the ``http_*`` series (None: not counted)."""
        self._direct: dict[str, DirectVerb] = {}

    def add_fast_verb(self, path: str, verb: Verb) -> None:
        """Serve ``POST path`` with ``verb`` on the fast path (its FastAPI route stays, for /docs);
        an :class:`~app.server.verbs.InlineVerb` is also answered directly (:mod:`app.server.direct`)."""
        self.fast_verbs[path] = verb
        if isinstance(verb, InlineVerb):
            self._direct[path] = DirectVerb(self, verb)

    def direct_route(self, method: str, path: str) -> DirectRoute | None:
        """``POST`` to an inline verb, unless the app is served under a root path."""
        if method != "POST" or self.root_path:
            return None
        route = self._direct.get(path)
        if route is not None and route.verb.gate.offloaded:
            return None  # a large call has the engine: wait for it through ASGI (EngineGate.inline)
        return route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not self.root_path:
            verb = self.fast_verbs.get(scope["path"])
            if verb is not None and not scope.get("root_path"):
                await self._serve(verb, scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    async def _serve(self, verb: Verb, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        status, size = 500, 0  # what the instrumentator records for an exception
        try:
            try:
                status, body = await verb.handle(scope, receive)
            except Exception:
                # As the FastAPI app answers an exception escaping a route; the handler chain logs it.
                await _respond(send, 500, encode_error(internal_error_message(scope)))
                raise
            await _respond(send, status, body)
            size = len(body)
            _follow_up(verb)
        finally:
            self.observe(scope, status, size, start)

    def observe(self, scope: Scope, status: int, size: int, start: float) -> None:
        """Count a fast-path call that started at ``start`` (``perf_counter``) in the ``http_*`` series."""
        if self.http_metrics is not None:
            self.http_metrics.observe(
                "POST", scope["path"], status, content_length(scope), size, time.perf_counter() - start
            )


class DirectVerb:
    """An inline verb of an :class:`ExtenderApp` as a :class:`~app.server.direct.DirectRoute`: the
    answers, metrics and follow-up of :meth:`ExtenderApp._serve`, without ``receive`` and ``send``."""

    def __init__(self, app: ExtenderApp, verb: InlineVerb) -> None:
        self.app = app
        self.verb = verb
        # A larger body goes through ASGI, which decodes it off the event loop (EngineVerb.handle).
        self.limit = min(verb.limit, OFF_LOOP_BYTES)

    def serve(self, scope: Scope, body: bytes, respond: Respond) -> None:
        """Answer as the ASGI fast path does."""
        start = time.perf_counter()
        status, size = 500, 0
        try:
            try:
                status, answer = self.verb.gate.now(self.verb.answer, body)
            except Exception:
                error = encode_error(internal_error_message(scope))
                respond(500, _json_headers(error), error)
                raise
            respond(status, _json_headers(answer), answer)
            size = len(answer)
            _follow_up(self.verb)
        finally:
            self.app.observe(scope, status, size, start)


def _follow_up(verb: Verb) -> None:
    if verb.then is not None:
        # After the answer's write, which the transport sends at the end of this loop step.
        asyncio.get_running_loop().call_soon(_run_then, verb.name, verb.then)


def _run_then(name: str, then: Callable[[], None]) -> None:
    """Run verb ``name``'s follow-up ``then``; a failure there is logged and never reaches the connection."""
    try:
        then()
    except Exception:
        log.exception("extender %s: the follow-up work failed", name)


def _json_headers(body: bytes) -> Headers:
    """The headers of Starlette's ``Response(body, media_type="application/json")``."""
    return [(b"content-length", str(len(body)).encode("latin-1")), _HEADERS_JSON]


async def _respond(send: Send, status: int, body: bytes) -> None:
    """The answer Starlette's ``Response(body, status, media_type="application/json")`` sends."""
    await send({"type": "http.response.start", "status": status, "headers": _json_headers(body)})
    await send({"type": "http.response.body", "body": body})
