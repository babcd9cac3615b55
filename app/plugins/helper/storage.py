"""Typed, indexed access to the storage objects among the cluster objects (the storage listers).

The engine keeps every kind other than pods and nodes as raw dicts (``Handle.objects``), which informers
replace on each event. :class:`StorageLister` parses each raw object once (an object is re-parsed only
when its dict is replaced) and indexes them by name, so that the storage plugins look a claim or a class
up in O(1). A malformed object (an informer cannot refuse one) is logged once and left out, as if absent.
``berth run``'s storage informers parse each object as they decode it and store the parsed object
itself (no dict kept beside it): the lister takes those as they are.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from app import logs
from app.api.errors import FieldError
from app.api.objects import EPHEMERAL_SOURCE, PVC_SOURCE, Pod, pod_claim_name
from app.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    parse_csi_driver,
    parse_csi_node,
    parse_csi_storage_capacity,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    parse_storage_class,
    parse_volume_attachment,
)
from app.framework.events import HintError
from app.framework.interfaces import ObjectLister

T = TypeVar("T")

PV_KIND = "PersistentVolume"
PVC_KIND = "PersistentVolumeClaim"
STORAGE_CLASS_KIND = "StorageClass"
CSI_NODE_KIND = "CSINode"
CSI_DRIVER_KIND = "CSIDriver"
CSI_STORAGE_CAPACITY_KIND = "CSIStorageCapacity"
VOLUME_ATTACHMENT_KIND = "VolumeAttachment"


def _key(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


class _Index(Generic[T]):
    """The parsed objects of one kind by ``namespace/name`` (``name`` when cluster-scoped)."""

    __slots__ = ("by_key", "derived", "raw_ids")

    def __init__(self, by_key: dict[str, T], raw_ids: dict[int, tuple[Mapping[str, Any], T]]) -> None:
        self.by_key = by_key
        self.raw_ids = raw_ids
        self.derived: dict[str, object] = {}


class _Kind(Generic[T]):
    """One kind's parser and its latest index."""

    def __init__(
        self, kind: str, cls: type[T], parse: Callable[[Mapping[str, Any], str], T], namespaced: bool
    ) -> None:
        self.kind = kind
        self.cls = cls
        self.parse = parse
        self.namespaced = namespaced
        self.index: _Index[T] = _Index({}, {})
        self.bad: set[int] = set()
        self.revision: int | None = None  # the objects' revision the index was built at

    def refresh(self, raws: list[Mapping[str, Any]]) -> _Index[T]:
        old = self.index
        if len(raws) == len(old.raw_ids) and all(id(r) in old.raw_ids for r in raws):
            return old
        by_key: dict[str, T] = {}
        raw_ids: dict[int, tuple[Mapping[str, Any], T]] = {}
        for raw in raws:
            hit = old.raw_ids.get(id(raw))
            parsed = hit[1] if hit is not None and hit[0] is raw else self._parse(raw)
            if parsed is None:
                continue  # malformed (logged once)
            raw_ids[id(raw)] = (raw, parsed)
            by_key[self._key_of(parsed)] = parsed
        self.index = _Index(by_key, raw_ids)
        return self.index

    def apply(self, changed: Mapping[str, Mapping[str, Any] | None]) -> _Index[T]:
        """A new index with the objects at the ``changed`` keys (of the object store) replaced."""
        by_key = dict(self.index.by_key)  # copied: readers of the previous index keep a stable one
        for store_key, raw in changed.items():
            if raw is None:
                # Deleted: the store's key is namespace/name (name when cluster-scoped), as ours.
                namespace, _, name = store_key.rpartition("/")
                by_key.pop(f"{namespace or 'default'}/{name}" if self.namespaced else name, None)
                continue
            parsed = self._parse(raw)
            if parsed is not None:
                key = self._key_of(parsed)
                by_key[store_key if key == store_key else key] = parsed  # the store's string, not a copy
        # The raw-identity cache serves full relists only; after incremental updates a relist parses anew.
        self.index = _Index(by_key, {})
        return self.index

    def _parse(self, raw: Mapping[str, Any]) -> T | None:
        if isinstance(raw, self.cls):
            return raw  # parsed by the informer already
        try:
            return self.parse(raw, self.kind)
        except FieldError as err:
            if id(raw) not in self.bad:
                self.bad.add(id(raw))
                logs.error("Ignoring a malformed object", kind=self.kind, object=_key(raw), err=str(err))
            return None

    def _key_of(self, parsed: T) -> str:
        # The parsed namespace: "default" when the raw object (a state file's) has none.
        name = str(getattr(parsed, "name", ""))
        return f"{getattr(parsed, 'namespace', '')}/{name}" if self.namespaced else name


