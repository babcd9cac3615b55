"""Run of ``berth run``: start what Setup built, in kube-scheduler's order, and stop it cleanly.

Order (``cmd/kube-scheduler/app/server.go`` Run):

1. the event broadcaster's sink starts first and is flushed last;
2. the HTTP servers start (health, metrics, configz, debug), behind the caller's handler chain;
3. informers start and sync in three logged phases ("Starting informers", "Caches are synced",
   "Handlers synced"), unless ``delayCacheUntilActive`` defers them until leadership;
4. leader election (when enabled): ``on_started_leading`` starts the scheduling loop;
   ``on_stopped_leading`` ends the process, 0 when a shutdown was asked for, 1 when the lease was
   lost ("Leaderelection lost");
5. without leader election the loop starts at once.

Shutdown (the first SIGTERM/SIGINT sets ``stop``): stop taking pods and let in-flight bindings
finish (bounded), release the lease, stop informers, stop the servers (two-phase), flush events.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from app import __version__, gcpolicy, logs
from app.kube.leaderelection import LeaderElectionConfig, LeaderElector
from app.server.health import Check
from app.standalone import stats
from app.standalone.endpoints import build_app
from app.standalone.setup import Components

__all__ = ["EXIT_LEASE_LOST", "Runner", "Server"]

EXIT_LEASE_LOST = 1
SYNC_POLL = 0.1
BINDING_GRACE = 10.0


class Server(Protocol):
    """An HTTP server the runner starts and stops (``app.server`` ``HttpServer``)."""

    def start(self) -> None:
        """Listen; return once the socket is bound."""
        ...

    def shutdown(self, grace: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish within ``grace``, stop."""
        ...


class Runner:
    """One ``berth run`` process's life, from Run to exit code."""

    def __init__(self, components: Components) -> None:
        self.c = components
        self._leading = threading.Event()
        self._ended = threading.Event()  # the process should exit (lease lost or stop)
        self._lost = False
        self._scheduler_started = False
        self._start_lock = threading.Lock()
        self._stop = threading.Event()
        self.elector: LeaderElector | None = None
        le = components.leader_election
        if le is not None:
            config = LeaderElectionConfig(
                lock_namespace=le.resource_namespace,
                lock_name=le.resource_name,
                identity=components.identity,
                lease_duration=le.lease_duration,
                renew_deadline=le.renew_deadline,
                retry_period=le.retry_period,
                release_on_cancel=True,
                coordinated=components.coordinated,
                on_started_leading=self._on_started_leading,
                on_stopped_leading=self._on_stopped_leading,
                on_new_leader=self._on_new_leader,
            )
            self.elector = LeaderElector(components.client, config)
        self.app = build_app(components, self.is_leader, self._healthz_checks(), self._readyz_checks())

    # --- health -------------------------------------------------------------------------------

    def _healthz_checks(self) -> dict[str, Check]:
        return {} if self.elector is None else {"leaderElection": self.elector.check}

    def _readyz_checks(self) -> dict[str, Check]:
        checks: dict[str, Check] = dict(self._healthz_checks())
        checks["sched-handler-sync"] = self.c.informers.handler_sync_check
        if self.c.candidate is not None:
            checks["leasecandidate-sync"] = self.c.candidate.check
        return checks

    def is_leader(self) -> bool:
        """Whether this instance schedules: it holds the lease, or leader election is off."""
        return self._leading.is_set()

    def leader(self) -> str:
        """The identity of the current leader as last observed ("" when unknown)."""
        if self.elector is None:
            return self.c.identity
        return self.elector.get_leader()

    # --- leader election callbacks ------------------------------------------------------------

    def _on_started_leading(self) -> None:
        logs.info("Started leading", identity=self.c.identity)
        self._become_leader()

    def _on_stopped_leading(self) -> None:
        self._leading.clear()
        if self.c.leader_election is not None:
            stats.set_leader(stats.LEADER_ELECTION_NAME, False)
        if self._stop.is_set():
            logs.info("Requested to terminate, exiting")
        else:
            self._lost = True  # the elector has logged "Leaderelection lost"
            # Another instance may already schedule: stop at once, not after the grace period.
            self.c.scheduler.stop(timeout=0)
        self._ended.set()

    def _on_new_leader(self, identity: str) -> None:
        if identity != self.c.identity:
            logs.info("New leader elected", identity=identity)

    def _become_leader(self) -> None:
        self._leading.set()
        if self.c.leader_election is not None:
            stats.set_leader(stats.LEADER_ELECTION_NAME, True)
        if self.c.delay_informers:
            logs.info("Starting informers and waiting for sync...")
            self._start_informers()
        if not self._wait_for_handlers_sync():
            return
        with self._start_lock:
            if self._scheduler_started or self._stop.is_set() or self._ended.is_set():
                return
            self._scheduler_started = True
        # The initial lists are in the cache now and live as long as the process: move them out of
        # the collector's reach, and from now on freeze what survives each full collection (pods
        # and nodes added later), so no full pass re-walks the cache (app.gcpolicy).
        gcpolicy.install()
        logs.info("Starting scheduling loop", profiles=",".join(self.c.engine.profiles))
        self.c.scheduler.start()

    # --- run ----------------------------------------------------------------------------------

    def _start_informers(self) -> None:
        self.c.informers.start()

    def _wait_for_handlers_sync(self) -> bool:
        while not (self._stop.is_set() or self._ended.is_set()):
            if self.c.informers.wait_for_handlers_sync(SYNC_POLL):
                return True
        return False

    def run(self, servers: Sequence[Server], stop: threading.Event) -> int:
        """Run until ``stop`` is set (exit code 0) or the lease is lost (1)."""
        self._stop = stop
        c = self.c
        logs.info(
            "Starting berth scheduler",
            version=__version__,
            identity=c.identity,
            leaderElect=c.leader_election is not None,
        )
        c.broadcaster.start()
        started: list[Server] = []
        elector_stop = threading.Event()
        elector_thread: threading.Thread | None = None
        candidate_stop = threading.Event()
        try:
            for server in servers:
                server.start()
                started.append(server)
            if not c.delay_informers:
                self._start_informers()
            if self.elector is None:
                self._become_leader()
            else:
                if c.candidate is not None:
                    c.candidate.start(candidate_stop)
                elector_thread = self.elector.start(elector_stop)
            while not (stop.is_set() or self._ended.is_set()):
                stop.wait(0.5)
                gcpolicy.compact_if_due()
        finally:
            self._shutdown(started, elector_stop, elector_thread, candidate_stop)
        return EXIT_LEASE_LOST if self._lost else 0

    def _shutdown(
        self,
        servers: Sequence[Server],
        elector_stop: threading.Event,
        elector_thread: threading.Thread | None,
        candidate_stop: threading.Event,
    ) -> None:
        c = self.c
        if not c.scheduler.stop(timeout=BINDING_GRACE):
            logs.warning("Shutting down with bindings still in flight", graceSeconds=BINDING_GRACE)
        c.preemption_parallelizer.shutdown()
        elector_stop.set()  # releases the lease (ReleaseOnCancel)
        candidate_stop.set()
        if elector_thread is not None:
            elector_thread.join(c.leader_election.renew_deadline if c.leader_election else 5.0)
        c.informers.stop()
        for server in reversed(servers):
            server.shutdown()
        c.broadcaster.shutdown()
        c.client.close()
        c.events_client.close()
        logs.info("Garbage collection", **gcpolicy.stats().summary())
        logs.info("berth scheduler stopped")
