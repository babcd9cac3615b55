"""The handler chain in front of berth's HTTP app: kube-scheduler's ``buildHandlerChain`` as one ASGI middleware.

Outermost first:

1. **panic recovery**: an exception escaping the app (or the chain) is logged with the request ID
   and its stack trace, answered 500 if no answer has started, and the server keeps serving (the
   app's own handler usually answers first, with the request ID in its ``{"Error": ...}`` body);
2. **HTTP logging** at ``-v 3`` (probes at ``-v 5``): ``"HTTP" verb URI latency userAgent
   requestID srcIP resp user``, as kube's httplog;
3. **Cache-Control** ``no-store`` on every answer that sets none itself;
4. **request info**: the verb is the lower-case HTTP method, the path the URL path (non-resource
   URLs: berth serves no API resources);
5. **authentication** (:mod:`app.server.authn`): refused → 401;
6. **authorization** (:mod:`app.server.authz`): not allowed → 403.

Steps 5 and 6 are skipped when no authenticator / authorizer is given (the loopback sidecar
listener of ``berth serve``). The request ID and the user are left in the scope under
:data:`REQUEST_ID` and :data:`USER` for the app.

Without an authenticator, the chain also offers the app's direct routes (:mod:`app.server.direct`)
to the protocol, each wrapped in a :class:`ChainedRoute` that applies steps 1 to 3 in the same way.

The chain's own error answers are ``metav1.Status`` objects, exactly what kube-scheduler answers
for the same failures (``{"kind": "Status", ..., "reason": "Forbidden", "message": "forbidden:
User \\"x\\" cannot post path \\"/filter\\""}``); kube-scheduler, as an extender client, only reads
their status code.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Iterable

import orjson
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import logs
from app.server.authn import AuthenticationError, Authenticator, UserInfo
from app.server.authz import Authorizer
from app.server.direct import DirectRoute, Headers, Respond, direct_app
from app.server.paths import PathSet
from app.server.reviews import ReviewError

__all__ = ["PROBE_PATHS", "REQUEST_ID", "USER", "ChainedRoute", "HandlerChain"]

REQUEST_ID = "berth.request_id"
"""Scope key of the request's ID (16 hex digits), as logged."""
USER = "berth.user"
"""Scope key of the authenticated :class:`~app.server.authn.UserInfo` (absent without authentication)."""

PROBE_PATHS = PathSet(["/healthz*", "/livez*", "/readyz*"])
HTTP_LOG_LEVEL = 3
PROBE_LOG_LEVEL = 5

_JSON = [(b"content-type", b"application/json"), (b"x-content-type-options", b"nosniff")]


def status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure, as the API machinery encodes it."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


def _status_headers(body: bytes) -> Headers:
    return [*_JSON, (b"content-length", str(len(body)).encode())]


