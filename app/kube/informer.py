"""Reflectors: list + watch one resource into a local store and hand each change to a handler.

One daemon thread per resource (style-and-ecosystem.md §B2):

1. **List**, as kube-scheduler's client-go v0.36 reflectors do with the ``WatchListClient`` gate
   (on by default in v1.36): a *watch-list*, one watch request with ``sendInitialEvents=true`` and
   ``resourceVersionMatch=NotOlderThan`` that the API server answers from its watch cache with an
   ADDED event per object and then a bookmark annotated ``k8s.io/initial-events-end``, whose
   resourceVersion is the list's; the same stream then goes on as the watch. When the API server
   refuses it, or the gate is off, or the stream breaks before that bookmark, a paginated list
   (``limit`` + ``continue``) as a consistent read, as client-go falls back. The new store is diffed
   against the old one and the handler gets DELETED, MODIFIED and ADDED calls, in that order, so a
   relist replaces state (objects gone while the watch was down are deleted).
2. **Watch** from the list's resourceVersion with ``allowWatchBookmarks=true`` and a jittered
   server timeout of 5 to 10 minutes; bookmarks only advance the resourceVersion. A stream the server
   ends is re-opened at once from the last resourceVersion.
3. **410 Gone** (the watch answered 410, or an ``ERROR`` event "too old resource version") relists;
   never re-watch a stale resourceVersion. Any other error backs off (jittered exponential, reset
   after a healthy period) and relists; a broken connection backs off and re-watches.

There is no periodic resync (kube-scheduler's informer factory has resync period 0).

Phases, as client-go's: **started**, **synced** (the first list is in the store:
:meth:`Reflector.has_synced`) and **handlers synced** (the handler has received every object of
that list: :meth:`Reflector.handlers_synced`). Objects are decoded once, by the ``decode`` callable
given with the handler; an object that fails to decode is logged and skipped, never fatal.
"""

from __future__ import annotations

import contextlib
import gc
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from app import featuregates, logs
from app.api.decoding import loads_without_managed_fields
from app.kube.client import KubeClient, KubeError

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "NAMESPACES",
    "NODES",
    "PODS",
    "POD_DISRUPTION_BUDGETS",
    "REPLICASETS",
    "REPLICATION_CONTROLLERS",
    "SERVICES",
    "STATEFULSETS",
    "STORAGE_RESOURCES",
    "Backoff",
    "EventHandler",
    "InformerSet",
    "Reflector",
    "ReflectorStats",
    "ResourceType",
    "object_key",
]

DEFAULT_PAGE_SIZE = 500
INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # the annotation of a watch-list's closing bookmark
MIN_WATCH_TIMEOUT = 300.0  # client-go's minWatchTimeout; each watch asks for 1x-2x of it


@dataclass(frozen=True, slots=True)
class ResourceType:
    """A listable, watchable collection across all namespaces."""

    resource: str  # plural, for logs: "pods"
    kind: str  # set on every object, since list items do not carry it: "Pod"
    api_version: str  # "v1", "apps/v1", ...
    path: str  # "/api/v1/pods"
    field_selector: str = ""


NODES = ResourceType("nodes", "Node", "v1", "/api/v1/nodes")
# kube-scheduler's pod informer leaves out terminated pods: they use no capacity, and one that
# terminates then arrives as a DELETED event (it stops matching the selector).
PODS = ResourceType(
    "pods", "Pod", "v1", "/api/v1/pods", field_selector="status.phase!=Succeeded,status.phase!=Failed"
)
SERVICES = ResourceType("services", "Service", "v1", "/api/v1/services")
REPLICATION_CONTROLLERS = ResourceType(
    "replicationcontrollers", "ReplicationController", "v1", "/api/v1/replicationcontrollers"
)
NAMESPACES = ResourceType("namespaces", "Namespace", "v1", "/api/v1/namespaces")
REPLICASETS = ResourceType("replicasets", "ReplicaSet", "apps/v1", "/apis/apps/v1/replicasets")
STATEFULSETS = ResourceType("statefulsets", "StatefulSet", "apps/v1", "/apis/apps/v1/statefulsets")
POD_DISRUPTION_BUDGETS = ResourceType(
    "poddisruptionbudgets", "PodDisruptionBudget", "policy/v1", "/apis/policy/v1/poddisruptionbudgets"
)

