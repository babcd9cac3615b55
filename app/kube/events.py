"""events.k8s.io/v1 Events, written as client-go's ``tools/events`` broadcaster writes them.

A :class:`EventRecorder` (one per profile, named after its schedulerName) builds the Event on the
caller's thread and hands it to the :class:`EventBroadcaster`'s bounded queue; it never blocks and
never raises: when the queue is full the event is dropped (``watch.DropIfChannelFull`` in
client-go) and counted. One daemon thread drains the queue in batches and keeps the series; a pool
of writer threads writes to the API server, as client-go's ``recordToSink`` starts a goroutine per
event. Like client-go's ``tools/events`` broadcaster it has no rate limiter of its own: the events
client's limiter (``clientConnection.qps``/``burst``) is the only one, so a burst of scheduled pods
gets every ``Scheduled`` event written, later rather than never. Events queued or being written are
bounded (``queue_size``), where client-go's goroutines are not.

Isomorphic events (same type, action, reason, reporting controller and instance, regarding and
related objects: the note does not count) seen within six minutes become one Event with a series,
as ``recordToSink`` does: the first is created, the second PATCHes ``series.count: 2``, later ones
only count in memory. Every six minutes a series not observed for six minutes is written a last
time with its final count and forgotten; every thirty minutes all series are re-written (an Event
lives for an hour). :meth:`EventBroadcaster.shutdown` also writes the counts that changed since
their last write, so that nothing observed is lost on exit (client-go loses them).

Failed writes are retried later (twelve tries, ten seconds apart, with jitter, as
``attemptRecording``), without holding up other events; a write the server rejects is dropped and
logged, never fatal. Unlike client-go, whose REST client retries 429 and 5xx answers internally,
those answers are retried here.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import random
import re
import socket
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import orjson

from app import logs
from app.kube.client import KubeClient, KubeError
from app.kube.objectref import ObjectRef
from app.kube.times import format_micro_time

__all__ = [
    "NOTE_LENGTH_LIMIT",
    "TYPE_NORMAL",
    "TYPE_WARNING",
    "EventBroadcaster",
    "EventRecorder",
    "ObjectRef",
    "truncate_note",
]

TYPE_NORMAL = "Normal"
TYPE_WARNING = "Warning"
NOTE_LENGTH_LIMIT = 1024  # events.k8s.io validation: at most 1024 bytes
MAX_TRIES_PER_EVENT = 12
QUEUE_SIZE = 10_000
"""Events queued or being written at most: a burst of 10,000 scheduled pods loses no event, at
about 1.5 KB per queued event."""
WRITERS = 16
"""Writer threads: enough concurrent writes that the client's QPS, not the API server's latency,
limits how fast events are written."""
RETRY_INTERVAL = 10.0  # seconds between tries of one event (client-go's defaultSleepDuration)
SERIES_FINISH_NANOS = 6 * 60 * 1_000_000_000
SERIES_REFRESH_NANOS = 30 * 60 * 1_000_000_000

_STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_REQUEST_TIMEOUT = 10.0
_TICK = 1.0  # the sink wakes at least this often to finish and refresh series
_BATCH = 100
GATHER_SECONDS = 0.02
"""After the first event of a burst wakes the sink, it lets the burst gather this long and takes
what came in one batch: one wake of the sink per batch instead of one per event (a scheduled
pod's Scheduled event). Events are written at most this much later; what is written is unchanged.
Each new event still goes to its own writer thread, so that a slow API server is written to
concurrently, as client-go's goroutine per event is (a writer per batch of eight was tried: under
load the serial writes made Events lag the pods by seconds)."""
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_SUBDOMAIN_MAX = 253
_HTTP_NOT_FOUND = 404
_HTTP_CONFLICT = 409
_HTTP_TOO_MANY_REQUESTS = 429
_HTTP_SERVER_ERROR = 500

_EventKey = tuple[str, str, str, str, str, ObjectRef, ObjectRef | None]


def truncate_note(note: str) -> str:
    """A note within the API's 1024-byte limit, cut on a character boundary with a ``" ..."`` suffix."""
    data = note.encode()
    if len(data) <= NOTE_LENGTH_LIMIT:
        return note
    return data[: NOTE_LENGTH_LIMIT - 4].decode(errors="ignore") + " ..."


