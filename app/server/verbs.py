"""POST /filter, /prioritize and /preempt: HTTP around :class:`~app.extender.service.ExtenderService`.

Status codes (kube-scheduler reads the body of an HTTP 200 only):

- 200: the verb ran. /filter reports engine failures in ``Error``; /prioritize answers ``[]``
  (kube-scheduler ignores prioritize errors, so an empty list means the same: no score) and logs;
  /preempt echoes the request's victims with ``Error`` (:mod:`app.extender.preempt`).
  An unexpected exception is answered the same way, logged with its traceback, never shown.
- 400 ``{"Error": ...}``: the body is not a valid ``ExtenderArgs`` / ``ExtenderPreemptionArgs``
  (the message names the field).
- 413 ``{"Error": ...}``: the body is larger than ``max_request_bytes``.

The engine is CPU-bound and not thread-safe, so the handlers are ``async`` and run it inline on
the event loop: no threadpool hop, and requests are served one at a time. A body over
:data:`OFF_LOOP_BYTES` (a Nodes-mode request for thousands of nodes; the cap is 64 MiB) is handled
in worker threads instead, so that it does not stall every other client (probes, /bind, /metrics):

- it is decoded a chunk at a time (:func:`~app.api.decoding.loads_in_chunks`; orjson would hold the
  GIL for the whole body), without the shared node cache and pod memo, so nothing of it outlives
  the request, and with the cyclic garbage collector paused (its millions of new containers would
  make every collection walk them all);
- it is evaluated and answered in a worker thread while the :class:`EngineGate` keeps the engine
  to that thread: other verb calls wait for it (as they wait for each other on the loop), while
  everything else on the loop goes on;
- its objects are freed there, a slice at a time, and freed memory is handed back to the operating
  system (glibc's ``malloc_trim``), which Python's allocator would otherwise keep.

Each verb is a :class:`Verb` working on the raw ASGI scope and ``receive``: ``berth serve`` reaches
it through the fast path of :mod:`app.server.fastpath` (no routing, middleware or ``Request``
objects per call); the FastAPI routes installed here run the same object and document the verbs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import gc
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from fastapi import FastAPI, Request, Response
from prometheus_client import Counter
from starlette.types import Receive, Scope

from app.api.decoding import dismantle
from app.api.objects import Pod
from app.extender import preempt, schema
from app.extender.service import ExtenderService
from app.extender.wire import (
    ExtenderArgs,
    FilterResult,
    NodeCache,
    PodMemo,
    PreemptionArgs,
    WireError,
    decode_args,
    decode_preemption_args,
    encode_error,
    encode_filter_result,
    encode_preemption_result,
)
from app.server.body import BodyError, read_body

__all__ = [
    "OFF_LOOP_BYTES",
    "REQUESTS",
    "EngineGate",
    "EngineVerb",
    "InlineVerb",
    "Verb",
    "decode_or_refuse",
    "engine_verbs",
    "install_verbs",
    "read_args",
    "read_or_refuse",
    "request_counters",
    "route_of",
]

log = logging.getLogger(__name__)

REQUESTS = Counter(
    "berth_extender_requests",
    "Extender verb requests by verb and result: 'success'; 'error' (HTTP 200 with Error set, or an "
    "empty priority list for an engine error); 'bad_request' (HTTP 400/413).",
    ["verb", "result"],
)

_JSON = "application/json"

T = TypeVar("T")

OFF_LOOP_BYTES = 1 << 20
"""Bodies larger than this are decoded in a worker thread (and never take the direct path)."""


def _malloc_trim() -> Callable[[], None]:
    """glibc's ``malloc_trim(0)``, or nothing on other C libraries."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is None:
        return lambda: None
    return lambda: trim(0) and None


release_memory = _malloc_trim()
"""Return the C heap's free memory to the operating system."""


