"""Leader election on a ``coordination.k8s.io/v1`` Lease, ported from client-go's ``tools/leaderelection``.

The official Python client's elector is ConfigMap-only, so this is a port of client-go v0.36.3
(``leaderelection.go``, ``healthzadaptor.go``) on :class:`~app.kube.leaselock.LeaseLock`:

- **Acquire**: try every ``retry_period`` (jittered by 1.2, as ``wait.JitterUntil``) until the Lease is
  ours: created when missing, taken over when free (empty holder) or expired.
- **Expiry is measured on our clock only.** A record's timestamps come from other hosts' clocks and are
  never compared with ours: a Lease held by someone else counts as expired when ``leaseDurationSeconds``
  have passed, on our monotonic clock, since we last saw its record *change*. This tolerates any clock
  skew between candidates.
- **Renew**: every ``retry_period``; a round that has not succeeded within ``renew_deadline`` loses
  leadership ("timed out waiting for the condition"). The leader first updates optimistically from the
  record it last wrote; a 409 Conflict falls back to a read and a fresh decision.
- **Release** (``release_on_cancel``): when the renew loop ends, the holder writes an empty holder with a
  one-second duration, so a successor need not wait out the lease.
- **Coordinated** (``coordinated=True``, the CoordinatedLeaderElection feature): never create or take the
  Lease; wait until the API server's leader-election controller writes our identity as its holder
  (having elected our :class:`~app.kube.leasecandidate.LeaseCandidate`), then only renew it, and stop
  renewing once the controller marks the term as ending (``preferredHolder`` set).

Callbacks run on the elector's thread, so they must return promptly (start long work elsewhere).
``on_stopped_leading`` is always called when :meth:`LeaderElector.run` returns, even if this instance
never led, as in client-go.
"""

from __future__ import annotations

import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, replace

from app import logs
from app.kube.client import KubeClient, KubeError
from app.kube.leaselock import LeaderElectionRecord, LeaseLock
from app.kube.times import format_micro_time

__all__ = [
    "HEALTHZ_CHECK_NAME",
    "JITTER_FACTOR",
    "WATCHDOG_TIMEOUT",
    "LeaderElectionConfig",
    "LeaderElector",
    "default_identity",
]

#: client-go's ``JitterFactor``: retries while acquiring wait ``retry_period * (1 + 1.2 * rand)``.
JITTER_FACTOR = 1.2
#: kube-scheduler's ``NewLeaderHealthzAdaptor(20 * time.Second)``.
WATCHDOG_TIMEOUT = 20.0
#: The name of the watchdog in ``/healthz`` and ``/readyz`` listings (client-go's ``HealthzAdaptor.Name``).
HEALTHZ_CHECK_NAME = "leaderElection"
_RENEW_TIMEOUT_MESSAGE = "timed out waiting for the condition"


