"""Helpers for the handler-chain tests: a fake API server for reviews, client-certificate injection, log capture."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app import logs
from app.server import create_component_app
from app.server.authn import Authenticator, TokenReviewAuthenticator
from app.server.authz import Authorizer, SubjectAccessReviewer
from app.server.chain import USER, HandlerChain
from app.server.paths import PathSet
from app.server.rules import StaticRules

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

Answer = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]
ALWAYS_ALLOW = PathSet(["/healthz", "/readyz", "/livez"])
SUBJECT_HEADER = "x-test-client-subject"


class FakeKube:
    """Answers review POSTs by path (``answers[path](body) -> (status, json)``) and records them."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> tuple[int, bytes]:
        self.calls.append((path, body))
        status, answer = self.answers[path](body)
        return status, orjson.dumps(answer)

    def paths(self) -> list[str]:
        return [path for path, _ in self.calls]


def token_review(tokens: dict[str, tuple[str, list[str]]]) -> Answer:
    """TokenReview answers: known tokens authenticate as (user, groups)."""

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        known = tokens.get(body["spec"]["token"])
        if known is None:
            return 201, {"status": {"authenticated": False, "error": "token not known"}}
        user, groups = known
        return 201, {
            "status": {"authenticated": True, "user": {"username": user, "uid": "u-1", "groups": groups}}
        }

    return answer


def access_review(allowed: set[tuple[str, str, str]]) -> Answer:
    """SubjectAccessReview answers: (user, verb, path) in ``allowed`` is allowed."""

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        spec = body["spec"]
        attrs = spec["nonResourceAttributes"]
        ok = (spec["user"], attrs["verb"], attrs["path"]) in allowed
        return 201, {"status": {"allowed": ok, "reason": "" if ok else "no RBAC rule"}}

    return answer


def with_client_subject(app: ASGIApp) -> ASGIApp:
    """Stands in for the TLS layer: a ``CN=alice;O=g1;O=g2`` test header becomes the verified certificate subject."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == SUBJECT_HEADER.encode():
                    pairs = [part.split("=", 1) for part in value.decode().split(";")]
                    names = {"CN": "commonName", "O": "organizationName"}
                    subject = tuple((names[k], v) for k, v in pairs)
                    scope["extensions"] = {"tls": {"client_cert_subject": subject}}
        await app(scope, receive, send)

    return wrapped


def component_app() -> FastAPI:
    """The component app, plus /boom (raises), /whoami (the user and whether a credential got through)."""
    app = create_component_app(config_dump={"kind": "KubeSchedulerConfiguration"}, version="0.1.0")

    @app.get("/boom")
    async def boom() -> Response:
        raise RuntimeError("kaboom")

    @app.api_route("/whoami", methods=["GET", "POST"])
    async def whoami(request: Request) -> Response:
        user = request.scope.get(USER)
        body = {
            "user": None if user is None else user.name,
            "groups": None if user is None else list(user.groups),
            "authorization": request.headers.get("authorization"),
        }
        return Response(orjson.dumps(body), media_type="application/json")

    @app.get("/cached")
    async def cached() -> Response:
        return Response("x", headers={"Cache-Control": "max-age=60"})

    return app


def chain_client(
    *,
    authenticate: bool = True,
    anonymous: bool = False,
    kube: FakeKube | None = None,
    rules: dict[str, Any] | None = None,
    ttl: float = 10.0,
    app: ASGIApp | None = None,
) -> TestClient:
    """A TestClient of the component app behind the chain (no authentication when ``authenticate`` is off)."""
    inner = app if app is not None else component_app()
    if not authenticate:
        return TestClient(HandlerChain(inner))
    tokens = None if kube is None else TokenReviewAuthenticator(kube, ttl)  # type: ignore[arg-type]
    sar = None if kube is None else SubjectAccessReviewer(kube, ttl, ttl)  # type: ignore[arg-type]
    chain = HandlerChain(
        inner,
        authenticator=Authenticator(tokens=tokens, anonymous=anonymous, anonymous_paths=ALWAYS_ALLOW),
        authorizer=Authorizer(
            always_allow=ALWAYS_ALLOW,
            rules=None if rules is None else StaticRules.parse(rules, "rules.yaml"),
            sar=sar,
        ),
    )
    return TestClient(with_client_subject(chain), raise_server_exceptions=False)


class LogCapture:
    """berth's log records while the capture lasts, at a chosen verbosity."""

    def __init__(self) -> None:
        self.records: list[logging.LogRecord] = []

    def messages(self, msg: str) -> list[dict[str, Any]]:
        """The key/values of each record whose message is ``msg``."""
        return [getattr(r, "kv", {}) for r in self.records if r.getMessage() == msg]


def capture_logs(verbosity: int) -> Iterator[LogCapture]:
    """Generator for a fixture: attach a handler to berth's logger and set ``-v``."""
    capture = LogCapture()

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            capture.records.append(record)

    handler = Handler()
    logger = logs.logger()
    saved = (logs._verbosity, logger.level)
    logs._verbosity = verbosity
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield capture
    finally:
        logger.removeHandler(handler)
        logs._verbosity, level = saved
        logger.setLevel(level)