_gc_pauses = 0
_gc_pauses_lock = threading.Lock()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector paused while a large body is decoded, evaluated and freed: it creates
    millions of containers, and each collection they trigger walks all of them (a 34 MiB pod of
    500,000 node selector terms decoded in 11 s instead of 2), on whichever thread allocates, the
    event loop's included. What is decoded holds no cycles; nothing leaks. Nested and concurrent
    pauses count: the collector runs again when the last one ends (if it ran before the first)."""
    global _gc_pauses, _gc_was_enabled
    with _gc_pauses_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_pauses_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


_gc_was_enabled = True


class EngineGate:
    """Which thread may use the engine now: the event loop (inline, the rule) or, while a large
    request is evaluated, that request's worker thread, and nothing else.

    The verbs' small calls run inline as long as no worker holds the engine, and otherwise wait
    their turn (:meth:`inline`); a large call takes the engine to a worker thread (:meth:`offload`).
    ``offloaded`` is only changed on the event loop, so code there can test it without a lock.
    """

    def __init__(self) -> None:
        self.offloaded = False
        """A worker thread has (or is about to have) the engine."""
        self._turns = asyncio.Lock()
        self._engine = threading.Lock()

    async def inline(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` on the event loop, once no worker has the engine."""
        if self.offloaded or self._turns.locked():
            async with self._turns:
                return call(*args)
        return call(*args)

    async def offload(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in a worker thread, with the engine to itself."""
        async with self._turns:
            self.offloaded = True
            try:
                return await asyncio.to_thread(self._holding, call, *args)
            finally:
                self.offloaded = False

    def now(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` on the event loop at once (a direct answer cannot wait): normally inline;
        in the rare case that a large call took the engine between this request's headers and the
        end of its body, the loop blocks until that call is done."""
        if not self.offloaded:
            return call(*args)
        return self._holding(call, *args)

    def if_idle(self, call: Callable[[], None]) -> Callable[[], None]:
        """``call`` made optional: skipped while a worker has the engine (for work done ahead)."""

        def run() -> None:
            if not self.offloaded:
                call()

        return run

    def _holding(self, call: Callable[..., T], *args: Any) -> T:
        with self._engine:
            return call(*args)


def request_counters(verb: str) -> dict[str, Any]:
    """:data:`REQUESTS`' series for ``verb`` by result, looked up once (``labels()`` costs a lock
    and a dict walk per call)."""
    return {result: REQUESTS.labels(verb, result) for result in ("success", "error", "bad_request")}


# The request body is read by hand, so FastAPI cannot infer it; document it for /docs.
_REQUEST_BODY = {
    "requestBody": {
        "required": True,
        "content": {_JSON: {"schema": {"$ref": "#/components/schemas/ExtenderArgs"}}},
    }
}
_PREEMPT_REQUEST_BODY = {
    "requestBody": {
        "required": True,
        "content": {_JSON: {"schema": {"$ref": "#/components/schemas/ExtenderPreemptionArgs"}}},
    }
}
_ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": schema.ExtenderError, "description": "The body is not a valid ExtenderArgs."},
    413: {"model": schema.ExtenderError, "description": "The body exceeds the size limit."},
}
_PREEMPT_ERRORS = {
    **_ERRORS,
    400: {"model": schema.ExtenderError, "description": "The body is not a valid ExtenderPreemptionArgs."},
}


class _Args(Protocol):
    """What the server needs of a decoded request: the pod, to name it in logs."""

    @property
    def pod(self) -> Pod: ...


A = TypeVar("A", bound=_Args)


class Verb(Protocol):
    """One extender verb's HTTP handling, without a web framework.

    :meth:`handle` reads the body from the raw ASGI ``receive``, runs the verb and counts it in
    :data:`REQUESTS`; it answers ``(status, JSON body)``. The ASGI fast path
    (:mod:`app.server.fastpath`) and the verb's FastAPI route (kept for /docs and for apps
    mounted under a root path) both call it, so the two can never answer differently.
    """

    name: str
    then: Callable[[], None] | None
    """Work to run on the event loop once an answer is sent (None: nothing): what the client
    will ask next, computed while it is busy with this answer."""

    async def handle(self, scope: Scope, receive: Receive) -> tuple[int, bytes]:
        """Read, decode and run one call: ``(HTTP status, response body)``."""
        ...


@runtime_checkable
class InlineVerb(Verb, Protocol):
    """A verb that answers synchronously once it has the whole body (the engine verbs)."""

    limit: int
    """The largest body accepted (413 above)."""
    gate: EngineGate
    """Who has the engine now (a direct answer runs through :meth:`EngineGate.now`)."""

    def answer(self, body: bytes) -> tuple[int, bytes]:
        """Decode and run one call whose whole body is ``body``: ``(HTTP status, response body)``."""
        ...


