"""A ``coordination.k8s.io/v1`` Lease as a leader-election lock (client-go's ``resourcelock.LeaseLock``).

The election state lives in the Lease's spec; :class:`LeaderElectionRecord` is that spec as client-go's
``LeaderElectionRecord``. Writes are optimistic: an update carries the ``metadata.resourceVersion`` of
the Lease last read or written, so the API server answers 409 Conflict when someone else wrote in between.
Times are ``MicroTime`` strings (``2026-12-02T19:42:23.123456Z``), kept exactly as read so that a record
written back is unchanged where it is not meant to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import orjson

from app.kube.client import KubeClient, KubeError

__all__ = [
    "LEASES_API",
    "LeaderElectionRecord",
    "LeaseLock",
    "parse_micro_time",
    "request_object",
]

LEASES_API = "/apis/coordination.k8s.io/v1"
_TIMEOUT = 30.0  # seconds; KubeClient's default read timeout


def parse_micro_time(value: str) -> datetime:
    """A ``MicroTime`` (or second-precision ``Time``) string as an aware datetime; ValueError if malformed."""
    return datetime.fromisoformat(value)


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """The election state of a Lease spec. Equality is what "the record changed" means to an elector."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0
    strategy: str = ""
    preferred_holder: str = ""

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> LeaderElectionRecord:
        """client-go's ``LeaseSpecToLeaderElectionRecord``: absent fields read as empty or zero."""
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime") or None,
            renew_time=spec.get("renewTime") or None,
            leader_transitions=int(spec.get("leaseTransitions") or 0),
            strategy=str(spec.get("strategy") or ""),
            preferred_holder=str(spec.get("preferredHolder") or ""),
        )

    def to_spec(self) -> dict[str, Any]:
        """client-go's ``LeaderElectionRecordToLeaseSpec``: holder, duration, times and transitions are
        always written (an empty holder is a released lease); strategy and preferred holder only when set."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        if self.strategy:
            spec["strategy"] = self.strategy
        return spec


def request_object(
    client: KubeClient, method: str, path: str, body: object | None = None, timeout: float = _TIMEOUT
) -> dict[str, Any]:
    """Send one request and decode the object answered; non-2xx raises :class:`KubeError` from its Status."""
    status, data = client.request(method, path, body=body, timeout=timeout)
    if not 200 <= status < 300:
        raise KubeError.from_response(status, data)
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise KubeError(status, f"{method} {path}: undecodable JSON: {err}", "InvalidResponse") from err
    if not isinstance(decoded, dict):
        raise KubeError(status, f"{method} {path}: expected a JSON object", "InvalidResponse")
    return decoded


class LeaseLock:
    """Get, create and update one Lease; remembers the Lease last seen for the next update's precondition.

    Every method raises :class:`KubeError` for a non-2xx answer (404 NotFound, 409 Conflict, 403, ...) or
    when no answer came within ``timeout`` seconds (status 0).
    """

    def __init__(self, client: KubeClient, namespace: str, name: str) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.lease: dict[str, Any] | None = None
        ns = quote(namespace, safe="")
        self._collection = f"{LEASES_API}/namespaces/{ns}/leases"
        self._path = f"{self._collection}/{quote(name, safe='')}"

    def describe(self) -> str:
        """``namespace/name``, for logs."""
        return f"{self.namespace}/{self.name}"

    def get(self, timeout: float = _TIMEOUT) -> LeaderElectionRecord:
        """Read the Lease and return its record."""
        self.lease = request_object(self.client, "GET", self._path, timeout=timeout)
        return LeaderElectionRecord.from_spec(self.lease.get("spec") or {})

    def create(self, record: LeaderElectionRecord, timeout: float = _TIMEOUT) -> None:
        """Create the Lease holding ``record`` (409 AlreadyExists when another candidate was first)."""
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        self.lease = request_object(self.client, "POST", self._collection, body, timeout)

    def update(self, record: LeaderElectionRecord, timeout: float = _TIMEOUT) -> None:
        """Replace the spec of the Lease last seen with ``record``, conditional on its resourceVersion."""
        if self.lease is None:
            raise KubeError(0, "lease not initialized, call get or create first", "NotInitialized")
        body = {**self.lease, "spec": record.to_spec()}
        self.lease = request_object(self.client, "PUT", self._path, body, timeout)
