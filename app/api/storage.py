"""Storage objects as slim parsed types: PersistentVolume, PersistentVolumeClaim, StorageClass,
CSINode, CSIDriver, CSIStorageCapacity and VolumeAttachment.

What the four storage plugins (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits) read,
parsed once from the API server's (or a state file's) camelCase dicts; unknown fields are ignored and a
malformed field raises :class:`~app.api.errors.FieldError` with its path.

A PersistentVolume and a claim keep their document packed (:class:`PackedDocument`: compact JSON without
``metadata.managedFields``, deflated; :attr:`PersistentVolume.raw` unpacks it), so that the volume binder
can write one back with only the fields it changes; the other kinds keep nothing of their documents.
Nobody reads the decoded dicts between writes, and a dict tree costs several times its JSON text: with
one PV and one claim per pod this was most of what the storage kinds held (docs/memory.md).
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from sys import intern
from typing import Any, TypedDict

import orjson

from app.api.errors import FieldError
from app.api.objects import (
    IN_TREE_DISK_SOURCES,
    DiskSource,
    OwnerReference,
    Raw,
    get_bool,
    get_int,
    get_list,
    get_map,
    get_map_item,
    get_str,
    get_str_map,
    json_type_name,
    parse_disk_source,
    parse_owner_references,
    shared_value,
)
from app.api.quantity import parse_quantity
from app.api.selectors import LabelSelector, NodeSelector, parse_label_selector, parse_node_selector

__all__ = [
    "ANN_BETA_STORAGE_CLASS",
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_MIGRATED_PLUGINS",
    "ANN_SELECTED_NODE",
    "BINDING_IMMEDIATE",
    "BINDING_WAIT_FOR_FIRST_CONSUMER",
    "LABEL_ZONE_SPLIT",
    "NOT_SUPPORTED_PROVISIONER",
    "STORAGE_KINDS",
    "CSIDriver",
    "CSINode",
    "CSINodeDriver",
    "CSISource",
    "CSIStorageCapacity",
    "ClaimRef",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "TopologySelectorTerm",
    "VolumeAttachment",
    "ephemeral_claim_error",
    "match_topology_selector_terms",
    "not_found",
    "parse_csi_driver",
    "parse_csi_node",
    "parse_csi_storage_capacity",
    "parse_persistent_volume",
    "parse_persistent_volume_claim",
    "parse_storage_class",
    "parse_volume_attachment",
    "with_changes",
]

# Annotations (k8s.io/component-helpers/storage/volume, k8s.io/api/core/v1).
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

FILESYSTEM = "Filesystem"
#: How a zone label lists several zones (``cloudvolume.LabelMultiZoneDelimiter``).
LABEL_ZONE_SPLIT = "__"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _quantity(obj: Raw, key: str, path: str) -> Fraction | None:
    value = obj.get(key)
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except ValueError as err:
        raise FieldError(_join(path, key), str(err)) from None


def _storage(obj: Raw, key: str, path: str) -> Fraction | None:
    """``obj[key]["storage"]`` of a ResourceList, or None when not given."""
    return _quantity(get_map(obj, key, path), "storage", _join(path, key))


def compact_document(raw: Raw) -> bytes:
    """``raw`` as compact JSON without ``metadata.managedFields``: what the binder writes back is the
    rest; an update without managedFields keeps the stored ones (the API server takes the live
    object's when a request has none), so the written object is the same as with them."""
    doc = dict(raw)
    meta = doc.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        doc["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return orjson.dumps(doc)


#: Raw deflate with a 4 KiB window (a dictionary and a document of a few hundred bytes fit) and a small
#: hash table: about 20 KiB of zlib state per call instead of 256 KiB, the same output at this size.
_WBITS = -12
_MEM_LEVEL = 3
#: The first document packed of each kind: later documents of the kind are deflated against it (zlib's
#: preset dictionary). Volumes of one cluster repeat most of their text (the keys, the class, the
#: driver, the finalizers, the timestamps' prefixes), so a document packs to a few tens of bytes.
_dictionaries: dict[str, bytes] = {}


@dataclass(slots=True, frozen=True)
class PackedDocument:
    """A document kept for the writes that need it whole: :func:`compact_document`'s JSON, deflated
    against the first document of its kind (held here too, so that unpacking never depends on what
    the module's table holds later)."""

    data: bytes
    dictionary: bytes

    @classmethod
    def pack(cls, raw: Raw) -> PackedDocument:
        """Pack ``raw``."""
        text = compact_document(raw)
        dictionary = _dictionaries.setdefault(str(raw.get("kind") or ""), text)
        deflate = zlib.compressobj(6, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, dictionary)
        return cls(deflate.compress(text) + deflate.flush(), dictionary)

    def unpack(self) -> dict[str, Any]:
        """The document, decoded anew on each call."""
        inflate = zlib.decompressobj(_WBITS, self.dictionary)
        document: dict[str, Any] = orjson.loads(inflate.decompress(self.data) + inflate.flush())
        return document


#: What thousands of volumes share: one map per distinct set of labels or annotations (the binder's
#: and the PV controller's annotations are the same on most volumes), one tuple per distinct list of
#: access modes (parsed objects are never mutated).
_NO_OWNERS: tuple[OwnerReference, ...] = ()
_shared_modes: dict[tuple[str, ...], tuple[str, ...]] = {}


def _shared_str_map(value: dict[str, str]) -> dict[str, str]:
    shared: dict[str, str] = shared_value(value)
    return shared


def _access_modes(spec: Raw, spath: str) -> tuple[str, ...]:
    modes = tuple(intern(str(m)) for m in get_list(spec, "accessModes", spath))
    if len(_shared_modes) < 64:  # a bound: the API knows four access modes
        return _shared_modes.setdefault(modes, modes)
    return _shared_modes.get(modes, modes)


@dataclass(slots=True, frozen=True)
class _Meta:
    name: str
    namespace: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    deletion_timestamp: str | None
    owner_references: tuple[OwnerReference, ...]


def _meta(raw: Raw, path: str, kind: str, namespaced: bool) -> _Meta:
    if not isinstance(raw, Mapping):
        raise FieldError(path, f"expected a {kind} object, got {json_type_name(raw)}")
    mpath = _join(path, "metadata")
    meta = get_map(raw, "metadata", path)
    name = get_str(meta, "name", mpath)
    if not name:
        raise FieldError(f"{mpath}.name", "Required value: name is required")
    return _Meta(
        name=name,
        namespace=intern(get_str(meta, "namespace", mpath, "default") or "default") if namespaced else "",
        uid=get_str(meta, "uid", mpath),
        resource_version=get_str(meta, "resourceVersion", mpath),
        labels=_shared_str_map(get_str_map(meta, "labels", mpath)),
        annotations=_shared_str_map(get_str_map(meta, "annotations", mpath)),
        deletion_timestamp=meta.get("deletionTimestamp") and get_str(meta, "deletionTimestamp", mpath),
        owner_references=tuple(parse_owner_references(meta, mpath)) or _NO_OWNERS,
    )


def not_found(resource: str, name: str) -> str:
    """The API's NotFound message, as the listers return it: ``persistentvolumeclaim "x" not found``."""
    return f'{resource} "{name}" not found'


class _VolumeFields(TypedDict):
    """The fields PersistentVolume and PersistentVolumeClaim read alike, as constructor keywords."""

    name: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    deletion_timestamp: str | None
    storage_class_name: str
    access_modes: tuple[str, ...]
    volume_mode: str
    volume_attributes_class_name: str


def _volume_fields(meta: _Meta, spec: Raw, spath: str) -> _VolumeFields:
    """Metadata and the spec fields both volume kinds carry under the same names.

    The storage class is ``volume.GetPersistentVolume(Claim)Class``'s: the beta annotation wins over
    ``spec.storageClassName``; an unset volumeMode is Filesystem, as the API server defaults it.
    """
    return _VolumeFields(
        name=meta.name,
        uid=meta.uid,
        resource_version=meta.resource_version,
        labels=meta.labels,
        annotations=meta.annotations,
        deletion_timestamp=meta.deletion_timestamp,
        storage_class_name=intern(
            meta.annotations.get(ANN_BETA_STORAGE_CLASS) or get_str(spec, "storageClassName", spath)
        ),
        access_modes=_access_modes(spec, spath),
        volume_mode=intern(get_str(spec, "volumeMode", spath, FILESYSTEM) or FILESYSTEM),
        volume_attributes_class_name=intern(get_str(spec, "volumeAttributesClassName", spath)),
    )


def _status_phase(raw: Raw, path: str) -> str:
    """``status.phase`` ("" when unset)."""
    return intern(get_str(get_map(raw, "status", path), "phase", _join(path, "status")))


# --- PersistentVolume ----------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ClaimRef:
    """``spec.claimRef`` of a PersistentVolume."""

    namespace: str
    name: str
    uid: str


@dataclass(slots=True, frozen=True)
class CSISource:
    """``spec.csi`` of a PersistentVolume."""

    driver: str
    volume_handle: str


@dataclass(slots=True, eq=False)
class PersistentVolume:
    """A PersistentVolume as the scheduler sees it."""

    name: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    deletion_timestamp: str | None
    storage_class_name: str  # volume.GetPersistentVolumeClass: the beta annotation wins
    capacity: Fraction  # spec.capacity.storage (0 when absent)
    access_modes: tuple[str, ...]
    volume_mode: str
    volume_attributes_class_name: str
    node_affinity: NodeSelector | None  # spec.nodeAffinity.required
    claim_ref: ClaimRef | None
    phase: str
    csi: CSISource | None
    disk: DiskSource | None  # an in-tree disk source (CSI migration)
    document: PackedDocument = field(repr=False)  # what raw unpacks

    @property
    def raw(self) -> dict[str, Any]:
        """The PersistentVolume's document (without managedFields), decoded anew on each call."""
        return self.document.unpack()

    def is_bound_to(self, claim: PersistentVolumeClaim) -> bool:
        """``IsVolumeBoundToClaim``: claimRef names the claim (and its UID, when claimRef has one)."""
        ref = self.claim_ref
        if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
            return False
        return not ref.uid or ref.uid == claim.uid

    def matches_node(self, labels: Mapping[str, str]) -> bool:
        """``CheckNodeAffinity``: the PV's required node affinity matches a node with ``labels``."""
        return self.node_affinity is None or self.node_affinity.matches("", labels)


def parse_persistent_volume(raw: Raw, path: str = "") -> PersistentVolume:
    """Parse a PersistentVolume."""
    meta = _meta(raw, path, "PersistentVolume", namespaced=False)
    spath = _join(path, "spec")
    spec = get_map(raw, "spec", path)
    affinity = get_map(spec, "nodeAffinity", spath)
    apath = f"{spath}.nodeAffinity.required"
    # v1.VolumeNodeAffinity's field is "required".
    required = affinity.get("required")
    if required is not None and not isinstance(required, Mapping):
        raise FieldError(apath, f"expected an object, got {json_type_name(required)}")
    ref_raw = spec.get("claimRef")
    claim_ref = None
    if ref_raw is not None:
        rpath = f"{spath}.claimRef"
        ref = get_map(spec, "claimRef", spath)
        claim_ref = ClaimRef(
            intern(get_str(ref, "namespace", rpath)), get_str(ref, "name", rpath), get_str(ref, "uid", rpath)
        )
    csi = None
    if spec.get("csi") is not None:
        cpath = f"{spath}.csi"
        c = get_map(spec, "csi", spath)
        csi = CSISource(intern(get_str(c, "driver", cpath)), get_str(c, "volumeHandle", cpath))
    disk = None
    for kind in IN_TREE_DISK_SOURCES:
        if spec.get(kind) is not None:
            disk = parse_disk_source(kind, get_map(spec, kind, spath), f"{spath}.{kind}")
            break
    return PersistentVolume(
        **_volume_fields(meta, spec, spath),
        capacity=_storage(spec, "capacity", spath) or Fraction(0),
        node_affinity=None if required is None else parse_node_selector(required, apath),
        claim_ref=claim_ref,
        phase=_status_phase(raw, path),
        csi=csi,
        disk=disk,
        document=PackedDocument.pack(raw),
    )


# --- PersistentVolumeClaim -----------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class PersistentVolumeClaim:
    """A PersistentVolumeClaim as the scheduler sees it."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    deletion_timestamp: str | None
    owner_references: tuple[OwnerReference, ...]
    storage_class_name: str  # volume.GetPersistentVolumeClaimClass: the beta annotation wins
    access_modes: tuple[str, ...]
    volume_mode: str
    volume_attributes_class_name: str
    selector: LabelSelector | None
    request: Fraction | None  # spec.resources.requests.storage
    volume_name: str
    phase: str
    document: PackedDocument = field(repr=False)  # what raw unpacks

    @property
    def raw(self) -> dict[str, Any]:
        """The claim's document (without managedFields), decoded anew on each call."""
        return self.document.unpack()

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def fully_bound(self) -> bool:
        """``isPVCFullyBound``: volumeName set and the PV controller finished the bind."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations


def parse_persistent_volume_claim(raw: Raw, path: str = "") -> PersistentVolumeClaim:
    """Parse a PersistentVolumeClaim."""
    meta = _meta(raw, path, "PersistentVolumeClaim", namespaced=True)
    spath = _join(path, "spec")
    spec = get_map(raw, "spec", path)
    selector = spec.get("selector")
    return PersistentVolumeClaim(
        **_volume_fields(meta, spec, spath),
        namespace=meta.namespace,
        owner_references=meta.owner_references,
        selector=None
        if selector is None
        else parse_label_selector(get_map(spec, "selector", spath), f"{spath}.selector"),
        request=_storage(get_map(spec, "resources", spath), "requests", f"{spath}.resources"),
        volume_name=get_str(spec, "volumeName", spath),
        phase=_status_phase(raw, path),
        document=PackedDocument.pack(raw),
    )


# --- StorageClass ----------------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class TopologySelectorTerm:
    """``v1.TopologySelectorTerm``: every (key, values) requirement must hold."""

    requirements: tuple[tuple[str, frozenset[str]], ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Each key is a label of the node with one of its values."""
        for key, values in self.requirements:
            value = labels.get(key)
            if value is None or value not in values:
                return False
        return True


def match_topology_selector_terms(terms: tuple[TopologySelectorTerm, ...], labels: Mapping[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms``: no terms match everything, else any term must match."""
    return not terms or any(t.matches(labels) for t in terms)


@dataclass(slots=True, eq=False)
class StorageClass:
    """A StorageClass."""

    name: str
    provisioner: str
    volume_binding_mode: str
    allowed_topologies: tuple[TopologySelectorTerm, ...]


def parse_storage_class(raw: Raw, path: str = "") -> StorageClass:
    """Parse a StorageClass. An unset volumeBindingMode is Immediate, as the API server defaults it."""
    meta = _meta(raw, path, "StorageClass", namespaced=False)
    mode = get_str(raw, "volumeBindingMode", path, BINDING_IMMEDIATE) or BINDING_IMMEDIATE
    if mode not in (BINDING_IMMEDIATE, BINDING_WAIT_FOR_FIRST_CONSUMER):
        raise FieldError(
            _join(path, "volumeBindingMode"),
            f'Unsupported value: "{mode}": supported values: "{BINDING_IMMEDIATE}", "{BINDING_WAIT_FOR_FIRST_CONSUMER}"',
        )
    terms = []
    items = get_list(raw, "allowedTopologies", path)
    for i in range(len(items)):
        tpath = f"{_join(path, 'allowedTopologies')}[{i}]"
        term = get_map_item(items, i, tpath)
        exprs = get_list(term, "matchLabelExpressions", tpath)
        reqs = []
        for j in range(len(exprs)):
            epath = f"{tpath}.matchLabelExpressions[{j}]"
            expr = get_map_item(exprs, j, epath)
            reqs.append(
                (get_str(expr, "key", epath), frozenset(str(v) for v in get_list(expr, "values", epath)))
            )
        terms.append(TopologySelectorTerm(tuple(reqs)))
    return StorageClass(
        name=meta.name,
        provisioner=get_str(raw, "provisioner", path),
        volume_binding_mode=mode,
        allowed_topologies=tuple(terms),
    )


# --- CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment ------------------------------------------------


@dataclass(slots=True, frozen=True)
class CSINodeDriver:
    """One driver of a CSINode: its attach limit (``allocatable.count``) when it reports one."""

    name: str
    node_id: str
    allocatable_count: int | None
    topology_keys: tuple[str, ...]


@dataclass(slots=True, eq=False)
class CSINode:
    """A CSINode (named after its node)."""

    name: str
    annotations: dict[str, str]
    drivers: list[CSINodeDriver]
    limits: dict[str, int] = field(default_factory=dict)  # volume_limits(), computed once

    def __post_init__(self) -> None:
        self.limits = self.volume_limits()

    def migrated_plugins(self) -> set[str]:
        """The in-tree plugins this node migrated to CSI (``storage.alpha.kubernetes.io/migrated-plugins``)."""
        value = self.annotations.get(ANN_MIGRATED_PLUGINS, "")
        return set(value.split(",")) if value else set()

    def volume_limits(self) -> dict[str, int]:
        """``getVolumeLimits``: driver name → attach limit, for drivers that report one."""
        return {d.name: d.allocatable_count for d in self.drivers if d.allocatable_count is not None}


def parse_csi_node(raw: Raw, path: str = "") -> CSINode:
    """Parse a CSINode."""
    meta = _meta(raw, path, "CSINode", namespaced=False)
    spath = _join(path, "spec")
    items = get_list(get_map(raw, "spec", path), "drivers", spath)
    drivers = []
    for i in range(len(items)):
        dpath = f"{spath}.drivers[{i}]"
        d = get_map_item(items, i, dpath)
        drivers.append(
            CSINodeDriver(
                name=get_str(d, "name", dpath),
                node_id=get_str(d, "nodeID", dpath),
                allocatable_count=get_int(get_map(d, "allocatable", dpath), "count", f"{dpath}.allocatable"),
                topology_keys=tuple(str(k) for k in get_list(d, "topologyKeys", dpath)),
            )
        )
    return CSINode(meta.name, meta.annotations, drivers)


@dataclass(slots=True, eq=False)
class CSIDriver:
    """A CSIDriver: whether the scheduler must check CSIStorageCapacity for its volumes."""

    name: str
    storage_capacity: bool
    attach_required: bool


def parse_csi_driver(raw: Raw, path: str = "") -> CSIDriver:
    """Parse a CSIDriver (attachRequired defaults to true, storageCapacity to false, as the API does)."""
    meta = _meta(raw, path, "CSIDriver", namespaced=False)
    spath = _join(path, "spec")
    spec = get_map(raw, "spec", path)
    return CSIDriver(
        meta.name,
        get_bool(spec, "storageCapacity", spath),
        get_bool(spec, "attachRequired", spath, True),
    )


@dataclass(slots=True, eq=False)
class CSIStorageCapacity:
    """A CSIStorageCapacity: free space of a storage class in a node topology."""

    namespace: str
    name: str
    storage_class_name: str
    node_topology: LabelSelector | None
    capacity: Fraction | None
    maximum_volume_size: Fraction | None

    def volume_limit(self) -> Fraction | None:
        """``volumeLimit``: the maximum volume size when given, else the capacity."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


def parse_csi_storage_capacity(raw: Raw, path: str = "") -> CSIStorageCapacity:
    """Parse a CSIStorageCapacity."""
    meta = _meta(raw, path, "CSIStorageCapacity", namespaced=True)
    topology = raw.get("nodeTopology")
    return CSIStorageCapacity(
        namespace=meta.namespace,
        name=meta.name,
        storage_class_name=get_str(raw, "storageClassName", path),
        node_topology=None
        if topology is None
        else parse_label_selector(get_map(raw, "nodeTopology", path), _join(path, "nodeTopology")),
        capacity=_quantity(raw, "capacity", path),
        maximum_volume_size=_quantity(raw, "maximumVolumeSize", path),
    )


@dataclass(slots=True, eq=False)
class VolumeAttachment:
    """A VolumeAttachment: a PV attached (or being attached) to a node by a CSI attacher."""

    name: str
    attacher: str
    node_name: str
    persistent_volume_name: str | None


def parse_volume_attachment(raw: Raw, path: str = "") -> VolumeAttachment:
    """Parse a VolumeAttachment."""
    meta = _meta(raw, path, "VolumeAttachment", namespaced=False)
    spath = _join(path, "spec")
    spec = get_map(raw, "spec", path)
    source = get_map(spec, "source", spath)
    pv_name = source.get("persistentVolumeName")
    return VolumeAttachment(
        name=meta.name,
        attacher=get_str(spec, "attacher", spath),
        node_name=get_str(spec, "nodeName", spath),
        persistent_volume_name=None
        if pv_name is None
        else get_str(source, "persistentVolumeName", f"{spath}.source"),
    )


Parser = Callable[[Raw, str], Any]

#: (apiVersion, kind) → parser of every storage kind, as state files and informers carry them.
STORAGE_KINDS: dict[tuple[str, str], Parser] = {
    ("v1", "PersistentVolume"): parse_persistent_volume,
    ("v1", "PersistentVolumeClaim"): parse_persistent_volume_claim,
    ("storage.k8s.io/v1", "StorageClass"): parse_storage_class,
    ("storage.k8s.io/v1", "CSINode"): parse_csi_node,
    ("storage.k8s.io/v1", "CSIDriver"): parse_csi_driver,
    ("storage.k8s.io/v1", "CSIStorageCapacity"): parse_csi_storage_capacity,
    ("storage.k8s.io/v1", "VolumeAttachment"): parse_volume_attachment,
}


def with_changes(raw: Raw, annotations: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A deep copy of ``raw`` with ``annotations`` added to its metadata and ``spec`` fields set."""
    out: dict[str, Any] = copy.deepcopy(dict(raw))
    if annotations:
        meta = out.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    if spec:
        out["spec"] = {**(out.get("spec") or {}), **spec}
    return out


def ephemeral_claim_error(
    pod_namespace: str, pod_name: str, pod_uid: str, claim: PersistentVolumeClaim
) -> str:
    """``ephemeral.VolumeIsForPod``: "" when the pod controls the claim, else the error message."""
    if claim.namespace == pod_namespace and any(
        o.controller and o.uid == pod_uid for o in claim.owner_references
    ):
        return ""
    return f"PVC {claim.namespace}/{claim.name} was not created for pod {pod_namespace}/{pod_name} (pod is not owner)"