async def read_or_refuse(
    scope: Scope, receive: Receive, limit: int, counted: dict[str, Any]
) -> bytes | tuple[int, bytes]:
    """The whole body; for a body too large or a bad ``Content-Length``, the 413/400 answer
    ``(status, {"Error": ...})`` instead, counted as ``bad_request`` in ``counted``."""
    try:
        return await read_body(scope, receive, limit)
    except BodyError as err:
        counted["bad_request"].inc()
        return err.status_code, encode_error(err.message)


def decode_or_refuse(
    body: bytes, decode: Callable[[bytes], T], counted: dict[str, Any]
) -> T | tuple[int, bytes]:
    """``decode(body)``; for a body that does not decode, the 400 answer ``(400, {"Error": ...})``
    instead, counted as ``bad_request`` in ``counted``."""
    try:
        return decode(body)
    except WireError as err:
        counted["bad_request"].inc()
        return 400, encode_error(str(err))


async def read_args(
    scope: Scope, receive: Receive, limit: int, decode: Callable[[bytes], T], counted: dict[str, Any]
) -> T | tuple[int, bytes]:
    """The body read and decoded, or the 413/400 answer (:func:`read_or_refuse`, :func:`decode_or_refuse`)."""
    body = await read_or_refuse(scope, receive, limit, counted)
    if isinstance(body, tuple):
        return body
    return decode_or_refuse(body, decode, counted)


class EngineVerb(Generic[A]):
    """A verb that runs the engine inline on the event loop: /filter, /prioritize, /preempt."""

    def __init__(
        self,
        name: str,
        decode: Callable[[bytes], A],
        run: Callable[[A], tuple[bytes, str]],
        crashed: Callable[[A, str], bytes],
        limit: int,
        then: Callable[[], None] | None = None,
        decode_alone: Callable[[bytes], A] | None = None,
        gate: EngineGate | None = None,
    ) -> None:
        """``crashed`` builds the 200 answer for an unexpected exception of ``run``; ``decode_alone``
        decodes without shared state, in a worker thread, the bodies over :data:`OFF_LOOP_BYTES`
        (default: ``decode``, which must then be thread-safe); ``gate`` is shared by every verb of
        one engine."""
        self.name = name
        self.decode = decode
        self.decode_alone = decode_alone or decode
        self.run = run
        self.crashed = crashed
        self.limit = limit
        self.gate = gate or EngineGate()
        self.then = None if then is None else self.gate.if_idle(then)
        self._counted = request_counters(name)

    async def handle(self, scope: Scope, receive: Receive) -> tuple[int, bytes]:
        """Read the body, then :meth:`answer` it on the loop, or off it for a large body."""
        body = await read_or_refuse(scope, receive, self.limit, self._counted)
        if isinstance(body, tuple):
            return body
        if len(body) <= OFF_LOOP_BYTES:
            return await self.gate.inline(self.answer, body)
        with gc_paused():
            args = await asyncio.to_thread(self._decode_large, body)
            del body
            if isinstance(args, tuple):
                return args
            held = [args]  # handed over, so that the worker thread frees the last reference
            del args
            return await self.gate.offload(self._run_then_free, held)

    def answer(self, body: bytes) -> tuple[int, bytes]:
        """Decode and run one verb call (on the event loop)."""
        args = decode_or_refuse(body, self.decode, self._counted)
        if isinstance(args, tuple):
            return args
        return self._run(args)

    def _decode_large(self, body: bytes) -> A | tuple[int, bytes]:
        args = decode_or_refuse(body, self.decode_alone, self._counted)
        if isinstance(args, tuple):
            release_memory()  # what the refused body's objects took
        return args

    def _run_then_free(self, held: list[A]) -> tuple[int, bytes]:
        args = held.pop()
        try:
            return self._run(args)
        finally:
            dismantle(getattr(args, "nodes", None))
            del args
            release_memory()

    def _run(self, args: A) -> tuple[int, bytes]:
        verb = self.name
        try:
            result, error = self.run(args)
        except Exception as err:  # never a 500: kube-scheduler would only see "code 500"
            log.exception("extender %s failed for pod %s", verb, args.pod.key)
            error = f"internal error: {type(err).__name__}: {err}"
            result = self.crashed(args, error)
        if error:
            log.warning("extender %s for pod %s: %s", verb, args.pod.key, error)
            self._counted["error"].inc()
        else:
            self._counted["success"].inc()
        return 200, result