# --- storage (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits) ---
PERSISTENT_VOLUMES = ResourceType("persistentvolumes", "PersistentVolume", "v1", "/api/v1/persistentvolumes")
PERSISTENT_VOLUME_CLAIMS = ResourceType(
    "persistentvolumeclaims", "PersistentVolumeClaim", "v1", "/api/v1/persistentvolumeclaims"
)
STORAGE_CLASSES = ResourceType(
    "storageclasses", "StorageClass", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/storageclasses"
)
CSI_NODES = ResourceType("csinodes", "CSINode", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csinodes")
CSI_DRIVERS = ResourceType(
    "csidrivers", "CSIDriver", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csidrivers"
)
CSI_STORAGE_CAPACITIES = ResourceType(
    "csistoragecapacities",
    "CSIStorageCapacity",
    "storage.k8s.io/v1",
    "/apis/storage.k8s.io/v1/csistoragecapacities",
)
VOLUME_ATTACHMENTS = ResourceType(
    "volumeattachments", "VolumeAttachment", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/volumeattachments"
)
STORAGE_RESOURCES: tuple[ResourceType, ...] = (
    PERSISTENT_VOLUMES,
    PERSISTENT_VOLUME_CLAIMS,
    STORAGE_CLASSES,
    CSI_NODES,
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    VOLUME_ATTACHMENTS,
)
"""The storage kinds the volume plugins read."""


class EventHandler(Protocol):
    """Receives decoded objects; called on the reflector's thread, so it must not block for long."""

    def on_add(self, obj: Any) -> None:
        """A new object (from the list or the watch)."""
        ...

    def on_update(self, old: Any, new: Any) -> None:
        """A changed object, with the previously known version."""
        ...

    def on_delete(self, obj: Any) -> None:
        """An object deleted (or gone at a relist), as last known."""
        ...


Decoder = Callable[[dict[str, Any]], Any]
"""Turns a raw object into what the handler gets; raising means "skip this object"."""


def object_key(raw: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = raw.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    name = meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def _resource_version(raw: Mapping[str, Any]) -> str:
    return str((raw.get("metadata") or {}).get("resourceVersion") or "")


def _event_parts(event: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A watch event's ``type`` and ``object``; an event without an object is refused."""
    kind = event.get("type")
    raw = event.get("object")
    if not isinstance(raw, dict):
        raise KubeError(0, f"watch event {kind!r} without an object", "InvalidWatchEvent")
    return kind, raw


class Backoff:
    """Jittered exponential backoff, reset after a healthy period (client-go reflector's defaults:
    0.8s doubling to 30s, jitter 1.0, reset after 2 minutes without errors)."""

    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._rng = rng or random.Random()
        self._current = initial
        self._last_failure = 0.0

    def next(self) -> float:
        """The next delay to wait, growing the following one."""
        now = time.monotonic()
        if self._last_failure and now - self._last_failure > self.reset_after:
            self._current = self.initial
        self._last_failure = now
        delay = self._current * (1.0 + self.jitter * self._rng.random())
        self._current = min(self.maximum, self._current * self.factor)
        return min(delay, self.maximum * (1.0 + self.jitter))

    def reset(self) -> None:
        """Back to the initial delay (after a healthy stretch)."""
        self._current = self.initial
        self._last_failure = 0.0


@dataclass(slots=True)
class ReflectorStats:
    """Counters, for logs and tests."""

    lists: int = 0  # completed lists (the first one plus relists)
    watch_lists: int = 0  # of which served as a watch-list stream
    pages: int = 0  # list pages received
    watches: int = 0  # watch requests opened
    events: int = 0  # ADDED/MODIFIED/DELETED events applied
    bookmarks: int = 0
    gone: int = 0  # 410s that forced a relist
    errors: int = 0  # errors that forced a backoff
    decode_errors: int = 0  # objects skipped because they did not decode


class _Relist(Exception):
    """The watch cannot continue from its resourceVersion: list again (410 Gone)."""


@dataclass(slots=True)
class _Entry:
    resource_version: str
    obj: Any


class Reflector:
    """List + watch of one :class:`ResourceType` into ``handler``, on its own daemon thread."""

    def __init__(
        self,
        client: KubeClient,
        rtype: ResourceType,
        handler: EventHandler,
        decode: Decoder | None = None,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        backoff: Backoff | None = None,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        rng: random.Random | None = None,
        watch_list: bool | None = None,
        without_managed_fields: bool = False,
    ) -> None:
        """``watch_list``: list with a watch-list stream first (None: as the ``WatchListClient``
        feature gate says, on by default as in kube-scheduler v1.36). ``without_managed_fields``:
        ``decode`` drops ``metadata.managedFields`` (the pod and node decoders), so the watch cuts
        them from each event's text where it can, before the JSON is parsed
        (:func:`~app.api.decoding.cut_managed_fields`)."""
        self.client = client
        self.rtype = rtype
        self.handler = handler
        self.decode: Decoder = decode or (lambda raw: raw)
        self._loads: Callable[[bytes], Any] = (
            loads_without_managed_fields if without_managed_fields else orjson.loads
        )
        self.page_size = page_size
        self.backoff = backoff or Backoff(rng=rng)
        self.min_watch_timeout = min_watch_timeout
        self.watch_list = (
            featuregates.DEFAULT.enabled("WatchListClient") if watch_list is None else watch_list
        )
        self.stats = ReflectorStats()
        self.resource_version = ""
        self._rng = rng or random.Random()
        self._store: dict[str, _Entry] = {}
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._handlers_synced = threading.Event()
        self._thread: threading.Thread | None = None
        self._stream: Iterator[dict[str, Any]] | None = None
        self._stream_lock = threading.Lock()

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the list+watch thread (once)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._run, name=f"reflector-{self.rtype.resource}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop the thread: close the open watch and wait up to ``timeout`` for it to end."""
        self._stop.set()
        with self._stream_lock:
            stream = self._stream
        if stream is not None:
            _close(stream)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stop.is_set()

    def has_synced(self) -> bool:
        """Whether the first list is in the store."""
        return self._synced.is_set()

    def handlers_synced(self) -> bool:
        """Whether the handler has received every object of the first list."""
        return self._handlers_synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until :meth:`has_synced` (False on timeout)."""
        return self._synced.wait(timeout)

    def wait_for_handlers_sync(self, timeout: float | None = None) -> bool:
        """Block until :meth:`handlers_synced` (False on timeout)."""
        return self._handlers_synced.wait(timeout)

    def keys(self) -> list[str]:
        """Keys of the objects in the store."""
        return list(self._store)

    def get(self, key: str) -> Any:
        """The stored (decoded) object at ``key``, or None."""
        entry = self._store.get(key)
        return entry.obj if entry is not None else None

    # --- the loop --------------------------------------------------------------------------------

    def _run(self) -> None:
        logs.info("Starting reflector", 2, resource=self.rtype.resource)
        while not self._stop.is_set():
            try:
                self._watch(self._list_and_replace())
            except _Relist:
                continue  # at once: the list is the cure, not the wait
            except Exception as err:  # never let the thread die: back off and relist
                if self._stop.is_set():
                    break
                self.stats.errors += 1
                delay = self.backoff.next()
                logs.warning(
                    "Failed to list or watch; retrying",
                    resource=self.rtype.resource,
                    err=str(err),
                    retryIn=f"{delay:.1f}s",
                )
                self._stop.wait(delay)
        logs.info("Stopped reflector", 2, resource=self.rtype.resource)

    def _list_params(self, token: str) -> dict[str, str]:
        params = {"limit": str(self.page_size)}
        if token:
            params["continue"] = token
        if self.rtype.field_selector:
            params["fieldSelector"] = self.rtype.field_selector
        return params

    def _list(self, stream: bool) -> tuple[str, dict[str, _Entry], bool]:
        """All pages of a consistent list, each decoded as it arrives: (resourceVersion, new store,
        whether every object was already handed to the handler as an add).

        Only one page's raw documents exist at a time: a page is decoded into the store and
        dropped before the next but one is asked for. The next page is requested as soon as this
        one's continue token is known, so the API server encodes it while this one is decoded.
        With ``stream`` (the first list: every object is an add) each object goes to the handler
        as soon as it is decoded, not after the last page; a list that has to start over (its
        continue token expired) falls back to replaying the difference at the end.

        The cyclic collector is paused while the list is read and decoded: each page creates
        hundreds of thousands of containers, and every collection they set off would walk all of
        them, and all the pages before (``berth run`` then freezes its cache out of the collector's
        reach once synced).
        """
        store: dict[str, _Entry] = {}
        version = ""
        with _COLLECTOR.paused():
            fetch = _PageFetch(self._fetch_page, "", self.rtype.resource)
            while True:
                if self._stop.is_set():
                    raise _Relist()  # the loop sees the stop flag and ends
                try:
                    page = fetch.result()
                except BaseException as err:
                    if stream:
                        # The handler has what this list streamed so far: from here on (or in the
                        # next list, if this one gives up) the difference is replayed at the end.
                        self._store, stream = dict(store), False
                    if not (isinstance(err, KubeError) and err.status == 410 and fetch.token):
                        raise
                    # The continue token expired mid-list: start the list over, from a new snapshot.
                    logs.info("List continue token expired; relisting", 2, resource=self.rtype.resource)
                    store, version = {}, ""
                    fetch = _PageFetch(self._fetch_page, "", self.rtype.resource)
                    continue
                self.stats.pages += 1
                meta = page.get("metadata") or {}
                if not version:
                    version = str(meta.get("resourceVersion") or "")  # constant across pages
                token = str(meta.get("continue") or "")
                if token:
                    fetch = _PageFetch(self._fetch_page, token, self.rtype.resource)
                for raw in page.get("items") or []:
                    decoded = self._decode(raw)
                    if decoded is not None:
                        store[decoded[0]] = decoded[1]
                        if stream:
                            self._dispatch("add", decoded[1].obj)
                del page
                if not token:
                    return version, store, stream

    def _fetch_page(self, token: str) -> dict[str, Any]:
        return self.client.get_json(self.rtype.path, self._list_params(token))

    def _decode(self, raw: Any) -> tuple[str, _Entry] | None:
        """(key, entry) for a raw object, or None (logged) when it does not decode."""
        if not isinstance(raw, dict):
            self.stats.decode_errors += 1
            logs.warning("Skipping a non-object in a list or watch", resource=self.rtype.resource)
            return None
        # List items carry no kind/apiVersion; set them so that every consumer sees whole objects.
        raw.setdefault("kind", self.rtype.kind)
        raw.setdefault("apiVersion", self.rtype.api_version)
        key = object_key(raw)
        try:
            obj = self.decode(raw)
        except Exception as err:
            self.stats.decode_errors += 1
            logs.warning(
                "Skipping an object that does not parse", resource=self.rtype.resource, key=key, err=str(err)
            )
            return None
        return key, _Entry(_resource_version(raw), obj)

    def _list_and_replace(self) -> Iterator[dict[str, Any]] | None:
        """List, swap the store, then replay the difference to the handler; the watch-list's open
        stream, which goes on as the watch (None after a paginated list)."""
        listed = (
            self._watch_list(stream=not self._synced.is_set() and not self._store)
            if self.watch_list
            else None
        )
        if listed is None:
            version, new, streamed = self._list(stream=not self._synced.is_set() and not self._store)
            watch = None
        else:
            version, new, streamed, watch = listed
            self.stats.watch_lists += 1
        old, self._store = self._store, new
        self.resource_version = version
        self.stats.lists += 1
        first = not self._synced.is_set()
        self._synced.set()
        logs.info(
            "Listed",
            2 if first else 1,
            resource=self.rtype.resource,
            objects=len(new),
            resourceVersion=version,
        )
        for key, entry in old.items():
            if key not in new:
                self._dispatch("delete", entry.obj)
        for key, entry in () if streamed else new.items():
            previous = old.get(key)
            if previous is None:
                self._dispatch("add", entry.obj)
            elif previous.resource_version != entry.resource_version:
                self._dispatch("update", previous.obj, entry.obj)
        self._handlers_synced.set()
        return watch

    def _watch_list_params(self) -> dict[str, str]:
        # No resourceVersion: the most recent state, as consistent as a quorum read (the API server
        # waits for its watch cache to catch up with etcd), like the paginated list's.
        params = {
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(int(self.min_watch_timeout * (1.0 + self._rng.random()))),
        }
        if self.rtype.field_selector:
            params["fieldSelector"] = self.rtype.field_selector
        return params

    def _watch_list(
        self, stream: bool
    ) -> tuple[str, dict[str, _Entry], bool, Iterator[dict[str, Any]]] | None:
        """The list as a watch-list stream (client-go's ``watchList``): (resourceVersion, new store,
        whether every object was already handed to the handler as an add, the open stream), or None
        when it failed and a paginated list must do (logged; what was streamed to the handler by
        then counts as its old state, so the list replays the difference).

        Each event is decoded as it arrives, and with ``stream`` handed to the handler at once, as
        the paginated list does; the cyclic collector is paused meanwhile, for the same reason.
        """
        store: dict[str, _Entry] = {}
        try:
            events = self.client.watch(self.rtype.path, self._watch_list_params(), self._loads)
        except KubeError as err:
            self._watch_list_failed(err)
            return None
        with self._stream_lock:
            self._stream = events
        try:
            with _COLLECTOR.paused():
                for event in events:
                    if self._stop.is_set():
                        raise _Relist()  # the loop sees the stop flag and ends
                    version = self._initial_event(event, store, stream)
                    if version is not None:
                        return version, store, stream, events
            raise KubeError(0, "the stream ended before its initial events did", "WatchListIncomplete")
        except BaseException as err:
            _close(events)
            if stream:
                self._store = dict(store)
            if isinstance(err, _Relist) or not isinstance(err, KubeError):
                raise
            self._watch_list_failed(err)
            return None
        finally:
            with self._stream_lock:
                self._stream = None

    def _watch_list_failed(self, err: KubeError) -> None:
        if self._stop.is_set():
            raise _Relist()
        logs.info(
            "Watch-list failed; falling back to a paginated list",
            2,
            resource=self.rtype.resource,
            err=err.message,
        )

    def _initial_event(self, event: Mapping[str, Any], store: dict[str, _Entry], stream: bool) -> str | None:
        """One event of a watch-list's initial state into ``store`` (and with ``stream`` the handler);
        the list's resourceVersion once the closing bookmark arrives, else None."""
        kind, raw = _event_parts(event)
        if kind == "BOOKMARK":
            self.stats.bookmarks += 1
            meta = raw.get("metadata") or {}
            if (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                return str(meta.get("resourceVersion") or "")
            return None
        if kind == "ERROR":
            raise KubeError(int(raw.get("code") or 0), str(raw.get("message") or "watch ERROR event"), "")
        decoded = self._decode(raw)
        if decoded is None:
            return None
        key, entry = decoded
        if kind == "DELETED":
            gone = store.pop(key, None)
            if stream and gone is not None:
                self._dispatch("delete", entry.obj)
            return None
        previous = store.get(key)
        store[key] = entry
        if stream:
            if previous is None:
                self._dispatch("add", entry.obj)
            else:
                self._dispatch("update", previous.obj, entry.obj)
        return None

    def _watch(self, opened: Iterator[dict[str, Any]] | None = None) -> None:
        """Watch from the store's resourceVersion until a relist is needed or the thread stops,
        first on ``opened`` (a watch-list's stream, past its initial events) when given."""
        while not self._stop.is_set():
            stream, opened = opened or self._open_watch(), None
            if stream is None:
                continue  # the connection failed; backed off, try again
            self.stats.watches += 1
            with self._stream_lock:
                self._stream = stream
            # stop() sets the flag before it looks for a stream to close: re-check, or a watch
            # opened while stopping would block until its server timeout.
            if self._stop.is_set():
                _close(stream)
                return
            started = time.monotonic()
            received = 0
            try:
                for event in stream:
                    received += 1
                    self._apply(event)
            except KubeError as err:
                if self._stop.is_set():
                    return
                if err.status != 0:
                    raise  # an ERROR event from the server: back off and relist
                self._retry_watch(err)  # a broken connection: re-watch from the same version
                continue
            finally:
                with self._stream_lock:
                    self._stream = None
                _close(stream)
            if time.monotonic() - started > self.backoff.reset_after:
                self.backoff.reset()
            elif received == 0 and time.monotonic() - started < 1.0 and not self._stop.is_set():
                # A stream that ends at once with nothing in it would otherwise be re-opened in a hot loop.
                self._stop.wait(self.backoff.next())

    def _open_watch(self) -> Iterator[dict[str, Any]] | None:
        """A watch from the store's resourceVersion; None (after a backoff) when the connection failed."""
        params = {
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(int(self.min_watch_timeout * (1.0 + self._rng.random()))),
        }
        if self.rtype.field_selector:
            params["fieldSelector"] = self.rtype.field_selector
        try:
            return self.client.watch(self.rtype.path, params, self._loads)
        except KubeError as err:
            if err.status == 410:
                self._gone(err.message)
            if err.status != 0:
                raise
            self._retry_watch(err)
            return None

    def _retry_watch(self, err: KubeError) -> None:
        self.stats.errors += 1
        delay = self.backoff.next()
        logs.warning(
            "Watch failed; re-watching",
            resource=self.rtype.resource,
            err=err.message,
            retryIn=f"{delay:.1f}s",
        )
        self._stop.wait(delay)

    def _gone(self, message: str) -> None:
        self.stats.gone += 1
        logs.info(
            "Watch closed with 410 Gone; relisting",
            1,
            resource=self.rtype.resource,
            resourceVersion=self.resource_version,
            message=message,
        )
        raise _Relist()

    def _apply(self, event: Mapping[str, Any]) -> None:
        """One watch event into the store and the handler."""
        kind, raw = _event_parts(event)
        if kind == "BOOKMARK":
            self.stats.bookmarks += 1
            self.resource_version = _resource_version(raw) or self.resource_version
            return
        if kind == "ERROR":
            code = int(raw.get("code") or 0)
            message = str(raw.get("message") or "")
            if (
                code == 410
                or raw.get("reason") in ("Expired", "Gone")
                or "too old resource version" in message
            ):
                self._gone(message)
            raise KubeError(code, message or "watch ERROR event", str(raw.get("reason") or ""))
        version = _resource_version(raw)
        decoded = self._decode(raw)
        if decoded is None:
            self.resource_version = version or self.resource_version
            return
        key, entry = decoded
        self.stats.events += 1
        if kind == "ADDED" or kind == "MODIFIED":
            previous = self._store.get(key)
            self._store[key] = entry
            if previous is None:
                self._dispatch("add", entry.obj)
            else:
                self._dispatch("update", previous.obj, entry.obj)
        elif kind == "DELETED":
            # The event carries the object's final state, which is what the handler should remove.
            self._store.pop(key, None)
            self._dispatch("delete", entry.obj)
        else:
            logs.warning("Unknown watch event type", resource=self.rtype.resource, type=str(kind))
        self.resource_version = version or self.resource_version

    def _dispatch(self, what: str, *objs: Any) -> None:
        """Call the handler; a failing handler is logged and the reflector goes on."""
        try:
            if what == "add":
                self.handler.on_add(objs[0])
            elif what == "update":
                self.handler.on_update(objs[0], objs[1])
            else:
                self.handler.on_delete(objs[0])
        except Exception as err:
            logs.error("Event handler failed", resource=self.rtype.resource, event=what, err=repr(err))


class InformerSet:
    """The reflectors of one client, started and synced together (an informer factory)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        backoff: Callable[[], Backoff] | None = None,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        watch_list: bool | None = None,
    ) -> None:
        """``watch_list`` as :class:`Reflector`'s (None: the ``WatchListClient`` feature gate)."""
        self.client = client
        self.watch_list = watch_list
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self._backoff = backoff or Backoff
        self.reflectors: dict[str, Reflector] = {}
        self._started = False
        self._monitor: threading.Thread | None = None
        self._stop = threading.Event()
        self._phase_lock = threading.Lock()
        self._caches_logged = False
        self._handlers_logged = False
        self._started_at = 0.0

    def add(
        self,
        rtype: ResourceType,
        handler: EventHandler,
        decode: Decoder | None = None,
        *,
        without_managed_fields: bool = False,
    ) -> Reflector:
        """Register a reflector for ``rtype`` (before :meth:`start`); ``without_managed_fields`` as
        :class:`Reflector`'s: ``decode`` drops them."""
        if rtype.resource in self.reflectors:
            raise ValueError(f"a reflector for {rtype.resource} is already registered")
        reflector = Reflector(
            self.client,
            rtype,
            handler,
            decode,
            page_size=self.page_size,
            backoff=self._backoff(),
            watch_list=self.watch_list,
            min_watch_timeout=self.min_watch_timeout,
            without_managed_fields=without_managed_fields,
        )
        self.reflectors[rtype.resource] = reflector
        return reflector

    def start(self) -> None:
        """Start every reflector, and a thread that logs "Caches are synced" and "Handlers synced"."""
        if self._started:
            return
        self._started = True
        self._started_at = time.monotonic()
        logs.info("Starting informers", resources=",".join(self.reflectors))
        for reflector in self.reflectors.values():
            reflector.start()
        self._monitor = threading.Thread(target=self._log_phases, name="informer-sync", daemon=True)
        self._monitor.start()

    def _log_phases(self) -> None:
        while not self._stop.is_set() and not self._observe_phases():
            self._stop.wait(0.05)

    def _observe_phases(self) -> bool:
        """Log each sync phase once, the first time anyone sees it reached; True once all are.

        Called by the monitor thread and by the readiness check, so a ready /readyz always
        comes after its log lines.
        """
        with self._phase_lock:
            if not self._caches_logged:
                if not self.has_synced():
                    return False
                self._caches_logged = True
                logs.info(
                    "Caches are synced",
                    resources=",".join(self.reflectors),
                    took=f"{time.monotonic() - self._started_at:.3f}s",
                )
            if not self._handlers_logged:
                if not self.handlers_synced():
                    return False
                self._handlers_logged = True
                logs.info("Handlers synced", took=f"{time.monotonic() - self._started_at:.3f}s")
            return True

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every reflector."""
        self._stop.set()
        for reflector in self.reflectors.values():
            reflector.stop(timeout=0)  # signal them all first, so they wind down in parallel
        for reflector in self.reflectors.values():
            reflector.stop(timeout)

    def has_synced(self) -> bool:
        """Whether every reflector's first list is in its store."""
        return all(r.has_synced() for r in self.reflectors.values())

    def handlers_synced(self) -> bool:
        """Whether every handler has received its initial objects."""
        return all(r.handlers_synced() for r in self.reflectors.values())

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Block until :meth:`has_synced` (False on timeout)."""
        return _wait_all((r.wait_for_sync for r in self.reflectors.values()), timeout)

    def wait_for_handlers_sync(self, timeout: float | None = None) -> bool:
        """Block until :meth:`handlers_synced` (False on timeout)."""
        return _wait_all((r.wait_for_handlers_sync for r in self.reflectors.values()), timeout)

    def handler_sync_check(self) -> str | None:
        """A /readyz check (``sched-handler-sync``): None once the handlers have synced."""
        if self._started and self._observe_phases():
            return None
        waiting = [name for name, r in self.reflectors.items() if not r.handlers_synced()]
        return f"waiting for handlers to sync: {', '.join(waiting)}"


class _CollectorPause:
    """The cyclic collector paused while any reflector lists (decoded documents hold no cycles:
    nothing leaks), and back on when the last one is done, unless it was off before the first.

    What the lists built is the informers' stores and the cache, which live as long as the process:
    before the collector is back on, everything alive is frozen (``gc.freeze()``, what
    :mod:`app.gcpolicy` does once synced anyway), or the first allocation after would set off a
    full collection walking millions of new objects to free none, seconds before the handlers
    count as synced."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._was_enabled:
                    gc.freeze()
                    gc.enable()


_COLLECTOR = _CollectorPause()


class _PageFetch:
    """One list page requested on a thread of its own, so that the caller decodes the previous page
    while the API server encodes this one."""

    def __init__(self, fetch: Callable[[str], dict[str, Any]], token: str, resource: str) -> None:
        self.token = token
        self._fetch = fetch
        self._done = threading.Event()
        self._page: dict[str, Any] | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, name=f"list-{resource}", daemon=True).start()

    def _run(self) -> None:
        try:
            self._page = self._fetch(self.token)
        except BaseException as err:  # handed to the caller, which decides (relist, back off)
            self._error = err
        finally:
            self._done.set()

    def result(self) -> dict[str, Any]:
        """The page, or the request's error raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._page is not None
        return self._page


def _close(stream: Iterator[dict[str, Any]]) -> None:
    """Close a watch stream (a :class:`WatchStream`, or any iterator a test hands in)."""
    close = getattr(stream, "close", None)
    if close is not None:
        close()


def _wait_all(waits: Iterable[Callable[[float | None], bool]], timeout: float | None) -> bool:
    deadline = None if timeout is None else time.monotonic() + timeout
    for wait in waits:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not wait(remaining):
            return False
    return True