async def _respond(send: Send, code: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": code, "headers": _status_headers(body)})
    await send({"type": "http.response.body", "body": body})


def _latency(seconds: float) -> str:
    """Go's Duration.String() style, to the microsecond."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f}µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3f}ms"
    return f"{seconds:.3f}s"


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return ""


class HandlerChain:
    """Wraps ``app`` in the chain described in the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticator: Authenticator | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        if authorizer is not None and authenticator is None:
            raise ValueError("authorization needs authentication")
        self.app = app
        self.authenticator = authenticator
        self.authorizer = authorizer
        self._direct_app = direct_app(app)
        self._chained: dict[DirectRoute, ChainedRoute] = {}

    def direct_route(self, method: str, path: str) -> DirectRoute | None:
        """The app's direct route for the request, wrapped in the chain; None when the chain
        authenticates (a review can wait on the API server: that needs the ASGI task)."""
        app = self._direct_app
        if self.authenticator is not None or app is None:
            return None
        route = app.direct_route(method, path)
        if route is None:
            return None
        chained = self._chained.get(route)
        if chained is None:
            chained = self._chained[route] = ChainedRoute(self, route)
        return chained

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        request_id = scope[REQUEST_ID] = _request_id()
        status = 0

        async def send_no_store(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": _no_store(message.get("headers", ()))}
            await send(message)

        try:
            await self._serve(scope, receive, send_no_store)
        except ClientDisconnect:
            logs.info("Client disconnected", 2, requestID=request_id, URI=scope["path"])
        except Exception as err:
            _log_panic(scope, err)
            if status == 0:
                await _respond(send_no_store, 500, _panic_body(request_id))
        finally:
            self.log(scope, start, status)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.authenticator is None:
            await self.app(scope, receive, send)
            return
        verb, path = scope["method"].lower(), scope["path"]
        try:
            user = await self.authenticator.authenticate(scope)
        except (AuthenticationError, ReviewError) as err:
            if isinstance(err, AuthenticationError) and not err.presented:
                logs.info("Unauthenticated request", 4, URI=path, reason=str(err))
            else:  # a refused credential, or the API server could not check it: kube logs an error
                logs.error("Unable to authenticate the request", URI=path, err=str(err))
            await _respond(send, 401, status_body(401, "Unauthorized", "Unauthorized"))
            return
        scope[USER] = user
        # As kube's authentication filter: the credential goes no further than this.
        scope["headers"] = [h for h in scope["headers"] if h[0] != b"authorization"]
        if self.authorizer is not None and not await self._authorized(user, verb, path, send):
            return
        await self.app(scope, receive, send)

    async def _authorized(self, user: UserInfo, verb: str, path: str, send: Send) -> bool:
        assert self.authorizer is not None
        try:
            verdict = await self.authorizer.authorize(user, verb, path)
        except ReviewError as err:
            logs.error("Unable to authorize the request", URI=path, err=str(err))
            message = f'Internal Server Error: "{path}": {err}'
            await _respond(send, 500, status_body(500, "InternalError", message))
            return False
        if verdict.allowed:
            return True
        logs.info("Forbidden", 4, URI=path, reason=verdict.reason)
        message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
        if verdict.reason:
            message += f": {verdict.reason}"
        await _respond(send, 403, status_body(403, "Forbidden", message))
        return False

    @staticmethod
    def log(scope: Scope, start: float, status: int) -> None:
        """Log the request at ``-v 3`` (probes at ``-v 5``), as kube's httplog."""
        level = PROBE_LOG_LEVEL if PROBE_PATHS.matches(scope["path"]) else HTTP_LOG_LEVEL
        if not logs.enabled(level):
            return
        query = scope.get("query_string", b"")
        uri = scope["path"] + ("?" + query.decode("latin-1") if query else "")
        client = scope.get("client")
        user = scope.get(USER)
        logs.info(
            "HTTP",
            level,
            verb=scope["method"],
            URI=uri,
            latency=_latency(time.perf_counter() - start),
            userAgent=_header(scope, b"user-agent"),
            requestID=scope[REQUEST_ID],
            srcIP=f"{client[0]}:{client[1]}" if client else "",
            resp=status,
            user=user.name if user is not None else "",
        )


class ChainedRoute:
    """A direct route (:mod:`app.server.direct`) behind the chain: request ID, Cache-Control,
    panic recovery and HTTP logging as :meth:`HandlerChain.__call__` gives an ASGI request."""

    def __init__(self, chain: HandlerChain, route: DirectRoute) -> None:
        self.chain = chain
        self.route = route
        self.limit = route.limit

    def serve(self, scope: Scope, body: bytes, respond: Respond) -> None:
        """Serve ``route`` inside the chain."""
        start = time.perf_counter()
        request_id = scope[REQUEST_ID] = _request_id()
        status = 0

        def respond_no_store(code: int, headers: Headers, answer: bytes) -> None:
            nonlocal status
            status = code
            respond(code, _no_store(headers), answer)

        try:
            self.route.serve(scope, body, respond_no_store)
        except Exception as err:
            _log_panic(scope, err)
            if status == 0:
                answer = _panic_body(request_id)
                respond_no_store(500, _status_headers(answer), answer)
        finally:
            self.chain.log(scope, start, status)


def _request_id() -> str:
    # Not secrets.token_hex: os.urandom releases the GIL for its syscall on every request, and
    # the event loop then waits for a bind or informer thread to hand it back. A log
    # correlation ID needs to be unique, not unpredictable.
    return f"{random.getrandbits(64):016x}"


def _no_store(headers: Iterable[tuple[bytes, bytes]]) -> Headers:
    """``headers`` with ``Cache-Control: no-store`` added when they set no Cache-Control."""
    headers = list(headers)
    if not any(name.lower() == b"cache-control" for name, _ in headers):
        headers.append((b"cache-control", b"no-store"))
    return headers


def _log_panic(scope: Scope, err: Exception) -> None:
    logs.error(
        "Observed a panic",
        requestID=scope[REQUEST_ID],
        method=scope["method"],
        URI=scope["path"],
        err=f"{type(err).__name__}: {err}",
        stacktrace=traceback.format_exc(),
    )


def _panic_body(request_id: str) -> bytes:
    message = f"This request caused berth to panic. Look in the logs for details (request ID {request_id})."
    return status_body(500, "InternalError", message)