def default_identity() -> str:
    """``hostname + "_" + uuid``, unique even for two replicas on one host (kube-scheduler's identity)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class LeaderElectionConfig:
    """What to elect on and what to do about it; durations in seconds (client-go's defaults)."""

    lock_namespace: str
    lock_name: str
    identity: str
    _: KW_ONLY
    on_started_leading: Callable[[], None]
    on_stopped_leading: Callable[[], None]
    on_new_leader: Callable[[str], None] | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True
    coordinated: bool = False


def _validate(config: LeaderElectionConfig) -> None:
    """client-go's ``NewLeaderElector`` checks, plus what the Lease API itself would reject."""
    if config.lease_duration <= config.renew_deadline:
        raise ValueError("leaseDuration must be greater than renewDeadline")
    if config.renew_deadline <= JITTER_FACTOR * config.retry_period:
        raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
    for name, value in (
        ("leaseDuration", config.lease_duration),
        ("renewDeadline", config.renew_deadline),
        ("retryPeriod", config.retry_period),
    ):
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if config.lease_duration < 1:
        # The Lease stores whole seconds and the API server rejects leaseDurationSeconds 0.
        raise ValueError(f"leaseDuration must be at least 1s, got {config.lease_duration}s")
    if not config.identity:
        raise ValueError("Lock identity is empty")
    if not config.lock_namespace or not config.lock_name:
        raise ValueError("Lock namespace and name must not be empty")
    if not callable(config.on_started_leading):
        raise ValueError("OnStartedLeading callback must not be nil")
    if not callable(config.on_stopped_leading):
        raise ValueError("OnStoppedLeading callback must not be nil")


class LeaderElector:
    """One candidate in the election on one Lease.

    ``clock`` (monotonic seconds) measures expiry and the watchdog; ``wall_clock`` (epoch nanoseconds) only
    stamps the times written into the Lease. Both are injectable for tests.
    """

    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], int] = time.time_ns,
        rng: random.Random | None = None,
    ) -> None:
        _validate(config)
        self.client = client
        self.config = config
        self.lock = LeaseLock(client, config.lock_namespace, config.lock_name)
        self._clock = clock
        self._wall_clock = wall_clock
        self._rng = rng or random.Random()
        self._mutex = threading.Lock()
        self._observed_record = LeaderElectionRecord()
        self._observed_time = -math.inf  # never observed: any lease we have not seen is not ours to trust
        # The record as last read from the server (client-go's observedRawRecord): only a change in it
        # restarts the expiry countdown of someone else's lease.
        self._observed_raw: LeaderElectionRecord | None = None
        self._reported_leader = ""

    # --- state ---------------------------------------------------------------------------------------

    @property
    def observed_record(self) -> LeaderElectionRecord:
        """The record last read or written."""
        with self._mutex:
            return self._observed_record

    @property
    def observed_time(self) -> float:
        """When (on ``clock``) :attr:`observed_record` was last set; ``-inf`` before any."""
        with self._mutex:
            return self._observed_time

    @property
    def transitions(self) -> int:
        """``leaseTransitions`` of the observed record: how many times the Lease changed hands."""
        return self.observed_record.leader_transitions

    def get_leader(self) -> str:
        """The identity of the last observed leader ("" when none has been seen or the lease is free)."""
        return self.observed_record.holder_identity

    def is_leader(self) -> bool:
        """Whether the last observed leader is this instance."""
        return self.observed_record.holder_identity == self.config.identity

    def describe(self) -> str:
        """``namespace/name`` of the Lease."""
        return self.lock.describe()

    def check(self, timeout: float = WATCHDOG_TIMEOUT) -> str | None:
        """The leader-election watchdog (client-go's ``HealthzAdaptor.Check``): None when healthy.

        Only a leader can fail it: when it has not renewed for longer than ``lease_duration + timeout``
        it should have stepped down already (a deadlock, say), and a failing /healthz gets it restarted.
        """
        if not self.is_leader():
            return None
        if self._clock() - self.observed_time > self.config.lease_duration + timeout:
            return f"failed election to renew leadership on lease {self.describe()}"
        return None

    # --- the loop ------------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> threading.Thread:
        """:meth:`run` in a daemon thread, which is returned."""
        thread = threading.Thread(target=self.run, args=(stop,), name="leader-elector", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Acquire, lead until ``stop`` is set or renewal fails, release, and return.

        ``on_started_leading`` is called once the Lease is ours, ``on_stopped_leading`` always on the way
        out. API errors are logged and retried, never raised.
        """
        try:
            if not self._acquire(stop):
                return
            if not self._call("OnStartedLeading", self.config.on_started_leading):
                self.release()  # nothing guarded by the Lease started: hand it on at once
                return
            self._renew(stop)
        finally:
            self._call("OnStoppedLeading", self.config.on_stopped_leading)

    def _acquire(self, stop: threading.Event) -> bool:
        """Try until the Lease is ours (True) or ``stop`` is set (False)."""
        desc = self.describe()
        logs.info("Attempting to acquire leader lease...", lock=desc)
        while not stop.is_set():
            succeeded = self._try(self.config.renew_deadline)
            self._maybe_report_transition()
            if succeeded:
                logs.info("Successfully acquired lease", lock=desc)
                return True
            logs.info("Failed to acquire lease", 4, lock=desc)
            period = self.config.retry_period
            stop.wait(period + self._rng.random() * JITTER_FACTOR * period)
        return False

    def _renew(self, stop: threading.Event) -> None:
        """Renew every ``retry_period`` until a round fails for ``renew_deadline`` or ``stop`` is set,
        then release the Lease when configured to."""
        desc = self.describe()
        while not stop.is_set():
            renewed = self._renew_round(stop)
            self._maybe_report_transition()
            if renewed:
                logs.info("Successfully renewed lease", 5, lock=desc)
                stop.wait(self.config.retry_period)
                continue
            if not stop.is_set():
                logs.info("Failed to renew lease", lock=desc, err=_RENEW_TIMEOUT_MESSAGE)
                logs.error("Leaderelection lost", lock=desc)
            break
        if self.config.release_on_cancel:
            self.release()

    def _renew_round(self, stop: threading.Event) -> bool:
        """One ``wait.PollUntilContextTimeout``: try now and every ``retry_period`` until ``renew_deadline``."""
        deadline = self._clock() + self.config.renew_deadline
        while not stop.is_set():
            remaining = deadline - self._clock()
            if remaining <= 0:
                return False
            if self._try(remaining):
                return True
            remaining = deadline - self._clock()
            if remaining <= 0:
                return False
            stop.wait(min(self.config.retry_period, remaining))
        return False

    def _try(self, timeout: float) -> bool:
        if self.config.coordinated:
            return self.try_coordinated_renew(timeout)
        return self.try_acquire_or_renew(timeout)

    # --- one step ------------------------------------------------------------------------------------

    def _own_record(self) -> LeaderElectionRecord:
        """The record this instance writes when it holds the Lease, stamped now."""
        now = format_micro_time(self._wall_clock())
        return LeaderElectionRecord(
            holder_identity=self.config.identity,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=now,
            renew_time=now,
        )

    def _read(self, timeout: float) -> LeaderElectionRecord:
        """Get the Lease; a record different from the last one read restarts its expiry countdown."""
        current = self.lock.get(timeout)
        if current != self._observed_raw:
            self._set_observed(current)
            self._observed_raw = current
        return current

    def try_acquire_or_renew(self, timeout: float | None = None) -> bool:
        """One attempt (client-go's ``tryAcquireOrRenew``): True when the Lease is ours afterwards.

        ``timeout`` bounds each API request (default ``renew_deadline``). Failures (API errors, a valid lease held by someone else,
        losing a create or update race) return False and are logged.
        """
        timeout = self.config.renew_deadline if timeout is None else timeout
        now = self._clock()
        record = self._own_record()
        desc = self.describe()

        # 1. Fast path: the leader updates from what it last wrote, without reading first.
        if self.is_leader() and self._lease_valid(now):
            old = self.observed_record
            record = replace(record, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions)
            try:
                self.lock.update(record, timeout)
                self._set_observed(record)
                return True
            except KubeError as err:
                logs.info(
                    "Failed to update lease optimistically, falling back to slow path",
                    2,
                    lock=desc,
                    err=str(err),
                )

        # 2. Read the Lease, or create it.
        try:
            old = self._read(timeout)
        except KubeError as err:
            if err.status != 404:
                logs.error("Error retrieving lease lock", lock=desc, err=str(err))
                return False
            return self._commit(self.lock.create, record, timeout, "Error initially creating lease lock")

        # 3. Held by someone else and not yet expired on our clock: wait.
        if old.holder_identity and self._lease_valid(now) and not self.is_leader():
            logs.info("Lease is held by and has not yet expired", 4, lock=desc, holder=old.holder_identity)
            return False

        # 4. Renew ours, or take over a free or expired one.
        if self.is_leader():
            record = replace(record, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions)
        else:
            record = replace(record, leader_transitions=old.leader_transitions + 1)
        return self._commit(self.lock.update, record, timeout, "Failed to update lease")

    def try_coordinated_renew(self, timeout: float | None = None) -> bool:
        """One attempt in coordinated mode (client-go's ``tryCoordinatedRenew``): renew the Lease only
        when the API server's election made us its holder and has not ended our term."""
        timeout = self.config.renew_deadline if timeout is None else timeout
        now = self._clock()
        record = self._own_record()
        desc = self.describe()
        try:
            old = self._read(timeout)
        except KubeError as err:
            if err.status != 404:
                logs.error("Error retrieving lease lock", lock=desc, err=str(err))
            else:
                logs.info("Lease lock not found", lock=desc, err=str(err))
            return False
        if self.observed_time + old.lease_duration_seconds < now:
            logs.info("Lease has expired", lock=desc)
            return False
        if not self.is_leader():
            logs.info("Lease is held and has not yet expired", 6, lock=desc, holder=old.holder_identity)
            return False
        if old.preferred_holder:
            # The controller elected someone better: let the lease run out rather than hand it over
            # while work guarded by it may still be running.
            logs.info("Lease is marked as 'end of term'", 4, lock=desc, preferredHolder=old.preferred_holder)
            return False
        record = replace(
            record,
            acquire_time=old.acquire_time,
            leader_transitions=old.leader_transitions,
            strategy=old.strategy,
        )
        return self._commit(self.lock.update, record, timeout, "Failed to update lock")

    def release(self) -> bool:
        """Give the Lease up if we hold it (empty holder, duration 1s, transitions kept); True when we do
        not hold it afterwards."""
        desc = self.describe()
        try:
            old = self.lock.get(self.config.renew_deadline)
        except KubeError as err:
            if err.status == 404:
                logs.info("lease lock not found", lock=desc)
            else:
                logs.error("error retrieving resource lock", lock=desc, err=str(err))
            return False
        if not self.is_leader():
            return True
        now = format_micro_time(self._wall_clock())
        record = LeaderElectionRecord(
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            leader_transitions=old.leader_transitions,
        )
        released = self._commit(
            self.lock.update, record, self.config.renew_deadline, "Failed to release lease"
        )
        if released:
            logs.info("Released lease", 2, lock=desc)
        return released

    # --- helpers -------------------------------------------------------------------------------------

    def _commit(
        self,
        write: Callable[[LeaderElectionRecord, float], None],
        record: LeaderElectionRecord,
        timeout: float,
        failure: str,
    ) -> bool:
        """Write ``record`` (create or update); on success it is what we observe from now on."""
        try:
            write(record, timeout)
        except KubeError as err:
            logs.error(failure, lock=self.describe(), err=str(err))
            return False
        self._set_observed(record)
        return True

    def _lease_valid(self, now: float) -> bool:
        with self._mutex:
            return self._observed_time + self._observed_record.lease_duration_seconds > now

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        with self._mutex:
            self._observed_record = record
            self._observed_time = self._clock()

    def _maybe_report_transition(self) -> None:
        holder = self.get_leader()
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if holder:
            logs.info("New leader elected", identity=holder, lock=self.describe())
        if self.config.on_new_leader is not None:
            self._call("OnNewLeader", self.config.on_new_leader, holder)

    def _call(self, name: str, callback: Callable[..., None], *args: str) -> bool:
        """Run a callback; one that raises is logged (False), never allowed to kill the elector."""
        try:
            callback(*args)
            return True
        except Exception as err:
            logs.error("Leader election callback failed", callback=name, lock=self.describe(), err=repr(err))
            return False