class StorageLister:
    """PersistentVolumes, claims, classes, CSINodes, CSIDrivers, capacities and attachments, parsed.

    Thread-safe: the scheduling loop and binding goroutines (PreBind) both read.
    """

    def __init__(self, objects: ObjectLister) -> None:
        self.objects = objects
        self._lock = threading.Lock()
        self._pvs = _Kind(PV_KIND, PersistentVolume, parse_persistent_volume, False)
        self._pvcs = _Kind(PVC_KIND, PersistentVolumeClaim, parse_persistent_volume_claim, True)
        self._classes = _Kind(STORAGE_CLASS_KIND, StorageClass, parse_storage_class, False)
        self._csi_nodes = _Kind(CSI_NODE_KIND, CSINode, parse_csi_node, False)
        self._csi_drivers = _Kind(CSI_DRIVER_KIND, CSIDriver, parse_csi_driver, False)
        self._capacities = _Kind(
            CSI_STORAGE_CAPACITY_KIND, CSIStorageCapacity, parse_csi_storage_capacity, True
        )
        self._attachments = _Kind(VOLUME_ATTACHMENT_KIND, VolumeAttachment, parse_volume_attachment, False)

    def _index(self, kind: _Kind[T]) -> _Index[T]:
        # The engine's ClusterObjects numbers its changes per kind and remembers the keys changed: while
        # the number stands the index stands (a lookup costs O(1)), and after a few changes only those
        # objects are parsed again. Other listers (tests' fakes) are listed and compared.
        revision_of = getattr(self.objects, "revision", None)
        if revision_of is None:
            raws = self.objects.list_cluster(kind.kind)
            with self._lock:
                return kind.refresh(raws)
        if revision_of(kind.kind) == kind.revision:
            return kind.index
        with self._lock:
            changes = None if kind.revision is None else self.objects.changes(kind.kind, kind.revision)  # type: ignore[attr-defined]
            if changes is not None:
                kind.revision, changed = changes
                return kind.apply(changed)
            revision = revision_of(kind.kind)
            index = kind.refresh(self.objects.list_cluster(kind.kind))
            kind.revision = revision
            return index

    def pvs(self) -> dict[str, PersistentVolume]:
        """PersistentVolumes by name."""
        return self._index(self._pvs).by_key

    def pvcs(self) -> dict[str, PersistentVolumeClaim]:
        """PersistentVolumeClaims by ``namespace/name``."""
        return self._index(self._pvcs).by_key

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        """One claim, or None."""
        return self.pvcs().get(f"{namespace}/{name}")

    def storage_classes(self) -> dict[str, StorageClass]:
        """StorageClasses by name."""
        return self._index(self._classes).by_key

    def csi_nodes(self) -> dict[str, CSINode]:
        """CSINodes by name (a node's name)."""
        return self._index(self._csi_nodes).by_key

    def csi_drivers(self) -> dict[str, CSIDriver]:
        """CSIDrivers by name."""
        return self._index(self._csi_drivers).by_key

    def capacities(self) -> list[CSIStorageCapacity]:
        """Every CSIStorageCapacity."""
        return list(self._index(self._capacities).by_key.values())

    def attachments_by_node(self) -> dict[str, list[VolumeAttachment]]:
        """VolumeAttachments by ``spec.nodeName`` (the ``va.spec.nodename`` index)."""
        index = self._index(self._attachments)
        cached = index.derived.get("by_node")
        if cached is None:
            by_node: dict[str, list[VolumeAttachment]] = {}
            for va in index.by_key.values():
                by_node.setdefault(va.node_name, []).append(va)
            index.derived["by_node"] = cached = by_node
        return cached  # type: ignore[return-value]

    def pvs_by_class(self) -> dict[str, list[PersistentVolume]]:
        """PersistentVolumes by storage class name (the assume cache's ``ListPVs`` index)."""
        index = self._index(self._pvs)
        cached = index.derived.get("by_class")
        if cached is None:
            by_class: dict[str, list[PersistentVolume]] = {}
            for pv in index.by_key.values():
                by_class.setdefault(pv.storage_class_name, []).append(pv)
            index.derived["by_class"] = cached = by_class
        return cached  # type: ignore[return-value]


_SHARED: weakref.WeakKeyDictionary[ObjectLister, StorageLister] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def shared_storage_lister(objects: ObjectLister) -> StorageLister:
    """The one :class:`StorageLister` over ``objects``: the storage plugins of every profile share it,
    so each object is parsed and indexed once, not once per plugin."""
    with _SHARED_LOCK:
        lister = _SHARED.get(objects)
        if lister is None:
            lister = StorageLister(objects)
            _SHARED[objects] = lister
        return lister


def as_storage_objects(kind: type[T], old: object, new: object) -> tuple[T | None, T | None]:
    """A storage event's objects as ``kind`` (``util.As``); None stays None, anything else is a
    :class:`~app.framework.events.HintError` (the queue then takes Queue)."""
    for obj in (old, new):
        if obj is not None and not isinstance(obj, kind):
            raise HintError(f"expected a {kind.__name__}, got {type(obj).__name__}")
    return old, new  # type: ignore[return-value]


def pod_uses_claim(pod: Pod, claim: PersistentVolumeClaim, ephemeral: bool = True) -> bool:
    """Whether ``claim`` is one of the pod's: a persistentVolumeClaim volume naming it or, with
    ``ephemeral``, the claim of a generic ephemeral volume (the storage plugins' claim hints)."""
    if claim.namespace != pod.namespace:
        return False
    kinds = (PVC_SOURCE, EPHEMERAL_SOURCE) if ephemeral else (PVC_SOURCE,)
    return any(v.source in kinds and pod_claim_name(pod, v) == claim.name for v in pod.volumes)
