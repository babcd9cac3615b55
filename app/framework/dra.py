"""The DRA objects the DynamicResources plugin reads, and its in-flight allocations
(kube-scheduler's ``SharedDRAManager``: ``dra_manager.go`` with the claim assume cache).

:class:`DRAStore` keeps DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices
parsed once as they arrive (from informers or a state file), and what kube keeps beside them:

- **in-flight allocations**: a claim allocated in Reserve and not yet written by PreBind is
  "pending"; its devices count as allocated so that no other pod gets them meanwhile, and another
  pod sharing the claim waits ("is in the process of being allocated");
- **assumed claims**: the version PreBind wrote, used until the informer delivers it (or a newer one);
  a claim PreBind created (the one for a pod's extended resources) counts from the moment it exists;
- **the extended resource cache** (``extendedresourcecache``, DRAExtendedResource): which DeviceClass
  backs an extended resource, by its ``extendedResourceName`` or ``deviceclass.resource.kubernetes.io/<name>``.

Writes to claims go through a :class:`ClaimWriter`: the API server for ``berth run``, the store
itself (:class:`StoreClaimWriter`) for ``berth simulate`` and tests.
"""

from __future__ import annotations

import random
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any, Protocol, TypeVar

from app import featuregates, logs
from app.api.objects import Pod
from app.api.resource import (
    PARSERS,
    RESOURCE_DEVICE_CLASS_PREFIX,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    claim_with_status,
    parse_resource_claim,
)
from app.framework.cycle_state import CycleState

DRA_KINDS = frozenset(PARSERS)
T = TypeVar("T")

IN_FLIGHT_ALLOCATION_KEY = "DynamicResources/allocationInFlight"
"""The cycle state key under which DynamicResources' Reserve notes that it put in flight the
allocation of a claim other pods may share (True: one the pod does not own, unlike a claim made from
its template): the pod's binding cycle writes what every other pod sharing the claim waits for."""


def allocates_in_flight(state: CycleState) -> bool:
    """Whether this attempt's Reserve put in flight the allocation of a claim the pod does not own,
    so that the pods sharing the claim are rejected ("is in the process of being allocated") until its PreBind has written it.

    ``berth run`` starts such a binding cycle before the ones already waiting for a worker: Go starts
    every binding cycle at once, and behind berth's backlog the claim stayed in flight for seconds,
    rejecting every sharer popped meanwhile (see docs/dra.md, "Claims shared by several pods")."""
    return state.get(IN_FLIGHT_ALLOCATION_KEY) is True


DeviceID = tuple[str, str, str]
"""(driver, pool, device)."""


