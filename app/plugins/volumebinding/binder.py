"""The volume binder (``volumebinding/binder.go``): which claims a pod has, whether a node can satisfy
them, and binding them once the node is chosen.

- **GetPodVolumeClaims** (PreFilter): the pod's claims, split into bound ones, unbound ones of an
  Immediate class (the PV controller binds those: the pod waits) and unbound ones of a
  WaitForFirstConsumer class, with the PVs each WFFC class offers.
- **FindPodVolumes** (Filter): bound claims' PVs must allow the node (node affinity); a WFFC claim needs
  an available PV on the node (class, capacity, access modes, selector, volume mode, node affinity:
  the smallest that fits) or a class that can provision there (allowedTopologies, and enough
  CSIStorageCapacity where the CSIDriver asks for the check).
- **AssumePodVolumes** (Reserve): the chosen PVs get a claimRef and the claims to provision the
  selected-node annotation, in the assume caches; **RevertAssumedPodVolumes** (Unreserve) undoes it.
- **BindPodVolumes** (PreBind): write the PVs, then the claims; then wait until the PV controller has
  bound every claim, for at most ``bindTimeoutSeconds``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from app import featuregates
from app.api.objects import LABEL_HOSTNAME, Node, Pod, pod_claim_name
from app.api.selectors import NodeSelector
from app.api.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    NOT_SUPPORTED_PROVISIONER,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    ephemeral_claim_error,
    match_topology_selector_terms,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    with_changes,
)
from app.plugins.helper.csi_translation import (
    TranslationError,
    is_plugin_migrated_on_node,
    migrated_plugin_of_pv,
    translated_node_affinity,
)
from app.plugins.helper.storage import StorageLister
from app.plugins.volumebinding.assume_cache import AssumeCache, AssumeError

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

#: How often BindPodVolumes checks whether the claims are bound (``wait.PollUntilContextTimeout``'s 1s).
POLL_INTERVAL = 1.0


class BinderError(Exception):
    """An internal error of the binder: the plugin returns it as an Error status."""


class VolumeWriter(Protocol):
    """Where PreBind's writes go: the API server (``berth run``) or the engine's objects (simulate).

    ``update`` stores a changed PersistentVolume or claim (raw) and returns what was stored;
    ``completes_bindings`` says whether the writes themselves finish the binding (no PV controller to
    wait for), so that BindPodVolumes does not wait.
    """

    completes_bindings: bool

    def update(self, kind: str, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """PUT the object; raises on failure (the exception's text becomes the status message)."""
        ...

    def pod_exists(self, pod: Pod) -> bool:
        """Whether the pod (``namespace/name``) is still in the pod informer's cache: PreBind's wait
        stops when it is gone, as ``checkBindings`` does with the pod lister."""
        ...


@dataclass(slots=True)
class BindingInfo:
    """A claim and the PV it is (to be) bound to."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume

    def storage_class_name(self) -> str:
        """The PV's class."""
        return self.pv.storage_class_name

    def requested_and_capacity(self) -> tuple[int, int]:
        """The claim's request and the PV's capacity, in bytes (``StorageResource``)."""
        return _value(self.pvc.request), _value(self.pv.capacity)


@dataclass(slots=True)
class DynamicProvision:
    """A claim to provision on the node, with the CSIStorageCapacity that allowed it (if checked)."""

    pvc: PersistentVolumeClaim
    node_capacity: CSIStorageCapacity | None = None


@dataclass(slots=True)
class PodVolumes:
    """What FindPodVolumes decided for one node."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


@dataclass(slots=True)
class PodVolumeClaims:
    """The pod's claims by state (GetPodVolumeClaims)."""

    bound_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[PersistentVolume]] = field(default_factory=dict)
    # The bound claims' PVs (None: not found), looked up once per cycle rather than once per node.
    bound_volumes: dict[str, PersistentVolume | None] = field(default_factory=dict)
    # unbound_volumes_delay_binding indexed for each node (see CandidateVolumes), built on first use.
    candidates: dict[str, CandidateVolumes] = field(default_factory=dict)

    def candidates_for(self, class_name: str) -> CandidateVolumes:
        """The PVs of ``class_name`` offered to the WFFC claims, indexed by node."""
        index = self.candidates.get(class_name)
        if index is None:
            index = self.candidates[class_name] = CandidateVolumes(
                self.unbound_volumes_delay_binding.get(class_name, [])
            )
        return index


