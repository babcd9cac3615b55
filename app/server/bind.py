"""POST /bind: HTTP around :class:`~app.extender.bind.Binder`.

Status codes, as for the other verbs (kube-scheduler reads the body of an HTTP 200 only):

- 200 ``{"Error": ""}``: bound (or already bound to that node by an earlier call).
- 200 ``{"Error": "..."}``: not bound (the API server refused, or berth has no cluster connection);
  kube-scheduler then fails the binding cycle (Unreserve, backoff) unless the extender is ignorable.
- 400 ``{"Error": ...}``: the body is not a valid ``ExtenderBindingArgs``.
- 413 ``{"Error": ...}``: the body is larger than ``max_request_bytes``.

Unlike /filter and /prioritize, the work here is waiting on the API server, so the blocking client
call runs in a worker thread: binds run concurrently (kube-scheduler binds in goroutines) and the
event loop keeps serving /filter meanwhile. The cache update after a bind runs back on the loop,
where the engine is used.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from app.extender.bind import (
    NO_CLUSTER_ERROR,
    Binder,
    BindResult,
    decode_binding_args,
    encode_binding_result,
)
from app.extender.wire import WireError, encode_error
from app.server.body import BodyError, read_body
from app.server.verbs import REQUESTS

__all__ = ["install_bind"]

log = logging.getLogger(__name__)

_JSON = "application/json"
_VERB = "bind"


class ExtenderBindingArgs(BaseModel):
    """The /bind request (documentation only; keys match case-insensitively)."""

    model_config = ConfigDict(populate_by_name=True)

    pod_name: str = Field(alias="PodName")
    pod_namespace: str = Field(alias="PodNamespace")
    pod_uid: str = Field(alias="PodUID", description="Checked as a precondition of the Binding.")
    node: str = Field(alias="Node")


class ExtenderBindingResult(BaseModel):
    """The /bind answer: an empty ``Error`` means bound."""

    model_config = ConfigDict(populate_by_name=True)

    error: str = Field(alias="Error")


class _ErrorBody(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    error: str = Field(alias="Error")


def install_bind(app: FastAPI, binder: Binder | None, max_request_bytes: int) -> None:
    """Add POST /bind to ``app``; without a ``binder`` it answers :data:`NO_CLUSTER_ERROR`."""

    @app.post(
        "/bind",
        tags=["extender"],
        summary="Bind a pod to a node (creates the pods/binding subresource)",
        response_model=ExtenderBindingResult,
        responses={
            400: {"model": _ErrorBody, "description": "The body is not a valid ExtenderBindingArgs."},
            413: {"model": _ErrorBody, "description": "The body exceeds the size limit."},
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {_JSON: {"schema": ExtenderBindingArgs.model_json_schema(by_alias=True)}},
            }
        },
    )
    async def bind_verb(request: Request) -> Response:
        try:
            args = decode_binding_args(await read_body(request, max_request_bytes))
        except BodyError as err:
            REQUESTS.labels(_VERB, "bad_request").inc()
            return Response(encode_error(err.message), err.status_code, media_type=_JSON)
        except WireError as err:
            REQUESTS.labels(_VERB, "bad_request").inc()
            return Response(encode_error(str(err)), 400, media_type=_JSON)
        if binder is None:
            result = BindResult(NO_CLUSTER_ERROR)
        else:
            try:
                result = await run_in_threadpool(binder.bind_blocking, args, binder.take(args))
                binder.record(args, result)
            except Exception as err:  # never a 500: kube-scheduler would only see "code 500"
                log.exception("extender bind failed for pod %s", args.key)
                result = BindResult(f"internal error: {type(err).__name__}: {err}")
        if result.error:
            log.warning("extender bind of pod %s to node %s: %s", args.key, args.node, result.error)
            REQUESTS.labels(_VERB, "error").inc()
        else:
            REQUESTS.labels(_VERB, "success").inc()
        return Response(encode_binding_result(result.error), 200, media_type=_JSON)