def event_name(regarding_name: str, unix_nanos: int) -> str:
    """``GenerateEventName``: ``<name>.<hex nanos>``, or a UUID when that is not a valid name."""
    name = f"{regarding_name}.{unix_nanos:x}"
    if len(name) <= _DNS_SUBDOMAIN_MAX and _DNS_SUBDOMAIN.fullmatch(name):
        return name
    return str(uuid.uuid4())


@dataclass(slots=True)
class _Occurrence:
    """One eventf call, queued for the sink."""

    key: _EventKey
    event: dict[str, Any]
    unix_nanos: int


@dataclass(slots=True)
class _Entry:
    """An event the sink remembers, to make a series of its isomorphic successors."""

    event: dict[str, Any]
    first_nanos: int
    last_nanos: int
    count: int = 1
    written_count: int = 0
    writer: int = 0  # the writer thread that writes it, so that its writes keep their order

    def series(self, count: int) -> dict[str, Any]:
        return {"count": count, "lastObservedTime": format_micro_time(self.last_nanos)}


@dataclass(order=True, slots=True)
class _Retry:
    due: float
    seq: int
    entry: _Entry = field(compare=False)
    count: int = field(compare=False)
    tries: int = field(compare=False)


class EventRecorder:
    """Records events of one reporting controller (a profile's schedulerName)."""

    def __init__(
        self, broadcaster: EventBroadcaster, reporting_controller: str, reporting_instance: str
    ) -> None:
        self.broadcaster = broadcaster
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance

    def eventf(
        self,
        regarding: object,
        related: object | None,
        type: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        """Record an event about ``regarding`` (a raw object, a parsed Pod/Node or an ObjectRef).

        Never blocks, never raises: an event that cannot be referenced or has an unknown type is
        logged and dropped, as is one that finds the queue full.
        """
        ref = ObjectRef.of(regarding)
        if ref is None:
            logs.error("Could not construct reference, will not report event", reason=reason, note=note)
            return
        related_ref = None
        if related is not None:
            related_ref = ObjectRef.of(related)
            if related_ref is None:
                logs.info("Could not construct reference of the related object", 9, reason=reason)
        if type not in (TYPE_NORMAL, TYPE_WARNING):
            logs.error("Unsupported event type", eventType=type)
            return
        now = self.broadcaster.clock()
        event: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": event_name(ref.name, now), "namespace": ref.namespace or "default"},
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": ref.to_dict(),
            "note": truncate_note(note),
            "type": type,
        }
        if related_ref is not None:
            event["related"] = related_ref.to_dict()
        key = (type, action, reason, self.reporting_controller, self.reporting_instance, ref, related_ref)
        self.broadcaster.enqueue(_Occurrence(key, event, now))