class CandidateVolumes:
    """A class's PVs, with those that can only be on one node (a local PV: required node affinity of a
    single ``kubernetes.io/hostname In`` term) indexed by that node's hostname.

    FindMatchingVolume scans every PV of the class on every node; only the PVs a node can possibly
    give a claim need scanning, in the same order, for the same answer: the available ones of the
    node's hostname and those without such an affinity, and of the PVs with a claimRef only those bound
    to the claim (the others are skipped at once; one bound to the claim but not to the node ends the
    search, so it is kept whatever its affinity).
    """

    __slots__ = ("by_host", "claimed", "others")

    def __init__(self, volumes: list[PersistentVolume]) -> None:
        self.by_host: dict[str, list[tuple[int, PersistentVolume]]] = {}
        self.others: list[tuple[int, PersistentVolume]] = []
        self.claimed: dict[tuple[str, str], list[tuple[int, PersistentVolume]]] = {}
        for position, pv in enumerate(volumes):
            ref = pv.claim_ref
            if ref is not None:
                self.claimed.setdefault((ref.namespace, ref.name), []).append((position, pv))
                continue
            hosts = _single_hostname_affinity(pv)
            if hosts is None:
                self.others.append((position, pv))
            else:
                for host in hosts:
                    self.by_host.setdefault(host, []).append((position, pv))

    def for_node(self, node: Node, claim: PersistentVolumeClaim) -> list[PersistentVolume]:
        """The PVs ``node`` may give ``claim``, in the class's order."""
        host = node.labels.get(LABEL_HOSTNAME)
        parts = [
            part
            for part in (
                self.by_host.get(host, []) if host is not None else [],
                self.others,
                self.claimed.get((claim.namespace, claim.name), []),
            )
            if part
        ]
        if len(parts) == 1:
            return [pv for _, pv in parts[0]]
        return [pv for _, pv in sorted((entry for part in parts for entry in part), key=lambda e: e[0])]


def _single_hostname_affinity(pv: PersistentVolume) -> frozenset[str] | None:
    """The hostnames of a node affinity that is one ``kubernetes.io/hostname In [...]`` term, else None."""
    affinity = pv.node_affinity
    if affinity is None or len(affinity.terms) != 1:
        return None
    term = affinity.terms[0]
    if term.errors or term.match_fields or len(term.match_expressions) != 1:
        return None
    requirement = term.match_expressions[0]
    if requirement.key != LABEL_HOSTNAME or requirement.operator != "In":
        return None
    return requirement.values


