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
the event loop: no threadpool hop, and requests are served one at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, TypeVar

from fastapi import FastAPI, Request, Response
from prometheus_client import Counter

from app.api.objects import Pod
from app.extender import preempt, schema
from app.extender.service import ExtenderService
from app.extender.wire import (
    ExtenderArgs,
    FilterResult,
    NodeCache,
    PreemptionArgs,
    WireError,
    decode_args,
    decode_preemption_args,
    encode_error,
    encode_filter_result,
    encode_host_priorities,
    encode_preemption_result,
)
from app.server.body import BodyError, read_body

__all__ = ["REQUESTS", "install_verbs"]

log = logging.getLogger(__name__)

REQUESTS = Counter(
    "berth_extender_requests",
    "Extender verb requests by verb and result: 'success'; 'error' (HTTP 200 with Error set, or an "
    "empty priority list for an engine error); 'bad_request' (HTTP 400/413).",
    ["verb", "result"],
)

_JSON = "application/json"

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


def install_verbs(app: FastAPI, service: ExtenderService, max_request_bytes: int) -> None:
    """Add the verb routes to ``app``."""
    node_cache = NodeCache()

    def decode(body: bytes) -> ExtenderArgs:
        return decode_args(body, node_cache)

    def filter_crashed(_: ExtenderArgs, error: str) -> bytes:
        return encode_filter_result(FilterResult(error=error))

    def prioritize_crashed(_: ExtenderArgs, error: str) -> bytes:
        return b"[]"

    def run_filter(args: ExtenderArgs) -> tuple[bytes, str]:
        result = service.filter(args)
        return encode_filter_result(result), result.error

    def run_prioritize(args: ExtenderArgs) -> tuple[bytes, str]:
        priorities, error = service.prioritize(args)
        return encode_host_priorities(priorities), error

    @app.post(
        "/filter",
        tags=["extender"],
        summary="Filter nodes for a pod (PreFilter + Filter)",
        response_model=schema.ExtenderFilterResult,
        responses=_ERRORS,
        openapi_extra=_REQUEST_BODY,
    )
    async def filter_verb(request: Request) -> Response:
        return await _serve(request, "filter", decode, run_filter, filter_crashed, max_request_bytes)

    @app.post(
        "/prioritize",
        tags=["extender"],
        summary="Score nodes for a pod (PreScore + Score), 0..10",
        response_model=list[schema.HostPriority],
        responses=_ERRORS,
        openapi_extra=_REQUEST_BODY,
    )
    async def prioritize_verb(request: Request) -> Response:
        return await _serve(
            request, "prioritize", decode, run_prioritize, prioritize_crashed, max_request_bytes
        )

    def run_preempt(args: PreemptionArgs) -> tuple[bytes, str]:
        result = preempt.preempt(service, args)
        return encode_preemption_result(result), result.error

    def preempt_crashed(args: PreemptionArgs, error: str) -> bytes:
        return encode_preemption_result(preempt.unchanged(args, error))

    @app.post(
        "/preempt",
        tags=["extender"],
        summary="Check and trim preemption victims per node (berth's filters with the victims gone)",
        response_model=schema.ExtenderPreemptionResult,
        response_model_exclude_none=True,
        responses=_PREEMPT_ERRORS,
        openapi_extra=_PREEMPT_REQUEST_BODY,
    )
    async def preempt_verb(request: Request) -> Response:
        return await _serve(
            request, "preempt", decode_preemption_args, run_preempt, preempt_crashed, max_request_bytes
        )


async def _serve(
    request: Request,
    verb: str,
    decode: Callable[[bytes], A],
    run: Callable[[A], tuple[bytes, str]],
    crashed: Callable[[A, str], bytes],
    limit: int,
) -> Response:
    """Read, decode and run one verb call; ``crashed`` builds the 200 answer for an unexpected exception."""
    try:
        args = decode(await read_body(request, limit))
    except BodyError as err:
        REQUESTS.labels(verb, "bad_request").inc()
        return Response(encode_error(err.message), err.status_code, media_type=_JSON)
    except WireError as err:
        REQUESTS.labels(verb, "bad_request").inc()
        return Response(encode_error(str(err)), 400, media_type=_JSON)
    try:
        body, error = run(args)
    except Exception as err:  # never a 500: kube-scheduler would only see "code 500"
        log.exception("extender %s failed for pod %s", verb, args.pod.key)
        error = f"internal error: {type(err).__name__}: {err}"
        body = crashed(args, error)
    if error:
        log.warning("extender %s for pod %s: %s", verb, args.pod.key, error)
        REQUESTS.labels(verb, "error").inc()
    else:
        REQUESTS.labels(verb, "success").inc()
    return Response(body, 200, media_type=_JSON)