class ClaimWriteError(Exception):
    """A claim update the API server (or the store) refused; the message is kube's error text.

    ``conflict`` marks a stale resourceVersion (HTTP 409), which kube retries after re-reading.
    """

    def __init__(self, message: str, *, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


#: client-go's ``retry.DefaultRetry``: five tries, 10 ms apart (factor 1, jitter 0.1).
CONFLICT_RETRY_STEPS = 5
CONFLICT_RETRY_DELAY = 0.010


def retry_on_conflict(attempt: Callable[[bool], T]) -> T:
    """``retry.RetryOnConflict(retry.DefaultRetry, fn)``: call ``attempt(refresh)`` until it does
    not raise a conflict, at most CONFLICT_RETRY_STEPS times; ``refresh`` is False on the first call
    and True after a conflict (the caller re-reads what it writes). The last conflict is raised."""
    for step in range(CONFLICT_RETRY_STEPS):
        try:
            return attempt(step > 0)
        except ClaimWriteError as err:
            if not err.conflict or step == CONFLICT_RETRY_STEPS - 1:
                raise
        time.sleep(CONFLICT_RETRY_DELAY * (1 + 0.1 * random.random()))
    raise AssertionError("unreachable")


class ClaimWriter(Protocol):
    """Where the DynamicResources plugin's writes go."""

    def update_status(
        self, claim: ResourceClaim, status: Mapping[str, Any], finalizers: list[str] | None = None
    ) -> ResourceClaim:
        """Write ``status`` (and, when given, ``finalizers`` first) and return the stored claim."""
        ...

    def get(self, namespace: str, name: str) -> ResourceClaim:
        """The claim as stored now (kube's ``Get`` after a conflict); ClaimWriteError when gone."""
        ...

    def create(self, raw: Mapping[str, Any]) -> ResourceClaim:
        """Create a claim (``metadata.generateName`` names it) and return it as stored."""
        ...

    def delete(self, claim: ResourceClaim) -> None:
        """``deleteClaim``: drop the delete-protection finalizer (re-reading on conflicts), then delete."""
        ...

    def record_extended_resource_claim(self, pod: Pod, status: Mapping[str, Any]) -> None:
        """Write the pod's ``status.extendedResourceClaimStatus`` (``PatchPodStatus``)."""
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
        self._claim_writes: dict[str, _ClaimWriteTurn] = {}  # claim UID -> whose turn it is to write
        self.writer: ClaimWriter = StoreClaimWriter(self)
        # extendedresourcecache: extended resource name -> the DeviceClass backing it.
        self._class_for_resource: dict[str, DeviceClass] = {}
        # The devices in use, kept up to date claim by claim (GatherAllocatedState would otherwise
        # walk every claim in every PreFilter): what each claim (its assumed or stored version, by
        # key) and each in-flight allocation (by UID) contributes, and the reference counts of all.
        self._contributions: dict[tuple[str, str], _Contribution] = {}
        self._device_refs: dict[DeviceID, int] = {}
        self._share_refs: dict[tuple[DeviceID, str], int] = {}
        self._shared_device_refs: dict[DeviceID, int] = {}
        self._consumed: dict[DeviceID, dict[str, Fraction]] = {}
        # The allocator's pools per node, valid while the slices stay the same (cleared on any change).
        self.pool_cache: dict[str, Any] = {}
        self.listeners: list[Callable[[str, Any, Any], None]] = []

    # --- feeding (informers, state files) --------------------------------------------------------

    def upsert(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        """Add or replace a raw object of a DRA kind (other kinds are ignored)."""
        parser = PARSERS.get(kind)
        if parser is None:
            return
        if kind == "ResourceClaim":
            meta = obj.get("metadata")
            version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
            if isinstance(version, str):
                with self._lock:  # ``key`` is the claim's namespace/name, as the store's own
                    if self._settle_known_claim(key, version):
                        # Not newer than the version in use: nothing to parse, nobody hears of it.
                        return
        self.put(kind, parser(obj, kind))

    def put(self, kind: str, parsed: Any) -> None:
        """Add or replace a parsed object; listeners hear (kind, old, new).

        A ResourceClaim goes through kube's claim assume cache: an informer's version that is not
        newer (by numeric resourceVersion) than the one the store uses, assumed or not, changes
        nothing and nobody hears of it (``AssumeCache.add``: "version is not newer than
        storedVersion"), so the version PreBind wrote is heard once, when :meth:`assume` takes it.
        """
        table = self._table(kind)
        key = _key_of(parsed)
        with self._lock:
            old = table.get(key)
            if kind == "ResourceClaim":
                if self._settle_known_claim(key, parsed.resource_version):
                    return
                assumed = self._assumed.get(key)
                latest = assumed or old
                if assumed is not None and (
                    assumed.uid != parsed.uid
                    or _newer_or_same(parsed.resource_version, assumed.resource_version)
                ):
                    del self._assumed[key]
                if old is not None:  # else an add, even over a claim PreBind created and assumed
                    old = latest
            table[key] = parsed
            if kind == "DeviceClass":
                self._map_extended_resources(parsed, old)
            if kind == "ResourceSlice":
                self.pool_cache = {}
            if kind == "ResourceClaim":
                self._recount_claim(key)
        self._tell(kind, old, parsed)

    def _settle_known_claim(self, key: str, version: str) -> bool:
        """Whether the informer's ``version`` of the stored claim ``key`` is not newer (numerically)
        than the version in use, assumed or stored: then it changes nothing and nobody hears of it
        (``AssumeCache.add``: "version is not newer than storedVersion"), except that the assumed
        version itself, now from the informer, becomes the stored one (the same object: a
        resourceVersion names one state of it). The caller holds the lock."""
        old = self._claims.get(key)
        assumed = self._assumed.get(key)
        latest = assumed or old
        if old is None or latest is None or not _not_newer(version, latest.resource_version):
            return False
        if assumed is not None and version == assumed.resource_version:
            self._claims[key] = assumed
            del self._assumed[key]
            self._recount_claim(key)
        return True

    def delete(self, kind: str, key: str) -> None:
        """Forget an object (an informer's delete); unknown keys are ignored."""
        if kind not in DRA_KINDS:
            return
        with self._lock:
            stored_key = _store_key(kind, key)
            old = self._table(kind).pop(stored_key, None)
            if kind == "DeviceClass" and old is not None:
                self._unmap_extended_resources(old)
            if kind == "ResourceSlice":
                self.pool_cache = {}
            if kind == "ResourceClaim":
                assumed = self._assumed.pop(stored_key, None)
                if old is not None and assumed is not None:
                    old = assumed  # kube's delete event carries the assume cache's latest version
                self._recount_claim(stored_key)
        if old is not None:
            self._tell(kind, old, None)

    def _tell(self, kind: str, old: Any, new: Any) -> None:
        """Every listener hears (kind, old, new); called without the lock."""
        for listener in self.listeners:
            listener(kind, old, new)

    def _table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "DeviceClass": self._classes,
            "ResourceClaim": self._claims,
            "ResourceClaimTemplate": self._templates,
            "ResourceSlice": self._slices,
        }
        return tables[kind]

    def _map_extended_resources(self, new: DeviceClass, old: DeviceClass | None) -> None:
        """``updateResourceName2class``, quirks included: of two classes naming the same extended
        resource the older (then the one whose name sorts first) keeps it, and an update that loses
        that contest changes nothing, not even the class's implicit name."""
        if new.extended_resource_name:
            holder = self._class_for_resource.get(new.extended_resource_name)
            if holder is not None:
                new_time, holder_time = (
                    _unix_time(new.creation_timestamp),
                    _unix_time(holder.creation_timestamp),
                )
                if new_time > holder_time or (new_time == holder_time and new.name >= holder.name):
                    return
        if old is not None:
            self._class_for_resource.pop(RESOURCE_DEVICE_CLASS_PREFIX + old.name, None)
            if old.extended_resource_name:
                self._class_for_resource.pop(old.extended_resource_name, None)
        if new.extended_resource_name:
            self._class_for_resource[new.extended_resource_name] = new
        self._class_for_resource[RESOURCE_DEVICE_CLASS_PREFIX + new.name] = new

    def _unmap_extended_resources(self, old: DeviceClass) -> None:
        """``removeResourceName2class``: both names go, whichever class held the explicit one."""
        self._class_for_resource.pop(RESOURCE_DEVICE_CLASS_PREFIX + old.name, None)
        if old.extended_resource_name:
            self._class_for_resource.pop(old.extended_resource_name, None)

    # --- reading -----------------------------------------------------------------------------------

    def maps_extended_resources(self) -> bool:
        """Whether any extended resource is backed by a DeviceClass (a cheap test before a pod's
        requests are looked at)."""
        return bool(self._class_for_resource) and featuregates.DEFAULT.enabled("DRAExtendedResource")

    def class_for_extended_resource(self, resource_name: str) -> DeviceClass | None:
        """``DeviceClassResolver.GetDeviceClass``: the DeviceClass backing an extended resource;
        always None with DRAExtendedResource off (kube then has no cache)."""
        if not featuregates.DEFAULT.enabled("DRAExtendedResource"):
            return None
        with self._lock:
            return self._class_for_resource.get(resource_name)

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
            return self._current_claims()

    def _current_claims(self) -> list[ResourceClaim]:
        """Stored claims in their assumed versions, then assumed claims the informer has not
        delivered yet (created by PreBind); the caller holds the lock."""
        claims = [self._assumed.get(k, c) for k, c in self._claims.items()]
        claims.extend(c for k, c in self._assumed.items() if k not in self._claims)
        return claims

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

    def newest_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """The newest version of ``claim`` the store knows: the one a PreBind wrote (assumed) or the
        informer's, unless it is another object of the same name or numerically older than
        ``claim`` (then ``claim`` itself).

        PreBind starts its write from it rather than from PreFilter's copy: a write from an older
        copy can only end in a conflict, the re-read and the same write kube's ``bindClaim`` makes
        on its retry (see docs/dra.md, "One write per shared claim at a time")."""
        known = self.get_claim(claim.namespace, claim.name)
        if known is None or known.uid != claim.uid or _older(known.resource_version, claim.resource_version):
            return claim
        return known

    @contextmanager
    def claim_write_turn(self, uid: str) -> Iterator[None]:
        """Hold the turn to write claim ``uid``: PreBinds of the pods sharing a claim write it one
        at a time, each after the previous one's write is assumed (so :meth:`newest_claim` gives the
        version the API server holds, and no write conflicts with another of berth's own)."""
        with self._lock:
            turn = self._claim_writes.get(uid)
            if turn is None:
                turn = self._claim_writes[uid] = _ClaimWriteTurn()
            turn.waiting += 1
        try:
            with turn.lock:
                yield
        finally:
            with self._lock:
                turn.waiting -= 1
                if not turn.waiting:
                    del self._claim_writes[uid]

    # --- in-flight allocations --------------------------------------------------------------------

    def signal_pending_allocation(self, claim: ResourceClaim) -> None:
        """Reserve: ``claim`` (with its allocation) is being allocated (``SignalClaimPendingAllocation``)."""
        with self._lock:
            self._pending[claim.uid] = claim
            self._recount(("pending", claim.uid), claim)
        logs.info("Added in-flight claim", 5, claim=claim.key, uid=claim.uid, version=claim.resource_version)

    def pending_allocation(self, uid: str) -> ResourceClaim | None:
        """The in-flight version of the claim ``uid`` (``GetPendingAllocation``)."""
        with self._lock:
            return self._pending.get(uid)

    def remove_pending_allocation(self, uid: str) -> bool:
        """Forget the in-flight allocation of ``uid``; True when there was one."""
        with self._lock:
            self._recount(("pending", uid), None)
            claim = self._pending.pop(uid, None)
        if claim is None:
            logs.info("Redundant remove of in-flight claim, not found", 5, uid=uid)
            return False
        logs.info("Removed in-flight claim", 5, claim=claim.key, uid=uid, version=claim.resource_version)
        return True

    def assume(self, claim: ResourceClaim) -> None:
        """Use ``claim`` (just written) until the informer catches up (``AssumeClaimAfterAPICall``).

        As kube's assume cache, listeners hear the change now, from the version used so far to the
        written one (``AssumeCache.Assume`` pushes that update event): the pods waiting for the
        claim move at once, not when the informer delivers it, which then goes unheard (see
        :meth:`put`). Assuming the version the informer delivered already is heard too (kube pushes
        the event whatever the versions, unless the assumed one is older: then nothing happens). A
        claim the informer has not delivered at all (one PreBind created) is used but not heard of
        until the informer adds it, as kube finds it only then.
        """
        with self._lock:
            current = self._claims.get(claim.key)
            previous = self._assumed.get(claim.key) or current
            if (
                current is not None
                and current.uid == claim.uid
                and _newer_or_same(current.resource_version, claim.resource_version)
                and current.resource_version
            ):
                # The informer (or the store's own writer) delivered it already, or a newer one.
                if current.resource_version != claim.resource_version:
                    return  # kube: "out of sync", nothing assumed, nothing heard
            else:
                self._assumed[claim.key] = claim
                self._recount_claim(claim.key)
        if previous is not None:
            self._tell("ResourceClaim", previous, claim)

    def restore(self, namespace: str, name: str) -> None:
        """Drop an assumed version (``AssumedClaimRestore``); listeners hear the change back to the
        informer's version, as from kube's ``AssumeCache.Restore``."""
        key = f"{namespace}/{name}"
        with self._lock:
            assumed = self._assumed.pop(key, None)
            self._recount_claim(key)
            stored = self._claims.get(key)
        if assumed is not None and stored is not None:
            self._tell("ResourceClaim", assumed, stored)

    def allocated_state(self) -> AllocatedState:
        """Devices allocated by every claim plus the in-flight ones (``GatherAllocatedState``).

        Devices allocated with admin access do not count: an admin may look at a device in use.
        The counts are kept as claims change, so this is a copy, not a walk over every claim.
        """
        with self._lock:
            return AllocatedState(
                set(self._device_refs),
                set(self._share_refs),
                {device: dict(self._consumed.get(device, {})) for device in self._shared_device_refs},
            )

    # --- the counts behind allocated_state (the caller holds the lock) -----------------------------

    def _recount_claim(self, key: str) -> None:
        self._recount(("claim", key), self._assumed.get(key) or self._claims.get(key))

    def _recount(self, slot: tuple[str, str], claim: ResourceClaim | None) -> None:
        """Replace what ``slot`` contributes to the counts by what ``claim`` does (None: nothing)."""
        old = self._contributions.pop(slot, None)
        if old is not None:
            self._count(old, -1)
        new = _contribution(claim) if claim is not None else None
        if new is not None:
            self._contributions[slot] = new
            self._count(new, 1)

    def _count(self, c: _Contribution, sign: int) -> None:
        for device in c.devices:
            _add_ref(self._device_refs, device, sign)
        for share in c.shares:
            _add_ref(self._share_refs, share, sign)
            _add_ref(self._shared_device_refs, share[0], sign)
        for device, name, amount in c.consumed:
            consumed = self._consumed.setdefault(device, {})
            total = consumed.get(name, Fraction(0)) + sign * amount
            if total or sign > 0:
                consumed[name] = total
            else:
                consumed.pop(name, None)
            if not consumed:
                del self._consumed[device]


@dataclass(slots=True)
class _ClaimWriteTurn:
    """One claim's write lock and how many PreBinds hold or wait for it (dropped at zero)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0


@dataclass(slots=True, frozen=True)
class _Contribution:
    """The devices one claim's allocation uses (admin access excluded)."""

    devices: tuple[DeviceID, ...]
    shares: tuple[tuple[DeviceID, str], ...]
    consumed: tuple[tuple[DeviceID, str, Fraction], ...]


def _contribution(claim: ResourceClaim) -> _Contribution | None:
    if claim.allocation is None:
        return None
    devices: list[DeviceID] = []
    shares: list[tuple[DeviceID, str]] = []
    consumed: list[tuple[DeviceID, str, Fraction]] = []
    for result in claim.allocation.results:
        if result.admin_access:
            continue
        device = (result.driver, result.pool, result.device)
        if result.share_id:
            shares.append((device, result.share_id))
            consumed.extend((device, name, amount) for name, amount in result.consumed_capacity.items())
        else:
            devices.append(device)
    return _Contribution(tuple(devices), tuple(shares), tuple(consumed))


def _add_ref(refs: dict[Any, int], key: Any, sign: int) -> None:
    count = refs.get(key, 0) + sign
    if count > 0:
        refs[key] = count
    else:
        refs.pop(key, None)


class StoreClaimWriter:
    """Claim updates applied to the store itself (``berth simulate``, the extender, tests)."""

    def __init__(self, store: DRAStore) -> None:
        self.store = store
        self._version = 0
        self.extended_resource_claims: dict[str, dict[str, Any]] = {}  # pod key -> its status field

    def update_status(
        self, claim: ResourceClaim, status: Mapping[str, Any], finalizers: list[str] | None = None
    ) -> ResourceClaim:
        """Store the claim with the new status, as the API server would return it."""
        current = self.get(claim.namespace, claim.name)
        if current.uid != claim.uid:
            raise ClaimWriteError(_not_found(claim.name))
        if claim.resource_version and claim.resource_version != current.resource_version:
            raise ClaimWriteError(_conflict(claim.name), conflict=True)
        return self._store(claim_with_status(current, status, finalizers).raw)

    def get(self, namespace: str, name: str) -> ResourceClaim:
        """The claim as the store has it now."""
        current = self.store.get_claim(namespace, name)
        if current is None:
            raise ClaimWriteError(_not_found(name))
        return current

    def create(self, raw: Mapping[str, Any]) -> ResourceClaim:
        """Store a new claim named from its ``generateName``, with a UID and a creation time."""
        meta = dict(raw.get("metadata") or {})
        meta["name"] = str(meta.get("generateName") or "") + _random_suffix()
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return self._store({**dict(raw), "metadata": meta})

    def delete(self, claim: ResourceClaim) -> None:
        """Forget the claim (the store has no finalizers to wait for)."""
        self.get(claim.namespace, claim.name)
        self.store.delete("ResourceClaim", claim.key)

    def record_extended_resource_claim(self, pod: Pod, status: Mapping[str, Any]) -> None:
        """Remember the pod's ``extendedResourceClaimStatus`` (no pod objects live in the store)."""
        self.extended_resource_claims[pod.key] = dict(status)

    def _store(self, raw: Mapping[str, Any]) -> ResourceClaim:
        self._version += 1
        stored_raw = dict(raw)
        stored_raw["metadata"] = {
            **dict(stored_raw.get("metadata") or {}),
            "resourceVersion": f"berth-{self._version}",
        }
        claim = parse_resource_claim(stored_raw)
        self.store.put("ResourceClaim", claim)
        return claim


def _not_found(name: str) -> str:
    return f'resourceclaims.resource.k8s.io "{name}" not found'


def _conflict(name: str) -> str:
    return (
        f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{name}": '
        "the object has been modified; please apply your changes to the latest version and try again"
    )


def _random_suffix() -> str:
    """The five characters the API server appends to a ``generateName`` (``utilrand.String(5)``)."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(secrets.choice(alphabet) for _ in range(5))


def _unix_time(timestamp: str) -> float:
    """A creationTimestamp in seconds; a missing or unreadable one sorts first (Go's zero time)."""
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("-inf")


def _key_of(obj: Any) -> str:
    namespace = getattr(obj, "namespace", "")
    return f"{namespace}/{obj.name}" if namespace else obj.name


def _store_key(kind: str, key: str) -> str:
    """Informer keys are ``namespace/name``; cluster-scoped kinds are stored by name."""
    if kind in ("DeviceClass", "ResourceSlice"):
        return key.rpartition("/")[2]
    return key


def _not_newer(version: str, than: str) -> bool:
    """Whether resourceVersion ``version`` is numerically at most ``than`` (False unless both are
    numbers: objects from state files and tests may have none, and each of those counts)."""
    return version.isdigit() and than.isdigit() and int(version) <= int(than)


def _older(version: str, than: str) -> bool:
    """Whether resourceVersion ``version`` is numerically below ``than`` (False unless both are
    numbers)."""
    return version.isdigit() and than.isdigit() and int(version) < int(than)


def _newer_or_same(version: str, than: str) -> bool:
    """Whether resourceVersion ``version`` is at least ``than`` (numeric when both are)."""
    if version.isdigit() and than.isdigit():
        return int(version) >= int(than)
    return version == than
