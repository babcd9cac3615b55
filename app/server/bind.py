"""POST /bind: HTTP around :class:`~app.extender.bind.Binder`.

Status codes, as for the other verbs (kube-scheduler reads the body of an HTTP 200 only):

- 200 ``{"Error": ""}``: bound (or already bound to that node by an earlier call).
- 200 ``{"Error": "..."}``: not bound (the API server refused, or berth has no cluster connection);
  kube-scheduler then fails the binding cycle (Unreserve, backoff) unless the extender is ignorable.
- 400 ``{"Error": ...}``: the body is not a valid ``ExtenderBindingArgs``.
- 413 ``{"Error": ...}``: the body is larger than ``max_request_bytes``.

Unlike /filter and /prioritize, the work here is waiting on the API server, so the blocking client
call runs in a worker thread: binds run concurrently (kube-scheduler binds in goroutines) and the
event loop keeps serving /filter meanwhile. With berth's own cluster client (``berth serve
--kubeconfig``) the Binding is instead created from the event loop by
:class:`~app.server.loopbind.LoopBindingClient`, far cheaper than urllib3 in threads; other clients
run in berth's own workers, at most :data:`BIND_WORKERS` of them, so that binds reuse the client's
pooled connections. The cache update after a bind runs on the loop, where the engine is used.

kube-scheduler waits for an extender at most ``httpTimeout`` (5 s by default), then fails the
binding cycle and schedules the pod again, which ends in another /bind. So a bind answers within
``bind_timeout`` (:data:`DEFAULT_BIND_TIMEOUT`, under the 5 s) whatever the API server does: when it
has not answered by then, the answer says so and that the Binding may still be applied. The Binding
is not abandoned: it goes on (to the client's own timeout) and its outcome is kept while it is in
flight. A /bind for the same pod meanwhile (kube-scheduler's retry, for this node or another) waits
for that Binding instead of sending a second one that a thawed API server might apply first, and
answers with its outcome: bound to this node (``""``), bound to another (an Error naming it), or
failed (then a new Binding is sent). Once the first Binding's answer is in, a retry sends a new one,
and a 409 for a pod already on that node is the truth the retry tells (see
:class:`~app.extender.bind.Binder`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from fastapi import FastAPI
from starlette.types import Receive, Scope

from app.extender import schema
from app.extender.bind import (
    NO_CLUSTER_ERROR,
    Binder,
    BindingArgs,
    BindResult,
    decode_binding_args,
    encode_binding_result,
)
from app.server.loopbind import LoopBindingClient
from app.server.verbs import read_args, request_counters, route_of

__all__ = ["BIND_WORKERS", "DEFAULT_BIND_TIMEOUT", "BindVerb", "install_bind"]

DEFAULT_BIND_TIMEOUT = 4.0
"""Seconds a /bind waits for the API server before answering: under kube-scheduler's default extender
``httpTimeout`` (5 s), so that the answer arrives while kube-scheduler still waits for it."""

log = logging.getLogger(__name__)

_JSON = "application/json"
_VERB = "bind"


BIND_WORKERS = 8
"""Binds in flight at once (the rest wait in the executor's queue).

Each bind holds one connection of the cluster client's pool while it waits on the API server. The
pool keeps at most ``connection_pool_maxsize`` idle connections (10 on 2 cores) and opens a new one,
with a full TLS handshake that costs berth and the API server far more CPU than the bind itself,
whenever every kept one is in use; a connection returned to a full pool is dropped. kube-scheduler
binds in unbounded goroutines, so the threadpool's 40 workers kept opening and dropping
connections under load; 8 stay within what the pool keeps and still overlap the API server's
latency.
"""


class BindVerb:
    """POST /bind as a :class:`~app.server.verbs.Verb`: decode, bind in a worker thread, record."""

    name = _VERB
    then: Callable[[], None] | None = None

    def __init__(
        self,
        binder: Binder | None,
        limit: int,
        workers: int = BIND_WORKERS,
        timeout: float = DEFAULT_BIND_TIMEOUT,
    ) -> None:
        self.binder = binder
        self.limit = limit
        self.timeout = timeout
        # Bindings sent and not yet answered, by pod (namespace, name, UID): the task and its node.
        self._in_flight: dict[tuple[str, str, str], tuple[asyncio.Task[BindResult], str]] = {}
        self._counted = request_counters(_VERB)
        # berth's own cluster client: the Binding is created from the event loop (loopbind).
        self.loop_client = None if binder is None else LoopBindingClient.for_client(binder.client)
        # Created lazily: an app without a binder (or that never binds) starts no threads.
        self._workers = workers
        self._executor: ThreadPoolExecutor | None = None

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="berth-bind")
        return self._executor

    def close(self) -> None:
        """Stop the worker threads once the binds under way are done; close pooled connections."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)
        if self.loop_client is not None:
            self.loop_client.close()

    async def handle(self, scope: Scope, receive: Receive) -> tuple[int, bytes]:
        """Read and decode the request, bind, answer ``ExtenderBindingResult``."""
        args = await read_args(scope, receive, self.limit, decode_binding_args, self._counted)
        if isinstance(args, tuple):
            return args
        binder = self.binder
        if binder is None:
            result = BindResult(NO_CLUSTER_ERROR)
        else:
            try:
                result = await self._bind_in_time(binder, args)
            except Exception as err:  # never a 500: kube-scheduler would only see "code 500"
                log.exception("extender bind failed for pod %s", args.key)
                result = BindResult(f"internal error: {type(err).__name__}: {err}")
        if result.error:
            log.warning("extender bind of pod %s to node %s: %s", args.key, args.node, result.error)
            self._counted["error"].inc()
        else:
            self._counted["success"].inc()
        return 200, encode_binding_result(result.error)

    async def _bind_in_time(self, binder: Binder, args: BindingArgs) -> BindResult:
        """The outcome of binding ``args`` within ``timeout``: of a Binding for the pod already in
        flight if there is one, else of a new one (which goes on after a late answer)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        key = (args.pod_namespace, args.pod_name, args.pod_uid)
        earlier = self._in_flight.get(key)
        if earlier is not None:
            task, node = earlier
            done, _ = await asyncio.wait({task}, timeout=self.timeout)
            if not done:
                return self._late(args, f"an earlier Binding of the pod to node {node} is still in flight")
            outcome = task.result()
            if not outcome.error:
                if node == args.node:
                    return BindResult("", outcome.pod, already_bound=True)
                return BindResult(
                    f'binding pod {args.key} to node {args.node}: already bound to node "{node}"'
                )
        task = loop.create_task(self._bind(binder, args))
        self._in_flight[key] = (task, args.node)
        task.add_done_callback(lambda done: self._finished(key, done, binder, args))
        done, _ = await asyncio.wait({task}, timeout=max(deadline - loop.time(), 0.0))
        if not done:
            return self._late(args, "the Binding continues")
        return task.result()

    def _late(self, args: BindingArgs, what: str) -> BindResult:
        return BindResult(
            f"binding pod {args.key} to node {args.node}: no answer from the API server within "
            f"{self.timeout:g}s; {what}, and a retry reports whether it was applied"
        )

    def _finished(
        self, key: tuple[str, str, str], task: asyncio.Task[BindResult], binder: Binder, args: BindingArgs
    ) -> None:
        """A Binding's answer is in (maybe after its /bind answered): forget it, count the pod."""
        if self._in_flight.get(key, (None, ""))[0] is task:
            del self._in_flight[key]
        if task.cancelled():
            return
        err = task.exception()
        if err is not None:
            log.error("extender bind failed for pod %s", args.key, exc_info=err)
            return
        result = task.result()
        binder.record(args, result)
        if result.error:
            log.info("Binding of pod %s to node %s: %s", args.key, args.node, result.error)

    async def _bind(self, binder: Binder, args: BindingArgs) -> BindResult:
        """Create the Binding: on the loop with berth's client, else in a worker thread.

        Only the uncommon, blocking follow-ups (reading the pod after a 409 or when /filter never
        saw it) leave the loop with the loop client.
        """
        loop = asyncio.get_running_loop()
        known = binder.take(args)
        if self.loop_client is None:
            return await loop.run_in_executor(self._pool(), binder.bind_blocking, args, known)
        try:
            await self.loop_client.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)
        except Exception as err:
            return await loop.run_in_executor(self._pool(), binder.failed, args, err)
        if known is not None:
            return binder.bound(args, known)
        return await loop.run_in_executor(self._pool(), binder.bound, args, None)


def install_bind(
    app: FastAPI, binder: Binder | None, max_request_bytes: int, timeout: float = DEFAULT_BIND_TIMEOUT
) -> BindVerb:
    """Add POST /bind to ``app``; without a ``binder`` it answers :data:`NO_CLUSTER_ERROR`.

    ``timeout`` bounds the wait for the API server. Returns the verb, for the fast path.
    """
    verb = BindVerb(binder, max_request_bytes, timeout=timeout)
    app.post(
        "/bind",
        tags=["extender"],
        summary="Bind a pod to a node (creates the pods/binding subresource)",
        response_model=schema.ExtenderBindingResult,
        responses={
            400: {
                "model": schema.ExtenderError,
                "description": "The body is not a valid ExtenderBindingArgs.",
            },
            413: {"model": schema.ExtenderError, "description": "The body exceeds the size limit."},
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {_JSON: {"schema": schema.ExtenderBindingArgs.model_json_schema(by_alias=True)}},
            }
        },
        name="bind_verb",
    )(route_of(verb))
    return verb