class EventBroadcaster:
    """The queue and sink thread behind every :class:`EventRecorder` (``eventBroadcasterImpl``).

    ``reporting_instance`` is written verbatim by every recorder; when None, each recorder uses
    ``<reporting controller>-<hostname>``, as client-go's ``NewRecorder`` does. ``clock`` gives
    wall-clock nanoseconds (event times, names, series windows). Writes are limited only by the
    client's own limiter and run on ``writers`` threads; ``queue_size`` bounds the events queued or
    being written, ``cache_size`` the events remembered for series.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        component: str = "berth-scheduler",
        reporting_instance: str | None = None,
        queue_size: int = QUEUE_SIZE,
        writers: int = WRITERS,
        clock: Callable[[], int] = time.time_ns,
        max_tries: int = MAX_TRIES_PER_EVENT,
        retry_interval: float = RETRY_INTERVAL,
        cache_size: int = 10_000,
        gather: float = GATHER_SECONDS,
    ) -> None:
        self.client = client
        self.component = component
        self.reporting_instance = reporting_instance
        self.queue_size = queue_size
        self.cache_size = max(1, cache_size)
        self.clock = clock
        self.max_tries = max(1, max_tries)
        self.retry_interval = retry_interval
        self.gather = gather
        self._gathering = False  # the sink is letting a burst gather: enqueue need not wake it
        self.dropped = 0  # events never queued: the queue was full, or the broadcaster shut down
        self.failed = 0  # writes given up: rejected, out of tries, or out of time at shutdown
        self._queue: deque[_Occurrence] = deque()
        self._cond = threading.Condition()
        self._cache: OrderedDict[_EventKey, _Entry] = OrderedDict()
        self._retries: list[_Retry] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self.writers = max(1, writers)
        # One queue per writer thread; an event always goes to the same one, so its creation is
        # written before its series.
        self._jobs: list[queue.SimpleQueue[tuple[_Entry, int, int] | None]] = [
            queue.SimpleQueue() for _ in range(self.writers)
        ]
        self._writer_threads: list[threading.Thread] = []
        self._writing = 0  # writes handed to the writer threads and not finished yet
        self._stopping = False
        self._deadline = 0.0
        now = clock()
        self._next_finish = now + SERIES_FINISH_NANOS
        self._next_refresh = now + SERIES_REFRESH_NANOS

    # --- recorders and the queue ------------------------------------------------------------

    def recorder(self, reporting_controller: str | None = None) -> EventRecorder:
        """A recorder for ``reporting_controller`` (default: the component name)."""
        controller = reporting_controller or self.component
        instance = self.reporting_instance or f"{controller}-{socket.gethostname()}"
        return EventRecorder(self, controller, instance)

    def enqueue(self, occurrence: _Occurrence) -> None:
        """Queue an event for the sink, or drop it when the queue is full or shut down."""
        with self._cond:
            full = len(self._queue) + self._writing >= self.queue_size
            why = "shut down" if self._stopping else "full" if full else ""
            if why:
                self.dropped += 1
            else:
                self._queue.append(occurrence)
                if not self._gathering:
                    self._cond.notify()
        if why:
            logs.info(f"Event dropped: the event queue is {why}", 4, reason=occurrence.event["reason"])

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the sink and writer threads (daemons); events recorded before are written then."""
        if self._thread is not None:
            return
        self._writer_threads = [
            threading.Thread(
                target=self._write_jobs, args=(jobs,), name=f"{self.component}-event-writer-{i}", daemon=True
            )
            for i, jobs in enumerate(self._jobs)
        ]
        for writer in self._writer_threads:
            writer.start()
        self._thread = threading.Thread(target=self._run, name=f"{self.component}-events", daemon=True)
        self._thread.start()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Write what is queued and the series counts not yet written, for at most ``timeout``
        seconds, then stop the sink; later events are dropped."""
        with self._cond:
            self._stopping = True
            self._deadline = time.monotonic() + timeout
            self._cond.notify()
        thread = self._thread
        if thread is None:
            with self._cond:
                self.failed += len(self._queue)
                self._queue.clear()
            return
        thread.join(timeout + _TICK)
        if thread.is_alive():
            logs.warning("Event broadcaster did not finish writing events in time", timeout=timeout)

    # --- the sink thread ------------------------------------------------------------------------

    def _run(self) -> None:
        done = False
        while not done:
            try:
                done = self._round()
            except Exception as err:  # a bug here must not silence every later event
                logs.error("Unexpected error in the event sink", err=repr(err))
        for jobs in self._jobs:
            jobs.put(None)
        for writer in self._writer_threads:
            writer.join()
        self._flush_series()
        logs.info("Event broadcaster stopped", 2, dropped=self.dropped, failed=self.failed)

    def _round(self) -> bool:
        """One batch, the retries due and the series upkeep; True once stopped and drained."""
        batch, stopping = self._next_batch()
        for occurrence in batch:
            self._observe(occurrence)
        self._retry_due(stopping)
        if not stopping:
            self._housekeeping()
            return False
        with self._cond:
            if self._writing and not self._queue:
                self._cond.wait(_TICK)  # a writer's end notifies: its retry may still be due
            return not self._queue and not self._writing and not self._retries

    def _next_batch(self) -> tuple[list[_Occurrence], bool]:
        with self._cond:
            if not self._queue and not self._stopping:
                wait = _TICK
                if self._retries:
                    wait = min(wait, max(0.0, self._retries[0].due - time.monotonic()))
                self._cond.wait(wait)
            if self._queue and not self._stopping and self.gather > 0:
                self._gathering = True
                self._cond.wait(self.gather)  # only shutdown or a writer's retry ends it early
                self._gathering = False
            count = min(len(self._queue), _BATCH)
            return [self._queue.popleft() for _ in range(count)], self._stopping

    def _out_of_time(self) -> bool:
        return self._stopping and time.monotonic() >= self._deadline

    def _observe(self, occurrence: _Occurrence) -> None:
        """``recordToSink``: a new event is created, its first repeat starts the series."""
        entry = self._cache.get(occurrence.key)
        if entry is None:
            writer = next(self._seq) % self.writers
            entry = _Entry(occurrence.event, occurrence.unix_nanos, occurrence.unix_nanos, writer=writer)
            self._cache[occurrence.key] = entry
            if len(self._cache) > self.cache_size:
                self._evict_oldest()
            self._attempt(entry, 1, 0)
            return
        entry.count += 1
        entry.last_nanos = max(entry.last_nanos, occurrence.unix_nanos)
        if entry.count == 2:
            self._attempt(entry, 2, 0)

    def _attempt(self, entry: _Entry, count: int, tries: int) -> None:
        """Hand ``entry`` to a writer thread (``recordToSink``'s goroutine), as seen now: its first
        repeat is written with a count of 2 however many repeats follow before the write."""
        with self._cond:
            self._writing += 1
        self._jobs[entry.writer].put((entry, count, tries))

    def _write_jobs(self, jobs: queue.SimpleQueue[tuple[_Entry, int, int] | None]) -> None:
        """A writer thread: write what the sink hands over until it is told to stop (None)."""
        while (job := jobs.get()) is not None:
            self._attempt_now(*job)

    def _attempt_now(self, entry: _Entry, count: int, tries: int) -> None:
        """Write ``entry`` with ``count``; on a retriable failure schedule another try
        (``attemptRecording``)."""
        try:
            retry = self._write(entry, count)
        except Exception as err:  # a bug here must not leave the write counted as in flight
            logs.error("Unexpected error writing an event", err=repr(err))
            retry = False
        with self._cond:
            self._writing -= 1
            if retry:
                self._schedule_retry(entry, count, tries + 1)
            # The sink waits for a write's end only to time a retry or to finish shutting down;
            # waking it after every successful write cost a thread switch per event.
            if retry or self._stopping:
                self._cond.notify()

    def _schedule_retry(self, entry: _Entry, count: int, tries: int) -> None:
        """Another try of ``entry`` in ``retry_interval`` (jittered), unless it is out of tries (the
        caller holds the lock)."""
        if tries >= self.max_tries or self._stopping or len(self._retries) >= self.queue_size:
            self.failed += 1
            if self._stopping:
                why = "shutting down"
            elif tries >= self.max_tries:
                why = "retry limit exceeded"
            else:
                why = "too many events waiting for a retry"
            logs.error(f"Unable to write event ({why}!)", event=entry.event["metadata"]["name"])
            return
        delay = self.retry_interval * (1 + 0.25 * random.random())
        heapq.heappush(self._retries, _Retry(time.monotonic() + delay, next(self._seq), entry, count, tries))

    def _retry_due(self, stopping: bool) -> None:
        """Retry the writes that are due; when stopping, every pending one gets its last try now."""
        now = time.monotonic()
        due = []
        with self._cond:
            while self._retries and (stopping or self._retries[0].due <= now):
                due.append(heapq.heappop(self._retries))
        for retry in due:
            self._attempt(retry.entry, retry.count, retry.tries)

    def _housekeeping(self) -> None:
        now = self.clock()
        if now >= self._next_finish:
            self._next_finish = now + SERIES_FINISH_NANOS
            self._finish_series(now)
        if now >= self._next_refresh:
            self._next_refresh = now + SERIES_REFRESH_NANOS
            for entry in self._cache.values():
                if entry.count > 1:
                    self._write(entry)

    def _finish_series(self, now: int) -> None:
        """``finishSeries``: write a series idle for six minutes a last time and forget it; forget
        single events older than six minutes."""
        for key, entry in list(self._cache.items()):
            if entry.count > 1:
                if entry.last_nanos >= now - SERIES_FINISH_NANOS:
                    continue
                if entry.written_count != entry.count and self._write(entry):
                    continue  # keep it: the next round tries again
            elif entry.first_nanos >= now - SERIES_FINISH_NANOS:
                continue
            del self._cache[key]

    def _evict_oldest(self) -> None:
        """Forget the oldest event (client-go's cache is unbounded; berth's is not, since thousands of
        pods a minute would each keep an Event for six minutes). Its unwritten count is written first;
        a later isomorphic event starts a new Event."""
        _, entry = self._cache.popitem(last=False)
        if entry.count > 1 and entry.written_count != entry.count:
            self._write(entry)

    def _flush_series(self) -> None:
        for entry in self._cache.values():
            if entry.count > 1 and entry.written_count != entry.count and not self._out_of_time():
                self._write(entry)

    # --- writing ------------------------------------------------------------------------------

    def _write(self, entry: _Entry, count: int | None = None) -> bool:
        """``recordEvent``: PATCH the series of a repeated event (creating it if it is gone), else
        POST the event. Returns whether the write should be retried."""
        if self._out_of_time():
            self._count_failure()
            return False
        meta = entry.event["metadata"]
        namespace = quote(meta["namespace"], safe="")
        collection = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        count = entry.count if count is None else count
        body = entry.event
        try:
            if count > 1:
                series = {"series": entry.series(count)}
                status, data = self.client.request(
                    "PATCH",
                    f"{collection}/{quote(meta['name'], safe='')}",
                    body=series,
                    content_type=_STRATEGIC_MERGE_PATCH,
                    timeout=_REQUEST_TIMEOUT,
                )
                if status != _HTTP_NOT_FOUND:
                    return self._outcome(entry, count, status, data)
                body = {**entry.event, **series}
            status, data = self.client.request("POST", collection, body=body, timeout=_REQUEST_TIMEOUT)
        except KubeError as err:
            logs.error("Unable to write event (may retry after sleeping)", err=err.message)
            return True
        return self._outcome(entry, count, status, data)

    def _outcome(self, entry: _Entry, count: int, status: int, data: bytes) -> bool:
        if 200 <= status < 300:
            entry.written_count = max(entry.written_count, count)
            return False
        err = KubeError.from_response(status, data)
        if status == _HTTP_TOO_MANY_REQUESTS or status >= _HTTP_SERVER_ERROR:
            logs.error("Unable to write event (may retry after sleeping)", err=err.message)
            return True
        if status == _HTTP_CONFLICT and err.reason == "AlreadyExists":
            if count > 1:
                return True  # the series' Event is being created by an earlier try: patch it later
            logs.info("Server rejected event (will not retry!)", 5, event=_summary(entry), err=err.message)
        else:
            logs.error("Server rejected event (will not retry!)", event=_summary(entry), err=err.message)
        self._count_failure()
        return False

    def _count_failure(self) -> None:
        with self._cond:  # writer threads count too (the condition's lock is re-entrant)
            self.failed += 1


def _summary(entry: _Entry) -> str:
    return orjson.dumps(entry.event).decode()[:500]
