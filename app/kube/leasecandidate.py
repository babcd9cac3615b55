"""A ``coordination.k8s.io/v1beta1`` LeaseCandidate: this instance's entry in coordinated leader election.

Ported from client-go v0.36.3 ``tools/leaderelection/leasecandidate.go``. With the
CoordinatedLeaderElection feature, candidates do not race for a Lease: each publishes a LeaseCandidate
(named after its identity, naming the Lease it wants, with its binary and emulation versions and a
strategy), and the API server's leader-election controller picks the holder (with
``OldestEmulationVersion``, the candidate emulating the oldest version, so that a leader never uses
features its peers lack during an upgrade) and writes it into the Lease.
The elector then only renews what it was given (``LeaderElectionConfig.coordinated``).

The controller asks candidates whether they are still alive by setting ``spec.pingTime``; a candidate
answers by setting ``spec.renewTime`` after it. So this object watches its own LeaseCandidate (a
field-selected reflector), creates it when missing, renews it whenever a ping is newer than its last
renewal, and at least every 5 minutes; failed writes are retried with exponential backoff (5 ms
doubling to 1000 s, as client-go's default controller rate limiter). Like client-go, it does not delete
the candidate on shutdown: the API server garbage-collects candidates not renewed for 30 minutes.

The API is beta and disabled by default in v1.36: the API server needs
``--feature-gates=CoordinatedLeaderElection=true --runtime-config=coordination.k8s.io/v1beta1=true``.
"""

from __future__ import annotations

import copy
import re
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from app import logs
from app.kube.client import KubeClient, KubeError
from app.kube.informer import Backoff, Reflector, ResourceType
from app.kube.leaselock import parse_micro_time, request_object
from app.kube.times import format_micro_time

__all__ = [
    "LEASE_CANDIDATES_API",
    "OLDEST_EMULATION_VERSION",
    "REQUEUE_INTERVAL",
    "LeaseCandidate",
    "finalize_version",
]

LEASE_CANDIDATES_API = "/apis/coordination.k8s.io/v1beta1"
#: The only strategy the API server's controller elects with (``coordinationv1.OldestEmulationVersion``).
OLDEST_EMULATION_VERSION = "OldestEmulationVersion"
#: client-go's ``requeueInterval``: renew at least this often even when nobody pings.
REQUEUE_INTERVAL = 300.0

_TOLERANT_VERSION = re.compile(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+][0-9A-Za-z.+-]*)?")


def finalize_version(value: str) -> str:
    """``semver.ParseTolerant(value).FinalizeVersion()``, as kube-scheduler passes its versions:
    ``"v1.36"`` -> ``"1.36.0"``, ``"1.36.3-rc.1"`` -> ``"1.36.3"``. ValueError when it is no version."""
    match = _TOLERANT_VERSION.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"invalid version {value!r}: expected MAJOR[.MINOR[.PATCH]], e.g. 1.36.3")
    return ".".join(str(int(part or 0)) for part in match.groups())


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _pinged(candidate: dict[str, Any]) -> bool:
    """Whether the controller's ``pingTime`` is newer than the candidate's last ``renewTime``."""
    spec = candidate.get("spec") or {}
    ping, renew = spec.get("pingTime"), spec.get("renewTime")
    if not ping:
        return False
    try:
        return renew is None or parse_micro_time(ping) > parse_micro_time(renew)
    except ValueError:
        logs.warning("Ignoring a LeaseCandidate with malformed times", pingTime=ping, renewTime=renew)
        return False


class _PingHandler:
    """Reflector handler: wake the worker when the controller pings."""

    def __init__(self, wake: threading.Event) -> None:
        self._wake = wake

    def on_add(self, obj: dict[str, Any]) -> None:
        """Nothing: the worker ensures the candidate once the first list is in."""

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """A ping newer than our last renewal needs an answer."""
        if _pinged(new):
            self._wake.set()

    def on_delete(self, obj: dict[str, Any]) -> None:
        """Nothing: a deleted candidate is created again at the next periodic renewal, as in client-go."""


