"""Health endpoints as Kubernetes components serve them (``k8s.io/apiserver/pkg/server/healthz``).

``/healthz``, ``/livez`` and ``/readyz`` each run a list of named checks. A check is a callable
returning ``None`` when healthy or a reason string when not. The answers, in text/plain:

- all pass: ``ok``; with ``?verbose``: one ``[+]<name> ok`` line per check, then
  ``<endpoint> check passed``;
- one fails: HTTP 500, ``[-]<name> failed: reason withheld`` for it (the reason is logged, not
  shown), then ``<endpoint> check failed``;
- ``?exclude=<name>`` (repeatable) skips a check (``[+]<name> excluded: ok``);
- ``/<endpoint>/<name>`` runs one check: ``ok`` or 500 ``internal server error: <reason>``.

Machines should rely on the status code; the text is for people.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request, Response

__all__ = ["Check", "HealthEndpoint", "ShutdownCheck", "install_health", "ping"]

log = logging.getLogger(__name__)

Check = Callable[[], str | None]
"""A named health check: ``None`` when healthy, else why not."""

_TEXT = "text/plain; charset=utf-8"
_HEADERS = {"X-Content-Type-Options": "nosniff"}


def ping() -> str | None:
    """Always healthy: the process answers HTTP (``healthz.PingHealthz``)."""
    return None


class ShutdownCheck:
    """Fails once shutdown has begun, so readiness drops before the process exits."""

    def __init__(self) -> None:
        self.shutting_down = False

    def __call__(self) -> str | None:
        return "process is shutting down" if self.shutting_down else None


class HealthEndpoint:
    """One of /healthz, /livez, /readyz with its ordered checks."""

    def __init__(self, name: str, checks: Mapping[str, Check]) -> None:
        self.name = name
        self.checks = dict(checks)

    def root(self, request: Request) -> Response:
        """Run every check not excluded; see the module docstring for the output."""
        excluded = set(request.query_params.getlist("exclude"))
        lines: list[str] = []
        failed: list[str] = []
        for name, check in self.checks.items():
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok\n")
                continue
            reason = _run(check)
            if reason is None:
                lines.append(f"[+]{name} ok\n")
            else:
                lines.append(f"[-]{name} failed: reason withheld\n")
                failed.append(f"[-]{name} failed: {reason}")
        if excluded:
            quoted = ",".join(f'"{n}"' for n in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
        body = "".join(lines)
        if failed:
            log.info("%s check failed: %s", self.name, "; ".join(failed))
            return Response(f"{body}{self.name} check failed\n", 500, _HEADERS, _TEXT)
        if "verbose" not in request.query_params:
            return Response("ok", 200, _HEADERS, _TEXT)
        return Response(f"{body}{self.name} check passed\n", 200, _HEADERS, _TEXT)

    def one(self, name: str) -> Response:
        """Run the check ``name`` alone (404 if there is no such check)."""
        check = self.checks.get(name)
        if check is None:
            return Response("404 page not found\n", 404, _HEADERS, _TEXT)
        reason = _run(check)
        if reason is not None:
            return Response(f"internal server error: {reason}\n", 500, _HEADERS, _TEXT)
        return Response("ok", 200, _HEADERS, _TEXT)


def _run(check: Check) -> str | None:
    try:
        return check()
    except Exception as err:  # a broken check is a failing check, not a crashed probe
        return f"check raised {type(err).__name__}: {err}"


def _text(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"text/plain": {"schema": {"type": "string"}}}}


def install_health(app: FastAPI, endpoints: Mapping[str, Mapping[str, Check]]) -> dict[str, HealthEndpoint]:
    """Add ``GET /<name>`` and ``GET /<name>/<check>`` for each endpoint name and its checks,
    documented with the answers they give (text/plain, as Kubernetes components answer probes)."""
    installed = {}
    for name, checks in endpoints.items():
        endpoint = HealthEndpoint(name, checks)
        installed[name] = endpoint
        failed = _text("A check failed (the failing checks named; the reason is logged).")
        app.add_api_route(
            f"/{name}",
            _root_handler(endpoint),
            methods=["GET"],
            tags=["health"],
            summary=f"{name}: run the {name} checks",
            response_class=Response,
            responses={200: _text("`ok`, or with `?verbose` every check's line."), 500: failed},
            openapi_extra={
                "parameters": [
                    {"name": "verbose", "in": "query", "required": False, "schema": {"type": "string"}},
                    {
                        "name": "exclude",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "array", "items": {"type": "string"}},
                        "description": "Checks to skip.",
                    },
                ]
            },
        )
        app.add_api_route(
            f"/{name}/{{check}}",
            _one_handler(endpoint),
            methods=["GET"],
            tags=["health"],
            summary=f"{name}: run one {name} check",
            response_class=Response,
            responses={
                200: _text("`ok`"),
                404: _text("No such check: `404 page not found`, as Go's http.NotFound answers."),
                500: _text("The check failed, with its reason."),
            },
            openapi_extra={
                "parameters": [
                    {
                        "name": "check",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "enum": list(checks)},
                    }
                ]
            },
        )
    return installed


def _root_handler(endpoint: HealthEndpoint) -> Callable[[Request], Awaitable[Response]]:
    # async so the probe never waits for a worker thread behind a busy threadpool.
    async def handler(request: Request) -> Response:
        return endpoint.root(request)

    handler.__name__ = f"{endpoint.name}_root"
    return handler


def _one_handler(endpoint: HealthEndpoint) -> Callable[[Request], Awaitable[Response]]:
    # The check is read from the path, not declared as a FastAPI parameter: an unknown one is kube's
    # 404, never a validation error (the document lists the checks as the parameter's values).
    async def handler(request: Request) -> Response:
        return endpoint.one(str(request.path_params["check"]))

    handler.__name__ = f"{endpoint.name}_check"
    return handler
