"""The extender bind verb: create the ``pods/binding`` subresource for kube-scheduler.

kube-scheduler hands the binding to the first extender with a ``bindVerb`` that is interested in
the pod, and then skips its own Bind plugins (DefaultBinder). It POSTs an ``ExtenderBindingArgs``
``{"PodName", "PodNamespace", "PodUID", "Node"}`` and reads ``ExtenderBindingResult``
``{"Error"}`` from an HTTP 200: an empty ``Error`` means bound. Binding cycles run in goroutines,
so many binds are in flight at once; each must answer within the extender's ``httpTimeout``
(default 5s).

What :class:`Binder` does with a request:

1. POST the Binding through the cluster client (with the pod's UID as a precondition, so a pod
   deleted and re-created under the same name is never bound by mistake).
2. A 409 Conflict is looked into with a GET of the pod: if it is the same pod (same UID) and is
   already on the requested node, the bind *succeeded* — typically an earlier call whose reply
   kube-scheduler gave up waiting for, then retried. Bound elsewhere, or a different UID, is an
   error naming what was found.
3. On success, the pod is assumed in the engine's cache on its node, so the next /filter counts
   it before the pod informer delivers the bound pod; the informer's add then confirms the assumed
   pod (:meth:`~app.backend.cache.cache.Cache.add_pod`) instead of counting it twice.

The full pod (its requests, ports, affinity...) is needed to count it; the bind request carries
only its name. The pods /filter and /prioritize were asked about are remembered by UID for that
(:meth:`Binder.remember`), and a pod not seen there (berth restarted in between, no filterVerb)
is read from the API server.

The client is any object with the two methods of :class:`BindingClient` (berth's
``app.kube.client.KubeClient`` in ``berth serve --kubeconfig``): it is duck-typed so that this
layer does not import the cluster client, and its errors are recognised by their ``status``
attribute (``KubeError.status``, the HTTP status code).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from app import logs
from app.api.decoding import JsonSyntaxError, loads_as_go
from app.api.errors import FieldError
from app.api.objects import Pod, json_type_name, parse_pod
from app.backend.cache.cache import CacheError
from app.extender import schema
from app.extender.decisions import ExtenderDecisions
from app.extender.service import ExtenderService
from app.extender.wire import WireError
from app.scheduler.scheduler import Engine

__all__ = [
    "NO_CLUSTER_ERROR",
    "BindResult",
    "Binder",
    "BindingArgs",
    "BindingClient",
    "RememberingService",
    "decode_binding_args",
    "encode_binding_result",
]

NO_CLUSTER_ERROR = "berth serve has no cluster connection (start it with --kubeconfig)"
"""The /bind ``Error`` when berth runs without a cluster client (no ``--kubeconfig``)."""

HTTP_NOT_FOUND = 404
HTTP_CONFLICT = 409

# Folded key -> Go field name of ExtenderBindingArgs (v1 carries no JSON tags), and the fields that
# must be non-empty: from the model of the OpenAPI document.
_BINDING_FIELDS = schema.folded_fields(schema.ExtenderBindingArgs)
_REQUIRED = schema.required_fields(schema.ExtenderBindingArgs)


class BindingClient(Protocol):
    """What the bind verb needs of a cluster client (``app.kube.client.KubeClient`` has it).

    Both methods raise an exception with an integer ``status`` attribute (the HTTP status) when the
    API server refuses the request; other exceptions are transport failures.
    """

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST ``/api/v1/namespaces/{namespace}/pods/{name}/binding`` to ``node``."""
        ...

    def get_json(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        """GET ``path`` and decode the JSON body."""
        ...


# --- wire ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BindingArgs:
    """A decoded ``ExtenderBindingArgs``."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str

    @property
    def key(self) -> str:
        """``namespace/name``, as the other verbs log pods."""
        return f"{self.pod_namespace}/{self.pod_name}"


def decode_binding_args(body: bytes) -> BindingArgs:
    """Decode an ``ExtenderBindingArgs`` body; raise :class:`~app.extender.wire.WireError` (HTTP 400).

    Keys match case-insensitively (Go's decoder; the last of duplicate keys wins) and ``null`` is
    treated as absent. ``PodName``, ``PodNamespace`` and ``Node`` are required; ``PodUID`` may be
    empty (the bind then has no UID precondition), as a Go zero value would be.
    """
    try:
        doc = loads_as_go(body)
    except JsonSyntaxError as err:
        raise WireError(f"request body is not valid JSON: {err}") from None
    except FieldError as err:
        raise WireError(str(err)) from None
    if not isinstance(doc, dict):
        raise WireError(
            f"request body: expected a JSON object (ExtenderBindingArgs), got {json_type_name(doc)}"
        )
    fields: dict[str, Any] = {}
    for key, value in doc.items():
        name = _BINDING_FIELDS.get(key.casefold())
        if name is not None:
            fields[name] = value
    values: dict[str, str] = {}
    for name in ("PodName", "PodNamespace", "PodUID", "Node"):
        value = fields.get(name)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise WireError(f"{name}: expected a string, got {json_type_name(value)}")
        if not value and name in _REQUIRED:
            raise WireError(f"{name}: Required value")
        values[name] = value
    return BindingArgs(values["PodName"], values["PodNamespace"], values["PodUID"], values["Node"])


def encode_binding_result(error: str) -> bytes:
    """``ExtenderBindingResult``: ``{"Error": ""}`` when bound."""
    return orjson.dumps({"Error": error})


# --- the verb -----------------------------------------------------------------------------


@dataclass(slots=True)
class BindResult:
    """What a bind attempt came to: ``error`` ("" when bound) and the pod to assume, if known."""

    error: str = ""
    pod: Pod | None = None
    already_bound: bool = False


class Binder:
    """Binds pods for kube-scheduler through ``client`` and tells ``engine``'s cache about them.

    Thread use: :meth:`bind_blocking` does network I/O and is meant to run in a worker thread (many
    at once); :meth:`remember`, :meth:`take` and :meth:`record` are cheap and run on the server's
    event loop, where the engine is used. The memo is locked anyway, so any caller is safe.
    """

    def __init__(self, client: BindingClient, engine: Engine | None = None, *, memo_size: int = 8192) -> None:
        self.client = client
        self.engine = engine
        self.memo_size = memo_size
        self._memo: OrderedDict[str, Pod] = OrderedDict()
        self._lock = threading.Lock()
        self.decisions: ExtenderDecisions | None = None
        """Where :meth:`record` notes each bind's outcome (the verbs' decisions, for the web UI)."""

    # --- pods seen by /filter and /prioritize --------------------------------------------------

    def remember(self, pod: Pod) -> None:
        """Keep ``pod`` (as /filter or /prioritize received it) for its bind; bounded, oldest out."""
        if not pod.uid or self.memo_size <= 0:
            return
        with self._lock:
            self._memo[pod.uid] = pod
            self._memo.move_to_end(pod.uid)
            while len(self._memo) > self.memo_size:
                self._memo.popitem(last=False)

    def take(self, args: BindingArgs) -> Pod | None:
        """The remembered pod for ``args`` (removed from the memo), if it is that pod."""
        if not args.pod_uid:
            return None
        with self._lock:
            pod = self._memo.pop(args.pod_uid, None)
        if pod is None or pod.name != args.pod_name or pod.namespace != args.pod_namespace:
            return None
        return pod

    # --- binding ---------------------------------------------------------------------------

    def bind_blocking(self, args: BindingArgs, known: Pod | None = None) -> BindResult:
        """Create the Binding and sort out a conflict; blocking (run it in a thread).

        ``known`` is the pod from :meth:`take`; without it the pod is read from the API server
        after the bind, so that :meth:`record` can count it (a failed read only skips that).
        """
        try:
            self.client.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)
        except Exception as err:
            return self.failed(args, err)
        return self.bound(args, known)

    def failed(self, args: BindingArgs, err: Exception) -> BindResult:
        """The answer for a Binding the client raised ``err`` for; blocking on a 409 (reads the pod).

        Split from :meth:`bind_blocking` for callers that create the Binding another way (the
        server's event-loop client) and share everything after it.
        """
        status = _status_of(err)
        if status == HTTP_CONFLICT:
            return self._resolve_conflict(args, err)
        if status is None:
            logs.warning("Binding failed", pod=args.key, node=args.node, err=str(err))
        return BindResult(f"binding pod {args.key} to node {args.node}: {_message_of(err)}")

    def bound(self, args: BindingArgs, known: Pod | None) -> BindResult:
        """The answer for a Binding created; blocking when ``known`` is None (reads the pod)."""
        logs.info("Successfully bound pod to node", 2, pod=args.key, node=args.node)
        if known is None:
            known = self._read_pod(args)
        return BindResult("", known)

    def record(self, args: BindingArgs, result: BindResult) -> None:
        """After a successful bind: assume the pod on its node in the engine's cache.

        Run it on the thread that uses the engine (the event loop). A pod the cache already holds
        (the informer was quicker, or it was assumed before) is left as it is.
        """
        if self.decisions is not None:
            self.decisions.bound(args.key, args.node, result.error)
        if result.error or result.pod is None or self.engine is None:
            return
        pod = result.pod
        bound = pod if pod.node_name == args.node else dataclasses.replace(pod, node_name=args.node)
        cache = self.engine.cache
        try:
            cache.assume_pod(bound)
        except CacheError:
            return  # already known: the informer delivered it (or an earlier bind assumed it)
        cache.finish_binding(bound)

    # --- helpers ---------------------------------------------------------------------------

    def _resolve_conflict(self, args: BindingArgs, conflict: Exception) -> BindResult:
        """A 409 from the API server: success if this pod is already on ``args.node``."""
        try:
            raw = self.client.get_json(_pod_path(args))
        except Exception as err:
            if _status_of(err) == HTTP_NOT_FOUND:
                return BindResult(f"binding pod {args.key} to node {args.node}: pod not found")
            return BindResult(
                f"binding pod {args.key} to node {args.node}: {_message_of(conflict)} "
                f"(and reading the pod failed: {_message_of(err)})"
            )
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        uid = meta.get("uid", "")
        bound_to = spec.get("nodeName") or ""
        if args.pod_uid and uid != args.pod_uid:
            return BindResult(
                f'binding pod {args.key} to node {args.node}: the pod has UID "{uid}", not "{args.pod_uid}" '
                "(it was deleted and re-created)"
            )
        if bound_to == args.node:
            # The timed-out-reply race: an earlier bind of this pod went through.
            logs.info(
                "Pod already bound to the node; treating the bind as done", 2, pod=args.key, node=args.node
            )
            return BindResult("", _parse_or_none(raw, args), already_bound=True)
        if bound_to:
            return BindResult(
                f'binding pod {args.key} to node {args.node}: already bound to node "{bound_to}"'
            )
        return BindResult(f"binding pod {args.key} to node {args.node}: {_message_of(conflict)}")

    def _read_pod(self, args: BindingArgs) -> Pod | None:
        try:
            return _parse_or_none(self.client.get_json(_pod_path(args)), args)
        except Exception as err:
            logs.info("Bound pod not read back; the informer will add it", 2, pod=args.key, err=str(err))
            return None


class RememberingService(ExtenderService):
    """An :class:`ExtenderService` that remembers the pods it is asked about for ``binder``.

    kube-scheduler sends the full pod to /filter and /prioritize but only its name to /bind; the
    pod kept here is what the bind counts in the cache.
    """

    def __init__(self, engine: Engine, profile: str | None, binder: Binder) -> None:
        super().__init__(engine, profile)
        self.binder = binder
        binder.decisions = self.decisions  # the UI shows the node /bind bound next to /filter's verdicts

    def received(self, pod: Pod) -> None:
        """Remember the pod of a /filter or /prioritize (either may be the only verb configured)."""
        self.binder.remember(pod)


def _pod_path(args: BindingArgs) -> str:
    return f"/api/v1/namespaces/{args.pod_namespace}/pods/{args.pod_name}"


def _parse_or_none(raw: dict[str, Any], args: BindingArgs) -> Pod | None:
    try:
        return parse_pod(raw, "pod")
    except FieldError as err:
        logs.warning("Bound pod could not be parsed; the informer will add it", pod=args.key, err=str(err))
        return None


def _status_of(err: Exception) -> int | None:
    """The HTTP status of a client error (``KubeError.status``), None for a transport failure.

    ``KubeError`` uses status 0 for "no answer" (connection refused, timeout, bad config).
    """
    status = getattr(err, "status", None)
    return status if isinstance(status, int) and status > 0 else None


def _message_of(err: Exception) -> str:
    """The API server's message (``KubeError.message``), else the exception's text."""
    message = getattr(err, "message", None)
    if isinstance(message, str) and message:
        return message
    return str(err) or type(err).__name__
