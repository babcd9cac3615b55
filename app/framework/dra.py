"""The DRA objects the DynamicResources plugin reads, and its in-flight allocations
(kube-scheduler's ``SharedDRAManager``: ``dra_manager.go`` with the claim assume cache).

:class:`DRAStore` keeps DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices
parsed once as they arrive (from informers or a state file), and what kube keeps beside them:

- **in-flight allocations**: a claim allocated in Reserve and not yet written by PreBind is
  "pending"; its devices count as allocated so that no other pod gets them meanwhile, and another
  pod sharing the claim waits ("is in the process of being allocated");
- **assumed claims**: the version PreBind wrote, used until the informer delivers it (or a newer one).

Writes to claims go through a :class:`ClaimWriter`: the API server for ``berth run``, the store
itself (:class:`StoreClaimWriter`) for ``berth simulate`` and tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from app.api.resource import (
    PARSERS,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    claim_with_status,
)

DRA_KINDS = frozenset(PARSERS)

DeviceID = tuple[str, str, str]
"""(driver, pool, device)."""


class ClaimWriteError(Exception):
    """A claim update the API server (or the store) refused; the message is kube's error text."""


class ClaimWriter(Protocol):
    """Where claim status updates go."""

    def update_status(
        self, claim: ResourceClaim, status: Mapping[str, Any], finalizers: list[str] | None = None
    ) -> ResourceClaim:
        """Write ``status`` (and, when given, ``finalizers`` first) and return the stored claim."""
        ...


@dataclass(slots=True)
class AllocatedState:
    """``structured.AllocatedState``: devices in use, shared devices and their consumed capacity."""

    allocated_devices: set[DeviceID] = field(default_factory=set)
    shared_device_ids: set[tuple[DeviceID, str]] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, dict[str, Fraction]] = field(default_factory=dict)

    def is_allocated(self, device: DeviceID) -> bool:
        """``IsDeviceAllocated``: fully, or partly through a share."""
        return (
            device in self.allocated_devices
            or device in self.aggregated_capacity
            or any(d == device for d, _ in self.shared_device_ids)
        )