class LeaseCandidate:
    """Publishes and renews the LeaseCandidate ``namespace/name`` for the Lease ``lease_name``.

    ``name`` must be the elector's identity: the controller writes the candidate's name into the Lease as
    its holder. Versions are normalised with :func:`finalize_version`; bad input raises ValueError.
    """

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        lease_name: str,
        binary_version: str,
        emulation_version: str,
        strategy: str = OLDEST_EMULATION_VERSION,
        *,
        wall_clock: Callable[[], int] = time.time_ns,
        requeue_interval: float = REQUEUE_INTERVAL,
    ) -> None:
        if not namespace or not name or not lease_name:
            raise ValueError("LeaseCandidate namespace, name and lease name must not be empty")
        if not strategy:
            raise ValueError("LeaseCandidate strategy must not be empty")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.lease_name = lease_name
        self.binary_version = finalize_version(binary_version)
        self.emulation_version = finalize_version(emulation_version)
        if _version_key(self.binary_version) < _version_key(self.emulation_version):
            raise ValueError(
                f"binaryVersion {self.binary_version} must be greater than or equal to "
                f"emulationVersion {self.emulation_version}"
            )
        self.strategy = strategy
        self.requeue_interval = requeue_interval
        self._wall_clock = wall_clock
        self._wake = threading.Event()
        self._ready = threading.Event()
        ns = quote(namespace, safe="")
        self._collection = f"{LEASE_CANDIDATES_API}/namespaces/{ns}/leasecandidates"
        self._path = f"{self._collection}/{quote(name, safe='')}"
        self.reflector = Reflector(
            client,
            ResourceType(
                "leasecandidates",
                "LeaseCandidate",
                "coordination.k8s.io/v1beta1",
                self._collection,
                field_selector=f"metadata.name={name}",
            ),
            _PingHandler(self._wake),
        )
        # client-go's DefaultTypedControllerRateLimiter: 5 ms doubling per failure, at most 1000 s.
        self._backoff = Backoff(initial=0.005, maximum=1000.0, factor=2.0, jitter=0.0)

    def describe(self) -> str:
        """``namespace/name``, for logs."""
        return f"{self.namespace}/{self.name}"

    def check(self) -> str | None:
        """The /readyz check: None once the candidate has been listed and written by us at least once."""
        if self._ready.is_set():
            return None
        return f"lease candidate {self.describe()} is not synced yet"

    def start(self, stop: threading.Event) -> threading.Thread:
        """:meth:`run` in a daemon thread, which is returned."""
        thread = threading.Thread(target=self.run, args=(stop,), name="lease-candidate", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Watch the candidate and keep it created and renewed until ``stop`` is set. Never raises on
        API errors: they are logged and retried."""
        # stop must also end the worker's wait for a ping or for the next periodic renewal.
        threading.Thread(target=self._wake_on, args=(stop,), name="lease-candidate-stop", daemon=True).start()
        self.reflector.start()
        try:
            while not self.reflector.wait_for_sync(0.1):
                if stop.is_set():
                    return
            self._work(stop)
        finally:
            self.reflector.stop()

    def _wake_on(self, stop: threading.Event) -> None:
        stop.wait()
        self._wake.set()

    def _work(self, stop: threading.Event) -> None:
        delay = 0.0  # ensure at once after the first list, as client-go enqueues on start
        while True:
            self._wake.wait(delay)
            if stop.is_set():
                return
            self._wake.clear()
            try:
                self._ensure()
            except KubeError as err:
                delay = self._backoff.next()
                logs.error("Ensuring lease failed", candidate=self.describe(), err=str(err))
                continue
            self._backoff.reset()
            self._ready.set()
            delay = self.requeue_interval

    def _ensure(self) -> None:
        """Create the candidate if the watch has not seen it, else renew it (client-go's ``ensureLease``)."""
        current = self.reflector.get(f"{self.namespace}/{self.name}")
        now = format_micro_time(self._wall_clock())
        if current is None:
            logs.info("Creating lease candidate", 2, candidate=self.describe())
            body = {
                "apiVersion": "coordination.k8s.io/v1beta1",
                "kind": "LeaseCandidate",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {
                    "leaseName": self.lease_name,
                    "binaryVersion": self.binary_version,
                    "emulationVersion": self.emulation_version,
                    "strategy": self.strategy,
                    "renewTime": now,
                },
            }
            request_object(self.client, "POST", self._collection, body)
            logs.info("Created lease candidate", 2, candidate=self.describe())
            return
        logs.info("Lease candidate exists. Renewing.", 2, candidate=self.describe())
        renewed = copy.deepcopy(current)
        renewed.setdefault("spec", {})["renewTime"] = now
        request_object(self.client, "PUT", self._path, renewed)