def engine_verbs(service: ExtenderService, max_request_bytes: int) -> list[EngineVerb[Any]]:
    """/filter, /prioritize and /preempt over ``service``, sharing one :class:`EngineGate`."""
    node_cache = NodeCache()
    pod_memo = PodMemo()
    gate = EngineGate()

    def decode(body: bytes) -> ExtenderArgs:
        return decode_args(body, node_cache, pod_memo)

    def decode_alone(body: bytes) -> ExtenderArgs:
        return decode_args(body, chunked=True)

    def decode_preemption_alone(body: bytes) -> PreemptionArgs:
        return decode_preemption_args(body, chunked=True)

    def filter_crashed(_: ExtenderArgs, error: str) -> bytes:
        return encode_filter_result(FilterResult(error=error))

    def prioritize_crashed(_: ExtenderArgs, error: str) -> bytes:
        return b"[]"

    def run_filter(args: ExtenderArgs) -> tuple[bytes, str]:
        result = service.filter(args)
        return encode_filter_result(result), result.error

    def run_prioritize(args: ExtenderArgs) -> tuple[bytes, str]:
        return service.prioritize_encoded(args)

    def run_preempt(args: PreemptionArgs) -> tuple[bytes, str]:
        result = preempt.preempt(service, args)
        return encode_preemption_result(result), result.error

    def preempt_crashed(args: PreemptionArgs, error: str) -> bytes:
        return encode_preemption_result(preempt.unchanged(args, error))

    return [
        EngineVerb(
            "filter",
            decode,
            run_filter,
            filter_crashed,
            max_request_bytes,
            service.speculate,
            decode_alone,
            gate,
        ),
        EngineVerb(
            "prioritize",
            decode,
            run_prioritize,
            prioritize_crashed,
            max_request_bytes,
            None,
            decode_alone,
            gate,
        ),
        EngineVerb(
            "preempt",
            decode_preemption_args,
            run_preempt,
            preempt_crashed,
            max_request_bytes,
            None,
            decode_preemption_alone,
            gate,
        ),
    ]


def route_of(verb: Verb) -> Callable[[Request], Awaitable[Response]]:
    """A FastAPI endpoint running ``verb`` (the path the fast path does not take)."""

    async def endpoint(request: Request) -> Response:
        status, body = await verb.handle(request.scope, request.receive)
        return Response(body, status, media_type=_JSON)

    return endpoint


def install_verbs(app: FastAPI, service: ExtenderService, max_request_bytes: int) -> list[Verb]:
    """Add the verb routes to ``app`` (documented in /openapi.json); return the verbs for the fast path."""
    filter_verb, prioritize_verb, preempt_verb = engine_verbs(service, max_request_bytes)
    app.post(
        "/filter",
        tags=["extender"],
        summary="Filter nodes for a pod (PreFilter + Filter)",
        response_model=schema.ExtenderFilterResult,
        responses=_ERRORS,
        openapi_extra=_REQUEST_BODY,
        name="filter_verb",
    )(route_of(filter_verb))
    app.post(
        "/prioritize",
        tags=["extender"],
        summary="Score nodes for a pod (PreScore + Score), 0..10",
        response_model=list[schema.HostPriority],
        responses=_ERRORS,
        openapi_extra=_REQUEST_BODY,
        name="prioritize_verb",
    )(route_of(prioritize_verb))
    app.post(
        "/preempt",
        tags=["extender"],
        summary="Check and trim preemption victims per node (berth's filters with the victims gone)",
        response_model=schema.ExtenderPreemptionResult,
        response_model_exclude_none=True,
        responses=_PREEMPT_ERRORS,
        openapi_extra=_PREEMPT_REQUEST_BODY,
        name="preempt_verb",
    )(route_of(preempt_verb))
    return [filter_verb, prioritize_verb, preempt_verb]