class DRAStore:
    """Parsed DRA objects by key, in-flight allocations and assumed claims; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._classes: dict[str, DeviceClass] = {}
        self._claims: dict[str, ResourceClaim] = {}
        self._templates: dict[str, ResourceClaimTemplate] = {}
        self._slices: dict[str, ResourceSlice] = {}
        self._pending: dict[str, ResourceClaim] = {}  # claim UID -> claim with its in-flight allocation
        self._assumed: dict[str, ResourceClaim] = {}  # claim key -> the version we wrote
        self.writer: ClaimWriter = StoreClaimWriter(self)
        # The allocator's pools per node, valid while the slices stay the same (cleared on any change).
        self.pool_cache: dict[str, Any] = {}
        self.listeners: list[Callable[[str, Any, Any], None]] = []

    # --- feeding (informers, state files) --------------------------------------------------------

    def upsert(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        """Add or replace a raw object of a DRA kind (other kinds are ignored)."""
        parser = PARSERS.get(kind)
        if parser is None:
            return
        parsed = parser(obj, kind)
        self.put(kind, parsed)

    def put(self, kind: str, parsed: Any) -> None:
        """Add or replace a parsed object; listeners hear (kind, old, new)."""
        table = self._table(kind)
        key = _key_of(parsed)
        with self._lock:
            old = table.get(key)
            table[key] = parsed
            if kind == "ResourceSlice":
                self.pool_cache = {}
            if kind == "ResourceClaim":
                assumed = self._assumed.get(key)
                if assumed is not None and (
                    assumed.uid != parsed.uid
                    or _newer_or_same(parsed.resource_version, assumed.resource_version)
                ):
                    del self._assumed[key]
        for listener in self.listeners:
            listener(kind, old, parsed)

    def delete(self, kind: str, key: str) -> None:
        """Forget an object (an informer's delete); unknown keys are ignored."""
        if kind not in DRA_KINDS:
            return
        with self._lock:
            old = self._table(kind).pop(_store_key(kind, key), None)
            if kind == "ResourceSlice":
                self.pool_cache = {}
            if kind == "ResourceClaim":
                self._assumed.pop(_store_key(kind, key), None)
        if old is not None:
            for listener in self.listeners:
                listener(kind, old, None)

    def _table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "DeviceClass": self._classes,
            "ResourceClaim": self._claims,
            "ResourceClaimTemplate": self._templates,
            "ResourceSlice": self._slices,
        }
        return tables[kind]

    # --- reading -----------------------------------------------------------------------------------

    def get_class(self, name: str) -> DeviceClass | None:
        """The DeviceClass ``name``."""
        with self._lock:
            return self._classes.get(name)

    def list_classes(self) -> list[DeviceClass]:
        """Every DeviceClass."""
        with self._lock:
            return list(self._classes.values())

    def get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The claim, in its assumed version when PreBind wrote one the informer has not delivered."""
        key = f"{namespace}/{name}"
        with self._lock:
            return self._assumed.get(key) or self._claims.get(key)

    def list_claims(self) -> list[ResourceClaim]:
        """Every claim (assumed versions first)."""
        with self._lock:
            return [self._assumed.get(k, c) for k, c in self._claims.items()]

    def list_slices(self) -> list[ResourceSlice]:
        """Every ResourceSlice."""
        with self._lock:
            return list(self._slices.values())

    def slices_and_pool_cache(self) -> tuple[list[ResourceSlice], dict[str, Any]]:
        """Every ResourceSlice with the pool cache that belongs to exactly these slices."""
        with self._lock:
            return list(self._slices.values()), self.pool_cache

    def empty(self) -> bool:
        """No claims at all (the plugin has nothing to look at)."""
        with self._lock:
            return not self._claims

    # --- in-flight allocations --------------------------------------------------------------------

    def signal_pending_allocation(self, claim: ResourceClaim) -> None:
        """Reserve: ``claim`` (with its allocation) is being allocated (``SignalClaimPendingAllocation``)."""
        with self._lock:
            self._pending[claim.uid] = claim

    def pending_allocation(self, uid: str) -> ResourceClaim | None:
        """The in-flight version of the claim ``uid`` (``GetPendingAllocation``)."""
        with self._lock:
            return self._pending.get(uid)

    def remove_pending_allocation(self, uid: str) -> bool:
        """Forget the in-flight allocation of ``uid``; True when there was one."""
        with self._lock:
            return self._pending.pop(uid, None) is not None

    def assume(self, claim: ResourceClaim) -> None:
        """Use ``claim`` (just written) until the informer catches up (``AssumeClaimAfterAPICall``)."""
        with self._lock:
            current = self._claims.get(claim.key)
            if (
                current is not None
                and current.uid == claim.uid
                and _newer_or_same(current.resource_version, claim.resource_version)
                and current.resource_version
            ):
                return
            self._assumed[claim.key] = claim

    def restore(self, namespace: str, name: str) -> None:
        """Drop an assumed version (``AssumedClaimRestore``)."""
        with self._lock:
            self._assumed.pop(f"{namespace}/{name}", None)

    def allocated_state(self) -> AllocatedState:
        """Devices allocated by every claim plus the in-flight ones (``GatherAllocatedState``).

        Devices allocated with admin access do not count: an admin may look at a device in use.
        """
        state = AllocatedState()
        with self._lock:
            claims = [self._assumed.get(k, c) for k, c in self._claims.items()]
            claims.extend(self._pending.values())
        for claim in claims:
            if claim.allocation is None:
                continue
            for result in claim.allocation.results:
                if result.admin_access:
                    continue
                device = (result.driver, result.pool, result.device)
                if result.share_id:
                    state.shared_device_ids.add((device, result.share_id))
                    consumed = state.aggregated_capacity.setdefault(device, {})
                    for name, amount in result.consumed_capacity.items():
                        consumed[name] = consumed.get(name, Fraction(0)) + amount
                else:
                    state.allocated_devices.add(device)
        return state


class StoreClaimWriter:
    """Claim updates applied to the store itself (``berth simulate``, the extender, tests)."""

    def __init__(self, store: DRAStore) -> None:
        self.store = store
        self._version = 0

    def update_status(
        self, claim: ResourceClaim, status: Mapping[str, Any], finalizers: list[str] | None = None
    ) -> ResourceClaim:
        """Store the claim with the new status, as the API server would return it."""
        current = self.store.get_claim(claim.namespace, claim.name)
        if current is None or current.uid != claim.uid:
            raise ClaimWriteError(f'resourceclaims.resource.k8s.io "{claim.name}" not found')
        updated = claim_with_status(current, status, finalizers)
        self._version += 1
        raw = dict(updated.raw)
        raw["metadata"] = {**dict(raw.get("metadata") or {}), "resourceVersion": f"berth-{self._version}"}
        self.store.upsert("ResourceClaim", updated.key, raw)
        stored = self.store.get_claim(claim.namespace, claim.name)
        assert stored is not None
        return stored


def _key_of(obj: Any) -> str:
    namespace = getattr(obj, "namespace", "")
    return f"{namespace}/{obj.name}" if namespace else obj.name


def _store_key(kind: str, key: str) -> str:
    """Informer keys are ``namespace/name``; cluster-scoped kinds are stored by name."""
    if kind in ("DeviceClass", "ResourceSlice"):
        return key.rpartition("/")[2]
    return key


def _newer_or_same(version: str, than: str) -> bool:
    """Whether resourceVersion ``version`` is at least ``than`` (numeric when both are)."""
    if version.isdigit() and than.isdigit():
        return int(version) >= int(than)
    return version == than
