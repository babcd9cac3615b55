"""POST /filter and POST /prioritize: HTTP around :class:`~app.extender.service.ExtenderService`.

Status codes (kube-scheduler reads the body of an HTTP 200 only):

- 200: the verb ran. /filter reports engine failures in ``Error``; /prioritize answers ``[]``
  (kube-scheduler ignores prioritize errors, so an empty list means the same: no score) and logs.
  An unexpected exception is answered the same way, logged with its traceback, never shown.
- 400 ``{"Error": ...}``: the body is not a valid ``ExtenderArgs`` (the message names the field).
- 413 ``{"Error": ...}``: the body is larger than ``max_request_bytes``.

The engine is CPU-bound and not thread-safe, so the handlers are ``async`` and run it inline on
the event loop: no threadpool hop, and requests are served one at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import FastAPI, Request, Response
from prometheus_client import Counter

from app.extender import schema
from app.extender.service import ExtenderService
from app.extender.wire import (
    ExtenderArgs,
    FilterResult,
    NodeCache,
    WireError,
    decode_args,
    encode_error,
    encode_filter_result,
    encode_host_priorities,
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
_ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": schema.ExtenderError, "description": "The body is not a valid ExtenderArgs."},
    413: {"model": schema.ExtenderError, "description": "The body exceeds the size limit."},
}

Run = Callable[[ExtenderArgs], tuple[bytes, str]]


def install_verbs(app: FastAPI, service: ExtenderService, max_request_bytes: int) -> None:
    """Add the verb routes to ``app``."""
    node_cache = NodeCache()

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
        return await _serve(request, "filter", run_filter, max_request_bytes, node_cache)

    @app.post(
        "/prioritize",
        tags=["extender"],
        summary="Score nodes for a pod (PreScore + Score), 0..10",
        response_model=list[schema.HostPriority],
        responses=_ERRORS,
        openapi_extra=_REQUEST_BODY,
    )
    async def prioritize_verb(request: Request) -> Response:
        return await _serve(request, "prioritize", run_prioritize, max_request_bytes, node_cache)


async def _serve(request: Request, verb: str, run: Run, limit: int, node_cache: NodeCache) -> Response:
    try:
        args = decode_args(await read_body(request, limit), node_cache)
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
        body = encode_filter_result(FilterResult(error=error)) if verb == "filter" else b"[]"
    if error:
        log.warning("extender %s for pod %s: %s", verb, args.pod.key, error)
        REQUESTS.labels(verb, "error").inc()
    else:
        REQUESTS.labels(verb, "success").inc()
    return Response(body, 200, media_type=_JSON)