def _value(q: Fraction | None) -> int:
    """``Quantity.Value()``: rounded up to an integer (0 when absent)."""
    if q is None:
        return 0
    return -((-q.numerator) // q.denominator)


def check_access_modes(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """``CheckAccessModes``: the PV offers every mode the claim asks for."""
    return all(mode in pv.access_modes for mode in claim.access_modes)


def find_matching_volume(
    claim: PersistentVolumeClaim,
    volumes: list[PersistentVolume],
    node: Node | None,
    excluded: Mapping[str, PersistentVolume],
    delay_binding: bool,
    vac_enabled: bool = True,
) -> PersistentVolume | None:
    """``FindMatchingVolume``: the PV already bound to the claim if it fits the node, else the
    smallest available PV that satisfies the claim. With VolumeAttributesClass on (v1.36) the
    classes must be equal; off (its default at 1.33), a claim naming one is an error and a PV
    naming one is never matched."""
    if not vac_enabled and claim.volume_attributes_class_name:
        raise BinderError(
            f"unsupported volumeAttributesClassName is set on claim {claim.key} "
            "when the feature-gate VolumeAttributesClass is disabled"
        )
    requested = claim.request or Fraction(0)
    smallest: PersistentVolume | None = None
    for pv in volumes:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not pv.is_bound_to(claim):
            continue
        if pv.capacity < requested:
            continue
        if claim.volume_mode != pv.volume_mode:
            continue
        if vac_enabled and claim.volume_attributes_class_name != pv.volume_attributes_class_name:
            continue
        if not vac_enabled and pv.volume_attributes_class_name:
            continue
        if pv.deletion_timestamp:
            continue
        affinity_ok = node is None or pv.matches_node(node.labels)
        if pv.is_bound_to(claim):
            return pv if affinity_ok else None
        if node is None and delay_binding:
            continue
        if pv.phase != "Available":
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class_name != claim.storage_class_name:
            continue
        if not affinity_ok:
            continue
        if node is not None and not check_access_modes(claim, pv):
            continue
        if smallest is None or pv.capacity < smallest.capacity:
            smallest = pv
    return smallest


class VolumeBinder:
    """The scheduler's volume binder over the engine's storage objects."""

    def __init__(self, storage: StorageLister, bind_timeout: float) -> None:
        self.storage = storage
        self.bind_timeout = bind_timeout
        self.pv_cache: AssumeCache[PersistentVolume] = AssumeCache("PersistentVolume", storage.pvs)
        self.pvc_cache: AssumeCache[PersistentVolumeClaim] = AssumeCache(
            "PersistentVolumeClaim", storage.pvcs
        )
        # PV name -> (the PV object, its CSI-translated node affinity or the translation's error).
        self._translated: dict[str, tuple[PersistentVolume, NodeSelector | str | None]] = {}

    # --- PreFilter ----------------------------------------------------------------------------------

    def _claim(self, pod: Pod, claim_name: str) -> PersistentVolumeClaim:
        pvc = self.pvc_cache.get(f"{pod.namespace}/{claim_name}")
        if pvc is None:
            raise BinderError(f'error getting PVC "{pod.namespace}/{claim_name}": not found')
        return pvc

    def is_delay_binding_mode(self, claim: PersistentVolumeClaim) -> bool:
        """``IsDelayBindingMode``: the claim's class exists and is WaitForFirstConsumer."""
        if not claim.storage_class_name:
            return False
        sc = self.storage.storage_classes().get(claim.storage_class_name)
        return sc is not None and sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER

    def get_pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """``GetPodVolumeClaims``."""
        out = PodVolumeClaims()
        for volume in pod.volumes:
            if not volume.is_claim:
                continue
            pvc = self._claim(pod, pod_claim_name(pod, volume))
            if volume.source == "ephemeral":
                message = ephemeral_claim_error(pod.namespace, pod.name, pod.uid, pvc)
                if message:
                    raise BinderError(message)
            if pvc.fully_bound():
                out.bound_claims.append(pvc)
            elif self.is_delay_binding_mode(pvc) and not pvc.volume_name:
                out.unbound_claims_delay_binding.append(pvc)
            else:
                out.unbound_claims_immediate.append(pvc)
        for pvc in out.bound_claims:
            out.bound_volumes[pvc.volume_name] = self.pv_cache.get(pvc.volume_name)
        if out.unbound_claims_delay_binding:
            by_class = self.storage.pvs_by_class()
            for pvc in out.unbound_claims_delay_binding:
                name = pvc.storage_class_name
                out.unbound_volumes_delay_binding[name] = [
                    self.pv_cache.latest_of(pv.name, pv) for pv in by_class.get(name, [])
                ]
        return out

    def are_pod_volumes_bound(self, pod: Pod) -> bool:
        """``arePodVolumesBound``: every claim is fully bound (a missing claim counts as unbound)."""
        for volume in pod.volumes:
            if not volume.is_claim:
                continue
            pvc = self.pvc_cache.get(f"{pod.namespace}/{pod_claim_name(pod, volume)}")
            if pvc is None or not pvc.fully_bound():
                return False
        return True

    # --- Filter -------------------------------------------------------------------------------------

    def find_pod_volumes(self, claims: PodVolumeClaims, node: Node) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: the node's bindings and provisions, or the reasons it cannot have them."""
        volumes = PodVolumes()
        bound_satisfied = bound_pvs_found = unbound_satisfied = sufficient_storage = True
        if claims.bound_claims:
            bound_satisfied, bound_pvs_found = self._check_bound_claims(claims, node)
        if claims.unbound_claims_delay_binding:
            unbound_satisfied, sufficient_storage = self._check_unbound(claims, node, volumes)
        reasons = []
        if not bound_satisfied:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_satisfied:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient_storage:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not bound_pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return volumes, reasons

    def _check_bound_claims(self, claims: PodVolumeClaims, node: Node) -> tuple[bool, bool]:
        """``checkBoundClaims``: (node affinity satisfied, every PV found)."""
        for pvc in claims.bound_claims:
            pv = claims.bound_volumes.get(pvc.volume_name)
            if pv is None:
                return True, False
            if not self._matches_node(pv, node):
                return False, True
        return True, True

    def _translation(self, pv: PersistentVolume) -> NodeSelector | str | None:
        """The migrated PV's CSI node affinity, or the translation's error; computed once per object."""
        cached = self._translated.get(pv.name)
        if cached is None or cached[0] is not pv:
            try:
                cached = (pv, translated_node_affinity(pv))
            except TranslationError as err:
                cached = (pv, _translation_error(pv, err))
            self._translated[pv.name] = cached
        return cached[1]

    def bound_claims_fit_every_node(self, claims: PodVolumeClaims) -> bool:
        """Every claim bound to an existing PV without node affinity, translated or not: Filter's answer
        is then the same on every node (nothing to bind, no conflict), so it is computed once."""
        if claims.unbound_claims_delay_binding or claims.unbound_claims_immediate:
            return False
        return all(
            pv is not None
            and pv.node_affinity is None
            and (migrated_plugin_of_pv(pv) is None or self._translation(pv) is None)
            for pv in claims.bound_volumes.values()
        )

    def _matches_node(self, pv: PersistentVolume, node: Node, wrap: str = "") -> bool:
        """``tryTranslatePVToCSI`` then ``CheckNodeAffinity``: a migrated in-tree PV (GCE PD, AWS EBS,
        ...) on a node whose CSINode lists its plugin as migrated is checked with the CSI driver's
        topology (``topology.gke.io/zone``, ...), as kube-scheduler does. Raises :class:`BinderError`
        with the translation's error (prefixed by ``wrap``)."""
        plugin = migrated_plugin_of_pv(pv)
        if plugin is None:
            return pv.matches_node(node.labels)
        csi_node = self.storage.csi_nodes().get(node.name)
        if not is_plugin_migrated_on_node(plugin, csi_node.migrated_plugins() if csi_node else None):
            return pv.matches_node(node.labels)
        affinity = self._translation(pv)
        if isinstance(affinity, str):
            raise BinderError(f"{wrap}{affinity}")
        return affinity is None or affinity.matches("", node.labels)

    def _check_unbound(self, claims: PodVolumeClaims, node: Node, volumes: PodVolumes) -> tuple[bool, bool]:
        """The WaitForFirstConsumer half of FindPodVolumes: (satisfied, sufficient storage)."""
        to_match: list[PersistentVolumeClaim] = []
        to_provision: list[PersistentVolumeClaim] = []
        for claim in claims.unbound_claims_delay_binding:
            selected = claim.annotations.get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node.name:
                    return False, True
                to_provision.append(claim)
            else:
                to_match.append(claim)
        satisfied = True
        if to_match:
            satisfied, unmatched = self._find_matching_volumes(to_match, claims, node, volumes)
            to_provision.extend(unmatched)
        if to_provision:
            return self._check_volume_provisions(to_provision, node, volumes)
        return satisfied, True

    def _find_matching_volumes(
        self,
        claims: list[PersistentVolumeClaim],
        pod_claims: PodVolumeClaims,
        node: Node,
        volumes: PodVolumes,
    ) -> tuple[bool, list[PersistentVolumeClaim]]:
        """``findMatchingVolumes``: smallest claims first, each taking a different PV."""
        chosen: dict[str, PersistentVolume] = {}
        unmatched = []
        found = True
        for pvc in sorted(claims, key=lambda c: c.request or Fraction(0)):
            candidates = pod_claims.candidates_for(pvc.storage_class_name).for_node(node, pvc)
            pv = find_matching_volume(
                pvc, candidates, node, chosen, True, featuregates.DEFAULT.enabled("VolumeAttributesClass")
            )
            if pv is None:
                unmatched.append(pvc)
                found = False
                continue
            chosen[pv.name] = pv
            volumes.static_bindings.append(BindingInfo(pvc, pv))
        return found, unmatched

    def _check_volume_provisions(
        self, claims: list[PersistentVolumeClaim], node: Node, volumes: PodVolumes
    ) -> tuple[bool, bool]:
        """``checkVolumeProvisions``: (provisionable, sufficient storage)."""
        provisions = []
        for claim in claims:
            if not claim.storage_class_name:
                raise BinderError(f'no class for claim "{claim.key}"')
            sc = self.storage.storage_classes().get(claim.storage_class_name)
            if sc is None:
                raise BinderError(f'failed to find storage class "{claim.storage_class_name}"')
            if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True
            if not match_topology_selector_terms(sc.allowed_topologies, node.labels):
                return False, True
            sufficient, capacity = self._has_enough_capacity(claim, sc, node)
            if not sufficient:
                return True, False
            provisions.append(DynamicProvision(claim, capacity))
        volumes.dynamic_provisions.extend(provisions)
        return True, True

    def _has_enough_capacity(
        self, claim: PersistentVolumeClaim, sc: StorageClass, node: Node
    ) -> tuple[bool, CSIStorageCapacity | None]:
        """``hasEnoughCapacity``: only for a CSIDriver with storageCapacity: a CSIStorageCapacity of the
        class, visible from the node, with room for the claim's request."""
        if claim.request is None:
            return True, None
        driver = self.storage.csi_drivers().get(sc.provisioner)
        if driver is None or not driver.storage_capacity:
            return True, None
        size = _value(claim.request)
        for capacity in self.storage.capacities():
            if capacity.storage_class_name != sc.name:
                continue
            limit = capacity.volume_limit()
            if limit is None or _value(limit) < size:
                continue
            if capacity.node_topology is not None and capacity.node_topology.matches(node.labels):
                return True, capacity
        return False, None

    # --- Reserve / Unreserve ------------------------------------------------------------------------

    def assume_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        """``AssumePodVolumes``: True when every claim is already bound (nothing to do in PreBind)."""
        if self.are_pod_volumes_bound(pod):
            return True
        bindings: list[BindingInfo] = []
        for binding in volumes.static_bindings:
            new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv.name, new_pv)
                except AssumeError as err:
                    self._revert_pvs(bindings)
                    raise BinderError(str(err)) from None
            bindings.append(BindingInfo(binding.pvc, new_pv))
        provisions: list[DynamicProvision] = []
        for provision in volumes.dynamic_provisions:
            raw = with_changes(provision.pvc.raw, {ANN_SELECTED_NODE: node_name})
            claim = parse_persistent_volume_claim(raw)
            try:
                self.pvc_cache.assume(claim.key, claim)
            except AssumeError as err:
                self._revert_pvs(bindings)
                self._revert_pvcs([p.pvc for p in provisions])
                raise BinderError(str(err)) from None
            provisions.append(DynamicProvision(claim))
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        """``RevertAssumedPodVolumes``."""
        self._revert_pvs(volumes.static_bindings)
        self._revert_pvcs([p.pvc for p in volumes.dynamic_provisions])

    def _revert_pvs(self, bindings: list[BindingInfo]) -> None:
        for b in bindings:
            self.pv_cache.restore(b.pv.name)

    def _revert_pvcs(self, claims: list[PersistentVolumeClaim]) -> None:
        for c in claims:
            self.pvc_cache.restore(c.key)

    # --- PreBind ------------------------------------------------------------------------------------

    def bind_pod_volumes(
        self, pod: Pod, node: Node | None, volumes: PodVolumes, writer: VolumeWriter
    ) -> None:
        """``BindPodVolumes``: write the PVs, then the claims; then wait for the PV controller.

        Raises :class:`BinderError` (its text is the PreBind status message).
        """
        bindings = volumes.static_bindings
        claims = [p.pvc for p in volumes.dynamic_provisions]
        self._bind_api_update(bindings, claims, writer)
        if writer.completes_bindings:
            return
        deadline = time.monotonic() + self.bind_timeout
        while True:
            # PollUntilContextTimeout without immediate: the first check is one interval in.
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BinderError("binding volumes: context deadline exceeded")
            time.sleep(min(POLL_INTERVAL, remaining))
            if time.monotonic() > deadline:
                raise BinderError("binding volumes: context deadline exceeded")
            try:
                if self._check_bindings(pod, node, bindings, claims, writer):
                    return
            except BinderError as err:
                raise BinderError(f"binding volumes: {err}") from None

    def _bind_api_update(
        self, bindings: list[BindingInfo], claims: list[PersistentVolumeClaim], writer: VolumeWriter
    ) -> None:
        """``bindAPIUpdate``: on a failed write, the assumptions not yet written are reverted."""
        done_pvs = done_claims = 0
        try:
            for binding in bindings:
                binding.pv = parse_persistent_volume(writer.update("PersistentVolume", binding.pv.raw))
                done_pvs += 1
            for i, claim in enumerate(claims):
                claims[i] = parse_persistent_volume_claim(writer.update("PersistentVolumeClaim", claim.raw))
                done_claims += 1
        except BinderError:
            raise
        except Exception as err:
            raise BinderError(str(err)) from None
        finally:
            self._revert_pvs(bindings[done_pvs:])
            self._revert_pvcs(claims[done_claims:])

    def _check_bindings(
        self,
        pod: Pod,
        node: Node | None,
        bindings: list[BindingInfo],
        claims: list[PersistentVolumeClaim],
        writer: VolumeWriter,
    ) -> bool:
        """``checkBindings``: True once every claim is fully bound; raises when the binding cannot
        happen any more (the pod deleted, claimRef reset, selected node changed, PV not for this
        node)."""
        if node is None:
            raise BinderError(f'failed to get node "{pod.node_name}"')
        if not writer.pod_exists(pod):
            # A deleted pod's binding is cancelled: nothing will use the volumes.
            raise BinderError(f'pod does not exist any more: pod "{pod.name}" not found')
        for binding in bindings:
            pv = self.pv_cache.get_api(binding.pv.name)
            pvc = self.pvc_cache.get_api(binding.pvc.key)
            if pv is None or pvc is None:
                missing = binding.pv.name if pv is None else binding.pvc.key
                raise BinderError(f'failed to check binding: "{missing}" not found')
            if _newer(binding.pv.resource_version, pv.resource_version):
                return False
            if not self._matches_node(pv, node, "failed to translate pv to csi: "):
                raise BinderError(
                    f'pv "{pv.name}" node affinity doesn\'t match node "{node.name}": no matching NodeSelectorTerms'
                )
            if pv.claim_ref is None or not pv.claim_ref.uid:
                raise BinderError(f'ClaimRef got reset for pv "{pv.name}"')
            if not pvc.fully_bound():
                return False
        for claim in claims:
            pvc = self.pvc_cache.get_api(claim.key)
            if pvc is None:
                raise BinderError(f'failed to check provisioning pvc: "{claim.key}" not found')
            if _newer(claim.resource_version, pvc.resource_version):
                return False
            if pvc.annotations.get(ANN_SELECTED_NODE) != pod.node_name:
                raise BinderError(f'provisioning failed for PVC "{pvc.name}"')
            if pvc.volume_name:
                pv = self.pv_cache.get_api(pvc.volume_name)
                if pv is None:
                    return False
                if not self._matches_node(pv, node):
                    raise BinderError(
                        f'pv "{pv.name}" node affinity doesn\'t match node "{node.name}": no matching NodeSelectorTerms'
                    )
            if not pvc.fully_bound():
                return False
        return True


def _translation_error(pv: PersistentVolume, err: TranslationError) -> str:
    """``tryTranslatePVToCSI``'s error: the translator's own wrapping of the library's message."""
    if pv.disk is not None and pv.disk.kind == "awsElasticBlockStore":
        return f"could not translate pv: failed to translate Kubernetes ID to EBS Volume ID {err}"
    return f"could not translate pv: failed to get region from zones: {err}"


def _newer(a: str, b: str) -> bool:
    """``CompareResourceVersion(a, b) > 0``."""
    try:
        return int(a or 0) > int(b or 0)
    except ValueError:
        return False


def bind_volume_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """``GetBindVolumeToClaim``: the PV with its claimRef set to the claim (and the bound-by-controller
    annotation when it was not bound to it before); ``dirty`` when anything changed."""
    ref = pv.claim_ref
    dirty = False
    annotations: dict[str, str] = {}
    spec: dict[str, Any] = {}
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace or ref.uid != claim.uid:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": claim.namespace,
            "name": claim.name,
            "uid": claim.uid,
            "apiVersion": "v1",
            "resourceVersion": claim.resource_version,
        }
        dirty = True
    if not pv.is_bound_to(claim) and ANN_BOUND_BY_CONTROLLER not in pv.annotations:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    if not dirty:
        return pv, False
    return parse_persistent_volume(with_changes(pv.raw, annotations, **spec)), True
